import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL

/// Binds the listening socket and sets up each connection: TLS when asked, then HTTP/1.1, or
/// HTTP/2 when ALPN picks `h2`, with a ``TestServerHandler`` per connection or stream.
enum ServerPipeline {
    static func bind(configuration: TestServer.Configuration, tls: TLSConfiguration?, state: ServerState) async throws -> any Channel {
        let sslContext = try tls.map { try NIOSSLContext(configuration: $0) }
        let http2 = configuration.http2
        var bootstrap = ServerBootstrap(group: TestServer.eventLoopGroup)
            .serverChannelOption(.backlog, value: 256)
            .childChannelOption(.maxMessagesPerRead, value: 16)
            .childChannelInitializer { channel in
                state.register(channel)
                return configure(channel, sslContext: sslContext, http2: http2, state: state)
            }
        if let path = configuration.unixSocketPath {
            return try await bootstrap.bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true).get()
        }
        bootstrap = bootstrap
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
        return try await bootstrap.bind(host: configuration.host, port: configuration.port).get()
    }

    /// The WebSocket routes' upgrade (``WebSocketRoute``) on HTTP/1.1 connections.
    private static func webSocketUpgrade(_ state: ServerState) -> NIOHTTPServerUpgradeConfiguration {
        (upgraders: [WebSocketRoute.upgrader(state: state)], completionHandler: { _ in })
    }

    private static func configure(_ channel: any Channel, sslContext: NIOSSLContext?, http2: Bool, state: ServerState) -> EventLoopFuture<Void> {
        let sync = channel.pipeline.syncOperations
        do {
            guard let sslContext else {
                try sync.configureHTTPServerPipeline(withServerUpgrade: Self.webSocketUpgrade(state), withErrorHandling: true)
                try sync.addHandler(TestServerHandler(state: state, scheme: "http"))
                return channel.eventLoop.makeSucceededVoidFuture()
            }
            try sync.addHandler(NIOSSLServerHandler(context: sslContext))
            guard http2 else {
                try sync.configureHTTPServerPipeline(withServerUpgrade: Self.webSocketUpgrade(state), withErrorHandling: true)
                try sync.addHandler(TestServerHandler(state: state, scheme: "https"))
                return channel.eventLoop.makeSucceededVoidFuture()
            }
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        // ALPN picks h2 or http/1.1; either way each stream or connection gets its own handler.
        // A 4 MiB receive window per stream (instead of 64 KiB) roughly doubles HTTP/2 upload
        // throughput to /courier/upload on loopback; it also bounds what a stream may buffer.
        return channel.configureCommonHTTPServerPipeline(targetWindowSize: 4 << 20) { stream in
            stream.eventLoop.makeCompletedFuture {
                try stream.pipeline.syncOperations.addHandler(TestServerHandler(state: state, scheme: "https"))
            }
        }
    }
}
