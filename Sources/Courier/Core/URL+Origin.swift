import Foundation

/// The one origin rule of the library (RFC 6454): the cache's invalidation of `Location` and
/// `Content-Location`, the redirects that drop credentials, and the caller's `Cookie` field on
/// redirects all ask it; the connection pool's keys, the proxies' bypass list and absolute-form
/// targets, and authentication's protection spaces take a URL's port from it.
extension URL {
    /// The port a scheme uses when its URL names none: 80 for `http` and `ws`, 443 for `https` and
    /// `wss` (and for the Unix-socket forms `http+unix` and `https+unix`, whose connections have
    /// no port, so that two URLs of one socket have one origin); nil for any other scheme.
    static func defaultPort(forScheme scheme: String) -> Int? {
        switch scheme {
        case "http", "ws", "http+unix": 80
        case "https", "wss", "https+unix": 443
        default: nil
        }
    }

    /// The URL's port, or its scheme's default port when it names none; nil when neither is known.
    var effectivePort: Int? {
        self.port ?? self.scheme.flatMap { Self.defaultPort(forScheme: $0.lowercased()) }
    }

    /// Whether `other` has the same origin: the same scheme and host (compared without ASCII case)
    /// and the same port, a scheme's default port standing for an absent one. A URL whose scheme has
    /// no default port and that names none has an origin of its own (RFC 6454, 4): it is never the
    /// same as another's. Only ASCII letters are folded: Unicode lowering makes a percent-encoded
    /// U+212A KELVIN SIGN host `k`, another name than the `k` host it would pass for.
    func isSameOrigin(as other: URL) -> Bool {
        guard let scheme = self.scheme?.lowercasedASCII, scheme == other.scheme?.lowercasedASCII,
            // By bytes: `String`'s `==` is Unicode's equivalence, under which U+212A is `K`.
            let host = self.host?.lowercasedASCII, let otherHost = other.host?.lowercasedASCII, host.utf8.elementsEqual(otherHost.utf8),
            let port = self.effectivePort
        else { return false }
        return port == other.effectivePort
    }
}
