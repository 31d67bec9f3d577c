/// A multipart boundary and the delimiters built from it (RFC 2046 §5.1.1), in AFNetworking's
/// format: `Boundary+` and two random 32-bit numbers in eight upper-case hex digits each.
struct MultipartBoundary: Sendable, Hashable {
    /// The boundary, without the leading dashes.
    let value: String

    init(_ value: String) { self.value = value }

    /// `value` when RFC 2046 §5.1.1 allows it as a boundary: 1 to 70 characters of `bchars`
    /// (letters, digits, `'()+_,-./:=?` and space), the last not a space.
    init?(validating value: String) {
        let allowed = Set("'()+_,-./:=? ".utf8)
        let bytes = Array(value.utf8)
        guard (1...70).contains(bytes.count), bytes.last != UInt8(ascii: " "),
            bytes.allSatisfy({ (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || allowed.contains($0) })
        else { return nil }
        self.value = value
    }

    /// A fresh random boundary, such as `Boundary+0C1F2A3B4D5E6F70`.
    static func random() -> MultipartBoundary {
        var generator = SystemRandomNumberGenerator()
        let high = UInt32.random(in: .min ... .max, using: &generator)
        let low = UInt32.random(in: .min ... .max, using: &generator)
        return MultipartBoundary("Boundary+" + Self.hex(high) + Self.hex(low))
    }

    /// The boundary as the `Content-Type`'s `boundary` parameter: as it is when it is an HTTP
    /// token (AFNetworking's always is), else in quotes (RFC 2046 §5.1.1). A valid boundary has no
    /// `"` or `\`, so nothing inside the quotes needs escaping.
    var headerParameterValue: String {
        self.value.utf8.allSatisfy(HTTPToken.isTokenByte) ? self.value : "\"" + self.value + "\""
    }

    /// What opens the first part: `--boundary` and a line break.
    var initialDelimiter: [UInt8] { Array("--\(self.value)\r\n".utf8) }

    /// What opens every later part, ending the part before it: a line break, `--boundary` and a
    /// line break.
    var encapsulationDelimiter: [UInt8] { Array("\r\n--\(self.value)\r\n".utf8) }

    /// What ends the last part and the body: a line break, `--boundary--` and a line break.
    var closeDelimiter: [UInt8] { Array("\r\n--\(self.value)--\r\n".utf8) }

    /// `number` as eight upper-case hex digits.
    private static func hex(_ number: UInt32) -> String {
        let digits = String(number, radix: 16, uppercase: true)
        return String(repeating: "0", count: 8 - digits.count) + digits
    }
}
