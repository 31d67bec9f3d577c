import CourierTesting
import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import Courier

/// Seed 003's section on AFNetworking 3's memory: a task is held from `resume()` until its
/// completion has run and by nothing of Courier's after that; its delegate leaves the registry; a
/// manager whose tasks are done, invalidated or simply dropped, is freed with its engine and its
/// connections. Each test holds only weak references to what Courier made and waits for them to go.
@Suite struct LifetimeTests {
    /// The ways a caller runs a request.
    enum API: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case callbackVerb, asyncVerb, dataTaskHandler, uploadFromFile, downloadCallback, downloadAsync, stream, gatheredStream, eventStream,
            operation
        var testDescription: String { self.rawValue }
    }

    /// How the request ends.
    enum Ending: String, CaseIterable, Sendable, CustomTestStringConvertible {
        /// A 2xx answer.
        case success
        /// A 404 (a serializer's failure, or a file of the error page for downloads).
        case httpError
        /// Cancelled while the server holds the answer back.
        case cancelled
        /// Nothing listens: the connection is refused.
        case refused
        var testDescription: String { self.rawValue }
    }

    @Test(arguments: API.allCases, Ending.allCases)
    func everythingGoesOnceTheWorkIsDone(api: API, ending: Ending) async throws {
        try await withTestServer { server in
            let gate = ReleaseGate(server)
            let bag = WeakBag()
            let refused = closedPort()
            try await Self.runAndDrop(bag: bag) { manager in
                let url: URL = switch ending {
                case .success: api == .eventStream ? server.url("/courier/sse?count=2") : server.url("/bytes/3000")
                case .httpError: server.url("/status/404")
                case .cancelled: gate.url
                case .refused: URL(string: "http://127.0.0.1:\(refused)/get")!
                }
                for _ in 0..<3 {
                    try await Self.run(api, url: url, manager: manager, gate: ending == .cancelled ? gate : nil)
                }
            }
            #expect(await eventually { bag.allReleased }, "still alive: \(bag.survivors)")
            // The engine closed its connections when it went.
            #expect(await eventually { server.openConnectionCount == 0 }, "\(server.openConnectionCount) connections open")
        }
    }

    /// A manager nobody invalidates, dropped while a request runs: the request finishes, then the
    /// manager, its engine and its connections go.
    @Test func aManagerDroppedWhileItWorksLivesUntilItsTasksEnd() async throws {
        try await withTestServer { server in
            let bag = WeakBag()
            let done = Recorder<Int>()
            do {
                let manager = HTTPSessionManager(baseURL: server.baseURL)
                manager.completionQueue = TestQueues.completion
                manager.responseSerializer = HTTPResponseSerializer()
                bag.add(manager)
                bag.add(manager.engine as AnyObject)
                let task = manager.get(
                    "courier/file/200000", parameters: ["rate": 400_000],
                    success: { _, _ in done.append(1) }, failure: { _, _ in done.append(0) })
                bag.add(try #require(task))
                bag.add(try #require(task).delegate)
            }
            #expect(await done.wait { $0.count == 1 })
            #expect(done.all == [1])
            #expect(await eventually { bag.allReleased }, "still alive: \(bag.survivors)")
            #expect(await eventually { server.openConnectionCount == 0 })
        }
    }

    /// Tasks made and never resumed: dropped, they leave the registry; the manager goes too.
    @Test func unresumedTasksDroppedByTheCallerAreForgotten() async throws {
        try await withTestServer { server in
            let bag = WeakBag()
            let manager = HTTPSessionManager(baseURL: server.baseURL)
            do {
                for _ in 0..<3 {
                    let task = manager.dataTask(with: Request(url: server.url("/get")), completionHandler: { _, _, _ in })
                    bag.add(task)
                    bag.add(task.delegate)
                }
            }
            #expect(await eventually { bag.allReleased }, "still alive: \(bag.survivors)")
            #expect(manager.tasks.isEmpty)
            #expect(manager.registry.withLockedValue { $0.delegates.isEmpty })
            let managerBag = WeakBag()
            managerBag.add(manager)
            managerBag.add(manager.engine as AnyObject)
            await manager.invalidate(cancelingTasks: false)
            _ = consume manager
            #expect(await eventually { managerBag.allReleased }, "still alive: \(managerBag.survivors)")
        }
    }

    /// Tasks resumed after invalidation fail with `sessionInvalidated`, and go.
    @Test func tasksOfAnInvalidatedManagerGo() async throws {
        try await withTestServer { server in
            let bag = WeakBag()
            let errors = Recorder<CourierError.Code>()
            try await Self.runAndDrop(bag: bag) { manager in
                let unstarted = manager.dataTask(with: Request(url: server.url("/get"))) { _, _, error in
                    if let error { errors.append(error.code) }
                }
                invalidateWithoutWaiting(manager)
                unstarted.resume()
                let late = manager.dataTask(with: Request(url: server.url("/get"))) { _, _, error in
                    if let error { errors.append(error.code) }
                }
                late.resume()
                #expect(await errors.wait { $0.count == 2 })
            }
            #expect(errors.all == [.sessionInvalidated, .sessionInvalidated])
            #expect(await eventually { bag.allReleased }, "still alive: \(bag.survivors)")
        }
    }

    /// A task the invalidation cancels just as its caller lets go of it: the task object can no
    /// longer be reached (its weak reference reads nil, as while it is being freed) and its
    /// release has not yet reached its delegate, which then finds the task ended. It still leaves
    /// the manager's registry, so the engine shuts down. (It stayed, and `await invalidate`
    /// never returned: found by reading, in an audit of what a long-lived manager keeps.)
    @Test func aTaskCancelledAsItsCallerLetsGoLeavesTheManager() async throws {
        for kind in ["data", "download"] {
            let manager = SessionManager()
            let url = URL(string: "http://127.0.0.1:\(closedPort())/get")!
            let task: SessionTask =
                kind == "data"
                ? manager.dataTask(with: Request(url: url), completionHandler: { _, _, _ in })
                : manager.downloadTask(with: Request(url: url), completionHandler: { _, _, _ in })
            let updates = Self.reading(task.progressUpdates(for: .download))
            task.delegate.state.withLockedValue { $0.unstartedTask = nil }
            invalidateCancelingWithoutWaiting(manager)
            #expect(await eventually { manager.registry.withLockedValue { $0.delegates.isEmpty && $0.engineIsDown } }, "\(kind): the engine is down")
            #expect(await eventually { updates.ended }, "\(kind): its progress updates ended")
            updates.stop()
            withExtendedLifetime(task) {}
        }
    }

    /// A task dropped before it was resumed ends its `progressUpdates(for:)` sequences: their
    /// readers had the first snapshot and then waited for ever.
    @Test func progressUpdatesOfATaskDroppedUnresumedEnd() async throws {
        let manager = SessionManager()
        var task: DataTask? = manager.dataTask(with: Request(url: URL(string: "http://127.0.0.1:\(closedPort())/get")!), completionHandler: { _, _, _ in })
        let updates = Self.reading(task!.progressUpdates(for: .upload))
        task = nil
        #expect(await eventually { updates.ended }, "the sequence ended")
        #expect(updates.count == 1, "the first snapshot, and no other")
        updates.stop()
        await manager.invalidate(cancelingTasks: true)
    }

    /// Reads `sequence` on a task of its own, counting snapshots until it ends.
    final class Reading: Sendable {
        private let state = NIOLockedValueBox((count: 0, ended: false))
        private let reader = NIOLockedValueBox<Task<Void, Never>?>(nil)
        var ended: Bool { self.state.withLockedValue { $0.ended } }
        var count: Int { self.state.withLockedValue { $0.count } }
        fileprivate func start(_ sequence: AsyncStream<ProgressSnapshot>) {
            // Unstructured so that the test can wait for its end as an event; `stop()` cancels it.
            self.reader.withLockedValue { reader in
                reader = Task {
                    for await _ in sequence { self.state.withLockedValue { $0.count += 1 } }
                    self.state.withLockedValue { $0.ended = true }
                }
            }
        }
        func stop() { self.reader.withLockedValue { $0?.cancel() } }
    }

    static func reading(_ sequence: AsyncStream<ProgressSnapshot>) -> Reading {
        let reading = Reading()
        reading.start(sequence)
        return reading
    }

    /// A task retried once the network came back (the connectivity retry) goes like any other.
    @Test func aRetriedTaskGoes() async throws {
        try await withTestServer { server in
            let bag = WeakBag()
            let monitor = ScriptedMonitor()
            let outcome = Recorder<Int>()
            do {
                let engine = NetworkDownEngine(failing: 1)
                let manager = retryingManager(server, engine: engine, monitor: monitor)
                bag.add(manager)
                bag.add(engine)
                bag.add(engine.base)
                bag.track(manager)
                manager.get("get", success: { _, _ in outcome.append(1) }, failure: { _, _ in outcome.append(0) })
                #expect(await eventually { manager.tasks.first?.isWaitingForConnectivity == true })
                // Told again until the retry happens: the monitor may not listen yet when first told.
                #expect(
                    await eventually {
                        monitor.send(.reachableViaEthernet)
                        return outcome.count == 1
                    })
                await manager.invalidate(cancelingTasks: false)
            }
            #expect(outcome.all == [1])
            #expect(await eventually { bag.allReleased }, "still alive: \(bag.survivors)")
        }
    }

    /// A task retried by a retry policy (twice: two 503s, then a 200) goes like any other: the
    /// task, its delegate, the manager and its engine are freed once it completed. Streams are
    /// left out: a streamed task is not retried once its response head arrived.
    @Test(arguments: [API.callbackVerb, .asyncVerb, .dataTaskHandler, .uploadFromFile, .downloadCallback, .downloadAsync, .operation])
    func aTaskRetriedByAPolicyGoes(api: API) async throws {
        try await withTestServer { server in
            let bag = WeakBag()
            let hits = failingRoute(server, "/lifetime-flaky", failures: 2)
            let succeeded = Recorder<Bool>()
            try await Self.runAndDrop(bag: bag) { manager in
                let clock = ManualRetryClock()
                var policy = RetryPolicy(retryLimit: 2)
                policy.clock = clock
                manager.retryClock = clock
                manager.interceptor = policy
                try await Self.run(api, url: server.url("/lifetime-flaky"), manager: manager, gate: nil)
                succeeded.append(hits.withLockedValue { $0 } == 3)
            }
            #expect(succeeded.all == [true], "the server saw \(hits.withLockedValue { $0 }) requests, not 3")
            #expect(await eventually { bag.allReleased }, "still alive: \(bag.survivors)")
        }
    }

    // MARK: Running one request through each API

    /// Makes a manager, hands it to `body`, invalidates it and lets go of it; everything the
    /// manager made is recorded in `bag` (weakly).
    static func runAndDrop(bag: WeakBag, _ body: (HTTPSessionManager) async throws -> Void) async throws {
        let manager = HTTPSessionManager(baseURL: nil)
        manager.completionQueue = TestQueues.completion
        manager.responseSerializer = HTTPResponseSerializer()
        bag.add(manager)
        bag.add(manager.engine as AnyObject)
        bag.track(manager)
        bag.keepTasksInHooks(manager)
        try await body(manager)
        await manager.invalidate(cancelingTasks: false)
    }

    /// Runs one request through `api` and waits until its completion has run. With a `gate`,
    /// cancels the request once the server has it.
    static func run(_ api: API, url: URL, manager: HTTPSessionManager, gate: ReleaseGate?) async throws {
        let request = Request(url: url)
        let cancelSoon: @Sendable (SessionTask) -> Void = { task in
            guard let gate else { return }
            // Cancelled once the server holds the request (an event, not a delay).
            Task { await gate.waitForArrival(); task.cancel() }
        }
        switch api {
        case .callbackVerb:
            _ = await awaitCallback { (finish: @escaping @Sendable (Bool) -> Void) in
                let task = manager.get(url.absoluteString, success: { _, _ in finish(true) }, failure: { _, _ in finish(false) })
                if let task { cancelSoon(task) }
            }
        case .dataTaskHandler, .uploadFromFile:
            let file = try Self.bodyFile()
            _ = await awaitCallback { (finish: @escaping @Sendable (Bool) -> Void) in
                let task: SessionTask =
                    api == .dataTaskHandler
                    ? manager.dataTask(with: request) { _, _, error in finish(error == nil) }
                    : manager.uploadTask(with: Request(method: .put, url: url), fromFile: file) { _, _, error in
                        finish(error == nil)
                    }
                task.resume()
                cancelSoon(task)
            }
            // Made for both kinds (the data task's is unused): removed once the task is over.
            try? FileManager.default.removeItem(at: file)
        case .downloadCallback:
            _ = await awaitCallback { (finish: @escaping @Sendable (Bool) -> Void) in
                let task = manager.downloadTask(with: request) { _, file, error in
                    if let file { try? FileManager.default.removeItem(at: file) }
                    finish(error == nil)
                }
                task.resume()
                cancelSoon(task)
            }
        case .asyncVerb, .downloadAsync, .stream, .gatheredStream, .eventStream:
            let work = Task {
                switch api {
                case .asyncVerb:
                    _ = try await manager.get(url.absoluteString)
                case .downloadAsync:
                    let download = try await manager.download(request)
                    try? FileManager.default.removeItem(at: download.fileURL)
                case .stream:
                    let stream = try await manager.stream(request)
                    for try await _ in stream.body {}
                case .gatheredStream:
                    // Read whole before the call returns (a 3000-byte body, a 404's page).
                    let stream = try await manager.stream(request, gatheringBodiesUpTo: 64 * 1024)
                    for try await _ in stream.body {}
                default:
                    let options = ServerSentEventStream.Options(retryDelay: .milliseconds(1), maximumReconnectionsWithoutEvent: 0)
                    for try await _ in manager.eventStream(request, options: options) {}
                }
            }
            if let gate {
                await gate.waitForArrival()
                work.cancel()
            }
            _ = await work.result
        case .operation:
            let operations = HTTPRequestOperationManager(sessionManager: manager)
            operations.completionQueue = TestQueues.completion
            _ = await awaitCallback { (finish: @escaping @Sendable (Bool) -> Void) in
                let operation = operations.get(url.absoluteString, success: { _, _ in finish(true) }, failure: { _, _ in finish(false) })
                if let gate, let operation {
                    Task { await gate.waitForArrival(); operation.cancel() }
                }
            }
        }
        gate?.releaseAll()
    }

    static func bodyFile() throws -> URL {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("courier-lifetime-\(UUID().uuidString)")
        try Data(repeating: 7, count: 10_000).write(to: file)
        return file
    }
}

