@testable import Courier
import CourierTesting
import Foundation
import NIOPosix
import Testing

@Suite("Manager hooks")
struct HookTests {
    @Test func redirectionCanBeFollowedChangedOrRefused() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let seen = Recorder<String>()
                var hooks = SessionManager.Hooks()
                hooks.taskWillPerformHTTPRedirection = { _, _, response, request in
                    seen.append("\(response.status.code) \(request.url.path)")
                    if request.url.path.hasSuffix("/get") {
                        var changed = request
                        changed.url = server.url("/anything/changed")
                        return changed
                    }
                    return request
                }
                manager.hooks = hooks
                let followed = try await manager.get("redirect/2")
                #expect(followed.request.url.path == "/anything/changed")
                #expect(seen.count == 2)

                hooks.taskWillPerformHTTPRedirection = { _, _, _, _ in nil }
                manager.hooks = hooks
                manager.responseSerializer = HTTPResponseSerializer()
                await #expect {
                    try await manager.get("redirect/1")
                } throws: { error in
                    (error as? CourierError)?.response?.status.code == 302
                }
            }
        }
    }

    @Test func redirectLimitAndDisallowPolicy() async throws {
        try await withTestServer { server in
            var limited = SessionConfiguration.default
            limited.redirectPolicy = .follow(max: 2, allowCycles: false)
            try await withManager(baseURL: server.baseURL, configuration: limited) { manager in
                await #expect {
                    try await manager.get("redirect/5")
                } throws: { error in
                    (error as? CourierError)?.code == .tooManyRedirects
                }
            }
            var disallowed = SessionConfiguration.default
            disallowed.redirectPolicy = .disallow
            try await withManager(baseURL: server.baseURL, configuration: disallowed) { manager in
                let task = manager.dataTask(with: Request(url: server.url("/redirect/1"))) { _, _, _ in }
                let response: HTTPResponse? = await awaitCallback { finish in
                    let task = manager.dataTask(with: Request(url: server.url("/redirect/1"))) { response, _, _ in finish(response) }
                    task.resume()
                }
                task.cancel()
                #expect(response?.status.code == 302)
                #expect(response?.headerFields[.location] != nil)
            }
        }
    }

    @Test func receivedResponseCanCancel() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                var hooks = SessionManager.Hooks()
                hooks.dataTaskDidReceiveResponse = { _, _, response in response.status == .ok ? .cancel : .allow }
                manager.hooks = hooks
                await #expect {
                    try await manager.get("get")
                } throws: { error in
                    (error as? CourierError)?.code == .cancelled
                }
            }
        }
    }

    @Test func dataAndBodySentHooksSeeEveryByte() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let received = Recorder<Int>()
                let sent = Recorder<(Int64, Int64, Int64)>()
                let completed = Recorder<CourierError?>()
                var hooks = SessionManager.Hooks()
                hooks.dataTaskDidReceiveData = { _, _, data in received.append(data.count) }
                hooks.taskDidSendBodyData = { _, _, bytes, total, expected in sent.append((bytes, total, expected)) }
                hooks.taskDidComplete = { _, _, error in completed.append(error) }
                manager.hooks = hooks
                manager.responseSerializer = HTTPResponseSerializer()
                let body = Data(repeating: 7, count: 300_000)
                var request = Request(method: .post, url: server.url("/courier/echo"))
                request.headerFields[.contentType] = "application/octet-stream"
                let uploadFractions = Recorder<Double>()
                let response = try await manager.response(
                    for: Request(method: .post, url: request.url, headerFields: request.headerFields, body: .data(body)),
                    serializer: DataResponseSerializer(),
                    uploadProgress: { uploadFractions.append($0.fractionCompleted) })
                #expect(response.value == body)
                #expect(received.all.reduce(0, +) == body.count)
                #expect(sent.all.last?.1 == Int64(body.count))
                #expect(sent.all.last?.2 == Int64(body.count))
                #expect(uploadFractions.all == uploadFractions.all.sorted(), "progress never goes backwards")
                #expect(uploadFractions.all.last == 1.0)
                #expect(await completed.wait { $0.count == 1 })
            }
        }
    }

    @Test func downloadProgressEndsAtOne() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let fractions = Recorder<Double>()
                let task: SessionTask = await awaitCallback { finish in
                    let box = Recorder<SessionTask>()
                    let task = manager.dataTask(
                        with: Request(url: server.url("/courier/big/1000000")),
                        downloadProgress: { fractions.append($0.fractionCompleted) }
                    ) { _, _, _ in finish(box.all[0]) }
                    box.append(task)
                    task.resume()
                }
                #expect(fractions.all == fractions.all.sorted())
                #expect(fractions.all.last == 1.0)
                #expect(task.downloadProgress.fractionCompleted == 1.0)
                #expect(task.countOfBytesExpectedToReceive == 1_000_000)
            }
        }
    }
}

