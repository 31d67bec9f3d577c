import CourierTesting
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing

@testable import Courier

@Suite("Progress snapshots for async callers")
struct ProgressUpdatesTests {
    /// Collects every snapshot of `direction` until the sequence finishes.
    private func collect(_ task: SessionTask, _ direction: ProgressSnapshot.Direction) -> Task<[ProgressSnapshot], Never> {
        let updates = task.progressUpdates(for: direction)
        return Task {
            var seen: [ProgressSnapshot] = []
            for await snapshot in updates { seen.append(snapshot) }
            return seen
        }
    }

    private func isMonotonic(_ snapshots: [ProgressSnapshot]) -> Bool {
        zip(snapshots, snapshots.dropFirst()).allSatisfy { $0.fractionCompleted <= $1.fractionCompleted }
    }

    /// A consumer that stops (its sequence dropped after a snapshot, or its task cancelled) leaves
    /// the task at once: consumers of a long task that each read a snapshot and go were kept,
    /// and handed a snapshot at every change, until the task ended. One still reading stays, and
    /// finishes when the task ends.
    @Test func aConsumerThatStopsLeavesTheTask() async throws {
        let manager = SessionManager(engine: RefusingEngine())
        defer { manager.invalidate(cancelingTasks: true) }
        // Never resumed: it runs as long as the test wants.
        let task = manager.dataTask(with: Request(url: URL(string: "http://progress.test/")!), completionHandler: nil)
        let consumers = { task.delegate.state.withLockedValue { $0.progress.observers.count } }
        for direction in [ProgressSnapshot.Direction.download, .upload, .download] {
            var iterator = task.progressUpdates(for: direction).makeAsyncIterator()
            #expect(await iterator.next() != nil)
        }
        #expect(await eventually { consumers() == 0 }, "\(consumers()) consumers left")
        // A consumer the test cancels: a child of a group, cancelled with `cancelAll()`.
        let seen = await withTaskGroup(of: Int.self) { group in
            group.addTask {
                var seen = 0
                for await _ in task.progressUpdates(for: .download) { seen += 1 }
                return seen
            }
            #expect(await eventually { consumers() == 1 })
            group.cancelAll()
            #expect(await eventually { consumers() == 0 }, "the cancelled consumer left")
            return await group.next() ?? 0
        }
        // The first snapshot, or none when the cancel came before the loop's first `next()`.
        #expect(seen <= 1)
        let kept = task.progressUpdates(for: .download)
        #expect(consumers() == 1)
        task.cancel()
        var last: ProgressSnapshot?
        for await snapshot in kept { last = snapshot }
        #expect(last?.isFinished == true)
        #expect(consumers() == 0)
    }

