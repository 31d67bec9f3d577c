import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import Testing

@testable import Courier

/// A route that answers `failures` times with `status` (and `headers`), then 200 with `body`.
func failingRoute(
    _ server: TestServer, _ path: String, failures: Int, status: HTTPResponse.Status = .serviceUnavailable,
    headers: HTTPFields = [:], failureBody: Data = Data("try later".utf8), body: Data = Data(#"{"ok":true}"#.utf8)
) -> NIOLockedValueBox<Int> {
    let hits = NIOLockedValueBox(0)
    server.route(path) { _ in
        let hit = hits.withLockedValue { $0 += 1; return $0 }
        if hit <= failures { return TestServer.Response(status: status, headerFields: headers, body: failureBody) }
        return TestServer.Response(status: .ok, headerFields: [.contentType: "application/json"], body: body)
    }
    return hits
}

@Suite("Session: retries restart the exchange (same task, new attempt), on a real socket")
struct SessionRetryTests {
    static func manager(_ clock: ManualRetryClock, policy: RetryPolicy = RetryPolicy()) -> (SessionManager, RecordingEventMonitor) {
        let manager = SessionManager()
        manager.completionQueue = TestQueues.completion
        var policy = policy
        policy.clock = clock
        manager.interceptor = Interceptor(retriers: [policy])
        manager.retryClock = clock
        let monitor = RecordingEventMonitor()
        manager.eventMonitors = [monitor]
        return (manager, monitor)
    }

    @Test("503 twice then 200: one task, three attempts, the backoff slept on the injected clock, one completion")
    func transientFailures() async throws {
        try await withTestServer { server in
            let hits = failingRoute(server, "/flaky", failures: 2)
            let clock = ManualRetryClock()
            var policy = RetryPolicy(retryLimit: 3)
            policy.random = { 0.5 }
            let (manager, monitor) = Self.manager(clock, policy: policy)
            defer { manager.invalidate(cancelingTasks: true) }
            let completions = NIOLockedValueBox(0)
            let done = AsyncStream<(HTTPResponse?, CourierError?)>.makeStream()
            let task = manager.dataTask(with: Request(url: server.url("/flaky"))) { response, _, error in
                completions.withLockedValue { $0 += 1 }
                done.continuation.yield((response, error))
            }
            let identifier = task.taskIdentifier
            task.resume()
            var results = done.stream.makeAsyncIterator()
            let result = await results.next()
            #expect(result?.0?.status == .ok)
            #expect(result?.1 == nil)
            #expect(hits.withLockedValue { $0 } == 3)
            #expect(clock.sleeps == [.milliseconds(250), .milliseconds(500)])
            #expect(task.taskIdentifier == identifier && task.state == .completed)
            await monitor.wait(for: "serialized")
            #expect(completions.withLockedValue { $0 } == 1)
            #expect(monitor.lines(for: task).filter { $0.hasPrefix("retry") } == ["retry transient-failure 0.25 seconds", "retry transient-failure 0.5 seconds"])
            #expect(monitor.lines(for: task).filter { $0.hasPrefix("completed") } == ["completed ok"])
            let metrics = try #require(monitor.metrics(for: task))
            #expect(metrics.attempts.map { $0.response?.status.code } == [503, 503, 200])
        }
    }

    @Test("Retry-After in seconds and as an HTTP date sets the wait; past the cap, the 503 is the outcome")
    func retryAfter() async throws {
        try await withTestServer { server in
            let clock = ManualRetryClock()
            let (manager, _) = Self.manager(clock)
            defer { manager.invalidate(cancelingTasks: true) }
            _ = failingRoute(server, "/seconds", failures: 1, headers: [.retryAfter: "3"])
            let seconds = try await manager.data(for: Request(url: server.url("/seconds")))
            #expect(seconds.response.status == .ok)
            let date = HTTPDate.format(clock.date.addingTimeInterval(42))
            _ = failingRoute(server, "/date", failures: 1, headers: [.retryAfter: date])
            let dated = try await manager.data(for: Request(url: server.url("/date")))
            #expect(dated.response.status == .ok)
            #expect(clock.sleeps == [.seconds(3), .seconds(42)])
            let hits = failingRoute(server, "/too-long", failures: 1, headers: [.retryAfter: "3600"])
            await #expect(throws: CourierError(.unacceptableStatusCode, "")) {
                try await manager.data(for: Request(url: server.url("/too-long")))
            }
            #expect(hits.withLockedValue { $0 } == 1)
        }
    }

    @Test("A body that cannot be sent twice is never sent twice, whatever a retrier says")
    func oneShotBody() async throws {
        try await withTestServer { server in
            let hits = failingRoute(server, "/upload", failures: 5)
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            let asked = NIOLockedValueBox(0)
            manager.interceptor = Retrier { attempt in
                asked.withLockedValue { $0 += 1 }
                return attempt.retryCount < 10 ? .retry(reason: .custom) : .doNotRetry
            }
            let body = AsyncThrowingStream<ByteBuffer, any Error> { continuation in
                continuation.yield(ByteBuffer(string: "once"))
                continuation.finish()
            }
            let response = try? await manager.data(for: Request(method: .put, url: server.url("/upload"), body: .stream(body, length: .known(4))))
            #expect(response == nil)
            #expect(hits.withLockedValue { $0 } == 1)
            #expect(asked.withLockedValue { $0 } == 0)
            // A replayable body is retried.
            let replayable = RequestBody.replayableStream(length: .known(5)) {
                AsyncThrowingStream<ByteBuffer, any Error> { continuation in
                    continuation.yield(ByteBuffer(string: "again"))
                    continuation.finish()
                }
            }
            let retried = try await manager.data(for: Request(method: .put, url: server.url("/upload"), body: replayable))
            #expect(retried.response.status == .ok)
            #expect(hits.withLockedValue { $0 } == 6)
            #expect(asked.withLockedValue { $0 } == 4)
        }
    }

    @Test("Progress never goes backwards: a retried 503's body is never reported; the task ends at 1.0 with the 200's")
    func progressIsMonotonic() async throws {
        try await withTestServer { server in
            let big = Data(repeating: UInt8(ascii: "x"), count: 200_000)
            let small = Data(repeating: UInt8(ascii: "y"), count: 10_000)
            _ = failingRoute(server, "/progress", failures: 1, failureBody: big, body: small)
            let (manager, monitor) = Self.manager(ManualRetryClock())
            defer { manager.invalidate(cancelingTasks: true) }
            let fractions = NIOLockedValueBox<[Double]>([])
            let task = manager.dataTask(
                with: Request(url: server.url("/progress")),
                downloadProgress: { progress in fractions.withLockedValue { $0.append(progress.fractionCompleted) } },
                completionHandler: nil)
            let updates = task.progressUpdates(for: .download)
            task.resume()
            var snapshots: [ProgressSnapshot] = []
            for await snapshot in updates { snapshots.append(snapshot) }
            #expect(zip(snapshots, snapshots.dropFirst()).allSatisfy { $0.fractionCompleted <= $1.fractionCompleted })
            #expect(snapshots.last?.fractionCompleted == 1)
            #expect(snapshots.allSatisfy { $0.completedUnitCount <= Int64(small.count) })
            let reported = fractions.withLockedValue { $0 }
            #expect(zip(reported, reported.dropFirst()).allSatisfy { $0 <= $1 })
            #expect(task.countOfBytesReceived == Int64(small.count))
            await monitor.wait(for: "completed")
            #expect(!monitor.lines(for: task).contains("received 200000"))
        }
    }

    @Test("A download retried after a 503 writes only the 200's body, to a fresh file")
    func download() async throws {
        try await withTestServer { server in
            let body = Data((0..<50_000).map { UInt8(truncatingIfNeeded: $0) })
            _ = failingRoute(server, "/file", failures: 1, failureBody: Data(repeating: 0xee, count: 70_000), body: body)
            let (manager, _) = Self.manager(ManualRetryClock())
            defer { manager.invalidate(cancelingTasks: true) }
            let downloaded = try await manager.download(Request(url: server.url("/file")))
            defer { try? FileManager.default.removeItem(at: downloaded.fileURL) }
            #expect(downloaded.response.status == .ok)
            #expect(try Data(contentsOf: downloaded.fileURL) == body)
        }
    }

    @Test("A refused connection is retried by the policy; connection errors the policy does not name are not")
    func connectionErrors() async throws {
        let clock = ManualRetryClock()
        let (manager, monitor) = Self.manager(clock)
        defer { manager.invalidate(cancelingTasks: true) }
        // Nothing listens on port 9 of the loopback: refused at once.
        await #expect(throws: CourierError(.connectionFailed, "")) {
            try await manager.data(for: Request(url: URL(string: "http://127.0.0.1:9/")!))
        }
        #expect(clock.sleeps.count == 2)
        #expect(monitor.lines().filter { $0.hasPrefix("retry transient-failure") }.count == 2)
        await #expect(throws: CourierError(.unsupportedScheme, "")) {
            try await manager.data(for: Request(url: URL(string: "ftp://127.0.0.1/")!))
        }
        #expect(clock.sleeps.count == 2)
    }

    @Test("Cancelling a task during its backoff ends it at once; invalidating without cancelling ends it with its response")
    func cancelDuringBackoff() async throws {
        try await withTestServer { server in
            _ = failingRoute(server, "/slow", failures: 100)
            let manager = SessionManager()
            manager.completionQueue = TestQueues.completion
            defer { manager.invalidate(cancelingTasks: true) }
            var policy = RetryPolicy()
            policy.initialBackoff = .seconds(3600)
            policy.random = { 1 }
            manager.interceptor = policy
            let monitor = RecordingEventMonitor()
            manager.eventMonitors = [monitor]
            let done = AsyncStream<(HTTPResponse?, CourierError?)>.makeStream()
            let task = manager.dataTask(with: Request(url: server.url("/slow"))) { response, _, error in done.continuation.yield((response, error)) }
            task.resume()
            await monitor.wait(for: "retry")
            task.cancel()
            var results = done.stream.makeAsyncIterator()
            let cancelled = await results.next()
            #expect(cancelled?.1?.code == .cancelled)

            let second = manager.dataTask(with: Request(url: server.url("/slow"))) { response, _, error in done.continuation.yield((response, error)) }
            second.resume()
            await monitor.wait(for: "retry", count: 2)
            await manager.invalidate(cancelingTasks: false)
            let ended = await results.next()
            #expect(ended?.0?.status == .serviceUnavailable)
            #expect(ended?.1?.code == .unacceptableStatusCode)
        }
    }

    @Test("Adapters: the session's then the request's, before every attempt, from the request the task was made with")
    func adapterOrder() async throws {
        try await withTestServer { server in
            _ = failingRoute(server, "/tags", failures: 1)
            let seen = NIOLockedValueBox<[[String]]>([])
            server.route("/echo-tags") { request in
                seen.withLockedValue { $0.append(request.headerFields[values: HTTPField.Name("X-Tag")!]) }
                return .text("ok")
            }
            let (manager, monitor) = Self.manager(ManualRetryClock())
            defer { manager.invalidate(cancelingTasks: true) }
            func tag(_ value: String) -> Adapter {
                Adapter { request, context in
                    var request = request
                    request.headerFields.append(HTTPField(name: HTTPField.Name("X-Tag")!, value: "\(value)\(context.retryCount)"))
                    return request
                }
            }
            manager.interceptor = Interceptor(adapters: [tag("session-a"), tag("session-b")], retriers: [RetryPolicy()])
            var request = Request(url: server.url("/echo-tags"))
            request.interceptor = Interceptor(adapters: [tag("request-")])
            _ = try await manager.data(for: request)
            #expect(seen.withLockedValue { $0 } == [["session-a0", "session-b0", "request-0"]])
            await monitor.wait(for: "adapted")
        }
    }

    /// A retry counts its bytes from nothing: an attempt that broke off after 1,000 bytes of a 200,
    /// then a retry that fails before any head, leaves a task with no response, nothing received
    /// and nothing expected, and metrics that count the 1,000 bytes once. The counts were the
    /// first attempt's, and the metrics counted them for both attempts.
    @Test("A retry that fails before its head keeps no byte counts of the attempt before")
    func aRetryCountsItsBytesFromNothing() async throws {
        try await withTestServer { server in
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            let nowhere = URL(string: "http://127.0.0.1:\(closedPort())/nowhere")!
            manager.interceptor = Interceptor(
                adapters: [Adapter { request, context in context.retryCount == 0 ? request : Request(url: nowhere) }],
                retriers: [Retrier { attempt in attempt.retryCount == 0 && attempt.error?.code == .connectionClosed ? .retry() : .doNotRetry }])
            let metrics = NIOLockedValueBox<TaskMetrics?>(nil)
            manager.hooks.taskDidFinishCollectingMetrics = { _, _, collected in metrics.withLockedValue { $0 = collected } }
            let ended = Recorder<CourierError?>()
            let task = manager.dataTask(with: Request(url: server.url("/courier/truncated/1000"))) { _, _, error in ended.append(error) }
            task.resume()
            #expect(await ended.wait { $0.count == 1 })
            #expect(ended.all.first??.code == .connectionFailed, "\(ended.all)")
            #expect(task.response == nil)
            #expect(task.countOfBytesReceived == 0)
            #expect(task.countOfBytesExpectedToReceive == -1)
            let collected = try #require(metrics.withLockedValue { $0 })
            #expect(collected.attempts.count == 2)
            #expect(collected.attempts.last?.bytesReceived == 0)
        }
    }

    @Test("An adapter fails the request before it is sent, with its typed error")
    func adapterFailure() async throws {
        try await withTestServer { server in
            let hits = failingRoute(server, "/never", failures: 0)
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            let monitor = RecordingEventMonitor()
            manager.eventMonitors = [monitor]
            manager.interceptor = Adapter { request, _ in throw CourierError(.invalidRequest, "no token for \(request.url.path)") }
            do throws(CourierError) {
                _ = try await manager.data(for: Request(url: server.url("/never")))
                Issue.record("sent")
            } catch {
                #expect(error.code == .invalidRequest)
                #expect(error.message == "no token for /never")
            }
            #expect(hits.withLockedValue { $0 } == 0)
            await monitor.wait(for: "completed")
            #expect(monitor.lines().contains("adaptation failed invalidRequest"))
        }
    }

    @Test("Cancelling a task while an adapter runs ends it at once, and cancels the adapter's work")
    func cancelDuringAdaptation() async throws {
        let manager = SessionManager(engine: RefusingEngine())
        manager.completionQueue = TestQueues.completion
        defer { manager.invalidate(cancelingTasks: true) }
        let started = AsyncStream<Void>.makeStream()
        let adapterCancelled = AsyncStream<Void>.makeStream()
        manager.interceptor = Adapter { request, _ in
            started.continuation.yield()
            do {
                try await Task.sleep(for: .seconds(3600))
            } catch {
                adapterCancelled.continuation.yield()
                throw error
            }
            return request
        }
        let done = AsyncStream<CourierError?>.makeStream()
        let task = manager.dataTask(with: Request(url: URL(string: "http://x.test/")!)) { _, _, error in done.continuation.yield(error) }
        task.resume()
        var startedIterator = started.stream.makeAsyncIterator()
        await startedIterator.next()
        task.cancel()
        var results = done.stream.makeAsyncIterator()
        #expect(await results.next()??.code == .cancelled)
        var cancelledIterator = adapterCancelled.stream.makeAsyncIterator()
        await cancelledIterator.next()
    }

    /// A `POST` answered `303`, whose `GET` then fails with a retryable status, is not sent again:
    /// a retry sends the attempt's first request, and the policy judges its method
    /// (``FailedAttempt/initialRequest``). Before, it judged the `GET`, and the order was placed
    /// three times.
    @Test func aPostAnsweredWithASeeOtherIsNotRetriedForItsGetFailing() async throws {
        try await withTestServer { server in
            let posts = NIOLockedValueBox(0)
            server.route("/orders") { request in
                guard request.method == .post else { return TestServer.Response(status: .methodNotAllowed) }
                posts.withLockedValue { $0 += 1 }
                return TestServer.Response(status: .seeOther, headerFields: [.location: "/orders/42"])
            }
            let gets = failingRoute(server, "/orders/42", failures: 10)
            let clock = ManualRetryClock()
            let (manager, _) = Self.manager(clock)
            defer { manager.invalidate(cancelingTasks: true) }
            let recorded = NIOLockedValueBox<[(request: HTTPRequest.Method, initial: HTTPRequest.Method)]>([])
            let policy = RetryPolicy()
            manager.interceptor = Interceptor(retriers: [
                Retrier { attempt in
                    recorded.withLockedValue { $0.append((attempt.request.method, attempt.initialRequest.method)) }
                    return try await policy.retry(attempt)
                }
            ])
            var request = Request(method: .post, url: server.url("/orders"))
            request.body = .data(Data("item=1".utf8))
            var anyStatus = DataResponseSerializer()
            anyStatus.http.acceptableStatusCodes = IndexSet(integersIn: 100..<600)
            let response = try await manager.response(for: request, serializer: anyStatus)
            #expect(response.response.status == .serviceUnavailable)
            #expect(posts.withLockedValue { $0 } == 1, "the order was placed once")
            #expect(gets.withLockedValue { $0 } == 1)
            #expect(recorded.withLockedValue { $0.map { "\($0.request) \($0.initial)" } } == ["GET POST"])
            // Without a redirect the two are the one request.
            let plain = try await manager.response(for: Request(url: server.url("/orders/42")), serializer: anyStatus)
            #expect(plain.response.status == .serviceUnavailable)
            #expect(recorded.withLockedValue { $0.last.map { "\($0.request) \($0.initial)" } } == "GET GET")
        }
    }

    /// A response that may still be retried has its progress held back until the attempt is
    /// final (a 503 with a retrier). Cancelled mid-body, it is never reported, but its attempt's
    /// metrics count the bytes it received: the held count was dropped, and the attempt said 0.
    @Test func aHeldResponseCancelledMidBodyCountsItsBytesInTheAttempt() async throws {
        let gate = OneShotGate()
        try await ScriptedHTTPServer.with({ _, _, _ in
            .respondInTwoParts(Array("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 10\r\n\r\n0123".utf8), then: Array("456789".utf8), gate: gate)
        }) { server in
            let (manager, monitor) = Self.manager(ManualRetryClock())
            defer { manager.invalidate(cancelingTasks: true) }
            let task = manager.dataTask(with: Request(url: server.baseURL), completionHandler: nil)
            task.resume()
            #expect(await eventually { task.delegate.state.withLockedValue { $0.progress.attemptBytesReceived } == 4 }, "the body's first 4 bytes came")
            #expect(task.countOfBytesReceived == 0, "held back")
            task.cancel()
            await monitor.wait(for: "metrics")
            gate.open()
            let metrics = try #require(monitor.metrics(for: task))
            #expect(metrics.attempts.count == 1)
            #expect(metrics.attempts.last?.response?.status.code == 503)
            #expect(metrics.attempts.last?.bytesReceived == 4)
            #expect(metrics.attempts.last?.error?.code == .cancelled)
            #expect(task.countOfBytesReceived == 0, "a failed task's held progress is not reported")
        }
    }
}
