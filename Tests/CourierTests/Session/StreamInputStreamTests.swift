import Courier
import CourierTesting
import Dispatch
import Foundation
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
struct QueueHandOff<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
