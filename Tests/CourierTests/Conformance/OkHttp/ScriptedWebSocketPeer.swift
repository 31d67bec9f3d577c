@testable import Courier
import CourierTesting
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

/// A loopback WebSocket server whose every byte a test writes, for the OkHttp WebSocket suites
/// (MockWebServer's `webSocketUpgrade` and its raw frames): it reads the opening handshake's head,
/// answers it with the head `answer` gives (with the `Sec-WebSocket-Accept` the key asks for at
/// hand) and any frames right behind it, then reads the client's frames, records them unmasked,
/// and reacts to each as `react` says (by default: a PONG for a PING, the close frame echoed
/// before it closes the connection, as RFC 6455 7.1.1 has a server do).
///
/// It never checks what the client sends against the protocol: the tests do, on ``frames``.
final class ScriptedWebSocketPeer: Sendable {
    /// A frame as the client sent it: its header bits, and its payload unmasked.
    struct Frame: Equatable, Sendable, CustomStringConvertible {
        var fin: Bool
        var rsv1: Bool
        var rsv2: Bool
        var rsv3: Bool
        var opcode: UInt8
        var masked: Bool
        /// How many bytes the extended payload length took (0, 2 or 8; RFC 6455 5.2).
        var extendedLength: Int
        var payload: [UInt8]

        /// RSV1, RSV2 and RSV3 as three bits, RSV1 the highest (Autobahn's numbering).
        var rsv: UInt8 { (self.rsv1 ? 4 : 0) | (self.rsv2 ? 2 : 0) | (self.rsv3 ? 1 : 0) }

        /// A close frame's code, if it is one that has a code.
        var closeCode: UInt16? {
            guard self.opcode == 0x8, self.payload.count >= 2 else { return nil }
            return UInt16(self.payload[0]) << 8 | UInt16(self.payload[1])
        }

        /// A close frame's reason.
        var closeReason: String { String(decoding: self.payload.dropFirst(2), as: UTF8.self) }

        var text: String { String(decoding: self.payload, as: UTF8.self) }

        var description: String {
            "opcode \(self.opcode)\(self.fin ? "" : " (not fin)")\(self.rsv1 ? " rsv1" : "")\(self.masked ? "" : " UNMASKED"), \(self.payload.count) bytes"
        }
    }

    /// The answer to a handshake: its head (with the final CRLF CRLF), then `frames` in the same
    /// write; nil head: no answer at all (the client waits for one).
    struct Answer: Sendable {
        var head: String?
        var frames: [UInt8] = []
        /// Closes the connection after writing.
        var thenClose = false

        /// `101 Switching Protocols` with the three fields RFC 6455 4.2.2 asks for, and `extra`.
        static func upgrade(accept: String, _ extra: [(String, String)] = [], frames: [UInt8] = []) -> Answer {
            var head = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: \(accept)\r\n"
            for (name, value) in extra { head += "\(name): \(value)\r\n" }
            return Answer(head: head + "\r\n", frames: frames)
        }
    }

    /// What the peer does when a client frame came in (after recording it).
    enum Reaction: Sendable {
        case nothing
        case send([UInt8])
        case sendThenClose([UInt8])
        case close
    }

    /// The answer to the `connection`-th handshake (0-based), whose head is `head`, and which
    /// needs `accept` as its `Sec-WebSocket-Accept`.
    typealias Script = @Sendable (_ connection: Int, _ head: String, _ accept: String) -> Answer
    /// The reaction to a client frame; `closeSent` tells whether the peer sent a close frame already.
    typealias React = @Sendable (_ frame: Frame, _ closeSent: Bool) -> Reaction

    /// PINGs answered, a close frame echoed (its code only) and the connection closed, or, after
    /// the peer's own close frame, the connection closed.
    static let defaultReaction: React = { frame, closeSent in
        switch frame.opcode {
        case 0x9: return .send(ScriptedWebSocketPeer.frame(0xA, frame.payload))
        case 0x8: return closeSent ? .close : .sendThenClose(ScriptedWebSocketPeer.frame(0x8, Array(frame.payload.prefix(2))))
        default: return .nothing
        }
    }

    /// Reacts to nothing: no PONG, no close frame (a server that stopped reading).
    static let silent: React = { _, _ in .nothing }

    fileprivate struct State {
        var heads: [String] = []
        var frames: [Frame] = []
        var connections = 0
        /// Connections the client (or the peer) closed.
        var closedConnections = 0
        /// The connections, the latest last (for ``send(_:)``).
        var channels: [any Channel] = []
        /// Whether ``send(_:)`` wrote a close frame.
        var closeSent = false
    }

    private let server: any Channel
    private let state: ObservedBox<State>

    /// Signalled at every change of what the peer saw: tests wait on it.
    var changes: Changes { self.state.changes }
    var port: Int { self.server.localAddress!.port! }
    /// The handshake heads received, in order.
    var heads: [String] { self.state.read { $0.heads } }
    /// The client's frames, in order (all connections).
    var frames: [Frame] { self.state.read { $0.frames } }
    var connectionCount: Int { self.state.read { $0.connections } }
    var closedConnectionCount: Int { self.state.read { $0.closedConnections } }

