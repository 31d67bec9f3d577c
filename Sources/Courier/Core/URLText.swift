import Foundation

/// URL strings from outside Courier (a redirect's `Location`, a caller's URL string), made into
/// strings Foundation's parser takes as they are.
enum URLText {
    /// `text` with what RFC 3986 does not allow after the authority percent-encoded as UTF-8
    /// (`[`, `]`, spaces, non-ASCII, a second `#`, a `%` not followed by two hex digits), and
    /// every `%XX` already there kept. Foundation's parser, given one character it does not
    /// allow, encodes the whole component again, `%` included: a redirect's `?f[n]=J%C3%B6rg`
    /// went out as `?f%5Bn%5D=J%25C3%25B6rg`, and the server read `J%C3%B6rg` instead of `Jörg`
    /// (browsers, curl and Node keep the escapes). The scheme and authority are left as they are.
    /// A string that needs nothing is returned as it is, without a copy.
    static func normalized(_ text: String) -> String {
        let bytes = Array(text.utf8)
        // Where the authority ends: after `scheme://host` or `//host`, else at once.
        var start = 0
        if let colon = bytes.firstIndex(of: UInt8(ascii: ":")),
           bytes[..<colon].allSatisfy({ Self.isSchemeByte($0) }), bytes[colon...].starts(with: Array("://".utf8)) {
            start = colon + 3
        } else if bytes.starts(with: Array("//".utf8)) {
            start = 2
        }
        if start > 0 {
            while start < bytes.count, ![UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: "#")].contains(bytes[start]) { start += 1 }
        }
        var index = start
        var sawFragment = false
        var needsWork = false
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%"), index + 2 < bytes.count, bytes[index + 1].isHexDigit, bytes[index + 2].isHexDigit {
                index += 3
                continue
            }
            if byte == UInt8(ascii: "#"), !sawFragment {
                sawFragment = true
            } else if !Self.isAllowed(byte) {
                needsWork = true
                break
            }
            index += 1
        }
        // The common Location needs nothing: no copy.
        guard needsWork else { return text }
        var output = Array(bytes[..<start])
        sawFragment = false
        index = start
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%"), index + 2 < bytes.count, bytes[index + 1].isHexDigit, bytes[index + 2].isHexDigit {
                output += bytes[index...(index + 2)]
                index += 3
                continue
            }
            if byte == UInt8(ascii: "#"), !sawFragment {
                sawFragment = true
                output.append(byte)
            } else if Self.isAllowed(byte) {
                output.append(byte)
            } else {
                output += Array(String(format: "%%%02X", byte).utf8)
            }
            index += 1
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// RFC 3986's unreserved and reserved characters after the authority, but `#` and the
    /// brackets (allowed only around an IP literal): the bytes a path, query or fragment keeps.
    private static func isAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"): true
        case UInt8(ascii: ":"), UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: "@"): true
        case UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("), UInt8(ascii: ")"),
            UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: ";"), UInt8(ascii: "="):
            true
        default: false
        }
    }

    private static func isSchemeByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."):
            true
        default: false
        }
    }
}

extension UInt8 {
    fileprivate var isHexDigit: Bool {
        switch self {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"), UInt8(ascii: "A")...UInt8(ascii: "F"): true
        default: false
        }
    }
}
