import CourierTesting
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A loopback server whose answers a test writes byte for byte, for HTTP/1.1 cases TestServer does
/// not produce: bodies that end with the connection, interim 1xx answers, a kept-alive connection
/// that closes when the next request arrives.
///
/// It reads each request's head (and a `Content-Length` body), then asks `script` what to do.
final class ScriptedHTTPServer: ShutDownByAwaiting {
    enum Action: Sendable {
        /// Writes `bytes`; closes the connection afterwards when `thenClose`.
        case respond(String, thenClose: Bool = false)
        /// Writes `bytes` as they are (not UTF-8: a head with Latin-1 bytes).
        case respondBytes([UInt8])
        /// Writes `bytes` as they are, then closes the connection (a body that ends with it).
        case respondBytesThenClose([UInt8])
        /// Closes the connection without answering.
        case close
        /// Shuts the connection's output down (a FIN: a half-close) without answering; the
        /// server's side stays open for reading.
        case shutdownOutput
        /// Resets the connection (RST, not FIN) without answering; with `partial`, after writing it.
        case reset(partial: String = "")
        /// Writes `bytes` once the server has received `requests` requests in all (so that a test
        /// can hold that many connections busy at once, whatever the machine's speed).
        case respondOnceReceived(String, requests: Int)
        /// Writes `bytes` as soon as the head is in, before the request body, which is then read
        /// and dropped.
        case respondBeforeBody(String)
        /// Writes `bytes` once `gate` opens.
        case respondWhenOpen(String, gate: OneShotGate)
        /// Writes `first` at once, and `then` once `gate` opens.
        case respondInTwoParts([UInt8], then: [UInt8], gate: OneShotGate)
        /// Writes `bytes` as soon as the head is in, then shuts the connection's output down (a
        /// FIN) and drops whatever else arrives, reading no request body and answering nothing
        /// more (MockWebServer's `doNotReadRequestBody`, with nginx's lingering close: no reset
        /// can destroy the answer in the client's buffers). The connection closes when the
        /// client closes it.
        case respondWithoutReadingBody(String)
        /// Writes `bytes` once `delay` has passed, for the cases about a timeout only (a delay
        /// the client's timeout is set against, never a wait for something to happen).
        case respondAfter(String, delay: TimeAmount)
        /// Writes `first` at once and `then` once `delay` has passed (a body that comes late), for
        /// the cases about a slow answer only.
        case respondThenAfter(String, then: String, delay: TimeAmount)
        /// Never answers; the connection stays open until the client closes it.
        case hold
    }

    /// What to do with the `request`-th request (0-based) of the `connection`-th connection.
    typealias Script = @Sendable (_ connection: Int, _ request: Int, _ head: String) -> Action

    let channel: any Channel

    var port: Int { self.channel.localAddress!.port! }
    var baseURL: URL { URL(string: "http://127.0.0.1:\(self.port)/")! }
    /// Signalled after each connection accepted, request head received and body read: tests wait
    /// on it for the counts below. After a request that failed on the client's side (a timeout, a
    /// cancel), what the server received is waited for, never read at once: the server's loop,
    /// shared with the whole suite, may read it after the client gave up (three tests failed so).
    var changes: Changes { self.headsBox.changes }
    /// How many connections were accepted.
    var connectionCount: Int { self.connectionsBox.read { $0 } }
    /// The request heads received, in order.
    var receivedHeads: [String] { self.headsBox.read { $0 } }
    /// How many body bytes each request carried, in order (counted once the body is whole).
    var receivedBodyLengths: [Int] { self.bodyLengthsBox.read { $0 } }
    /// How many connections have closed (either side), signalled on ``changes`` too.
    var closedConnectionCount: Int { self.closedBox.read { $0 } }

    private init(
        channel: any Channel, connections: ObservedBox<Int>, heads: ObservedBox<[String]>, bodyLengths: ObservedBox<[Int]>,
        closed: ObservedBox<Int>
    ) {
        self.channel = channel
        self.connectionsBox = connections
        self.headsBox = heads
        self.bodyLengthsBox = bodyLengths
        self.closedBox = closed
    }

