import Courier
import CourierTesting
import Dispatch
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import Testing

/// Twins of Alamofire's `Tests/RequestTests.swift`, against TestServer.
///
/// Alamofire's `session.request(…).response { … }` is a data task here: a callback verb of
/// `HTTPSessionManager` (resumed for you, as Alamofire's requests start by default), or
/// `dataTask(with:…)` resumed by hand (Alamofire's `startRequestsImmediately: false`). Its
/// `onHTTPResponse` is the manager's `dataTaskDidReceiveResponse` hook. Alamofire's event
/// monitors count a request's resumes, suspends and cancels; Courier posts `.taskDidResume`,
/// `.taskDidSuspend` and `.taskDidComplete` (AFNetworking's notifications), which the lifetime
/// twins count.
@Suite("Conformance: Alamofire RequestTests")
struct AlamofireRequestConformanceTests {
    static func withManager<T>(_ body: (HTTPSessionManager, TestServer) async throws -> T) async throws -> T {
        try await withTestServer { server in
            try await CourierTests.withManager(baseURL: server.baseURL) { manager in try await body(manager, server) }
        }
    }

    /// Runs a data task made by `make` and returns what its completion got.
    static func complete(
        _ make: (@escaping @Sendable (HTTPResponse?, (any Sendable)?, CourierError?) -> Void) -> Void
    ) async -> (response: HTTPResponse?, object: (any Sendable)?, error: CourierError?) {
        await awaitCallback { finish in make { finish(($0, $1, $2)) } }
    }

    // MARK: Responses

    @Test func testRequestResponse() async throws {
        try await Self.withManager { manager, _ in
            let response = try await manager.response(method: .get, urlString: "get", parameters: ["foo": "bar"], serializer: DataResponseSerializer())
            #expect(response.request.url.query == "foo=bar")
            #expect(response.response.status == .ok)
            #expect(response.data?.isEmpty == false)
        }
    }

    @Test func testThatDataRequestReceivesInitialResponse() async throws {
        try await Self.withManager { manager, server in
            let events = Recorder<String>()
            let initial = NIOLockedValueBox<HTTPResponse?>(nil)
            manager.hooks.dataTaskDidReceiveResponse = { _, _, response in
                initial.withLockedValue { $0 = response }
                events.append("response")
                return .allow
            }
            let result = await Self.complete { finish in
                manager.dataTask(with: Request(url: server.url("/get?foo=bar"))) { response, object, error in
                    events.append("complete")
                    finish(response, object, error)
                }.resume()
            }
            #expect(events.all == ["response", "complete"])
            #expect(result.response != nil)
            #expect(initial.withLockedValue { $0 } == result.response)
            #expect(result.object != nil)
            #expect(result.error == nil)
        }
    }

    @Test func testThatDataRequestOnHTTPResponseCanAllow() async throws {
        try await Self.withManager { manager, server in
            let events = Recorder<String>()
            manager.hooks.dataTaskDidReceiveResponse = { _, _, _ in
                events.append("response")
                return .allow
            }
            let result = await Self.complete { finish in
                manager.dataTask(with: Request(url: server.url("/get?foo=bar"))) { response, object, error in
                    events.append("complete")
                    finish(response, object, error)
                }.resume()
            }
            #expect(events.all == ["response", "complete"])
            #expect(result.response?.status == .ok)
            #expect(result.object != nil)
            #expect(result.error == nil)
        }
    }

    @Test func testThatDataRequestOnHTTPResponseCanCancel() async throws {
        try await Self.withManager { manager, server in
            let initial = NIOLockedValueBox<HTTPResponse?>(nil)
            manager.hooks.dataTaskDidReceiveResponse = { _, _, response in
                initial.withLockedValue { $0 = response }
                return .cancel
            }
            let result = await Self.complete { finish in
                manager.dataTask(with: Request(url: server.url("/get?foo=bar"))) { finish($0, $1, $2) }.resume()
            }
            #expect(result.response == initial.withLockedValue { $0 })
            #expect(result.response?.status == .ok)
            #expect(result.object == nil)
            #expect(result.error?.code == .cancelled)
            #expect(result.error?.data == nil || result.error?.data?.isEmpty == true)
        }
    }

