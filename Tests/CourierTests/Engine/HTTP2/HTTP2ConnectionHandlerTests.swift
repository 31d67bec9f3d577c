@testable import Courier
import Foundation
import NIOCore
import NIOEmbedded
import NIOHTTP2
import Testing

/// ``HTTP2ConnectionHandler`` on an `EmbeddedChannel`: the connection's frames go in, PINGs come
/// out, time is the embedded loop's (`advanceTime(by:)`), and the pool is a recording delegate.
@Suite("HTTP/2 connection handler on an EmbeddedChannel")
struct HTTP2ConnectionHandlerTests {
    /// Records what the handler tells its owner; answers the idle-timeout question as told.
    final class RecordingDelegate: HTTP2ConnectionDelegate {
        var settings: [Int?] = []
        var goingAway: [HTTP2StreamID] = []
        var lowered: [HTTP2StreamID] = []
        var idleTimeouts = 0
        var closeReasons: [HTTP2ConnectionStateMachine.CloseReason] = []
        var errors: [any Error] = []
        var allowsIdleClose = true

        func http2ReceivedSettings(maximumStreams: Int?) { self.settings.append(maximumStreams) }
        func http2GoingAway(lastStreamID: HTTP2StreamID) { self.goingAway.append(lastStreamID) }
        func http2LastStreamIDLowered(to lastStreamID: HTTP2StreamID) { self.lowered.append(lastStreamID) }
        func http2IdleTimeoutReached() -> Bool {
            self.idleTimeouts += 1
            return self.allowsIdleClose
        }
        func http2ConnectionFailed(_ error: any Error) { self.errors.append(error) }
        func http2WillClose(_ reason: HTTP2ConnectionStateMachine.CloseReason) { self.closeReasons.append(reason) }
        var unusable = 0
        func http2ConnectionUnusable() { self.unusable += 1 }
    }

    struct Setup {
        let channel: EmbeddedChannel
        let loop: EmbeddedEventLoop
        let handler: HTTP2ConnectionHandler
        let delegate = RecordingDelegate()

        /// A connected channel with the handler; idle 60 s, PING after 30 s, answer within 10 s;
        /// the server's SETTINGS awaited a day (most tests send none).
        init(idle: Int64 = 60, ping: Int64 = 30, pingTimeout: Int64 = 10, settingsTimeout: Int64 = 86_400) throws {
            self.loop = EmbeddedEventLoop()
            self.handler = HTTP2ConnectionHandler(
                configuration: .init(
                    idleTimeout: .seconds(idle), pingInterval: .seconds(ping), pingTimeout: .seconds(pingTimeout),
                    settingsTimeout: .seconds(settingsTimeout)))
            self.channel = EmbeddedChannel(handler: self.handler, loop: self.loop)
            try self.channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).wait()
        }

        func receive(_ payload: HTTP2Frame.FramePayload) throws {
            try self.channel.writeInbound(HTTP2Frame(streamID: .rootStream, payload: payload))
        }

        /// The frames the handler wrote since last asked.
        func written() throws -> [HTTP2Frame.FramePayload] {
            var frames: [HTTP2Frame.FramePayload] = []
            while let frame = try self.channel.readOutbound(as: HTTP2Frame.self) {
                #expect(frame.streamID == .rootStream)
                frames.append(frame.payload)
            }
            return frames
        }

