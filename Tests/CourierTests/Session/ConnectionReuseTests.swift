import Courier
import CourierTesting
import Foundation
import NIOCore
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
                // One connection per event loop at most, not one per request.
                #expect(server.connectionCount <= System.coreCount)
            }
        }
    }
}
