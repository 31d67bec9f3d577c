@testable import Courier
import CourierTesting
import Foundation
import Synchronization
import Testing

/// What the pool keeps of a host over every transport: while it has connections, its entry; once
/// they are closed, nothing (what the host taught the pool is remembered apart, within a bound:
/// `ConnectionPoolStateMachineTests`), so that a process that talks to ever new hosts does not
/// grow with each.
@Suite("Transport: the pool lets go of a host")
struct TransportPoolTests {
    @Test(arguments: Transport.allCases)
    func aHostWhoseConnectionsClosedLeavesThePoolAndComesBackOnItsNextRequest(_ transport: Transport) async throws {
        try await transport.run(configure: { $0.connectionIdleTimeout = 0.2 }) { server, manager in
            let pool = try #require((manager.engine as? NIOEngine)?.pool)
            manager.responseSerializer = HTTPResponseSerializer()
            for _ in 0..<3 { _ = try await manager.get("get") }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<4 { group.addTask { _ = try await manager.get("get") } }
                try await group.waitForAll()
            }
            #expect(await eventually { pool.hostCount == 0 }, "hosts left: \(pool.hostCount)")
            // The last connection object goes once its channel's close has run its course, which
            // may be just after the pool let go of the host (seen once over HTTP/2 via SOCKS5).
            #expect(await eventually { pool.liveConnections.load(ordering: .relaxed) == 0 }, "connections alive: \(pool.liveConnections.load(ordering: .relaxed))")

            // The next request to it opens a connection as the first did.
            let again = try await manager.get("get")
            #expect(again.response.status == .ok)
            #expect(await eventually { pool.hostCount == 0 })
        }
    }
}
