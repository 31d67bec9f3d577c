import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOPosix
import NIOSSL

/// The default engine: AsyncHTTPClient on SwiftNIO.
///
/// One `HTTPClient` per engine gives connection pooling, HTTP/1.1 and HTTP/2, TLS through
/// swift-nio-ssl, decompression and proxies. Courier follows redirects itself (so it can ask the
/// task's delegate about each hop) and keeps its own idle deadline for requests whose
/// ``RequestOptions/timeoutInterval`` differs from the session's.
///
/// The session manager that made the engine owns it; ``shutdown()`` (called by
/// ``SessionManager/invalidate(cancelingTasks:)``) closes every connection.
public final class NIOEngine: Engine {
    let client: HTTPClient
    let configuration: SessionConfiguration
    let eventLoopGroup: any EventLoopGroup
    let logger: Logger?

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
        let clientConfiguration = Self.clientConfiguration(configuration, securityPolicy: securityPolicy)
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

    public func shutdown() async throws {
        do {
            try await self.client.shutdown()
        } catch let error as HTTPClientError where error == .alreadyShutdown {
            return
        }
    }

    deinit {
        // A manager that was never invalidated still must not leak its connections: shut the
        // client down in the background. AHC asserts if a client is released while running.
        let client = self.client
        client.shutdown { _ in _ = client }
    }
}
