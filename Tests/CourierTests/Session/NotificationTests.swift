import Courier
import CourierTesting
import Dispatch
import Foundation
import Testing

/// Collects the notifications posted about one object.
final class NotificationLog: @unchecked Sendable {
    // @unchecked: `entries` is only touched under `lock`; observers are removed in deinit.
    private let lock = NSLock()
    private var entries: [(Notification.Name, [AnyHashable: Any])] = []
    private var observers: [any NSObjectProtocol] = []

    init(names: [Notification.Name], object: AnyObject?) {
        for name in names {
            let observer = NotificationCenter.default.addObserver(forName: name, object: object, queue: nil) { [weak self] note in
                guard let self else { return }
                self.lock.lock()
                self.entries.append((note.name, note.userInfo ?? [:]))
                self.lock.unlock()
            }
            self.observers.append(observer)
        }
    }

    deinit {
        for observer in self.observers { NotificationCenter.default.removeObserver(observer) }
    }

    var names: [Notification.Name] {
        self.lock.lock()
        defer { self.lock.unlock() }
        return self.entries.map(\.0)
    }

    /// The user info of every notification of `name` so far, oldest first.
    func userInfos(of name: Notification.Name) -> [[AnyHashable: Any]] {
        self.lock.lock()
        defer { self.lock.unlock() }
        return self.entries.filter { $0.0 == name }.map(\.1)
    }

    func userInfo(of name: Notification.Name) -> [AnyHashable: Any]? {
        self.lock.lock()
        defer { self.lock.unlock() }
        return self.entries.last { $0.0 == name }?.1
    }
}

/// Runs one data task to `url` on `manager` with a log of its `names` notifications, and returns
/// once its completion handler ran and `.taskDidComplete` was posted, or never will be: it is
/// posted right after the handler, in the same block on the (test) completion queue.
func completedDataTask(
    on manager: HTTPSessionManager, url: URL, logging names: [Notification.Name]
) async -> (task: DataTask, log: NotificationLog) {
    let done = Recorder<Void>()
    let task = manager.dataTask(with: Request(url: url)) { _, _, _ in done.append(()) }
    let log = NotificationLog(names: names, object: task)
    task.resume()
    #expect(await done.wait { $0.count == 1 })
    TestQueues.completion.sync {}
    return (task, log)
}

