import Courier
import CourierTesting
import Dispatch
import Foundation
import NIOConcurrencyHelpers
import Testing

/// Twins of AFNetworking 2.x's `Tests/Tests/AFHTTPRequestOperationTests.m` (tag 2.7.0), against
/// TestServer. Each operation runs on a manager of its own, its blocks on a private queue.
@Suite("Conformance: AFNetworking 2.x AFHTTPRequestOperationTests")
struct AFHTTPRequestOperationConformanceTests {
    static let queue = DispatchQueue(label: "courier.conformance.operations")

    /// What an operation's `success` or `failure` saw.
    struct Outcome: Sendable {
        var object: (any Sendable)?
        var error: CourierError?
    }

    static func withServerAndManager<T>(
        _ configuration: TestServer.Configuration = .init(),
        securityPolicy: SecurityPolicy = .default,
        _ body: (TestServer, HTTPSessionManager) async throws -> T
    ) async throws -> T {
        try await withTestServer(configuration) { server in
            try await withManager(baseURL: server.baseURL, securityPolicy: securityPolicy) { manager in
                try await body(server, manager)
            }
        }
    }

    static func operation(_ url: URL, _ manager: SessionManager) -> HTTPRequestOperation {
        let operation = HTTPRequestOperation(request: Request(url: url), sessionManager: manager)
        operation.completionQueue = Self.queue
        return operation
    }

    /// Sets the completion blocks, runs `start` and waits for one of them.
    static func outcome(of operation: HTTPRequestOperation, start: @escaping @Sendable () -> Void = {}) async -> Outcome {
        await awaitCallback { finish in
            operation.setCompletionBlockWithSuccess({ _, object in finish(Outcome(object: object)) }, failure: { _, error in finish(Outcome(error: error)) })
            start()
            operation.start()
        }
    }

    /// Waits until the operation's task is running (the operation is executing with a task).
    static func executing(_ operation: HTTPRequestOperation) async -> Bool {
        await eventually { operation.isExecuting && operation.task?.state == .running }
    }

    @Test func testPauseResumeStallsNetworkThread() async throws {
        try await Self.withServerAndManager { server, manager in
            let first = Self.operation(server.url("/delay/1"), manager)
            let outcome = await awaitCallback { (finish: @escaping @Sendable (Outcome) -> Void) in
                first.setCompletionBlockWithSuccess({ _, object in finish(Outcome(object: object)) }, failure: { _, error in finish(Outcome(error: error)) })
                first.start()
                first.pause()
                #expect(first.isPaused)
                first.resume()
            }
            #expect(first.isFinished)
            #expect(outcome.error == nil)
            #expect(outcome.object != nil)
            // Later operations still work.
            let second = await Self.outcome(of: Self.operation(server.url("/delay/1"), manager))
            #expect(second.error == nil)
            #expect(second.object != nil)
        }
    }

    @Test func testThatOperationInvokesSuccessCompletionBlockWithResponseObjectOnSuccess() async throws {
        try await Self.withServerAndManager { server, manager in
            let operation = Self.operation(server.url("/get"), manager)
            let outcome = await Self.outcome(of: operation)
            #expect(operation.isFinished)
            #expect(outcome.error == nil)
            #expect(outcome.object != nil)
        }
    }

    /// The operation's serializer is the data serializer, as in 2.x: a 204 gives empty data.
    @Test func testThatOperationInvokesSuccessCompletionBlockOn204() async throws {
        try await Self.withServerAndManager { server, manager in
            let operation = Self.operation(server.url("/status/204"), manager)
            let outcome = await Self.outcome(of: operation)
            #expect(operation.isFinished)
            #expect(outcome.error == nil)
            #expect((outcome.object as? Data) == Data() || outcome.object == nil)
            #expect(operation.responseData?.isEmpty ?? true)
        }
    }

    @Test func testThatOperationInvokesFailureCompletionBlockWithErrorOnFailure() async throws {
        try await Self.withServerAndManager { server, manager in
            let operation = Self.operation(server.url("/status/404"), manager)
            let outcome = await Self.outcome(of: operation)
            #expect(operation.isFinished)
            #expect(outcome.error?.code == .unacceptableStatusCode)
        }
    }

