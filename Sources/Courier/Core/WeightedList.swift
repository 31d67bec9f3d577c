import Foundation

/// The elements of a comma-separated list with weights (RFC 9110, 12.4.2 and 5.6.1): `Accept`,
/// `Accept-Encoding`. Each element's value is lower-cased (ASCII letters only, as HTTP's tokens are), its parameters dropped, and it is
/// refused when a `q` parameter is 0.
enum WeightedList {
    /// The non-empty elements of `field`, in order.
    static func elements(_ field: some StringProtocol) -> [(value: String, refused: Bool)] {
        field.split(separator: ",").compactMap { element in
            let parts = element.split(separator: ";")
            guard let first = parts.first else { return nil }
            let value = first.trimmingCharacters(in: .whitespaces).lowercasedASCII
            guard !value.isEmpty else { return nil }
            let refused = parts.dropFirst().contains { parameter in
                let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                return pair.count == 2 && pair[0].equalsLowercased("q") && (Double(pair[1]) ?? 1) == 0
            }
            return (value, refused)
        }
    }
}
