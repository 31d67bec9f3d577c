import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import Testing

@testable import Courier

/// The connectivity retry for every task kind, over real sockets to the test server: the first
/// exchange fails as a connect with no route does (``NetworkDownEngine``), the scripted monitor
/// says when the network is back.
@Suite("Connectivity retry: every task kind, one task throughout")
struct ConnectivityRetryTaskKindTests {
    /// Reports the network back once a task's wait for it has started the monitor (a report sent
    /// before that is not heard; one sent after is the manager's status, which the wait reads
    /// first).
    ///
    /// Unstructured because the test's own flow is blocked on the task's completion meanwhile. It
    /// ends once the monitor starts, or after ``ScriptedMonitor/waitUntilStarted()``'s bound
    /// when no task ever waits.
    static func bringNetworkBack(monitor: ScriptedMonitor) {
        Task {
            await monitor.waitUntilStarted()
            monitor.send(.reachableViaEthernet)
        }
    }

    static func waitUntilWaiting(_ task: SessionTask) async {
        #expect(await eventually { task.isWaitingForConnectivity })
    }

    // MARK: Retried

    @Test func aCallbackDataTaskIsRetriedAndKeepsItsIdentity() async throws {
        try await withRetryingManager { server, engine, monitor, manager in
            let calls = Recorder<(HTTPResponse?, CourierError?)>()
            let done = AsyncStream<Void>.makeStream()
            let task = manager.dataTask(with: Request(url: server.url("/get"))) { response, _, error in
                calls.append((response, error))
                done.continuation.yield()
            }
            let identifier = task.taskIdentifier
            let notifications = CompletionCounter(task)
            task.resume()
            // The network stays down until the waiting task has been looked at: a poll cannot
            // catch a wait that the network's return has already ended.
            await Self.waitUntilWaiting(task)
            #expect(manager.tasks.contains(task))
            #expect(task.state == .running)
            Self.bringNetworkBack(monitor: monitor)
            for await _ in done.stream { break }
            #expect(calls.count == 1)
            #expect(calls.all.first?.0?.status == .ok)
            #expect(calls.all.first?.1 == nil)
            #expect(engine.executions == 2)
            #expect(task.taskIdentifier == identifier)
            #expect(task.state == .completed)
            #expect(await eventually { notifications.value == 1 })
            #expect(notifications.value == 1)
        }
    }

    @Test func aVerbWithCallbacksIsRetried() async throws {
        try await withRetryingManager { server, engine, monitor, manager in
            Self.bringNetworkBack(monitor: monitor)
            let object: (any Sendable)? = try await withCheckedThrowingContinuation { continuation in
                manager.post(
                    "post", parameters: ["name": "courier"],
                    success: { _, object in continuation.resume(returning: object) },
                    failure: { _, error in continuation.resume(throwing: error) })
            }
            #expect((object.json?["form"] as? [String: any Sendable])?["name"] as? String == "courier")
            #expect(engine.executions == 2)
        }
    }

    @Test func anUploadIsRetriedAndItsProgressNeverGoesBack() async throws {
        try await withRetryingManager { server, engine, monitor, manager in
            let fractions = Recorder<Double>()
            let body = Data(repeating: 7, count: 200_000)
            let result: (HTTPResponse?, CourierError?) = await withCheckedContinuation { continuation in
                let task = manager.uploadTask(
                    with: Request(method: .post, url: server.url("/post")), fromData: body,
                    progress: { fractions.append($0.fractionCompleted) },
                    completionHandler: { response, _, error in continuation.resume(returning: (response, error)) })
                Self.bringNetworkBack(monitor: monitor)
                task.resume()
            }
            #expect(result.0?.status == .ok)
            #expect(result.1 == nil)
            #expect(engine.executions == 2)
            #expect(fractions.all == fractions.all.sorted())
            #expect(fractions.all.last == 1.0)
        }
    }

