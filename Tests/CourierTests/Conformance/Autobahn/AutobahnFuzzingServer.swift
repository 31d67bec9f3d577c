// The judging of a case is ported from the Autobahn testsuite's fuzzing server
// (autobahntestsuite/case/case.py, fuzzing.py; https://github.com/crossbario/autobahn-testsuite),
// Copyright (c) Tavendo GmbH / Crossbar.io (typedef int GmbH), licensed under the Apache License,
// Version 2.0.

@testable import Courier
import CompressNIO
import CourierTesting
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

/// Autobahn's `fuzzingserver` for one case over a real socket, in the role it plays against a
/// client under test: it answers the opening handshake (with a `permessage-deflate` answer when
/// the case has one), writes exactly the frames the case writes (raw: any opcode, FIN and RSV
/// bits, chopped into as many TCP writes as the case chops them), and reads the client as an
/// Autobahn endpoint does: it puts the client's messages together (inflating them under
/// `permessage-deflate`), answers its PINGs, and records what Autobahn records, the case's
/// events (`("message", payload, binary)`, `("pong", payload)`, `("timeout", tag)`), who sent
/// the first close frame (`closedByMe`), whether the closing handshake completed (`wasClean`) and
/// the client's close code (`remoteCloseCode`). ``verdict(_:)`` judges them as `Case.onConnectionLost`
/// does.
///
/// Whatever the client sends that breaks RFC 6455 (an unmasked frame, RSV bits, a text message
/// that is not UTF-8, a compressed message that does not inflate, a frame after its close frame,
/// a close code it may not send) is recorded in ``violations`` and fails the connection (dropped,
/// unclean), as Autobahn's endpoint fails it; the tests require none.
///
/// It runs on `TestServer.eventLoopGroup`, apart from the loops the client's sessions use.
final class AutobahnFuzzingServer: ShutDownByAwaiting {
    /// One of Autobahn's recorded events (`Case.received`).
    enum Event: Equatable, Sendable, CustomStringConvertible {
        /// A message the client sent (Autobahn's `("message", payload, binary)`).
        case message([UInt8], binary: Bool)
        /// A PONG the client sent (`("pong", payload)`).
        case pong([UInt8])
        /// The case's wait passed with the connection still open (`("timeout", tag)`).
        case timeout(String)

        var description: String {
            switch self {
            case .message(let payload, let binary):
                let shown = payload.count > 40 ? "\(payload.count) bytes" : (String(validating: payload, as: UTF8.self).map { "\"\($0)\"" } ?? "\(payload)")
                return "message(\(shown), binary: \(binary))"
            case .pong(let payload): return "pong(\(String(decoding: payload, as: UTF8.self)))"
            case .timeout(let tag): return "timeout(\(tag))"
            }
        }
    }

    /// Autobahn's verdicts (`Case.OK`, `Case.NON_STRICT`, ...).
    enum Behavior: String, Sendable {
        case ok = "OK"
        case nonStrict = "NON-STRICT"
        case informational = "INFORMATIONAL"
        case failed = "FAILED"
        case wrongCode = "WRONG CODE"
        case unclean = "UNCLEAN"
    }

    /// A case's `expectedClose`.
    struct ExpectedClose: Sendable {
        /// Whether the fuzzing server sends the first close frame.
        var closedByMe: Bool
        /// The codes the client's close frame may carry (or none).
        var codes: [UInt16]
        /// Whether the closing handshake must complete.
        var requireClean: Bool
        /// The UTF-8 cases: the wrong endpoint closing means the client never saw the bad text.
        var closedByWrongEndpointIsFatal = false
    }

    /// A case's expectation: `expected` (the event lists, by the verdict each earns) and `expectedClose`.
    struct Expectation: Sendable {
        var expected: [(Behavior, [Event])]
        var close: ExpectedClose
        /// Autobahn's `suppressClose`: no close frame when the events match.
        var suppressClose = false
    }

    /// The `permessage-deflate` answer the server gives, and how it then compresses and inflates.
    struct Compression: Sendable {
        /// The `Sec-WebSocket-Extensions` value of the 101.
        var response: String
        var clientNoContextTakeover = false
        /// The client's window the server asked for (its inflater's window).
        var clientMaxWindowBits: Int32 = 15
        var serverNoContextTakeover = false
    }