    /// A `ws://` URL of the peer (`scheme` may be any other spelling).
    func url(_ path: String = "/", scheme: String = "ws") -> URL {
        URL(string: "\(scheme)://127.0.0.1:\(self.port)\(path)")!
    }

    private init(server: any Channel, state: ObservedBox<State>) {
        self.server = server
        self.state = state
    }

    /// Starts a peer, runs `body` with it, and shuts it down whatever `body` does.
    static func with<T>(
        react: @escaping React = ScriptedWebSocketPeer.defaultReaction, _ script: @escaping Script, _ body: (ScriptedWebSocketPeer) async throws -> T
    ) async throws -> T {
        let state = ObservedBox(State())
        let server = try await ServerBootstrap(group: TestServer.eventLoopGroup)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                let index = state.withLockedValue { state -> Int in
                    defer { state.connections += 1 }
                    state.channels.append(channel)
                    return state.connections
                }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(PeerConnectionHandler(connection: index, script: script, react: react, state: state))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        let peer = ScriptedWebSocketPeer(server: server, state: state)
        do {
            let result = try await body(peer)
            await peer.shutdown()
            return result
        } catch {
            await peer.shutdown()
            throw error
        }
    }

    private func shutdown() async {
        for channel in self.state.read({ $0.channels }) { try? await channel.close() }
        try? await self.server.close()
    }

    /// Writes `bytes` on the latest connection (frames the server sends when the test says).
    func send(_ bytes: [UInt8]) async throws {
        guard let channel = self.state.read({ $0.channels.last }) else { throw CourierError(.connectionClosed, "the peer has no connection") }
        if Self.holdsClose(bytes) { self.state.withLockedValue { $0.closeSent = true } }
        try await channel.writeAndFlush(ByteBuffer(bytes: bytes))
    }

    /// Waits until `condition` holds of the peer (a frame received, a connection closed).
    func wait(until condition: (ScriptedWebSocketPeer) -> Bool) async -> Bool {
        await self.changes.wait { condition(self) }
    }

    // MARK: Frames