    @Test func aDownloadIsRetriedIntoOneWholeFile() async throws {
        try await withScratchDirectory { folder in
            var configuration = SessionConfiguration.default
            configuration.downloadDirectory = folder
            try await withRetryingManager(configuration: configuration) { server, engine, monitor, manager in
                let file = TestServer.GeneratedFile(length: 300_000)
                let destination = folder.appendingPathComponent("whole.bin")
                let result: (HTTPResponse?, URL?, CourierError?) = await withCheckedContinuation { continuation in
                    let task = manager.downloadTask(
                        with: Request(url: server.url(file.path())), destination: DownloadDestination { _, _ in destination },
                        completionHandler: { continuation.resume(returning: ($0, $1, $2)) })
                    Self.bringNetworkBack(monitor: monitor)
                    task.resume()
                }
                #expect(result.2 == nil)
                #expect(result.1 == destination)
                let data = try Data(contentsOf: destination)
                #expect(data.count == file.length)
                #expect(CRC32.checksum(of: data) == file.crc32())
                #expect(engine.executions == 2)
                // No stray temporary file from the failed attempt.
                #expect(contents(of: folder) == ["whole.bin"])
            }
        }
    }

    @Test func anAsyncDownloadIsRetried() async throws {
        try await withScratchDirectory { folder in
            var configuration = SessionConfiguration.default
            configuration.downloadDirectory = folder
            try await withRetryingManager(configuration: configuration) { server, engine, monitor, manager in
                Self.bringNetworkBack(monitor: monitor)
                let file = TestServer.GeneratedFile(length: 100_000)
                let response = try await manager.download(Request(url: server.url(file.path())))
                let data = try Data(contentsOf: response.fileURL)
                #expect(CRC32.checksum(of: data) == file.crc32())
                #expect(engine.executions == 2)
                try? FileManager.default.removeItem(at: response.fileURL)
            }
        }
    }