    @Test func testRequestResponseWithProgress() async throws {
        try await Self.withManager { manager, server in
            manager.responseSerializer = HTTPResponseSerializer()
            let fractions = Recorder<Double>()
            let result = await Self.complete { finish in
                manager.dataTask(with: Request(url: server.url("/bytes/1024")), downloadProgress: { fractions.append($0.fractionCompleted) }) {
                    finish($0, $1, $2)
                }.resume()
            }
            #expect(result.error == nil)
            let seen = fractions.all
            #expect(zip(seen, seen.dropFirst()).allSatisfy { $0 <= $1 })
            #expect(seen.last == 1.0)
        }
    }

    @Test func testPOSTRequestWithUnicodeParameters() async throws {
        try await Self.withManager { manager, _ in
            let parameters = ["french": "français", "japanese": "日本語", "arabic": "العربية", "emoji": "😃"]
            let response = try await manager.response(method: .post, urlString: "post", parameters: parameters, as: HTTPBinEchoResponse.self)
            #expect(response.value.form == parameters)
        }
    }

    /// The source sends two images as base64 text (64-character lines, so `+`, `/`, `=` and line
    /// breaks); the twin sends the same kind of text made from generated bytes.
    @Test func testPOSTRequestWithBase64EncodedImages() async throws {
        try await Self.withManager { manager, _ in
            let png = Data((0..<9_000).map { UInt8(truncatingIfNeeded: $0 &* 7919 &+ 13) }).base64EncodedString(options: .lineLength64Characters)
            let jpeg = Data((0..<12_000).map { UInt8(truncatingIfNeeded: $0 &* 104_729) }).base64EncodedString(options: .lineLength64Characters)
            let parameters = ["email": "user@alamofire.org", "png_image": png, "jpeg_image": jpeg]
            let response = try await manager.response(method: .post, urlString: "post", parameters: parameters, as: HTTPBinEchoResponse.self)
            #expect(response.response.status == .ok)
            #expect(response.value.form == parameters)
        }
    }

    // MARK: Queues

    /// Differs: Courier has no serialization queue to choose: response serializers run on
    /// Courier's own processing queue (never on an engine thread), and the completion runs on the
    /// manager's `completionQueue`, which the twin sets to a serial queue of its own.
    @Test func testThatResponseSerializationWorksWithSerializationQueue() async throws {
        try await Self.withManager { manager, _ in
            let queue = DispatchQueue(label: "courier.conformance.serialization")
            manager.completionQueue = queue
            manager.responseSerializer = DecodableResponseSerializer(HTTPBinEchoResponse.self)
            let object: (any Sendable)? = await awaitCallback { finish in
                manager.get("get", success: { _, object in
                    dispatchPrecondition(condition: .onQueue(queue))
                    finish(object)
                }, failure: { _, error in
                    Issue.record("\(error)")
                    finish(nil)
                })
            }
            #expect(object is HTTPBinEchoResponse)
        }
    }

    /// Differs: Courier has neither a request queue nor a serialization queue to choose (see
    /// `testThatResponseSerializationWorksWithSerializationQueue`); the twin sets a serial
    /// completion queue and a completion group.
    @Test func testThatRequestsWorksWithRequestAndSerializationQueues() async throws {
        try await Self.withManager { manager, _ in
            let queue = DispatchQueue(label: "courier.conformance.completion")
            let group = DispatchGroup()
            manager.completionQueue = queue
            manager.completionGroup = group
            manager.responseSerializer = DecodableResponseSerializer(HTTPBinEchoResponse.self)
            let object: (any Sendable)? = await awaitCallback { finish in
                manager.get("get", success: { _, object in finish(object) }, failure: { _, _ in finish(nil) })
            }
            #expect(object is HTTPBinEchoResponse)
            await withCheckedContinuation { continuation in group.notify(queue: .global()) { continuation.resume() } }
        }
    }

