import AsyncHTTPClient
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL

/// The default engine: AsyncHTTPClient on SwiftNIO.
///
/// One `HTTPClient` per engine gives connection pooling, HTTP/1.1 and HTTP/2, TLS through
/// swift-nio-ssl, decompression and proxies. Courier follows redirects itself (so it can ask the
/// task's delegate about each hop) and keeps the idle and whole-transfer deadlines itself (so that
/// a request may set its own ``RequestOptions/timeoutInterval``, a suspended task is not timed
/// out, and the whole-transfer deadline covers the body); they are checked every twentieth of the
/// session's shortest timeout, between 5 and 50 ms.
///
/// The session manager that made the engine owns it; ``shutdown()`` (called by
/// ``SessionManager/invalidate(cancelingTasks:)``) closes every connection.
public final class NIOEngine: Engine {
    let client: HTTPClient
    let configuration: SessionConfiguration
    let eventLoopGroup: any EventLoopGroup
    let logger: Logger?
    /// The loops of ``eventLoopGroup`` and how many exchanges each is running: see ``acquireLoop()``.
    let loops: [any EventLoop]
    let exchangesPerLoop: NIOLockedValueBox<[Int]>
    /// Enforces the exchanges' idle deadlines.
    let watchdog: NIOExchangeWatchdog
    /// Enforces the security policy on each connection.
    let trust: ServerTrustEvaluator

    /// Makes an engine.
    /// - Parameters:
    ///   - configuration: Timeouts, connection limits, HTTP versions, decompression, proxy.
    ///   - securityPolicy: Which servers to trust.
    ///   - eventLoopGroup: The event loops to run on; NIO's shared singleton by default.
    ///   - logger: Where the engine logs connection-level events (`.debug` and below); none by default.
    public init(
        configuration: SessionConfiguration = .default,
        securityPolicy: SecurityPolicy = .default,
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
            shortestTimeout: min(configuration.timeoutIntervalForRequest, configuration.timeoutIntervalForResource)
        )
        self.trust = ServerTrustEvaluator(policy: securityPolicy)
        let clientConfiguration = Self.clientConfiguration(configuration, trust: self.trust)
        self.client = HTTPClient(
            eventLoopGroupProvider: .shared(eventLoopGroup),
            configuration: clientConfiguration,
            backgroundActivityLogger: logger ?? Logger(label: "courier.engine", factory: { _ in SwiftLogNoOpLogHandler() })
        )
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
        do {
            try await self.client.shutdown()
        } catch let error as HTTPClientError where error == .alreadyShutdown {
            return
        }
    }

    deinit {
        // A manager that was never invalidated still must not leak its connections: shut the
        // client down in the background. AHC asserts if a client is released while running.
        self.watchdog.shutdown()
        let client = self.client
        client.shutdown { _ in _ = client }
    }
}
