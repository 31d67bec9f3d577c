import Foundation
import NIOConcurrencyHelpers
import NIOCore

extension ConnectionPool {
    /// Where a WebSocket to `url` (`ws` or `wss`) connects: the key of the `http` or `https` URL
    /// it stands for, on the route the proxy settings give that URL, except that an HTTP proxy
    /// always tunnels (`CONNECT`): a forwarding proxy cannot carry an upgraded connection. A host
    /// mapped to a Unix-domain socket is reached through it, as its HTTP requests are.
    func webSocketKey(for url: URL) -> Key? {
        guard let httpURL = WebSocketTask.httpURL(for: url), var key = Self.key(for: httpURL) else { return nil }
        if self.throughUnixSocket(&key) { return key }
        switch self.settings.proxy?.route(for: httpURL) ?? .direct {
        case .forward(let proxy): key.route = .connectTunnel(proxy)
        case let route: key.route = route
        }
        return key
    }

    /// Opens a connection of its own for a WebSocket, the way the pool opens its HTTP/1.1 ones
    /// (``openChannel(to:tls:on:configure:)``): TCP (to the proxy, if any), the proxy's tunnel,
    /// TLS through `tls` (the security policy and pinning evaluated inside the handshake; ALPN
    /// offers HTTP/1.1 only); then `configure` adds the handshake's handlers. The connection is
    /// never pooled: the upgrade makes it the WebSocket's until it closes.
    func openWebSocketConnection(
        key: Key,
        tls: TLSConnector?,
        on eventLoop: any EventLoop,
        configure: @escaping @Sendable (any Channel) throws -> Void
    ) -> EventLoopFuture<(any Channel, ConnectionEstablishment)> {
        self.openChannel(to: key, tls: tls, on: eventLoop) { channel, _ in try configure(channel) }
            .map { channel, _, establishment in (channel, establishment) }
    }
}
