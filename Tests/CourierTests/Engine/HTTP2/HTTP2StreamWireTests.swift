@testable import Courier
import CompressNIO
import Foundation
import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP2
import Testing

/// A hop on an ``HTTP2Stream`` of a connection whose ``HTTP2ConnectionHandler`` sits behind
/// swift-nio-http2's client handler in its frame mode, talking to swift-nio-http2's server handler
/// through two `EmbeddedChannel`s (the bytes carried across by hand): the frames the request
/// becomes, the response reaching the exchange, the windows, the close. Everything runs on the
/// test's thread, so every event has happened when a call returns.
@Suite("HTTP/2 streams without channels, on EmbeddedChannels")
struct HTTP2StreamWireTests {
    typealias Recorder = HopHandlerTests.Recorder

    /// The windows of the connection under test: small, so that a test can use them up.
    static let streamWindow = 65535
    static let connectionWindow = 1024 * 1024

    struct Peers {
        let engine: NIOEngine
        let loop = EmbeddedEventLoop()
        let client: EmbeddedChannel
        let server = EmbeddedChannel()
        let handler: HTTP2ConnectionHandler
        let connection: HTTP2Connection
        let key = ConnectionPool.Key(host: "127.0.0.1", port: 8443, tls: true)
        /// Holds the client channel's close until released, as TLS holds it until the server's
        /// close_notify; nil unless asked for.
        let closeHolder: CloseHolder?

        /// - Parameter holdingCloses: whether the client channel's close waits for
        ///   ``CloseHolder/release()``.
        init(holdingCloses: Bool = false) throws {
            _ = LiveObjectCheck.installed
            self.engine = NIOEngine(configuration: NIOEngine.Configuration())
            self.handler = HTTP2ConnectionHandler(
                configuration: .init(idleTimeout: .seconds(60), pingInterval: .seconds(30), pingTimeout: .seconds(10)),
                streamWindow: HTTP2StreamWireTests.streamWindow, connectionWindow: HTTP2StreamWireTests.connectionWindow)
            self.client = EmbeddedChannel(loop: self.loop)
            self.closeHolder = holdingCloses ? CloseHolder() : nil
            if let closeHolder = self.closeHolder { try self.client.pipeline.syncOperations.addHandler(closeHolder) }
            // Push off, as Courier's connections have it (`ConnectionPool.addHTTP2Handlers`).
            try self.client.pipeline.syncOperations.addHandler(
                NIOHTTP2Handler(mode: .client, initialSettings: nioDefaultSettings + [HTTP2Setting(parameter: .enablePush, value: 0)]))
            try self.client.pipeline.syncOperations.addHandler(self.handler)
            try self.server.pipeline.syncOperations.addHandler(NIOHTTP2Handler(mode: .server))
            let address = try SocketAddress(ipAddress: "127.0.0.1", port: 8443)
            try self.server.connect(to: address).wait()
            try self.client.connect(to: address).wait()
            self.connection = HTTP2Connection(
                channel: self.client, key: self.key, pool: self.engine.pool, handler: self.handler,
                establishment: ConnectionEstablishment(connectStart: .now, isProxyConnection: false))
            try self.exchange()
            _ = try self.serverReceived()
        }

        /// Starts `request` on a stream of the connection, as the pool would hand it over.
        func run(_ request: Request) throws -> (NIOExchange, Recorder, EngineHop) {
            let recorder = Recorder()
            let exchange = NIOExchange(engine: self.engine, request: request, delegate: recorder)
            let hop = try EngineHop(exchange: exchange, request: request, pool: self.engine.pool, key: self.key)
            self.connection.run(hop)
            try self.exchange()
            return (exchange, recorder, hop)
        }

        /// Carries bytes both ways until neither side has more to send.
        func exchange() throws {
            var moved = true
            while moved {
                moved = false
                while let bytes = try self.client.readOutbound(as: ByteBuffer.self) {
                    try self.server.writeInbound(bytes)
                    moved = true
                }
                while let bytes = try self.server.readOutbound(as: ByteBuffer.self) {
                    guard self.client.isActive else { break }
                    try self.client.writeInbound(bytes)
                    moved = true
                }
            }
        }

        /// The frames the server received since last asked.
        func serverReceived() throws -> [HTTP2Frame] {
            var frames: [HTTP2Frame] = []
            while let frame = try self.server.readInbound(as: HTTP2Frame.self) { frames.append(frame) }
            return frames
        }

        func serverSends(_ payload: HTTP2Frame.FramePayload, on stream: HTTP2StreamID = 1) throws {
            try self.server.writeAndFlush(HTTP2Frame(streamID: stream, payload: payload)).wait()
            try self.exchange()
        }
    }

