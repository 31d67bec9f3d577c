import Foundation
import NIOCore
import NIOHTTP1

/// How a request reaches its server: directly, or through a proxy in one of three ways.
/// ``ProxyConfiguration/route(for:)`` picks it; the connection pool keys connections by it
/// (requests on different routes never share a connection).
enum ProxyRoute: Sendable, Hashable {
    /// A connection to the server itself.
    case direct
    /// An `http` URL through an HTTP proxy: connect to the proxy and send requests in absolute
    /// form (``adjust(_:for:)``); no tunnel.
    case forward(SessionConfiguration.Proxy)
    /// An `https` URL through an HTTP proxy: connect to the proxy, open a `CONNECT` tunnel
    /// (``ProxyTunnel/connect(on:through:to:port:timeout:)``), then TLS to the server.
    case connectTunnel(SessionConfiguration.Proxy)
    /// Any URL through a SOCKS5 proxy: connect to the proxy, open a SOCKS5 tunnel
    /// (``ProxyTunnel/socks(on:through:to:port:timeout:)``), then TLS for `https`.
    case socksTunnel(SessionConfiguration.Proxy)

    /// The proxy, or nil for ``direct``.
    var proxy: SessionConfiguration.Proxy? {
        switch self {
        case .direct: nil
        case .forward(let proxy), .connectTunnel(let proxy), .socksTunnel(let proxy): proxy
        }
    }

    /// Where the TCP connection goes: the proxy, or (direct) the server's `host` and `port`.
    func connectionAddress(host: String, port: Int) -> (host: String, port: Int) {
        guard let proxy = self.proxy else { return (host, port) }
        return (proxy.host, proxy.port)
    }

    /// Sets up the tunnel this route needs on `channel`, a TCP connection to the proxy (see
    /// ``connectionAddress(host:port:)``): a `CONNECT` or SOCKS5 tunnel to `host`:`port`;
    /// nothing for ``direct`` and ``forward``. Runs on the channel's event loop; the future
    /// succeeds with every handler it added removed.
    /// - Parameters:
    ///   - channel: The connected channel, nothing in its pipeline yet.
    ///   - host: The server's host (the URL's, an IPv6 address without brackets).
    ///   - port: The server's port.
    ///   - timeout: How long the proxy may take to open the tunnel.
    func establishTunnel(on channel: any Channel, to host: String, port: Int, timeout: TimeAmount) -> EventLoopFuture<Void> {
        switch self {
        case .direct, .forward:
            channel.eventLoop.makeSucceededVoidFuture()
        case .connectTunnel(let proxy):
            ProxyTunnel.connect(on: channel, through: proxy, to: host, port: port, timeout: timeout)
        case .socksTunnel(let proxy):
            ProxyTunnel.socks(on: channel, through: proxy, to: host, port: port, timeout: timeout)
        }
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
    /// `http://host[:port]/path[?query]`, the scheme and host lowercased, the port only when the
    /// URL names one other than the scheme's default, no user information or fragment, the path
    /// and query percent-encoded as in the URL (an empty path is `/`).
    /// - Parameter url: The request's URL.
    /// - Returns: The target.
    static func absoluteForm(of url: URL) -> String {
        let scheme = (url.scheme ?? "http").lowercased()
        var host = (url.host(percentEncoded: true) ?? "").lowercased()
        if host.contains(":"), !host.hasPrefix("[") { host = "[\(host)]" }
        var target = scheme + "://" + host
        if let port = url.port, port != (scheme == "https" ? 443 : 80) {
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
