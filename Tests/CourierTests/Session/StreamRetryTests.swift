import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import Testing

@testable import Courier

/// A streamed task holds back a failed status that may be retried, with its body, until the
/// retriers have decided: the consumer gets the last attempt's response, as a data task's caller
/// does; a large error body is handed over at once and ends the retrying.
@Suite("Session: streamed tasks retry failed statuses before the consumer has the head")
struct StreamRetryTests {
    /// A manager whose retry policy retries at once, `limit` times.
    static func manager(retryLimit limit: Int = 2) -> SessionManager {
        let manager = SessionManager()
        var policy = RetryPolicy(retryLimit: limit)
        policy.initialBackoff = .zero
        manager.interceptor = policy
        return manager
    }

    static func text(_ stream: DataStreamResponse) async throws -> String {
        var bytes = ByteBuffer()
        for try await var chunk in stream.body { bytes.writeBuffer(&chunk) }
        return String(buffer: bytes)
    }

    @Test("A 503 then a 200: the consumer gets only the 200 and its body")
    func retriedThenSucceeds() async throws {
        try await withTestServer { server in
            let hits = NIOLockedValueBox(0)
            server.route("/flaky") { _ in
                hits.withLockedValue { $0 += 1; return $0 } == 1 ? .text("busy", status: .serviceUnavailable) : .text("fine")
            }
            let manager = Self.manager()
            defer { manager.invalidate(cancelingTasks: true) }
            let stream = try await manager.stream(Request(url: server.url("/flaky")))
            #expect(stream.response.status == .ok)
            #expect(try await Self.text(stream) == "fine")
            #expect(hits.withLockedValue { $0 } == 2)
        }
    }

    @Test("Retries used up: the last 503 and its held body are the consumer's")
    func retriesUsedUp() async throws {
        try await withTestServer { server in
            let hits = NIOLockedValueBox(0)
            server.route("/down") { _ in
                let hit = hits.withLockedValue { $0 += 1; return $0 }
                return .text("busy \(hit)", status: .serviceUnavailable)
            }
            let manager = Self.manager(retryLimit: 2)
            defer { manager.invalidate(cancelingTasks: true) }
            let stream = try await manager.stream(Request(url: server.url("/down")))
            #expect(stream.response.status == .serviceUnavailable)
            #expect(try await Self.text(stream) == "busy 3")
            #expect(hits.withLockedValue { $0 } == 3)
        }
    }

    @Test("An error body larger than what is held goes to the consumer whole, and is not retried")
    func largeErrorBodyIsNotHeld() async throws {
        try await withTestServer { server in
            let hits = NIOLockedValueBox(0)
            let size = 4 * ResponseStreamSink.heldBodyLimit
            server.route("/big-error") { _ in
                hits.withLockedValue { $0 += 1 }
                return TestServer.Response(status: .serviceUnavailable, body: Data(repeating: 0x61, count: size))
            }
            let manager = Self.manager()
            defer { manager.invalidate(cancelingTasks: true) }
            let stream = try await manager.stream(Request(url: server.url("/big-error")))
            #expect(stream.response.status == .serviceUnavailable)
            var received = 0
            for try await chunk in stream.body { received += chunk.readableBytes }
            #expect(received == size)
            #expect(hits.withLockedValue { $0 } == 1)
        }
    }

    @Test("A Basic challenge on a stream is answered with the session's credential, as a data task's is")
    func challengeAnswered() async throws {
        try await withTestServer { server in
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            let space = ProtectionSpace(url: server.baseURL, realm: "Fake Realm", authenticationMethod: .httpBasic)!
            manager.credentials.set(HTTPCredential(user: "ann", password: "secret"), for: space)
            let stream = try await manager.stream(Request(url: server.url("/basic-auth/ann/secret")))
            #expect(stream.response.status == .ok)
            #expect(try await Self.text(stream).contains("\"authenticated\""))
        }
    }

    @Test("A one-shot stream body is never retried: the 503 is the consumer's at once")
    func oneShotBodyNotHeld() async throws {
        try await withTestServer { server in
            let hits = NIOLockedValueBox(0)
            server.route("/flaky-upload") { _ in
                hits.withLockedValue { $0 += 1 }
                return .text("busy", status: .serviceUnavailable)
            }
            let manager = Self.manager()
            defer { manager.invalidate(cancelingTasks: true) }
            let body = AsyncThrowingStream<ByteBuffer, any Error> { continuation in
                continuation.yield(ByteBuffer(string: "once"))
                continuation.finish()
            }
            let stream = try await manager.stream(Request(method: .put, url: server.url("/flaky-upload"), body: .stream(body, length: .known(4))))
            #expect(stream.response.status == .serviceUnavailable)
            #expect(try await Self.text(stream) == "busy")
            #expect(hits.withLockedValue { $0 } == 1)
        }
    }
}
