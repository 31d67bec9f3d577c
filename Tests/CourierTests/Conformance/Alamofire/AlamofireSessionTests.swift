import Courier
import CourierTesting
import Dispatch
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import Testing

/// Twins of Alamofire's `Tests/SessionTests.swift`, against TestServer.
///
/// Alamofire's `Session` is a `SessionManager` (`HTTPSessionManager` for URL strings); its
/// `URLSession` and delegate are the manager's engine; its `ServerTrustManager` is the security
/// policy (`ServerTrustPolicies` on a `NIOEngine`). `startRequestsImmediately: false` is
/// `dataTask(with:)`, which makes a task suspended; the verbs resume theirs. Mass actions
/// (`withAllRequests`, `cancelAllRequests`) are `manager.tasks`, every task made and not yet
/// completed.
@Suite("Conformance: Alamofire SessionTests")
struct AlamofireSessionConformanceTests {
    static func withManager<T>(_ body: (HTTPSessionManager, TestServer) async throws -> T) async throws -> T {
        try await withTestServer { server in
            try await CourierTests.withManager(baseURL: server.baseURL) { manager in try await body(manager, server) }
        }
    }

    // MARK: Initialization

    @Test func testInitializerWithDefaultArguments() async {
        let manager = SessionManager()
        #expect(manager.engine is NIOEngine)
        #expect(manager.securityPolicy == .default)
        #expect(manager.configuration.timeoutIntervalForRequest == SessionConfiguration.default.timeoutIntervalForRequest)
        await manager.invalidate(cancelingTasks: true)
    }

    @Test func testInitializerWithSpecifiedArguments() async {
        var configuration = SessionConfiguration.default
        configuration.timeoutIntervalForRequest = 12
        let policy = SecurityPolicy(pinningMode: .none)
        var strict = policy
        strict.validatesDomainName = false
        let manager = SessionManager(configuration: configuration, securityPolicy: strict)
        #expect(manager.engine is NIOEngine)
        #expect(manager.securityPolicy == strict)
        #expect(manager.configuration.timeoutIntervalForRequest == 12)
        await manager.invalidate(cancelingTasks: true)
    }

    /// Alamofire's `Session(session:delegate:rootQueue:)` takes a ready `URLSession`; a Courier
    /// manager takes a ready engine.
    @Test func testThatSessionInitializerSucceedsWithDefaultArguments() async {
        let engine = StubEngine()
        let manager = SessionManager(engine: engine)
        #expect(manager.engine as AnyObject === engine)
        #expect(manager.securityPolicy == .default)
        await manager.invalidate(cancelingTasks: true)
    }

    /// The engine's policies are the manager's: `securityPolicy` reports the engine's default
    /// (issue 17: it said `.default` whatever the engine enforced).
    @Test func testThatSessionInitializerSucceedsWithSpecifiedArguments() async {
        var policy = SecurityPolicy.default
        policy.validatesDomainName = false
        var trust = ServerTrustPolicies(default: policy)
        trust["api.example.com"] = SecurityPolicy(pinningMode: .none)
        let engine = NIOEngine(serverTrust: trust)
        let manager = SessionManager(engine: engine)
        #expect(manager.engine as AnyObject === engine)
        #expect(manager.securityPolicy == policy)
        await manager.invalidate(cancelingTasks: true)
    }

    /// Alamofire's root queue is where its work is serialized; Courier's callbacks run on the
    /// completion queue, here a concurrent one.
    @Test func testThatSessionWorksCorrectlyWhenPassedAConcurrentRootQueue() async throws {
        try await Self.withManager { manager, _ in
            manager.completionQueue = DispatchQueue(label: "courier.conformance.parallel", attributes: .concurrent)
            manager.responseSerializer = DecodableResponseSerializer(HTTPBinEchoResponse.self)
            let object: (any Sendable)? = await awaitCallback { finish in
                manager.get("get", success: { _, object in finish(object) }, failure: { _, _ in finish(nil) })
            }
            #expect(object is HTTPBinEchoResponse)
        }
    }

    // MARK: Default headers

