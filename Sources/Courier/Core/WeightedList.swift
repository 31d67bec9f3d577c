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
        Self.split(field.utf8, at: UInt8(ascii: ",")).compactMap { element in
            let parts = Self.split(element, at: UInt8(ascii: ";"))
            guard let first = parts.first else { return nil }
            let value = String(decoding: first, as: UTF8.self).trimmingCharacters(in: .whitespaces).lowercasedASCII
            guard !value.isEmpty else { return nil }
            let refused = parts.dropFirst().contains { parameter in
                guard let equals = parameter.firstIndex(of: UInt8(ascii: "=")) else { return false }
                let name = String(decoding: parameter[..<equals], as: UTF8.self).trimmingCharacters(in: .whitespaces)
                let weight = String(decoding: parameter[parameter.index(after: equals)...], as: UTF8.self)
                    .trimmingCharacters(in: .whitespaces)
                return name.equalsLowercased("q") && (Double(weight) ?? 1) == 0
            }
            return (value, refused)
        }
    }

    /// `bytes` split at `separator` where it stands outside a quoted string (in one, a backslash
    /// escapes the byte after it).
    static func split<Bytes: Collection<UInt8>>(_ bytes: Bytes, at separator: UInt8) -> [Bytes.SubSequence] {
        var parts: [Bytes.SubSequence] = []
        var start = bytes.startIndex
        var quoted = false
        var escaped = false
        for index in bytes.indices {
            let byte = bytes[index]
            if quoted {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    quoted = false
                }
            } else if byte == UInt8(ascii: "\"") {
                quoted = true
            } else if byte == separator {
                parts.append(bytes[start..<index])
                start = bytes.index(after: index)
            }
        }
        parts.append(bytes[start...])
        return parts
    }
}
