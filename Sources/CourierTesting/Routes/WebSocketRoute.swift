import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import NIOSSL
import NIOWebSocket

/// The test server's WebSocket routes (RFC 6455), upgraded by swift-nio's server upgrader:
/// `/courier/websocket/{mode}`. A client frame that is not masked closes with 1002.
///
/// - `echo`: each message back as it came (fragments as fragments), PINGs answered, the close
///   frame echoed before the connection closes.
/// - `fragmented`: each message back in three fragments, a PING between the first two.
/// - `close-after-first`: answers the first message with a close frame (1000, `bye`) of its own.
/// - `drop-after-first`: answers the first message by resetting the TCP connection (no close
///   frame, no TLS close_notify), as a server that crashed, or that aborts its transport, does.
/// - `silent`: reads and answers nothing (no PONG, no close).
/// - `discard`: drops binary messages, echoes text ones (a one-way transfer's sink: a text message
///   sent after binary ones comes back once they were all read), answers PINGs and the close.
/// - `payloads`: as soon as the connection is open, sends `count=N` binary messages (1 by
///   default), each the httpbin `/get` document of the handshake (`args`, `headers`, `origin`,
///   `url`), then a close frame with `close-code=C` (1000 by default) and no reason, as the
///   `/websocket` and `/websocket/payloads/N` routes of Alamofire's test server do.
/// - `close-after-pings`: answers PINGs; after the `count=N`th (1 by default) sends a close frame
///   with `close-code=C` (1001 by default, as a Vapor server's `close()`), as the
///   `/websocket/ping/N` route of Alamofire's test server does.
/// - `latest-pong`: holds its PONGs until `count=N` PINGs (2 by default) have come, then answers
///   only the last of them, as RFC 6455 5.5.3 allows; and so on for each N after, or, with
///   `rounds=R`, for the first R times N, answering every PING after those at once.
/// - `masked`: sends a masked text frame. `invalid-utf8`: a text frame that is not UTF-8.
///   `big-control`: a PING of 126 bytes. `bad-close`: a close frame with 1005, which may not be
///   sent. `unexpected-continuation`: a continuation frame with no message begun.
///   `huge-length`: the header of a binary frame whose 64-bit payload length has its most
///   significant bit set, which RFC 6455 5.2 says must be 0 (written below the frame encoder,
///   which would not write it).
/// - `close-unread`: on the first message stops reading, sends a close frame (1000) 100 ms later
///   and reads again 500 ms after that: a client that sends a large message meanwhile has its
///   close frame queued behind it.
/// - `bad-accept`: answers the upgrade with a second, wrong `Sec-WebSocket-Accept`.
///   `unoffered-extension`: answers it with `Sec-WebSocket-Extensions: x-unknown`.
///
/// Options gate the upgrade, for clients that authenticate or retry their handshake:
/// `?user=U&password=P` upgrades only a request with `Authorization: Basic` for `U:P` and answers
/// others 401 with `WWW-Authenticate: Basic realm="courier-websocket"`; `?unavailable=N` answers
/// the first `N` handshakes to the same target (path and query) 503. `?set-cookie=C` adds
/// `Set-Cookie: C` to the 101, `?refusal-cookie=C` to the 401.
///
/// Any other path refuses the upgrade (the request goes to the ordinary routes).
enum WebSocketRoute {
    static let prefix = "/courier/websocket/"

    static let modes: Set<String> = [
        "echo", "fragmented", "close-after-first", "drop-after-first", "silent", "discard", "masked", "invalid-utf8", "big-control", "bad-close",
        "unexpected-continuation", "bad-accept", "unoffered-extension", "payloads", "close-after-pings", "latest-pong",
        "close-unread", "huge-length",
    ]

