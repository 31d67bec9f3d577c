import Courier
import CourierTesting
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing

@Suite("Transport: redirects")
struct TransportRedirectTests {
    /// The chunks "a", "b", "c" as an async sequence.
    private static func chunks() -> AsyncThrowingStream<ByteBuffer, any Error> {
        AsyncThrowingStream { continuation in
            for part in ["a", "b", "c"] { continuation.yield(ByteBuffer(string: part)) }
            continuation.finish()
        }
    }

    @Test(arguments: Transport.allCases)
    func redirectsAreFollowedToTheEnd(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            let response = try await manager.get("redirect/3")
            #expect(response.response.status == .ok)
            #expect(response.request.url == server.url("/get"))
            #expect(server.receivedRequests.map(\.path) == ["/redirect/3", "/relative-redirect/2", "/relative-redirect/1", "/get"])
            let absolute = try await manager.get("absolute-redirect/2")
            #expect(absolute.response.status == .ok)
            #expect(absolute.request.url == server.url("/get"))
        }
    }

    /// Not via the HTTP proxy: see `PENDING.md`.
    @Test(arguments: Transport.allCases(except: [.http1ViaHTTPProxy]))
    func aReplayableStreamIsSentAgainAfterA307(_ transport: Transport) async throws {
        try await transport.run { server, manager in
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

    @Test(arguments: Transport.allCases)
    func aOneShotStreamIsNotSentAgainAfterA307(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            let request = Request(
                method: .post, url: server.url("/redirect-to?url=/post&status_code=307"),
                body: .stream(Self.chunks(), length: .unknown))
            let error = await #expect(throws: CourierError.self) { try await manager.data(for: request) }
            #expect(error?.code == .unacceptableStatusCode)
            #expect(error?.response?.status.code == 307, "the redirect is handed back rather than sending an empty body")
            #expect(server.receivedRequests.map(\.path) == ["/redirect-to"])
        }
    }
}
