import CourierTesting
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing

@testable import Courier

@Suite("SessionManager: reachability is advisory; opt-in retry once the network is back")
struct ConnectivityRetryTests {
    static let url = URL(string: "http://api.courier.test/items")!

    /// A stub engine whose first request fails with ENETUNREACH and whose later ones succeed.
    static func engine() -> StubEngine {
        let engine = StubEngine()
        let calls = NIOLockedValueBox(0)
        engine.stub(.any(), .json(#"{"ok":true}"#))
        engine.stub(
            .custom { _ in calls.withLockedValue { $0 += 1; return $0 == 1 } },
            .failure(
                CourierError(.connectionFailed, "the network or host is unreachable",
                    underlyingError: IOError(errnoCode: ENETUNREACH, reason: "connect"))))
        return engine
    }

    @Test func aNotReachableStatusNeverHoldsARequestBack() async throws {
        let engine = StubEngine()
        engine.stub(.any(), .json(#"{"ok":true}"#))
        let manager = SessionManager(engine: engine)
        defer { manager.invalidate(cancelingTasks: true) }
        let monitor = ScriptedMonitor()
        manager.reachabilityManager = monitor.manager()
        manager.connectivityRetry = ConnectivityRetryPolicy(maximumWait: .seconds(30))
        manager.reachabilityManager.startMonitoring()
        monitor.send(.notReachable)
        let response = try await manager.data(for: Request(url: Self.url))
        #expect(response.response.status == .ok)
        #expect(engine.requests.count == 1)
    }

    @Test func withoutThePolicyTheFailureIsReturnedAtOnce() async throws {
        let engine = Self.engine()
        let manager = SessionManager(engine: engine)
        defer { manager.invalidate(cancelingTasks: true) }
        manager.reachabilityManager = ScriptedMonitor().manager()
        await #expect(throws: CourierError.self) { try await manager.data(for: Request(url: Self.url)) }
        #expect(engine.requests.count == 1)
        #expect(manager.reachabilityManager.isMonitoring == false)
    }

    @Test func withThePolicyTheRequestWaitsForTheNetworkAndRetriesOnce() async throws {
        let engine = Self.engine()
        let manager = SessionManager(engine: engine)
        defer { manager.invalidate(cancelingTasks: true) }
        let monitor = ScriptedMonitor()
        manager.reachabilityManager = monitor.manager()
        manager.connectivityRetry = ConnectivityRetryPolicy(maximumWait: connectivityWait)
        // Driven by events: once the failed task started the monitor to wait for the network, the
        // network is reported down, then back (in that order: the monitor's reports are heard in
        // the order they are sent).
        async let driver: Void = {
            await monitor.waitUntilStarted()
            monitor.send(.notReachable)
            monitor.send(.reachableViaEthernet)
        }()
        let response = try await manager.data(for: Request(url: Self.url))
        await driver
        #expect(response.response.status == .ok)
        #expect(engine.requests.count == 2)
    }

    @Test func aBodyThatCannotBeReadTwiceIsNotRetried() async throws {
        let engine = Self.engine()
        let manager = SessionManager(engine: engine)
        defer { manager.invalidate(cancelingTasks: true) }
        let monitor = ScriptedMonitor()
        manager.reachabilityManager = monitor.manager()
        manager.reachabilityManager.startMonitoring()
        monitor.send(.reachableViaEthernet)
        manager.connectivityRetry = ConnectivityRetryPolicy(maximumWait: .seconds(5))
        let body = AsyncThrowingStream<ByteBuffer, any Error> { continuation in
            continuation.yield(ByteBuffer(string: "once"))
            continuation.finish()
        }
        let request = Request(method: .post, url: Self.url, body: .stream(body, length: .known(4)))
        await #expect(throws: CourierError.self) { try await manager.data(for: request) }
        #expect(engine.requests.count == 1)
    }

    @Test func theRetryGivesUpAfterTheWait() async throws {
        let engine = Self.engine()
        let manager = SessionManager(engine: engine)
        defer { manager.invalidate(cancelingTasks: true) }
        manager.reachabilityManager = ScriptedMonitor().manager()
        manager.connectivityRetry = ConnectivityRetryPolicy(maximumWait: .milliseconds(100))
        await #expect(throws: CourierError.self) { try await manager.data(for: Request(url: Self.url)) }
        #expect(engine.requests.count == 1)
    }

    /// The status kept from an earlier run of the monitor is not the network's now: the wait
    /// starts monitoring again and trusts only what the new run reports. It took the kept
    /// reachable status, retried at once and failed again (two requests).
    @Test func aStatusKeptFromAnEarlierRunIsNotTrusted() async throws {
        let engine = Self.engine()
        let manager = SessionManager(engine: engine)
        defer { manager.invalidate(cancelingTasks: true) }
        let monitor = ScriptedMonitor()
        manager.reachabilityManager = monitor.manager()
        manager.reachabilityManager.startMonitoring()
        monitor.send(.reachableViaEthernet)
        manager.reachabilityManager.stopMonitoring()
        #expect(manager.reachabilityManager.networkReachabilityStatus == .reachableViaEthernet)
        manager.connectivityRetry = ConnectivityRetryPolicy(maximumWait: .milliseconds(300))
        // Nothing is reported after the restart: the wait runs out, and the first failure ends the task.
        await #expect(throws: CourierError.self) { try await manager.data(for: Request(url: Self.url)) }
        #expect(engine.requests.count == 1)
        #expect(manager.reachabilityManager.isMonitoring, "the wait started monitoring again")
    }

    /// A reachable status reported before the failure may be one the monitor has not brought up
    /// to date yet (it reports once the network has gone quiet, 50 ms or more after a route went
    /// away): the retry waits for a report made after the failure. It went at once on the stale
    /// status, failed again, and never waited for the network's return.
    @Test func aReachableStatusFromBeforeTheFailureIsNotTrusted() async throws {
        let monitor = ScriptedMonitor()
        let reachability = monitor.manager()
        reachability.startMonitoring()
        monitor.send(.reachableViaEthernet)
        let failure = CourierError(
            .connectionFailed, "the network or host is unreachable", underlyingError: IOError(errnoCode: ENETUNREACH, reason: "connect"))
        let attempt = FailedAttempt(request: Request(url: Self.url), error: failure)
        var retrier = ConnectivityRetrier(policy: ConnectivityRetryPolicy(maximumWait: connectivityWait), reachability: reachability)
        let listening = AsyncStream<Void>.makeStream()
        retrier.willWait = { _ = listening.continuation.yield() }
        let networkBack = NIOLockedValueBox(false)
        async let driver: Void = {
            for await _ in listening.stream { break }
            monitor.send(.notReachable)
            networkBack.withLockedValue { $0 = true }
            monitor.send(.reachableViaEthernet)
        }()
        let decision = try await retrier.retry(attempt)
        let decidedAfterTheNetworkCameBack = networkBack.withLockedValue { $0 }
        await driver
        #expect(decision.isRetry && decision.reason == .connectivity, "\(decision)")
        #expect(decidedAfterTheNetworkCameBack, "retried on the status reported before the failure")
        reachability.stopMonitoring()
    }

    /// The task's "waiting for connectivity" event comes once the wait hears the statuses: a
    /// status reported in answer to it is not lost. It came before the wait started the monitor,
    /// so a status sent at once was dropped and the task waited out its whole wait (a full run
    /// under load failed `EventMonitorEventsTests.waitingForTheNetworkIsAnEvent` so, after 30 s).
    @Test func whatIsReportedAsTheWaitBeginsIsHeard() async throws {
        let monitor = ScriptedMonitor()
        var retrier = ConnectivityRetrier(policy: ConnectivityRetryPolicy(maximumWait: connectivityWait), reachability: monitor.manager())
        let told = NIOLockedValueBox(0)
        retrier.willWait = {
            told.withLockedValue { $0 += 1 }
            monitor.send(.notReachable)
            monitor.send(.reachableViaEthernet)
        }
        let failure = CourierError(
            .connectionFailed, "the network or host is unreachable", underlyingError: IOError(errnoCode: ENETUNREACH, reason: "connect"))
        // The decision tells the two apart without a clock: a wait that heard no status ends in
        // `.doNotRetry` when its wait runs out. (A bound on the elapsed time failed once in CI,
        // where the whole machine stalled for 30 s while the wait had already heard the status.)
        let decision = try await retrier.retry(FailedAttempt(request: Request(url: Self.url), error: failure))
        #expect(decision.isRetry && decision.reason == .connectivity, "\(decision)")
        #expect(told.withLockedValue { $0 } == 1)
    }

    /// A `POST` answered `303`, whose `GET` cannot connect for want of a network: a retry would
    /// send the `POST` again (a retry sends the attempt's first request), and the server did its
    /// work. Not retried. A `POST` sent on by a `307` keeps its method and is.
    @Test func aPostThatARedirectMadeAGetIsNotSentAgain() async throws {
        let monitor = ScriptedMonitor()
        var retrier = ConnectivityRetrier(policy: ConnectivityRetryPolicy(maximumWait: connectivityWait), reachability: monitor.manager())
        retrier.willWait = { monitor.send(.reachableViaEthernet) }
        let failure = CourierError(
            .connectionFailed, "the network or host is unreachable", underlyingError: IOError(errnoCode: ENETUNREACH, reason: "connect"))
        let post = Request(method: .post, url: Self.url)
        let redirected = Request(url: URL(string: "http://elsewhere.courier.test/items/42")!)
        let seeOther = try await retrier.retry(FailedAttempt(request: redirected, initialRequest: post, error: failure))
        #expect(!seeOther.isRetry, "\(seeOther)")
        var kept = redirected
        kept.method = .post
        let temporary = try await retrier.retry(FailedAttempt(request: kept, initialRequest: post, error: failure))
        #expect(temporary.isRetry, "\(temporary)")
    }

    /// Tasks that wait for the network at once start one monitor between them: none restarts the
    /// one another started (a restart stops it first, and a report sent in between was lost). The
    /// check and the start were two steps; the landing CI of 2026-12-05 caught four tasks racing
    /// between them. The window is narrow, so 200 rounds of 16 tasks each.
    @Test func tasksWaitingAtOnceStartOneMonitor() async throws {
        for _ in 0..<200 {
            let monitor = ScriptedMonitor()
            let reachability = monitor.manager()
            async let driver: Void = {
                await monitor.waitUntilStarted()
                monitor.send(.reachableViaEthernet)
            }()
            let results = await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<16 { group.addTask { await reachability.waitUntilReachable(within: connectivityWait) } }
                return await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            await driver
            #expect(results == Array(repeating: true, count: 16))
            try #require(monitor.stops.withLockedValue { $0 } == 0)
        }
        let monitor = ScriptedMonitor()
        let reachability = monitor.manager()
        reachability.startMonitoringIfIdle()
        reachability.startMonitoringIfIdle()
        #expect(monitor.stops.withLockedValue { $0 } == 0)
        #expect(reachability.isMonitoring)
        reachability.startMonitoring()
        #expect(monitor.stops.withLockedValue { $0 } == 1, "the public start still restarts, as AFNetworking's")
    }
}
