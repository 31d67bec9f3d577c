import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTP2
import Synchronization

/// One of ``ConnectionPool``'s HTTP/2 connections (ALPN chose `h2`): a TLS channel with swift-nio-http2's
/// handler in its frame mode, each hop on a stream of its own.
///
/// The pool counts the streams open on it against the server's `SETTINGS_MAX_CONCURRENT_STREAMS`
/// (``ConnectionPoolStateMachine``, under the pool's lock); the connection opens a stream for each
/// hop the pool hands it. A stream is no channel: an ``HTTP2Stream`` in the connection's handler turns the
/// hop's request into frames and the server's frames into response parts (decompressed when
/// asked), and a ``HopHandler`` in stream mode drives the hop: the same request
/// writer, body pump, pause and resume as on an HTTP/1.1 connection, and flow control as
/// back-pressure (a paused hop does not read, so its stream's window is not reopened and the
/// server stops sending).
///
/// The connection's own frames, idleness and PING are its ``HTTP2ConnectionHandler``'s (deciding
/// through an ``HTTP2ConnectionStateMachine``), which reports to the pool through this object
/// (``HTTP2ConnectionDelegate``).
final class HTTP2Connection: HopCarrier, Sendable {
    /// The connection's name in the pool (``PoolConnectionID/unpooled`` for one the pool did not open).
    let id: PoolConnectionID
    let channel: any Channel
    let key: ConnectionPool.Key
    let pool: ConnectionPool
    private let handler: NIOLoopBound<HTTP2ConnectionHandler>
    /// The last stream the server said it will process (GOAWAY), or `Int32.max` before any.
    private let goAwayLastStreamID = Atomic<Int32>(Int32.max)
    private let failure = NIOLockedValueBox<(any Error)?>(nil)

    /// How the connection was set up, for the metrics of the stream it was opened for.
    let establishment: ConnectionEstablishment
    /// How many streams the connection opened: a stream after the first is on a reused
    /// connection (``HopStateMachine``'s resend rule).
    private let streamsOpened = Atomic<Int>(0)

    /// Made on the channel's loop.
    init(
        id: PoolConnectionID = .unpooled, channel: any Channel, key: ConnectionPool.Key, pool: ConnectionPool,
        handler: HTTP2ConnectionHandler, establishment: ConnectionEstablishment
    ) {
        self.id = id
        self.establishment = establishment
        self.channel = channel
        self.key = key
        self.pool = pool
        self.handler = NIOLoopBound(handler, eventLoop: channel.eventLoop)
        pool.liveConnections.add(1, ordering: .relaxed)
    }

    deinit {
        self.pool.liveConnections.subtract(1, ordering: .relaxed)
    }

    /// The HTTP/2 error (a protocol error, say) that closed the connection, if one did: what its
    /// streams, which close without a reason of their own, fail with.
    var connectionError: (any Error)? {
        self.failure.withLockedValue { $0 }
    }

    /// The first error that closed the connection, whatever it was (a TLS alert that came after
    /// the handshake, as a TLS 1.3 server's refusal of the client's certificate does): why a
    /// connection that closed before the server's SETTINGS failed to open. On the connection's
    /// loop (its close's callbacks run there).
    var closingError: (any Error)? {
        self.handler.value.closingError
    }

    /// The server's first GOAWAY that named an error, if one came. On the connection's loop.
    var serverGoAway: HTTP2GoAwayRefusal? {
        self.handler.value.serverGoAway
    }

    /// Whether the server said, by GOAWAY, that it did not process `streamID`.
    /// The last stream the server's GOAWAY said it processes (`Int32.max` before any).
    var lastStreamIDProcessed: Int32 { self.goAwayLastStreamID.load(ordering: .relaxed) }

    func wasNotProcessed(_ streamID: HTTP2StreamID) -> Bool {
        Int32(streamID) > self.goAwayLastStreamID.load(ordering: .relaxed)
    }

    /// The code of the RST_STREAM Courier's side sent for `streamID`, if it recently reset it
    /// (``HTTP2SentFrames``). On the connection's loop (a stream's).
    func resetSent(for streamID: HTTP2StreamID) -> NIOHTTP2.HTTP2ErrorCode? {
        self.handler.value.sentFrames?.sent.reset(of: streamID)
    }

