import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import Testing

/// Twins of the interceptor tests of Alamofire's `Tests/SessionTests.swift` (the rest of that
/// file is issue 17's). Two differences run through them: Courier's adapters run when a task
/// starts an attempt (at `resume()`, and again before each retry), not when the task is made; and
/// a failed adaptation ends the task with `.requestAdaptationFailed` at once (it is not offered to
/// the retriers). Retriers are asked about transport failures, statuses of 400 or more and, as in
/// Alamofire, a response the task's serializer refused.
@Suite("Conformance: Alamofire SessionTests (interceptors)")
struct AlamofireSessionInterceptorConformanceTests {
    /// An error that is not a `CourierError`.
    struct MockError: Error {}

    /// Alamofire's RequestHandler: counts adaptations and retry questions; retries once by
    /// default; can add Basic authorization from the second adaptation on, throw on the second
    /// adaptation, throw when asked to retry, or ask for a delay.
    final class Handler: RequestInterceptor {
        struct Counts: Equatable {
            var adaptCalled = 0, adapted = 0, retryCalled = 0, retried = 0
        }

        let counts = NIOLockedValueBox(Counts())
        let throwsOnSecondAdapt: Bool
        let throwsOnFirstAdapt: Bool
        let appliesAuthorization: Bool
        let throwsOnRetry: Bool
        let retryDelay: Duration
        let shouldRetry: Bool

        init(
            throwsOnFirstAdapt: Bool = false, throwsOnSecondAdapt: Bool = false, appliesAuthorization: Bool = false,
            throwsOnRetry: Bool = false, retryDelay: Duration = .zero, shouldRetry: Bool = true
        ) {
            self.shouldRetry = shouldRetry
            self.throwsOnFirstAdapt = throwsOnFirstAdapt
            self.throwsOnSecondAdapt = throwsOnSecondAdapt
            self.appliesAuthorization = appliesAuthorization
            self.throwsOnRetry = throwsOnRetry
            self.retryDelay = retryDelay
        }

        var snapshot: Counts { self.counts.withLockedValue { $0 } }

        func adapt(_ request: Request, using context: AdaptationContext) async throws -> Request {
            let call = self.counts.withLockedValue { $0.adaptCalled += 1; return $0.adaptCalled }
            if (call == 1 && self.throwsOnFirstAdapt) || (call == 2 && self.throwsOnSecondAdapt) {
                throw CourierError(.invalidURL, "/adapt/error/\(call)")
            }
            var request = request
            if self.appliesAuthorization, call > 1 {
                request.headerFields[.authorization] = "Basic " + Data("user:password".utf8).base64EncodedString()
            }
            self.counts.withLockedValue { $0.adapted += 1 }
            return request
        }

        func retry(_ attempt: FailedAttempt) async throws -> RetryDecision {
            let call = self.counts.withLockedValue { $0.retryCalled += 1; return $0.retryCalled }
            if self.throwsOnRetry { throw CourierError(.invalidURL, "/invalid/url/\(call)") }
            let retry = self.counts.withLockedValue { counts -> Bool in
                guard self.shouldRetry, counts.retried < 1 else { return false }
                counts.retried += 1
                return true
            }
            return retry ? .retry(after: self.retryDelay) : .doNotRetry
        }
    }

    /// Alamofire's HTTPMethodAdapter and HeaderAdapter, counting.
    static func methodAdapter(_ method: HTTPRequest.Method, count: NIOLockedValueBox<Int>, throwing: Bool = false) -> Adapter {
        Adapter { request, _ in
            count.withLockedValue { $0 += 1 }
            if throwing { throw CourierError(.invalidURL, "") }
            var request = request
            request.method = method
            return request
        }
    }

    static func headerAdapter(count: NIOLockedValueBox<Int>, throwing: Bool = false) -> Adapter {
        Adapter { request, _ in
            count.withLockedValue { $0 += 1 }
            if throwing { throw CourierError(.invalidURL, "") }
            var request = request
            request.headerFields[HTTPField.Name("X-Adapted")!] = "yes"
            return request
        }
    }

    enum Kind { case data, download, uploadData, uploadFile, uploadStream }

