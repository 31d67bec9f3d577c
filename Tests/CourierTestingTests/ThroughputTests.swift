import AsyncHTTPClient
import CourierTesting
import Foundation
import NIOCore
import NIOHTTP1
import Testing

@Suite struct ThroughputTests {
    /// Many small requests from a few concurrent callers: the server keeps connections alive and
    /// answers every one.
    @Test(arguments: [false, true])
    func manyRequestsOnKeptAliveConnections(tls: Bool) async throws {
        try await withServer(tls ? .https() : TestServer.Configuration()) { server, client in
            let callers = 8
            let perCaller = 100
            let clock = ContinuousClock()
            let start = clock.now
            try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<callers {
                    group.addTask {
                        var ok = 0
                        for _ in 0..<perCaller where try await client.fetch(server.url("/courier/big/16")).status == 200 {
                            ok += 1
                        }
                        return ok
                    }
                }
                var total = 0
                for try await ok in group { total += ok }
                #expect(total == callers * perCaller)
            }
            let elapsed = clock.now - start
            if ProcessInfo.processInfo.environment["COURIER_PRINT_THROUGHPUT"] != nil {
                print("tls=\(tls): \(callers * perCaller) requests in \(elapsed)")
            }
            #expect(server.requestCount == callers * perCaller)
            #expect(server.connectionCount <= callers)
        }
    }
}
