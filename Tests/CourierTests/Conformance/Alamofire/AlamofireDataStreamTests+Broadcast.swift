import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOCore
import Testing

/// Twins of Alamofire's tests that put several handlers on one stream (`Tests/DataStreamTests.swift`):
/// Courier's `DataStreamResponse.broadcast(to:)` gives each handler a reader of its own, which
/// yields every chunk; each reads on a task of its own (there are no queues to choose).
@Suite("Conformance: Alamofire DataStreamTests (several readers)")
struct AlamofireDataStreamBroadcastConformanceTests {
    typealias Base = AlamofireDataStreamConformanceTests
    struct TestResponse: Decodable, Sendable { let url: String; let id: Int }

    /// The bytes of a reader's body, read to its end.
    static func bytes(of reader: DataStreamResponse) async throws -> Data {
        var data = Data()
        for try await chunk in reader.body { data.append(contentsOf: chunk.readableBytesView) }
        return data
    }

    @Test func testThatDataCanBeStreamedManyTimes() async throws {
        try await Base.withManager { manager, server in
            let heads = Base.recordResponses(manager)
            let log = TaskNotificationLog()
            let stream = try await manager.stream(Request(url: server.url("/bytes/100000?seed=4")))
            let readers = stream.broadcast(to: 2)
            async let first = Self.bytes(of: readers[0])
            async let second = Self.bytes(of: readers[1])
            let (a, b) = try await (first, second)
            #expect(a.count == 100_000)
            #expect(a == b)
            #expect(heads.all == [stream.response])
            #expect(readers.allSatisfy { $0.response == stream.response && $0.task === stream.task })
            #expect(await log.wait(for: .taskDidComplete, of: stream.task))
            #expect(stream.task.error == nil)
        }
    }

    @Test func testThatDataCanBeStreamedAndDecodedAtTheSameTime() async throws {
        try await Base.withManager { manager, server in
            let stream = try await manager.stream(Request(url: server.url("/stream/1")))
            let readers = stream.broadcast(to: 2)
            async let raw = Self.bytes(of: readers[0])
            var decoded: [TestResponse] = []
            for try await value in readers[1].decoded(TestResponse.self) { decoded.append(value) }
            #expect(try await !raw.isEmpty)
            #expect(decoded.map(\.id) == [0])
            #expect(stream.response.status == .ok)
        }
    }

    /// Differs: no queues to choose: two decoding readers, each on a task of its own.
    @Test func DataStreamIntegrationTests_testThatDataStreamWorksCorrectlyWithMultipleSerialQueues() async throws {
        try await Self.twoDecodingReaders()
    }

    /// Differs: as `DataStreamIntegrationTests_testThatDataStreamWorksCorrectlyWithMultipleSerialQueues`.
    @Test func DataStreamIntegrationTests_testThatDataStreamWorksCorrectlyWithMultipleConcurrentQueues() async throws {
        try await Self.twoDecodingReaders()
    }

    static func twoDecodingReaders() async throws {
        try await Base.withManager { manager, server in
            let stream = try await manager.stream(Request(url: server.url("/stream/1")))
            let readers = stream.broadcast(to: 2)
            let ids = try await withThrowingTaskGroup(of: [Int].self) { group in
                for reader in readers {
                    group.addTask {
                        var ids: [Int] = []
                        for try await value in reader.decoded(TestResponse.self) { ids.append(value.id) }
                        return ids
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(ids == [[0], [0]])
        }
    }
}
