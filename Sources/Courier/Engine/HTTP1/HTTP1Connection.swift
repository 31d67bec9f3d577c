import NIOCore
import Synchronization

/// One of ``ConnectionPool``'s connections: a channel whose pipeline ends in an
/// ``HopHandler``, which carries one hop at a time.
final class HTTP1Connection: HopCarrier, Sendable {
    /// The connection's name in the pool (``PoolConnectionID/unpooled`` for one the pool did not open).
    let id: PoolConnectionID
    let channel: any Channel
    let key: ConnectionPool.Key
    let pool: ConnectionPool
    private let handler: NIOLoopBound<HopHandler>
    /// Nanoseconds of `NIODeadline` until which the server promised to keep the connection while
    /// idle (`Keep-Alive: timeout`); 0 when it promised nothing. Read by the pool as it gives the
    /// connection back (``ConnectionPool/release(_:)``).
    private let reusableUntilNanoseconds = Atomic<UInt64>(0)

    /// When the server's promise to keep the idle connection runs out, if it made one; the pool
    /// does not hand out a connection past it. Set on the connection's loop as it becomes idle.
    var reusableUntil: NIODeadline? {
        get {
            let value = self.reusableUntilNanoseconds.load(ordering: .relaxed)
            return value == 0 ? nil : .uptimeNanoseconds(value)
        }
        set { self.reusableUntilNanoseconds.store(newValue?.uptimeNanoseconds ?? 0, ordering: .relaxed) }
    }

    /// How the connection was set up, for the metrics of the transaction it was opened for.
    let establishment: ConnectionEstablishment

    /// Made on the channel's loop.
    init(
        id: PoolConnectionID = .unpooled, channel: any Channel, key: ConnectionPool.Key, pool: ConnectionPool, handler: HopHandler,
        establishment: ConnectionEstablishment
    ) {
        self.id = id
        self.channel = channel
        self.key = key
        self.pool = pool
        self.establishment = establishment
        self.handler = NIOLoopBound(handler, eventLoop: channel.eventLoop)
        pool.liveConnections.add(1, ordering: .relaxed)
    }

    deinit {
        self.pool.liveConnections.subtract(1, ordering: .relaxed)
    }

    /// Starts `hop` (handed to this connection by the pool) on the connection's loop;
    /// `carriesSetup` when the pool handed the connection to it as it opened.
    func run(_ hop: EngineHop, carriesSetup: Bool = false) {
        // Two closures, each capturing the hop alone: one capturing the flag too needs a box of
        // its own, a malloc for every request.
        if carriesSetup {
            self.onLoop { $0.run(hop, carriesSetup: true) }
        } else {
            self.onLoop { $0.run(hop, carriesSetup: false) }
        }
    }

    /// Ends `hop` with its cancellation if it is the one running, closing the connection.
    func cancel(_ hop: EngineHop) {
        self.onLoop { $0.cancel(hop) }
    }

    /// Starts counting idle time (a new connection that nobody waited for), and closes the
    /// connection on any byte that comes before a request, as after a response (it was not
    /// watched so: a stray answer in part waited in the decoder for the next request).
    func startIdleClock() {
        self.onLoop { $0.becameIdleBeforeAnyHop() }
    }

    private func onLoop(_ body: @escaping @Sendable (HopHandler) -> Void) {
        if self.channel.eventLoop.inEventLoop {
            body(self.handler.value)
        } else {
            let handler = self.handler
            self.channel.eventLoop.execute { body(handler.value) }
        }
    }
}