        /// The one PING written since last asked, if it was one.
        func sentPing() throws -> HTTP2PingData? {
            let frames = try self.written()
            guard frames.count == 1, case .ping(let data, ack: false) = frames[0] else { return nil }
            return data
        }
    }

    @Test func framesBeforeAttachmentReachTheOwnerOnAttachment() throws {
        let setup = try Setup()
        try setup.receive(.settings(.settings([HTTP2Setting(parameter: .maxConcurrentStreams, value: 7)])))
        #expect(setup.delegate.settings.isEmpty)
        setup.handler.attach(setup.delegate)
        #expect(setup.delegate.settings == [7])
        try setup.receive(.settings(.settings([])))
        #expect(setup.delegate.settings == [7, nil])
        _ = try setup.channel.finish()
    }

    /// A server that sends no SETTINGS is closed once the settings timeout has passed since the
    /// pool counted the connection; one that sends them is kept.
    @Test func aServerThatSendsNoSettingsIsClosed() throws {
        let silent = try Setup(settingsTimeout: 5)
        silent.handler.attach(silent.delegate)
        silent.loop.advanceTime(by: .seconds(4))
        #expect(silent.channel.isActive)
        silent.loop.advanceTime(by: .seconds(1))
        #expect(!silent.channel.isActive)
        #expect(silent.delegate.closeReasons == [.noSettings])

        let answering = try Setup(settingsTimeout: 5)
        answering.handler.attach(answering.delegate)
        try answering.receive(.settings(.settings([])))
        answering.loop.advanceTime(by: .seconds(5))
        #expect(answering.channel.isActive)
        _ = try answering.channel.finish()
    }

    @Test func goAwayDrainsThenLowers() throws {
        let setup = try Setup()
        setup.handler.attach(setup.delegate)
        try setup.receive(.goAway(lastStreamID: .maxID, errorCode: .noError, opaqueData: nil))
        try setup.receive(.goAway(lastStreamID: 5, errorCode: .noError, opaqueData: nil))
        #expect(setup.delegate.goingAway == [.maxID])
        #expect(setup.delegate.lowered == [5])
        #expect(setup.channel.isActive, "the pool closes a draining connection once its streams end")
        _ = try setup.channel.finish()
    }

    @Test func anIdleConnectionSendsAPingAndAnAnswerKeepsIt() throws {
        let setup = try Setup()
        setup.handler.attach(setup.delegate)
        setup.handler.becameIdle()
        setup.loop.advanceTime(by: .seconds(29))
        #expect(try setup.written().isEmpty)
        setup.loop.advanceTime(by: .seconds(1))
        let ping = try #require(try setup.sentPing(), "a PING after 30 s idle")
        try setup.receive(.ping(ping, ack: true))
        // Past the answer's deadline: still open.
        setup.loop.advanceTime(by: .seconds(20))
        #expect(setup.channel.isActive)
        #expect(setup.delegate.closeReasons.isEmpty)
        // The idle timeout still closes it, with the pool's consent.
        setup.loop.advanceTime(by: .seconds(10))
        #expect(setup.delegate.idleTimeouts == 1)
        #expect(!setup.channel.isActive)
        #expect(try setup.written().isEmpty, "no second PING: the idle timeout came first")
    }

    @Test func anAnswerBringsTheNextPingForward() throws {
        let setup = try Setup(ping: 5, pingTimeout: 10)
        setup.handler.attach(setup.delegate)
        setup.handler.becameIdle()
        for round in 1...3 {
            setup.loop.advanceTime(by: .seconds(5))
            let ping = try #require(try setup.sentPing(), "PING \(round)")
            try setup.receive(.ping(ping, ack: true))
        }
        #expect(setup.channel.isActive)
        _ = try setup.channel.finish()
    }

    @Test func aPingWithoutAnswerClosesTheConnection() throws {
        let setup = try Setup()
        setup.handler.attach(setup.delegate)
        setup.handler.becameIdle()
        setup.loop.advanceTime(by: .seconds(30))
        #expect(try setup.sentPing() != nil)
        setup.loop.advanceTime(by: .seconds(9))
        #expect(setup.channel.isActive)
        setup.loop.advanceTime(by: .seconds(1))
        #expect(!setup.channel.isActive)
        #expect(setup.delegate.closeReasons == [.pingTimeout])
        #expect(setup.delegate.idleTimeouts == 0, "closed whatever the pool's count: the connection is dead")
    }

    @Test func aBusyConnectionIsNotPinged() throws {
        let setup = try Setup()
        setup.handler.attach(setup.delegate)
        setup.handler.becameIdle()
        setup.loop.advanceTime(by: .seconds(10))
        setup.handler.becameBusy()
        setup.loop.advanceTime(by: .seconds(100))
        #expect(try setup.written().isEmpty)
        #expect(setup.channel.isActive)
        // Idle again: the clock starts over.
        setup.handler.becameIdle()
        setup.loop.advanceTime(by: .seconds(30))
        #expect(try setup.sentPing() != nil)
        _ = try setup.channel.finish()
    }

    @Test func thePoolMayKeepAConnectionItJustLeased() throws {
        let setup = try Setup(ping: 600)
        setup.handler.attach(setup.delegate)
        setup.delegate.allowsIdleClose = false
        setup.handler.becameIdle()
        setup.loop.advanceTime(by: .seconds(60))
        #expect(setup.delegate.idleTimeouts == 1)
        #expect(setup.channel.isActive)
        _ = try setup.channel.finish()
    }

    @Test func aConnectionErrorClosesTheConnection() throws {
        let setup = try Setup()
        setup.handler.attach(setup.delegate)
        setup.channel.pipeline.fireErrorCaught(NIOHTTP2Errors.unableToParseFrame())
        #expect(!setup.channel.isActive)
        #expect(setup.delegate.closeReasons == [.connectionError])
        #expect(setup.delegate.errors.count == 1 && setup.delegate.errors.first is NIOHTTP2Errors.UnableToParseFrame)
    }

    @Test func aClosedConnectionSchedulesNothing() throws {
        let setup = try Setup()
        setup.handler.attach(setup.delegate)
        setup.handler.becameIdle()
        try setup.channel.close().wait()
        // The pool hears at once that the connection takes no new stream.
        #expect(setup.delegate.unusable == 1)
        setup.loop.advanceTime(by: .seconds(120))
        #expect(setup.delegate.idleTimeouts == 0)
        #expect(setup.delegate.closeReasons.isEmpty)
    }
}
