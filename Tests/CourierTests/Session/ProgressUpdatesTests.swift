import Courier
import CourierTesting
import Foundation
import NIOCore
import Testing

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

    @Test func aDownloadEndsAtOne() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let task = manager.dataTask(with: Request(url: server.url("/range/90000")), completionHandler: nil)
                let snapshots = self.collect(task, .download)
                task.resume()
                let seen = await snapshots.value
                // A slow consumer sees only the newest snapshot: how many arrive depends on scheduling.
                #expect(!seen.isEmpty)
                #expect(self.isMonotonic(seen))
                #expect(seen.last == ProgressSnapshot(completedUnitCount: 90000, totalUnitCount: 90000, fractionCompleted: 1, isFinished: true))
                #expect(seen.dropLast().allSatisfy { !$0.isFinished })
            }
        }
    }

    @Test func anUploadOfUnknownLengthEndsAtOne() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let chunks = AsyncThrowingStream<ByteBuffer, any Error> { continuation in
                    for _ in 0..<20 { continuation.yield(ByteBuffer(repeating: 7, count: 10_000)) }
                    continuation.finish()
                }
                let request = Request(method: .post, url: server.url("/post"), body: .stream(chunks, length: .unknown))
                let task = manager.uploadTask(withStreamedRequest: request, completionHandler: nil)
                let snapshots = self.collect(task, .upload)
                task.resume()
                let seen = await snapshots.value
                #expect(self.isMonotonic(seen))
                #expect(seen.last?.isFinished == true)
                #expect(seen.last?.fractionCompleted == 1)
                #expect(seen.last?.completedUnitCount == 200_000)
                #expect(seen.dropLast().allSatisfy { $0.totalUnitCount == -1 && $0.fractionCompleted == 0 }, "no fraction is made up while the total is unknown")
            }
        }
    }

    @Test func aFailedTransferEndsWhereItStopped() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let task = manager.dataTask(with: Request(url: server.url("/courier/truncated/1000")), completionHandler: nil)
                let snapshots = self.collect(task, .download)
                task.resume()
                let seen = await snapshots.value
                #expect(seen.last?.isFinished == true)
                #expect(seen.last?.fractionCompleted == 0.5)
                #expect(task.error?.code == .connectionClosed)
            }
        }
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

    @Test func aRedirectThatResendsTheBodyDoesNotSendProgressBackwards() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let body = RequestBody.replayableStream(length: .known(300_000)) {
                    AsyncThrowingStream<ByteBuffer, any Error> { continuation in
                        for _ in 0..<30 { continuation.yield(ByteBuffer(repeating: 1, count: 10_000)) }
                        continuation.finish()
                    }
                }
                let request = Request(method: .post, url: server.url("/redirect-to?url=/post&status_code=307"), body: body)
                let fractions = Recorder<Double>()
                let error: CourierError? = await awaitCallback { finish in
                    manager.dataTask(with: request, uploadProgress: { fractions.append($0.fractionCompleted) }) { finish($2) }.resume()
                }
                #expect(error == nil)
                let seen = fractions.all
                #expect(zip(seen, seen.dropFirst()).allSatisfy { $0 <= $1 })
                #expect(seen.last == 1.0)
            }
        }
    }
}