    /// Opens a stream for `hop` (the pool counted it) and starts the hop on it.
    ///
    /// Runs on the connection's event loop: called from elsewhere, it makes one hop there, in
    /// which `becomingBusy` (the connection's first open stream) stops the idle timer too. The
    /// stream is a few fields in the connection's handler (``HTTP2Stream``), not a channel; the
    /// requests of streams opened by one batch of the loop's tasks leave in one flush
    /// (``HTTP2FlushCoalescer``). `carriesSetup`: the first stream the server's first SETTINGS
    /// let open (its transaction may report the connection's setup).
    func run(_ hop: EngineHop, becomingBusy: Bool = false, carriesSetup: Bool = false) {
        guard self.channel.eventLoop.inEventLoop else {
            self.channel.eventLoop.execute { self.run(hop, becomingBusy: becomingBusy, carriesSetup: carriesSetup) }
            return
        }
        let handler = self.handler.value
        if becomingBusy { handler.becameBusy() }
        guard let stream = handler.makeStream(on: self, decompressionRatio: self.pool.settings.decompressionRatio) else {
            // The connection closed before the stream opened: nothing was sent. The pool stops
            // handing it out first, or the hop would come straight back to it.
            self.pool.http2ConnectionUnusable(self)
            self.pool.streamClosed(on: self)
            hop.restartElsewhere()
            return
        }
        let firstStream = self.streamsOpened.wrappingAdd(1, ordering: .relaxed).oldValue == 0
        let hopHandler = HopHandler(stream: self, carrying: stream, firstStream: firstStream)
        stream.hopHandler = hopHandler
        hop.startsRunning(on: HTTP2StreamCarrier(handler: NIOLoopBound(hopHandler, eventLoop: self.channel.eventLoop)))
        hopHandler.run(hop, carriesSetup: carriesSetup)
    }

    /// A hop cancelled while its stream opens: the stream's handler sees the cancellation when
    /// the hop starts there.
    func cancel(_ hop: EngineHop) {}

    /// Starts counting idle time (no stream open).
    func becameIdle() {
        self.onLoop { $0.becameIdle() }
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

/// The stream of an ``HTTP2Connection`` a hop runs on: its handler, on the connection's loop.
///
/// No more than the loop-bound handler (three words), so that the hop's state holds it inline
/// (`any HopCarrier`) instead of in a box allocated for every stream.
struct HTTP2StreamCarrier: HopCarrier {
    let handler: NIOLoopBound<HopHandler>

    func cancel(_ hop: EngineHop) {
        let handler = self.handler
        if handler.eventLoop.inEventLoop {
            handler.value.cancel(hop)
        } else {
            handler.eventLoop.execute { handler.value.cancel(hop) }
        }
    }
}

extension HTTP2Connection: HTTP2ConnectionDelegate {
    func http2ReceivedSettings(maximumStreams: Int?) {
        self.pool.http2Settings(of: self, maximumStreams: maximumStreams)
    }

    func http2GoingAway(lastStreamID: HTTP2StreamID) {
        self.goAwayLastStreamID.store(Int32(lastStreamID), ordering: .relaxed)
        // On the loop: the handler's machine kept whether a GOAWAY named an error.
        self.pool.http2GoingAway(self, lastStreamID: Int(lastStreamID), namedAnError: self.serverGoAway != nil)
    }

    func http2LastStreamIDLowered(to lastStreamID: HTTP2StreamID) {
        self.goAwayLastStreamID.store(Int32(lastStreamID), ordering: .relaxed)
        self.pool.http2LastStreamIDLowered(on: self, to: Int(lastStreamID), namedAnError: self.serverGoAway != nil)
    }

    func http2IdleTimeoutReached() -> Bool {
        self.pool.removeIdleHTTP2(self)
    }

    func http2ConnectionFailed(_ error: any Error) {
        // HTTP/2's own errors only (and the header block swift-nio-http2 could not decode, which
        // it reports as one): a reset or a TLS close stays "closed" for the resend rule.
        guard error is any NIOHTTP2Error || error is HTTP2HeaderBlockUndecodable || error is HTTP2ServerEnabledPush else { return }
        self.failure.withLockedValue { $0 = $0 ?? error }
    }

    func http2WillClose(_ reason: HTTP2ConnectionStateMachine.CloseReason) {
        self.pool.logger?.debug("courier: closing HTTP/2 connection", metadata: ["origin": "\(self.key)", "reason": "\(reason)"])
        self.pool.http2ConnectionUnusable(self)
    }

    func http2ConnectionUnusable() {
        self.pool.http2ConnectionUnusable(self)
    }
}
