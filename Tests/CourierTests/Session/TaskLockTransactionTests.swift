import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import Testing

@testable import Courier

/// How many transactions a request takes on its task's lock (issue 28: one an event), counted by
/// debug builds in the task's state (``TaskState/lockTransactions``). A change that adds one to an
/// event fails here; one that takes one away changes the figures below, and ARCHITECTURE's.
@Suite("The task's lock, once an event")
struct TaskLockTransactionTests {
    static func manager(_ response: StubResponse = StubResponse(headerFields: [.contentType: "text/plain"], body: Data("hello".utf8))) -> SessionManager {
        let engine = StubEngine()
        engine.stub(.any(), response)
        var configuration = SessionConfiguration()
        // The cookie store and the cache (their own locks are not counted) stay on, as by default.
        // The notifications go: an observer anywhere in the process (another suite's, running in
        // parallel) may read the task as it resumes or ends, which takes its lock once more.
        configuration.postsTaskNotifications = false
        return SessionManager(engine: engine, configuration: configuration)
    }

    /// What the state counted, read in one more transaction (taken off).
    static func transactions(of task: SessionTask) -> Int {
        task.delegate.state.withLockedValue { $0.lockTransactions } - 1
    }

    /// An `async` GET answered with its body in one chunk: making the task (1); the resume (3:
    /// the resume with the caller's continuation, the attempt's start, the first hop's plan);
    /// the engine's handle (1); the head (1); the body's chunk (1); the end (1); the caller's take
    /// of its end (1). Before the head's facts and the sink's record of it shared a transaction,
    /// and a success's status was read in the completing one, the head took two and the end two.
    @Test func anAsyncGetTakesNine() async throws {
        let manager = Self.manager()
        let outcome = await manager.run(
            DataTask.self, request: Request(url: URL(string: "http://example.com/a")!), uploadProgress: nil, downloadProgress: nil)
        manager.endDelivery()
        #expect(outcome.error == nil)
        #expect(outcome.data == Data("hello".utf8))
        #expect(Self.transactions(of: outcome.task) == 9)
        await manager.invalidate(cancelingTasks: true)
    }

    /// The same with a completion handler: its settling, on the processing queue, stands for the
    /// caller's take, and is done by the time the handler runs.
    @Test func aCallbackGetTakesNine() async throws {
        let manager = Self.manager()
        manager.completionQueue = TestQueues.completion
        manager.responseSerializer = DataResponseSerializer()
        let made = NIOLockedValueBox<DataTask?>(nil)
        let counted = await withCheckedContinuation { (continuation: CheckedContinuation<(Int, Bool), Never>) in
            let task = manager.dataTask(with: Request(url: URL(string: "http://example.com/b")!)) { _, object, error in
                let task = made.withLockedValue { $0.take() }
                continuation.resume(returning: (task.map(Self.transactions(of:)) ?? -1, error == nil && object != nil))
            }
            made.withLockedValue { $0 = task }
            task.resume()
        }
        #expect(counted.1)
        #expect(counted.0 == 9)
        await manager.invalidate(cancelingTasks: true)
    }

    /// A status of 400 or more goes to the retry check before the end (nothing retries it here):
    /// the end's transaction finds the status a failure and leaves the task to the check, which
    /// reads the manager and the failed attempt (two), and the end completes in a fourth.
    @Test func aFailedStatusTakesThreeMoreForTheRetryCheck() async throws {
        let manager = Self.manager(StubResponse(status: .notFound, body: Data("no".utf8)))
        let outcome = await manager.run(
            DataTask.self, request: Request(url: URL(string: "http://example.com/c")!), uploadProgress: nil, downloadProgress: nil)
        manager.endDelivery()
        #expect(outcome.response?.status == .notFound)
        #expect(Self.transactions(of: outcome.task) == 12)
        await manager.invalidate(cancelingTasks: true)
    }
}
