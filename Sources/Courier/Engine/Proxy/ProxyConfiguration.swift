import Foundation

/// Which proxy, if any, carries a request: a proxy for `http` URLs, one for `https` URLs, and the
/// hosts that bypass both, read from the environment the way curl reads it or set by hand.
///
/// ```swift
/// // One proxy for everything:
/// let corporate = ProxyConfiguration(proxy: .http(host: "proxy.example.com", port: 3128))
/// // http_proxy, https_proxy, all_proxy and no_proxy, as curl reads them:
/// let fromEnvironment = try ProxyConfiguration.environment()
/// let proxy = fromEnvironment.proxy(for: URL(string: "https://api.example.com/v1")!)
/// ```
///
/// An HTTP proxy carries an `http` URL as an absolute-form request (`GET http://host/path
/// HTTP/1.1`) and an `https` URL through a `CONNECT` tunnel, with `Proxy-Authorization: Basic`
/// when it has credentials; a SOCKS5 proxy tunnels both. URLs of other schemes get no proxy.
public struct ProxyConfiguration: Sendable, Hashable {
    /// The proxy for `http` URLs, or nil to reach them directly.
    public var http: SessionConfiguration.Proxy?
    /// The proxy for `https` URLs, or nil to reach them directly.
    public var https: SessionConfiguration.Proxy?
    /// The hosts reached directly whatever ``http`` and ``https`` say (curl's `no_proxy`).
    public var bypass: BypassList

    /// A configuration from its parts.
    /// - Parameters:
    ///   - http: The proxy for `http` URLs.
    ///   - https: The proxy for `https` URLs.
    ///   - bypass: The hosts reached directly.
    public init(http: SessionConfiguration.Proxy? = nil, https: SessionConfiguration.Proxy? = nil, bypass: BypassList = .none) {
        self.http = http
        self.https = https
        self.bypass = bypass
    }

    /// One proxy for every `http` and `https` URL (none with `nil`), no host bypassing it.
    /// - Parameter proxy: The proxy.
    public init(proxy: SessionConfiguration.Proxy?) {
        self.init(http: proxy, https: proxy)
    }

    /// No proxy for any URL.
    public static let none = ProxyConfiguration()

    /// Whether no URL gets a proxy.
    public var isEmpty: Bool { self.http == nil && self.https == nil }

    /// The proxy for a request to `url`, or nil to connect to its host directly: ``https`` for an
    /// `https` URL, ``http`` for an `http` URL, nil for any other scheme, for a URL without a
    /// host, and for a host (and port: 80 or 443 when the URL names none) that ``bypass`` lists.
    /// - Parameter url: The request's URL.
    /// - Returns: The proxy, or nil.
    public func proxy(for url: URL) -> SessionConfiguration.Proxy? {
        let proxy: SessionConfiguration.Proxy?
        switch url.scheme?.lowercased() {
        case "http": proxy = self.http
        case "https": proxy = self.https
        default: return nil
        }
        guard let proxy, let host = url.host(percentEncoded: false), !host.isEmpty else { return nil }
        let port = url.port ?? (url.scheme?.lowercased() == "https" ? 443 : 80)
        return self.bypass.contains(host: host, port: port) ? nil : proxy
    }

    /// How a request to `url` reaches its server: what the connection pool does (the proxy's
    /// kind and the URL's scheme decide between forwarding and a tunnel).
    func route(for url: URL) -> ProxyRoute {
        guard let proxy = self.proxy(for: url) else { return .direct }
        if proxy.isSOCKS { return .socksTunnel(proxy) }
        return url.scheme?.lowercased() == "https" ? .connectTunnel(proxy) : .forward(proxy)
    }
}
