import Foundation

/// Which proxy, if any, carries a request: a proxy for `http` URLs, one for `https` URLs, and the
/// hosts that bypass both, read from the environment the way curl reads it or set by hand. It is
/// ``SessionConfiguration/proxy`` and ``NIOEngine/Configuration/proxy``.
///
/// ```swift
/// var configuration = SessionConfiguration.default
/// // One proxy for everything:
/// configuration.proxy = .http(host: "proxy.example.com", port: 3128)
/// // http_proxy, https_proxy, all_proxy and no_proxy, as curl reads them:
/// configuration.proxy = try ProxyConfiguration.fromEnvironment()
/// // By hand:
/// configuration.proxy = ProxyConfiguration(
///     http: try NIOEngine.Proxy(url: "http://ann:secret@proxy.example.com:3128"),
///     https: .socks(host: "127.0.0.1", port: 1080),
///     bypass: try ProxyConfiguration.BypassList("localhost, .internal.example.com, 10.0.0.0/8"))
/// ```
///
/// An HTTP proxy (reached in cleartext, or over TLS for an `https://` proxy) carries an `http`
/// URL as an absolute-form request (`GET http://host/path HTTP/1.1`) and an `https` URL through a
/// `CONNECT` tunnel; a SOCKS5 proxy tunnels both. An HTTP proxy's credentials go with every
/// request (`Proxy-Authorization: Basic`, sent up front, not after a 407) until it asks for
/// Digest, which they then answer. URLs of other schemes get no proxy.
///
/// A proxy that refuses is a ``CourierError`` naming it:
/// ``CourierError/Code/proxyAuthenticationRequired`` (407, or 401 to a `CONNECT`, or a SOCKS5 proxy that wants a
/// method Courier does not offer) or ``CourierError/Code/proxyRefused`` (403, 502, a SOCKS5 error
/// reply).

public struct ProxyConfiguration: Sendable, Hashable, CustomStringConvertible {
    /// The proxy for `http` URLs, or nil to reach them directly.
    public var http: NIOEngine.Proxy?
    /// The proxy for `https` URLs, or nil to reach them directly.
    public var https: NIOEngine.Proxy?
    /// The hosts reached directly whatever ``http`` and ``https`` say (curl's `no_proxy`).
    public var bypass: BypassList

    /// A configuration from its parts.
    /// - Parameters:
    ///   - http: The proxy for `http` URLs.
    ///   - https: The proxy for `https` URLs.
    ///   - bypass: The hosts reached directly.
    public init(http: NIOEngine.Proxy? = nil, https: NIOEngine.Proxy? = nil, bypass: BypassList = .none) {
        self.http = http
        self.https = https
        self.bypass = bypass
    }

    /// One proxy for every `http` and `https` URL (none with `nil`), no host bypassing it.
    /// - Parameter proxy: The proxy.
    public init(proxy: NIOEngine.Proxy?) {
        self.init(http: proxy, https: proxy)
    }

    /// No proxy for any URL: every request goes to its server directly.
    public static let direct = ProxyConfiguration()

    /// One HTTP proxy for every `http` and `https` URL.
    /// - Parameters:
    ///   - host: The proxy's host.
    ///   - port: The proxy's port.
    ///   - username: The user name for the proxy's authentication (Basic, or Digest when it
    ///     asks), if it wants one.
    ///   - password: The password that goes with it.
    /// - Returns: The configuration.
    public static func http(host: String, port: Int, username: String? = nil, password: String? = nil) -> ProxyConfiguration {
        ProxyConfiguration(proxy: .http(host: host, port: port, username: username, password: password))
    }

    /// One HTTP proxy reached over TLS (``NIOEngine/Proxy/https(host:port:username:password:)``)
    /// for every `http` and `https` URL.
    /// - Parameters:
    ///   - host: The proxy's host (the name its certificate is checked against).
    ///   - port: The proxy's port.
    ///   - username: The user name for the proxy's authentication (Basic, or Digest when it
    ///     asks), if it wants one.
    ///   - password: The password that goes with it.
    /// - Returns: The configuration.
    public static func https(host: String, port: Int, username: String? = nil, password: String? = nil) -> ProxyConfiguration {
        ProxyConfiguration(proxy: .https(host: host, port: port, username: username, password: password))
    }

    /// One SOCKS5 proxy for every `http` and `https` URL, with a user name and password (RFC
    /// 1929) if it wants them.
    /// - Parameters:
    ///   - host: The proxy's host.
    ///   - port: The proxy's port.
    ///   - username: The user name, if the proxy wants one (1 to 255 bytes of UTF-8).
    ///   - password: Its password (at most 255 bytes).
    /// - Returns: The configuration.
    public static func socks(host: String, port: Int, username: String? = nil, password: String? = nil) -> ProxyConfiguration {
        ProxyConfiguration(proxy: .socks(host: host, port: port, username: username, password: password))
    }

    /// One proxy for every `http` and `https` URL, read from a proxy URL as curl reads `--proxy`
    /// (see ``NIOEngine/Proxy/init(url:)``).
    /// - Parameter url: The proxy URL: `http://[user:password@]host[:port]`,
    ///   `socks5://[user:password@]host[:port]`, `socks5h://[user:password@]host[:port]`, or
    ///   `host[:port]` for an HTTP proxy.
    /// - Throws: ``CourierError/Code/invalidProxyConfiguration`` for a URL that cannot be used.
    public init(url: String) throws(CourierError) {
        self.init(proxy: try NIOEngine.Proxy(url: url))
    }

    /// The configuration for logs, passwords as `***`: `http: http://ann:***@p:3128, https:
    /// socks5h://127.0.0.1:1080, no_proxy: localhost,.internal`, or `direct`.
    public var description: String {
        guard !self.isEmpty else { return "direct" }
        var parts = ["http: \(self.http.map(\.description) ?? "direct")", "https: \(self.https.map(\.description) ?? "direct")"]
        if !self.bypass.isEmpty { parts.append("no_proxy: \(self.bypass.description)") }
        return parts.joined(separator: ", ")
    }

    /// Whether no URL gets a proxy.
    public var isEmpty: Bool { self.http == nil && self.https == nil }

    /// The proxy for a request to `url`, or nil to connect to its host directly: ``https`` for an
    /// `https` URL, ``http`` for an `http` URL, nil for any other scheme, for a URL without a
    /// host, and for a host (and port: 80 or 443 when the URL names none) that ``bypass`` lists.
    /// - Parameter url: The request's URL.
    /// - Returns: The proxy, or nil.
    public func proxy(for url: URL) -> NIOEngine.Proxy? {
        let proxy: NIOEngine.Proxy?
        switch url.scheme?.lowercased() {
        case "http": proxy = self.http
        case "https": proxy = self.https
        default: return nil
        }
        guard let proxy, let host = url.host(percentEncoded: false), !host.isEmpty else { return nil }
        let port = url.effectivePort ?? 80
        return self.bypass.contains(host: host, port: port) ? nil : proxy
    }

    /// How a request to `url` reaches its server: what the connection pool does (the proxy's
    /// kind and the URL's scheme decide between forwarding and a tunnel). Part of the pool's key.
    /// - Parameter url: The request's URL.
    /// - Returns: ``ProxyRoute/direct`` when ``proxy(for:)`` is nil.
    func route(for url: URL) -> ProxyRoute {
        guard let proxy = self.proxy(for: url) else { return .direct }
        if proxy.isSOCKS { return .socksTunnel(proxy) }
        return url.scheme?.lowercased() == "https" ? .connectTunnel(proxy) : .forward(proxy)
    }
}
