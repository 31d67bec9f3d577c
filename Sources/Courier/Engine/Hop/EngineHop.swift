import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import Synchronization

/// One hop of an exchange (a request and its response) on Courier's own connections, whatever
/// they speak: it waits in the ``ConnectionPool`` for an HTTP/1.1 connection or an HTTP/2
/// stream, then runs on it, and ends exactly once.
///
/// The pool never takes the hop's lock under its own: the hop's phase is recorded by whoever
/// runs it or queues it, after the pool decided.
final class EngineHop: NIOHopTask, Sendable {
    enum Phase {
        /// Made, not yet handed to the pool.
        case created
        /// Queued in the pool for a connection to `key` (the hop's own, or the same origin's over
        /// HTTP/1.1 only: ``ConnectionPoolStateMachine/destination(of:http1Only:)``).
        case waiting(ConnectionPool.Key)
        /// Handed to a connection, or to a stream of an HTTP/2 connection.
        case running(any HopCarrier)
        /// Ended; `end` was called.
        case finished
    }

    struct State {
        /// Where the hop is; set through ``enter(_:)``.
        private(set) var phase = Phase.created
        /// Whether the phase is ``Phase/created``, and ``Phase/finished``: asked without reading
        /// `phase`, whose every read (`if case .finished = state.phase`, or a property of the
        /// phase) copied it, its carrier with it, a retain each time.
        private(set) var isCreated = true
        private(set) var isFinished = false

        mutating func enter(_ phase: Phase) {
            switch phase {
            case .created: (self.isCreated, self.isFinished) = (true, false)
            case .waiting, .running: (self.isCreated, self.isFinished) = (false, false)
            case .finished: (self.isCreated, self.isFinished) = (false, true)
            }
            self.phase = phase
        }

        /// Why the hop was cancelled, when it was; whoever holds the hop next ends it with this.
        var cancellation: (any Error)?
        /// The request's body for the next send: resolved when the hop is made (off the event
        /// loops: a file's size is read there) and again for each resend.
        var body: OutgoingBody
        /// How many times the hop was handed a connection that was already closed (nothing sent).
        var restarts = 0
        /// How many times the hop was sent again after its connection closed under it
        /// (``ResendRule``).
        var resends = 0
        /// How many times the hop was sent again because an HTTP/2 server said it did not process
        /// it (``ResendRule/maximumUnprocessedResends``).
        var unprocessedResends = 0
        /// Whether the hop was sent again because a GOAWAY that named an error left it
        /// unprocessed (``ResendRule/Closure/notProcessedWithError``: once at most).
        var resentAfterGoAwayError = false
        /// The hop goes only on a new connection: the last one it was given closed under it or
        /// turned out closed, and any other kept-alive one may be closing too, idle or just given
        /// back after a response (a server may close a connection right after a response that
        /// said keep-alive).
        var needsNewConnection = false
        /// The hop goes over HTTP/1.1 only (ALPN offering nothing else): the HTTP/2 server
        /// answered HTTP_1_1_REQUIRED, or the request's header block does not fit in one of its
        /// frames (``ResendRule/Reason``).
        var http1Only = false
        /// The hop went over HTTP/1.1 because its header block does not fit in one of the HTTP/2
        /// server's frames: a failure there says so (``HTTP1FallbackFailure``), since a server
        /// that speaks only HTTP/2 answers it with what is not HTTP/1.1.
        var headTooLargeForHTTP2 = false
        /// What the connection recorded of the hop's last send (``TransactionMetrics``).
        var metrics: TransactionMetrics?
        /// The server answered `Expect: 100-continue` with 417: the hop is sent again without it.
        var withoutExpectation = false
    }

    /// How many times a hop may be handed on when the connection it was given is already closed.
    static let maximumRestarts = 3

    let exchange: NIOExchange
    let request: Request
    let pool: ConnectionPool
    let key: ConnectionPool.Key
    let state: Mutex<State>
    /// When the hop was made: its transaction's ``TransactionMetrics/fetchStart``.
    let fetchStart: ContinuousClock.Instant

    /// - Throws: ``CourierError`` when the body cannot be sent (an unreadable file), or a field
    ///   value holds a control character (``Request/checkFieldValues()``).
    init(exchange: NIOExchange, request: Request, pool: ConnectionPool, key: ConnectionPool.Key) throws(CourierError) {
        try request.checkFieldValues()
        self.exchange = exchange
        self.request = request
        self.state = Mutex(State(body: try OutgoingBody(request)))
        self.pool = pool
        self.key = key
        self.fetchStart = .now
    }

    /// Keeps what the connection recorded of the hop's send, for the exchange when the hop ends.
    func record(_ metrics: TransactionMetrics) {
        self.state.withLockedValue { $0.metrics = metrics }
    }

    /// Keeps the times of a connection that failed to open while the hop waited for it (its
    /// lookup, connect and TLS handshake, as far as they went) for the hop's transaction, which
    /// then fails with it; not over what a send of the hop recorded already (a resend's connect).
    func recordFailedSetup(_ setup: ConnectionEstablishment) {
        var metrics = self.bareMetrics()
        setup.applyFailure(to: &metrics)
        self.state.withLockedValue { state in
            if state.metrics == nil { state.metrics = metrics }
        }
    }

    /// The body to send now.
    var body: OutgoingBody { self.state.withLockedValue { $0.body } }