    /// Differs: as `testThatRequestsWorksWithRequestAndSerializationQueues`; the twin makes ten
    /// requests from ten threads at once, completing on a concurrent queue.
    @Test func testThatRequestsWorksWithConcurrentRequestAndSerializationQueues() async throws {
        try await Self.withManager { manager, _ in
            manager.completionQueue = DispatchQueue(label: "courier.conformance.concurrent", attributes: .concurrent)
            manager.responseSerializer = DecodableResponseSerializer(HTTPBinEchoResponse.self)
            let results = Recorder<Bool>()
            let count = 10
            DispatchQueue.concurrentPerform(iterations: count) { _ in
                manager.get("get", success: { _, object in results.append(object is HTTPBinEchoResponse) }, failure: { _, _ in results.append(false) })
            }
            // Waited on the recorder, not resumed from the handlers: on the concurrent queue two
            // handlers could both append and then both read the tenth count, resuming twice (a
            // crash of the whole run, seen once in CI).
            #expect(await results.wait { $0.count == count })
            #expect(results.all.count == count)
            #expect(results.all.allSatisfy { $0 })
        }
    }

    // MARK: Encodable parameters

    @Test func testThatRequestsCanPassEncodableParametersAsJSONBodyData() async throws {
        try await Self.withManager { manager, _ in
            let response = try await manager.response(
                method: .post, urlString: "post", parameters: TestParameters(property: "one"), encoder: JSONParameterEncoder.default,
                serializer: DecodableResponseSerializer(HTTPBinEchoResponse.self))
            #expect(response.value.data == #"{"property":"one"}"#)
        }
    }

    @Test func testThatRequestsCanPassEncodableParametersAsAURLQuery() async throws {
        try await Self.withManager { manager, _ in
            let response = try await manager.response(
                method: .get, urlString: "get", parameters: TestParameters(property: "one"), encoder: URLEncodedFormParameterEncoder.default,
                serializer: DecodableResponseSerializer(HTTPBinEchoResponse.self))
            #expect(response.value.args == ["property": "one"])
        }
    }

    @Test func testThatRequestsCanPassEncodableParametersAsURLEncodedBodyData() async throws {
        try await Self.withManager { manager, _ in
            let response = try await manager.response(
                method: .post, urlString: "post", parameters: TestParameters(property: "one"), encoder: URLEncodedFormParameterEncoder.default,
                serializer: DecodableResponseSerializer(HTTPBinEchoResponse.self))
            #expect(response.value.form == ["property": "one"])
        }
    }

    // MARK: Lifetime events

    /// A verb's task, resumed for the caller, and what its completion got.
    static func verbTask(_ manager: HTTPSessionManager, _ path: String, completions: Recorder<CourierError?>) -> DataTask? {
        manager.get(path, success: { _, _ in completions.append(nil) }, failure: { _, error in completions.append(error) })
    }

    /// Checks a task's notifications once it completed: one resume, no suspend, one completion.
    static func expectOneRun(_ log: TaskNotificationLog, _ task: SessionTask, completions: Recorder<CourierError?>) async {
        #expect(await log.wait(for: .taskDidComplete, of: task))
        #expect(log.count(.taskDidResume, of: task) == 1)
        #expect(log.count(.taskDidSuspend, of: task) == 0)
        #expect(log.count(.taskDidComplete, of: task) == 1)
        #expect(completions.count == 1)
        #expect(task.state == .completed)
    }

    @Test func testThatAutomaticallyResumedRequestReceivesAppropriateLifetimeEvents() async throws {
        try await Self.withManager { manager, _ in
            let log = TaskNotificationLog()
            let completions = Recorder<CourierError?>()
            let task = try #require(Self.verbTask(manager, "get", completions: completions))
            await Self.expectOneRun(log, task, completions: completions)
            #expect(completions.all.first == .some(nil))
        }
    }

    /// Alamofire's per-request `shouldAutomaticallyResume: true` is what every verb does.
    @Test func testThatInstanceAutomaticallyResumedRequestReceivesAppropriateLifetimeEvents() async throws {
        try await Self.withManager { manager, _ in
            let log = TaskNotificationLog()
            let completions = Recorder<CourierError?>()
            let task = try #require(Self.verbTask(manager, "get", completions: completions))
            await Self.expectOneRun(log, task, completions: completions)
        }
    }

