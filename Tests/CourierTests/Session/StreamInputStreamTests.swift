@testable import Courier
import CourierTesting
import Dispatch
import Foundation
import Synchronization
import Testing

/// `DataStreamResponse.inputStream(bufferSize:)`: the body as a blocking Foundation `InputStream`,
/// read here on a dispatch queue, as its documentation asks.
@Suite("A stream's body as an InputStream")
struct StreamInputStreamTests {
    /// Reads `input` to its end (or failure) in reads of `size` bytes, on a dispatch queue; the
    /// last `read` result (0 at the end, -1 after a failure), and the bytes.
    static func readAll(_ input: InputStream, size: Int = 4096, stopAfter limit: Int = .max) async -> (bytes: Data, last: Int) {
        let box = QueueHandOff(input)
        return await withCheckedContinuation { done in
            DispatchQueue.global().async {
                let input = box.value
                input.open()
                var bytes = Data()
                var buffer = [UInt8](repeating: 0, count: size)
                var last = 0
                repeat {
                    last = input.read(&buffer, maxLength: size)
                    if last > 0 { bytes.append(contentsOf: buffer[..<last]) }
                } while last > 0 && bytes.count < limit
                done.resume(returning: (bytes, last))
            }
        }
    }

    /// Reads `input` to its end on the calling thread, blocking it; the bytes.
    static func readAllBlocking(_ input: InputStream) -> Data {
        input.open()
        var bytes = Data()
        var buffer = [UInt8](repeating: 0, count: 1000)
        while true {
            let count = input.read(&buffer, maxLength: buffer.count)
            if count <= 0 { return bytes }
            bytes.append(contentsOf: buffer[..<count])
        }
    }

    /// Readers that block every thread of Swift's cooperative pool (a read inside an `async`
    /// function, as `XMLParser(stream:).parse()` in a task would be) still get their whole bodies:
    /// an input stream is filled on a thread of its own, not by a task that would wait for one of
    /// the threads the readers hold. (Filled by a task on the pool, these readers never end, and
    /// neither would the test run: a watchdog on a thread of its own closes the streams after a
    /// minute, which ends the reads short and fails the test.)
    @Test func readersThatBlockEverySwiftThreadStillGetTheirBytes() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let count = ProcessInfo.processInfo.activeProcessorCount + 1
                let url = server.url("/bytes/262144?seed=9")
                let expected = try await manager.data(for: Request(url: url, options: RequestOptions(cachePolicy: .reloadIgnoringLocalCacheData))).value
                var inputs: [QueueHandOff<InputStream>] = []
                for _ in 0..<count {
                    let stream = try await manager.stream(Request(url: url, options: RequestOptions(cachePolicy: .reloadIgnoringLocalCacheData)))
                    // A small buffer: the body is read in many turns, each after a reader made room.
                    inputs.append(QueueHandOff(stream.inputStream(bufferSize: 1024)))
                }
                let all = inputs
                let watchdog = Watchdog(after: 60) { for input in all { input.value.close() } }
                defer { watchdog.cancel() }
                // Each reader blocks the pool's thread it runs on, as long as its body lasts.
                let readers = inputs.map { input in Task.detached { Self.readAllBlocking(input.value) } }
                for reader in readers {
                    #expect(await reader.value == expected)
                }
                // The filling threads end with their bodies.
                #expect(await eventually { OwnThreadExecutor.runningThreads.load(ordering: .relaxed) == 0 })
            }
        }
    }

    @Test func aLargeBodyReadInSmallPiecesIsWholeThroughASmallBuffer() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let url = server.url("/bytes/1048576?seed=4")
                let expected = try await manager.data(for: Request(url: url, options: RequestOptions(cachePolicy: .reloadIgnoringLocalCacheData))).value
                let stream = try await manager.stream(Request(url: url, options: RequestOptions(cachePolicy: .reloadIgnoringLocalCacheData)))
                let input = stream.inputStream(bufferSize: 8192)
                #expect(input.streamStatus == .notOpen)
                let (bytes, last) = await Self.readAll(input, size: 1000)
                #expect(last == 0)
                #expect(bytes == expected)
                #expect(input.streamStatus == .atEnd)
                #expect(input.streamError == nil)
            }
        }
    }

    @Test func aBodyThatBreaksOffEndsWithAnError() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let stream = try await manager.stream(Request(url: server.url("/courier/truncated/1000")))
                let input = stream.inputStream()
                let (bytes, last) = await Self.readAll(input)
                #expect(bytes.count == 1000, "every byte that came before the failure")
                #expect(last == -1)
                #expect(input.streamStatus == .error)
                #expect(input.streamError is CourierError)
            }
        }
    }

    @Test func closingOrLettingGoBeforeTheEndCancelsTheRequest() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let closed = try await manager.stream(Request(url: server.url("/courier/slow-body/1000?interval=0.02")))
                var input: InputStream? = closed.inputStream()
                let (bytes, _) = await Self.readAll(input!, size: 8, stopAfter: 8)
                #expect(bytes.count == 8)
                input!.close()
                #expect(input!.streamStatus == .closed)
                #expect(await eventually { closed.task.state == .completed })
                #expect(closed.task.error?.code == .cancelled)
                input = nil

                // Never read, let go of: the request is cancelled too.
                let dropped = try await manager.stream(Request(url: server.url("/courier/big/33554432")))
                do { _ = dropped.inputStream(bufferSize: 1024) }
                #expect(await eventually { dropped.task.state == .completed })
                #expect(dropped.task.error?.code == .cancelled)
            }
        }
    }
}

/// Carries a value that is not `Sendable` (an `InputStream`) to the one queue that uses it from
/// then on. `@unchecked Sendable`: the sender lets go of it, so it is never used on two threads.
/// Runs `action` on a thread of its own after `seconds`, unless cancelled before: for a test whose
/// failure would block every thread of Swift's pool (where a time limit's own task cannot run).
/// Its thread ends when it fires or is cancelled.
// `@unchecked Sendable`: `cancelled` is read and written with `condition` held.
final class Watchdog: @unchecked Sendable {
    private let condition = NSCondition()
    private var cancelled = false

    init(after seconds: TimeInterval, _ action: @escaping @Sendable () -> Void) {
        let deadline = Date(timeIntervalSinceNow: seconds)
        Thread { [self] in
            self.condition.lock()
            while !self.cancelled, self.condition.wait(until: deadline) {}
            let fires = !self.cancelled
            self.condition.unlock()
            if fires { action() }
        }.start()
    }

    func cancel() {
        self.condition.lock()
        self.cancelled = true
        self.condition.signal()
        self.condition.unlock()
    }
}

struct QueueHandOff<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
