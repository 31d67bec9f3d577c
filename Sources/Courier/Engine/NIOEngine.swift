import AsyncHTTPClient
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL

/// The default engine, on SwiftNIO.
///
/// Plain `http` requests without a proxy go over Courier's own HTTP/1.1 connections (a pool per
/// engine, at most ``SessionConfiguration/httpMaximumConnectionsPerHost`` per host, idle ones
/// closed after ``SessionConfiguration/connectionIdleTimeout``; a request whose connection the
/// server closed or reset before any byte of the answer is sent again on a new connection as
/// Courier's resend rule allows: idempotent methods, or any method the server cannot have read).
/// Everything else goes through AsyncHTTPClient: one `HTTPClient` per security policy gives TLS
/// through swift-nio-ssl, HTTP/2, and proxies. Both decompress responses as configured.
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
    /// One AsyncHTTPClient per distinct security policy (its TLS configuration and connection
    /// check are the client's); the default policy's first.
    struct Pool: Sendable {
        let trust: ServerTrustEvaluator
        let client: HTTPClient
        /// For a policy whose evaluator must know the host: a client per host, made on first use
        /// (``client`` then serves only a URL without a host, and requests after shutdown).
        var hosts: HostPools? = nil
    }

    let pools: [Pool]
    /// Which policy applies to which host.
    let serverTrust: ServerTrustPolicies
    let configuration: Configuration
    let eventLoopGroup: any EventLoopGroup
    let logger: Logger?
    /// The loops of ``eventLoopGroup`` and how many exchanges each is running: see ``acquireLoop()``.
    let loops: [any EventLoop]
    let exchangesPerLoop: NIOLockedValueBox<[Int]>
    /// Enforces the exchanges' idle deadlines.
    let watchdog: NIOExchangeWatchdog
    /// Courier's own HTTP/1.1 connections, for cleartext `http` URLs; nil with a proxy (then
    /// AsyncHTTPClient carries everything).
    let http1: HTTP1Pool?

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
    ///   - serverTrust: Which policy applies to which host; one connection pool per distinct policy
    ///     (per host for a policy that anchors trust on a pinned CA-issued leaf and validates the
    ///     domain name: see ``SecurityPolicy/allowInvalidCertificates``).
    ///   - eventLoopGroup: The event loops to run on; NIO's shared singleton by default.
    ///   - logger: Where the engine logs connection-level events (`.debug` and below); none by default.
    public init(
        configuration: Configuration = Configuration(),
        serverTrust: ServerTrustPolicies,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger? = nil
    ) {
        self.configuration = configuration
        self.eventLoopGroup = eventLoopGroup
        self.logger = logger
        self.loops = Array(eventLoopGroup.makeIterator())
        self.exchangesPerLoop = NIOLockedValueBox(Array(repeating: 0, count: self.loops.count))
        self.watchdog = NIOExchangeWatchdog(
            eventLoop: self.loops[0],
            shortestTimeout: min(configuration.requestTimeout, configuration.resourceTimeout)
        )
        self.serverTrust = serverTrust
        // Courier's pool carries http and https, unless a proxy is set (AsyncHTTPClient's path).
        let tls = TLSConnector(
            serverTrust: serverTrust,
            applicationProtocols: TLSConnector.ApplicationProtocol.offered(for: configuration.httpVersion),
            handshakeTimeout: HTTP1Pool.Settings(configuration).connectTimeout
        )
        self.http1 = configuration.proxy == nil ? HTTP1Pool(settings: HTTP1Pool.Settings(configuration), tls: tls, logger: logger) : nil
        let backgroundLogger = logger ?? Logger(label: "courier.engine", factory: { _ in SwiftLogNoOpLogHandler() })
        self.pools = serverTrust.distinctPolicies.map { policy in
            @Sendable func makePool(host: String?) -> Pool {
                let trust = ServerTrustEvaluator(policy: policy, host: host)
                let client = HTTPClient(
                    eventLoopGroupProvider: .shared(eventLoopGroup),
                    configuration: Self.clientConfiguration(configuration, trust: trust),
                    backgroundActivityLogger: backgroundLogger
                )
                return Pool(trust: trust, client: client)
            }
            var pool = makePool(host: nil)
            if ServerTrustEvaluator.needsHost(policy) {
                pool.hosts = HostPools { makePool(host: $0) }
            }
            return pool
        }
    }

    /// The default policy's client.
    var client: HTTPClient { self.pools[0].client }

    /// The pool whose policy applies to `url`'s host (for a policy that checks names itself, the
    /// pool of that host).
    func pool(for url: URL) -> Pool {
        let pool: Pool
        if self.pools.count > 1 {
            let policy = self.serverTrust.policy(forHost: url.host)
            pool = self.pools.first { $0.trust.policy == policy } ?? self.pools[0]
        } else {
            pool = self.pools[0]
        }
        guard let hosts = pool.hosts, let host = url.host else { return pool }
        // After shutdown: the policy's own client, shut down too, fails the request.
        return hosts.pool(forHost: host) ?? pool
    }

    /// Every client: each policy's, and the per-host ones made so far (none is made after this).
    private func closeClients() -> [HTTPClient] {
        self.pools.flatMap { pool in [pool.client] + (pool.hosts?.close() ?? []).map(\.client) }
    }

    public func execute(_ request: Request, delegate: any ExchangeDelegate) -> any Exchange {
        let exchange = NIOExchange(engine: self, request: request, delegate: delegate)
        exchange.start()
        return exchange
    }

    /// Picks the loop for a new exchange: the one running the fewest, the first on a tie.
    ///
    /// AHC serves a request from an idle connection on its preferred loop when there is one,
    /// and opens new connections there, so a steady choice keeps each connection's callbacks on
    /// its own loop. Round-robin would move every other sequential request to the loop that does
    /// not own the connection, costing a thread hop for each event.
    func acquireLoop() -> Int {
        self.exchangesPerLoop.withLockedValue { counts in
            var best = 0
            for index in counts.indices.dropFirst() where counts[index] < counts[best] {
                best = index
            }
            counts[best] += 1
            return best
        }
    }

    /// Undoes ``acquireLoop()`` when the exchange ends.
    func releaseLoop(_ index: Int) {
        self.exchangesPerLoop.withLockedValue { $0[index] -= 1 }
    }

    public func shutdown() async throws {
        defer { self.watchdog.shutdown() }
        for closed in self.http1?.shutdown() ?? [] {
            try? await closed.get()
        }
        for client in self.closeClients() {
            do {
                try await client.shutdown()
            } catch let error as HTTPClientError where error == .alreadyShutdown {
                continue
            }
        }
    }

    deinit {
        // A manager that was never invalidated still must not leak its connections: shut the
        // client down in the background. AHC asserts if a client is released while running.
        self.watchdog.shutdown()
        _ = self.http1?.shutdown()
        for client in self.closeClients() {
            client.shutdown { _ in _ = client }
        }
    }
}
