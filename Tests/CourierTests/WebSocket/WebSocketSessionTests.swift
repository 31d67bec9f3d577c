@testable import Courier
import CourierTesting
import Foundation
import HTTPTypes
import InMemoryTracing
import MetricsTestKit
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing
import Tracing

/// A WebSocket task in its session, over real sockets with the test server: its opening
/// handshake goes through the session's authentication and retriers as a task's attempt does,
/// and the task is seen where tasks are (the manager's listing, the notifications,
/// `MetricsMonitor`, tracing spans), with its messages' bytes in its metrics.
@Suite("WebSocket tasks in their session")
struct WebSocketSessionTests {
    private func url(_ server: TestServer, _ route: String) -> URL {
        URL(string: server.baseURL.absoluteString.replacingOccurrences(of: "http://", with: "ws://") + "courier/websocket/\(route)")!
    }

    /// Runs `body` with a test server and a new manager, invalidated with its tasks cancelled
    /// afterwards.
    private func withSession(
        _ configuration: TestServer.Configuration = .init(), _ body: (TestServer, SessionManager) async throws -> Void
    ) async throws {
        try await withTestServer(configuration) { server in
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            try await body(server, manager)
        }
    }

    /// Expects `task` not to open, waits until it ended, and returns its error.
    private func failureToOpen(_ task: WebSocketTask) async -> CourierError? {
        let error = await #expect(throws: CourierError.self) { try await task.waitUntilOpen() }
        await task.waitUntilFinished()
        return error
    }

    /// Sends `text`, reads its echo, closes.
    private func echo(_ task: WebSocketTask, _ text: String) async throws {
        try await task.send(.text(text))
        var messages = task.messages.makeAsyncIterator()
        #expect(try await messages.next() == .text(text))
        await task.close()
    }

    // MARK: Authentication and retries on the handshake

    /// A task for `route` (which asks for ann's password), its manager holding the credential.
    private func taskWithCredential(_ server: TestServer, _ manager: SessionManager, _ route: String) throws -> (URL, WebSocketTask) {
        let url = self.url(server, route)
        let space = try #require(ProtectionSpace(url: url, realm: "courier-websocket", authenticationMethod: .httpBasic))
        manager.credentials.set(HTTPCredential(user: "ann", password: "secret"), for: space)
        return (url, manager.webSocketTask(with: Request(url: url)))
    }

    @Test("A handshake answered 401 with a Basic challenge is answered with the session's credential, and the task opens")
    func challengeAnswered() async throws {
        try await self.withSession { server, manager in
            let (url, task) = try self.taskWithCredential(server, manager, "echo?user=ann&password=secret")
            try await task.waitUntilOpen()
            try await self.echo(task, "hi")
            #expect(task.error == nil)
            let metrics = try #require(task.metrics)
            #expect(metrics.attempts.map { $0.response?.status.code } == [401, 101])
            #expect(metrics.attempts.last?.request.headerFields[.authorization] == "Basic YW5uOnNlY3JldA==")
            // The space is answered now: the next task's first handshake carries the credential.
            let second = manager.webSocketTask(with: Request(url: url))
            try await second.waitUntilOpen()
            await second.close()
            #expect(second.metrics?.attempts.count == 1)
        }
    }

    @Test("The handshake's answers store their cookies in the session's store, the 401's and the 101's, as a data task's do (none was stored)")
    func handshakeCookiesAreStored() async throws {
        try await self.withSession { server, manager in
            let (url, task) = try self.taskWithCredential(server, manager, "echo?user=ann&password=secret&refusal-cookie=login%3D1&set-cookie=sticky%3Dabc")
            try await task.waitUntilOpen()
            let storage = try #require(manager.configuration.httpCookieStorage)
            // Stored for the handshake's URL (their default path is the URL's folder).
            let httpURL = try #require(URL(string: url.absoluteString.replacingOccurrences(of: "ws://", with: "http://")))
            let stored = storage.cookies(for: httpURL).map { "\($0.name)=\($0.value)" }.sorted()
            #expect(stored == ["login=1", "sticky=abc"])
            await task.close()
        }
    }