    /// A client frame, as read off the wire (unmasked): the scripted peer's.
    typealias Frame = ScriptedWebSocketPeer.Frame

    fileprivate struct State {
        var channel: (any Channel)?
        var handler: NIOLoopBound<AutobahnFuzzingConnection>?
        /// The client's handshake head.
        var head: String?
        var open = false
        var events: [Event] = []
        /// The payloads of the PINGs ``probe(_:)`` sent: their PONGs are the harness's, not the case's.
        var probes: Set<[UInt8]> = []
        var probesAnswered: Set<[UInt8]> = []
        /// Autobahn's `closedByMe`: the server's close frame went out before any of the client's.
        var closedByMe = false
        /// Whether a proper close frame of the server's went out (Autobahn's state CLOSING).
        var closeSent = false
        var clientClose: Frame?
        var remoteCloseCode: UInt16?
        var wasClean = false
        var connectionClosed = false
        var violations: [String] = []
        var expectation: Expectation?
        /// The client's frames, all of them, in order.
        var frames: [Frame] = []
    }

    private let server: any Channel
    fileprivate let state: ObservedBox<State>

    var port: Int { self.server.localAddress!.port! }
    var url: URL { URL(string: "ws://127.0.0.1:\(self.port)/runCase")! }
    var events: [Event] { self.state.read { $0.events } }
    var violations: [String] { self.state.read { $0.violations } }
    var head: String? { self.state.read { $0.head } }
    var frames: [Frame] { self.state.read { $0.frames } }
    var clientCloseFrame: Frame? { self.state.read { $0.clientClose } }
    var isConnectionClosed: Bool { self.state.read { $0.connectionClosed } }

    private init(server: any Channel, state: ObservedBox<State>) {
        self.server = server
        self.state = state
    }

    /// Starts a server for one case, runs `body` with it, and shuts it down whatever `body` does.
    static func with<T>(
        compression: Compression? = nil, expectation: Expectation, _ body: (AutobahnFuzzingServer) async throws -> T
    ) async throws -> T {
        let state = ObservedBox(State(expectation: expectation))
        let server = try await ServerBootstrap(group: TestServer.eventLoopGroup)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let handler = AutobahnFuzzingConnection(state: state, compression: compression)
                    state.withLockedValue {
                        $0.channel = channel
                        $0.handler = NIOLoopBound(handler, eventLoop: channel.eventLoop)
                    }
                    try channel.pipeline.syncOperations.addHandler(handler)
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        return try await withShutdown(of: AutobahnFuzzingServer(server: server, state: state), body)
    }

    func shutdown() async {
        if let channel = self.state.read({ $0.channel }) { try? await channel.close() }
        try? await self.server.close()
    }

    // MARK: What a case does

    /// Waits until the handshake was answered (the case's `onOpen`).
    func waitUntilOpen() async -> Bool {
        await self.state.changes.wait { self.state.read { $0.open || $0.connectionClosed } } && self.state.read { $0.open }
    }

    /// Autobahn's `sendFrame`: one frame, raw (no state change, even for a close frame), in
    /// chops of `chopsize` bytes, each its own write.
    func sendFrame(opcode: UInt8, payload: [UInt8] = [], fin: Bool = true, rsv: UInt8 = 0, chopsize: Int? = nil) async {
        await self.write(Self.frame(opcode: opcode, payload: payload, fin: fin, rsv: rsv), chopsize: chopsize)
    }

    /// Several frames in one write (Autobahn's frames sent back to back, `sync = False`).
    func sendFrames(_ frames: [[UInt8]]) async {
        await self.write(frames.flatMap { $0 })
    }

    /// Writes `bytes` (in chops of `chopsize`), unless the connection is gone.
    func write(_ bytes: [UInt8], chopsize: Int? = nil) async {
        guard let channel = self.state.read({ $0.channel }), !bytes.isEmpty else { return }
        let size = max(1, chopsize ?? bytes.count)
        var start = 0
        while start < bytes.count {
            let end = min(bytes.count, start + size)
            do {
                try await channel.writeAndFlush(ByteBuffer(bytes: bytes[start..<end]))
            } catch {
                return
            }
            start = end
        }
    }

