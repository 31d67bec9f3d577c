import Foundation

/// One HTTP cookie as a cookie store keeps it (RFC 6265 and its revision, section 5.7): the pair,
/// where it may be sent, until when, and how.
///
/// Cookies arrive in `Set-Cookie` fields and are read by ``Cookie/init(setCookie:for:now:publicSuffixes:)``,
/// which applies the RFC's parsing and storage rules; a ``CookieStorage`` keeps them and builds
/// the `Cookie` field of each request. You may also make one by hand and hand it to
/// ``CookieStorage/setCookie(_:)``.
public struct Cookie: Sendable, Hashable, CustomStringConvertible {
    /// The `SameSite` attribute, kept as the server sent it. Courier is not a browser: it has no
    /// "site for cookies" to compare with, so it sends a cookie whatever its `SameSite`.
    public enum SameSite: String, Sendable, Hashable, CaseIterable {
        /// `SameSite=Strict`.
        case strict = "Strict"
        /// `SameSite=Lax`.
        case lax = "Lax"
        /// `SameSite=None`.
        case none = "None"
    }

    /// The name (may be empty: `Set-Cookie: token` is a nameless cookie with value `token`).
    public var name: String
    /// The value, as the server sent it (quotes included).
    public var value: String
    /// The domain, lower-cased, without a leading dot: the request host for a host-only cookie,
    /// else the `Domain` attribute.
    public var domain: String
    /// The path the cookie is sent under.
    public var path: String
    /// When the cookie expires; nil for a session cookie (kept until the store is dropped, or
    /// written with expiry 0 to a cookies.txt file).
    public var expiresDate: Date?
    /// Whether the cookie goes to its ``domain`` only (no `Domain` attribute), rather than to
    /// the domain and its subdomains.
    public var isHostOnly: Bool
    /// Whether the cookie goes over secure (`https`) connections only.
    public var isSecure: Bool
    /// Whether the cookie was marked `HttpOnly` (Courier always sends it: it is an HTTP client).
    public var isHTTPOnly: Bool
    /// The `SameSite` attribute, or nil when absent or not understood.
    public var sameSite: SameSite?
    /// When the cookie was first stored (kept when a server replaces it): the `Cookie` field lists
    /// cookies with equal paths oldest first.
    public var creationDate: Date
    /// When the cookie was last sent or stored; the least recently used cookies go first when a
    /// store is over its limits.
    public var lastAccessDate: Date

    /// Whether the cookie ends with the session (has no expiry date).
    public var isSessionOnly: Bool { self.expiresDate == nil }

    /// Makes a cookie.
    /// - Parameters:
    ///   - name: The name.
    ///   - value: The value.
    ///   - domain: The domain; a leading dot is removed and the rest lower-cased.
    ///   - path: The path (`/` by default).
    ///   - expiresDate: When it expires; nil for a session cookie.
    ///   - isHostOnly: Whether only `domain` itself gets it (the default), not its subdomains.
    ///   - isSecure: Whether it goes over `https` only.
    ///   - isHTTPOnly: The `HttpOnly` flag.
    ///   - sameSite: The `SameSite` attribute.
    ///   - creationDate: When it was made (now by default); also its first access.
    public init(
        name: String,
        value: String,
        domain: String,
        path: String = "/",
        expiresDate: Date? = nil,
        isHostOnly: Bool = true,
        isSecure: Bool = false,
        isHTTPOnly: Bool = false,
        sameSite: SameSite? = nil,
        creationDate: Date = Date()
    ) {
        self.name = name
        self.value = value
        self.domain = CookieMatching.canonicalDomain(domain)
        self.path = path
        self.expiresDate = expiresDate
        self.isHostOnly = isHostOnly
        self.isSecure = isSecure
        self.isHTTPOnly = isHTTPOnly
        self.sameSite = sameSite
        self.creationDate = creationDate
        self.lastAccessDate = creationDate
    }

    /// Whether the cookie has expired at `date`.
    public func isExpired(at date: Date) -> Bool {
        guard let expiresDate else { return false }
        return expiresDate <= date
    }

    /// Whether the cookie goes with a request to `url` (domain, path and `Secure`; expiry not
    /// considered).
    public func matches(_ url: URL) -> Bool {
        guard let host = CookieMatching.canonicalHost(of: url) else { return false }
        // A Unix socket's path names no domain: only a cookie for that very path goes to it.
        if CookieMatching.isUnixSocket(url), !self.domain.utf8.elementsEqual(host.utf8) { return false }
        return self.matches(host: host, path: CookieMatching.requestPath(of: url), isSecure: CookieMatching.isSecure(url))
    }

    func matches(host: String, path: String, isSecure: Bool) -> Bool {
        if self.isSecure, !isSecure { return false }
        if self.isHostOnly {
            guard host == self.domain else { return false }
        } else {
            guard CookieMatching.domainMatches(host, self.domain) else { return false }
        }
        return CookieMatching.pathMatches(path, self.path)
    }

    /// The `Cookie` field value for these cookies, in the order given (`a=1; b=2`), or nil for none.
    public static func headerValue(for cookies: some Sequence<Cookie>) -> String? {
        self.headerValue(namesAndValues: cookies.lazy.map { ($0.name, $0.value) })
    }

