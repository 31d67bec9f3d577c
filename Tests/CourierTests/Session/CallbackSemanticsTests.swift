import Courier
import CourierTesting
import Dispatch
import Foundation
import Testing

/// Which queue each of a task's closures runs on, in which order, how often and with what, as in
/// AFNetworking 3.x's `AFURLSessionManager.m` and `AFHTTPSessionManager.m` (FINDINGS-61.md).
@Suite("Callback semantics (AFNetworking 3.x)")
struct CallbackSemanticsTests {
    /// AFNetworking's session-level `taskDidComplete` block gets the transfer's error
    /// (`URLSession:task:didCompleteWithError:`'s), not the response serializer's: a 418 the
    /// serializer refuses is a failure for the completion handler, and no error for the hook. The
    /// hook runs before the handler; each once.
    @Test func completionHookGetsTheTransfersErrorNotTheSerializers() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let events = Recorder<String>()
                manager.hooks.taskDidComplete = { _, _, error in events.append("hook \(error.map { "\($0.code)" } ?? "nil")") }
                let error: CourierError? = await awaitCallback { finish in
                    let task = manager.dataTask(with: Request(url: server.url("/status/418"))) { _, _, error in
                        events.append("completion")
                        finish(error)
                    }
                    task.resume()
                }
                #expect(error?.code == .unacceptableStatusCode)
                TestQueues.completion.sync {}
                #expect(events.all == ["hook nil", "completion"])

                // The `async` call's hook too.
                await #expect(throws: CourierError.self) { try await manager.get("status/418") }
                #expect(events.all == ["hook nil", "completion", "hook nil"])

