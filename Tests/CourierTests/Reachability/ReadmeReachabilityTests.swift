import Courier
import Foundation
import NIOConcurrencyHelpers
import Testing

/// The sample of the DocC article Reachability (Courier.docc/Reachability.md), as written there
/// (printing aside), so that it keeps compiling and running. There is no DNS for `api.example.com`
/// in CI: the manager settles on a status either way.
@Test func readmeReachabilityRunsAsWritten() async throws {
    let seen = NIOLockedValueBox<[NetworkReachabilityStatus]>([])
    let reachability = NetworkReachabilityManager(domain: "api.example.com")
    reachability.statusChangeHandler = { status in
        seen.withLockedValue { $0.append(status) }
        _ = status.localizedDescription
    }
    reachability.startMonitoring()

    var settled: NetworkReachabilityStatus?
    for await status in reachability.statuses where status != .unknown {
        settled = status
        break
    }
    #expect(settled != nil)
    // The handler hears it on its queue, after the sequence did; a status still waiting there
    // when monitoring stops is dropped (as documented), so the handler is waited for first.
    #expect(await eventually { seen.withLockedValue { $0 }.last == settled })
    reachability.stopMonitoring()

    let manager = SessionManager()
    defer { manager.invalidate(cancelingTasks: true) }
    manager.connectivityRetry = ConnectivityRetryPolicy(maximumWait: .seconds(30))
    #expect(manager.reachabilityManager === NetworkReachabilityManager.shared)
}