    /// Autobahn's `sendCloseFrame`/`sendClose`: a close frame with `code` and `reason` (raw
    /// bytes, which need not be UTF-8), if the closing handshake has not begun; the server then
    /// waits for the client's.
    /// `before` and `after` go in the same write, right before and after it (frames sent back to back).
    func sendClose(_ code: UInt16? = 1000, reason: [UInt8] = [], before: [[UInt8]] = [], after: [[UInt8]] = []) async {
        var payload: [UInt8] = []
        if let code { payload = [UInt8(code >> 8), UInt8(code & 0xFF)] }
        payload += reason
        let frame = before.flatMap { $0 } + Self.frame(opcode: 0x8, payload: payload) + after.flatMap { $0 }
        let send = self.state.withLockedValue { state -> Bool in
            guard !state.closeSent, state.clientClose == nil, !state.connectionClosed else { return false }
            state.closeSent = true
            state.closedByMe = true
            return true
        }
        if send { await self.write(frame) }
    }

    /// A compressed message (`permessage-deflate`), in frames of `fragmentSize` bytes of its
    /// compressed payload (Autobahn's `autoFragmentSize`; 0: one frame).
    func sendCompressedMessage(_ payload: [UInt8], binary: Bool, fragmentSize: Int = 0) async {
        guard let channel = self.state.read({ $0.channel }), let handler = self.state.read({ $0.handler }) else { return }
        let compressed: [UInt8]
        do {
            compressed = try await channel.eventLoop.submit { try handler.value.compress(payload) }.get()
        } catch {
            Issue.record("the fuzzing server could not compress: \(error)")
            return
        }
        let size = fragmentSize > 0 ? fragmentSize : max(1, compressed.count)
        var frames: [[UInt8]] = []
        var start = 0
        repeat {
            let end = min(compressed.count, start + size)
            let first = start == 0
            frames.append(
                Self.frame(
                    opcode: first ? (binary ? 0x2 : 0x1) : 0x0, payload: Array(compressed[start..<end]), fin: end == compressed.count,
                    rsv: first ? 4 : 0))
            start = end
        } while start < compressed.count
        await self.sendFrames(frames)
    }

    /// Waits for `condition` of the server's record, or the connection's end, at most `limit`.
    func wait(within limit: Duration = Changes.hangGuard, until condition: (AutobahnFuzzingServer) -> Bool) async -> Bool {
        await self.state.changes.wait(within: limit) { condition(self) }
    }

    /// Instead of a case's wait (its `continueLater(1, …)`) where a control frame may go between
    /// two frames: a PING with `tag`, whose PONG says that the client read everything before it
    /// without failing the connection. True when it came (the case's timeout passed with the
    /// connection open: a `("timeout", tag)` event is recorded); false when the client closed
    /// first. The PONG is not one of the case's events.
    func probe(_ tag: String) async -> Bool {
        let payload = Array("probe \(tag)".utf8)
        let open = self.state.withLockedValue { state -> Bool in
            state.probes.insert(payload)
            return state.clientClose == nil && !state.connectionClosed
        }
        guard open else { return false }
        await self.sendFrame(opcode: 0x9, payload: payload)
        _ = await self.wait { server in server.state.read { $0.probesAnswered.contains(payload) || $0.clientClose != nil || $0.connectionClosed } }
        return self.state.withLockedValue { state -> Bool in
            guard state.probesAnswered.contains(payload), state.clientClose == nil, !state.connectionClosed else { return false }
            state.events.append(.timeout(tag))
            return true
        }
    }

    /// A case's wait inside one frame (no PING fits there): up to `pause` (at most 100 ms) for
    /// the client to close; if it did not, a `("timeout", tag)` event, and true.
    func pause(_ pause: Duration, _ tag: String) async -> Bool {
        _ = await self.wait(within: pause) { server in server.state.read { $0.clientClose != nil || $0.connectionClosed } }
        return self.state.withLockedValue { state -> Bool in
            guard state.clientClose == nil, !state.connectionClosed else { return false }
            state.events.append(.timeout(tag))
            return true
        }
    }