@Suite("Notifications")
struct NotificationTests {
    @Test func resumeSuspendCompleteWithUserInfo() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let done = Recorder<Void>()
                manager.responseSerializer = HTTPResponseSerializer()
                var hooks = SessionManager.Hooks()
                let suspended = Recorder<Void>()
                hooks.dataTaskDidReceiveData = { _, task, _ in
                    if suspended.count == 0 {
                        suspended.append(())
                        task.suspend()
                    }
                }
                manager.hooks = hooks
                let task = manager.dataTask(with: Request(url: server.url("/courier/slow-body/3?interval=0.1"))) { _, _, _ in done.append(()) }
                let log = NotificationLog(names: [.taskDidResume, .taskDidSuspend, .taskDidComplete], object: task)
                task.resume()
                // The suspend's notification, not only its state: `suspend()` changes the state
                // under the task's lock and posts after releasing it, so a resume made as soon as
                // the state says suspended can post first (seen once in a full run). Two calls
                // from two threads have no order of their own to keep.
                #expect(await eventually { task.state == .suspended && log.names.contains(.taskDidSuspend) })
                task.resume()
                #expect(await done.wait { $0.count == 1 })
                #expect(await eventually { log.names.contains(.taskDidComplete) })
                #expect(log.names == [.taskDidResume, .taskDidSuspend, .taskDidResume, .taskDidComplete])
                let info = try #require(log.userInfo(of: .taskDidComplete))
                #expect(info[TaskDidCompleteKey.responseSerializer] is any ResponseSerializer)
                #expect((info[TaskDidCompleteKey.responseData] as? Data)?.isEmpty == false)
                #expect(info[TaskDidCompleteKey.serializedResponse] != nil)
                #expect(info[TaskDidCompleteKey.error] == nil)
            }
        }
    }

    @Test func failureCarriesTheError() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let task = manager.dataTask(with: Request(url: server.url("/status/418"))) { _, _, _ in }
                let log = NotificationLog(names: [.taskDidComplete], object: task)
                task.resume()
                #expect(await eventually { log.names == [.taskDidComplete] })
                let error = log.userInfo(of: .taskDidComplete)?[TaskDidCompleteKey.error] as? CourierError
                #expect(error?.code == .unacceptableStatusCode)
                #expect(error?.response?.status.code == 418)
            }
        }
    }

    /// A success's user info is filled into a copy of one template (`TaskDidCompleteKey`'s
    /// success template): each task's values, none of another's, and every key; a failure's is
    /// made key by key.
    @Test func eachSuccessCarriesItsOwnValuesUnderEveryKey() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                // Other tests post too: each notification is found by its task's URL.
                let log = NotificationLog(names: [.taskDidComplete], object: nil)
                func posted(for url: URL) throws -> [AnyHashable: Any] {
                    try #require(
                        log.userInfos(of: .taskDidComplete).last { ($0[TaskDidCompleteKey.metrics] as? TaskMetrics)?.originalRequest.url == url })
                }
                var infos: [[AnyHashable: Any]] = []
                for path in ["/get?notification=\(UUID())", "/bytes/7?notification=\(UUID())"] {
                    let url = server.url(path)
                    let response = try await manager.response(for: Request(url: url), serializer: DataResponseSerializer())
                    let info = try posted(for: url)
                    #expect(info.count == 5)
                    #expect(info[TaskDidCompleteKey.responseSerializer] is DataResponseSerializer)
                    #expect(info[TaskDidCompleteKey.responseData] as? Data == response.data)
                    #expect(info[TaskDidCompleteKey.serializedResponse] as? Data == response.value)
                    #expect(info[TaskDidCompleteKey.responseSource] as? ResponseSource == .network)
                    #expect(info[TaskDidCompleteKey.error] == nil && info[TaskDidCompleteKey.assetPath] == nil)
                    infos.append(info)
                }
                // The first task's user info kept its own values when the second was filled.
                #expect((infos[0][TaskDidCompleteKey.responseData] as? Data)?.count != 7)
                #expect((infos[1][TaskDidCompleteKey.responseData] as? Data)?.count == 7)

                let failing = server.url("/status/418?notification=\(UUID())")
                _ = try? await manager.response(for: Request(url: failing), serializer: DataResponseSerializer())
                let info = try posted(for: failing)
                #expect((info[TaskDidCompleteKey.error] as? CourierError)?.code == .unacceptableStatusCode)
                // The refused body, as `DataResponseSerializer.serialize` returns it beside its
                // error and the callback API posts it.
                #expect(info[TaskDidCompleteKey.serializedResponse] as? Data == Data("I'm a teapot\n".utf8))
            }
        }
    }

    /// An async call whose serializer refuses the status but parses the body (a 404's JSON error
    /// document) throws the status error and posts the object beside it, as the callback API
    /// does, from its one serialization: the manager's serializer (`get`) and one passed in.
    @Test func asyncFailurePostsTheRefusedBodysObjectBesideTheError() async throws {
        try await withTestServer { server in
            server.route("/missing") { _ in .json(#"{"error":"no such item"}"#, status: .notFound) }
            try await withManager(baseURL: server.baseURL) { manager in
                // Other tests post too: each notification is found by its request's query.
                let log = NotificationLog(names: [.taskDidComplete], object: nil)
                func expectObjectAndError(postedFor query: String, sourceLocation: SourceLocation = #_sourceLocation) {
                    let posted = log.userInfos(of: .taskDidComplete).last { ($0[TaskDidCompleteKey.metrics] as? TaskMetrics)?.originalRequest.url.query == query }
                    guard let info = posted else {
                        Issue.record("no taskDidComplete for \(query)", sourceLocation: sourceLocation)
                        return
                    }
                    let document = info[TaskDidCompleteKey.serializedResponse] as? [String: Any]
                    #expect(document?["error"] as? String == "no such item", sourceLocation: sourceLocation)
                    let error = info[TaskDidCompleteKey.error] as? CourierError
                    #expect(error?.code == .unacceptableStatusCode, sourceLocation: sourceLocation)
                    #expect(error?.response?.status.code == 404, sourceLocation: sourceLocation)
                }

                let calls = Recorder<String>()
                let passed = "notification=\(UUID())"
                let refused = await #expect(throws: CourierError.self, "a 404 is refused") {
                    try await manager.response(for: Request(url: server.url("/missing?\(passed)")), serializer: CountingJSONSerializer(calls: calls))
                }
                #expect(refused?.code == .unacceptableStatusCode)
                expectObjectAndError(postedFor: passed)
                #expect(calls.all == ["serialize"])

                let managers = "notification=\(UUID())"
                let refusedByGet = await #expect(throws: CourierError.self, "a 404 is refused") {
                    try await manager.get("missing?\(managers)")
                }
                #expect(refusedByGet?.code == .unacceptableStatusCode)
                expectObjectAndError(postedFor: managers)

                // The callback API posts the same.
                let callback = "notification=\(UUID())"
                _ = await completedDataTask(on: manager, url: server.url("/missing?\(callback)"), logging: [])
                expectObjectAndError(postedFor: callback)
            }
        }
    }

    @Test func asyncCallsPostTheSameNotification() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let log = NotificationLog(names: [.taskDidResume, .taskDidComplete], object: nil)
                _ = try await manager.get("get")
                #expect(await eventually { log.names.filter { $0 == .taskDidComplete }.count >= 1 })
                #expect(log.names.contains(.taskDidResume))
            }
        }
    }

    /// A session that sets ``SessionConfiguration/postsTaskNotifications`` to false posts none of
    /// a task's notifications; the default posts them (the same test body, so the observer is
    /// shown to see them when they are posted).
    @Test(arguments: [true, false])
    func postsTaskNotificationsDecidesWhetherTasksPost(_ posts: Bool) async throws {
        try await withTestServer { server in
            var configuration = SessionConfiguration.default
            configuration.postsTaskNotifications = posts
            try await withManager(baseURL: server.baseURL, configuration: configuration) { manager in
                let (_, log) = await completedDataTask(
                    on: manager, url: server.url("/get"), logging: [.taskDidResume, .taskDidSuspend, .taskDidComplete])
                #expect(log.names == (posts ? [.taskDidResume, .taskDidComplete] : []))
            }
        }
    }

    @Test func invalidationIsAnnounced() async throws {
        let manager = HTTPSessionManager(engine: RefusingEngine())
        let log = NotificationLog(names: [.sessionDidInvalidate], object: manager)
        await manager.invalidate(cancelingTasks: false)
        #expect(await eventually { log.names == [.sessionDidInvalidate] })
        #expect(manager.isInvalidated)
    }
}

