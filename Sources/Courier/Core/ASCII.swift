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

extension String {
    /// Whether this field name is `lowercased` in any case (ASCII letters compared small), without
    /// making a string.
    func equalsLowercased(_ lowercased: StaticString) -> Bool {
        let expected = UnsafeBufferPointer(start: lowercased.utf8Start, count: lowercased.utf8CodeUnitCount)
        return self.utf8.elementsEqual(expected) { $0.lowercasedASCII == $1 }
    }
}