                // A transfer's error does reach it.
                manager.hooks.dataTaskDidReceiveResponse = { _, _, _ in .cancel }
                await #expect(throws: CourierError.self) { try await manager.get("get") }
                #expect(events.all.last == "hook cancelled")
            }
        }
    }

    /// AFNetworking hands a failed transfer's completion handler no object (`responseObject` is
    /// nil on the error path, and `AFNetworkingTaskDidCompleteSerializedResponseKey` absent), even
    /// when a response and part of its body arrived before the task was cancelled.
    @Test func aFailedTransferComesWithNoObject() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                // It would make an object of any body, even part of one.
                manager.responseSerializer = HTTPResponseSerializer()
                manager.hooks.dataTaskDidReceiveData = { _, task, _ in task.cancel() }
                let ends = Recorder<(status: Int?, hasObject: Bool, error: CourierError?)>()
                let task = manager.dataTask(with: Request(url: server.url("/courier/slow-body/3?interval=0.1"))) { response, object, error in
                    ends.append((response?.status.code, object != nil, error))
                }
                let log = NotificationLog(names: [.taskDidComplete], object: task)
                task.resume()
                #expect(await ends.wait { $0.count == 1 })
                let end = try #require(ends.all.first)
                #expect(end.error?.code == .cancelled)
                #expect(end.status == 200)
                #expect(!end.hasObject)
                #expect(await eventually { log.names == [.taskDidComplete] })
                let info = try #require(log.userInfo(of: .taskDidComplete))
                #expect(info[TaskDidCompleteKey.serializedResponse] == nil)
                #expect((info[TaskDidCompleteKey.error] as? CourierError)?.code == .cancelled)
            }
        }
    }

    /// Progress closures run off the completion queue (AFNetworking calls them from key-value
    /// observing on the session's delegate queue, not the main queue); the last one reports
    /// 1.0 and comes before the completion handler, and none comes after it, for a download and
    /// for an upload of known size.
    @Test func progressEndsAtOneBeforeTheCompletionAndNeverAfter() async throws {
        let events = Recorder<String>()
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                manager.responseSerializer = HTTPResponseSerializer()
                @Sendable func onCompletionQueue() -> Bool { DispatchQueue.getSpecific(key: TestQueues.key) == "completion" }
                let download = manager.dataTask(
                    with: Request(url: server.url("/courier/big/1000000")),
                    downloadProgress: { events.append("down \($0.fractionCompleted) \(onCompletionQueue())") }
                ) { _, _, _ in events.append("down completion \(onCompletionQueue())") }
                download.resume()
                #expect(await events.wait { $0.contains("down completion true") })

                let request = Request(
                    method: .post, url: server.url("/courier/echo"), headerFields: [.contentType: "application/octet-stream"],
                    body: .data(Data(repeating: 7, count: 300_000)))
                let upload = manager.dataTask(
                    with: request,
                    uploadProgress: { events.append("up \($0.fractionCompleted) \(onCompletionQueue())") }
                ) { _, _, error in events.append("up completion \(onCompletionQueue()) \(error == nil)") }
                upload.resume()
                #expect(await events.wait { $0.contains("up completion true true") })
            }
        }
        // The manager is invalidated and its engine down: nothing more can come.
        let all = events.all
        for direction in ["down", "up"] {
            let mine = all.filter { $0.hasPrefix(direction + " ") }
            #expect(mine.filter { $0.contains("completion") }.count == 1)
            #expect(mine.last?.hasPrefix("\(direction) completion true") == true, "\(mine.suffix(3))")
            #expect(mine.dropLast().last == "\(direction) 1.0 false", "\(mine.suffix(3))")
            #expect(mine.dropLast().allSatisfy { $0.hasSuffix(" false") }, "progress on the completion queue")
        }
    }

    /// A verb whose request cannot be built returns nil and calls `failure(nil, error)` once,
    /// asynchronously on the completion queue (AFNetworking's
    /// `dispatch_async(self.completionQueue ?: dispatch_get_main_queue(), ^{ failure(nil, serializationError); })`),
    /// never `success`.
    @Test func aRequestThatCannotBeBuiltFailsLaterOnTheCompletionQueue() async throws {
        struct Refused: Error {}
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                var serializer = HTTPRequestSerializer()
                serializer.setQueryStringSerialization { _, _ in throw Refused() }
                manager.requestSerializer = serializer
                let calls = Recorder<String>()
                // Called from the (serial) completion queue itself: a failure handed to it
                // asynchronously cannot run before this block ends; one called at once would.
                let (returnedNil, calledBeforeReturning) = TestQueues.completion.sync { () -> (Bool, Bool) in
                    let task = manager.get(
                        "get", parameters: ["key": "value"],
                        success: { _, _ in calls.append("success") },
                        failure: { task, error in
                            let queue = DispatchQueue.getSpecific(key: TestQueues.key) ?? "other"
                            calls.append("failure \(task == nil) \(error.underlyingError is Refused) \(queue)")
                        })
                    return (task == nil, calls.count > 0)
                }
                #expect(returnedNil)
                #expect(!calledBeforeReturning)
                #expect(await calls.wait { $0.count == 1 })
                TestQueues.completion.sync {}
                #expect(calls.all == ["failure true true completion"])
                #expect(server.requestCount == 0)
            }
        }
    }

    /// A verb's task is resumed when it is returned; `HEAD`'s `success` gets the task alone, once,
    /// and `failure` is not called.
    @Test func aVerbsTaskIsResumedAndEndsInOneClosureOnce() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let gate = ReleaseGate(server)
                let calls = Recorder<String>()
                let returned = manager.head(
                    gate.url.absoluteString,
                    success: { _ in calls.append("success \(DispatchQueue.getSpecific(key: TestQueues.key) ?? "other")") },
                    failure: { _, error in calls.append("failure \(error)") })
                let task = try #require(returned)
                #expect(task.state == .running)
                await gate.waitForArrival()
                gate.releaseAll()
                #expect(await calls.wait { $0.count >= 1 })
                TestQueues.completion.sync {}
                #expect(calls.all == ["success completion"])
            }
        }
    }

    /// `.taskDidResume` and `.taskDidSuspend` are posted once per change of state, as
    /// AFNetworking's `af_resume`/`af_suspend` post only when the state was not already running
    /// or suspended: a second `resume()` or `suspend()` posts nothing, nor does suspending a task
    /// never resumed. Courier posts them at once, on the thread that called (AFNetworking hops to
    /// the main queue).
    @Test func resumeAndSuspendPostOncePerChange() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                manager.responseSerializer = HTTPResponseSerializer()
                let gate = ReleaseGate(server)
                let done = Recorder<CourierError?>()
                let task = manager.dataTask(with: Request(url: gate.url)) { _, _, error in done.append(error) }
                let log = NotificationLog(names: [.taskDidResume, .taskDidSuspend], object: task)
                task.suspend()
                #expect(log.names == [])
                task.resume()
                task.resume()
                #expect(log.names == [.taskDidResume])
                await gate.waitForArrival()
                task.suspend()
                task.suspend()
                #expect(log.names == [.taskDidResume, .taskDidSuspend])
                task.resume()
                gate.releaseAll()
                #expect(await done.wait { $0.count == 1 })
                #expect(done.all.first ?? nil == nil)
                task.resume()
                task.suspend()
                #expect(log.names == [.taskDidResume, .taskDidSuspend, .taskDidResume])
            }
        }
    }
}
