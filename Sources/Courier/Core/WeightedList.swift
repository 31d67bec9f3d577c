import Foundation

/// The elements of a comma-separated list with weights (RFC 9110, 12.4.2 and 5.6.1): `Accept`,
/// `Accept-Encoding`. Each element's value is lower-cased (ASCII letters only, as HTTP's tokens are), its parameters dropped, and it is
/// refused when a `q` parameter is 0.
///
/// Split at the bytes of `,`, `;` and `=` outside quoted strings (RFC 9110 5.6.4): a delimiter
/// followed by a combining mark is one `Character` with it, and a quoted parameter may hold a
/// comma.
enum WeightedList {
    /// The non-empty elements of `field`, in order.
    static func elements(_ field: some StringProtocol) -> [(value: String, refused: Bool)] {
        let bytes = Array(field.utf8)
        return Self.split(bytes, bytes.indices, at: UInt8(ascii: ",")).compactMap { element in
            let parts = Self.split(bytes, element, at: UInt8(ascii: ";"))
            let value = String(decoding: bytes[parts[0]], as: UTF8.self).trimmingCharacters(in: .whitespaces).lowercasedASCII
            guard !value.isEmpty else { return nil }
            let refused = parts.dropFirst().contains { parameter in
                let parameter = bytes[parameter]
                guard let equals = parameter.firstIndex(of: UInt8(ascii: "=")) else { return false }
                let name = String(decoding: parameter[..<equals], as: UTF8.self).trimmingCharacters(in: .whitespaces)
                let weight = String(decoding: parameter[(equals + 1)...], as: UTF8.self).trimmingCharacters(in: .whitespaces)
                return name.equalsLowercased("q") && (Double(weight) ?? 1) == 0
            }
            return (value, refused)
        }
    }

    /// The parts of `bytes[range]` between the `separator`s that stand outside a quoted string
    /// (skipped as ``HTTPToken/quotedString(_:openingAt:)`` reads one); at least one.
    static func split(_ bytes: [UInt8], _ range: Range<Int>, at separator: UInt8) -> [Range<Int>] {
        var parts: [Range<Int>] = []
        var start = range.lowerBound
        var index = start
        while index < range.upperBound {
            if bytes[index] == UInt8(ascii: "\"") {
                index = Swift.min(HTTPToken.quotedString(bytes, openingAt: index).end, range.upperBound)
                continue
            }
            if bytes[index] == separator {
                parts.append(start..<index)
                start = index + 1
            }
            index += 1
        }
        parts.append(start..<range.upperBound)
        return parts
    }
}
