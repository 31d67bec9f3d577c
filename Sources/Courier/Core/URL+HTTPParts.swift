import Foundation

/// What every hop reads of its `http` or `https` URL (the connection pool's key and the request
/// target), read from the URL's string in one pass when the URL is plain: an absolute URL
/// without a base, all ASCII, a lower-case `http://` or `https://`, a host of lower-case letters,
/// digits, dots, hyphens and underscores, and a port of digits if any. Foundation's accessors
/// (`scheme`, `host(percentEncoded:)`, `port`, `path(percentEncoded:)`,
/// `query(percentEncoded:)`) each parse their part again and make a string of it: reading them
/// was about half a microsecond of every request. Any other URL (a user or password, an IPv6
/// literal, a percent-encoded or international host, capitals, a base URL) makes these return
/// nil, and the caller asks Foundation as before; a test checks that both ways agree.
enum HTTPURLParts {
    /// The origin of a plain URL: whether it is `https`, its host as written (already lower-case),
    /// and the port it names or its scheme's default; nil for any other URL.
    static func origin(of url: URL) -> (isHTTPS: Bool, host: String, port: Int)? {
        self.reading(url) { bytes, layout in
            (layout.isHTTPS, String(decoding: UnsafeBufferPointer(rebasing: bytes[layout.host]), as: UTF8.self), layout.port)
        }
    }

    /// The origin-form target of a plain URL (RFC 9112 3.2.1): its path and query (with its `?`)
    /// as written, without the fragment, `/` standing for an empty path; nil for any other URL.
    static func target(of url: URL) -> String? {
        self.reading(url) { bytes, layout in
            let written = UnsafeBufferPointer(rebasing: bytes[layout.target])
            if written.first == UInt8(ascii: "/") { return String(decoding: written, as: UTF8.self) }
            // An empty path: `/`, then the query if there is one.
            return String(unsafeUninitializedCapacity: written.count + 1) { buffer in
                buffer[0] = UInt8(ascii: "/")
                _ = UnsafeMutableBufferPointer(rebasing: buffer[1...]).initialize(from: written)
                return written.count + 1
            }
        }
    }

    /// Where the parts of a plain URL's string are, as byte offsets into it.
    private struct Layout {
        var isHTTPS: Bool
        var host: Range<Int>
        var port: Int
        var target: Range<Int>
    }

    /// `body` with the bytes of a plain URL's string (its own, not a copy: slices of the string
    /// would each retain it) and where its parts are; nil for any other URL.
    private static func reading<Part>(_ url: URL, _ body: (UnsafeBufferPointer<UInt8>, Layout) -> Part) -> Part? {
        guard url.baseURL == nil else { return nil }
        let part = url.relativeString.utf8.withContiguousStorageIfAvailable { bytes in
            Self.layout(of: bytes).map { body(bytes, $0) }
        }
        return part ?? nil
    }

    /// Where the parts of a plain URL's string are, or nil when the string is not plain.
    private static func layout(of bytes: UnsafeBufferPointer<UInt8>) -> Layout? {
        // `http://` or `https://`, byte by byte (`starts(with:)` walks two iterators).
        guard bytes.count > 7, bytes[0] == UInt8(ascii: "h"), bytes[1] == UInt8(ascii: "t"), bytes[2] == UInt8(ascii: "t"),
            bytes[3] == UInt8(ascii: "p")
        else { return nil }
        let isHTTPS = bytes[4] == UInt8(ascii: "s")
        let colon = isHTTPS ? 5 : 4
        guard bytes.count > colon + 2, bytes[colon] == UInt8(ascii: ":"), bytes[colon + 1] == UInt8(ascii: "/"),
            bytes[colon + 2] == UInt8(ascii: "/")
        else { return nil }
        let hostStart = colon + 3
        var index = hostStart
        var hostEnd: Int?
        var port = 0
        var portDigits = 0
        // The authority: host, then `:port`, up to the path, the query, the fragment or the end.
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "/") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#") { break }
            if hostEnd == nil {
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                    UInt8(ascii: "."), UInt8(ascii: "-"), UInt8(ascii: "_"):
                    break
                case UInt8(ascii: ":"):
                    hostEnd = index
                default:
                    return nil
                }
            } else {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte), portDigits < 5 else { return nil }
                port = port * 10 + Int(byte - UInt8(ascii: "0"))
                portDigits += 1
            }
            index += 1
        }
        let authorityEnd = index
        let end = hostEnd ?? authorityEnd
        guard end > hostStart else { return nil }
        if hostEnd != nil {
            // `host:` with no digits, or a port past 65535: Foundation's to judge.
            guard portDigits > 0, port <= 65_535 else { return nil }
        } else {
            // The library's one origin rule (`URL+Origin.swift`).
            port = URL.defaultPort(forScheme: isHTTPS ? "https" : "http") ?? 0
        }
        // The rest must be ASCII too (Foundation keeps a URL's string percent-encoded).
        var targetEnd = bytes.count
        while index < bytes.count {
            let byte = bytes[index]
            if byte >= 0x80 { return nil }
            if byte == UInt8(ascii: "#") {
                targetEnd = index
                break
            }
            index += 1
        }
        return Layout(isHTTPS: isHTTPS, host: hostStart..<end, port: port, target: authorityEnd..<targetEnd)
    }
}
