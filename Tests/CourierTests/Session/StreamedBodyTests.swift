import Courier
import CourierTesting
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing

@Suite("Streamed request bodies over a real socket")
struct StreamedBodyTests {
    /// The chunks "a", "b", "c" as an async sequence.
    private static func chunks() -> AsyncThrowingStream<ByteBuffer, any Error> {
        AsyncThrowingStream { continuation in
            for part in ["a", "b", "c"] { continuation.yield(ByteBuffer(string: part)) }
            continuation.finish()
        }
    }

    @Test func replayableStreamIsSentAgainAfterA307() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let made = NIOLockedValueBox(0)
                let body = RequestBody.replayableStream(length: .known(3)) {
                    made.withLockedValue { $0 += 1 }
                    return Self.chunks()
                }
                #expect(body.isReplayable)
                #expect(body.knownLength == 3)
                let request = Request(method: .post, url: server.url("/redirect-to?url=/post&status_code=307"), body: body)
                let response = try await manager.data(for: request)
                let echo = try JSONSerialization.jsonObject(with: response.value) as? [String: Any]
                #expect(echo?["data"] as? String == "abc")
                #expect(made.withLockedValue { $0 } == 2, "one fresh stream per send")
            }
        }
    }

    @Test func oneShotStreamIsNotResentAfterA307() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let request = Request(
                    method: .post, url: server.url("/redirect-to?url=/post&status_code=307"),
                    body: .stream(Self.chunks(), length: .unknown))
                let error = await #expect(throws: CourierError.self) { try await manager.data(for: request) }
                #expect(error?.code == .unacceptableStatusCode)
                #expect(error?.response?.status.code == 307, "the redirect is handed back rather than sending an empty body")
            }
        }
    }
}