    @Test func testThatAutomaticallyAndManuallyResumedRequestReceivesAppropriateLifetimeEvents() async throws {
        try await Self.withManager { manager, _ in
            let log = TaskNotificationLog()
            let completions = Recorder<CourierError?>()
            let task = try #require(Self.verbTask(manager, "get", completions: completions))
            for _ in 0..<100 { task.resume() }
            await Self.expectOneRun(log, task, completions: completions)
        }
    }

    /// A task made by hand, resumed a hundred times: one run.
    static func manuallyResumed(_ manager: HTTPSessionManager, _ server: TestServer) async {
        let log = TaskNotificationLog()
        let completions = Recorder<CourierError?>()
        let task = manager.dataTask(with: Request(url: server.url("/get"))) { _, _, error in completions.append(error) }
        for _ in 0..<100 { task.resume() }
        await Self.expectOneRun(log, task, completions: completions)
    }

    @Test func testThatManuallyResumedRequestReceivesAppropriateLifetimeEvents() async throws {
        try await Self.withManager { manager, server in await Self.manuallyResumed(manager, server) }
    }

    /// Alamofire's per-request `shouldAutomaticallyResume: false` is what `dataTask(with:)` does.
    @Test func testThatInstanceManuallyResumedRequestReceivesAppropriateLifetimeEvents() async throws {
        try await Self.withManager { manager, server in await Self.manuallyResumed(manager, server) }
    }

    @Test func testThatRequestManuallyResumedManyTimesOnlyReceivesAppropriateLifetimeEvents() async throws {
        try await Self.withManager { manager, server in await Self.manuallyResumed(manager, server) }
    }

    @Test func testThatRequestInstanceManuallyResumedManyTimesOnlyReceivesAppropriateLifetimeEvents() async throws {
        try await Self.withManager { manager, server in await Self.manuallyResumed(manager, server) }
    }

    @Test func testThatRequestManuallySuspendedManyTimesAfterAutomaticResumeOnlyReceivesAppropriateLifetimeEvents() async throws {
        try await Self.withManager { manager, server in
            let log = TaskNotificationLog()
            let arrived = ArrivalAction()
            let reached = NotificationWaiter()
            arrived.set { reached.deliver(nil) }
            // Answered only after the hang guard: the task is suspended after it arrived, which
            // a full CI run (every test held for about 36 s) could delay past 10 s.
            server.routeCallingOnArrival("/arrive", delay: Changes.hangGuard, arrived)
            let completions = Recorder<CourierError?>()
            let task = try #require(Self.verbTask(manager, "arrive", completions: completions))
            _ = await reached.wait()
            for _ in 0..<100 { task.suspend() }
            #expect(await log.wait(for: .taskDidSuspend, of: task))
            #expect(log.count(.taskDidSuspend, of: task) == 1)
            #expect(log.count(.taskDidResume, of: task) == 1)
            #expect(task.state == .suspended)
            task.cancel()
            #expect(await log.wait(for: .taskDidComplete, of: task))
            #expect(log.count(.taskDidSuspend, of: task) == 1)
        }
    }

    /// Differs: a Courier task is made suspended (URLSession's rule), so suspending one that was
    /// never resumed changes nothing and posts nothing; Alamofire's request reports one suspend.
    @Test func testThatRequestManuallySuspendedManyTimesOnlyReceivesAppropriateLifetimeEvents() async throws {
        try await Self.withManager { manager, server in
            let log = TaskNotificationLog()
            let task = manager.dataTask(with: Request(url: server.url("/get")), completionHandler: nil)
            for _ in 0..<100 { task.suspend() }
            #expect(task.state == .suspended)
            task.cancel()
            #expect(await log.wait(for: .taskDidComplete, of: task))
            #expect(log.count(.taskDidSuspend, of: task) == 0)
            #expect(log.count(.taskDidResume, of: task) == 0)
            #expect(task.error?.code == .cancelled)
        }
    }