    /// Differs: the default `User-Agent` has AFNetworking's form, `app/version (platform; OS
    /// version)`: the process (or bundle) and the operating system, with no library token;
    /// Alamofire's adds `Alamofire/version`.
    @Test func testDefaultUserAgentHeader() throws {
        let request = try HTTPRequestSerializer().request(method: .get, urlString: "http://h.test/", parameters: nil)
        let userAgent = try #require(request.headerFields[.userAgent])
        #expect(userAgent.contains(ProcessInfo.processInfo.processName) || Bundle.main.infoDictionary?["CFBundleExecutable"] != nil)
        #if os(Linux)
        #expect(userAgent.contains("(Linux; "))
        #endif
        #expect(!userAgent.contains("Alamofire"))
        let isASCII = userAgent.allSatisfy { $0.isASCII }
        #expect(isASCII)
    }

    // MARK: Tasks made suspended

    @Test func testSetStartRequestsImmediatelyToFalseAndResumeRequest() async throws {
        try await Self.withManager { manager, server in
            let (response, error): (HTTPResponse?, CourierError?) = await awaitCallback { finish in
                let task = manager.dataTask(with: Request(url: server.url("/get"))) { finish(($0, $2)) }
                #expect(task.state == .suspended)
                task.resume()
            }
            #expect(error == nil)
            #expect(response?.status == .ok)
        }
    }

    @Test func testSetStartRequestsImmediatelyToFalseAndCancelledCallsResponseHandlers() async throws {
        try await Self.withManager { manager, server in
            let box = NIOLockedValueBox<DataTask?>(nil)
            let error: CourierError? = await awaitCallback { finish in
                let task = manager.dataTask(with: Request(url: server.url("/get"))) { _, _, error in finish(error) }
                box.withLockedValue { $0 = task }
                task.cancel()
            }
            #expect(error?.code == .cancelled)
            #expect(box.withLockedValue { $0 }?.state == .completed)
            #expect(server.requestCount == 0)
        }
    }

    @Test func testSetStartRequestsImmediatelyToFalseAndResumeThenCancelRequestHasCorrectOutput() async throws {
        try await Self.withManager { manager, server in
            let box = NIOLockedValueBox<DataTask?>(nil)
            let error: CourierError? = await awaitCallback { finish in
                let task = manager.dataTask(with: Request(url: server.url("/delay/10"))) { _, _, error in finish(error) }
                box.withLockedValue { $0 = task }
                task.resume()
                task.cancel()
            }
            #expect(error?.code == .cancelled)
            #expect(box.withLockedValue { $0 }?.state == .completed)
        }
    }

    @Test func testSetStartRequestsImmediatelyToFalseAndCancelThenResumeRequestDoesntCreateTaskAndStaysCancelled() async throws {
        try await Self.withManager { manager, server in
            let box = NIOLockedValueBox<DataTask?>(nil)
            let log = TaskNotificationLog()
            let error: CourierError? = await awaitCallback { finish in
                let task = manager.dataTask(with: Request(url: server.url("/get"))) { _, _, error in finish(error) }
                box.withLockedValue { $0 = task }
                task.cancel()
                task.resume()
            }
            let task = try #require(box.withLockedValue { $0 })
            #expect(error?.code == .cancelled)
            #expect(task.state == .completed)
            #expect(log.count(.taskDidResume, of: task) == 0)
            #expect(server.requestCount == 0)
        }
    }

    // MARK: Releasing the manager

    /// Differs: a task made and not resumed holds its manager until the caller lets go of it (a
    /// Courier manager is never freed under a task that may still run); then the task is
    /// forgotten without running (no completion, as a URLSession task never resumed), and the
    /// manager goes. Alamofire's session completes each request with `sessionDeinitialized`.
    @Test func testReleasingManagerWithPendingRequestDeinitializesSuccessfully() async throws {
        try await withTestServer { server in
            let bag = WeakBag()
            let completions = Recorder<Int>()
            var tasks: [DataTask] = []
            do {
                let manager = HTTPSessionManager(baseURL: server.baseURL)
                bag.add(manager)
                tasks = (0..<100).map { _ in manager.dataTask(with: Request(url: server.url("/get"))) { _, _, _ in completions.append(1) } }
            }
            #expect(!bag.allReleased, "the unresumed tasks hold their manager")
            #expect(tasks.allSatisfy { $0.state == .suspended })
            tasks = []
            #expect(await eventually { bag.allReleased }, "still alive: \(bag.survivors)")
            #expect(completions.count == 0)
            #expect(server.requestCount == 0)
        }
    }

