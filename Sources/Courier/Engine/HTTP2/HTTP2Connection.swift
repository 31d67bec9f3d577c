import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOHTTPCompression
import Synchronization

/// One of ``ConnectionPool``'s HTTP/2 connections (ALPN chose `h2`): a TLS channel with swift-nio-http2's
/// handler and multiplexer, each hop on a stream of its own.
///
/// The pool counts the streams open on it against the server's `SETTINGS_MAX_CONCURRENT_STREAMS`
/// (``ConnectionPool``'s host state, under its lock); the connection opens a stream for each hop the
/// pool hands it. Each stream's pipeline is swift-nio-http2's HTTP/1 codec, the decompressor when
/// asked, and an ``HTTP1ConnectionHandler`` in stream mode: the same request writer, body pump,
/// pause and resume as on an HTTP/1.1 connection, and flow control as back-pressure (a paused
/// stream does not read, so its window is not reopened and the server stops sending).
final class HTTP2Connection: HopCarrier, Sendable {
    let channel: any Channel
    let key: ConnectionPool.Key
    let pool: ConnectionPool
    private let multiplexer: NIOHTTP2Handler.StreamMultiplexer
    private let handler: NIOLoopBound<HTTP2ConnectionHandler>
    /// The last stream the server said it will process (GOAWAY), or `Int32.max` before any.
    private let goAwayLastStreamID = Atomic<Int32>(Int32.max)

    /// Made on the channel's loop.
    init(channel: any Channel, key: ConnectionPool.Key, pool: ConnectionPool, multiplexer: NIOHTTP2Handler.StreamMultiplexer, handler: HTTP2ConnectionHandler) {
        self.channel = channel
        self.key = key
        self.pool = pool
        self.multiplexer = multiplexer
        self.handler = NIOLoopBound(handler, eventLoop: channel.eventLoop)
        pool.liveConnections.add(1, ordering: .relaxed)
    }

    deinit {
        self.pool.liveConnections.subtract(1, ordering: .relaxed)
    }

    /// The server sent GOAWAY naming `lastStreamID`: streams above it were not processed.
    func receivedGoAway(lastStreamID: HTTP2StreamID) {
        self.goAwayLastStreamID.store(Int32(lastStreamID), ordering: .relaxed)
    }

    /// Whether the server said, by GOAWAY, that it did not process `streamID`.
    func wasNotProcessed(_ streamID: HTTP2StreamID) -> Bool {
        Int32(streamID) > self.goAwayLastStreamID.load(ordering: .relaxed)
    }

    /// Opens a stream for `hop` (the pool counted it) and starts the hop on it.
    func run(_ hop: HTTP1Hop) {
        let decompression = self.pool.settings.decompression
        let connection = self
        self.multiplexer.createStreamChannel { stream in
            stream.eventLoop.makeCompletedFuture {
                let pipeline = stream.pipeline.syncOperations
                try pipeline.addHandler(HTTP2FramePayloadToHTTP1ClientCodec(httpProtocol: .https))
                if let decompression {
                    try pipeline.addHandler(NIOHTTPResponseDecompressor(limit: decompression))
                }
                try pipeline.addHandler(HTTP1ConnectionHandler(stream: connection))
            }
        }.whenComplete { result in
            switch result {
            case .success(let stream):
                // Counted by the pool until the stream closes, however it ends.
                stream.closeFuture.whenComplete { _ in connection.pool.streamClosed(on: connection) }
                do {
                    let handler = try stream.pipeline.syncOperations.handler(type: HTTP1ConnectionHandler.self)
                    hop.startsRunning(on: HTTP2StreamCarrier(channel: stream, handler: NIOLoopBound(handler, eventLoop: stream.eventLoop)))
                    handler.run(hop)
                } catch {
                    stream.close(promise: nil)
                    hop.end(.failure(error))
                }
            case .failure:
                // The connection closed or went away before the stream opened: nothing was sent.
                connection.pool.streamClosed(on: connection)
                hop.restartElsewhere()
            }
        }
    }

