import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A loopback HTTP/1.1 server that misbehaves on demand, byte for byte, for testing how a client
/// survives servers that reset, truncate, stall or lie.
///
/// Each request names its fault in its path, `/fault/{name}` (see ``Fault``); everything after
/// the name (a query, say `?id=7`) is the caller's. The server reads each request's head and any
/// `Content-Length` body, then acts. Connections are kept alive unless the fault ends them, so
/// faults also meet reused connections.
///
/// ```swift
/// let server = try await FaultServer.start()
/// defer { Task { try await server.shutdown() } }
/// let url = server.url(for: .truncatedBody)   // http://127.0.0.1:PORT/fault/truncatedBody
/// ```
public final class FaultServer: Sendable {
    /// What the server does with a request.
    public enum Fault: String, CaseIterable, Sendable, Hashable {
        /// `200 OK`, a 2,000-byte body, the connection kept.
        case none
        /// Resets the connection (RST) without answering.
        case resetBeforeHead
        /// Writes half a status line, then resets the connection.
        case resetDuringHead
        /// Writes the head and part of the body, then resets the connection.
        case resetAfterHead
        /// Declares `Content-Length: 2000`, sends 1,000 bytes, then closes the connection (FIN).
        case truncatedBody
        /// A chunked body whose second chunk size is not hexadecimal.
        case malformedBody
        /// `100 Continue` and `103 Early Hints` before a `200 OK`.
        case informational
        /// A 2,000-byte body dripped in 20 pieces, 10 ms apart.
        case slowDrip
        /// Reads the request and never answers (the client's idle timeout ends it).
        case silence
        /// A head with a 300 KiB header field (larger than a client should accept: Courier reads
        /// 256 KiB, curl 100 to 300 KiB).
        case hugeHeaders
        /// `302 Found` to the same URL, for ever.
        case redirectLoop
        /// `200 OK` kept alive, then the connection closed right after the response, as a server
        /// whose idle timeout is zero does (the next request on it finds it gone).
        case closeAfterResponse
    }

    /// The port the server listens on.
    public let port: Int
    /// `http://127.0.0.1:PORT/`.
    public var baseURL: URL { URL(string: "http://127.0.0.1:\(self.port)/")! }

    private let channel: any Channel
    private let counters: FaultCounters

    private init(channel: any Channel, counters: FaultCounters) {
        self.channel = channel
        self.counters = counters
        self.port = channel.localAddress?.port ?? 0
    }

    /// Starts a server on a free loopback port.
    public static func start() async throws -> FaultServer {
        let counters = FaultCounters()
        let channel = try await ServerBootstrap(group: TestServer.eventLoopGroup)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(.backlog, value: 256)
            .childChannelInitializer { channel in
                counters.connectionOpened()
                channel.closeFuture.whenComplete { _ in counters.connectionClosed() }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(FaultConnectionHandler(counters: counters))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        return FaultServer(channel: channel, counters: counters)
    }

    /// The URL that asks for `fault`, with `query` (without the `?`) if given.
    public func url(for fault: Fault, query: String? = nil) -> URL {
        var string = "http://127.0.0.1:\(self.port)/fault/\(fault.rawValue)"
        if let query { string += "?\(query)" }
        return URL(string: string)!
    }

    /// Connections open now.
    public var openConnectionCount: Int { self.counters.open }
    /// Requests whose head was read, in all.
    public var requestCount: Int { self.counters.requests }

    /// Stops listening; connections still open are closed.
    public func shutdown() async throws {
        try await self.channel.close()
        self.counters.closeAll()
    }
}

/// The server's counts, and its open connections (to close them at shutdown).
private final class FaultCounters: Sendable {
    private let state = NIOLockedValueBox<(open: Int, requests: Int, channels: [ObjectIdentifier: any Channel])>((0, 0, [:]))

    var open: Int { self.state.withLockedValue { $0.open } }
    var requests: Int { self.state.withLockedValue { $0.requests } }

    func connectionOpened() { self.state.withLockedValue { $0.open += 1 } }
    func connectionClosed() { self.state.withLockedValue { $0.open -= 1 } }
    func requestRead() { self.state.withLockedValue { $0.requests += 1 } }

    func track(_ channel: any Channel) {
        self.state.withLockedValue { $0.channels[ObjectIdentifier(channel)] = channel }
    }