    @Test func testReleasingManagerWithPendingCanceledRequestDeinitializesSuccessfully() async throws {
        try await withTestServer { server in
            let bag = WeakBag()
            let task: DataTask
            do {
                let manager = HTTPSessionManager(baseURL: server.baseURL)
                manager.completionQueue = TestQueues.completion
                bag.add(manager)
                task = manager.dataTask(with: Request(url: server.url("/get")), completionHandler: nil)
                task.cancel()
            }
            #expect(task.state == .completed)
            #expect(task.error?.code == .cancelled)
            #expect(await eventually { bag.allReleased }, "still alive: \(bag.survivors)")
        }
    }

    // MARK: Bad requests

    /// An empty URL string with no base URL is `.invalidURL`, before any task is made (the
    /// callback verbs call `failure` with a nil task, asynchronously).
    @Test func testThatDataRequestWithInvalidURLStringThrowsResponseHandlerError() async {
        let manager = HTTPSessionManager()
        manager.completionQueue = TestQueues.completion
        let (task, error): (DataTask?, CourierError?) = await awaitCallback { finish in
            let made = manager.get("", success: { task, _ in finish((task, nil)) }, failure: { task, error in finish((task, error)) })
            #expect(made == nil)
        }
        #expect(task == nil)
        #expect(error?.code == .invalidURL)
        #expect(error?.request == nil)
        #expect(error?.response == nil)
        #expect(error?.data == nil)
        #expect(manager.tasks.isEmpty)
        await manager.invalidate(cancelingTasks: true)
    }

    /// The URL string becomes a request before a download task is made: it is refused there.
    @Test func testThatDownloadRequestWithInvalidURLStringThrowsResponseHandlerError() async {
        let manager = HTTPSessionManager()
        let error = #expect(throws: CourierError.self) { try manager.request(method: .get, urlString: "", parameters: nil) }
        #expect(error?.code == .invalidURL)
        #expect(error?.resumeData == nil)
        #expect(manager.tasks.isEmpty)
        await manager.invalidate(cancelingTasks: true)
    }

    @Test func testThatUploadDataRequestWithInvalidURLStringThrowsResponseHandlerError() async {
        let manager = HTTPSessionManager()
        let error = #expect(throws: CourierError.self) { try manager.request(method: .post, urlString: "", parameters: nil) }
        #expect(error?.code == .invalidURL)
        #expect(manager.tasks.isEmpty)
        await manager.invalidate(cancelingTasks: true)
    }

    @Test func testThatUploadFileRequestWithInvalidURLStringThrowsResponseHandlerError() async {
        let manager = HTTPSessionManager()
        let error = #expect(throws: CourierError.self) { try manager.request(method: .put, urlString: "", parameters: nil) }
        #expect(error?.code == .invalidURL)
        #expect(manager.tasks.isEmpty)
        await manager.invalidate(cancelingTasks: true)
    }