    /// Readies the hop to be sent again for `reason`: after its connection closed under it, or
    /// an HTTP/2 server said it did not process it, a fresh body and a new connection (counted
    /// against the bound of each); over HTTP/1.1 only when the HTTP/2 server wanted it so (a fresh
    /// body) or its header block does not fit in an HTTP/2 frame (the body as it is: nothing of it
    /// was read). Called off the pool's lock.
    /// - Throws: ``CourierError`` when the body cannot be made again (its file is gone).
    func prepareResend(_ reason: ResendRule.Reason) throws(CourierError) {
        let body = reason == .headTooLargeForHTTP2 ? nil : try OutgoingBody(self.request)
        self.state.withLockedValue { state in
            if let body { state.body = body }
            switch reason {
            case .closed:
                state.resends += 1
                state.needsNewConnection = true
            case .notProcessed:
                state.unprocessedResends += 1
                state.needsNewConnection = true
            case .notProcessedWithError:
                state.unprocessedResends += 1
                state.resentAfterGoAwayError = true
                state.needsNewConnection = true
            case .http1Required, .headTooLargeForHTTP2:
                // Another key's connections, none of which failed it.
                state.http1Only = true
                state.needsNewConnection = false
                state.headTooLargeForHTTP2 = reason == .headTooLargeForHTTP2
            }
            state.enter(.created)
        }
    }

    /// Readies the hop for another connection after the one it was handed turned out closed before
    /// anything was written. Returns false when that happened too often already.
    func prepareRestart() -> Bool {
        self.state.withLockedValue { state in
            guard state.restarts < Self.maximumRestarts else { return false }
            state.restarts += 1
            state.enter(.created)
            state.needsNewConnection = true
            return true
        }
    }

    /// Sends the hop on another connection after the one it was handed closed before anything
    /// was written, or fails it when that happened too often already.
    func restartElsewhere() {
        if self.prepareRestart() {
            self.pool.execute(self, preferredLoop: self.exchange.eventLoop)
        } else {
            self.end(.failure(ConnectionPoolError.closedBeforeAnswering(attempts: Self.maximumRestarts + 1)))
        }
    }

    /// Records that the hop now runs on `carrier`, unless it was cancelled or ended meanwhile
    /// (then whoever runs it sees the cancellation). Called by the pool as it hands the hop to a
    /// connection, and on an HTTP/2 connection's loop as its stream opens.
    func startsRunning(on carrier: any HopCarrier) {
        self.state.withLockedValue { state in
            if state.isFinished { return }
            if state.cancellation == nil { state.enter(.running(carrier)) }
        }
    }

    /// Records that the hop waits in the pool's queue for `key`, unless a connection took it or
    /// it ended meanwhile. Returns its cancellation if it was cancelled before it could be
    /// recorded (no cancellation saw it waiting: the caller takes it out of the queue). Called by
    /// the pool after it queued the hop, off its lock.
    func markWaiting(for key: ConnectionPool.Key) -> (any Error)? {
        self.state.withLockedValue { state in
            guard state.isCreated else { return nil }
            if let cancellation = state.cancellation { return cancellation }
            state.enter(.waiting(key))
            return nil
        }
    }

    /// The reason the hop was cancelled, if it was.
    var cancellation: (any Error)? {
        self.state.withLockedValue { $0.cancellation }
    }

    /// Ends the hop, once; later calls do nothing. Returns whether this call ended it.
    @discardableResult
    func end(_ result: Result<Void, any Error>) -> Bool {
        let (first, metrics, headTooLargeForHTTP2) = self.state.withLockedValue { state -> (Bool, TransactionMetrics?, Bool) in
            if state.isFinished { return (false, nil, false) }
            state.enter(.finished)
            return (true, state.metrics.take(), state.headTooLargeForHTTP2)
        }
        if first {
            var result = result
            if headTooLargeForHTTP2, case .failure(let error) = result {
                result = .failure(HTTP1FallbackFailure(underlying: error))
            }
            self.exchange.hopCompleted(result, metrics: metrics ?? self.bareMetrics())
        }
        return first
    }

    /// The metrics of a hop that never ran on a connection: it still began, so its transaction
    /// has a start, and its route (a refused tunnel went through a proxy all the same). Made only
    /// for such a hop (their storage is an allocation).
    private func bareMetrics() -> TransactionMetrics {
        var bare = TransactionMetrics(request: self.request, fetchStart: self.fetchStart)
        bare.isProxyConnection = self.key.route != .direct
        return bare
    }

    // MARK: NIOHopTask

    /// Cancels the hop from any thread: a waiting hop leaves the pool's queue and ends now; a
    /// running one is ended by its connection, which then closes (its response is unfinished).
    func fail(reason error: any Error) {
        let phase = self.state.withLockedValue { state -> Phase in
            if state.cancellation == nil { state.cancellation = error }
            return state.phase
        }
        switch phase {
        case .created, .finished:
            // The pool checks the cancellation before it decides, and again after it queued a
            // created hop (``markWaiting(for:)``); a connection checks it as the hop starts.
            return
        case .waiting(let key):
            if self.pool.removeWaiter(self, key: key) { self.end(.failure(error)) }
        case .running(let connection):
            connection.cancel(self)
        }
    }
}

/// What carries a running ``EngineHop``: an HTTP/1.1 connection, an HTTP/2 connection opening a
/// stream for it, or that stream.
protocol HopCarrier: Sendable {
    /// Ends `hop` with its cancellation if it is running here (from any thread).
    func cancel(_ hop: EngineHop)
}

/// What an exchange keeps of the hop under way, to cancel it (an ``EngineHop``).
protocol NIOHopTask: Sendable {
    /// Ends the hop with `reason` as its error.
    func fail(reason: any Error)
}