    func untrack(_ channel: any Channel) {
        _ = self.state.withLockedValue { $0.channels.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    func closeAll() {
        let channels = self.state.withLockedValue { Array($0.channels.values) }
        for channel in channels { channel.close(promise: nil) }
    }
}

/// One connection: reads request heads (and `Content-Length` bodies) and acts out their faults.
private final class FaultConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let counters: FaultCounters
    private var buffer = ByteBuffer()
    /// Body bytes of the current request still to skip before acting.
    private var bodyRemaining = 0
    private var pending: (fault: FaultServer.Fault, target: String)?
    /// Set once the connection is silent, reset or closing: nothing more is read.
    private var isDone = false

    init(counters: FaultCounters) {
        self.counters = counters
    }

    func channelActive(context: ChannelHandlerContext) {
        self.counters.track(context.channel)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.counters.untrack(context.channel)
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !self.isDone else { return }
        var incoming = self.unwrapInboundIn(data)
        self.buffer.writeBuffer(&incoming)
        while !self.isDone {
            if self.bodyRemaining > 0 {
                let taken = min(self.bodyRemaining, self.buffer.readableBytes)
                self.buffer.moveReaderIndex(forwardBy: taken)
                self.bodyRemaining -= taken
                if self.bodyRemaining > 0 { return }
            }
            if let pending = self.pending {
                self.pending = nil
                self.act(pending.fault, target: pending.target, context: context)
                continue
            }
            guard let head = self.takeHead() else { return }
            self.counters.requestRead()
            self.bodyRemaining = head.contentLength
            self.pending = (FaultServer.Fault(path: head.target) ?? .none, head.target)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    /// The next request head in the buffer: its target and `Content-Length`.
    private func takeHead() -> (target: String, contentLength: Int)? {
        let view = self.buffer.readableBytesView
        guard let end = view.firstRange(of: Array("\r\n\r\n".utf8)) else {
            if self.buffer.readableBytes > 64 * 1024 { self.isDone = true }
            return nil
        }
        let length = end.upperBound - view.startIndex
        let text = self.buffer.readString(length: length) ?? ""
        let lines = text.split(separator: "\r\n")
        let target = lines.first?.split(separator: " ").dropFirst().first.map(String.init) ?? "/"
        let contentLength =
            lines.dropFirst()
            .first { $0.lowercased().hasPrefix("content-length:") }
            .flatMap { Int($0.split(separator: ":", maxSplits: 1)[1].trimmingCharacters(in: .whitespaces)) } ?? 0
        return (target, contentLength)
    }

    private func write(_ string: String, context: ChannelHandlerContext) -> EventLoopFuture<Void> {
        context.writeAndFlush(self.wrapOutboundOut(ByteBuffer(string: string)))
    }

    private static let body = String(repeating: "0123456789", count: 200)

    private func act(_ fault: FaultServer.Fault, target: String, context: ChannelHandlerContext) {
        switch fault {
        case .none:
            _ = self.write("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2000\r\n\r\n\(Self.body)", context: context)
        case .resetBeforeHead:
            self.reset(context: context)
        case .resetDuringHead:
            let channel = context.channel
            self.isDone = true
            self.write("HTTP/1.1 20", context: context).whenComplete { _ in Self.reset(channel) }
        case .resetAfterHead:
            let channel = context.channel
            self.isDone = true
            self.write("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2000\r\n\r\n\(Self.body.prefix(500))", context: context)
                .whenComplete { _ in Self.reset(channel) }
        case .truncatedBody:
            let channel = context.channel
            self.isDone = true
            self.write("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2000\r\n\r\n\(Self.body.prefix(1000))", context: context)
                .whenComplete { _ in channel.close(promise: nil) }
        case .malformedBody:
            let channel = context.channel
            self.isDone = true
            self.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nzz\r\nnot a chunk\r\n0\r\n\r\n", context: context)
                .whenComplete { _ in channel.close(promise: nil) }
        case .informational:
            _ = self.write(
                "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
                    + "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2000\r\n\r\n\(Self.body)", context: context)
        case .slowDrip:
            _ = self.write("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2000\r\n\r\n", context: context)
            Self.drip(Array(Self.body.utf8), piece: 100, every: .milliseconds(10), on: context.channel)
        case .silence:
            self.isDone = true
        case .hugeHeaders:
            let channel = context.channel
            self.isDone = true
            let value = String(repeating: "h", count: 300 * 1024)
            self.write("HTTP/1.1 200 OK\r\nX-Huge: \(value)\r\nContent-Length: 2\r\n\r\nok", context: context)
                .whenComplete { _ in channel.close(promise: nil) }
        case .redirectLoop:
            _ = self.write("HTTP/1.1 302 Found\r\nLocation: \(target)\r\nContent-Length: 0\r\n\r\n", context: context)
        case .closeAfterResponse:
            let channel = context.channel
            self.isDone = true
            self.write("HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nContent-Type: text/plain\r\nContent-Length: 2000\r\n\r\n\(Self.body)", context: context)
                .whenComplete { _ in channel.close(promise: nil) }
        }
    }

    private func reset(context: ChannelHandlerContext) {
        self.isDone = true
        Self.reset(context.channel)
    }

    private static func reset(_ channel: any Channel) {
        resetConnection(channel)
    }

    /// Writes `bytes` in pieces, one every `interval`, on `channel`'s loop.
    private static func drip(_ bytes: [UInt8], piece: Int, every interval: TimeAmount, on channel: any Channel) {
        guard !bytes.isEmpty, channel.isActive else { return }
        channel.eventLoop.scheduleTask(in: interval) {
            channel.writeAndFlush(ByteBuffer(bytes: bytes.prefix(piece)), promise: nil)
            Self.drip(Array(bytes.dropFirst(piece)), piece: piece, every: interval, on: channel)
        }
    }
}

extension FaultServer.Fault {
    /// The fault a request target names (`/fault/{name}…`), or nil.
    init?(path target: String) {
        guard target.hasPrefix("/fault/") else { return nil }
        let name = target.dropFirst("/fault/".count).prefix { $0 != "?" && $0 != "/" }
        self.init(rawValue: String(name))
    }
}

/// Closes `channel` with RST rather than FIN (a zero linger time), below any TLS: the peer sees a
/// reset, with no close_notify.
package func resetConnection(_ channel: any Channel) {
    guard let provider = channel as? any SocketOptionProvider else {
        channel.close(promise: nil)
        return
    }
    provider.setSoLinger(linger(l_onoff: 1, l_linger: 0)).whenComplete { _ in channel.close(promise: nil) }
}