    @Test func aDownloadContinuingResumeDataIsRetriedAndAppendsOnce() async throws {
        try await withScratchDirectory { folder in
            var configuration = SessionConfiguration.default
            configuration.downloadDirectory = folder
            try await withRetryingManager(failing: 0, configuration: configuration) { server, engine, monitor, manager in
                let file = TestServer.GeneratedFile(length: 3 << 20)
                // A dropped connection (not a network down: no retry) leaves resume data.
                let first = await #expect(throws: CourierError.self) {
                    try await manager.download(Request(url: server.url(file.path(["drop-after": "2000000"]))))
                }
                #expect(first?.code == .connectionClosed)
                let resumeData = try #require(first?.resumeData)
                #expect(engine.executions == 1)

                engine.failNext(1)
                Self.bringNetworkBack(monitor: monitor)
                let target = folder.appendingPathComponent("whole.bin")
                let rest = try await manager.download(resumingFrom: resumeData, to: DownloadDestination { _, _ in target })
                #expect(rest.response.status == .partialContent)
                let data = try Data(contentsOf: target)
                #expect(data.count == file.length)
                #expect(CRC32.checksum(of: data) == file.crc32())
                #expect(engine.executions == 3)
                #expect(contents(of: folder) == ["whole.bin"])
            }
        }
    }

    @Test func aStreamIsRetriedBeforeItsFirstByte() async throws {
        try await withRetryingManager { server, engine, monitor, manager in
            Self.bringNetworkBack(monitor: monitor)
            let stream = try await manager.stream(Request(url: server.url("/bytes/5000")))
            var received = 0
            for try await chunk in stream.body { received += chunk.readableBytes }
            #expect(stream.response.status == .ok)
            #expect(received == 5000)
            #expect(engine.executions == 2)
        }
    }

    @Test func anEventStreamsFirstConnectionIsRetried() async throws {
        try await withRetryingManager { server, engine, monitor, manager in
            Self.bringNetworkBack(monitor: monitor)
            // No reconnection of the stream's own: its first connection's task is retried.
            let options = ServerSentEventStream.Options(retryDelay: .seconds(30), maximumReconnectionsWithoutEvent: 0)
            var ids: [String?] = []
            for try await event in manager.eventStream(Request(url: server.url("/courier/sse?count=2")), options: options) {
                ids.append(event.id)
                if ids.count == 2 { break }
            }
            #expect(ids == ["1", "2"])
            #expect(engine.executions == 2)
        }
    }

    // MARK: Ended while waiting

    @Test func cancellingDuringTheWaitEndsTheTaskOnceWithCancelled() async throws {
        try await withRetryingManager { server, engine, monitor, manager in
            let calls = Recorder<CourierError?>()
            let done = AsyncStream<Void>.makeStream()
            let task = manager.dataTask(with: Request(url: server.url("/get"))) { _, _, error in
                calls.append(error)
                done.continuation.yield()
            }
            let notifications = CompletionCounter(task)
            task.resume()
            await Self.waitUntilWaiting(task)
            task.cancel()
            for await _ in done.stream { break }
            #expect(calls.count == 1)
            #expect(calls.all.first??.code == .cancelled)
            #expect(task.state == .completed)
            #expect(engine.executions == 1)
            #expect(manager.tasks.isEmpty)
            #expect(await eventually { notifications.value == 1 })
        }
    }

    @Test func cancellingTheCallerDuringTheWaitEndsAnAsyncDownload() async throws {
        try await withRetryingManager { server, engine, monitor, manager in
            let caller = Task { try await manager.download(Request(url: server.url("/bytes/100"))) }
            #expect(await eventually { manager.tasks.first?.isWaitingForConnectivity == true })
            caller.cancel()
            let result = await caller.result
            guard case .failure(let error) = result else {
                Issue.record("the download did not fail")
                return
            }
            #expect((error as? CourierError)?.code == .cancelled)
            #expect(engine.executions == 1)
        }
    }

    @Test func invalidatingDuringTheWaitEndsTheTask() async throws {
        for cancelling in [true, false] {
            try await withTestServer { server in
                let engine = NetworkDownEngine()
                let manager = retryingManager(server, engine: engine, monitor: ScriptedMonitor())
                let result: CourierError? = await withCheckedContinuation { continuation in
                    let task = manager.dataTask(with: Request(url: server.url("/get"))) { _, _, error in
                        continuation.resume(returning: error)
                    }
                    task.resume()
                    Task {
                        await Self.waitUntilWaiting(task)
                        await manager.invalidate(cancelingTasks: cancelling)
                    }
                }
                // Cancelling: cancelled. Not cancelling: the failure the task was waiting to retry.
                #expect(result?.code == (cancelling ? .cancelled : .connectionFailed))
                #expect(engine.executions == 1)
            }
        }
    }

    @Test func aSuspendedTaskWaitsForResumeBeforeRetrying() async throws {
        try await withRetryingManager { server, engine, monitor, manager in
            let done = AsyncStream<(HTTPResponse?, CourierError?)>.makeStream()
            let task = manager.dataTask(with: Request(url: server.url("/get"))) { response, _, error in
                done.continuation.yield((response, error))
            }
            task.resume()
            await Self.waitUntilWaiting(task)
            task.suspend()
            // The wait ends and its verdict is kept for resume(); nothing is sent meanwhile.
            let decided = await eventually {
                monitor.send(.reachableViaEthernet)
                return task.delegate.state.withLockedValue { if case .retryDecided = $0.machine.phase { true } else { false } }
            }
            #expect(decided)
            #expect(engine.executions == 1)
            #expect(task.state == .suspended)
            task.resume()
            var iterator = done.stream.makeAsyncIterator()
            let result = await iterator.next()
            #expect(result?.0?.status == .ok)
            #expect(result?.1 == nil)
            #expect(engine.executions == 2)
        }
    }

    // MARK: Not retried

    @Test func aTaskIsRetriedOnlyOnce() async throws {
        try await withRetryingManager(failing: 2) { server, engine, monitor, manager in
            let calls = Recorder<CourierError?>()
            let done = AsyncStream<Void>.makeStream()
            let task = manager.dataTask(with: Request(url: server.url("/get"))) { _, _, error in
                calls.append(error)
                done.continuation.yield()
            }
            let notifications = CompletionCounter(task)
            Self.bringNetworkBack(monitor: monitor)
            task.resume()
            for await _ in done.stream { break }
            #expect(calls.count == 1)
            #expect(calls.all.first??.code == .connectionFailed)
            #expect(engine.executions == 2)
            #expect(await eventually { notifications.value == 1 })
        }
    }

    @Test func withoutThePolicyACallbackTaskFailsAtOnce() async throws {
        try await withTestServer { server in
            let engine = NetworkDownEngine()
            let manager = retryingManager(server, engine: engine, monitor: ScriptedMonitor())
            manager.connectivityRetry = nil
            defer { manager.invalidate(cancelingTasks: true) }
            let error: CourierError? = await withCheckedContinuation { continuation in
                manager.dataTask(with: Request(url: server.url("/get"))) { _, _, error in continuation.resume(returning: error) }.resume()
            }
            #expect(error?.code == .connectionFailed)
            #expect(engine.executions == 1)
            #expect(manager.reachabilityManager.isMonitoring == false)
        }
    }

    @Test func aStreamedBodyThatCannotBeReadTwiceIsNotRetried() async throws {
        try await withRetryingManager(failing: 2) { server, engine, monitor, manager in
            let body = AsyncThrowingStream<ByteBuffer, any Error> { continuation in
                continuation.yield(ByteBuffer(string: "once"))
                continuation.finish()
            }
            let request = Request(method: .post, url: server.url("/post"), body: .stream(body, length: .known(4)))
            await #expect(throws: CourierError.self) { try await manager.stream(request) }
            let error: CourierError? = await withCheckedContinuation { continuation in
                let again = AsyncThrowingStream<ByteBuffer, any Error> { $0.finish() }
                manager.uploadTask(
                    withStreamedRequest: Request(method: .post, url: server.url("/post"), body: .stream(again, length: .known(0))),
                    completionHandler: { _, _, error in continuation.resume(returning: error) }
                ).resume()
            }
            #expect(error?.code == .connectionFailed)
            #expect(engine.executions == 2)
            #expect(manager.reachabilityManager.isMonitoring == false)
        }
    }

    @Test func aRefusedConnectionOnLoopbackIsNotRetriedEvenWhenTheMonitorSaysNotReachable() async throws {
        let monitor = ScriptedMonitor()
        let manager = retryingManager(nil, engine: NIOEngine(), monitor: monitor)
        defer { manager.invalidate(cancelingTasks: true) }
        manager.reachabilityManager.startMonitoring()
        monitor.send(.notReachable)
        let url = URL(string: "http://127.0.0.1:\(closedPort())/get")!
        let error: CourierError? = await withCheckedContinuation { continuation in
            manager.dataTask(with: Request(url: url)) { _, _, error in continuation.resume(returning: error) }.resume()
        }
        #expect(error?.code == .connectionFailed)
        #expect(ConnectionFailureCause(error) == .other)
        await #expect(throws: CourierError.self) { try await manager.download(Request(url: url)) }
    }

    @Test func whatTheSocketSaysDecidesBeforeTheMonitor() {
        let down = CourierError(.connectionFailed, "x", underlyingError: IOError(errnoCode: ENETDOWN, reason: "connect"))
        let refused = CourierError(.connectionFailed, "x", underlyingError: IOError(errnoCode: ECONNREFUSED, reason: "connect"))
        let silent = CourierError(.connectionFailed, "x")
        #expect(ConnectionFailureCause(down).meansNetworkIsDown(status: .reachableViaEthernet))
        #expect(!ConnectionFailureCause(refused).meansNetworkIsDown(status: .notReachable))
        #expect(ConnectionFailureCause(silent).meansNetworkIsDown(status: .notReachable))
        #expect(!ConnectionFailureCause(silent).meansNetworkIsDown(status: .unknown))
    }
}