    /// Starts a task of `kind` for `request` on `manager` and waits for its error.
    static func run(_ kind: Kind, _ request: Request, on manager: SessionManager) async throws -> CourierError? {
        switch kind {
        case .data:
            return await awaitCallback { finish in manager.dataTask(with: request) { _, _, error in finish(error) }.resume() }
        case .download:
            return await awaitCallback { finish in
                manager.downloadTask(with: request) { _, file, error in
                    if let file { try? FileManager.default.removeItem(at: file) }
                    finish(error)
                }.resume()
            }
        case .uploadData:
            return await awaitCallback { finish in
                manager.uploadTask(with: request, fromData: Data("data".utf8)) { _, _, error in finish(error) }.resume()
            }
        case .uploadFile:
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("courier-af-session-\(UUID().uuidString)")
            try Data("data".utf8).write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            return await awaitCallback { finish in
                manager.uploadTask(with: request, fromFile: file) { _, _, error in finish(error) }.resume()
            }
        case .uploadStream:
            var streamed = request
            streamed.body = .stream(AsyncStream<ByteBuffer> { continuation in
                continuation.yield(ByteBuffer(string: "data"))
                continuation.finish()
            }.mapError(), length: .known(4))
            return await awaitCallback { finish in
                manager.uploadTask(withStreamedRequest: streamed) { _, _, error in finish(error) }.resume()
            }
        }
    }

    /// Alamofire's "calls request adapters when creating" tests: the session's adapter changes the
    /// method of both tasks, the second task's own adapter adds a header.
    static func adaptersRun(_ kind: Kind, from method: HTTPRequest.Method, to adapted: HTTPRequest.Method) async throws {
        try await withTestServer { server in
            let seen = NIOLockedValueBox<[(HTTPRequest.Method, Bool)]>([])
            server.route("/adapted") { request in
                seen.withLockedValue { $0.append((request.method, request.headerFields[HTTPField.Name("X-Adapted")!] == "yes")) }
                return TestServer.Response(headerFields: [.contentType: "application/json"], body: Data("{}".utf8))
            }
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            let methodCount = NIOLockedValueBox(0)
            let headerCount = NIOLockedValueBox(0)
            let monitor = RecordingEventMonitor()
            manager.interceptor = Self.methodAdapter(adapted, count: methodCount)
            manager.eventMonitors = [monitor]
            let plain = Request(method: method, url: server.url("/adapted"))
            var own = plain
            own.interceptor = Self.headerAdapter(count: headerCount)
            let first = try await Self.run(kind, plain, on: manager)
            let second = try await Self.run(kind, own, on: manager)
            #expect(first == nil)
            #expect(second == nil)
            let requests = seen.withLockedValue { $0 }
            #expect(requests.map(\.0) == [adapted, adapted])
            #expect(requests.map(\.1) == [false, true])
            #expect(methodCount.withLockedValue { $0 } == 2)
            #expect(headerCount.withLockedValue { $0 } == 1)
            await monitor.wait(for: "completed", count: 2)
            #expect(monitor.lines().filter { $0.hasPrefix("adapted") }.count == 2)
        }
    }

    /// Differs: adapters run when the task starts, not when it is made.
    @Test func testThatSessionCallsRequestAdaptersWhenCreatingDataRequest() async throws {
        try await Self.adaptersRun(.data, from: .get, to: .post)
    }

    /// Differs: adapters run when the task starts, not when it is made.
    @Test func testThatSessionCallsRequestAdaptersWhenCreatingDownloadRequest() async throws {
        try await Self.adaptersRun(.download, from: .get, to: .post)
    }

    /// Differs: adapters run when the task starts; the body's method changes from POST to PUT
    /// (Alamofire's test turns it into a GET with a body).
    @Test func testThatSessionCallsRequestAdaptersWhenCreatingUploadRequestWithData() async throws {
        try await Self.adaptersRun(.uploadData, from: .post, to: .put)
    }

    /// Differs: as for data; a real file is sent.
    @Test func testThatSessionCallsRequestAdaptersWhenCreatingUploadRequestWithFile() async throws {
        try await Self.adaptersRun(.uploadFile, from: .post, to: .put)
    }

    /// Differs: as for data; the body is an `AsyncSequence` (Courier's input stream).
    @Test func testThatSessionCallsRequestAdaptersWhenCreatingUploadRequestWithInputStream() async throws {
        try await Self.adaptersRun(.uploadStream, from: .post, to: .put)
    }

