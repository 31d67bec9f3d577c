import CourierTesting
import NIOCore
import NIOPosix

/// A server on `127.0.0.1` whose connections `initializer` sets up, on
/// ``TestServer/eventLoopGroup``: the one-case peers a test writes (a server that refuses every
/// connection, one that answers a handshake with set bytes, one that closes TLS from below).
final class LoopbackServer: ShutDownByAwaiting {
    let channel: any Channel
    var port: Int { self.channel.localAddress!.port! }

    private init(channel: any Channel) { self.channel = channel }

    static func start(_ initializer: @escaping @Sendable (any Channel) -> EventLoopFuture<Void>) async throws -> LoopbackServer {
        let channel = try await ServerBootstrap(group: TestServer.eventLoopGroup)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer(initializer)
            .bind(host: "127.0.0.1", port: 0)
            .get()
        return LoopbackServer(channel: channel)
    }

    func shutdown() async {
        try? await self.channel.close()
    }
}