    /// Sits at the socket's end of a channel and keeps its close from happening until released.
    final class CloseHolder: ChannelOutboundHandler {
        typealias OutboundIn = ByteBuffer
        private var held: (context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?)?

        var isHolding: Bool { self.held != nil }

        func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
            self.held = (context, mode, promise)
        }

        func release() {
            guard let (context, mode, promise) = self.held else { return }
            self.held = nil
            context.close(mode: mode, promise: promise)
        }
    }

    static let url = URL(string: "https://127.0.0.1:8443/a?b=1")!

    static func windowUpdates(in frames: [HTTP2Frame], on stream: HTTP2StreamID) -> [Int] {
        frames.compactMap { frame in
            guard frame.streamID == stream, case .windowUpdate(let increment) = frame.payload else { return nil }
            return increment
        }
    }

    static func resets(in frames: [HTTP2Frame]) -> [NIOHTTP2.HTTP2ErrorCode] {
        frames.compactMap { frame in
            guard case .rstStream(let code) = frame.payload else { return nil }
            return code
        }
    }

    @Test func aGetIsOneHeadersFrameAndItsAnswerEndsTheStreamWithoutAReset() throws {
        let peers = try Peers()
        let (_, recorder, _) = try peers.run(Request(url: Self.url, headerFields: [.accept: "*/*"]))
        let sent = try peers.serverReceived()
        #expect(sent.count == 1, "\(sent)")
        let frame = try #require(sent.first)
        #expect(frame.streamID == 1)
        guard case .headers(let headers) = frame.payload else {
            Issue.record("not HEADERS: \(frame.payload)")
            return
        }
        #expect(headers.endStream, "no empty DATA frame after it")
        #expect(headers.headers[":method"] == ["GET"])
        #expect(headers.headers[":path"] == ["/a?b=1"])
        #expect(headers.headers[":authority"] == ["127.0.0.1:8443"])
        #expect(headers.headers["accept-encoding"] == ["deflate, gzip"], "the engine decompresses by default")

        try peers.serverSends(.headers(.init(headers: HPACKHeaders([(":status", "200"), ("content-length", "5")]))))
        #expect(recorder.snapshot.status == 200)
        #expect(recorder.snapshot.networkProtocol == "h2")
        try peers.serverSends(.data(.init(data: .byteBuffer(ByteBuffer(string: "hello")), endStream: true)))
        #expect(recorder.snapshot.body == "hello")
        #expect(recorder.snapshot.completions == 1)
        #expect(recorder.snapshot.error == nil)
        #expect(Self.resets(in: try peers.serverReceived()).isEmpty, "both sides ended: no RST_STREAM")
        // The next stream takes the next odd ID.
        let (_, second, _) = try peers.run(Request(url: Self.url))
        #expect(try peers.serverReceived().first?.streamID == 3)
        // The server answers it too: its exchange ends and lets go of the engine.
        try peers.serverSends(.headers(.init(headers: HPACKHeaders([(":status", "204")]), endStream: true)), on: 3)
        #expect(second.snapshot.completions == 1)
        #expect(second.snapshot.error == nil)
    }

    @Test func aSuspendedExchangeLeavesItsStreamsWindowShutUntilItResumes() throws {
        let peers = try Peers()
        let (exchange, recorder, _) = try peers.run(Request(url: Self.url))
        _ = try peers.serverReceived()
        exchange.suspendReceiving()
        try peers.serverSends(.headers(.init(headers: HPACKHeaders([(":status", "200")]))))
        try peers.serverSends(.data(.init(data: .byteBuffer(ByteBuffer(repeating: UInt8(ascii: "a"), count: 16000)))))
        try peers.serverSends(.data(.init(data: .byteBuffer(ByteBuffer(repeating: UInt8(ascii: "b"), count: 24000)))))
        let whilePaused = try peers.serverReceived()
        #expect(Self.windowUpdates(in: whilePaused, on: 1).isEmpty, "no WINDOW_UPDATE for a stream nobody reads: \(whilePaused)")
        #expect(!Self.windowUpdates(in: whilePaused, on: .rootStream).isEmpty, "the connection's window reopens as data arrives")
        #expect(recorder.snapshot.body.utf8.count == 16000, "delivered, then the exchange asked to wait")

        exchange.resumeReceiving()
        try peers.exchange()
        #expect(recorder.snapshot.body.utf8.count == 40000)
        let afterResume = try peers.serverReceived()
        #expect(Self.windowUpdates(in: afterResume, on: 1) == [40000], "\(afterResume)")
        try peers.serverSends(.data(.init(data: .byteBuffer(ByteBuffer()), endStream: true)))
        #expect(recorder.snapshot.completions == 1)
        #expect(recorder.snapshot.error == nil)
    }

    @Test func aCancelledHopResetsItsStreamAndTheServersLateFramesAreDropped() throws {
        let peers = try Peers()
        let (_, recorder, hop) = try peers.run(Request(url: Self.url))
        _ = try peers.serverReceived()
        try peers.serverSends(.headers(.init(headers: HPACKHeaders([(":status", "200")]))))
        // What the exchange's cancellation does to the hop it runs.
        hop.fail(reason: CourierError.cancelled)
        #expect(recorder.snapshot.completions == 1)
        #expect(recorder.snapshot.error?.code == .cancelled)
        // The server sends more before the reset reaches it: nobody's, and the connection goes on.
        try peers.server.writeAndFlush(HTTP2Frame(streamID: 1, payload: .data(.init(data: .byteBuffer(ByteBuffer(string: "late")))))).wait()
        try peers.exchange()
        #expect(Self.resets(in: try peers.serverReceived()) == [.cancel])
        #expect(recorder.snapshot.body.isEmpty)
        #expect(peers.client.isActive)
    }

    @Test func aServersResetReachesTheHopAsATypedError() throws {
        let peers = try Peers()
        let (_, recorder, _) = try peers.run(Request(method: .post, url: Self.url, body: .data(Data("x".utf8))))
        _ = try peers.serverReceived()
        try peers.serverSends(.rstStream(.internalError))
        #expect(recorder.snapshot.completions == 1)
        #expect(recorder.snapshot.error != nil)
        #expect(Self.resets(in: try peers.serverReceived()).isEmpty, "the server reset it: nothing more to send")
    }

    /// A connection error ends the connection's streams at once, not when its channel goes
    /// inactive: over TLS the close waits for the server's close_notify, and swift-nio-http2 reads
    /// on meanwhile. Here a PUSH_PROMISE (Courier disabled push: a connection error) is followed by
    /// the server's answer to the same stream, which must not make the failed request succeed.
    /// (OkHttp's push test failed seven runs out of ten, run alone, before.)
    @Test func aConnectionErrorEndsTheStreamsBeforeTheChannelCloses() throws {
        let peers = try Peers(holdingCloses: true)
        let (_, recorder, _) = try peers.run(Request(url: Self.url))
        _ = try peers.serverReceived()
        try peers.client.writeInbound(ScriptedHTTP2Server.pushPromise(on: 1, path: "/pushed"))
        #expect(recorder.snapshot.completions == 1, "the stream failed with the connection")
        #expect(recorder.snapshot.error != nil)
        #expect(peers.closeHolder?.isHolding == true, "the close is under way, the channel still reads")
        try peers.serverSends(.headers(.init(headers: HPACKHeaders([(":status", "200"), ("content-length", "5")]))))
        try peers.serverSends(.data(.init(data: .byteBuffer(ByteBuffer(string: "hello")), endStream: true)))
        #expect(recorder.snapshot.status == nil, "no head reached the failed stream")
        #expect(recorder.snapshot.body == "")
        #expect(recorder.snapshot.completions == 1)
        peers.closeHolder?.release()
        #expect(!peers.client.isActive)
    }

    @Test func aCompressedBodyIsDecompressedInTheStream() throws {
        let peers = try Peers()
        let (_, recorder, _) = try peers.run(Request(url: Self.url))
        _ = try peers.serverReceived()
        let compressed = try Deflater.compress(Data(String(repeating: "courier ", count: 100).utf8), algorithm: .gzip)
        try peers.serverSends(.headers(.init(headers: HPACKHeaders([(":status", "200"), ("content-encoding", "gzip")]))))
        try peers.serverSends(.data(.init(data: .byteBuffer(ByteBuffer(bytes: compressed)), endStream: true)))
        #expect(recorder.snapshot.body == String(repeating: "courier ", count: 100))
        #expect(recorder.snapshot.completions == 1)
        #expect(recorder.snapshot.error == nil)
    }

    @Test func aTruncatedCompressedBodyFailsTheHop() throws {
        let peers = try Peers()
        let (_, recorder, _) = try peers.run(Request(url: Self.url))
        _ = try peers.serverReceived()
        let compressed = try Deflater.compress(Data(String(repeating: "courier ", count: 100).utf8), algorithm: .gzip)
        try peers.serverSends(.headers(.init(headers: HPACKHeaders([(":status", "200"), ("content-encoding", "gzip")]))))
        try peers.serverSends(.data(.init(data: .byteBuffer(ByteBuffer(bytes: compressed.prefix(10))), endStream: true)))
        #expect(recorder.snapshot.completions == 1)
        #expect(recorder.snapshot.error != nil)
    }
}
