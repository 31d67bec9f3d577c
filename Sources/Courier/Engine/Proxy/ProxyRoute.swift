import Foundation
import NIOCore
import NIOHTTP1

/// How a request reaches its server: directly, or through a proxy in one of three ways.
/// ``ProxyConfiguration/route(for:)`` picks it; the connection pool keys connections by it
/// (requests on different routes never share a connection).
enum ProxyRoute: Sendable, Hashable, CustomStringConvertible {
    /// A connection to the server itself.
    case direct
    /// An `http` URL through an HTTP proxy: connect to the proxy and send requests in absolute
    /// form (``adjust(_:for:)``); no tunnel.
    case forward(NIOEngine.Proxy)
    /// An `https` URL through an HTTP proxy: connect to the proxy, open a `CONNECT` tunnel
    /// (``ProxyTunnel/establish(on:target:port:route:timeout:)``), then TLS to the server.
    case connectTunnel(NIOEngine.Proxy)
    /// Any URL through a SOCKS5 proxy: connect to the proxy, open a SOCKS5 tunnel
    /// (``ProxyTunnel/establish(on:target:port:route:timeout:)``), then TLS for `https`.
    case socksTunnel(NIOEngine.Proxy)

    /// For logs, passwords as `***`: "direct", "forwarded by http://p:3128", "CONNECT through
    /// http://ann:***@p:3128", "SOCKS5 through socks5h://127.0.0.1:1080".
    var description: String {
        switch self {
        case .direct: "direct"
        case .forward(let proxy): "forwarded by \(proxy)"
        case .connectTunnel(let proxy): "CONNECT through \(proxy)"
        case .socksTunnel(let proxy): "SOCKS5 through \(proxy)"
        }
    }

    /// The proxy, or nil for ``direct``.
    var proxy: NIOEngine.Proxy? {
        switch self {
        case .direct: nil
        case .forward(let proxy), .connectTunnel(let proxy), .socksTunnel(let proxy): proxy
        }
    }

    /// Where the TCP connection goes: the proxy (its host in IDNA form,
    /// ``NIOEngine/Proxy/connectionHost``), or (direct) the server's `host` and `port`.
    func connectionAddress(host: String, port: Int) -> (host: String, port: Int) {
        guard let proxy = self.proxy else { return (host, port) }
        return (proxy.connectionHost, proxy.port)
    }

    /// Whether the pool opens a tunnel (``ProxyTunnel/establish(on:target:port:route:timeout:)``)
    /// after connecting and before TLS or HTTP: ``connectTunnel(_:)`` and ``socksTunnel(_:)``.
    var tunnels: Bool {
        switch self {
        case .direct, .forward: false
        case .connectTunnel, .socksTunnel: true
        }
    }

    /// Whether requests go in absolute form with the proxy's credentials
    /// (``adjust(_:for:)``): ``forward(_:)`` only, plain `http` through an HTTP proxy.
    var usesAbsoluteForm: Bool {
        if case .forward = self { return true }
        return false
    }

    /// Rewrites an HTTP/1.1 request head for this route: for ``forward``, the target in absolute
    /// form (``ProxyRoute/absoluteForm(of:)``) and `Proxy-Authorization` when the proxy has
    /// credentials and the request does not set the field itself; other routes leave it as it is
    /// (the origin-form target, no proxy fields: a tunnel carries the request unchanged).
    /// - Parameters:
    ///   - head: The head as it would go to the server directly.
    ///   - url: The request's URL.
    func adjust(_ head: inout HTTPRequestHead, for url: URL) {
        guard case .forward(let proxy) = self else { return }
        head.uri = Self.absoluteForm(of: url)
        if let authorization = proxy.basicAuthorization, !head.headers.contains(name: "Proxy-Authorization") {
            head.headers.add(name: "Proxy-Authorization", value: authorization)
        }
    }

    /// The request-target in absolute form (RFC 9112, 3.2.2) for a request sent to a proxy:
    /// `http://host[:port]/path[?query]`, the scheme and host lowercased (the host IDNA-encoded), the port only when the
    /// URL names one other than the scheme's default, no user information or fragment, the path
    /// and query percent-encoded as in the URL (an empty path is `/`).
    /// - Parameter url: The request's URL.
    /// - Returns: The target.
    static func absoluteForm(of url: URL) -> String {
        let scheme = (url.scheme ?? "http").lowercased()
        // The host as `Host` and DNS name it (IDNA for a Unicode host): Foundation's encoded host
        // was the UTF-8 percent-encoded (`b%c3%bccher.example`), which tinyproxy could not resolve.
        var host = (url.requestHost ?? "").lowercased()
        if host.contains(":"), !host.hasPrefix("[") { host = "[\(host)]" }
        var target = scheme + "://" + host
        if let port = url.port, port != URL.defaultPort(forScheme: scheme) {
            target += ":\(port)"
        }
        let path = url.path(percentEncoded: true)
        target += path.isEmpty ? "/" : path
        if let query = url.query(percentEncoded: true) {
            target += "?" + query
        }
        return target
    }
}