    @Test func askingAfterTheEndGivesTheLastSnapshotAtOnce() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let task = manager.dataTask(with: Request(url: server.url("/range/100")), completionHandler: nil)
                task.resume()
                #expect(await eventually { manager.tasks.isEmpty })
                var seen: [ProgressSnapshot] = []
                for await snapshot in task.progressUpdates(for: .download) { seen.append(snapshot) }
                #expect(seen == [ProgressSnapshot(completedUnitCount: 100, totalUnitCount: 100, fractionCompleted: 1, isFinished: true)])
            }
        }
    }

    /// Issue 17 (a final fraction of 1.033 was once seen): a 307 that arrives while the first
    /// send of the body is still going out. The bytes of that first send that leave after the
    /// redirect was decided belong to the old hop: counted into the new hop's, they took the
    /// progress past 1. Ordered by events: the first send holds its last chunks until the
    /// redirect hook has run.
    @Test func bodyBytesOfTheOldHopAreNotCountedIntoTheRedirectedOne() async throws {
        let server = try await ScriptedHTTPServer.start { _, request, head in
            if head.hasPrefix("POST /start") {
                return .respondBeforeBody("HTTP/1.1 307 Temporary Redirect\r\nLocation: /final\r\nContent-Length: 0\r\n\r\n")
            }
            return .respond("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok")
        }
        do {
            try await self.sendAcrossAnEarlyRedirect(server)
        } catch {
            await server.shutdown()
            throw error
        }
        await server.shutdown()
    }

    private func sendAcrossAnEarlyRedirect(_ server: ScriptedHTTPServer) async throws {
        try await withManager(baseURL: server.baseURL) { manager in
            manager.responseSerializer = HTTPResponseSerializer()
            let redirected = OneShotGate()
            var hooks = manager.hooks
            hooks.taskWillPerformHTTPRedirection = { _, _, _, proposed in
                redirected.open()
                return proposed
            }
            manager.hooks = hooks
            let sends = NIOLockedValueBox(0)
            let chunk = ByteBuffer(repeating: 1, count: 10_000)
            let body = RequestBody.replayableStream(length: .known(30_000)) {
                let (stream, continuation) = AsyncThrowingStream<ByteBuffer, any Error>.makeStream()
                let first = sends.withLockedValue { sends -> Bool in
                    defer { sends += 1 }
                    return sends == 0
                }
                continuation.yield(chunk)
                if first {
                    // The rest of the first send goes out only after the 307 was seen.
                    redirected.whenOpen {
                        continuation.yield(chunk)
                        continuation.yield(chunk)
                        continuation.finish()
                    }
                } else {
                    continuation.yield(chunk)
                    continuation.yield(chunk)
                    continuation.finish()
                }
                return stream
            }
            let fractions = Recorder<Double>()
            let request = Request(method: .post, url: server.baseURL.appendingPathComponent("start"), body: body)
            let task = manager.dataTask(with: request, uploadProgress: { fractions.append($0.fractionCompleted) }, completionHandler: nil)
            let snapshots = self.collect(task, .upload)
            task.resume()
            let seen = await snapshots.value
            #expect(task.error == nil, "\(String(describing: task.error))")
            #expect(redirected.isOpen)
            #expect(seen.allSatisfy { $0.fractionCompleted <= 1 }, "\(seen.map(\.fractionCompleted))")
            #expect(self.isMonotonic(seen))
            #expect(seen.last?.fractionCompleted == 1)
            #expect(task.countOfBytesSent <= task.countOfBytesExpectedToSend, "\(task.countOfBytesSent) of \(task.countOfBytesExpectedToSend)")
            #expect(task.uploadProgress.fractionCompleted <= 1)
            let reported = fractions.all
            #expect(reported.allSatisfy { $0 <= 1 }, "\(reported)")
            #expect(zip(reported, reported.dropFirst()).allSatisfy { $0 <= $1 })
        }
    }
}

/// A task's `Progress` objects control it, as AFNetworking wires them (its task delegate sets the
/// progress's cancellation, pausing and resuming handlers) and as URLSession's `task.progress`
/// does: a progress cancelled in a UI cancels the transfer. They said they were cancelled while
/// the task ran on to success.
@Suite("A task's Progress controls the task")
struct ProgressControlTests {
    @Test func pausingResumingAndCancellingTheProgressDoSoToTheTask() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let (ends, end) = AsyncStream<CourierError?>.makeStream()
                // A body that cannot end while the test looks (500 s; the task is cancelled at
                // the end): with 10 s of it, a loaded CI machine once let it arrive whole while the
                // task was suspended, and the task went from suspended to completed between two
                // looks for `.running`.
                let task = manager.dataTask(with: Request(url: server.url("/courier/slow-body/10000?interval=0.05"))) { _, _, error in
                    end.yield(error)
                }
                let progress = task.downloadProgress
                task.resume()
                // Foundation calls a progress's handlers on a queue of its own, after the call.
                progress.pause()
                #expect(await eventually { task.state == .suspended })
                progress.resume()
                #expect(await eventually { task.state == .running })
                task.uploadProgress.cancel()
                var iterator = ends.makeAsyncIterator()
                #expect(await iterator.next()??.code == .cancelled)
            }
        }
    }
}
