@testable import Courier
import Foundation
import NIOCore
import NIOEmbedded
import NIOHTTP2
import Testing

/// ``HTTP2ConnectionHandler`` behind swift-nio-http2's client handler, talking to swift-nio-http2's
/// server handler through two `EmbeddedChannel`s (the bytes carried across by hand, time the
/// client loop's): what the handler relies on from swift-nio-http2 — its PING goes out, the
/// server's answer, SETTINGS and GOAWAY come back to it, a malformed frame reaches it as an error.
@Suite("HTTP/2 connection handler behind swift-nio-http2")
struct HTTP2ConnectionWireTests {
    typealias RecordingDelegate = HTTP2ConnectionHandlerTests.RecordingDelegate

    struct Peers {
        let clientLoop = EmbeddedEventLoop()
        let client: EmbeddedChannel
        let server = EmbeddedChannel()
        let handler: HTTP2ConnectionHandler
        let delegate = RecordingDelegate()
        let sentFrames = HTTP2SentFramesWatcher()

        /// Connected, prefaces and SETTINGS exchanged, the handler attached and told it is idle.
        init(idle: Int64 = 60, ping: Int64 = 30, pingTimeout: Int64 = 10, serverMaximumStreams: Int = 42) throws {
            self.handler = HTTP2ConnectionHandler(
                configuration: .init(idleTimeout: .seconds(idle), pingInterval: .seconds(ping), pingTimeout: .seconds(pingTimeout)),
                sentFrames: self.sentFrames)
            self.client = EmbeddedChannel(loop: self.clientLoop)
            try self.client.pipeline.syncOperations.addHandler(self.sentFrames)
            try self.client.pipeline.syncOperations.addHandler(NIOHTTP2Handler(mode: .client))
            try self.client.pipeline.syncOperations.addHandler(self.handler)
            try self.server.pipeline.syncOperations.addHandler(
                NIOHTTP2Handler(mode: .server, initialSettings: [HTTP2Setting(parameter: .maxConcurrentStreams, value: serverMaximumStreams)]))
            let address = try SocketAddress(ipAddress: "127.0.0.1", port: 443)
            try self.server.connect(to: address).wait()
            try self.client.connect(to: address).wait()
            try self.exchange()
            self.handler.attach(self.delegate)
            self.handler.becameIdle()
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

        /// The frames of the connection the server received since last asked.
        func serverReceived() throws -> [HTTP2Frame.FramePayload] {
            var frames: [HTTP2Frame.FramePayload] = []
            while let frame = try self.server.readInbound(as: HTTP2Frame.self) { frames.append(frame.payload) }
            return frames
        }

        func serverSends(_ payload: HTTP2Frame.FramePayload) throws {
            try self.server.writeAndFlush(HTTP2Frame(streamID: .rootStream, payload: payload)).wait()
            try self.exchange()
        }
    }

    static func pings(in frames: [HTTP2Frame.FramePayload]) -> Int {
        frames.filter { if case .ping(_, ack: false) = $0 { true } else { false } }.count
    }

    @Test func theServersSettingsReachThePoolOnAttachment() throws {
        let peers = try Peers(serverMaximumStreams: 42)
        #expect(peers.delegate.settings == [42])
        _ = try peers.client.finish(acceptAlreadyClosed: true)
    }

    @Test func aPingGoesOutAndTheServersAnswerKeepsTheConnection() throws {
        let peers = try Peers()
        _ = try peers.serverReceived()
        peers.clientLoop.advanceTime(by: .seconds(30))
        try peers.exchange()
        // swift-nio-http2 on the server answered it; the answer came back through the exchange.
        #expect(Self.pings(in: try peers.serverReceived()) == 1)
        peers.clientLoop.advanceTime(by: .seconds(15))
        #expect(peers.client.isActive)
        #expect(peers.delegate.closeReasons.isEmpty)
        _ = try peers.client.finish(acceptAlreadyClosed: true)
    }

    @Test func aPingTheServerNeverSeesClosesTheConnection() throws {
        let peers = try Peers()
        peers.clientLoop.advanceTime(by: .seconds(30))
        // The PING is written but never carried across: a server that is gone.
        #expect(try peers.client.readOutbound(as: ByteBuffer.self) != nil)
        peers.clientLoop.advanceTime(by: .seconds(10))
        #expect(!peers.client.isActive)
        #expect(peers.delegate.closeReasons == [.pingTimeout])
    }

    @Test func aGoAwayReachesThePoolWithItsLastStream() throws {
        let peers = try Peers()
        try peers.serverSends(.goAway(lastStreamID: .rootStream, errorCode: .noError, opaqueData: nil))
        #expect(peers.delegate.goingAway == [.rootStream])
        // Draining: no PING, no idle close of its own.
        peers.clientLoop.advanceTime(by: .seconds(120))
        #expect(peers.client.isActive)
        _ = try peers.client.finish(acceptAlreadyClosed: true)
    }

    @Test func aMalformedFrameIsAConnectionErrorThatClosesTheConnection() throws {
        let peers = try Peers()
        // A SETTINGS frame five bytes long (a multiple of six is required: FRAME_SIZE_ERROR).
        try peers.client.writeInbound(ByteBuffer(bytes: [0, 0, 5, 0x4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]))
        #expect(!peers.client.isActive)
        #expect(peers.delegate.closeReasons == [.connectionError])
        #expect(peers.delegate.errors.count == 1)
        #expect(peers.delegate.errors.first is any NIOHTTP2Error, "\(peers.delegate.errors)")
    }

    /// A frame for a stream swift-nio-http2's multiplexer has no channel for is reported and
    /// dropped (swift-nio-http2 sends nothing): the connection goes on. Before, any error that
    /// reached the handler closed it.
    @Test func anErrorSwiftNIOHTTP2ReportsAndDropsKeepsTheConnection() throws {
        let peers = try Peers()
        peers.client.pipeline.fireErrorCaught(NIOHTTP2Errors.noSuchStream(streamID: 7))
        #expect(peers.client.isActive)
        #expect(peers.delegate.closeReasons.isEmpty)
        #expect(peers.delegate.errors.isEmpty)
        #expect(!peers.sentFrames.sent.sentGoAway)
        _ = try peers.client.finish(acceptAlreadyClosed: true)
    }

    /// A frame on a stream that was never opened is a connection error: swift-nio-http2 sends
    /// GOAWAY, and the same error type now ends the connection.
    @Test func aFrameOnAStreamNeverOpenedEndsTheConnection() throws {
        let peers = try Peers()
        // WINDOW_UPDATE on stream 9, which the client never opened (idle).
        try peers.client.writeInbound(ByteBuffer(bytes: HTTP2SentFramesTests.frame(type: 0x8, stream: 9, payload: [0, 0, 0, 1])))
        #expect(peers.sentFrames.sent.sentGoAway)
        #expect(!peers.client.isActive)
        #expect(peers.delegate.closeReasons == [.connectionError])
    }
}