    @Test("A task of an ephemeral session whose cookie store writes to disk fails before any connection, as its data tasks do (the handshake's cookies were written to the file)")
    func anEphemeralSessionRefusesACookieStoreOnDisk() async throws {
        try await withScratchDirectory { folder in
            try await withTestServer { server in
                let file = folder.appendingPathComponent("cookies.txt")
                var configuration = SessionConfiguration.ephemeral
                configuration.httpCookieStorage = try FileCookieStorage(fileURL: file)
                let manager = SessionManager(configuration: configuration)
                defer { manager.invalidate(cancelingTasks: true) }
                let task = manager.webSocketTask(with: Request(url: self.url(server, "echo?set-cookie=sticky%3Dabc")))
                let error = await self.failureToOpen(task)
                #expect(error?.code == .unsupportedOption)
                #expect(server.connectionCount == 0, "refused before any connection")
                (configuration.httpCookieStorage as? FileCookieStorage)?.flush()
                #expect(!FileManager.default.fileExists(atPath: file.path), "nothing written to disk")
            }
        }
    }

    @Test("A task whose handshake is under way is cancelled by close() at once, as documented (it waited for the 101 or the request timeout)")
    func closedWhileConnecting() async throws {
        let faults = try await FaultServer.start()
        // A request timeout far past the wait below: a close() that waited for the 101 or the
        // timeout fails the wait, however loaded the machine (a bound of 5 s on the wait, with
        // the default 60 s timeout, left too little margin for a full CI run, which held every
        // test for about 36 s).
        var configuration = SessionConfiguration.default
        configuration.timeoutIntervalForRequest = 600
        let manager = SessionManager(configuration: configuration)
        var components = URLComponents(url: faults.url(for: .silence), resolvingAgainstBaseURL: false)!
        components.scheme = "ws"
        let task = manager.webSocketTask(with: Request(url: components.url!))
        task.resume()
        #expect(await eventually { faults.requestCount == 1 }, "the handshake went out")
        let closed = NIOLockedValueBox(false)
        // Unstructured so that the test can see `close()` return as an event; it ends with the task.
        let closing = Task {
            await task.close()
            closed.withLockedValue { $0 = true }
        }
        #expect(await eventually { closed.withLockedValue { $0 } }, "close() returned")
        #expect(task.error?.code == .cancelled)
        task.cancel()
        await closing.value
        await manager.invalidate(cancelingTasks: true)
        #expect(await eventually { faults.openConnectionCount == 0 })
        try await faults.shutdown()
    }

    @Test("Without a credential, the 401 ends the task with its error after one handshake")
    func challengeUnanswered() async throws {
        try await self.withSession { server, manager in
            let task = manager.webSocketTask(with: Request(url: self.url(server, "echo?user=ann&password=secret")))
            let error = await self.failureToOpen(task)
            #expect(error?.response?.status == .unauthorized)
            #expect(task.metrics?.attempts.count == 1)
        }
    }

    @Test("A retrier that retries a 503 gets its retries, each after its delay, and the task opens")
    func retriedAfter503() async throws {
        try await self.withSession { server, manager in
            let clock = ManualRetryClock()
            manager.retryClock = clock
            var policy = RetryPolicy()
            policy.initialBackoff = .milliseconds(100)
            policy.random = { 0.5 }
            manager.interceptor = policy
            let retries = NIOLockedValueBox<[String]>([])
            var monitor = ClosureEventMonitor()
            monitor.webSocketTaskWillRetry = { _, attempt, delay, reason in
                retries.withLockedValue { $0.append("\(attempt.statusCode ?? 0) \(delay) \(reason.rawValue)") }
            }
            manager.eventMonitors = [monitor]
            let task = manager.webSocketTask(with: Request(url: self.url(server, "echo?unavailable=2")))
            try await task.waitUntilOpen()
            try await self.echo(task, "again")
            #expect(clock.sleeps == [.milliseconds(50), .milliseconds(100)])
            #expect(task.metrics?.attempts.map { $0.response?.status.code } == [503, 503, 101])
            #expect(await eventually { retries.withLockedValue { $0.count } == 2 })
            #expect(retries.withLockedValue { $0 } == ["503 0.05 seconds transient-failure", "503 0.1 seconds transient-failure"])
        }
    }

    @Test("Retries are bounded as a task's: a refused connection is retried up to the policy's limit, then the task fails with it")
    func refusedConnectionRetriedUpToTheLimit() async throws {
        let manager = SessionManager()
        defer { manager.invalidate(cancelingTasks: true) }
        let clock = ManualRetryClock()
        manager.retryClock = clock
        manager.interceptor = RetryPolicy(retryLimit: 2)
        let task = manager.webSocketTask(with: Request(url: URL(string: "ws://127.0.0.1:\(closedPort())/courier/websocket/echo")!))
        let error = await self.failureToOpen(task)
        #expect(error?.code == .connectionFailed)
        #expect(clock.sleeps.count == 2)
        #expect(task.metrics?.attempts.map { $0.error?.code } == [.connectionFailed, .connectionFailed, .connectionFailed])
    }