    /// A hop cancelled while its stream opens: the stream's handler sees the cancellation when
    /// the hop starts there.
    func cancel(_ hop: HTTP1Hop) {}

    /// Starts counting idle time (no stream open).
    func becameIdle() {
        self.onLoop { $0.becameIdle() }
    }

    /// Stops counting idle time (a stream opens).
    func becameBusy() {
        self.onLoop { $0.becameBusy() }
    }

    private func onLoop(_ body: @escaping @Sendable (HTTP2ConnectionHandler) -> Void) {
        if self.channel.eventLoop.inEventLoop {
            body(self.handler.value)
        } else {
            let handler = self.handler
            self.channel.eventLoop.execute { body(handler.value) }
        }
    }
}

/// The stream of an ``HTTP2Connection`` a hop runs on.
struct HTTP2StreamCarrier: HopCarrier {
    let channel: any Channel
    let handler: NIOLoopBound<HTTP1ConnectionHandler>

    func cancel(_ hop: HTTP1Hop) {
        let handler = self.handler
        if self.channel.eventLoop.inEventLoop {
            handler.value.cancel(hop)
        } else {
            self.channel.eventLoop.execute { handler.value.cancel(hop) }
        }
    }
}

/// The last handler of an ``HTTP2Connection``'s own pipeline: it reads the connection's frames
/// (SETTINGS, GOAWAY) and tells the pool, and closes the connection after the idle timeout with no
/// stream open.
final class HTTP2ConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame

    /// Set by the pool once the connection exists (``attach(_:)``); dropped when the pipeline lets
    /// go of the handler.
    private(set) var connection: HTTP2Connection?
    private var context: ChannelHandlerContext?
    /// Frames that arrived before the pool attached the connection (the server's SETTINGS may come
    /// right after the handshake), replayed by ``attach(_:)``.
    private var early: [HTTP2Frame] = []
    private var idleSince: NIODeadline?
    private var idleCheck: Scheduled<Void>?

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        self.connection = nil
    }

    /// The pool made `connection` and counts it: frames that came before go to it now. On the
    /// connection's loop.
    func attach(_ connection: HTTP2Connection) {
        self.connection = connection
        let early = self.early
        self.early = []
        for frame in early { self.handle(frame, on: connection) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = self.unwrapInboundIn(data)
        guard let connection else {
            self.early.append(frame)
            return
        }
        self.handle(frame, on: connection)
    }

    private func handle(_ frame: HTTP2Frame, on connection: HTTP2Connection) {
        switch frame.payload {
        case .settings(.settings(let settings)):
            let maximum = settings.last { $0.parameter == .maxConcurrentStreams }?.value
            connection.pool.http2Settings(of: connection, maximumStreams: maximum)
        case .goAway(let lastStreamID, _, _):
            connection.receivedGoAway(lastStreamID: lastStreamID)
            connection.pool.http2GoingAway(connection)
        default:
            break
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A connection error: every stream on it fails with it; the connection closes.
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.idleCheck?.cancel()
        self.idleCheck = nil
        context.fireChannelInactive()
    }

    // MARK: Idle connections

    func becameIdle() {
        self.idleSince = .now()
        guard self.idleCheck == nil, let context, let connection else { return }
        self.scheduleIdleCheck(in: connection.pool.settings.idleTimeout, context: context)
    }

    func becameBusy() {
        self.idleSince = nil
    }

    private func scheduleIdleCheck(in delay: TimeAmount, context: ChannelHandlerContext) {
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        self.idleCheck = context.eventLoop.scheduleTask(in: delay) {
            loopBound.value.checkIdle()
        }
    }

    private func checkIdle() {
        self.idleCheck = nil
        guard let idleSince = self.idleSince, let context, let connection else { return }
        let remaining = idleSince + connection.pool.settings.idleTimeout - .now()
        if remaining > .zero {
            self.scheduleIdleCheck(in: remaining, context: context)
        } else if connection.pool.removeIdleHTTP2(connection) {
            context.close(promise: nil)
        }
    }
}
