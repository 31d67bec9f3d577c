import Courier
import CourierTesting
import Foundation
import NIOCore
import Testing

@Suite("Streamed response bodies over a real socket")
struct DataStreamTests {
    @Test func theBodyArrivesInChunksInOrder() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let stream = try await manager.stream(Request(url: server.url("/range/50000")))
                #expect(stream.response.status == .ok)
                var body = Data()
                for try await chunk in stream.body { body.append(contentsOf: chunk.readableBytesView) }
                #expect(body == alphabet(50000))
                #expect(await eventually { stream.task.state == .completed && manager.tasks.isEmpty })
                #expect(stream.task.error == nil)
            }
        }
    }

    /// Waits for events, not for time: once the consumer stops reading, the task asks its exchange
    /// to stop (the event waited for) with only a few chunks taken from the socket, and the
    /// exchange delivers no more than the read under way until the consumer reads again.
    @Test func anUnreadBodyStopsTheConnectionReading() async throws {
        try await withTestServer { server in
            let engine = EventRecordingEngine()
            let manager = SessionManager(engine: engine)
            manager.completionQueue = TestQueues.completion
            do {
                let total = 32 << 20
                let stream = try await manager.stream(Request(url: server.url("/courier/big/\(total)")))
                var iterator = stream.body.makeAsyncIterator()
                var received = try await iterator.next()?.readableBytes ?? 0
                #expect(await engine.wait { $0.contains(.suspend) }, "the unread body never stopped the exchange")
                let delivered = stream.task.countOfBytesReceived
                #expect(delivered < 2 << 20, "only a few chunks are taken from the socket while nobody reads (\(delivered) bytes)")
                while let chunk = try await iterator.next() { received += chunk.readableBytes }
                #expect(received == total)
                #expect(engine.mostChunksWhileSuspended <= 1, "chunks delivered to a suspended exchange")
            } catch {
                await manager.invalidate(cancelingTasks: true)
                throw error
            }
            await manager.invalidate(cancelingTasks: true)
        }
    }

    @Test func stoppingTheIterationCancelsTheTask() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let stream = try await manager.stream(Request(url: server.url("/courier/big/\(64 << 20)")))
                for try await _ in stream.body { break }
                #expect(await eventually { stream.task.state == .completed })
                #expect(stream.task.error?.code == .cancelled)
                #expect(await eventually { manager.tasks.isEmpty })
            }
        }
    }

    @Test func aConnectionLostMidBodyIsThrownByTheIteration() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let stream = try await manager.stream(Request(url: server.url("/courier/truncated/1000")))
                var received = 0
                let error = await #expect(throws: CourierError.self) {
                    for try await chunk in stream.body { received += chunk.readableBytes }
                }
                #expect(error?.code == .connectionClosed)
                #expect(received == 1000)
            }
        }
    }

    @Test func aFailureBeforeTheHeadIsThrownByStream() async throws {
        try await withManager(baseURL: nil) { manager in
            let error = await #expect(throws: CourierError.self) {
                try await manager.stream(Request(url: URL(string: "http://127.0.0.1:\(closedPort())/")!))
            }
            #expect(error?.code == .connectionFailed)
            #expect(await eventually { manager.tasks.isEmpty })
        }
    }

    @Test func cancellingTheCallerWhileWaitingForTheHeadCancelsTheTask() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let waiting = Task { try await manager.stream(Request(url: server.url("/delay/10"))) }
                // Cancels once the request is waiting on the server for its head.
                #expect(await eventually(within: 30) { server.requestCount == 1 })
                waiting.cancel()
                let result = await waiting.result
                #expect((try? result.get()) == nil)
                if case .failure(let error as CourierError) = result { #expect(error.code == .cancelled) }
                #expect(await eventually { manager.tasks.isEmpty })
            }
        }
    }
}
