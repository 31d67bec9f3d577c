import Courier
import CourierTesting
import Foundation
import NIOConcurrencyHelpers
import Testing

/// Twin of the retry test of Alamofire's `Tests/ConcurrencyTests.swift` (the rest of that file
/// is issue 17's).
@Suite("Conformance: Alamofire ConcurrencyTests (retry)")
struct AlamofireConcurrencyInterceptorConformanceTests {
    /// Differs: the retry policy's backoff is slept on the session's `retryClock` (a test clock here).
    @Test func testThat500ResponseCanBeRetried() async throws {
        try await withTestServer { server in
            let hits = failingRoute(server, "/five-hundred-once", failures: 1, status: .internalServerError)
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            manager.retryClock = ManualRetryClock()
            var request = Request(url: server.url("/five-hundred-once"))
            request.interceptor = RetryPolicy()
            let response = try await manager.data(for: request)
            #expect(!response.value.isEmpty)
            #expect(hits.withLockedValue { $0 } == 2)
        }
    }
}
