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
        return try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelOption(.maxMessagesPerRead, value: 16)
            .childChannelInitializer { channel in
                state.register(channel)
                return channel.eventLoop.makeCompletedFuture {
                    try configure(channel, sslContext: sslContext, http2: http2, state: state)
                }
            }
            .bind(host: configuration.host, port: 0)
            .get()
    }

    private static func configure(_ channel: any Channel, sslContext: NIOSSLContext?, http2: Bool, state: ServerState) throws {
        let sync = channel.pipeline.syncOperations
        guard let sslContext else {
            try sync.configureHTTPServerPipeline(withErrorHandling: true)
            try sync.addHandler(TestServerHandler(state: state, scheme: "http"))
            return
        }
        try sync.addHandler(NIOSSLServerHandler(context: sslContext))
        if http2 {
            _ = channel.configureCommonHTTPServerPipeline { stream in
                stream.eventLoop.makeCompletedFuture {
                    try stream.pipeline.syncOperations.addHandler(TestServerHandler(state: state, scheme: "https"))
                }
            }
        } else {
            try sync.configureHTTPServerPipeline(withErrorHandling: true)
            try sync.addHandler(TestServerHandler(state: state, scheme: "https"))
        }
    }
}
