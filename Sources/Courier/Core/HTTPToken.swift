/// HTTP's token syntax (RFC 9110 5.6.2), for the parsers and checks that need it.
enum HTTPToken {
    /// Whether `byte` may appear in a token: a letter, a digit, or one of the fifteen symbols RFC 9110 lists.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        default: Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
        }
    }
}