    @Test func testThatRequestManuallyCancelledManyTimesAfterAutomaticResumeOnlyReceivesAppropriateLifetimeEvents() async throws {
        try await Self.withManager { manager, server in
            let log = TaskNotificationLog()
            let arrived = ArrivalAction()
            server.routeCallingOnArrival("/arrive", arrived)
            let completions = Recorder<CourierError?>()
            let box = NIOLockedValueBox<DataTask?>(nil)
            // Cancelling many times once the request is on the server.
            arrived.set { for _ in 0..<100 { box.withLockedValue { $0 }?.cancel() } }
            let task = try #require(Self.verbTask(manager, "arrive", completions: completions))
            box.withLockedValue { $0 = task }
            #expect(await log.wait(for: .taskDidComplete, of: task))
            #expect(log.count(.taskDidComplete, of: task) == 1)
            #expect(log.count(.taskDidSuspend, of: task) == 0)
            #expect(completions.count == 1)
            #expect(completions.all.first??.code == .cancelled)
            #expect(task.state == .completed)
        }
    }

    @Test func testThatRequestManuallyCancelledManyTimesOnlyReceivesAppropriateLifetimeEvents() async throws {
        try await Self.withManager { manager, server in
            let log = TaskNotificationLog()
            let completions = Recorder<CourierError?>()
            let task = manager.dataTask(with: Request(url: server.url("/get"))) { _, _, error in completions.append(error) }
            for _ in 0..<100 { task.cancel() }
            #expect(await log.wait(for: .taskDidComplete, of: task))
            #expect(log.count(.taskDidComplete, of: task) == 1)
            #expect(log.count(.taskDidResume, of: task) == 0)
            #expect(log.count(.taskDidSuspend, of: task) == 0)
            #expect(completions.all.first??.code == .cancelled)
            #expect(task.state == .completed)
            #expect(server.requestCount == 0)
        }
    }

    @Test func testThatRequestManuallyCancelledManyTimesOnManyQueuesOnlyReceivesAppropriateLifetimeEvents() async throws {
        try await Self.withManager { manager, server in
            let log = TaskNotificationLog()
            let arrived = ArrivalAction()
            server.routeCallingOnArrival("/arrive", arrived)
            let completions = Recorder<CourierError?>()
            let box = NIOLockedValueBox<DataTask?>(nil)
            arrived.set {
                let task = box.withLockedValue { $0 }
                DispatchQueue.concurrentPerform(iterations: 100) { _ in task?.cancel() }
            }
            let task = try #require(Self.verbTask(manager, "arrive", completions: completions))
            box.withLockedValue { $0 = task }
            #expect(await log.wait(for: .taskDidComplete, of: task))
            #expect(log.count(.taskDidResume, of: task) == 1)
            #expect(log.count(.taskDidComplete, of: task) == 1)
            #expect(log.count(.taskDidSuspend, of: task) == 0)
            #expect(completions.all.first??.code == .cancelled)
            #expect(task.state == .completed)
        }
    }

    // MARK: Description and lifetime

    /// Differs: a task describes itself as its class, identifier, method, URL and state
    /// (`DataTask(1, GET http://…/get, completed)`); Alamofire's request adds the status code.
    @Test func testRequestDescription() async throws {
        try await Self.withManager { manager, server in
            let url = server.url("/get")
            let result = await Self.complete { finish in
                manager.dataTask(with: Request(url: url)) { finish($0, $1, $2) }.resume()
            }
            #expect(result.response?.status == .ok)
            let task = manager.dataTask(with: Request(url: url), completionHandler: nil)
            #expect(task.description == "DataTask(\(task.taskIdentifier), GET \(url.absoluteString), suspended)")
            task.cancel()
        }
    }