    /// Autobahn's `killAfter`: waits up to `limit` for the connection to end, then drops it.
    /// The limit only guards against a client that never closes (a failed case); a full parallel
    /// run on two cores once took more than Autobahn's 10 s over a case that passes alone, and a
    /// full CI run held every test for about 36 s, so it is the hang guard, not 60 s.
    func waitForEnd(killAfter limit: Duration = Changes.hangGuard) async {
        if !(await self.wait(within: limit) { $0.isConnectionClosed }) {
            self.state.withLockedValue { $0.violations.append("the connection did not end within \(limit): killed") }
            if let channel = self.state.read({ $0.channel }) { try? await channel.close() }
            _ = await self.wait { $0.isConnectionClosed }
        }
    }

    // MARK: The verdict

    /// `Case.onConnectionLost`'s verdict on what the server saw.
    struct Verdict: Sendable, CustomStringConvertible {
        var behavior: Behavior
        var behaviorClose: Behavior
        var events: [Event]
        var closedByMe: Bool
        var wasClean: Bool
        var remoteCloseCode: UInt16?

        var description: String {
            "\(self.behavior.rawValue)/\(self.behaviorClose.rawValue): events \(self.events), closedByMe \(self.closedByMe), "
                + "wasClean \(self.wasClean), remote close code \(self.remoteCloseCode.map(String.init) ?? "none")"
        }
    }

    func verdict(_ expectation: Expectation) -> Verdict {
        self.state.read { state in
            var behavior = Behavior.failed
            for (candidate, events) in expectation.expected where events == state.events {
                behavior = candidate
                break
            }
            let close = expectation.close
            var behaviorClose: Behavior
            if close.closedByMe != state.closedByMe {
                behaviorClose = .failed
            } else if close.requireClean && !state.wasClean {
                behaviorClose = .unclean
            } else if let code = state.remoteCloseCode, !close.codes.contains(code) {
                behaviorClose = .wrongCode
            } else {
                behaviorClose = .ok
            }
            if close.closedByWrongEndpointIsFatal && close.closedByMe != state.closedByMe { behavior = .failed }
            if !state.open {
                behavior = .failed
                behaviorClose = .failed
            }
            return Verdict(
                behavior: behavior, behaviorClose: behaviorClose, events: state.events, closedByMe: state.closedByMe, wasClean: state.wasClean,
                remoteCloseCode: state.remoteCloseCode)
        }
    }

    // MARK: Frames

    /// A server frame (never masked): FIN, RSV (three bits, RSV1 the highest), opcode, payload.
    static func frame(opcode: UInt8, payload: [UInt8] = [], fin: Bool = true, rsv: UInt8 = 0) -> [UInt8] {
        var bytes = ScriptedWebSocketPeer.frame(opcode & 0x0F, payload, fin: fin)
        bytes[0] |= (rsv & 0x7) << 4
        return bytes
    }

    /// The close codes a client may send (RFC 6455 7.4.1 and 7.4.2; the IANA registry's 1012-1014).
    static func isValidCloseCode(_ code: UInt16) -> Bool {
        switch code {
        case 1000...1003, 1007...1014, 3000...4999: true
        default: false
        }
    }
}

