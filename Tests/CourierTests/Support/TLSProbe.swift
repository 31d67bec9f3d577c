@testable import Courier
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// Connects to a loopback port and starts Courier's TLS on the connection, the way the pool does.
enum TLSProbe {
    /// The connection, after a handshake the connector accepted. Close it when done.
    struct Connection {
        let channel: any Channel
        let result: TLSHandshakeResult
    }

    /// Connects to `127.0.0.1:port` and runs `connector`'s handshake for `host`.
    static func handshake(
        _ connector: TLSConnector,
        host: String = "127.0.0.1",
        port: Int,
        configurePipeline: @escaping @Sendable (TLSHandshakeResult, any Channel) throws -> Void = { _, _ in }
    ) async throws -> Connection {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port)
            .get()
        do {
            let result = try await connector.startTLS(on: channel, host: host, port: port, configurePipeline: configurePipeline).get()
            return Connection(channel: channel, result: result)
        } catch {
            try? await channel.close()
            throw error
        }
    }

    /// Sends a plain HTTP/1.1 `GET path` with `Connection: close` over a connection whose TLS
    /// agreed HTTP/1.1, and returns everything the server sent until it closed.
    static func get(_ path: String, host: String = "127.0.0.1", connector: TLSConnector, port: Int) async throws -> String {
        let collector = ResponseCollector()
        let connection = try await Self.handshake(connector, host: host, port: port) { _, channel in
            try channel.pipeline.syncOperations.addHandler(collector)
        }
        var request = connection.channel.allocator.buffer(capacity: 128)
        request.writeString("GET \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\nConnection: close\r\n\r\n")
        try await connection.channel.writeAndFlush(request)
        try await connection.channel.closeFuture.get()
        return collector.text
    }

    /// Keeps every byte read, as text.
    final class ResponseCollector: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        private let bytes = NIOLockedValueBox([UInt8]())

        var text: String { String(decoding: self.bytes.withLockedValue { $0 }, as: UTF8.self) }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let buffer = self.unwrapInboundIn(data)
            self.bytes.withLockedValue { $0 += buffer.readableBytesView }
        }

        /// An error after the handshake (a TLS alert, a reset) ends the text, so that a test that
        /// expected a page says why it got none.
        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            self.bytes.withLockedValue { $0 += Array("\n[error: \(error)]".utf8) }
            context.close(promise: nil)
        }
    }
}

extension TLSProbe {
    /// Completes a promise with the first bytes read.
    final class FirstRead: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let bytes: EventLoopPromise<ByteBuffer>

        init(on eventLoop: any EventLoop) {
            self.bytes = eventLoop.makePromise()
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            self.bytes.succeed(self.unwrapInboundIn(data))
        }

        func channelInactive(context: ChannelHandlerContext) {
            self.bytes.fail(ChannelError.eof)
            context.fireChannelInactive()
        }
    }
}