    private let connectionsBox: ObservedBox<Int>
    private let headsBox: ObservedBox<[String]>
    private let bodyLengthsBox: ObservedBox<[Int]>
    private let closedBox: ObservedBox<Int>

    /// Starts a server, runs `body` with it, and shuts it down (awaited) whatever `body` does.
    static func with<T>(_ script: @escaping Script, _ body: (ScriptedHTTPServer) async throws -> T) async throws -> T {
        try await withShutdown(of: try await Self.start(script), body)
    }

    static func start(_ script: @escaping Script) async throws -> ScriptedHTTPServer {
        // One signal for all four: a test waits on ``changes`` for any of them.
        let changes = Changes()
        let connections = ObservedBox(0, changes: changes)
        let heads = ObservedBox<[String]>([], changes: changes)
        let bodyLengths = ObservedBox<[Int]>([], changes: changes)
        let closed = ObservedBox(0, changes: changes)
        let held = HeldAnswers()
        let channel = try await ServerBootstrap(group: TestServer.eventLoopGroup)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                let index = connections.withLockedValue { count -> Int in
                    defer { count += 1 }
                    return count
                }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        ScriptedConnectionHandler(
                            connection: index, script: script, heads: heads, bodyLengths: bodyLengths, held: held, closed: closed))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        return ScriptedHTTPServer(channel: channel, connections: connections, heads: heads, bodyLengths: bodyLengths, closed: closed)
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
    let heads: ObservedBox<[String]>
    let bodyLengths: ObservedBox<[Int]>
    let held: HeldAnswers
    let closed: ObservedBox<Int>
    var buffer = ByteBuffer()
    /// Set once an action stopped reading requests: what arrives afterwards is dropped.
    var done = false
    var requests = 0
    /// The request whose body is being read: its length left, and what to do once it is in.
    var body: (remaining: Int, length: Int, action: ScriptedHTTPServer.Action?)?

    init(
        connection: Int, script: @escaping ScriptedHTTPServer.Script, heads: ObservedBox<[String]>, bodyLengths: ObservedBox<[Int]>,
        held: HeldAnswers, closed: ObservedBox<Int>
    ) {
        self.held = held
        self.closed = closed
        self.connection = connection
        self.script = script
        self.heads = heads
        self.bodyLengths = bodyLengths
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.closed.withLockedValue { $0 += 1 }
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !self.done else { return }
        var incoming = self.unwrapInboundIn(data)
        self.buffer.writeBuffer(&incoming)
        while true {
            if let body = self.body {
                let taken = min(body.remaining, self.buffer.readableBytes)
                self.buffer.moveReaderIndex(forwardBy: taken)
                guard taken == body.remaining else {
                    self.body = (body.remaining - taken, body.length, body.action)
                    return
                }
                self.body = nil
                self.bodyLengths.withLockedValue { $0.append(body.length) }
                if let action = body.action, !self.perform(action, context: context) { return }
                continue
            }
            guard let text = self.buffer.getString(at: self.buffer.readerIndex, length: self.buffer.readableBytes),
                let end = text.range(of: "\r\n\r\n")
            else { return }
            let head = String(text[..<end.lowerBound])
            let length = head.split(separator: "\r\n")
                .first { $0.lowercased().hasPrefix("content-length:") }
                .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
            self.buffer.moveReaderIndex(forwardBy: text[..<end.upperBound].utf8.count)
            let received = self.heads.withLockedValue { heads -> Int in
                heads.append(head)
                return heads.count
            }
            self.held.received(count: received)
            let action = self.script(self.connection, self.requests, head)
            self.requests += 1
            if case .respondBeforeBody(let bytes) = action {
                context.writeAndFlush(self.wrapOutboundOut(ByteBuffer(string: bytes)), promise: nil)
                self.body = (length, length, nil)
            } else if case .respondWithoutReadingBody(let bytes) = action {
                self.done = true
                self.buffer.clear()
                let context = NIOLoopBound(context, eventLoop: context.eventLoop)
                context.value.writeAndFlush(self.wrapOutboundOut(ByteBuffer(string: bytes))).whenComplete { _ in
                    context.value.close(mode: .output, promise: nil)
                }
                return
            } else {
                self.body = (length, length, action)
            }
        }
    }

