@testable import Courier
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import NIOSSL
import NIOWebSocket
import Testing

/// ``WebSocketChannelHandler`` on an `EmbeddedChannel` with swift-nio's frame codec: bytes in,
/// bytes out, no sockets.
@Suite("WebSocket channel handler")
struct WebSocketChannelHandlerTests {
    final class Recorder: WebSocketChannelHandlerDelegate, Sendable {
        /// A consumer that never reads: every message received waits unread.
        let state = NIOLockedValueBox<(messages: [WebSocketMessage], endings: [WebSocketConnectionStateMachine.Ending])>(([], []))
        func webSocketDidReceive(_ message: WebSocketMessage) -> Int {
            self.state.withLockedValue {
                $0.messages.append(message)
                return $0.messages.reduce(0) { $0 + $1.byteCount }
            }
        }
        /// What each `webSocketPingsAnswered` reported: the user's PINGs a PONG answered.
        let answered = NIOLockedValueBox<[[String]]>([])
        func webSocketPingsAnswered(_ payloads: [ByteBuffer]) {
            self.answered.withLockedValue { $0.append(payloads.map { String(buffer: $0) }) }
        }
        func webSocketDidFinish(_ ending: WebSocketConnectionStateMachine.Ending) {
            self.state.withLockedValue { $0.endings.append(ending) }
        }
    }

    /// Counts the reads that reach the head of the pipeline.
    final class ReadCounter: ChannelOutboundHandler {
        typealias OutboundIn = Any
        var reads = 0
        func read(context: ChannelHandlerContext) {
            self.reads += 1
            context.read()
        }
    }

    private func makeChannel(
        _ recorder: Recorder, maximum: Int = 1000, buffered: Int = .max, fragmentSize: Int = WebSocketChannelHandler.fragmentSize,
        pingInterval: TimeAmount? = nil, closeTimeout: TimeAmount = .seconds(5)
    ) throws -> (EmbeddedChannel, ReadCounter) {
        let channel = EmbeddedChannel()
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        let counter = ReadCounter()
        let sync = channel.pipeline.syncOperations
        try sync.addHandler(counter)
        try sync.addHandler(ByteToMessageHandler(WebSocketFrameDecoder(maxFrameSize: maximum)))
        try sync.addHandler(WebSocketFrameEncoder())
        let timing = WebSocketChannelHandler.Timing(pingInterval: pingInterval, closeTimeout: closeTimeout)
        try sync.addHandler(
            WebSocketChannelHandler(
                maximumMessageSize: maximum, maximumBufferedBytes: buffered, timing: timing, fragmentSize: fragmentSize,
                fragmentsAhead: fragmentSize, delegate: recorder))
        return (channel, counter)
    }

    /// A channel whose handler sends a keep-alive PING every ``interval`` of the embedded loop's
    /// clock, with its recorder and its handler (for `sendPing`).
    private func makeKeepAliveChannel() throws -> (Recorder, EmbeddedChannel, WebSocketChannelHandler) {
        let recorder = Recorder()
        let (channel, _) = try self.makeChannel(recorder, pingInterval: Self.interval)
        return (recorder, channel, try channel.pipeline.syncOperations.handler(type: WebSocketChannelHandler.self))
    }

