import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// The default engine, on SwiftNIO.
///
/// Every request goes over Courier's own connections: a pool per engine, at most
/// ``Configuration/maximumConnectionsPerHost`` per host, idle ones closed after
/// ``Configuration/connectionIdleTimeout``. `https` connections use swift-nio-ssl with the security
/// policy evaluating the whole chain in the handshake, and speak HTTP/2 when the server chooses it
/// through ALPN (``Configuration/httpVersion``); a proxy forwards `http` requests or tunnels
/// (CONNECT, SOCKS5) to the origin. A request whose connection the server closed or reset before
/// any byte of the answer (or whose HTTP/2 stream the server refused) is sent again on another
/// connection as Courier's resend rule allows. Responses are decompressed as configured.
///
/// Courier follows redirects itself (so it can ask the task's delegate about each hop) and keeps
/// the idle and whole-transfer deadlines itself (so that a request may set its own
/// ``RequestOptions/timeoutInterval``, a suspended task is not timed out, and the whole-transfer
/// deadline covers the body); they are checked every twentieth of the session's shortest timeout,
/// between 5 and 50 ms.
///
/// The session manager that made the engine owns it; ``shutdown()`` (called by
/// ``SessionManager/invalidate(cancelingTasks:)-7w13y``) closes every connection.
public final class NIOEngine: Engine {
    /// Which policy applies to which host.
    let serverTrust: ServerTrustPolicies
    let configuration: Configuration
    let logger: Logger?
    /// The loops of the event-loop group and how many exchanges each is running: see ``acquireLoop()``.
    let loops: [any EventLoop]
    let exchangesPerLoop: NIOLockedValueBox<[Int]>
    /// This engine's own loop among ``loops``: where its ties go, its watchdog and the pool's
    /// back-off timers run. Engines made one after another on one group (NIO's singleton, for
    /// every session with the default engine) take its loops in turn, so that sessions that
    /// each run one request at a time do not all run on the group's first loop.
    let homeLoop: Int
    private static let made = Atomic<UInt>(0)
    /// Enforces the exchanges' idle deadlines.
    let watchdog: NIOExchangeWatchdog
    /// Courier's connections.
    let pool: ConnectionPool

    /// Makes an engine.
    /// - Parameters:
    ///   - configuration: Timeouts, connection limits, HTTP versions, decompression, proxy.
    ///   - securityPolicy: Which servers to trust.
    ///   - eventLoopGroup: The event loops to run on; NIO's shared singleton by default.
    ///   - logger: Where the engine logs connection-level events (`.debug` and below); none by default.
    public convenience init(
        configuration: Configuration = Configuration(),
        securityPolicy: SecurityPolicy = .default,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger? = nil
    ) {
        self.init(
            configuration: configuration,
            serverTrust: ServerTrustPolicies(default: securityPolicy),
            eventLoopGroup: eventLoopGroup,
            logger: logger
        )
    }

    /// Makes an engine with a security policy per host.
    /// - Parameters:
    ///   - configuration: Timeouts, connection limits, HTTP versions, decompression, proxy.
    ///   - serverTrust: Which policy applies to which host (each evaluated in the TLS handshake).
    ///   - eventLoopGroup: The event loops to run on; NIO's shared singleton by default.
    ///   - logger: Where the engine logs connection-level events (`.debug` and below); none by default.
    public init(
        configuration: Configuration = Configuration(),
        serverTrust: ServerTrustPolicies,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger? = nil
    ) {
        self.configuration = configuration
        self.logger = logger
        let loops = Array(eventLoopGroup.makeIterator())
        let home = Int(NIOEngine.made.wrappingAdd(1, ordering: .relaxed).oldValue % UInt(loops.count))
        self.loops = loops
        self.homeLoop = home
        self.exchangesPerLoop = NIOLockedValueBox(Array(repeating: 0, count: loops.count))
        self.watchdog = NIOExchangeWatchdog(
            eventLoop: loops[home],
            shortestTimeout: min(configuration.requestTimeout, configuration.resourceTimeout)
        )
        self.serverTrust = serverTrust
        let tls = TLSConnector(
            serverTrust: serverTrust,
            applicationProtocols: TLSConnector.ApplicationProtocol.offered(for: configuration.httpVersion),
            handshakeTimeout: ConnectionPool.Settings(configuration).connectTimeout
        )
        // The home loop first: the pool's back-off timers run on its first loop.
        self.pool = ConnectionPool(
            settings: ConnectionPool.Settings(configuration), tls: tls, logger: logger, loops: Array(loops[home...] + loops[..<home]))
        #if DEBUG
        LiveObjectCensus.born(self, .engine, "NIOEngine")
        #endif
    }

    public func execute(_ request: Request, delegate: any ExchangeDelegate) -> any Exchange {
        let exchange = NIOExchange(engine: self, request: request, delegate: delegate)
        delegate.exchangeWillStart(exchange)
        exchange.start()
        return exchange
    }

    /// Picks the loop for a new exchange: the one running the fewest, on a tie the first from
    /// ``homeLoop`` on.
    ///
    /// The pool serves a request from an idle connection on its preferred loop when there is one,
    /// and opens new connections there, so a steady choice keeps each connection's callbacks on
    /// its own loop. Round-robin would move every other sequential request to the loop that does
    /// not own the connection, costing a thread hop for each event.
    func acquireLoop() -> Int {
        self.exchangesPerLoop.withLockedValue { counts in
            var best = self.homeLoop
            for offset in 1..<counts.count {
                let index = (self.homeLoop + offset) % counts.count
                if counts[index] < counts[best] { best = index }
            }
            counts[best] += 1
            return best
        }
    }

    /// The proxy that carries a request to `url` (the pool's route for it), or nil when none
    /// does: a redirect's `Proxy-Authorization` goes on to a target the same proxy carries
    /// (``RedirectPlanner``).
    func proxy(carrying url: URL) -> Proxy? {
        self.pool.key(for: url)?.route.proxy
    }

    /// Undoes ``acquireLoop()`` when the exchange ends.
    func releaseLoop(_ index: Int) {
        self.exchangesPerLoop.withLockedValue { $0[index] -= 1 }
    }

    public func shutdown() async throws {
        defer { self.watchdog.shutdown() }
        for closed in self.pool.shutdown() {
            try? await closed.get()
        }
    }

    deinit {
        // A manager that was never invalidated still must not leak its connections: they close
        // now, and the hops still waiting fail.
        self.watchdog.shutdown()
        _ = self.pool.shutdown()
        #if DEBUG
        LiveObjectCensus.died(self)
        #endif
    }
}