    /// A server frame (never masked unless `mask` is given): FIN, `opcode`, `payload`.
    static func frame(_ opcode: UInt8, _ payload: [UInt8], fin: Bool = true, rsv1: Bool = false, mask: [UInt8]? = nil) -> [UInt8] {
        var bytes: [UInt8] = [(fin ? 0x80 : 0) | (rsv1 ? 0x40 : 0) | opcode]
        let maskBit: UInt8 = mask == nil ? 0 : 0x80
        switch payload.count {
        case 0...125: bytes.append(maskBit | UInt8(payload.count))
        case 126...0xFFFF:
            bytes.append(maskBit | 126)
            bytes += [UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        default:
            bytes.append(maskBit | 127)
            bytes += (0..<8).reversed().map { UInt8((UInt64(payload.count) >> (8 * UInt64($0))) & 0xFF) }
        }
        if let mask {
            bytes += mask
            bytes += payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
        } else {
            bytes += payload
        }
        return bytes
    }

    static func text(_ text: String, fin: Bool = true) -> [UInt8] { Self.frame(0x1, Array(text.utf8), fin: fin) }

    /// A close frame with `code` and `reason` (no code: an empty body).
    static func close(_ code: UInt16?, _ reason: String = "") -> [UInt8] {
        guard let code else { return Self.frame(0x8, []) }
        return Self.frame(0x8, [UInt8(code >> 8), UInt8(code & 0xFF)] + Array(reason.utf8))
    }

    /// Bytes written in hex, as OkHttp's tests write frames ("810548656c6c6f").
    static func hex(_ string: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = string.startIndex
        while index < string.endIndex {
            let next = string.index(index, offsetBy: 2)
            bytes.append(UInt8(string[index..<next], radix: 16)!)
            index = next
        }
        return bytes
    }

    /// The opening handshake's request head at the front of `buffer`, taken out of it without its
    /// closing CRLF CRLF (cut by bytes: a String takes CRLF for one character); nil until the
    /// whole head is in.
    static func takeHead(from buffer: inout ByteBuffer) -> String? {
        let view = buffer.readableBytesView
        guard let end = view.firstRange(of: [13, 10, 13, 10] as [UInt8]) else { return nil }
        return String(decoding: buffer.readBytes(length: end.upperBound - view.startIndex)!.dropLast(4), as: UTF8.self)
    }

    /// The value of the field `name` (lowercase) in a request head, trimmed; nil when absent.
    static func field(_ name: String, in head: String) -> String? {
        head.split(separator: "\r\n").first { $0.lowercased().hasPrefix(name + ":") }
            .map { $0.split(separator: ":", maxSplits: 1)[1].trimmingCharacters(in: .whitespaces) }
    }

    /// Parses one frame off the front of `buffer` (nil while it is incomplete).
    static func parseFrame(_ buffer: inout ByteBuffer) -> Frame? {
        let view = buffer.readableBytesView
        guard view.count >= 2 else { return nil }
        let first = view[view.startIndex]
        let second = view[view.startIndex + 1]
        var offset = 2
        var length = Int(second & 0x7F)
        if length == 126 {
            guard view.count >= 4 else { return nil }
            length = Int(view[view.startIndex + 2]) << 8 | Int(view[view.startIndex + 3])
            offset = 4
        } else if length == 127 {
            guard view.count >= 10 else { return nil }
            length = (0..<8).reduce(0) { $0 << 8 | Int(view[view.startIndex + 2 + $1]) }
            offset = 10
        }
        // A length with its top bit set (which RFC 6455 5.2 forbids) is not one this parser takes.
        guard length >= 0 else { return nil }
        let masked = second & 0x80 != 0
        let extendedLength = offset - 2
        var mask: [UInt8] = []
        if masked {
            guard view.count >= offset + 4 else { return nil }
            mask = Array(view[(view.startIndex + offset)..<(view.startIndex + offset + 4)])
            offset += 4
        }
        guard view.count >= offset + length else { return nil }
        var payload = Array(view[(view.startIndex + offset)..<(view.startIndex + offset + length)])
        if masked { payload = payload.enumerated().map { $0.element ^ mask[$0.offset % 4] } }
        buffer.moveReaderIndex(forwardBy: offset + length)
        return Frame(
            fin: first & 0x80 != 0, rsv1: first & 0x40 != 0, rsv2: first & 0x20 != 0, rsv3: first & 0x10 != 0, opcode: first & 0x0F,
            masked: masked, extendedLength: extendedLength, payload: payload)
    }

    /// Whether `bytes` hold a close frame (server frames, unmasked).
    static func holdsClose(_ bytes: [UInt8]) -> Bool {
        var buffer = ByteBuffer(bytes: bytes)
        while let frame = Self.parseFrame(&buffer) {
            if frame.opcode == 0x8 { return true }
        }
        return false
    }

    fileprivate static func record(_ state: ObservedBox<State>, frame: Frame) {
        state.withLockedValue { $0.frames.append(frame) }
    }

    fileprivate static func record(_ state: ObservedBox<State>, head: String) {
        state.withLockedValue { $0.heads.append(head) }
    }

    fileprivate static func recordClosed(_ state: ObservedBox<State>) {
        state.withLockedValue { $0.closedConnections += 1 }
    }
}

private final class PeerConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let connection: Int
    private let script: ScriptedWebSocketPeer.Script
    private let react: ScriptedWebSocketPeer.React
    private let state: ObservedBox<ScriptedWebSocketPeer.State>
    private var buffer = ByteBuffer()
    private var upgraded = false
    private var closeSent = false
    private var closing = false

    init(
        connection: Int, script: @escaping ScriptedWebSocketPeer.Script, react: @escaping ScriptedWebSocketPeer.React,
        state: ObservedBox<ScriptedWebSocketPeer.State>
    ) {
        self.connection = connection
        self.script = script
        self.react = react
        self.state = state
    }

    func channelInactive(context: ChannelHandlerContext) {
        ScriptedWebSocketPeer.recordClosed(self.state)
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
            ScriptedWebSocketPeer.record(self.state, head: head)
            let key = ScriptedWebSocketPeer.field("sec-websocket-key", in: head) ?? ""
            let answer = self.script(self.connection, head, WebSocketHandshake.acceptValue(for: key))
            self.upgraded = true
            guard let answerHead = answer.head else { return }
            self.closeSent = ScriptedWebSocketPeer.holdsClose(answer.frames)
            var bytes = ByteBuffer(string: answerHead)
            bytes.writeBytes(answer.frames)
            self.write(context: context, bytes, thenClose: answer.thenClose)
            if answer.thenClose { return }
        }
        while !self.closing, let frame = ScriptedWebSocketPeer.parseFrame(&self.buffer) {
            ScriptedWebSocketPeer.record(self.state, frame: frame)
            switch self.react(frame, self.closeSent || self.state.read { $0.closeSent }) {
            case .nothing: break
            case .send(let bytes):
                if ScriptedWebSocketPeer.holdsClose(bytes) { self.closeSent = true }
                self.write(context: context, ByteBuffer(bytes: bytes), thenClose: false)
            case .sendThenClose(let bytes):
                self.closeSent = true
                self.write(context: context, ByteBuffer(bytes: bytes), thenClose: true)
            case .close:
                self.closing = true
                context.close(promise: nil)
            }
        }
    }

    private func write(context: ChannelHandlerContext, _ bytes: ByteBuffer, thenClose: Bool) {
        let written = context.writeAndFlush(self.wrapOutboundOut(bytes))
        guard thenClose else { return }
        self.closing = true
        let channel = context.channel
        written.whenComplete { _ in channel.close(promise: nil) }
    }
}