    private func serverFrame(_ opcode: WebSocketOpcode, fin: Bool = true, _ bytes: [UInt8]) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.writeInteger(UInt8(fin ? 0x80 : 0) | UInt8(webSocketOpcode: opcode))
        buffer.writeInteger(UInt8(bytes.count))
        buffer.writeBytes(bytes)
        return buffer
    }

    /// The frames written, decoded (checked masked first).
    private func written(_ channel: EmbeddedChannel) throws -> [(WebSocketOpcode, [UInt8])] {
        var fins: [Bool] = []
        return try self.written(channel, fins: &fins)
    }

    /// The frames written, decoded, and whether each had FIN set.
    private func written(_ channel: EmbeddedChannel, fins: inout [Bool]) throws -> [(WebSocketOpcode, [UInt8])] {
        var frames: [(WebSocketOpcode, [UInt8])] = []
        var all = ByteBuffer()
        while var part = try channel.readOutbound(as: ByteBuffer.self) { all.writeBuffer(&part) }
        while all.readableBytes > 0 {
            let first = all.readInteger(as: UInt8.self)!
            let second = all.readInteger(as: UInt8.self)!
            #expect(second & 0x80 != 0, "client frames are masked")
            var length = Int(second & 0x7F)
            if length == 126 { length = Int(all.readInteger(as: UInt16.self)!) }
            let key = all.readBytes(length: 4)!
            let payload = all.readBytes(length: length)!.enumerated().map { $0.element ^ key[$0.offset % 4] }
            frames.append((WebSocketOpcode(encodedWebSocketOpcode: first & 0x0F)!, payload))
            fins.append(first & 0x80 != 0)
        }
        return frames
    }

    @Test func sendsMaskedFramesAndAnswersPingsBetweenFragments() throws {
        let recorder = Recorder()
        let (channel, _) = try self.makeChannel(recorder)
        let handler = try channel.pipeline.syncOperations.handler(type: WebSocketChannelHandler.self)
        handler.send(.text("hi"), promise: nil)
        var written = try self.written(channel)
        #expect(written.count == 1)
        #expect(written.first?.0 == .text)
        #expect(written.first?.1 == Array("hi".utf8))
        try channel.writeInbound(self.serverFrame(.text, fin: false, Array("ab".utf8)))
        try channel.writeInbound(self.serverFrame(.ping, Array("p".utf8)))
        try channel.writeInbound(self.serverFrame(.continuation, Array("cd".utf8)))
        #expect(recorder.state.withLockedValue { $0.messages } == [.text("abcd")])
        written = try self.written(channel)
        #expect(written.map(\.0) == [.pong])
        #expect(written.first?.1 == Array("p".utf8))
        // The server closes: Courier answers with its code and closes.
        var close = [UInt8]()
        close.append(0x03)
        close.append(0xE8)
        try channel.writeInbound(self.serverFrame(.connectionClose, close))
        written = try self.written(channel)
        #expect(written.map(\.0) == [.connectionClose])
        #expect(written.first?.1 == close)
        #expect(recorder.state.withLockedValue { $0.endings } == [.closed(.normalClosure, "")])
        #expect(!channel.isActive)
    }

    @Test func readsGoOnWhileTheConsumerIsBehindAndPingsAreAnswered() throws {
        let recorder = Recorder()
        let (channel, counter) = try self.makeChannel(recorder, maximum: 10, buffered: 30)
        for index in 0..<3 {
            try channel.writeInbound(self.serverFrame(.binary, Array(repeating: UInt8(index), count: 10)))
            channel.read()
        }
        #expect(counter.reads == 3, "no read is held back")
        // 30 bytes wait unread, the bound: a PING between is answered all the same.
        try channel.writeInbound(self.serverFrame(.ping, Array("k".utf8)))
        #expect(try self.written(channel).map(\.0) == [.pong])
        #expect(recorder.state.withLockedValue { $0.endings }.isEmpty)
        // One byte more is over the bound: 1008, once.
        try channel.writeInbound(self.serverFrame(.binary, [9]))
        let written = try self.written(channel)
        #expect(written.map(\.0) == [.connectionClose])
        #expect(written.first?.1.prefix(2) == [0x03, 0xF0])
        #expect(recorder.state.withLockedValue { $0.endings } == [.consumerFellBehind(unreadBytes: 31)])
        #expect(recorder.state.withLockedValue { $0.messages.count } == 4)
        _ = try? channel.finish()
    }

    @Test func anOversizedFrameFromTheDecoderIs1009AndTheTaskEndsOnce() throws {
        let recorder = Recorder()
        let (channel, _) = try self.makeChannel(recorder, maximum: 10)
        _ = try? channel.writeInbound(self.serverFrame(.binary, Array(repeating: 0, count: 11)))
        let written = try self.written(channel)
        #expect(written.map(\.0) == [.connectionClose])
        #expect(written.first?.1.prefix(2) == [0x03, 0xF1])
        channel.pipeline.fireChannelInactive()
        let endings = recorder.state.withLockedValue { $0.endings }
        #expect(endings.count == 1)
        guard case .protocolViolation(.messageTooBig, _) = endings.first else {
            Issue.record("\(endings)")
            return
        }
    }

    /// An error from below the frame decoder (TLS failing after the handshake) is the transport's:
    /// no close frame goes into the broken connection, it closes, and the task ends once with the
    /// error, as a close with no closing handshake. (It was read as the server breaking WebSocket's
    /// rules: a 1002 close frame written, the task's error "invalid response".)
    @Test func aTransportErrorEndsWithoutACloseFrame() throws {
        let recorder = Recorder()
        let (channel, _) = try self.makeChannel(recorder)
        channel.pipeline.fireErrorCaught(NIOSSLError.readInInvalidTLSState)
        #expect(try self.written(channel).isEmpty)
        #expect(!channel.isActive)
        channel.pipeline.fireChannelInactive()
        let endings = recorder.state.withLockedValue { $0.endings }
        #expect(endings.count == 1)
        guard case .connectionFailed(let description) = endings.first else {
            Issue.record("\(endings)")
            return
        }
        #expect(description.contains("readInInvalidTLSState"))
    }

    /// A message larger than a fragment goes out in fragments as the connection takes them; a
    /// PING sent meanwhile goes between two of them (it waited behind the whole message, and a
    /// keep-alive PING behind a long upload timed the connection out), and the user's close goes
    /// after the message. The message's write completes with its last fragment.
    @Test func aLargeMessageGoesInFragmentsWithControlFramesBetween() throws {
        let recorder = Recorder()
        let (channel, _) = try self.makeChannel(recorder, fragmentSize: 100)
        let handler = try channel.pipeline.syncOperations.handler(type: WebSocketChannelHandler.self)
        let message = (0..<250).map { UInt8($0 % 251) }
        channel.isWritable = false
        let sent = channel.eventLoop.makePromise(of: Void.self)
        let done = NIOLockedValueBox(false)
        sent.futureResult.whenSuccess { done.withLockedValue { $0 = true } }
        handler.send(.binary(Data(message)), promise: sent)
        handler.sendPing(ByteBuffer(string: "p"), promise: nil)
        handler.close(code: .normalClosure, reason: "")
        #expect(!done.withLockedValue { $0 })
        var fins: [Bool] = []
        var frames = try self.written(channel, fins: &fins)
        #expect(frames.map(\.0) == [.binary, .ping], "one fragment while the connection is full, then the PING")
        // A fragment (or the close) each time the channel has room again.
        channel.isWritable = true
        for _ in 0..<3 {
            channel.pipeline.fireChannelWritabilityChanged()
            frames += try self.written(channel, fins: &fins)
        }
        #expect(frames.map(\.0) == [.binary, .ping, .continuation, .continuation, .connectionClose])
        #expect(fins == [false, true, false, true, true])
        #expect(frames.filter { $0.0 != .ping && $0.0 != .connectionClose }.flatMap(\.1) == message)
        #expect(done.withLockedValue { $0 })
        _ = try? channel.finish()
    }

    /// A close that is not the user's (cancel, a violation, the reply to the server's close) goes
    /// at once: the rest of a message in fragments never goes, and its write fails.
    @Test func aCancelDropsTheRestOfAFragmentedMessage() throws {
        let recorder = Recorder()
        let (channel, _) = try self.makeChannel(recorder, fragmentSize: 100)
        let handler = try channel.pipeline.syncOperations.handler(type: WebSocketChannelHandler.self)
        channel.isWritable = false
        let sent = channel.eventLoop.makePromise(of: Void.self)
        let failed = NIOLockedValueBox(false)
        sent.futureResult.whenFailure { _ in failed.withLockedValue { $0 = true } }
        handler.send(.binary(Data(repeating: 1, count: 300)), promise: sent)
        handler.cancel()
        #expect(failed.withLockedValue { $0 })
        let frames = try self.written(channel)
        #expect(frames.map(\.0) == [.binary, .connectionClose])
        #expect(recorder.state.withLockedValue { $0.endings } == [.cancelled])
        _ = try? channel.finish()
    }

    /// The user's close waits behind a message in fragments; when the server's close frame comes
    /// first, the rest of the message never goes and the close frame goes at once (it waited behind
    /// the message, up to the close timeout).
    @Test func theServersCloseSendsAQueuedCloseAtOnce() throws {
        let recorder = Recorder()
        let (channel, _) = try self.makeChannel(recorder, fragmentSize: 100)
        let handler = try channel.pipeline.syncOperations.handler(type: WebSocketChannelHandler.self)
        channel.isWritable = false
        let sent = channel.eventLoop.makePromise(of: Void.self)
        let failed = NIOLockedValueBox(false)
        sent.futureResult.whenFailure { _ in failed.withLockedValue { $0 = true } }
        handler.send(.binary(Data(repeating: 1, count: 300)), promise: sent)
        handler.close(code: .normalClosure, reason: "bye")
        #expect(try self.written(channel).map(\.0) == [.binary])
        _ = try? channel.writeInbound(self.serverFrame(.connectionClose, [0x03, 0xE8]))
        let frames = try self.written(channel)
        #expect(frames.map(\.0) == [.connectionClose])
        #expect(frames.first?.1 == [0x03, 0xE8] + Array("bye".utf8))
        #expect(failed.withLockedValue { $0 })
        #expect(recorder.state.withLockedValue { $0.endings } == [.closed(.normalClosure, "")])
        _ = try? channel.finish()
    }

    /// A channel whose connection is full, a 300-byte message in 100-byte fragments on its way,
    /// then `close()`: the close frame queued behind the message.
    private func closingBehindAMessage() throws -> (Recorder, EmbeddedChannel, TimeAmount) {
        let recorder = Recorder()
        let closeTimeout = TimeAmount.seconds(10)
        let (channel, _) = try self.makeChannel(recorder, fragmentSize: 100, closeTimeout: closeTimeout)
        let handler = try channel.pipeline.syncOperations.handler(type: WebSocketChannelHandler.self)
        channel.isWritable = false
        handler.send(.binary(Data(repeating: 1, count: 300)), promise: nil)
        handler.close(code: .normalClosure, reason: "")
        return (recorder, channel, closeTimeout)
    }

    /// The wait for the server's close frame starts when Courier's goes out, not at `close()`:
    /// behind a message still going out the close frame waits for it, as long as the connection
    /// takes some of it within the close timeout, and the close timeout counts from the frame's
    /// write. (It counted from `close()`: a slow upload timed out, "the server did not answer the
    /// close frame", a close the server had not been sent.)
    @Test func theCloseTimeoutCountsFromTheCloseFramesWrite() throws {
        let (recorder, channel, closeTimeout) = try self.closingBehindAMessage()
        #expect(try self.written(channel).map(\.0) == [.binary], "one fragment while the connection is full")
        // Almost the close timeout with the connection full: the close frame has not gone, and
        // nothing times out.
        self.advance(channel, by: closeTimeout - .nanoseconds(1))
        #expect(try self.written(channel).isEmpty)
        #expect(recorder.state.withLockedValue { $0.endings }.isEmpty)
        // Room again, a fragment at a time, each almost the close timeout after the last: the
        // message moves, so the wait goes on. Then the close frame.
        channel.isWritable = true
        var frames: [(WebSocketOpcode, [UInt8])] = []
        for _ in 0..<3 {
            channel.pipeline.fireChannelWritabilityChanged()
            frames += try self.written(channel)
            if frames.last?.0 != .connectionClose {
                self.advance(channel, by: closeTimeout - .nanoseconds(1))
                #expect(recorder.state.withLockedValue { $0.endings }.isEmpty)
            }
        }
        #expect(frames.map(\.0) == [.continuation, .continuation, .connectionClose])
        // The close timeout from there.
        self.advance(channel, by: closeTimeout - .nanoseconds(1))
        #expect(recorder.state.withLockedValue { $0.endings }.isEmpty)
        self.advance(channel, by: .nanoseconds(1))
        #expect(recorder.state.withLockedValue { $0.endings } == [.closeTimedOut])
        _ = try? channel.finish()
    }

    /// A close frame queued behind a message the server reads none of for the close timeout
    /// (it stopped reading) ends the task: the wait would otherwise have no end.
    @Test func aCloseBehindAMessageTheServerDoesNotReadEnds() throws {
        let (recorder, channel, closeTimeout) = try self.closingBehindAMessage()
        #expect(try self.written(channel).map(\.0) == [.binary])
        self.advance(channel, by: closeTimeout - .nanoseconds(1))
        #expect(recorder.state.withLockedValue { $0.endings }.isEmpty)
        self.advance(channel, by: .nanoseconds(1))
        #expect(recorder.state.withLockedValue { $0.endings } == [.closeStalled])
        _ = try? channel.finish()
    }

    // MARK: Keep-alive

    /// A configuration's interval of zero or less sends no PING, as OkHttp's 0 (it was taken as
    /// 1 ms, and the connection ended at once); NaN is the default.
    @Test func aPingIntervalOfZeroOrLessSendsNone() {
        var configuration = WebSocketConfiguration()
        for none in [0, -1, nil] as [TimeInterval?] {
            configuration.pingInterval = none
            #expect(WebSocketChannelHandler.Timing(configuration).pingInterval == nil, "\(String(describing: none))")
        }
        configuration.pingInterval = 2.5
        #expect(WebSocketChannelHandler.Timing(configuration).pingInterval == .milliseconds(2500))
        configuration.pingInterval = .nan
        #expect(WebSocketChannelHandler.Timing(configuration).pingInterval == .seconds(30))
    }

    /// The keep-alive's interval in the tests below. The `EmbeddedEventLoop`'s clock moves only
    /// when a test advances it, so where a tick lands among the user's PINGs and the server's
    /// PONGs is the test's choice, not the machine's load: over sockets it is not, and tests that
    /// needed a PONG back before the next tick failed on a loaded machine.
    private static let interval = TimeAmount.seconds(10)

    /// Moves the loop's clock on by `amount`, running the timers due meanwhile.
    private func advance(_ channel: EmbeddedChannel, by amount: TimeAmount) {
        channel.embeddedEventLoop.advanceTime(by: amount)
    }

    /// The payloads of the frames written since last time, which must all be PINGs, in order.
    private func pings(_ channel: EmbeddedChannel, sourceLocation: SourceLocation = #_sourceLocation) throws -> [[UInt8]] {
        let frames = try self.written(channel)
        #expect(frames.allSatisfy { $0.0 == .ping }, "\(frames.map(\.0))", sourceLocation: sourceLocation)
        return frames.map(\.1)
    }

    /// The keep-alive's PINGs and the user's go out as one sequence, in the order they were sent,
    /// and a PONG answers its own PING and every one before it, whoever sent them, and none after
    /// it: a server may answer only the latest of several PINGs (RFC 6455 5.5.3). The user's PINGs
    /// it answered are reported in the order they went out.
    @Test func theKeepAlivesPingsAndTheUsersAreOneSequenceAndAPongAnswersThoseUpToIt() throws {
        let (recorder, channel, handler) = try self.makeKeepAliveChannel()
        handler.sendPing(ByteBuffer(string: "u1"), promise: nil)
        self.advance(channel, by: Self.interval)
        handler.sendPing(ByteBuffer(string: "u2"), promise: nil)
        handler.sendPing(ByteBuffer(string: "u3"), promise: nil)
        let sent = try self.pings(channel)
        try #require(sent.count == 4)
        let keepAlive = sent[1]
        #expect(sent == [Array("u1".utf8), keepAlive, Array("u2".utf8), Array("u3".utf8)])
        // u2's PONG answers u1 and u2 (and the keep-alive's PING between them), not u3.
        try channel.writeInbound(self.serverFrame(.pong, Array("u2".utf8)))
        #expect(recorder.answered.withLockedValue { $0 } == [["u1", "u2"]])
        // The PONG of a PING answered already answers nothing more. (None comes for the
        // keep-alive's PING: u2's PONG must answer it, for the tick below to go on.)
        try channel.writeInbound(self.serverFrame(.pong, Array("u1".utf8)))
        #expect(recorder.answered.withLockedValue { $0 } == [["u1", "u2"]])
        try channel.writeInbound(self.serverFrame(.pong, Array("u3".utf8)))
        #expect(recorder.answered.withLockedValue { $0 } == [["u1", "u2"], ["u3"]])
        // u2's PONG answered the keep-alive's PING: the next tick sends another, it does not give up.
        self.advance(channel, by: Self.interval)
        #expect(try self.pings(channel).count == 1)
        #expect(recorder.state.withLockedValue { $0.endings }.isEmpty)
        #expect(channel.isActive)
        _ = try? channel.finish()
    }

    /// The user's PING is answered by the keep-alive's PONG when it went out before the
    /// keep-alive's PING, and the keep-alive's PING by the user's PONG when it went out before the
    /// user's: then the next tick finds it answered and sends a PING rather than giving up. A PING
    /// of the user's that is still unanswered does not end the connection at a tick (only the
    /// keep-alive's does), and a later keep-alive PONG answers it.
    @Test func aUsersPingIsAnsweredByTheKeepAlivesPongAndTheReverse() throws {
        let (recorder, channel, handler) = try self.makeKeepAliveChannel()
        // The user's, then the keep-alive's, answered alone.
        handler.sendPing(ByteBuffer(string: "u1"), promise: nil)
        self.advance(channel, by: Self.interval)
        var sent = try self.pings(channel)
        try #require(sent.count == 2)
        #expect(sent[0] == Array("u1".utf8))
        try channel.writeInbound(self.serverFrame(.pong, sent[1]))
        #expect(recorder.answered.withLockedValue { $0 } == [["u1"]])
        // The keep-alive's, then the user's, answered alone.
        self.advance(channel, by: Self.interval)
        handler.sendPing(ByteBuffer(string: "u2"), promise: nil)
        sent = try self.pings(channel)
        try #require(sent.count == 2)
        #expect(sent[1] == Array("u2".utf8))
        try channel.writeInbound(self.serverFrame(.pong, Array("u2".utf8)))
        #expect(recorder.answered.withLockedValue { $0 } == [["u1"], ["u2"]])
        self.advance(channel, by: Self.interval)
        sent = try self.pings(channel)
        #expect(sent.count == 1, "the keep-alive's PING counts as answered: a PING, not a time-out")
        #expect(recorder.state.withLockedValue { $0.endings }.isEmpty)
        // The user's, held while the keep-alive's before it is answered: the tick goes on, and
        // the keep-alive's next PONG answers it.
        handler.sendPing(ByteBuffer(string: "u3"), promise: nil)
        #expect(try self.pings(channel) == [Array("u3".utf8)])
        try channel.writeInbound(self.serverFrame(.pong, sent.first ?? []))
        #expect(recorder.answered.withLockedValue { $0 } == [["u1"], ["u2"]])
        self.advance(channel, by: Self.interval)
        sent = try self.pings(channel)
        try #require(sent.count == 1)
        #expect(recorder.state.withLockedValue { $0.endings }.isEmpty)
        try channel.writeInbound(self.serverFrame(.pong, sent[0]))
        #expect(recorder.answered.withLockedValue { $0 } == [["u1"], ["u2"], ["u3"]])
        #expect(channel.isActive)
        _ = try? channel.finish()
    }

    /// A tick that finds the keep-alive's previous PING unanswered, one interval after it went
    /// out, ends the connection as timed out: it closes with no close frame (a server that does
    /// not answer PINGs would not answer one either) and no PING goes out any more. Neither the
    /// PONG of a PING sent before the keep-alive's nor one that answers no PING of Courier's
    /// answers it.
    @Test func aTickThatFindsTheKeepAlivesPingUnansweredEndsTheConnectionAsTimedOut() throws {
        let (recorder, channel, handler) = try self.makeKeepAliveChannel()
        handler.sendPing(ByteBuffer(string: "u1"), promise: nil)
        self.advance(channel, by: Self.interval)
        #expect(try self.pings(channel).count == 2)
        try channel.writeInbound(self.serverFrame(.pong, Array("u1".utf8)))
        try channel.writeInbound(self.serverFrame(.pong, Array("unsolicited".utf8)))
        #expect(recorder.answered.withLockedValue { $0 } == [["u1"]])
        // Up to the tick the connection stays.
        self.advance(channel, by: Self.interval - .nanoseconds(1))
        #expect(try self.written(channel).isEmpty)
        #expect(recorder.state.withLockedValue { $0.endings }.isEmpty)
        #expect(channel.isActive)
        self.advance(channel, by: .nanoseconds(1))
        #expect(try self.written(channel).isEmpty, "no PING, no close frame")
        #expect(recorder.state.withLockedValue { $0.endings } == [.pingTimedOut])
        #expect(!channel.isActive)
        // The timer stopped with the connection.
        self.advance(channel, by: Self.interval * 3)
        #expect(try self.written(channel).isEmpty)
        #expect(recorder.state.withLockedValue { $0.endings } == [.pingTimedOut])
    }

    /// The keep-alive's PONGs behind messages the consumer has not read are read all the same (no
    /// read is held back), so each tick finds its PING answered however much waits unread: what
    /// the socket test of a consumer that does not read showed through the keep-alive, whose
    /// ticks are here where the test puts them.
    @Test func theKeepAlivesPongBehindUnreadMessagesIsRead() throws {
        let recorder = Recorder()
        let (channel, counter) = try self.makeChannel(recorder, maximum: 10, pingInterval: Self.interval)
        var expected: [WebSocketMessage] = []
        for round in 0..<3 {
            self.advance(channel, by: Self.interval)
            let sent = try self.pings(channel)
            try #require(sent.count == 1, "round \(round)")
            for index in 0..<3 {
                let bytes = Array(repeating: UInt8(round * 3 + index), count: 10)
                expected.append(.binary(Data(bytes)))
                try channel.writeInbound(self.serverFrame(.binary, bytes))
                channel.read()
            }
            try channel.writeInbound(self.serverFrame(.pong, sent[0]))
            channel.read()
        }
        #expect(counter.reads == 12, "no read is held back")
        self.advance(channel, by: Self.interval)
        #expect(try self.pings(channel).count == 1, "the last PONG was read: a PING, not a time-out")
        #expect(recorder.state.withLockedValue { $0.endings }.isEmpty)
        #expect(recorder.state.withLockedValue { $0.messages } == expected, "every message waits unread, in order")
        _ = try? channel.finish()
    }
}
