/// Byte-level ASCII reading shared by the parsers that work on a message's bytes (field names,
/// chunk sizes, percent escapes, dates), without making strings.
extension UInt8 {
    /// The byte with an ASCII capital letter made small; any other byte as it is.
    var lowercasedASCII: UInt8 {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self) ? self | 0x20 : self
    }

    /// The value of an ASCII hex digit (`0`–`9`, `a`–`f`, `A`–`F`), or nil.
    var hexDigitValue: UInt8? {
        switch self {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): self - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): self - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): self - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

extension StringProtocol {
    /// Whether this text is `lowercased` in any case (ASCII letters compared small), byte by byte,
    /// without making a string. HTTP's tokens (field names, codings, directives, schemes) are
    /// case-insensitive in ASCII only: unlike `lowercased()` and `String`'s `==`, this never takes
    /// a non-ASCII character for an ASCII one (U+212A KELVIN SIGN is neither `k` nor `K` here).
    func equalsLowercased(_ lowercased: StaticString) -> Bool {
        let expected = UnsafeBufferPointer(start: lowercased.utf8Start, count: lowercased.utf8CodeUnitCount)
        return self.utf8.elementsEqual(expected) { $0.lowercasedASCII == $1 }
    }

    /// This text with its ASCII capital letters made small and every other character kept as it
    /// is: the case rule of HTTP's tokens (RFC 9110, 5.1 and 5.6.2). `lowercased()` applies
    /// Unicode's rules, which turn U+212A KELVIN SIGN into `k`, so a coding or directive spelt
    /// with it would be read as an ASCII one; compare the result with ``equalsLowercased(_:)``
    /// or by bytes (`utf8.elementsEqual`), since `String`'s `==` is Unicode's equivalence too.
    var lowercasedASCII: String {
        guard self.utf8.contains(where: { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }) else { return String(self) }
        return String(decoding: self.utf8.map(\.lowercasedASCII), as: UTF8.self)
    }
}
