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
    /// Differs: a stream hands its response head to its consumer as soon as it arrives, so a 401
    /// is not answered and retried as a data task's is: the stream is authenticated from the
    /// start, with the session's credential for a protection space answered before (here by a
    /// data task), or with an `Authorization` field of the caller's.
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