/// `invalidate(cancelingTasks:)`'s synchronous form, from an `async` context.
func invalidateWithoutWaiting(_ manager: SessionManager) {
    manager.invalidate(cancelingTasks: false)
}

/// `invalidate(cancelingTasks: true)` without waiting for the engine to shut down.
func invalidateCancelingWithoutWaiting(_ manager: SessionManager) {
    manager.invalidate(cancelingTasks: true)
}

/// Weak references to what Courier made, checked for release.
final class WeakBag: Sendable {
    private struct Entry: @unchecked Sendable {
        // @unchecked: only the weak reference and a description; read under the bag's lock.
        weak var object: AnyObject?
        let label: String
    }

    private let entries = NIOLockedValueBox<[Entry]>([])

    func add(_ object: AnyObject) {
        let label = "\(type(of: object))"
        self.entries.withLockedValue { $0.append(Entry(object: object, label: label)) }
    }

    /// Records every task the manager completes, and its delegate, through the completion hook.
    func track(_ manager: SessionManager) {
        var hooks = manager.hooks
        let previous = hooks.taskDidComplete
        hooks.taskDidComplete = { [weak self] manager, task, error in
            self?.add(task)
            self?.add(task.delegate)
            previous?(manager, task, error)
        }
        manager.hooks = hooks
    }

