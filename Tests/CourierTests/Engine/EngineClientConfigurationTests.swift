import AsyncHTTPClient
@testable import Courier
import NIOCore
import NIOPosix
import Testing

@Suite("NIOEngine's AsyncHTTPClient configuration")
struct EngineClientConfigurationTests {
    @Test func noSpansWhenNoTracerWasBootstrapped() {
        // The test process bootstraps no tracer: AHC's per-request no-op spans are skipped.
        let configuration = NIOEngine.clientConfiguration(NIOEngine.Configuration(), trust: ServerTrustEvaluator(policy: .default))
        #expect(configuration.tracing.tracer == nil)
    }

    @Test func courierFollowsRedirectsAndKeepsItsOwnIdleDeadline() {
        var session = SessionConfiguration.default
        session.httpMaximumConnectionsPerHost = 17
        let configuration = NIOEngine.clientConfiguration(NIOEngine.Configuration(session), trust: ServerTrustEvaluator(policy: .default))
        #expect(configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit == 17)
        #expect(configuration.timeout.read == nil)
        #expect(configuration.connectionPool.retryConnectionEstablishment == false)
    }
}

@Suite("NIOExchangeWatchdog")
struct NIOExchangeWatchdogTests {
    @Test(arguments: [(60.0, 50), (1.0, 50), (0.5, 25), (0.2, 10), (0.01, 5)])
    func tickIsATwentiethOfTheShortestTimeoutWithinBounds(timeout: Double, milliseconds: Int64) {
        let watchdog = NIOExchangeWatchdog(eventLoop: MultiThreadedEventLoopGroup.singleton.next(), shortestTimeout: timeout)
        #expect(watchdog.tick == .milliseconds(milliseconds))
    }
}