/// A JSON serializer that records which of its entry points Courier calls.
struct CountingJSONSerializer: ResponseSerializer {
    let calls: Recorder<String>
    var base = JSONResponseSerializer()

    func responseObject(for response: HTTPResponse?, data: Data?) throws(CourierError) -> (any Sendable)? {
        self.calls.append("responseObject")
        return try self.base.responseObject(for: response, data: data)
    }

    func validate(_ response: HTTPResponse?, data: Data?) throws(CourierError) {
        try self.base.validate(response, data: data)
    }

    func serialize(response: HTTPResponse?, data: Data?) -> (object: (any Sendable)??, error: CourierError?) {
        self.calls.append("serialize")
        return self.base.serialize(response: response, data: data)
    }
}

@Suite("Completion queue and group")
struct CompletionQueueTests {
    @Test func handlersRunOnTheQueueInsideTheGroup() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let group = DispatchGroup()
                manager.completionGroup = group
                let queues = Recorder<String?>()
                let insideGroup = Recorder<Bool>()
                for index in 0..<10 {
                    manager.get("get", parameters: ["i": index], success: { _, _ in
                        queues.append(DispatchQueue.getSpecific(key: TestQueues.key))
                        // As in AFNetworking, the group is entered for each completion handler.
                        insideGroup.append(group.wait(timeout: .now()) == .timedOut)
                    }, failure: { _, error in
                        Issue.record("unexpected failure \(error)")
                    })
                }
                #expect(await queues.wait { $0.count == 10 })
                let left = await withCheckedContinuation { continuation in
                    group.notify(queue: .global()) { continuation.resume(returning: true) }
                }
                #expect(left)
                #expect(queues.all.allSatisfy { $0 == "completion" })
                #expect(insideGroup.all == Array(repeating: true, count: 10))
            }
        }
    }

    @Test func mainQueueIsTheDefault() async throws {
        try await withTestServer { server in
            let manager = HTTPSessionManager(baseURL: server.baseURL)
            defer { manager.invalidate(cancelingTasks: true) }
            // Under a test runner that called `dispatchMain()`, the main queue runs on a worker
            // thread: check the queue, not the thread.
            let mainKey = DispatchSpecificKey<Bool>()
            DispatchQueue.main.setSpecific(key: mainKey, value: true)
            let onMain: Bool = await awaitCallback { finish in
                manager.get("get", success: { _, _ in finish(DispatchQueue.getSpecific(key: mainKey) == true) }, failure: { _, error in
                    Issue.record("unexpected failure \(error)")
                    finish(false)
                })
            }
            #expect(onMain)
        }
    }
}