    @Test func testThatSessionReturnsRequestAdaptationErrorWhenRequestAdapterThrowsError() async throws {
        try await withTestServer { server in
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            let counts = (NIOLockedValueBox(0), NIOLockedValueBox(0))
            let monitor = RecordingEventMonitor()
            manager.interceptor = Self.methodAdapter(.post, count: counts.0, throwing: true)
            manager.eventMonitors = [monitor]
            var own = Request(url: server.url("/get"))
            own.interceptor = Self.headerAdapter(count: counts.1, throwing: true)
            for request in [Request(url: server.url("/get")), own] {
                let error = try await Self.run(.data, request, on: manager)
                #expect(error?.code == .invalidURL, "a CourierError from an adapter is the task's error as it is")
            }
            // Another error is wrapped as .requestAdaptationFailed.
            manager.interceptor = Adapter { _, _ in throw MockError() }
            let wrapped = try await Self.run(.data, Request(url: server.url("/get")), on: manager)
            #expect(wrapped?.code == .requestAdaptationFailed)
            await monitor.wait(for: "completed", count: 3)
            #expect(monitor.lines().filter { $0.hasPrefix("adaptation failed") }.count == 3)
        }
    }

    /// The three "initially encounters adapt error" twins: the adapter throws on its first call.
    static func adaptErrorIsFinal(_ kind: Kind, method: HTTPRequest.Method) async throws {
        try await withTestServer { server in
            let hits = NIOLockedValueBox(0)
            server.route("/basic-auth-counted") { _ in
                hits.withLockedValue { $0 += 1 }
                return TestServer.Response(headerFields: [.contentType: "application/json"], body: Data("{}".utf8))
            }
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            let handler = Handler(throwsOnFirstAdapt: true)
            var request = Request(method: method, url: server.url("/basic-auth-counted"))
            request.interceptor = handler
            let error = try await Self.run(kind, request, on: manager)
            #expect(error?.code == .invalidURL)
            #expect(handler.snapshot == Handler.Counts(adaptCalled: 1, adapted: 0, retryCalled: 0, retried: 0))
            #expect(hits.withLockedValue { $0 } == 0)
            #expect(await eventually { manager.tasks.isEmpty })
        }
    }

    /// Differs: a failed adaptation ends the task before anything is sent; it is not offered to
    /// the retriers (Alamofire asks them and adapts again).
    @Test func testThatSessionCallsRequestRetrierWhenRequestInitiallyEncountersAdaptError() async throws {
        try await Self.adaptErrorIsFinal(.data, method: .get)
    }

    /// Differs: as for data requests, a failed adaptation is final.
    @Test func testThatSessionCallsRequestRetrierWhenDownloadInitiallyEncountersAdaptError() async throws {
        try await Self.adaptErrorIsFinal(.download, method: .get)
    }

    /// Differs: as for data requests, a failed adaptation is final.
    @Test func testThatSessionCallsRequestRetrierWhenUploadInitiallyEncountersAdaptError() async throws {
        try await Self.adaptErrorIsFinal(.uploadData, method: .post)
    }

    /// Differs: the retrier is asked twice, once per failed attempt (Alamofire asks a third time
    /// for the serializer's failure).
    @Test func testThatSessionCallsRequestRetrierWhenRequestEncountersError() async throws {
        try await withTestServer { server in
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            let handler = Handler()
            var request = Request(url: server.url("/basic-auth/user/password"))
            request.interceptor = handler
            let error = try await Self.run(.data, request, on: manager)
            #expect(error?.code == .unacceptableStatusCode)
            #expect(handler.snapshot == Handler.Counts(adaptCalled: 2, adapted: 2, retryCalled: 2, retried: 1))
            #expect(await eventually { manager.tasks.isEmpty })
        }
    }

    /// Differs: each retrier is asked once per failed attempt, the session's first (Alamofire's
    /// counts include the serializer's failure).
    @Test func testThatSessionCallsSessionRetrierTheRequestRetrierWhenRequestEncountersError() async throws {
        try await withTestServer { server in
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            let sessionHandler = Handler()
            let requestHandler = Handler()
            manager.interceptor = sessionHandler
            var request = Request(url: server.url("/basic-auth/user/password"))
            request.interceptor = requestHandler
            let error = try await Self.run(.data, request, on: manager)
            #expect(error?.code == .unacceptableStatusCode)
            // Attempt 1: the session's retries. Attempt 2: the session's declines, the request's
            // retries. Attempt 3: both decline.
            #expect(sessionHandler.snapshot == Handler.Counts(adaptCalled: 3, adapted: 3, retryCalled: 3, retried: 1))
            #expect(requestHandler.snapshot == Handler.Counts(adaptCalled: 3, adapted: 3, retryCalled: 2, retried: 1))
        }
    }

