/// HTTP's token syntax (RFC 9110 5.6.2), for the parsers and checks that need it.
enum HTTPToken {
    /// Whether `byte` may appear in a token: a letter, a digit, or one of the fifteen symbols RFC 9110 lists.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        default: Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
        }
    }

    /// The quoted string (RFC 9110 5.6.4) whose opening quote is `bytes[start]`: its value, with
    /// `\x` read as `x`; the index after its closing quote; and whether it had one. One without
    /// runs to the end (a `\` last is kept): the parsers that refuse it say so themselves.
    static func quotedString(_ bytes: [UInt8], openingAt start: Int) -> (value: String, end: Int, isClosed: Bool) {
        var index = start + 1
        var value: [UInt8] = []
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                return (String(decoding: value, as: UTF8.self), index, true)
            case UInt8(ascii: "\\") where index < bytes.count:
                value.append(bytes[index])
                index += 1
            default:
                value.append(byte)
            }
        }
        return (String(decoding: value, as: UTF8.self), index, false)
    }
}