    /// A multipart upload (a streamed body) with an empty URL string fails before any task.
    @Test func testThatUploadStreamRequestWithInvalidURLStringThrowsResponseHandlerError() async {
        let manager = HTTPSessionManager()
        let error = await #expect(throws: CourierError.self) {
            _ = try await manager.post("", parameters: nil) { form in form.appendPart(withForm: Data("1".utf8), name: "a") }
        }
        #expect(error?.code == .invalidURL)
        #expect(error?.response == nil)
        #expect(manager.tasks.isEmpty)
        await manager.invalidate(cancelingTasks: true)
    }

    /// Differs: a manager is not deinitialized while a task it made is alive (the task holds it);
    /// invalidating it is how it ends early: its tasks complete (cancelled) and
    /// `.sessionDidInvalidate` is posted. Alamofire's session, released, fails them with
    /// `sessionDeinitialized`.
    @Test func testThatSessionIsInvalidatedAndAllRequestsCompleteWhenSessionIsDeinitialized() async throws {
        try await withTestServer { server in
            let manager = HTTPSessionManager(baseURL: server.baseURL)
            manager.completionQueue = TestQueues.completion
            let invalidated = NotificationWaiter()
            let observer = NotificationCenter.default.addObserver(forName: .sessionDidInvalidate, object: manager, queue: nil) { _ in
                invalidated.deliver(nil)
            }
            defer { NotificationCenter.default.removeObserver(observer) }
            let box = NIOLockedValueBox<DataTask?>(nil)
            let error: CourierError? = await awaitCallback { finish in
                let task = manager.dataTask(with: Request(url: server.url("/get"))) { _, _, error in finish(error) }
                box.withLockedValue { $0 = task }
                manager.invalidate(cancelingTasks: true)
            }
            #expect(error?.code == .cancelled)
            _ = await invalidated.wait()
            #expect(manager.isInvalidated)
            #expect(manager.tasks.isEmpty)
            #expect(server.requestCount == 0)
        }
    }

    // MARK: Cancellation and state

    /// The source adds an interceptor that counts adaptations; the twin checks what the session
    /// does (interceptors are issue 19's).
    @Test func testThatSessionOnlyCallsResponseSerializerCompletionWhenCancellingInsideCompletion() async throws {
        try await Self.withManager { manager, server in
            let calls = Recorder<CourierError?>()
            let log = TaskNotificationLog()
            let box = NIOLockedValueBox<DataTask?>(nil)
            let done = NotificationWaiter()
            let task = manager.dataTask(with: Request(url: server.url("/get"))) { _, _, error in
                box.withLockedValue { $0 }?.cancel()
                calls.append(error)
                done.deliver(nil)
            }
            box.withLockedValue { $0 = task }
            task.resume()
            _ = await done.wait()
            #expect(await log.wait(for: .taskDidComplete, of: task))
            #expect(calls.count == 1)
            #expect(calls.all.first == .some(nil))
            #expect(task.error == nil)
            #expect(log.count(.taskDidComplete, of: task) == 1)
            #expect(manager.tasks.isEmpty)
        }
    }

    @Test func testThatSessionSetsRequestStateWhenStartRequestsImmediatelyIsTrue() async throws {
        try await Self.withManager { manager, _ in
            let box = NIOLockedValueBox<DataTask?>(nil)
            let succeeded: Bool = await awaitCallback { finish in
                let task = manager.get("get", success: { _, _ in finish(true) }, failure: { _, _ in finish(false) })
                box.withLockedValue { $0 = task }
            }
            #expect(succeeded)
            #expect(box.withLockedValue { $0 }?.state == .completed)
        }
    }

    /// Differs: a GET with a body is sent as given (RFC 9110 gives such a body no meaning but does
    /// not forbid it, and some APIs read it); Alamofire refuses it because URLSession does.
    @Test func testThatGETRequestsWithBodyDataAreConsideredInvalid() async throws {
        try await Self.withManager { manager, server in
            let request = Request(method: .get, url: server.url("/anything"), body: .data(Data("invalid".utf8)))
            let response = try await manager.response(for: request, serializer: DecodableResponseSerializer(HTTPBinEchoResponse.self))
            #expect(response.response.status == .ok)
            #expect(response.value.data == "invalid")
        }
    }

    // MARK: Mass actions

    /// Whether `count` requests reached `path`: a route that counts arrivals and answers late (after
    /// the hang guard, not 10 s: the test acts on the tasks once they all arrived, and a full CI
    /// run held every test for about 36 s).
    static func arrivals(_ server: TestServer, _ path: String, count: Int) -> NotificationWaiter {
        let arrived = NIOLockedValueBox(0)
        let all = NotificationWaiter()
        let action = ArrivalAction()
        action.set {
            let now = arrived.withLockedValue { value -> Int in
                value += 1
                return value
            }
            if now == count { all.deliver(nil) }
        }
        server.routeCallingOnArrival(path, delay: Changes.hangGuard, action)
        return all
    }

    @Test func testThatRequestsCanHaveMassActionsPerformed() async throws {
        try await Self.withManager { manager, server in
            let count = 8  // the default connections per host: all are on the server at once
            let arrived = Self.arrivals(server, "/slow", count: count)
            let log = TaskNotificationLog()
            let tasks = (0..<count).compactMap { _ in manager.get("slow") }
            _ = await arrived.wait()
            for task in manager.tasks { task.suspend() }
            #expect(tasks.count == count)
            #expect(tasks.allSatisfy { $0.state == .suspended })
            for task in tasks { #expect(await log.wait(for: .taskDidSuspend, of: task)) }
            for task in manager.tasks { task.cancel() }
            for task in tasks { #expect(await log.wait(for: .taskDidComplete, of: task)) }
            #expect(manager.tasks.isEmpty)
        }
    }

    /// Cancels every task of `manager` and checks that each of `count` completions reports the
    /// cancellation and no task is left.
    static func cancelAll(_ manager: HTTPSessionManager, count: Int, completions: Recorder<CourierError?>, done: NotificationWaiter) async {
        for task in manager.tasks { task.cancel() }
        _ = await done.wait()
        #expect(completions.count == count)
        #expect(completions.all.allSatisfy { $0?.code == .cancelled })
        #expect(manager.tasks.isEmpty)
    }

    /// `count` completions, and a waiter told when the last came.
    static func completionCounter(count: Int) -> (Recorder<CourierError?>, NotificationWaiter, @Sendable (CourierError?) -> Void) {
        let completions = Recorder<CourierError?>()
        let done = NotificationWaiter()
        return (completions, done, { error in
            completions.append(error)
            if completions.count == count { done.deliver(nil) }
        })
    }

    /// A hundred verbs (resumed for the caller) to a route that answers late, cancelled together.
    static func massCancelVerbs(_ manager: HTTPSessionManager, _ server: TestServer) async {
        let count = 100
        server.routeCallingOnArrival("/slow", ArrivalAction())
        let (completions, done, complete) = Self.completionCounter(count: count)
        for _ in 0..<count {
            manager.get("slow", success: { _, _ in complete(nil) }, failure: { _, error in complete(error) })
        }
        await Self.cancelAll(manager, count: count, completions: completions, done: done)
    }

    @Test func testThatAutomaticallyResumedRequestsCanBeMassCancelled() async throws {
        try await Self.withManager { manager, server in await Self.massCancelVerbs(manager, server) }
    }

    /// Alamofire's lazy request setup: a Courier task always exists from the start.
    @Test func testThatLazyAutomaticallyResumedRequestsCanBeMassCancelled() async throws {
        try await Self.withManager { manager, server in await Self.massCancelVerbs(manager, server) }
    }

    @Test func testThatInstanceAutomaticallyResumedRequestsCanBeMassCancelled() async throws {
        try await Self.withManager { manager, server in await Self.massCancelVerbs(manager, server) }
    }

    /// Tasks made and never resumed, cancelled together: each completes without starting.
    @Test func testThatManuallyResumedRequestsCanBeMassCancelled() async throws {
        try await Self.withManager { manager, server in
            let count = 100
            let (completions, done, complete) = Self.completionCounter(count: count)
            let tasks = (0..<count).map { _ in manager.dataTask(with: Request(url: server.url("/delay/10"))) { complete($2) } }
            #expect(manager.tasks.count >= count)
            await Self.cancelAll(manager, count: count, completions: completions, done: done)
            #expect(tasks.allSatisfy { $0.state == .completed })
            #expect(server.requestCount == 0)
        }
    }

    /// Tasks made, resumed by hand, then cancelled together.
    @Test func testThatLazyManuallyResumedRequestsCanBeMassCancelled() async throws {
        try await Self.withManager { manager, server in
            let count = 100
            server.routeCallingOnArrival("/slow", ArrivalAction())
            let (completions, done, complete) = Self.completionCounter(count: count)
            let tasks = (0..<count).map { _ in manager.dataTask(with: Request(url: server.url("/slow"))) { complete($2) } }
            for task in tasks { task.resume() }
            await Self.cancelAll(manager, count: count, completions: completions, done: done)
            #expect(tasks.allSatisfy { $0.state == .completed })
        }
    }

    // MARK: Configuration headers

    static func authorizationHeaderIsSent(_ configuration: SessionConfiguration) async throws {
        var configuration = configuration
        configuration.httpAdditionalHeaders[.authorization] = "Bearer 123456"
        try await withTestServer { server in
            try await CourierTests.withManager(baseURL: server.baseURL, configuration: configuration) { manager in
                let response = try await manager.get("get", as: HTTPBinEchoResponse.self)
                #expect(response.response.status == .ok)
                #expect(response.value.headers["Authorization"] == "Bearer 123456")
            }
        }
    }

    @Test func testThatDefaultConfigurationHeadersAreSentWithRequest() async throws {
        try await Self.authorizationHeaderIsSent(.default)
    }

    @Test func testThatEphemeralConfigurationHeadersAreSentWithRequest() async throws {
        try await Self.authorizationHeaderIsSent(.ephemeral)
    }
}
