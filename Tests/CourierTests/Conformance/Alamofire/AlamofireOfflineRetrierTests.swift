import CourierTesting
import Foundation
import Logging
import NIOConcurrencyHelpers
import Testing

@testable import Courier

/// Twins of Alamofire's `Tests/OfflineRetrierTests.swift`. Courier's OfflineRetrier is the
/// connectivity retry (`SessionManager.connectivityRetry`), which waits on the session's
/// `reachabilityManager`; here that manager's monitor is a `ScriptedMonitor` the test drives.
///
/// Alamofire's retrier takes a predicate saying which errors mean "offline", and its twins fail a
/// 404 through it; Courier decides itself (a connect that failed for want of a network), so these
/// fail first attempts with `NetworkDownEngine`'s `ENETUNREACH` in front of the TestServer. Where
/// time is the point (a wait that runs out) the session's `retryClock` is a `ManualRetryClock`,
/// whose sleeps end at once.
@Suite("Conformance: Alamofire OfflineRetrierTests")
struct AlamofireOfflineRetrierConformanceTests {
    static let waitingMessage = "waiting for the network to retry"

    /// GETs `path`; the task's error.
    static func get(_ path: String, from server: TestServer, on manager: SessionManager) async -> CourierError? {
        await awaitCallback { finish in
            manager.dataTask(with: Request(url: server.url(path))) { _, _, error in finish(error) }.resume()
        }
    }

    /// GETs `/get` `count` times at once; the tasks' errors.
    static func getMany(_ count: Int, from server: TestServer, on manager: SessionManager) async -> [CourierError?] {
        await withTaskGroup(of: CourierError?.self) { group in
            for _ in 0..<count { group.addTask { await Self.get("/get", from: server, on: manager) } }
            return await group.reduce(into: []) { $0.append($1) }
        }
    }

    /// A logger for the session that opens the gate for `n` once the `n`th task says it waits for
    /// the network.
    static func waitingLogger(opening gates: [Int: OneShotGate]) -> Logger {
        let count = NIOLockedValueBox(0)
        return Logger(label: "offline") { _ in
            CallbackLogHandler { message in
                guard message.contains(Self.waitingMessage) else { return }
                let n = count.withLockedValue { $0 += 1; return $0 }
                gates[n]?.open()
            }
        }
    }

    static func opened(_ gate: OneShotGate, sourceLocation: SourceLocation = #_sourceLocation) async {
        #expect(await gate.wait(), "the retrier never began to wait", sourceLocation: sourceLocation)
    }

    /// Differs: Alamofire's OfflineRetrier owns its path monitor and stops it once a wait ends;
    /// Courier's connectivity retry waits on the session's `reachabilityManager` (shared with
    /// whoever else reads it: `NetworkReachabilityManager.shared` unless set), starting its
    /// monitoring if it was off and leaving it on (`stopMonitoring()` stops it). The request is
    /// retried once the network is back, as in Alamofire.
    @Test func requestIsRetriedWhenConnectivityIsRestored() async throws {
        try await withRetryingManager(failing: 1) { server, engine, monitor, manager in
            async let driver: Void = {
                await monitor.waitUntilStarted()
                monitor.send(.notReachable)
                monitor.send(.reachableViaEthernet)
            }()
            let error = await Self.get("/get", from: server, on: manager)
            await driver
            #expect(error == nil)
            #expect(engine.executions == 2)
            #expect(manager.reachabilityManager.isMonitoring)
            #expect(monitor.stops.withLockedValue { $0 } == 0)
        }
    }

    /// A 404 (Alamofire's case) and a refused connection (something answered) are not offline
    /// errors: neither waits, and the monitor is never started.
    @Test func requestIsNotRetriedWhenTheErrorIsNotOfflineError() async throws {
        try await withRetryingManager(failing: 0) { server, engine, monitor, manager in
            let notFound = await Self.get("/status/404", from: server, on: manager)
            #expect(notFound?.code == .unacceptableStatusCode)
            #expect(engine.executions == 1)

            let refused = Request(url: URL(string: "http://127.0.0.1:\(closedPort())/get")!)
            let refusedError = await awaitCallback { finish in manager.dataTask(with: refused) { _, _, error in finish(error) }.resume() }
            #expect(refusedError?.code == .connectionFailed)
            #expect(engine.executions == 2)

            #expect(manager.reachabilityManager.isMonitoring == false)
            #expect(monitor.stops.withLockedValue { $0 } == 0)
        }
    }

