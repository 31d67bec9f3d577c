import Courier
import CourierTesting
import Dispatch
import Foundation
import HTTPTypes
import NIOCore
import Testing

/// `streamTask(with:downloadProgress:events:)`, the callback form of a stream: made suspended,
/// its events handed on in order on the completion queue, exactly one completion, and nothing
/// left running once it is over (or when it is released without being resumed).
@Suite("Streamed tasks with a handler")
struct StreamTaskTests {
    /// A recorder of a task's events that checks each comes on `queue`.
    static func recorder(on queue: DispatchQueue) -> (Recorder<DataStreamEvent>, @Sendable (DataStreamEvent) -> Void) {
        let events = Recorder<DataStreamEvent>()
        return (events, { event in
            dispatchPrecondition(condition: .onQueue(queue))
            events.append(event)
        })
    }

    static func isCompletion(_ event: DataStreamEvent?) -> Bool {
        if case .completion = event { return true }
        return false
    }

    static func completionError(_ events: [DataStreamEvent]) -> CourierError?? {
        guard case .completion(let error) = events.last else { return nil }
        return .some(error)
    }

    @Test func aStreamTaskIsMadeSuspendedAndHandsOnItsEventsInOrderOnTheCompletionQueue() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let queue = DispatchQueue(label: "stream-task-test")
                manager.completionQueue = queue
                let (events, handler) = Self.recorder(on: queue)
                let task = manager.streamTask(with: Request(url: server.url("/stream-bytes/5000?seed=3&chunk_size=1000")), events: handler)
                #expect(task.state == .suspended)
                #expect(server.requestCount == 0, "nothing is sent before resume()")
                task.resume()
                #expect(await events.wait { Self.isCompletion($0.last) })
                let all = events.all
                guard case .response(let head) = all.first else {
                    Issue.record("the head comes first: \(all)")
                    return
                }
                #expect(head.status == .ok)
                let pieces = all.dropFirst().dropLast().compactMap { event -> Data? in
                    if case .data(let piece) = event { return piece }
                    return nil
                }
                #expect(pieces.count == all.count - 2, "only pieces between the head and the end")
                #expect(pieces.reduce(0) { $0 + $1.count } == 5000)
                #expect(Self.completionError(all) == .some(nil))
                #expect(task.state == .completed)
            }
        }
    }

    @Test func aFailureBeforeTheHeadAndACancelBeforeResumeAreTheOnlyEvent() async throws {
        try await withManager(baseURL: nil) { manager in
            let queue = DispatchQueue(label: "stream-task-test")
            manager.completionQueue = queue
            // Nothing listens on port 1.
            let (refused, refusedHandler) = Self.recorder(on: queue)
            manager.streamTask(with: Request(url: URL(string: "http://127.0.0.1:1/")!), events: refusedHandler).resume()
            #expect(await refused.wait { Self.isCompletion($0.last) })
            #expect(refused.count == 1)
            #expect(Self.completionError(refused.all)??.code == .connectionFailed)

            let (cancelled, cancelledHandler) = Self.recorder(on: queue)
            let task = manager.streamTask(with: Request(url: URL(string: "http://127.0.0.1:1/")!), events: cancelledHandler)
            task.cancel()
            #expect(await cancelled.wait { Self.isCompletion($0.last) })
            #expect(cancelled.count == 1)
            #expect(Self.completionError(cancelled.all)??.code == .cancelled)
        }
    }

    @Test func aStreamedBodyIteratedTwiceGivesItsChunksOnceAndDoesNotStopTheProcess() async throws {
        // SwiftNIO's producer allows one iterator and stopped the process at a second: a body
        // read by `strings` and `decoded` both, or a loop run twice over `body`.
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let stream = try await manager.stream(Request(url: server.url("/stream-bytes/3000?seed=1&chunk_size=500")))
                var total = 0
                for try await chunk in stream.body { total += chunk.readableBytes }
                #expect(total == 3000)
                var again = 0
                for try await chunk in stream.body { again += chunk.readableBytes }
                #expect(again == 0, "a second iteration ends at once")
            }
        }
    }

    @Test func cancellingMidBodyEndsWithCancelled() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let queue = DispatchQueue(label: "stream-task-test")
                manager.completionQueue = queue
                let events = Recorder<DataStreamEvent>()
                let slot = Recorder<DataTask>()
                let task = manager.streamTask(with: Request(url: server.url("/courier/slow-body/1000?interval=0.05"))) { event in
                    events.append(event)
                    if case .data = event { slot.all.first?.cancel() }
                }
                slot.append(task)
                task.resume()
                #expect(await events.wait { Self.isCompletion($0.last) })
                #expect(Self.completionError(events.all)??.code == .cancelled)
                #expect(events.all.filter { Self.isCompletion($0) }.count == 1)
            }
        }
    }

    /// A task released without being resumed hands nothing on, and its reader lets go of the
    /// handler (and what it holds).
    @Test func aTaskReleasedWithoutBeingResumedHandsOnNothingAndLetsGo() async throws {
        final class Canary: Sendable {}
        try await withManager(baseURL: nil) { manager in
            let events = Recorder<DataStreamEvent>()
            weak var weakCanary: Canary?
            do {
                let canary = Canary()
                weakCanary = canary
                var task: DataTask? = manager.streamTask(with: Request(url: URL(string: "http://127.0.0.1:1/")!)) { event in
                    _ = canary
                    events.append(event)
                }
                #expect(task?.state == .suspended)
                task = nil
            }
            #expect(await eventually { weakCanary == nil }, "the reader let go of the handler")
            #expect(events.all.isEmpty)
        }
    }
}