/// A 200 whose body broke off halfway, retried: the progress object stays where the first
/// attempt took it until the retry's bytes pass it, for a data task and a download. It went back
/// to the retry's first bytes.
@Suite("Progress across a retry")
struct ProgressAcrossRetryTests {
    @Test(arguments: [false, true])
    func progressNeverGoesBackAfterABodyThatBrokeOff(download: Bool) async throws {
        let total = 200_000
        let body = [UInt8](repeating: UInt8(ascii: "x"), count: total)
        let head = Array("HTTP/1.1 200 OK\r\nContent-Length: \(total)\r\n\r\n".utf8)
        try await ScriptedHTTPServer.with({ connection, _, _ in
            connection == 0 ? .respondBytesThenClose(head + body.prefix(total / 2)) : .respondBytes(head + body)
        }) { server in
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            var policy = RetryPolicy(retryLimit: 1)
            policy.initialBackoff = .zero
            manager.interceptor = policy
            let counts = Recorder<Int64>()
            let request = Request(url: server.baseURL.appendingPathComponent("file"))
            let task: SessionTask = await awaitCallback { finish in
                let box = Recorder<SessionTask>()
                let task: SessionTask
                if download {
                    task = manager.downloadTask(with: request, progress: { counts.append($0.completedUnitCount) }, destination: nil) { _, file, _ in
                        // The downloaded file is the caller's to remove.
                        if let file { try? FileManager.default.removeItem(at: file) }
                        finish(box.all[0])
                    }
                } else {
                    task = manager.dataTask(with: request, downloadProgress: { counts.append($0.completedUnitCount) }) { _, _, _ in finish(box.all[0]) }
                }
                box.append(task)
                task.resume()
            }
            #expect(task.error == nil, "\(String(describing: task.error))")
            #expect(server.receivedHeads.count == 2, "retried once")
            #expect(counts.all == counts.all.sorted(), "progress went back: \(counts.all)")
            #expect(counts.all.last == Int64(total))
            #expect(task.downloadProgress.completedUnitCount == Int64(total))
        }
    }
}

@Suite("Concurrency")
struct ConcurrencyTests {
    @Test func thousandInFlightHalfCancelledEachCompletesOnce() async throws {
        try await withTestServer { server in
            var configuration = SessionConfiguration.default
            configuration.httpMaximumConnectionsPerHost = 32
            try await withManager(baseURL: server.baseURL, configuration: configuration) { manager in
                manager.responseSerializer = HTTPResponseSerializer()
                let count = 1000
                let completions = Recorder<(Int, CourierError?)>()
                var tasks: [DataTask] = []
                for index in 0..<count {
                    let path = index % 10 == 0 ? "/delay/0.2" : "/bytes/\(100 + index)"
                    let task = manager.dataTask(with: Request(url: server.url(path))) { _, _, error in
                        completions.append((index, error))
                    }
                    tasks.append(task)
                }
                var generator = SystemRandomNumberGenerator()
                let cancelled = Set((0..<count).shuffled(using: &generator).prefix(count / 2))
                // Some are cancelled before they start, the rest at random moments while running.
                for index in cancelled where index % 3 == 0 { tasks[index].cancel() }
                for task in tasks { task.resume() }
                for index in cancelled.sorted() where index % 3 != 0 {
                    if Bool.random() { try await Task.sleep(for: .microseconds(Int.random(in: 0...500))) }
                    tasks[index].cancel()
                }
                #expect(await completions.wait { $0.count == count })
                // Once the engine is down no event can arrive; flush serialization and completion.
                await manager.invalidate(cancelingTasks: false)
                SessionManager.processingQueue.sync(flags: .barrier) {}
                TestQueues.completion.sync {}
                let byIndex = Dictionary(grouping: completions.all, by: \.0)
                #expect(byIndex.count == count, "none is lost")
                #expect(byIndex.values.allSatisfy { $0.count == 1 }, "each completes exactly once")
                for index in 0..<count where !cancelled.contains(index) {
                    #expect(byIndex[index]?.first?.1 == nil, "uncancelled task \(index) succeeds")
                }
                for index in cancelled where index % 3 == 0 {
                    #expect(byIndex[index]?.first?.1?.code == .cancelled)
                }
                #expect(await eventually { manager.tasks.isEmpty }, "the registry ends empty")
            }
        }
    }
}

