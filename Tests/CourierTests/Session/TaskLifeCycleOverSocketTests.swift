@testable import Courier
import CourierTesting
import Dispatch
import Foundation
import Testing

@Suite("Task life cycle over a real socket")
struct TaskLifeCycleOverSocketTests {
    @Test func taskIsMadeSuspendedAndRunsOnResume() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let calls = Recorder<(HTTPResponse?, CourierError?)>()
                let done = Recorder<Void>()
                let task = manager.dataTask(with: Request(url: server.url("/get?x=1"))) { response, object, error in
                    calls.append((response, error))
                    #expect(DispatchQueue.getSpecific(key: TestQueues.key) == "completion")
                    #expect((object.json?["args"] as? [String: any Sendable])?["x"] as? String == "1")
                    done.append(())
                }
                #expect(task.state == .suspended)
                #expect(manager.tasks.map(\.taskIdentifier) == [task.taskIdentifier])
                #expect(manager.dataTasks.count == 1)
                // A request made after it goes out and is answered; the suspended one is not sent.
                _ = try await manager.get("get", parameters: ["probe": 1])
                #expect(server.requestCount == 1, "a suspended task sends nothing")
                #expect(!server.receivedRequests.contains { $0.query == "x=1" })
                server.resetRequestLog()

                task.taskDescription = "first"
                task.resume()
                #expect(await eventually { done.count == 1 })
                #expect(calls.count == 1)
                #expect(calls.all.first?.0?.status == .ok)
                #expect(calls.all.first?.1 == nil)
                #expect(task.state == .completed)
                #expect(task.taskDescription == "first")
                #expect(task.response?.status == .ok)
                #expect(task.countOfBytesReceived > 0)
                #expect(task.currentRequest.url == server.url("/get?x=1"))
                #expect(await eventually { manager.tasks.isEmpty }, "the registry drops finished tasks")
                // Once the engine is down no event can arrive; flush serialization and completion.
                await manager.invalidate(cancelingTasks: false)
                SessionManager.processingQueue.sync(flags: .barrier) {}
                TestQueues.completion.sync {}
                #expect(calls.count == 1, "completion runs exactly once")
            }
        }
    }

    @Test func identifiersAreUniqueAndListingsSortByKind() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let data = manager.dataTask(with: Request(url: server.url("/get")), completionHandler: nil)
                let upload = manager.uploadTask(with: Request(method: .post, url: server.url("/post")), fromData: Data("x".utf8), completionHandler: nil)
                #expect(data.taskIdentifier != upload.taskIdentifier)
                #expect(manager.dataTasks.map(\.taskIdentifier) == [data.taskIdentifier])
                #expect(manager.uploadTasks.map(\.taskIdentifier) == [upload.taskIdentifier])
                #expect(manager.downloadTasks.isEmpty)
                #expect(manager.uploadProgress(for: upload)?.totalUnitCount == 1)
                #expect(manager.downloadProgress(for: data) != nil)
                let other = HTTPSessionManager(engine: RefusingEngine())
                #expect(other.uploadProgress(for: upload) == nil, "a manager only knows its own tasks")
                data.cancel()
                upload.cancel()
                #expect(await eventually { manager.tasks.isEmpty })
            }
        }
    }

    @Test func cancelBeforeResumeCompletesWithoutSending() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let error: CourierError? = await awaitCallback { finish in
                    let task = manager.dataTask(with: Request(url: server.url("/get"))) { _, _, error in finish(error) }
                    task.cancel()
                    task.resume()
                }
                #expect(error?.code == .cancelled)
                #expect(server.requestCount == 0)
            }
        }
    }

    @Test func cancelWhileRunningFailsPromptly() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                // Cancels when the request reaches the server, which answers only 10 s later.
                let arrival = ArrivalAction()
                server.routeCallingOnArrival("/hold", arrival)
                let error: CourierError? = await awaitCallback { finish in
                    let task = manager.dataTask(with: Request(url: server.url("/hold"))) { _, _, error in finish(error) }
                    arrival.set { task.cancel() }
                    task.resume()
                }
                // Without the cancel the task would succeed after 10 s: no clock needed.
                #expect(error?.code == .cancelled)
            }
        }
    }

    /// Waits for events, not for time: the task's suspension reaches the exchange (recorded by
    /// an `EventRecordingEngine`), and between that suspend and the resume no more than the read
    /// under way is delivered.
    @Test func suspendStopsDeliveryAndResumeFinishes() async throws {
        try await withTestServer { server in
            let engine = EventRecordingEngine()
            let manager = HTTPSessionManager(baseURL: server.baseURL, engine: engine)
            manager.completionQueue = TestQueues.completion
            let size = 4 << 20
            let suspendedOnce = Recorder<Void>()
            var hooks = SessionManager.Hooks()
            hooks.dataTaskDidReceiveData = { _, task, _ in
                if suspendedOnce.count == 0 {
                    suspendedOnce.append(())
                    task.suspend()
                }
            }
            manager.hooks = hooks
            manager.responseSerializer = HTTPResponseSerializer()
            let finished = Recorder<CourierError?>()
            let done = NotificationWaiter()
            let task = manager.dataTask(with: Request(url: server.url("/courier/big/\(size)"))) { _, _, error in
                finished.append(error)
                done.deliver(nil)
            }
            task.resume()
            #expect(await engine.wait { $0.contains(.suspend) }, "the suspension never reached the exchange")
            #expect(task.state == .suspended)
            #expect(task.countOfBytesReceived < Int64(size))
            // The window is an event too: another manager fetches the same body whole from the
            // same server meanwhile. A suspended exchange that kept reading would get most of its
            // own body in that time.
            let other = try await CourierTests.withManager(baseURL: server.baseURL) { other in
                try await other.response(method: .get, urlString: "courier/big/\(size)", serializer: DataResponseSerializer())
            }
            #expect(other.value.count == size)
            #expect(engine.mostChunksWhileSuspended <= 1, "chunks delivered to a suspended exchange")
            #expect(finished.count == 0)
            task.resume()
            // The rest of the body, in a debug build on a machine that may be busy with the
            // whole suite: generous, as the point is that it finishes at all.
            _ = await done.wait(seconds: 60)
            #expect(finished.all.count == 1 && finished.all.first! == nil, "completed once, without an error")
            #expect(task.countOfBytesReceived == Int64(size))
            #expect(engine.mostChunksWhileSuspended <= 1, "chunks delivered to a suspended exchange")
            #expect(!engine.completedWhileSuspended)
            await manager.invalidate(cancelingTasks: true)
        }
    }
}
