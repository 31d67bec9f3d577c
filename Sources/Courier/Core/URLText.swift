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
        var text = text
        // One pass over the string's own bytes (no copy for a native string); the output is made
        // only from the first byte that must change, so a string that needs nothing costs no
        // allocation.
        let changed: [UInt8]? = text.withUTF8 { bytes in
            let start = Self.endOfAuthority(bytes)
            var output: [UInt8]?
            var sawFragment = false
            var index = start
            while index < bytes.count {
                let byte = bytes[index]
                let length: Int
                let keep: Bool
                if byte == UInt8(ascii: "%"), index + 2 < bytes.count, bytes[index + 1].hexDigitValue != nil, bytes[index + 2].hexDigitValue != nil {
                    (length, keep) = (3, true)
                } else if byte == UInt8(ascii: "#"), !sawFragment {
                    sawFragment = true
                    (length, keep) = (1, true)
                } else {
                    (length, keep) = (1, Self.isAllowed(byte))
                }
                if !keep, output == nil {
                    output = Array(bytes[..<index])
                    output?.reserveCapacity(bytes.count + 16)
                }
                if output != nil {
                    if keep {
                        output!.append(contentsOf: bytes[index..<(index + length)])
                    } else {
                        PercentEscaping.appendEscaped(byte, to: &output!)
                    }
                }
                index += length
            }
            return output
        }
        return changed.map { String(decoding: $0, as: UTF8.self) } ?? text
    }

    /// `text` with the dot segments (`.`, `..`) of its path removed as RFC 3986 5.2.4 says, when
    /// it has an authority (`scheme://host/…` or `//host/…`). RFC 3986 5.2.2 removes them from the
    /// path of every reference it resolves; Foundation only from one without an authority, so a
    /// redirect to `http://h/a/../b` asked for `GET /a/../b` (curl, OkHttp, Go and browsers ask
    /// for `/b`). The query and the fragment are left as they are. A text without an authority
    /// (Foundation's resolution removes them) or whose path has no dot segment is returned as it
    /// is, without a copy.
    static func removingDotSegments(_ text: String) -> String {
        var text = text
        let changed: [UInt8]? = text.withUTF8 { bytes in
            let start = Self.endOfAuthority(bytes)
            guard start > 0 else { return nil }
            var end = start
            while end < bytes.count, bytes[end] != UInt8(ascii: "?"), bytes[end] != UInt8(ascii: "#") { end += 1 }
            // The path is empty or starts with `/`: its segments are what follows each `/`.
            let segments = bytes[start..<end].split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).dropFirst()
            guard segments.contains(where: { Self.dots(in: $0) > 0 }) else { return nil }
            let empty = bytes[start..<start]
            var kept: [Slice<UnsafeBufferPointer<UInt8>>] = []
            kept.reserveCapacity(segments.count)
            for (index, segment) in segments.enumerated() {
                let dots = Self.dots(in: segment)
                if dots == 2, !kept.isEmpty { kept.removeLast() }
                if dots == 0 {
                    kept.append(segment)
                } else if index == segments.count - 1 {
                    // A path that ends in `.` or `..` ends in `/` (`/a/b/..` is `/a/`).
                    kept.append(empty)
                }
            }
            var output = Array(bytes[..<start])
            output.reserveCapacity(bytes.count)
            for segment in kept {
                output.append(UInt8(ascii: "/"))
                output.append(contentsOf: segment)
            }
            output.append(contentsOf: bytes[end...])
            return output
        }
        return changed.map { String(decoding: $0, as: UTF8.self) } ?? text
    }

    /// 1 for the segment `.`, 2 for `..`, 0 for any other.
    private static func dots(in segment: Slice<UnsafeBufferPointer<UInt8>>) -> Int {
        guard segment.count <= 2, segment.allSatisfy({ $0 == UInt8(ascii: ".") }) else { return 0 }
        return segment.count
    }

    /// `text` with the password of its user information written `***` (`http://ann:***@h/`),
    /// for an error message that names a URL string, which may not parse as a `URL` (where
    /// ``Request/redacted(_:)`` serves): a request URL or a proxy URL that was refused. A string
    /// without an `@` is returned as it is.
    static func redacted(_ text: String) -> String {
        guard text.utf8.contains(UInt8(ascii: "@")) else { return text }
        let start = text.range(of: "://")?.upperBound ?? (text.hasPrefix("//") ? text.index(text.startIndex, offsetBy: 2) : text.startIndex)
        let authorityEnd = text[start...].firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? text.endIndex
        guard let at = text[start..<authorityEnd].lastIndex(of: "@"), let colon = text[start..<at].firstIndex(of: ":") else { return text }
        return String(text[...colon]) + "***" + String(text[at...])
    }

    /// Where the authority ends: after `scheme://host` or `//host` (at the next `/`, `?` or `#`),
    /// else at the start (a relative reference).
    private static func endOfAuthority(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        var start = 0
        if let colon = bytes.firstIndex(of: UInt8(ascii: ":")), bytes[..<colon].allSatisfy(Self.isSchemeByte),
            colon + 2 < bytes.count, bytes[colon + 1] == UInt8(ascii: "/"), bytes[colon + 2] == UInt8(ascii: "/")
        {
            start = colon + 3
        } else if bytes.count >= 2, bytes[0] == UInt8(ascii: "/"), bytes[1] == UInt8(ascii: "/") {
            start = 2
        } else {
            return 0
        }
        while start < bytes.count, bytes[start] != UInt8(ascii: "/"), bytes[start] != UInt8(ascii: "?"), bytes[start] != UInt8(ascii: "#") {
            start += 1
        }
        return start
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
