import Courier
import CourierTesting
import Foundation
import HTTPTypes
import Testing

/// Twins of the stream serializer tests of Alamofire's `Tests/DataStreamTests.swift`
/// (`DataStreamSerializationTests`, and two of `DataStreamTests`). Alamofire hands each value to a
/// closure on a queue; Courier's ``DataStreamResponse/strings``, ``DataStreamResponse/decoded(_:decoder:)``
/// and ``DataStreamResponse/serialized(by:)`` are `AsyncSequence`s read on the caller's task. Its
/// decodable stream serializer takes one value a line (JSON Lines): Alamofire's takes one a chunk,
/// which the network does not keep apart, and its `payloads` route writes one JSON document a
/// chunk; TestServer's `/stream/N` writes one a line.
@Suite("Conformance: Alamofire DataStreamTests (stream serializers)")
struct AlamofireDataStreamSerializerConformanceTests {
    struct TestResponse: Decodable, Sendable { let url: String; let id: Int }

    static func withStream<T>(_ path: String, _ body: (DataStreamResponse) async throws -> T) async throws -> T {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                try await body(try await manager.stream(Request(url: server.url(path))))
            }
        }
    }

    @Test func testThatDataStreamsCanBeAString() async throws {
        try await Self.withStream("/stream/1") { stream in
            var text = ""
            for try await string in stream.strings { text += string }
            #expect(text.hasPrefix("{") && text.hasSuffix("}\n"))
            #expect(stream.response.status == .ok)
        }
    }

    /// Differs: there is no queue to choose: the strings are read on the caller's task.
    @Test func testThatDataStreamsCanBeAStringOnAnArbitraryQueue() async throws {
        try await Self.withStream("/stream/1") { stream in
            // Read on another task than the test's (the source's other queue); awaited at once.
            let text = try await Task.detached { () async throws -> String in
                var text = ""
                for try await string in stream.strings { text += string }
                return text
            }.value
            #expect(!text.isEmpty)
        }
    }

    @Test func testThatDataStreamsCanBeDecoded() async throws {
        try await Self.withStream("/stream/1") { stream in
            var values: [TestResponse] = []
            for try await value in stream.decoded(TestResponse.self) { values.append(value) }
            #expect(values.map(\.id) == [0])
            #expect(stream.response.status == .ok)
        }
    }

    /// Differs: there is no queue to choose: the values are read on the caller's task.
    @Test func testThatDataStreamsCanBeDecodedOnAnArbitraryQueue() async throws {
        try await Self.withStream("/stream/1") { stream in
            // Read on another task than the test's (the source's other queue); awaited at once.
            let values = try await Task.detached { () async throws -> [TestResponse] in
                var values: [TestResponse] = []
                for try await value in stream.decoded(TestResponse.self) { values.append(value) }
                return values
            }.value
            #expect(values.count == 1)
        }
    }

    @Test func testThatDataStreamSerializerCanBeUsedDirectly() async throws {
        try await Self.withStream("/stream/1") { stream in
            var values: [TestResponse] = []
            for try await value in stream.serialized(by: DecodableStreamSerializer<TestResponse>()) { values.append(value) }
            #expect(values.count == 1)
            #expect(stream.response.status == .ok)
        }
    }

    /// Differs: the values are lines of `/stream/5` (Alamofire's `payloads(5)` writes one JSON
    /// document a chunk).
    @Test func testThatDataCanBeStreamedAsMultipleJSONPayloads() async throws {
        try await Self.withStream("/stream/5") { stream in
            var values: [TestResponse] = []
            for try await value in stream.decoded(TestResponse.self) { values.append(value) }
            #expect(values.map(\.id) == [0, 1, 2, 3, 4])
            #expect(stream.response.status == .ok)
        }
    }

    /// Differs: the body is 2 MiB of random bytes, more than a stream keeps unread, so the task
    /// cannot end before the serializer reads (Alamofire's is 50, which a line-based serializer
    /// would refuse only at its end, once the task had completed): the first line that does not
    /// decode ends the iteration with the serializer's error, and the request is cancelled.
    @Test func testThatDataStreamIsAutomaticallyCanceledOnStreamErrorWhenEnabled() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let log = TaskNotificationLog()
                let stream = try await manager.stream(Request(url: server.url("/stream-bytes/2097152?chunk_size=4096&seed=7")))
                await #expect {
                    for try await _ in stream.decoded(TestResponse.self) {}
                } throws: { ($0 as? CourierError)?.code == .responseSerializationFailed }
                #expect(await log.wait(for: .taskDidComplete, of: stream.task))
                #expect(stream.response.status == .ok)
                #expect(stream.task.error?.code == .cancelled)
            }
        }
    }
}