    /// The upgrader for the routes; `state` counts the PINGs they receive.
    static func upgrader(state: ServerState) -> NIOWebSocketServerUpgrader {
        NIOWebSocketServerUpgrader(
            maxFrameSize: 1 << 24,
            automaticErrorHandling: false,
            shouldUpgrade: { channel, head in
                let mode = Self.mode(of: head.uri)
                guard let mode, Self.modes.contains(mode) else { return channel.eventLoop.makeSucceededFuture(nil) }
                // Refused: the ordinary routes answer (``refusal(of:)``).
                if !Self.isAuthorized(head.uri, authorization: head.headers.first(name: "Authorization")) {
                    return channel.eventLoop.makeSucceededFuture(nil)
                }
                if let limit = Self.option("unavailable", of: head.uri).flatMap({ Int($0) }),
                    state.refuseWebSocketUpgrade(to: head.uri, limit: limit)
                {
                    return channel.eventLoop.makeSucceededFuture(nil)
                }
                var headers = HTTPHeaders()
                if let cookie = Self.option("set-cookie", of: head.uri) { headers.add(name: "Set-Cookie", value: cookie) }
                switch mode {
                case "bad-accept": headers.add(name: "Sec-WebSocket-Accept", value: "c29tZXRoaW5nIGVsc2U=")
                case "unoffered-extension": headers.add(name: "Sec-WebSocket-Extensions", value: "x-unknown")
                default: break
                }
                if let offered = head.headers.first(name: "Sec-WebSocket-Protocol") {
                    let first = offered.split(separator: ",").first.map { $0.trimmingCharacters(in: .whitespaces) }
                    if let first { headers.add(name: "Sec-WebSocket-Protocol", value: first) }
                }
                return channel.eventLoop.makeSucceededFuture(headers)
            },
            upgradePipelineHandler: { channel, head in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    // The HTTP routes' handler stays after swift-nio's upgrade: frames are not for it.
                    if let http = try? sync.handler(type: TestServerHandler.self) { sync.removeHandler(http, promise: nil) }
                    let mode = Self.mode(of: head.uri) ?? "echo"
                    let options = WebSocketRouteHandler.Options(
                        count: Self.option("count", of: head.uri).flatMap { Int($0) } ?? (mode == "latest-pong" ? 2 : 1),
                        closeCode: Self.option("close-code", of: head.uri).flatMap { UInt16($0) },
                        rounds: Self.option("rounds", of: head.uri).flatMap { Int($0) },
                        document: mode == "payloads" ? Self.echoDocument(of: head, channel: channel) : nil
                    )
                    try sync.addHandler(WebSocketRouteHandler(mode: mode, state: state, options: options))
                }
            }
        )
    }

    /// The answer to a request for a WebSocket route that was not upgraded: 401 with a challenge
    /// when `user=` asks for credentials it did not bring, 503 when `unavailable=` refused it, 404
    /// otherwise (not an upgrade, or no such mode).
    static func refusal(of request: IncomingRequest) -> Reply {
        if !Self.isAuthorized(request.head.uri, authorization: request.header("Authorization")) {
            var headers: HTTPHeaders = ["WWW-Authenticate": #"Basic realm="courier-websocket""#]
            if let cookie = Self.option("refusal-cookie", of: request.head.uri) { headers.add(name: "Set-Cookie", value: cookie) }
            return .text("credentials needed\n", status: .unauthorized, headers: headers)
        }
        if Self.option("unavailable", of: request.head.uri) != nil {
            return .text("unavailable\n", status: .serviceUnavailable)
        }
        return .notFound
    }

    /// Whether a request to `uri` may upgrade as far as its `user=` and `password=` go.
    private static func isAuthorized(_ uri: String, authorization: String?) -> Bool {
        guard let user = Self.option("user", of: uri) else { return true }
        return authorization == BasicAuthorization.fieldValue(user: user, password: Self.option("password", of: uri) ?? "")
    }

    /// httpbin's `/get` document of the opening handshake, as `payloads` sends it.
    private static func echoDocument(of head: HTTPRequestHead, channel: any Channel) -> ByteBuffer {
        let tls = (try? channel.pipeline.syncOperations.handler(type: NIOSSLServerHandler.self)) != nil
        let local = channel.localAddress
        let authority = local.map { address in
            let ip = address.ipAddress ?? "127.0.0.1"
            return "\(ip.contains(":") ? "[\(ip)]" : ip):\(address.port ?? 0)"
        } ?? "localhost"
        let request = IncomingRequest(
            head: head, body: ByteBuffer(), scheme: tls ? "wss" : "ws", origin: channel.remoteAddress?.ipAddress ?? "127.0.0.1",
            defaultAuthority: authority)
        return ByteBuffer(data: HTTPBinEcho.encode(HTTPBinEcho.get(request)))
    }

    /// The value of a query option of `uri`.
    private static func option(_ name: String, of uri: String) -> String? {
        URLComponents(string: uri)?.queryItems?.first { $0.name == name }?.value
    }

    private static func mode(of uri: String) -> String? {
        guard uri.hasPrefix(Self.prefix) else { return nil }
        let rest = uri.dropFirst(Self.prefix.count)
        return String(rest.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
    }
}

/// One WebSocket connection of the test server.
final class WebSocketRouteHandler: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    /// What the `payloads`, `close-after-pings` and `latest-pong` modes take from the query.
    struct Options {
        /// How many messages `payloads` sends, after how many PINGs `close-after-pings` closes,
        /// how many PINGs `latest-pong` answers with one PONG.
        var count = 1
        /// The code of their close frame; nil for the mode's default.
        var closeCode: UInt16?
        /// How many times `latest-pong` holds its PONGs (`count` PINGs each time) before it
        /// answers every PING; nil for no end.
        var rounds: Int?
        /// What `payloads` sends.
        var document: ByteBuffer?
    }

    private let mode: String
    private let state: ServerState
    private let options: Options
    private var pings = 0
    private var messages = 0
    private var closeSent = false
    /// The opcode of the message being received.
    private var messageOpcode: WebSocketOpcode?
    private var fragments = ByteBuffer()

    init(mode: String, state: ServerState, options: Options = Options()) {
        self.mode = mode
        self.state = state
        self.options = options
    }

    func handlerAdded(context: ChannelHandlerContext) {
        var data = context.channel.allocator.buffer(capacity: 130)
        switch self.mode {
        case "masked":
            data.writeString("masked")
            self.send(context: context, WebSocketFrame(fin: true, opcode: .text, maskKey: .random(), data: data))
        case "invalid-utf8":
            data.writeBytes([0x68, 0x69, 0xFF, 0xFE])
            self.send(context: context, WebSocketFrame(fin: true, opcode: .text, data: data))
        case "big-control":
            data.writeBytes([UInt8](repeating: 0x61, count: 126))
            self.send(context: context, WebSocketFrame(fin: true, opcode: .ping, data: data))
        case "bad-close":
            data.writeInteger(UInt16(1005))
            self.send(context: context, WebSocketFrame(fin: true, opcode: .connectionClose, data: data))
        case "unexpected-continuation":
            data.writeString("orphan")
            self.send(context: context, WebSocketFrame(fin: true, opcode: .continuation, data: data))
        case "huge-length":
            var header = context.channel.allocator.buffer(capacity: 10)
            header.writeInteger(UInt8(0x82))  // FIN, binary
            header.writeInteger(UInt8(127))  // unmasked; a 64-bit length follows
            header.writeInteger(UInt64(1) << 63)
            if let encoder = try? context.pipeline.syncOperations.context(handlerType: WebSocketFrameEncoder.self) {
                encoder.writeAndFlush(NIOAny(header), promise: nil)
            }
        case "payloads":
            for _ in 0..<self.options.count {
                self.send(context: context, WebSocketFrame(fin: true, opcode: .binary, data: self.options.document ?? ByteBuffer()))
            }
            self.startClosingHandshake(context: context, code: self.options.closeCode ?? 1000)
        default:
            break
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = self.unwrapInboundIn(data)
        guard self.mode != "silent" else { return }
        guard frame.maskKey != nil else {
            self.close(context: context, code: 1002)
            return
        }
        let payload = frame.unmaskedData
        switch frame.opcode {
        case .ping:
            self.state.webSocketPingReceived()
            self.pings += 1
            // `latest-pong` answers the last PING of each round of `count`, while its rounds last.
            let perPong = max(1, self.options.count)
            let inRounds = self.options.rounds.map { self.pings <= $0 * perPong } ?? true
            let holding = self.mode == "latest-pong" && inRounds
            if !holding || self.pings % perPong == 0 {
                self.send(context: context, WebSocketFrame(fin: true, opcode: .pong, data: payload))
            }
            if self.mode == "close-after-pings", self.pings == self.options.count {
                self.startClosingHandshake(context: context, code: self.options.closeCode ?? 1001)
            }
        case .pong:
            break
        case .connectionClose:
            self.state.webSocketCloseReceived(payload.getInteger(at: payload.readerIndex, as: UInt16.self) ?? 1005)
            if self.closeSent {
                context.close(promise: nil)
            } else {
                // Echo the code (not the reason), then close: the server closes TCP first.
                var reply = context.channel.allocator.buffer(capacity: 2)
                var received = payload
                if let code = received.readInteger(as: UInt16.self) { reply.writeInteger(code) }
                self.closeSent = true
                let frame = WebSocketFrame(fin: true, opcode: .connectionClose, data: reply)
                let channel = context.channel
                context.writeAndFlush(self.wrapOutboundOut(frame)).whenComplete { _ in channel.close(promise: nil) }
            }
        case .text, .binary, .continuation:
            self.dataFrame(context: context, frame: frame, payload: payload)
        default:
            self.close(context: context, code: 1002)
        }
    }

    private func dataFrame(context: ChannelHandlerContext, frame: WebSocketFrame, payload: ByteBuffer) {
        switch self.mode {
        case "echo":
            self.send(context: context, WebSocketFrame(fin: frame.fin, opcode: frame.opcode, data: payload))
        case "discard":
            if frame.opcode != .continuation { self.messageOpcode = frame.opcode }
            if self.messageOpcode == .text {
                self.send(context: context, WebSocketFrame(fin: frame.fin, opcode: frame.opcode, data: payload))
            }
        default:
            if frame.opcode != .continuation { self.messageOpcode = frame.opcode }
            var payload = payload
            self.fragments.writeBuffer(&payload)
            guard frame.fin, let opcode = self.messageOpcode else { return }
            let whole = self.fragments
            self.fragments = ByteBuffer()
            self.messages += 1
            if self.mode == "drop-after-first" {
                resetConnection(context.channel)
                return
            }
            if self.mode == "close-unread" {
                guard self.messages == 1 else { return }
                let channel = context.channel
                let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
                _ = channel.setOption(ChannelOptions.autoRead, value: false)
                context.eventLoop.scheduleTask(in: .milliseconds(100)) {
                    let (handler, context) = loopBound.value
                    handler.startClosingHandshake(context: context, code: 1000)
                }
                context.eventLoop.scheduleTask(in: .milliseconds(600)) {
                    _ = channel.setOption(ChannelOptions.autoRead, value: true)
                    channel.read()
                }
                return
            }
            if self.mode == "close-after-first" {
                var data = context.channel.allocator.buffer(capacity: 5)
                data.writeInteger(UInt16(1000))
                data.writeString("bye")
                self.closeSent = true
                self.send(context: context, WebSocketFrame(fin: true, opcode: .connectionClose, data: data))
                return
            }
            // fragmented: three pieces, a PING between the first two.
            let third = whole.readableBytes / 3
            let first = whole.getSlice(at: whole.readerIndex, length: third)!
            let second = whole.getSlice(at: whole.readerIndex + third, length: third)!
            let last = whole.getSlice(at: whole.readerIndex + 2 * third, length: whole.readableBytes - 2 * third)!
            self.send(context: context, WebSocketFrame(fin: false, opcode: opcode, data: first))
            var ping = context.channel.allocator.buffer(capacity: 4)
            ping.writeString("mid")
            self.send(context: context, WebSocketFrame(fin: true, opcode: .ping, data: ping))
            self.send(context: context, WebSocketFrame(fin: false, opcode: .continuation, data: second))
            self.send(context: context, WebSocketFrame(fin: true, opcode: .continuation, data: last))
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    private func send(context: ChannelHandlerContext, _ frame: WebSocketFrame) {
        context.writeAndFlush(self.wrapOutboundOut(frame), promise: nil)
    }

    /// Sends a close frame with `code` and no reason; the connection closes when the client's
    /// close frame answers it (RFC 6455, 7.1.1: the server closes TCP first).
    private func startClosingHandshake(context: ChannelHandlerContext, code: UInt16) {
        var data = context.channel.allocator.buffer(capacity: 2)
        data.writeInteger(code)
        self.closeSent = true
        self.send(context: context, WebSocketFrame(fin: true, opcode: .connectionClose, data: data))
    }

    private func close(context: ChannelHandlerContext, code: UInt16) {
        var data = context.channel.allocator.buffer(capacity: 2)
        data.writeInteger(code)
        self.closeSent = true
        let frame = WebSocketFrame(fin: true, opcode: .connectionClose, data: data)
        let channel = context.channel
        context.writeAndFlush(self.wrapOutboundOut(frame)).whenComplete { _ in channel.close(promise: nil) }
    }
}
