import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

extension ConnectionPool {
    /// Where a WebSocket to `url` (`ws` or `wss`) connects: the key of the `http` or `https` URL
    /// it stands for, on the route the proxy settings give that URL, except that an HTTP proxy
    /// always tunnels (`CONNECT`): a forwarding proxy cannot carry an upgraded connection.
    func webSocketKey(for url: URL) -> Key? {
        guard let httpURL = WebSocketTask.httpURL(for: url), var key = Self.key(for: httpURL) else { return nil }
        switch self.settings.proxy?.route(for: httpURL) ?? .direct {
        case .forward(let proxy): key.route = .connectTunnel(proxy)
        case let route: key.route = route
        }
        return key
    }

    /// Opens a connection of its own for a WebSocket, the way the pool opens its HTTP/1.1 ones:
    /// TCP (to the proxy, if any), the proxy's tunnel, TLS through `tls` (the security policy and
    /// pinning evaluated inside the handshake; ALPN offers HTTP/1.1 only); then `configure` adds
    /// the handshake's handlers. The connection is never pooled: the upgrade makes it the
    /// WebSocket's until it closes.
    func openWebSocketConnection(
        key: Key,
        tls: TLSConnector?,
        on eventLoop: any EventLoop,
        configure: @escaping @Sendable (any Channel) throws -> Void
    ) -> EventLoopFuture<(any Channel, ConnectionEstablishment)> {
        let resolver = TimedResolver(loop: eventLoop)
        let setup = NIOLockedValueBox(ConnectionEstablishment(connectStart: .now, isProxyConnection: key.route != .direct))
        let bootstrap = ClientBootstrap(group: eventLoop)
            .connectTimeout(self.settings.connectTimeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .resolver(resolver)
        let route = key.route
        let address = route.connectionAddress(host: key.host, port: key.port)
        let connectTimeout = self.settings.connectTimeout
        let opened: EventLoopFuture<any Channel>
        if key.tls {
            guard let tls else {
                return eventLoop.makeFailedFuture(CourierError(.unsupportedScheme, "\(key): this engine has no TLS"))
            }
            opened = bootstrap.connect(host: address.host, port: address.port).flatMap { channel in
                ProxyTunnel.establish(on: channel, target: key.host, port: key.port, route: route, timeout: connectTimeout).flatMap {
                    setup.withLockedValue { $0.secureConnectionStart = .now }
                    return tls.startTLS(on: channel, host: key.host, port: key.port) { agreed, channel in
                        setup.withLockedValue { setup in
                            setup.secureConnectionEnd = .now
                            setup.tlsVersion = agreed.tlsVersion
                            setup.tlsCipherSuite = agreed.cipherSuite
                        }
                        try configure(channel)
                    }
                }.map { _ in channel }
            }
        } else {
            opened = bootstrap.connect(host: address.host, port: address.port).flatMap { channel in
                ProxyTunnel.establish(on: channel, target: key.host, port: key.port, route: route, timeout: connectTimeout).flatMapThrowing {
                    do {
                        try configure(channel)
                    } catch {
                        channel.close(promise: nil)
                        throw error
                    }
                    return channel
                }
            }
        }
        return opened.map { channel in
            let establishment = setup.withLockedValue { setup in
                let lookup = resolver.times
                setup.domainLookupStart = lookup.start
                setup.domainLookupEnd = lookup.end
                if let end = lookup.end { setup.connectStart = end }
                setup.connectEnd = .now
                return setup
            }
            return (channel, establishment)
        }
    }
}

extension NIOEngine {
    /// The TLS connector for `wss` connections: the engine's policies, HTTP/1.1 only.
    func webSocketTLSConnector() -> TLSConnector {
        self.webSocketTLS.withLockedValue { connector in
            if let connector { return connector }
            let made = TLSConnector(
                serverTrust: self.serverTrust,
                applicationProtocols: [.http1_1],
                handshakeTimeout: self.pool.settings.connectTimeout
            )
            connector = made
            return made
        }
    }
}