    @Test("The session's retry budget refuses a handshake's retry: the task fails with the 503")
    func budgetRefuses() async throws {
        try await self.withSession { server, manager in
            manager.retryClock = ManualRetryClock()
            manager.retryBudget = RetryBudget(ratio: 0, minimumPerSecond: 0, clock: ManualRetryClock())
            manager.interceptor = RetryPolicy()
            let task = manager.webSocketTask(with: Request(url: self.url(server, "echo?unavailable=1")))
            let error = await self.failureToOpen(task)
            #expect(error?.response?.status == .serviceUnavailable)
            #expect(task.metrics?.attempts.count == 1)
        }
    }

    /// A task whose first handshake got a 503, once it waits (600 s) to retry it.
    private func waitingForRetry(_ server: TestServer, _ manager: SessionManager) async -> WebSocketTask {
        var policy = RetryPolicy()
        policy.initialBackoff = .seconds(600)
        policy.random = { 1 }
        manager.interceptor = policy
        let waiting = NIOLockedValueBox(false)
        var monitor = ClosureEventMonitor()
        monitor.webSocketTaskWillRetry = { _, _, _, _ in waiting.withLockedValue { $0 = true } }
        manager.eventMonitors = [monitor]
        let task = manager.webSocketTask(with: Request(url: self.url(server, "echo?unavailable=1")))
        task.resume()
        #expect(await eventually { waiting.withLockedValue { $0 } })
        return task
    }

    @Test("Cancelling a task while its retry waits ends it at once, cancelled")
    func cancelledWhileWaiting() async throws {
        try await self.withSession { server, manager in
            let task = await self.waitingForRetry(server, manager)
            task.cancel()
            await task.waitUntilFinished()
            #expect(task.error?.code == .cancelled)
        }
    }

    @Test("A send's wait for its write ends when the caller is cancelled (a peer that stops reading kept it for the connection's life); the write's own end settles it otherwise")
    func aSendsWaitIsCancellable() async throws {
        let loop = MultiThreadedEventLoopGroup.singleton.any()
        let request = Request(url: URL(string: "ws://127.0.0.1/")!)
        let never = loop.makePromise(of: Void.self)
        // Unstructured so that the test can cancel it while it waits.
        let waiting = Task { try await WebSocketTask.waitCancellably(for: never.futureResult, request: request) }
        waiting.cancel()
        let error = await #expect(throws: CourierError.self) { try await waiting.value }
        #expect(error?.code == .cancelled)
        never.succeed()

        let written = loop.makePromise(of: Void.self)
        // Unstructured so that the write can complete while it waits; awaited below.
        let done = Task { try await WebSocketTask.waitCancellably(for: written.futureResult, request: request) }
        written.succeed()
        try await done.value
        struct Refused: Error {}
        let failed = loop.makePromise(of: Void.self)
        failed.fail(Refused())
        await #expect(throws: Refused.self) { try await WebSocketTask.waitCancellably(for: failed.futureResult, request: request) }
    }

    @Test("A task dropped before it was resumed goes quietly, whether or not its messages were taken (swift-nio stopped the process: its message producer went unfinished)")
    func droppedUnresumed() async throws {
        let manager = SessionManager()
        for takesMessages in [false, true] {
            weak var weakTask: WebSocketTask?
            do {
                let task = manager.webSocketTask(with: Request(url: URL(string: "ws://127.0.0.1:\(closedPort())/courier/websocket/echo")!))
                weakTask = task
                let messages = takesMessages ? task.messages : nil
                withExtendedLifetime(messages) {}
            }
            #expect(await eventually { weakTask == nil }, "taken messages: \(takesMessages)")
        }
        await manager.invalidate(cancelingTasks: true)
    }

