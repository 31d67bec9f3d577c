import Foundation

/// Percent-escaping for query strings and form bodies (AFNetworking's
/// `AFPercentEscapedStringFromString`).
///
/// RFC 3986 §3.4 allows the unreserved characters plus `!$&'()*+,;=:@/?` in a query, but the
/// delimiters among them would change how a server splits `key=value&key=value` pairs. Like
/// AFNetworking we keep only the unreserved characters and `?` and `/` (which RFC 3986 §3.4
/// explicitly allows as data); every other byte of the UTF-8 form is written `%XX`.
///
/// AFNetworking escapes long strings in batches of 50 UTF-16 units and has to widen each batch so
/// that it does not cut a surrogate pair or a composed character in half. Escaping the UTF-8 bytes
/// of the whole string needs no batches, so nothing can be split.
enum PercentEscaping {
    /// `string` with every byte that is not unreserved, `?` or `/` percent-escaped.
    /// - Parameter spaceAsPlus: Whether to write a space as `+` (HTML forms) instead of `%20`.
    static func escape(_ string: String, spaceAsPlus: Bool = false) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(string.utf8.count)
        for byte in string.utf8 {
            if Self.isAllowed(byte) {
                output.append(byte)
            } else if spaceAsPlus && byte == UInt8(ascii: " ") {
                output.append(UInt8(ascii: "+"))
            } else {
                Self.appendEscaped(byte, to: &output)
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// `string` with every character that is not in `allowed` percent-escaped, byte by byte of
    /// its UTF-8 form (``URLEncodedFormEncoder/allowedCharacters``).
    /// - Parameter spaceAsPlus: Whether to write a space as `+` (HTML forms), whatever `allowed` says.
    static func escape(_ string: String, allowing allowed: CharacterSet, spaceAsPlus: Bool) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(string.utf8.count)
        for scalar in string.unicodeScalars {
            if spaceAsPlus && scalar == " " {
                output.append(UInt8(ascii: "+"))
            } else if allowed.contains(scalar) {
                UTF8.encode(scalar) { output.append($0) }
            } else {
                UTF8.encode(scalar) { Self.appendEscaped($0, to: &output) }
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Appends `byte` as `%XX` (upper-case hex digits).
    static func appendEscaped(_ byte: UInt8, to output: inout [UInt8]) {
        output.append(UInt8(ascii: "%"))
        output.append(Self.hexDigits[Int(byte >> 4)])
        output.append(Self.hexDigits[Int(byte & 0x0F)])
    }

    private static let hexDigits: [UInt8] = Array("0123456789ABCDEF".utf8)

    private static func isAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "?"), UInt8(ascii: "/"):
            return true
        default:
            return false
        }
    }
}