    /// The source cancels once the operation executes; here, when the request reaches the server
    /// (which answers only 10 s later), so that the cancel wins on a loaded machine too.
    @Test func testThatCancellationOfRequestOperationSetsError() async throws {
        try await Self.withServerAndManager { server, manager in
            let arrival = ArrivalAction()
            server.routeCallingOnArrival("/hold", arrival)
            let operation = Self.operation(server.url("/hold"), manager)
            arrival.set { [weak operation] in operation?.cancel() }  // weakly: the server's route outlives the manager
            let done = await awaitCallback { (finish: @escaping @Sendable (Bool) -> Void) in
                operation.completionBlock = { finish(true) }
                operation.start()
            }
            #expect(done)
            #expect(operation.error?.code == .cancelled)
        }
    }

    @Test func testThatCancellationOfRequestOperationInvokesFailureCompletionBlock() async throws {
        try await Self.withServerAndManager { server, manager in
            let arrival = ArrivalAction()
            server.routeCallingOnArrival("/hold", arrival)
            let operation = Self.operation(server.url("/hold"), manager)
            arrival.set { [weak operation] in operation?.cancel() }  // weakly: the server's route outlives the manager
            let outcome = await Self.outcome(of: operation)
            #expect(operation.error?.code == .cancelled)
            #expect(outcome.error?.code == .cancelled)
        }
    }

    @Test func testThatCancellationOfRequestBeforeStartingRequestSetsError() async throws {
        try await Self.withServerAndManager { server, manager in
            let operation = Self.operation(server.url("/delay/5"), manager)
            let outcome = await Self.outcome(of: operation) { operation.cancel() }
            #expect(operation.isCancelled)
            #expect(operation.isFinished)
            #expect(!operation.isExecuting)
            #expect(operation.error?.code == .cancelled)
            #expect(outcome.error?.code == .cancelled)
            #expect(server.requestCount == 0)
        }
    }

    @Test func testThatCancellationOfRequestBeforeStartingRequestSetsErrorInvokesFailureCompletionBlock() async throws {
        try await Self.withServerAndManager { server, manager in
            let operation = Self.operation(server.url("/delay/5"), manager)
            let outcome = await Self.outcome(of: operation) { operation.cancel() }
            #expect(operation.error != nil)
            #expect(outcome.error?.code == .cancelled)
        }
    }

    @Test func testThat500StatusCodeInvokesFailureCompletionBlockWithErrorOnFailure() async throws {
        try await Self.withServerAndManager { server, manager in
            let operation = Self.operation(server.url("/status/500"), manager)
            let outcome = await Self.outcome(of: operation)
            #expect(operation.isFinished)
            #expect(outcome.error?.response?.status.code == 500)
        }
    }

    /// 2.x sets a redirect block on the operation; Courier's operation runs a task of its manager,
    /// whose `taskWillPerformHTTPRedirection` hook is asked about each hop.
    static func redirects(_ count: Int) async throws -> (Int, Outcome) {
        try await Self.withServerAndManager { server, manager in
            let redirects = NIOLockedValueBox(0)
            var hooks = manager.hooks
            hooks.taskWillPerformHTTPRedirection = { _, _, response, request in
                if response.status.kind == .redirection { redirects.withLockedValue { $0 += 1 } }
                return request
            }
            manager.hooks = hooks
            let outcome = await Self.outcome(of: Self.operation(server.url("/redirect/\(count)"), manager))
            return (redirects.withLockedValue { $0 }, outcome)
        }
    }

    @Test func testThatRedirectBlockIsCalledWhen302IsEncountered() async throws {
        let (redirects, outcome) = try await Self.redirects(1)
        #expect(outcome.error == nil)
        #expect(redirects == 1)
    }

    @Test func testThatRedirectBlockIsCalledMultipleTimesWhenMultiple302sAreEncountered() async throws {
        let (redirects, outcome) = try await Self.redirects(5)
        #expect(outcome.error == nil)
        #expect(redirects == 5)
    }

    @Test func testThatOperationCanBePaused() async throws {
        try await Self.withServerAndManager { server, manager in
            // The server answers only after the hang guard, 120 s after the request arrives: the
            // operation is still running (10 s left too little margin for a full CI run, which
            // held every test for about 36 s; the empty arrival action keeps no task alive).
            server.routeCallingOnArrival("/hold", delay: Changes.hangGuard, ArrivalAction())
            let operation = Self.operation(server.url("/hold"), manager)
            operation.start()
            #expect(await Self.executing(operation))
            operation.pause()
            #expect(operation.isPaused)
            #expect(operation.task?.state == .suspended)
            operation.cancel()
        }
    }

