import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOCore
import Testing

/// Twin of the authentication test of Alamofire's `Tests/DataStreamTests.swift` (the rest of
/// that file is issue 17's).
@Suite("Conformance: Alamofire DataStreamTests (authentication)")
struct AlamofireDataStreamInterceptorConformanceTests {
    /// A stream is authenticated from the start with the session's credential for a protection
    /// space answered before (here by a data task); a 401 it meets first is answered and retried
    /// as a data task's is (`StreamRetryTests`), as its head is held back until then.
    @Test func testThatDataStreamCanAuthenticate() async throws {
        try await withTestServer { server in
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            let space = ProtectionSpace(url: server.baseURL, realm: "Fake Realm", authenticationMethod: .httpBasic)!
            manager.credentials.set(HTTPCredential(user: "userstream", password: "password"), for: space)
            let url = server.url("/basic-auth/userstream/password")
            // The first request into the space meets the challenge and answers it.
            let first = try await manager.data(for: Request(url: url))
            #expect(first.response.status == .ok)
            let stream = try await manager.stream(Request(url: url))
            var received = 0
            for try await chunk in stream.body { received += chunk.readableBytes }
            #expect(stream.response.status == .ok)
            #expect(received > 0)
        }
    }
}

/// Twins of the retry and lifetime-event tests of Alamofire's `Tests/DataStreamTests.swift`.
extension AlamofireDataStreamInterceptorConformanceTests {
    /// Differs: the first attempt's connection is refused (Alamofire's URL is invalid); the
    /// adapter sends the retry to `/bytes/1000`.
    @Test func testThatDataStreamsCanBeRetried() async throws {
        try await withTestServer { server in
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            let target = server.url("/bytes/1000")
            manager.interceptor = Interceptor(
                adapters: [Adapter { request, context in
                    guard context.retryCount > 0 else { return request }
                    var request = request
                    request.url = target
                    return request
                }],
                retriers: [Retrier { attempt in attempt.retryCount == 0 ? .retry() : .doNotRetry }])
            let stream = try await manager.stream(Request(url: URL(string: "http://127.0.0.1:\(closedPort())/nothing")!))
            var received = 0
            for try await chunk in stream.body { received += chunk.readableBytes }
            #expect(stream.response.status == .ok)
            #expect(received == 1000)
        }
    }

    /// Differs: Courier's events (see `AlamofireUploadTests+Interceptors.swift`); a stream has no
    /// serializer, so no serialized event.
    @Test func testThatDataStreamRequestHasAppropriateLifetimeEvents() async throws {
        try await withTestServer { server in
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            let monitor = RecordingEventMonitor()
            manager.eventMonitors = [monitor]
            let stream = try await manager.stream(Request(url: server.url("/bytes/1000")))
            for try await _ in stream.body {}
            await monitor.wait(for: "completed")
            let events = monitor.lines().filter { !$0.hasPrefix("received") }
            #expect(events == ["created", "resumed", "response 200", "metrics", "completed ok"])
        }
    }
}
