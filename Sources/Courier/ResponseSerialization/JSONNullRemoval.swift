import Foundation

/// Removes `null` values from dictionaries at every depth (AFNetworking's
/// `AFJSONObjectByRemovingKeysWithNullValues`).
enum JSONNullRemoval {
    /// `object` without keys whose value is `NSNull`, in dictionaries at any depth, including
    /// dictionaries inside arrays. `null` elements of arrays stay: removing them would shift indices.
    ///
    /// Recursion depth is bounded by the parser's nesting limit (512 for `JSONSerialization`), so
    /// this cannot overflow the stack on input the parser accepted.
    static func removingNulls(from object: Any) -> Any {
        if let dictionary = object as? [String: Any] {
            var result = [String: Any](minimumCapacity: dictionary.count)
            for (key, value) in dictionary where !(value is NSNull) {
                result[key] = self.removingNulls(from: value)
            }
            return result
        }
        if let array = object as? [Any] {
            return array.map { self.removingNulls(from: $0) }
        }
        return object
    }
}