/// Where a task's end settles: a task made by an `async` call finishes its end (the cache store,
/// the metrics, the registry) on the calling task, a completion-handler task on the processing
/// queue; neither on the engine's event loops (with HTTP/2 one loop carries every stream of a
/// connection).
@Suite("Where a task's end settles")
struct TaskEndSettlingTests {
    /// Whether each hook ran on an event loop.
    final class Places: Sendable {
        let metrics = Recorder<Bool>()
        let cache = Recorder<Bool>()
    }

    static func hooks(recordingInto places: Places) -> SessionManager.Hooks {
        var hooks = SessionManager.Hooks()
        hooks.taskDidFinishCollectingMetrics = { _, _, _ in
            places.metrics.append(MultiThreadedEventLoopGroup.currentEventLoop != nil)
        }
        hooks.dataTaskWillCacheResponse = { _, _, cached in
            places.cache.append(MultiThreadedEventLoopGroup.currentEventLoop != nil)
            return cached
        }
        return hooks
    }

    @Test func anAsyncCallSettlesOnTheCallingTask() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let places = Places()
                manager.hooks = Self.hooks(recordingInto: places)
                let response = try await manager.get("cache/60")
                #expect(response.response.status == .ok)
                // Everything of the task's end ran before the call returned, and not on a loop.
                #expect(places.metrics.all == [false])
                #expect(places.cache.all == [false])
                #expect(response.metrics != nil)
                #expect(manager.tasks.isEmpty)
            }
        }
    }

    @Test func aCompletionHandlerTaskSettlesOffTheEngineThread() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let places = Places()
                manager.hooks = Self.hooks(recordingInto: places)
                let status: Int? = await awaitCallback { finish in
                    manager.dataTask(with: Request(url: server.url("/cache/60"))) { response, _, _ in finish(response?.status.code) }.resume()
                }
                #expect(status == 200)
                // Before the handler ran, and not on a loop.
                #expect(places.metrics.all == [false])
                #expect(places.cache.all == [false])
                #expect(manager.tasks.isEmpty)
            }
        }
    }
}

@Suite("Task metrics on request")
struct TaskMetricsSettingTests {
    /// With ``SessionConfiguration/collectsTaskMetrics`` false, and nothing set that reads them,
    /// a task has no metrics anywhere: not on the task, the response or the notification. The
    /// default has them in each place (the same test body).
    @Test(arguments: [true, false])
    func collectsTaskMetricsDecidesWhetherTasksGatherThem(_ collects: Bool) async throws {
        try await withTestServer { server in
            var configuration = SessionConfiguration.default
            configuration.collectsTaskMetrics = collects
            try await withManager(baseURL: server.baseURL, configuration: configuration) { manager in
                let (task, log) = await completedDataTask(on: manager, url: server.url("/get"), logging: [.taskDidComplete])
                #expect((task.metrics != nil) == collects)
                #expect(task.metrics?.attempts.count == (collects ? 1 : nil))
                let info = try #require(log.userInfo(of: .taskDidComplete))
                #expect((info[TaskDidCompleteKey.metrics] is TaskMetrics) == collects)

                let response = try await manager.response(method: .get, urlString: "get", serializer: DataResponseSerializer())
                #expect(response.response.status == .ok)
                #expect((response.metrics != nil) == collects)
            }
        }
    }

    /// What reads the metrics still gets them with the setting off: the metrics hook, and an event
    /// monitor (``MetricsMonitor`` lives on them).
    @Test(arguments: ["hook", "monitor"])
    func whatReadsTheMetricsGetsThemWithTheSettingOff(_ reader: String) async throws {
        try await withTestServer { server in
            var configuration = SessionConfiguration.default
            configuration.collectsTaskMetrics = false
            try await withManager(baseURL: server.baseURL, configuration: configuration) { manager in
                let delivered = Recorder<TaskMetrics>()
                if reader == "hook" {
                    var hooks = SessionManager.Hooks()
                    hooks.taskDidFinishCollectingMetrics = { _, _, metrics in delivered.append(metrics) }
                    manager.hooks = hooks
                } else {
                    var monitor = ClosureEventMonitor()
                    monitor.taskDidFinishCollectingMetrics = { _, metrics in delivered.append(metrics) }
                    manager.eventMonitors = [monitor]
                }
                let response = try await manager.response(method: .get, urlString: "get", serializer: DataResponseSerializer())
                #expect(await delivered.wait { $0.count == 1 })
                #expect(delivered.all.first?.attempts.count == 1)
                #expect(response.metrics != nil)
            }
        }
    }
}