    @Test func testThatSessionCallsAdapterWhenRequestIsRetried() async throws {
        try await withTestServer { server in
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            let handler = Handler(appliesAuthorization: true)
            manager.interceptor = handler
            let error = try await Self.run(.data, Request(url: server.url("/basic-auth/user/password")), on: manager)
            #expect(error == nil)
            #expect(handler.snapshot == Handler.Counts(adaptCalled: 2, adapted: 2, retryCalled: 1, retried: 1))
            #expect(await eventually { manager.tasks.isEmpty })
        }
    }

    /// Differs: the retrier is asked once (Alamofire asks about the adaptation error too).
    @Test func testThatSessionReturnsRequestAdaptationErrorWhenRequestIsRetried() async throws {
        try await withTestServer { server in
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            let handler = Handler(throwsOnSecondAdapt: true)
            manager.interceptor = handler
            let error = try await Self.run(.data, Request(url: server.url("/basic-auth/user/password")), on: manager)
            #expect(error?.code == .invalidURL)
            #expect(error?.message.contains("/adapt/error/2") == true)
            #expect(handler.snapshot == Handler.Counts(adaptCalled: 2, adapted: 1, retryCalled: 1, retried: 1))
        }
    }

    /// Differs: the delay is slept on the session's `retryClock` (a test clock here, which records it).
    @Test func testThatSessionRetriesRequestWithDelayWhenRetryResultContainsDelay() async throws {
        try await withTestServer { server in
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            let clock = ManualRetryClock()
            manager.retryClock = clock
            let handler = Handler(throwsOnSecondAdapt: true, retryDelay: .milliseconds(10))
            manager.interceptor = handler
            let error = try await Self.run(.data, Request(url: server.url("/basic-auth/user/password")), on: manager)
            #expect(error?.message.contains("/adapt/error/2") == true)
            #expect(clock.sleeps == [.milliseconds(10)])
            #expect(handler.snapshot == Handler.Counts(adaptCalled: 2, adapted: 1, retryCalled: 1, retried: 1))
        }
    }

    /// Differs: the retrier is asked once; a `CourierError` it throws is the task's error as it is,
    /// another error becomes `.requestRetryFailed`.
    @Test func testThatSessionReturnsRequestRetryErrorWhenRequestRetrierThrowsError() async throws {
        try await withTestServer { server in
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            let handler = Handler(throwsOnRetry: true)
            manager.interceptor = handler
            let error = try await Self.run(.data, Request(url: server.url("/basic-auth/user/password")), on: manager)
            #expect(error?.message.contains("/invalid/url/1") == true)
            #expect(handler.snapshot == Handler.Counts(adaptCalled: 1, adapted: 1, retryCalled: 1, retried: 0))
            manager.interceptor = Retrier { _ in throw MockError() }
            let wrapped = try await Self.run(.data, Request(url: server.url("/basic-auth/user/password")), on: manager)
            #expect(wrapped?.code == .requestRetryFailed)
        }
    }
}