/// The server's side of one connection: the handshake, then the client's frames.
final class AutobahnFuzzingConnection: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let state: ObservedBox<AutobahnFuzzingServer.State>
    private let compression: AutobahnFuzzingServer.Compression?
    private var buffer = ByteBuffer()
    private var upgraded = false
    private var compressed = false
    /// The message being put together: its opcode, whether compressed, its bytes.
    private var message: (opcode: UInt8, compressed: Bool, bytes: [UInt8])?
    private var compressor: ZlibCompressor?
    private var decompressor: ZlibDecompressor?
    private var context: ChannelHandlerContext?

    fileprivate init(state: ObservedBox<AutobahnFuzzingServer.State>, compression: AutobahnFuzzingServer.Compression?) {
        self.state = state
        self.compression = compression
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.state.withLockedValue { $0.connectionClosed = true }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var incoming = self.unwrapInboundIn(data)
        self.buffer.writeBuffer(&incoming)
        if !self.upgraded {
            guard let head = ScriptedWebSocketPeer.takeHead(from: &self.buffer) else { return }
            let field = { (name: String) in ScriptedWebSocketPeer.field(name, in: head) }
            var answer = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            answer += "Sec-WebSocket-Accept: \(WebSocketHandshake.acceptValue(for: field("sec-websocket-key") ?? ""))\r\n"
            if let compression = self.compression, field("sec-websocket-extensions")?.contains("permessage-deflate") == true {
                answer += "Sec-WebSocket-Extensions: \(compression.response)\r\n"
                self.compressed = true
            }
            self.upgraded = true
            context.writeAndFlush(self.wrapOutboundOut(ByteBuffer(string: answer + "\r\n")), promise: nil)
            self.state.withLockedValue {
                $0.head = head
                $0.open = true
            }
        }
        while let frame = ScriptedWebSocketPeer.parseFrame(&self.buffer) {
            self.received(frame, context: context)
        }
    }

    /// The client broke a rule: recorded, and the connection failed (dropped, unclean), as
    /// Autobahn's endpoint fails it.
    private func violation(_ what: String) {
        self.state.withLockedValue { $0.violations.append(what) }
        self.context?.close(promise: nil)
    }

    private func received(_ frame: AutobahnFuzzingServer.Frame, context: ChannelHandlerContext) {
        let closed = self.state.withLockedValue { state -> Bool in
            state.frames.append(frame)
            return state.clientClose != nil
        }
        if closed { return self.violation("a frame (opcode \(frame.opcode)) after the client's close frame") }
        if !frame.masked { self.violation("an unmasked frame (opcode \(frame.opcode))") }
        let rsv1Allowed = self.compressed && (frame.opcode == 0x1 || frame.opcode == 0x2)
        if frame.rsv & 0b011 != 0 || (frame.rsv & 0b100 != 0 && !rsv1Allowed) { self.violation("RSV \(frame.rsv) on a frame (opcode \(frame.opcode))") }
        if frame.opcode >= 0x8 && (!frame.fin || frame.payload.count > 125) { self.violation("a fragmented or long control frame") }
        switch frame.opcode {
        case 0x0, 0x1, 0x2:
            if frame.opcode == 0x0 {
                guard self.message != nil else { return self.violation("a continuation with no message begun") }
                self.message!.bytes += frame.payload
            } else {
                guard self.message == nil else { return self.violation("a new message inside another") }
                self.message = (frame.opcode, frame.rsv & 0b100 != 0, frame.payload)
            }
            guard frame.fin, let message = self.message else { return }
            self.message = nil
            var payload = message.bytes
            if message.compressed {
                guard let inflated = self.inflate(payload) else { return self.violation("a compressed message that does not inflate") }
                payload = inflated
            }
            if message.opcode == 0x1, String(validating: payload, as: UTF8.self) == nil { self.violation("a text message that is not UTF-8") }
            self.event(.message(payload, binary: message.opcode == 0x2), context: context)
        case 0x8:
            self.closeReceived(frame, context: context)
        case 0x9:
            context.writeAndFlush(self.wrapOutboundOut(ByteBuffer(bytes: AutobahnFuzzingServer.frame(opcode: 0xA, payload: frame.payload))), promise: nil)
        case 0xA:
            let isProbe = self.state.withLockedValue { state -> Bool in
                guard state.probes.contains(frame.payload) else { return false }
                state.probesAnswered.insert(frame.payload)
                return true
            }
            if !isProbe { self.event(.pong(frame.payload), context: context) }
        default:
            self.violation("a frame with the reserved opcode \(frame.opcode)")
        }
    }

    /// An event; when the events match the case's expected ones and the server is to close,
    /// it closes with the first of the expected codes (`Case.finishWhenDone`).
    private func event(_ event: AutobahnFuzzingServer.Event, context: ChannelHandlerContext) {
        let close = self.state.withLockedValue { state -> UInt16? in
            state.events.append(event)
            guard let expectation = state.expectation, expectation.close.closedByMe, !expectation.suppressClose,
                expectation.expected.allSatisfy({ $0.1 == state.events }), !state.closeSent, state.clientClose == nil
            else { return nil }
            state.closeSent = true
            state.closedByMe = true
            return expectation.close.codes.first
        }
        if let code = close {
            let frame = AutobahnFuzzingServer.frame(opcode: 0x8, payload: [UInt8(code >> 8), UInt8(code & 0xFF)])
            context.writeAndFlush(self.wrapOutboundOut(ByteBuffer(bytes: frame)), promise: nil)
        }
    }

    /// The client's close frame: checked as Autobahn's endpoint checks it; answered with the same
    /// code and reason when the client began the closing handshake; the TCP connection then ends
    /// (the server's to close, RFC 6455 7.1.1).
    private func closeReceived(_ frame: AutobahnFuzzingServer.Frame, context: ChannelHandlerContext) {
        var code: UInt16?
        if frame.payload.count == 1 { self.violation("a close frame with a one-byte body") }
        if frame.payload.count >= 2 {
            let raw = UInt16(frame.payload[0]) << 8 | UInt16(frame.payload[1])
            if AutobahnFuzzingServer.isValidCloseCode(raw) { code = raw } else { self.violation("a close frame with the code \(raw)") }
            if String(validating: frame.payload.dropFirst(2), as: UTF8.self) == nil { self.violation("a close reason that is not UTF-8") }
        }
        let reply = self.state.withLockedValue { state -> Bool in
            state.clientClose = frame
            state.remoteCloseCode = code
            state.wasClean = true
            guard !state.closeSent else { return false }
            state.closeSent = true
            return true
        }
        let channel = context.channel
        if reply {
            let echo = AutobahnFuzzingServer.frame(opcode: 0x8, payload: Array(frame.payload.prefix(125)))
            context.writeAndFlush(self.wrapOutboundOut(ByteBuffer(bytes: echo))).whenComplete { _ in channel.close(promise: nil) }
        } else {
            context.close(promise: nil)
        }
    }

    // MARK: permessage-deflate

    /// A message's payload compressed as the server compresses (RFC 7692 7.2.1): the DEFLATE
    /// stream flushed, its `00 00 FF FF` left off.
    func compress(_ payload: [UInt8]) throws -> [UInt8] {
        let compressor = try self.compressor ?? ZlibCompressor(algorithm: .deflate, configuration: ZlibConfiguration(windowSize: 15))
        self.compressor = compressor
        var input = ByteBuffer(bytes: payload)
        var output = ByteBuffer()
        output.reserveCapacity(compressor.maxSize(from: input) + 16)
        try compressor.deflate(from: &input, to: &output, flush: .sync)
        if self.compression?.serverNoContextTakeover == true { try compressor.reset() }
        var bytes = Array(output.readableBytesView)
        if bytes.suffix(4) == [0x00, 0x00, 0xFF, 0xFF] { bytes.removeLast(4) }
        return bytes
    }

    /// A client's compressed message inflated with the window the server allowed it, its
    /// context reset per message when the server asked for `client_no_context_takeover`: a client
    /// that keeps a larger window, or its context, refers back where this inflater cannot follow.
    private func inflate(_ payload: [UInt8]) -> [UInt8]? {
        do {
            let decompressor = try self.decompressor ?? ZlibDecompressor(algorithm: .deflate, windowSize: self.compression?.clientMaxWindowBits ?? 15)
            self.decompressor = decompressor
            var input = ByteBuffer(bytes: payload + [0x00, 0x00, 0xFF, 0xFF])
            var output = ByteBuffer()
            output.reserveCapacity(max(1024, payload.count * 8))
            while true {
                do {
                    try decompressor.inflate(from: &input, to: &output)
                    break
                } catch let error as CompressNIOError where error == .bufferOverflow {
                    output.reserveCapacity(minimumWritableBytes: output.capacity)
                } catch let error as CompressNIOError where error == .inputBufferOverflow {
                    break
                }
            }
            if self.compression?.clientNoContextTakeover == true { try decompressor.reset() }
            return Array(output.readableBytesView)
        } catch {
            self.decompressor = nil
            return nil
        }
    }
}
