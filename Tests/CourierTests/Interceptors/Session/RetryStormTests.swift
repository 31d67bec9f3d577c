import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import Testing

@testable import Courier

@Suite("Session: a retry budget stops a retry storm")
struct RetryStormTests {
    /// 200 tasks against a server that always answers 503, with a policy that retries 3 times:
    /// 800 requests without a budget; with a budget of 10 % (and no minimum), at most 220.
    @Test(arguments: [false, true])
    func storm(budgeted: Bool) async throws {
        try await withTestServer { server in
            let hits = failingRoute(server, "/down", failures: .max)
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            let clock = ManualRetryClock()
            var policy = RetryPolicy(retryLimit: 3)
            policy.clock = clock
            manager.interceptor = policy
            manager.retryClock = clock
            let budget = RetryBudget(ratio: 0.1, minimumPerSecond: 0, clock: clock)
            if budgeted { manager.retryBudget = budget }
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<200 {
                    group.addTask { _ = try? await manager.data(for: Request(url: server.url("/down"))) }
                }
            }
            let requests = hits.withLockedValue { $0 }
            if budgeted {
                let statistics = budget.statistics
                #expect(statistics.requests == 200)
                #expect(statistics.retries <= 20)
                #expect(requests == 200 + statistics.retries)
                print("retry storm: 200 tasks, 503 always, retry limit 3: \(requests) requests with a 10 % budget (\(statistics.retries) retries allowed, \(statistics.refused) refused)")
            } else {
                #expect(requests == 800)
                print("retry storm: 200 tasks, 503 always, retry limit 3: \(requests) requests without a budget")
            }
        }
    }
}
