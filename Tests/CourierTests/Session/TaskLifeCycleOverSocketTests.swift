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
                #expect(await done.wait { $0.count == 1 })
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
}