    @Test func testThatRequestProvidesURLRequestWhenCreated() async throws {
        try await Self.withManager { manager, server in
            let task = manager.dataTask(with: Request(url: server.url("/get"))) { _, _, _ in }
            // The request is there before the task ever runs.
            #expect(task.originalRequest.url == server.url("/get"))
            #expect(task.currentRequest.url == server.url("/get"))
            let log = TaskNotificationLog()
            task.resume()
            #expect(await log.wait(for: .taskDidComplete, of: task))
            #expect(task.error == nil)
        }
    }

    @Test func testThatRequestProvidesTaskWhenCreated() async throws {
        try await Self.withManager { manager, server in
            let log = TaskNotificationLog()
            let made = manager.get("get", success: { _, _ in })
            let task = try #require(made)
            #expect(manager.tasks.contains(task) || task.state == .completed)
            #expect(await log.wait(for: .taskDidComplete, of: task))
            #expect(task.response?.status == .ok)
        }
    }

    // MARK: Invalid URLs

    /// Differs: Courier sends only `http` and `https`; a `file:` URL fails with
    /// `.unsupportedScheme` (read files with `FileManager`). Alamofire's URLSession reads the file.
    @Test func testThatDataRequestWithFileURLThrowsError() async throws {
        try await withTemporaryFolder { folder in
            let file = folder.appendingPathComponent("valid_data.json")
            try Data(#"{"a":1}"#.utf8).write(to: file)
            let manager = SessionManager()
            let error = await #expect(throws: CourierError.self) {
                _ = try await manager.response(for: Request(url: file), serializer: DataResponseSerializer())
            }
            #expect(error?.code == .unsupportedScheme)
            await manager.invalidate(cancelingTasks: true)
        }
    }

    /// Differs: as `testThatDataRequestWithFileURLThrowsError`, for a download.
    @Test func testThatDownloadRequestWithFileURLThrowsError() async throws {
        try await withTemporaryFolder { folder in
            let file = folder.appendingPathComponent("valid_data.json")
            try Data(#"{"a":1}"#.utf8).write(to: file)
            let manager = SessionManager()
            let error = await #expect(throws: CourierError.self) {
                _ = try await manager.download(Request(url: file))
            }
            #expect(error?.code == .unsupportedScheme)
            await manager.invalidate(cancelingTasks: true)
        }
    }

    /// Differs: as `testThatDataRequestWithFileURLThrowsError`, for a stream: no response.
    @Test func testThatDataStreamRequestWithFileURLThrowsError() async throws {
        try await withTemporaryFolder { folder in
            let file = folder.appendingPathComponent("valid_data.json")
            try Data(#"{"a":1}"#.utf8).write(to: file)
            let manager = SessionManager()
            let error = await #expect(throws: CourierError.self) {
                _ = try await manager.stream(Request(url: file))
            }
            #expect(error?.code == .unsupportedScheme)
            #expect(error?.response == nil)
            await manager.invalidate(cancelingTasks: true)
        }
    }
}

// MARK: A request's own event monitors

extension AlamofireRequestConformanceTests {
    /// Alamofire's `InspectorEventMonitor`: writes each event's name, with its label, into a log
    /// (which monitors may share), on the queue it is given.
    final class InspectorMonitor: EventMonitor {
        let label: String
        let queue: DispatchQueue
        let log: Recorder<(label: String, event: String)>

        init(_ label: String, queue: DispatchQueue, log: Recorder<(label: String, event: String)> = Recorder()) {
            self.label = label
            self.queue = queue
            self.log = log
        }

        var events: [String] { self.log.all.filter { $0.label == self.label }.map(\.event) }

        func taskDidCreate(_ task: SessionTask) { self.log.append((self.label, "created")) }
        func taskDidResume(_ task: SessionTask) { self.log.append((self.label, "resumed")) }
        func task(_ task: SessionTask, didReceive response: HTTPResponse) { self.log.append((self.label, "response")) }
        func task(_ task: SessionTask, didReceiveBodyData bytesReceived: Int64, totalBytesReceived: Int64, totalBytesExpectedToReceive: Int64) {
            if totalBytesReceived == totalBytesExpectedToReceive { self.log.append((self.label, "body")) }
        }
        func task(_ task: SessionTask, didFinishCollecting metrics: TaskMetrics) { self.log.append((self.label, "metrics")) }
        func task(_ task: SessionTask, didCompleteWith error: CourierError?) { self.log.append((self.label, "completed")) }
        func task(_ task: SessionTask, didSerializeResponseWith serializer: any ResponseSerializer, object: (any Sendable)?, error: CourierError?) {
            self.log.append((self.label, error == nil ? "serialized" : "serialization failed"))
        }
    }

