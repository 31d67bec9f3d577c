import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A loopback server whose answers a test writes byte for byte, for HTTP/1.1 cases TestServer does
/// not produce: bodies that end with the connection, interim 1xx answers, a kept-alive connection
/// that closes when the next request arrives.
///
/// It reads each request's head (and a `Content-Length` body), then asks `script` what to do.
final class ScriptedHTTPServer: Sendable {
    enum Action: Sendable {
        /// Writes `bytes`; closes the connection afterwards when `thenClose`.
        case respond(String, thenClose: Bool = false)
        /// Closes the connection without answering.
        case close
    }

    /// What to do with the `request`-th request (0-based) of the `connection`-th connection.
    typealias Script = @Sendable (_ connection: Int, _ request: Int, _ head: String) -> Action

    let channel: any Channel

    var port: Int { self.channel.localAddress!.port! }
    var baseURL: URL { URL(string: "http://127.0.0.1:\(self.port)/")! }
    /// How many connections were accepted.
    var connectionCount: Int { self.connectionsBox.withLockedValue { $0 } }
    /// The request heads received, in order.
    var receivedHeads: [String] { self.headsBox.withLockedValue { $0 } }

    private init(channel: any Channel, connections: NIOLockedValueBox<Int>, heads: NIOLockedValueBox<[String]>) {
        self.channel = channel
        self.connectionsBox = connections
        self.headsBox = heads
    }

    private let connectionsBox: NIOLockedValueBox<Int>
    private let headsBox: NIOLockedValueBox<[String]>

    static func start(_ script: @escaping Script) async throws -> ScriptedHTTPServer {
        let connections = NIOLockedValueBox(0)
        let heads = NIOLockedValueBox<[String]>([])
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                let index = connections.withLockedValue { count -> Int in
                    defer { count += 1 }
                    return count
                }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ScriptedConnectionHandler(connection: index, script: script, heads: heads))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        return ScriptedHTTPServer(channel: channel, connections: connections, heads: heads)
    }

    func shutdown() async {
        try? await self.channel.close()
    }
}

private final class ScriptedConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let connection: Int
    let script: ScriptedHTTPServer.Script
    let heads: NIOLockedValueBox<[String]>
    var buffer = ByteBuffer()
    var requests = 0

    init(connection: Int, script: @escaping ScriptedHTTPServer.Script, heads: NIOLockedValueBox<[String]>) {
        self.connection = connection
        self.script = script
        self.heads = heads
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var incoming = self.unwrapInboundIn(data)
        self.buffer.writeBuffer(&incoming)
        while let text = self.buffer.getString(at: self.buffer.readerIndex, length: self.buffer.readableBytes),
            let end = text.range(of: "\r\n\r\n")
        {
            let head = String(text[..<end.lowerBound])
            let length = head.split(separator: "\r\n")
                .first { $0.lowercased().hasPrefix("content-length:") }
                .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
            let headBytes = text[..<end.upperBound].utf8.count
            guard self.buffer.readableBytes >= headBytes + length else { return }
            self.buffer.moveReaderIndex(forwardBy: headBytes + length)
            self.heads.withLockedValue { $0.append(head) }
            let action = self.script(self.connection, self.requests, head)
            self.requests += 1
            switch action {
            case .respond(let bytes, let thenClose):
                let written = context.writeAndFlush(self.wrapOutboundOut(ByteBuffer(string: bytes)))
                if thenClose {
                    let context = NIOLoopBound(context, eventLoop: context.eventLoop)
                    written.whenComplete { _ in context.value.close(promise: nil) }
                    return
                }
            case .close:
                context.close(promise: nil)
                return
            }
        }
    }
}
