import Foundation

/// Removes `null`s from a JSON tree at every depth (AFNetworking's
/// `AFJSONObjectByRemovingKeysWithNullValues`).
enum JSONNullRemoval {
    /// `object` without `NSNull`s at any depth: keys whose value is `null` are removed from
    /// dictionaries, and `null` elements from arrays (so `[1, null, 2]` becomes `[1, 2]`), as
    /// AFNetworking 4 does.
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
            return array.compactMap { $0 is NSNull ? nil : self.removingNulls(from: $0) }
        }
        return object
    }
}