    /// Every event of a task whose request's monitor is the only one, in order.
    static let requestEvents = ["created", "resumed", "response", "body", "metrics", "completed", "serialized"]

    /// Waits until each monitor saw the last event of `count` tasks.
    static func settled(_ monitors: InspectorMonitor..., count: Int = 1) async {
        for monitor in monitors {
            let seen = await monitor.log.wait { log in log.filter { $0.label == monitor.label && $0.event == "serialized" }.count >= count }
            #expect(seen)
        }
    }

    /// Differs: a request's monitor hears every event of its task, as the session's monitors do
    /// (Alamofire's hears the request's events only, not the `URLSession` delegate's).
    @Test func instanceEventMonitorIsCalled() async throws {
        try await Self.withManager { manager, server in
            let monitor = InspectorMonitor("instance", queue: DispatchQueue(label: "test.instance-monitor"))
            var request = Request(url: server.url("/get"))
            request.eventMonitors.append(monitor)
            let response = try await manager.data(for: request)
            #expect(response.response.status == .ok)
            await Self.settled(monitor)
            #expect(monitor.events == Self.requestEvents)

            // Another request of the same session is not its business (a session monitor, added
            // for the purpose, shows when that request's events are all out).
            let session = InspectorMonitor("session", queue: monitor.queue, log: monitor.log)
            manager.eventMonitors = [session]
            _ = try await manager.data(for: Request(url: server.url("/get")))
            await Self.settled(session)
            #expect(monitor.events == Self.requestEvents)
        }
    }

    /// Two monitors on one queue: each gets every event, and each event reaches the first before
    /// the second (one delivery serves the monitors that share a queue).
    @Test func multipleInstanceEventMonitorsAreCalledInAddedOrder() async throws {
        try await Self.withManager { manager, server in
            let queue = DispatchQueue(label: "test.instance-monitors")
            let log = Recorder<(label: String, event: String)>()
            let first = InspectorMonitor("first", queue: queue, log: log)
            let second = InspectorMonitor("second", queue: queue, log: log)
            var request = Request(url: server.url("/get"))
            request.eventMonitors = [first, second]
            _ = try await manager.data(for: request)
            await Self.settled(first, second)
            #expect(first.events == Self.requestEvents)
            #expect(second.events == Self.requestEvents)
            // Interleaved, event by event: first, second, first, second…
            #expect(log.all.map(\.label) == Array(repeating: ["first", "second"], count: Self.requestEvents.count).flatMap { $0 })
        }
    }

    /// Differs: as ``instanceEventMonitorIsCalled()``, the request's monitor hears what the
    /// session's hears; each gets every event in order, but a request's monitors and the
    /// session's are not ordered among themselves (the session's deliveries serve all its tasks).
    @Test func instanceAndSessionEventMonitorsAreCalledInCorrectOrder() async throws {
        try await Self.withManager { manager, server in
            let session = InspectorMonitor("session", queue: DispatchQueue(label: "test.session-monitor"))
            let instance = InspectorMonitor("instance", queue: DispatchQueue(label: "test.instance-monitor"))
            manager.eventMonitors = [session]
            var request = Request(url: server.url("/get"))
            request.eventMonitors.append(instance)
            _ = try await manager.data(for: request)
            await Self.settled(session, instance)
            #expect(session.events == Self.requestEvents)
            #expect(instance.events == Self.requestEvents)

            // A request without monitors of its own: the session's monitor only.
            _ = try await manager.data(for: Request(url: server.url("/get")))
            await Self.settled(session, count: 2)
            #expect(session.events == Self.requestEvents + Self.requestEvents)
            #expect(instance.events == Self.requestEvents)
        }
    }
}
