import Courier
import CourierTesting
import Foundation
import Testing

@Suite("Connection reuse")
struct ConnectionReuseTests {
    @Test func sequentialRequestsReuseKeptAliveConnections() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                for _ in 0..<30 {
                    _ = try await manager.get("get")
                }
                #expect(server.requestCount == 30)
                // Each request starts after the previous one completed: the kept-alive connection
                // is free again, so one connection carries all of them.
                #expect(server.connectionCount == 1)
            }
        }
    }
}