    @Test("Closing a task while its retry waits ends it at once, cancelled (it waited through every retry the policy allowed)")
    func closedWhileWaiting() async throws {
        try await self.withSession { server, manager in
            let task = await self.waitingForRetry(server, manager)
            let closed = NIOLockedValueBox(false)
            // Unstructured so that the test can see `close()` return as an event; it ends with the task.
            let closing = Task {
                await task.close()
                closed.withLockedValue { $0 = true }
            }
            #expect(await eventually { closed.withLockedValue { $0 } }, "close() returned")
            #expect(task.error?.code == .cancelled)
            task.cancel()
            await closing.value
        }
    }

    @Test("A caller of waitUntilOpen or waitUntilFinished that is cancelled stops waiting (cancelled, or returning); the task goes on until it is cancelled itself")
    func cancelledCallersStopWaiting() async throws {
        try await self.withSession { server, manager in
            let task = await self.waitingForRetry(server, manager)
            let ends = NIOLockedValueBox<[String]>([])
            // Unstructured so that the test can cancel it while it waits; awaited at the end.
            let opening = Task {
                do {
                    try await task.waitUntilOpen()
                    ends.withLockedValue { $0.append("opened") }
                } catch {
                    ends.withLockedValue { $0.append("open: \((error as? CourierError).map { "\($0.code)" } ?? "\(error)")") }
                }
            }
            // Unstructured too, cancelled below and awaited at the end.
            let finishing = Task {
                await task.waitUntilFinished()
                ends.withLockedValue { $0.append("finish returned") }
            }
            opening.cancel()
            finishing.cancel()
            #expect(await eventually { ends.withLockedValue { $0.count } == 2 }, "\(ends.withLockedValue { $0 })")
            #expect(Set(ends.withLockedValue { $0 }) == ["open: cancelled", "finish returned"])
            #expect(!task.isFinished, "the task itself goes on")
            task.cancel()
            await opening.value
            await finishing.value
        }
    }

    @Test("Invalidating the manager without cancelling ends a handshake's retry wait at once, with the failure it waited to retry")
    func invalidatedWhileWaiting() async throws {
        try await withTestServer { server in
            let manager = SessionManager()
            let task = await self.waitingForRetry(server, manager)
            await manager.invalidate(cancelingTasks: false)
            await task.waitUntilFinished()
            #expect(task.error?.response?.status == .serviceUnavailable)
        }
    }

    // MARK: Where tasks are seen

    @Test("The manager lists its WebSocket tasks until they end")
    func listed() async throws {
        try await self.withSession { server, manager in
            let first = manager.webSocketTask(with: Request(url: self.url(server, "echo")))
            let second = manager.webSocketTask(with: Request(url: self.url(server, "echo")))
            #expect(manager.webSocketTasks.map { ObjectIdentifier($0) } == [ObjectIdentifier(first), ObjectIdentifier(second)])
            try await first.waitUntilOpen()
            #expect(manager.webSocketTasks.count == 2)
            await first.close()
            #expect(manager.webSocketTasks.map { ObjectIdentifier($0) } == [ObjectIdentifier(second)])
            second.cancel()
            await second.waitUntilFinished()
            #expect(manager.webSocketTasks.isEmpty)
            #expect(manager.tasks.isEmpty, "a WebSocket task is no SessionTask")
        }
    }