    /// Hooks that keep every task they see in a list only they hold (as an app's hook that files
    /// tasks away may): a task that kept its hooks after it ended would keep itself alive through
    /// them.
    func keepTasksInHooks(_ manager: SessionManager) {
        let kept = Recorder<SessionTask>()
        var hooks = manager.hooks
        let previous = hooks.taskDidComplete
        hooks.taskDidComplete = { manager, task, error in
            kept.append(task)
            previous?(manager, task, error)
        }
        hooks.dataTaskDidReceiveResponse = { _, task, _ in
            kept.append(task)
            return .allow
        }
        manager.hooks = hooks
    }

    var allReleased: Bool { self.survivors.isEmpty }

    /// What is still alive.
    var survivors: [String] { self.entries.withLockedValue { $0.filter { $0.object != nil }.map(\.label) } }
}

/// A route on the test server that holds requests until released, and tells when one arrived.
final class ReleaseGate: Sendable {
    let url: URL
    private let state = NIOLockedValueBox<(arrived: Int, waiters: [CheckedContinuation<Void, Never>], held: [CheckedContinuation<Void, Never>])>((0, [], []))

    init(_ server: TestServer) {
        let path = "/lifetime-gate-\(UUID().uuidString)"
        self.url = server.url(path)
        let state = self.state
        server.route(path) { _ in
            await withCheckedContinuation { (held: CheckedContinuation<Void, Never>) in
                let waiters = state.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
                    state.arrived += 1
                    state.held.append(held)
                    defer { state.waiters = [] }
                    return state.waiters
                }
                for waiter in waiters { waiter.resume() }
            }
            return .text("released")
        }
    }

    /// Returns once a request has arrived since the last `releaseAll()`.
    func waitForArrival() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = self.state.withLockedValue { state -> Bool in
                if state.arrived > 0 { return true }
                state.waiters.append(continuation)
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Lets every held request be answered.
    func releaseAll() {
        let held = self.state.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
            state.arrived = 0
            defer { state.held = [] }
            return state.held
        }
        for continuation in held { continuation.resume() }
    }
}