extension AsyncStream where Element == ByteBuffer {
    /// The stream as an `AsyncSequence` that may throw, as `RequestBody.stream` takes.
    func mapError() -> AsyncThrowingStream<ByteBuffer, any Error> {
        AsyncThrowingStream { continuation in
            let task = Task {
                for await element in self { continuation.yield(element) }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}

/// Twins of two more interceptor tests of Alamofire's `Tests/SessionTests.swift`.
extension AlamofireSessionInterceptorConformanceTests {
    /// Differs: a GET with a body is sent as given (URLSession refuses it, so Alamofire does).
    @Test func testThatAdaptedGETRequestsWithBodyDataAreConsideredInvalid() async throws {
        try await withTestServer { server in
            let bodies = NIOLockedValueBox<[String]>([])
            server.route("/get-with-body") { request in
                bodies.withLockedValue { $0.append(String(decoding: request.body, as: UTF8.self)) }
                return TestServer.Response(headerFields: [.contentType: "application/json"], body: Data("{}".utf8))
            }
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            manager.interceptor = Adapter { request, _ in
                var request = request
                request.body = .data(Data("invalid".utf8))
                return request
            }
            let error = try await Self.run(.data, Request(url: server.url("/get-with-body")), on: manager)
            #expect(error == nil)
            #expect(bodies.withLockedValue { $0 } == ["invalid"])
        }
    }

    /// Differs: the mass cancellation is `invalidate(cancelingTasks: true)`; the retried request
    /// is cancelled once the server holds it.
    @Test func testThatRetriedRequestsCanBeMassCancelled() async throws {
        try await withTestServer { server in
            let (arrivals, arrived) = AsyncStream<Void>.makeStream()
            let (releases, release) = AsyncStream<Void>.makeStream()
            defer { release.finish() }
            server.route("/held") { _ in
                arrived.yield()
                // Held until the test ends (the client is gone by then).
                for await _ in releases {}
                return TestServer.Response()
            }
            let manager = SessionManager()
            let held = server.url("/held")
            manager.interceptor = Interceptor(
                adapters: [Adapter { request, context in
                    guard context.retryCount > 0 else { return request }
                    var request = request
                    request.url = held
                    return request
                }],
                retriers: [Retrier { attempt in attempt.retryCount == 0 ? .retry() : .doNotRetry }])
            async let ended = Self.run(.data, Request(url: server.url("/status/401")), on: manager)
            for await _ in arrivals { break }
            await manager.invalidate(cancelingTasks: true)
            let error = try await ended
            #expect(error?.code == .cancelled)
            release.finish()
        }
    }

    // MARK: Response serializer retry

    struct TestResponse: Decodable, Sendable { let url: String }

    /// Sends `GET /image/jpeg` (a JPEG that no `TestResponse` decodes from) with `handler` as the
    /// request's interceptor, through the `async` call, and returns its error.
    static func decodeJPEG(with handler: Handler) async throws -> (CourierError?, SessionManager) {
        try await withTestServer { server in
            let manager = SessionManager()
            var request = Request(url: server.url("/image/jpeg"))
            request.interceptor = handler
            let error = await #expect(throws: CourierError.self) {
                try await manager.response(for: request, serializer: DecodableResponseSerializer(TestResponse.self))
            }
            #expect(manager.tasks.isEmpty)
            await manager.invalidate(cancelingTasks: true)
            return (error, manager)
        }
    }

    @Test func testThatSessionCallsRequestRetrierWhenResponseSerializerThrowsError() async throws {
        let handler = Handler(shouldRetry: false)
        let (error, _) = try await Self.decodeJPEG(with: handler)
        #expect(handler.snapshot == Handler.Counts(adaptCalled: 1, adapted: 1, retryCalled: 1, retried: 0))
        #expect(error?.code == .responseSerializationFailed)
        #expect(error?.underlyingError is DecodingError)
    }

    /// Differs: a Courier task has one serializer, so the retrier is asked once a call (here an
    /// `async` call and a completion handler's task); a retrier that throws a `CourierError` ends
    /// the task with that error as it is (Alamofire wraps it in `requestRetryFailed` with the
    /// serializer's error beside it).
    @Test func testThatSessionCallsRequestRetrierForAllResponseSerializersThatThrowError() async throws {
        let handler = Handler(throwsOnRetry: true)
        let (error, _) = try await Self.decodeJPEG(with: handler)
        #expect(error?.code == .invalidURL)
        #expect(error?.message.contains("/invalid/url/1") == true)
        try await withTestServer { server in
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            manager.completionQueue = TestQueues.completion
            manager.responseSerializer = DecodableResponseSerializer(TestResponse.self)
            var request = Request(url: server.url("/image/jpeg"))
            request.interceptor = handler
            let second = try await Self.run(.data, request, on: manager)
            #expect(second?.code == .invalidURL)
            #expect(second?.message.contains("/invalid/url/2") == true)
        }
        #expect(handler.snapshot == Handler.Counts(adaptCalled: 2, adapted: 2, retryCalled: 2, retried: 0))
    }

    /// Differs: one serializer, so the retrier is asked twice (Alamofire's two serializers make
    /// it three): the first refusal is retried, the second is not; the error is the serializer's.
    @Test func testThatSessionRetriesRequestImmediatelyWhenResponseSerializerRequestsRetry() async throws {
        let handler = Handler()
        let (error, _) = try await Self.decodeJPEG(with: handler)
        #expect(handler.snapshot == Handler.Counts(adaptCalled: 2, adapted: 2, retryCalled: 2, retried: 1))
        #expect(error?.code == .responseSerializationFailed)
        #expect(error?.underlyingError is DecodingError)
    }

    /// Differs: the failed second adaptation ends the task with the adapter's error at once (it is
    /// not offered to the retriers, so they are asked once, not four times).
    @Test func testThatSessionCallsResponseSerializerCompletionsWhenAdapterThrowsErrorDuringRetry() async throws {
        let handler = Handler(throwsOnSecondAdapt: true)
        let (error, _) = try await Self.decodeJPEG(with: handler)
        #expect(handler.snapshot == Handler.Counts(adaptCalled: 2, adapted: 1, retryCalled: 1, retried: 1))
        #expect(error?.code == .invalidURL)
        #expect(error?.message.contains("/adapt/error/2") == true)
    }
}