    /// Differs as ``requestIsRetriedWhenConnectivityIsRestored()``: the monitoring the wait
    /// started stays on. The request fails with its first failure once the wait ran out.
    @Test func requestIsNotRetriedWhenPathTimesOut() async throws {
        try await withRetryingManager(failing: 1) { server, engine, monitor, manager in
            let clock = ManualRetryClock()
            manager.retryClock = clock
            manager.connectivityRetry = ConnectivityRetryPolicy(maximumWait: .milliseconds(1))
            let error = await Self.get("/get", from: server, on: manager)
            #expect(error?.code == .connectionFailed)
            #expect(ConnectionFailureCause(error) == .networkDown)
            #expect(engine.executions == 1)
            #expect(clock.sleeps == [.milliseconds(1)])
            #expect(manager.reachabilityManager.isMonitoring)
            #expect(monitor.stops.withLockedValue { $0 } == 0)
        }
    }

    /// Differs as ``requestIsRetriedWhenConnectivityIsRestored()``. The network comes back only
    /// once all four requests wait for it.
    @Test func sessionWideRetrierCanRetryMultipleRequests() async throws {
        try await withRetryingManager(failing: 4) { server, engine, monitor, manager in
            let allWaiting = OneShotGate()
            manager.logger = Self.waitingLogger(opening: [4: allWaiting])
            async let driver: Void = {
                await monitor.waitUntilStarted()
                await Self.opened(allWaiting)
                monitor.send(.reachableViaEthernet)
            }()
            let errors = await Self.getMany(4, from: server, on: manager)
            await driver
            #expect(errors.map { $0 == nil } == Array(repeating: true, count: 4))
            #expect(engine.executions == 8)
            #expect(monitor.stops.withLockedValue { $0 } == 0)
        }
    }

    /// Differs as ``requestIsRetriedWhenConnectivityIsRestored()``: Alamofire's monitor is started
    /// again for the second set; Courier's stays on, so between the two sets the network is
    /// reported down again, and back once the second four wait.
    @Test func sessionWideRetrierCanRetryMultipleRequestsTwice() async throws {
        try await withRetryingManager(failing: 4) { server, engine, monitor, manager in
            let firstWaiting = OneShotGate()
            let secondWaiting = OneShotGate()
            manager.logger = Self.waitingLogger(opening: [4: firstWaiting, 8: secondWaiting])
            async let firstDriver: Void = {
                await monitor.waitUntilStarted()
                await Self.opened(firstWaiting)
                monitor.send(.reachableViaEthernet)
            }()
            let first = await Self.getMany(4, from: server, on: manager)
            await firstDriver
            #expect(first.map { $0 == nil } == Array(repeating: true, count: 4))
            #expect(engine.executions == 8)

            monitor.send(.notReachable)
            engine.failNext(4)
            async let secondDriver: Void = {
                await Self.opened(secondWaiting)
                monitor.send(.reachableViaEthernet)
            }()
            let second = await Self.getMany(4, from: server, on: manager)
            await secondDriver
            #expect(second.map { $0 == nil } == Array(repeating: true, count: 4))
            #expect(engine.executions == 16)
            #expect(monitor.stops.withLockedValue { $0 } == 0)
        }
    }

    /// Differs as ``requestIsRetriedWhenConnectivityIsRestored()``. Each of the four waits its
    /// maximum on the session's clock and fails with its first failure.
    @Test func sessionWideRetrierCanTimeOutMultipleRequests() async throws {
        try await withRetryingManager(failing: 4) { server, engine, monitor, manager in
            let clock = ManualRetryClock()
            manager.retryClock = clock
            manager.connectivityRetry = ConnectivityRetryPolicy(maximumWait: .milliseconds(10))
            let errors = await Self.getMany(4, from: server, on: manager)
            #expect(errors.map { $0?.code } == Array(repeating: .connectionFailed, count: 4))
            #expect(engine.executions == 4)
            #expect(clock.sleeps == Array(repeating: .milliseconds(10), count: 4))
            #expect(monitor.stops.withLockedValue { $0 } == 0)
        }
    }

    /// Setting the policy starts nothing; a manager that goes without a failed request never
    /// started or stopped the monitor.
    @Test func offlineRetrierNeverStartsOrStopsWhenImmediatelyDeinited() async throws {
        let monitor = ScriptedMonitor()
        let reachability: NetworkReachabilityManager
        do {
            let manager = retryingManager(nil, engine: StubEngine(), monitor: monitor, maximumWait: .seconds(100))
            reachability = manager.reachabilityManager
            await manager.invalidate(cancelingTasks: true)
        }
        #expect(reachability.isMonitoring == false)
        #expect(monitor.stops.withLockedValue { $0 } == 0)
    }
}