    @Test func testThatPausedOperationCanBeResumed() async throws {
        try await Self.withServerAndManager { server, manager in
            // The server answers only after the hang guard, 120 s after the request arrives: the
            // operation is still running (10 s left too little margin for a full CI run, which
            // held every test for about 36 s; the empty arrival action keeps no task alive).
            server.routeCallingOnArrival("/hold", delay: Changes.hangGuard, ArrivalAction())
            let operation = Self.operation(server.url("/hold"), manager)
            operation.start()
            #expect(await Self.executing(operation))
            operation.pause()
            #expect(operation.isPaused)
            operation.resume()
            #expect(!operation.isPaused)
            #expect(operation.isExecuting)
            #expect(operation.task?.state == .running)
            operation.cancel()
        }
    }

    @Test func testThatPausedOperationCanBeCompleted() async throws {
        try await Self.withServerAndManager { server, manager in
            // Pauses and resumes when the request reaches the server (which answers 1 s later).
            let arrival = ArrivalAction()
            server.routeCallingOnArrival("/hold", delay: .seconds(1), arrival)
            let operation = Self.operation(server.url("/hold"), manager)
            arrival.set { [weak operation] in  // weakly: the server's route outlives the manager
                operation?.pause()
                operation?.resume()
            }
            let outcome = await Self.outcome(of: operation)
            #expect(operation.isFinished)
            #expect(outcome.error == nil)
            #expect(outcome.object != nil)
        }
    }

    /// Differs: no operation notifications; the operation's task posts `.taskDidResume` when the
    /// operation starts.
    @Test func testThatOperationPostsDidStartNotificationWhenStarted() async throws {
        try await Self.withServerAndManager { server, manager in
            let operation = Self.operation(server.url("/get"), manager)
            let url = operation.request.url
            let note = await Conformance.notification(.taskDidResume, matching: { ($0.note.object as? SessionTask)?.originalRequest.url == url }) {
                operation.start()
            }
            #expect((note?.object as? SessionTask)?.originalRequest.url == operation.request.url)
            operation.cancel()
        }
    }

    /// Differs as ``testThatOperationPostsDidStartNotificationWhenStarted()``: `.taskDidComplete`.
    @Test func testThatOperationPostsDidFinishNotificationWhenFinished() async throws {
        try await Self.withServerAndManager { server, manager in
            let operation = Self.operation(server.url("/get"), manager)
            let url = operation.request.url
            let note = await Conformance.notification(.taskDidComplete, matching: { ($0.note.object as? SessionTask)?.originalRequest.url == url }) {
                operation.start()
            }
            #expect((note?.object as? SessionTask)?.originalRequest.url == operation.request.url)
        }
    }

    @Test func testThatCompletionBlockForBatchRequestsIsFiredAfterAllOperationCompletionBlocks() async throws {
        try await Self.withServerAndManager { server, manager in
            let finished = Recorder<String>()
            let first = Self.operation(server.url("/get"), manager)
            first.setCompletionBlockWithSuccess({ _, _ in finished.append("first") }, failure: { _, _ in finished.append("first failed") })
            let second = Self.operation(server.url("/delay/1"), manager)
            second.setCompletionBlockWithSuccess({ _, _ in finished.append("second") }, failure: { _, _ in finished.append("second failed") })
            let seenAtCompletion: [String] = await awaitCallback { finish in
                let batch = HTTPRequestOperation.batch(of: [first, second], completionQueue: Self.queue, completion: { _ in
                    finish(finished.all)
                })
                OperationQueue().addOperations(batch, waitUntilFinished: false)
            }
            #expect(seenAtCompletion.sorted() == ["first", "second"])
        }
    }

    @Test func testThatOperationInvokesSuccessCompletionBlockForHTTPSRequest() async throws {
        var policy = SecurityPolicy.default
        policy.additionalTrustedCertificates = try Certificate.certificates(pemEncoded: TestCertificates.rootCA)
        try await Self.withServerAndManager(.https(), securityPolicy: policy) { server, manager in
            #expect(server.baseURL.scheme == "https")
            let operation = Self.operation(server.url("/get"), manager)
            let outcome = await Self.outcome(of: operation)
            #expect(outcome.error == nil)
            #expect(outcome.object != nil)
        }
    }
}