    /// Does `action`; false when it closed the connection.
    private func perform(_ action: ScriptedHTTPServer.Action, context: ChannelHandlerContext) -> Bool {
        switch action {
        case .respondBytes(let bytes):
            context.writeAndFlush(self.wrapOutboundOut(ByteBuffer(bytes: bytes)), promise: nil)
            return true
        case .respondBytesThenClose(let bytes):
            let context = NIOLoopBound(context, eventLoop: context.eventLoop)
            context.value.writeAndFlush(self.wrapOutboundOut(ByteBuffer(bytes: bytes))).whenComplete { _ in context.value.close(promise: nil) }
            return false
        case .respond(let bytes, let thenClose):
            let written = context.writeAndFlush(self.wrapOutboundOut(ByteBuffer(string: bytes)))
            if thenClose {
                let context = NIOLoopBound(context, eventLoop: context.eventLoop)
                written.whenComplete { _ in context.value.close(promise: nil) }
                return false
            }
            return true
        case .close:
            context.close(promise: nil)
            return false
        case .shutdownOutput:
            context.close(mode: .output, promise: nil)
            return false
        case .reset(let partial):
            if !partial.isEmpty { context.writeAndFlush(self.wrapOutboundOut(ByteBuffer(string: partial)), promise: nil) }
            resetConnection(context.channel)
            return false
        case .respondBeforeBody(let bytes):
            context.writeAndFlush(self.wrapOutboundOut(ByteBuffer(string: bytes)), promise: nil)
            return true
        case .respondWhenOpen(let bytes, let gate):
            let channel = context.channel
            gate.whenOpen { channel.writeAndFlush(ByteBuffer(string: bytes), promise: nil) }
            return true
        case .respondInTwoParts(let first, let then, let gate):
            context.writeAndFlush(self.wrapOutboundOut(ByteBuffer(bytes: first)), promise: nil)
            let channel = context.channel
            gate.whenOpen { channel.writeAndFlush(ByteBuffer(bytes: then), promise: nil) }
            return true
        case .respondWithoutReadingBody:
            return false  // done as the head came in
        case .respondAfter(let bytes, let delay):
            let channel = context.channel
            context.eventLoop.scheduleTask(in: delay) { channel.writeAndFlush(ByteBuffer(string: bytes), promise: nil) }
            return true
        case .respondThenAfter(let first, let then, let delay):
            context.writeAndFlush(self.wrapOutboundOut(ByteBuffer(string: first)), promise: nil)
            let channel = context.channel
            context.eventLoop.scheduleTask(in: delay) { channel.writeAndFlush(ByteBuffer(string: then), promise: nil) }
            return true
        case .hold:
            return true
        case .respondOnceReceived(let bytes, let requests):
            let channel = context.channel
            self.held.whenReceived(requests) {
                channel.writeAndFlush(ByteBuffer(string: bytes), promise: nil)
            }
            return true
        }
    }
}

/// Answers waiting for the server to have received enough requests.
private final class HeldAnswers: Sendable {
    private let state = NIOLockedValueBox<(accepted: Int, waiting: [(count: Int, send: @Sendable () -> Void)])>((0, []))

    func received(count: Int) {
        let ready = self.state.withLockedValue { state -> [@Sendable () -> Void] in
            state.accepted = max(state.accepted, count)
            let ready = state.waiting.filter { $0.count <= state.accepted }.map(\.send)
            state.waiting.removeAll { $0.count <= state.accepted }
            return ready
        }
        for send in ready { send() }
    }

    func whenReceived(_ count: Int, _ send: @escaping @Sendable () -> Void) {
        let now = self.state.withLockedValue { state -> Bool in
            if state.accepted >= count { return true }
            state.waiting.append((count, send))
            return false
        }
        if now { send() }
    }
}