    /// The `Cookie` field value for these names and values, in the order given; `capacity`
    /// reserves the string's storage when the caller knows its length.
    static func headerValue(namesAndValues pairs: some Sequence<(String, String)>, capacity: Int = 0) -> String? {
        var text = ""
        text.reserveCapacity(capacity)
        // A cookie with neither name nor value (6265bis 5.6 ignores such a `Set-Cookie`; one comes
        // from a cookie file or is made by hand) adds nothing, not an empty pair (`a=1; ; b=2`).
        for (name, value) in pairs where !name.isEmpty || !value.isEmpty {
            if !text.isEmpty { text += "; " }
            if !name.isEmpty {
                text += name
                text += "="
            }
            text += value
        }
        return text.isEmpty ? nil : text
    }

    public var description: String {
        var text = "\(self.name)=\(self.value); Domain=\(self.isHostOnly ? "" : ".")\(self.domain); Path=\(self.path)"
        if let expiresDate { text += "; Expires=\(HTTPDate.format(expiresDate))" }
        if self.isSecure { text += "; Secure" }
        if self.isHTTPOnly { text += "; HttpOnly" }
        if let sameSite { text += "; SameSite=\(sameSite.rawValue)" }
        return text
    }
}

/// Domain and path matching (RFC 6265 sections 5.1.2–5.1.4).
enum CookieMatching {
    /// A domain as a store keeps it: lower-cased, no leading dot, Punycode for Unicode labels.
    static func canonicalDomain(_ domain: String) -> String {
        var domain = Substring(domain)
        while domain.first == "." { domain = domain.dropFirst() }
        return Punycode.asciiHost(domain) ?? domain.lowercased()
    }

    /// The request's host, canonicalised: lower-cased, Punycode, IPv6 without brackets.
    static func canonicalHost(of url: URL) -> String? {
        guard var host = url.host, !host.isEmpty else { return nil }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host.utf8.allSatisfy({ $0 < 0x80 && !($0 >= 0x41 && $0 <= 0x5A) }) { return host }
        return Punycode.asciiHost(host)
    }

    /// The path the cookie rules compare: the URL's path, percent-encoded as sent, `/` when empty.
    static func requestPath(of url: URL) -> String {
        let path = url.path(percentEncoded: true)
        return path.isEmpty ? "/" : path
    }

    /// Whether requests to `url` carry cookies: HTTP and WebSocket URLs (over TCP or a Unix
    /// socket), not `ftp:` or `file:` ones.
    static func carriesCookies(_ url: URL) -> Bool {
        guard let scheme = url.scheme else { return false }
        if scheme == "https" || scheme == "http" { return true }
        return switch scheme.lowercased() {
        case "http", "https", "ws", "wss", "http+unix", "https+unix", "ws+unix", "wss+unix": true
        default: false
        }
    }

    /// Whether requests to `url` go over TLS: `https` and `wss`, over TCP or a Unix socket (the
    /// schemes of ``carriesCookies(_:)`` that are secure).
    static func isSecure(_ url: URL) -> Bool {
        switch url.scheme?.lowercased() {
        case "https", "wss", "https+unix", "wss+unix": true
        default: false
        }
    }

    /// Whether `url` reaches a server on a Unix-domain socket (`http+unix`, `https+unix`, `ws+unix`,
    /// `wss+unix`), whose host is the socket's path. A path is no domain name: like an IP
    /// address, it names itself only (no parent domains, no `Domain` but itself), else
    /// `/tmp/api.example.com` would get, and could set, the cookies of `example.com`.
    static func isUnixSocket(_ url: URL) -> Bool {
        guard let scheme = url.scheme, scheme != "https", scheme != "http" else { return false }
        return switch scheme.lowercased() {
        case "http+unix", "https+unix", "ws+unix", "wss+unix": true
        default: false
        }
    }

    /// Whether `host` is an IPv4 or IPv6 literal.
    static func isIPAddress(_ host: String) -> Bool {
        IPAddress(host) != nil
    }

    /// RFC 6265 5.1.3: identical, or a suffix after a dot of a host that is not an IP address (nor
    /// is the domain one: `192.168.0.10` is no parent of `www.192.168.0.10`).
    ///
    /// Both matches compare bytes, as the RFC's "identical" and "prefix" mean: `String`'s `==`
    /// and `hasPrefix` compare canonical equivalents (`"\u{212A}"`, the Kelvin sign, equals
    /// `"K"`), whose UTF-8 lengths differ.
    static func domainMatches(_ host: String, _ domain: String) -> Bool {
        let hostBytes = host.utf8, domainBytes = domain.utf8
        if hostBytes.elementsEqual(domainBytes) { return true }
        guard hostBytes.count > domainBytes.count else { return false }
        let dot = hostBytes.index(hostBytes.endIndex, offsetBy: -domainBytes.count - 1)
        return hostBytes[dot] == UInt8(ascii: ".") && hostBytes[hostBytes.index(after: dot)...].elementsEqual(domainBytes)
            && !self.isIPAddress(host) && !self.isIPAddress(domain)
    }

    /// RFC 6265 5.1.4.
    static func pathMatches(_ requestPath: String, _ cookiePath: String) -> Bool {
        let request = requestPath.utf8, cookie = cookiePath.utf8
        if request.elementsEqual(cookie) { return true }
        guard request.count > cookie.count, request.starts(with: cookie) else { return false }
        if cookie.last == UInt8(ascii: "/") { return true }
        return request[request.index(request.startIndex, offsetBy: cookie.count)] == UInt8(ascii: "/")
    }

    /// RFC 6265 5.1.4's default-path: the request path up to, not including, its last `/`; `/`
    /// when that leaves nothing.
    static func defaultPath(of url: URL) -> String {
        let path = url.path(percentEncoded: true)
        guard path.hasPrefix("/"), let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return "/" }
        return String(path[..<slash])
    }
}
