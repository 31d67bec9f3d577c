import Foundation

/// Maps IANA charset names (`Content-Type: text/plain; charset=…`) and byte-order marks to
/// `String.Encoding`. Total: any input gives an encoding or `nil`, never a trap.
enum TextEncoding {
    /// The encoding for an IANA charset name or alias, case-insensitively; `nil` when unknown.
    static func encoding(forCharset name: String) -> String.Encoding? {
        var key = name.lowercasedASCII
        key.removeAll { $0 == "\"" || $0 == "'" || $0 == " " || $0 == "\t" }
        return Self.table[key]
    }

    /// The byte-order marks and the encodings they announce, UTF-32's first: `FF FE 00 00` is the
    /// UTF-32LE mark, and starts with UTF-16LE's.
    static let byteOrderMarks: [(bytes: [UInt8], encoding: String.Encoding)] = [
        ([0x00, 0x00, 0xFE, 0xFF], .utf32BigEndian), ([0xFF, 0xFE, 0x00, 0x00], .utf32LittleEndian),
        ([0xEF, 0xBB, 0xBF], .utf8), ([0xFE, 0xFF], .utf16BigEndian), ([0xFF, 0xFE], .utf16LittleEndian),
    ]

    /// The encoding a byte-order mark at the start of `data` announces, and the mark's length.
    static func byteOrderMark(in data: Data) -> (encoding: String.Encoding, length: Int)? {
        Self.byteOrderMarks.first { data.starts(with: $0.bytes) }.map { ($0.encoding, $0.bytes.count) }
    }

    /// `data` as windows-1252 by the WHATWG Encoding standard: every byte is a character (the five
    /// the code page leaves undefined, 81, 8D, 8F, 90 and 9D, are the C1 controls of the same
    /// number), so it never fails. Foundation's `.windowsCP1252` refuses those five.
    static func windows1252(_ data: Data) -> String {
        var scalars = String.UnicodeScalarView()
        scalars.reserveCapacity(data.count)
        for byte in data {
            let value = byte >= 0x80 && byte < 0xA0 ? Self.windows1252High[Int(byte - 0x80)] : UInt32(byte)
            scalars.append(Unicode.Scalar(value)!)
        }
        return String(scalars)
    }

    /// Bytes 80–9F of windows-1252 (the WHATWG index), the undefined ones as themselves.
    private static let windows1252High: [UInt32] = [
        0x20AC, 0x81, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0x8D, 0x017D, 0x8F,
        0x90, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x9D, 0x017E, 0x0178,
    ]

    /// The size in bytes of a code unit of UTF-16 (2) and UTF-32 (4), in either byte order or
    /// none; nil for other encodings. A body of these whose length is not a multiple of it ends in
    /// part of a code unit.
    static func codeUnitSize(_ encoding: String.Encoding) -> Int? {
        switch encoding {
        case .utf16, .utf16BigEndian, .utf16LittleEndian: 2
        case .utf32, .utf32BigEndian, .utf32LittleEndian: 4
        default: nil
        }
    }

    /// `.utf16` for either byte order of UTF-16, `.utf32` for UTF-32's; nil for other encodings.
    static func byteOrderFree(_ encoding: String.Encoding) -> String.Encoding? {
        switch encoding {
        case .utf16BigEndian, .utf16LittleEndian: .utf16
        case .utf32BigEndian, .utf32LittleEndian: .utf32
        default: nil
        }
    }

    private static let table: [String: String.Encoding] = {
        var table: [String: String.Encoding] = [:]
        func add(_ encoding: String.Encoding, _ names: String...) { for name in names { table[name] = encoding } }
        add(.utf8, "utf-8", "utf8", "unicode-1-1-utf-8", "x-unicode20utf8")
        // The WHATWG Encoding standard's labels of windows-1252, as browsers read them: a body
        // labelled ASCII with a byte past 7F (a curly quote a server's template put there) is
        // read, not refused; one labelled ISO-8859-1 with bytes 80–9F (the same quotes, or €)
        // gets windows-1252's characters there, not C1 controls.
        add(.windowsCP1252, "us-ascii", "ascii", "ansi_x3.4-1968", "iso646-us", "us", "cp367", "ibm367", "csascii")
        add(
            .windowsCP1252, "iso-8859-1", "iso8859-1", "iso88591", "iso_8859-1", "iso_8859-1:1987", "iso-ir-100", "latin1", "l1",
            "cp819", "ibm819", "csisolatin1")
        add(.isoLatin2, "iso-8859-2", "iso8859-2", "iso_8859-2", "latin2", "l2", "csisolatin2")
        // ISO-10646-UCS-2 and UNICODE-1-1 are UTF-16's older names (IANA's registry; Alamofire's
        // `ianaCharsetName` table reads them as UTF-16 too); UCS-2 text is valid UTF-16.
        add(.utf16, "utf-16", "utf16", "iso-10646-ucs-2", "csunicode", "ucs-2", "unicode-1-1", "csunicode11")
        add(.utf16BigEndian, "utf-16be", "utf16be")
        add(.utf16LittleEndian, "utf-16le", "utf16le")
        add(.utf32, "utf-32", "utf32")
        add(.utf32BigEndian, "utf-32be", "utf32be")
        add(.utf32LittleEndian, "utf-32le", "utf32le")
        add(.windowsCP1250, "windows-1250", "cp1250", "x-cp1250")
        add(.windowsCP1251, "windows-1251", "cp1251", "x-cp1251")
        add(.windowsCP1252, "windows-1252", "cp1252", "x-cp1252")
        add(.windowsCP1253, "windows-1253", "cp1253")
        add(.windowsCP1254, "windows-1254", "cp1254")
        add(.shiftJIS, "shift_jis", "shift-jis", "sjis", "ms_kanji", "csshiftjis", "windows-31j", "cp932")
        add(.japaneseEUC, "euc-jp", "eucjp", "cseucpkdfmtjapanese", "x-euc-jp")
        add(.iso2022JP, "iso-2022-jp", "csiso2022jp")
        add(.macOSRoman, "macintosh", "mac", "x-mac-roman", "csmacintosh")
        return table
    }()
}
