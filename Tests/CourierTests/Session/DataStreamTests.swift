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

    @Test func aFailureBeforeTheHeadIsThrownByStream() async throws {
        try await withManager(baseURL: nil) { manager in
            let error = await #expect(throws: CourierError.self) {
                try await manager.stream(Request(url: URL(string: "http://127.0.0.1:\(closedPort())/")!))
            }
            #expect(error?.code == .connectionFailed)
            #expect(await eventually { manager.tasks.isEmpty })
        }
    }
}
