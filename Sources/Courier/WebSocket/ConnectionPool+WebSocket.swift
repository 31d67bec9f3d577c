import Foundation
import NIOConcurrencyHelpers
import NIOCore

extension ConnectionPool {
    /// Where a WebSocket connects, given the `http` or `https` URL its `ws` or `wss` URL stands for
    /// (``WebSocketTask/httpURL(for:)``): that URL's key (``key(for:)``: its proxy route, its
    /// host's Unix-domain socket, or the socket an `http+unix` URL names), except that an HTTP proxy always tunnels (`CONNECT`): a
    /// forwarding proxy cannot carry an upgraded connection.
    func webSocketKey(for httpURL: URL) -> Key? {
        guard var key = self.key(for: httpURL) else { return nil }
        if case .forward(let proxy) = key.route { key.route = .connectTunnel(proxy) }
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