    @Test("A WebSocket task posts taskDidResume and taskDidComplete once each, with itself, its metrics and its error")
    func notifications() async throws {
        try await self.withSession { server, manager in
            let opened = manager.webSocketTask(with: Request(url: self.url(server, "echo")))
            let failed = manager.webSocketTask(with: Request(url: self.url(server, "bad-accept")))
            let seen = NIOLockedValueBox<[String]>([])
            var tokens: [any NSObjectProtocol] = []
            for (name, label) in [(Notification.Name.taskDidResume, "resume"), (.taskDidComplete, "complete")] {
                for (task, which) in [(opened, "opened"), (failed, "failed")] {
                    tokens.append(
                        NotificationCenter.default.addObserver(forName: name, object: task, queue: nil) { note in
                            let info = note.userInfo ?? [:]
                            let metrics = info[TaskDidCompleteKey.metrics] is TaskMetrics ? " metrics" : ""
                            let error = (info[TaskDidCompleteKey.error] as? CourierError).map { " \($0.code)" } ?? ""
                            seen.withLockedValue { $0.append("\(which) \(label)\(metrics)\(error)") }
                        })
                }
            }
            defer { for token in tokens { NotificationCenter.default.removeObserver(token) } }
            try await self.echo(opened, "hi")
            failed.resume()
            await failed.waitUntilFinished()
            #expect(await eventually { seen.withLockedValue { $0.count } == 4 })
            #expect(
                seen.withLockedValue { Set($0) }
                    == ["opened resume", "opened complete metrics", "failed resume", "failed complete metrics invalidResponse"])
        }
    }

    @Test("MetricsMonitor counts WebSocket tasks by outcome, their durations, their messages' bytes and their handshakes' retries")
    func metricsMonitor() async throws {
        try await self.withSession { server, manager in
            let metrics = TestMetrics()
            manager.eventMonitors = [MetricsMonitor(factory: metrics)]
            manager.retryClock = ManualRetryClock()
            manager.interceptor = RetryPolicy()
            let task = manager.webSocketTask(with: Request(url: self.url(server, "echo?unavailable=1")))
            try await self.echo(task, "hello")
            let failed = manager.webSocketTask(with: Request(url: self.url(server, "bad-accept")))
            failed.resume()
            await failed.waitUntilFinished()
            #expect(await eventually { (try? metrics.expectCounter("courier_websocket_tasks_total", [("outcome", "invalidResponse")])) != nil })
            #expect(try metrics.expectCounter("courier_websocket_tasks_total", [("outcome", "closed")]).totalValue == 1)
            #expect(try metrics.expectCounter("courier_websocket_tasks_total", [("outcome", "invalidResponse")]).totalValue == 1)
            #expect(try metrics.expectTimer("courier_websocket_duration_seconds", [("outcome", "closed")]).values.count == 1)
            #expect(try metrics.expectCounter("courier_websocket_message_bytes_sent_total").totalValue == 5)
            #expect(try metrics.expectCounter("courier_websocket_message_bytes_received_total").totalValue == 5)
            #expect(try metrics.expectCounter("courier_retries_total", [("reason", "transient-failure")]).totalValue == 1)
            #expect(throws: (any Error).self, "no SessionTask was counted") { try metrics.expectCounter("courier_requests_total", [("method", "GET"), ("status_class", "1xx")]) }
        }
    }

    @Test("A span per WebSocket task, with a hop span per handshake whose context the handshake carries, and its retries as events")
    func spans() async throws {
        var configuration = TestServer.Configuration()
        configuration.recordsRequests = true
        try await self.withSession(configuration) { server, manager in
            let tracer = InMemoryTracer()
            manager.tracer = tracer
            manager.retryClock = ManualRetryClock()
            manager.interceptor = RetryPolicy()
            let task = manager.webSocketTask(with: Request(url: self.url(server, "echo?unavailable=1")))
            try await self.echo(task, "traced")
            let spans = tracer.finishedSpans
            #expect(spans.map(\.operationName) == ["GET hop", "GET hop", "GET"])
            let span = try #require(spans.last)
            #expect(span.attributes["http.response.status_code"]?.toSpanAttribute() == .int64(101))
            #expect(span.attributes["http.request.resend_count"]?.toSpanAttribute() == .int64(1))
            #expect(span.events.map(\.name) == ["courier.retry"])
            let hops = Array(spans.dropLast())
            #expect(hops.allSatisfy { $0.parentSpanID == span.spanID && $0.traceID == span.traceID })
            #expect(hops.map { $0.attributes["http.response.status_code"]?.toSpanAttribute() } == [.int64(503), .int64(101)])
            // The refused handshake reached the ordinary routes, which log it: it carried its hop's span.
            let refused = server.receivedRequests.first { $0.path.hasPrefix("/courier/websocket/") }
            #expect(refused?.value(forHTTPHeaderField: InMemoryTracer.spanIDKey) == hops.first?.spanID)
        }
    }

    @Test("A WebSocket task's metrics count its messages' payload bytes each way, on the attempt that opened the connection")
    func messageBytes() async throws {
        try await self.withSession { server, manager in
            let task = manager.webSocketTask(with: Request(url: self.url(server, "echo")))
            try await task.send(.text("hello"))
            try await task.send(.binary(Data(repeating: 7, count: 1000)))
            var messages = task.messages.makeAsyncIterator()
            #expect(try await messages.next() == .text("hello"))
            #expect(try await messages.next() == .binary(Data(repeating: 7, count: 1000)))
            await task.close()
            let metrics = try #require(task.metrics)
            #expect(metrics.bytesSent == 1005)
            #expect(metrics.bytesReceived == 1005)
            #expect(metrics.attempts.last?.bytesSent == 1005)
        }
    }
}
