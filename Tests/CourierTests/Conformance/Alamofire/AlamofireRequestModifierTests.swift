import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import Testing

/// Twins of Alamofire's `Tests/RequestModifierTests.swift`. Courier has no `requestModifier`
/// closure: a per-request adapter (`request.interceptor = Adapter { … }`) is the same thing, and,
/// like Alamofire's modifier, runs again before every retry. The timeout is
/// `RequestOptions.timeoutInterval`.
@Suite("Conformance: Alamofire RequestModifierTests")
struct AlamofireRequestModifierConformanceTests {
    enum Kind { case data, upload, download, stream }

    /// Sends `kind` to `/delay/10` with an adapter that sets a 50 ms timeout (counting its calls),
    /// with a session retry policy of one retry when `retrying`; returns the error and the count.
    /// (Alamofire's server answers after 1 s; 10 s leaves a loaded machine's late timer a wide
    /// margin, and an answer, failing the test, when the timeout is not applied.)
    static func timedOut(_ kind: Kind, retrying: Bool) async throws -> (CourierError?, Int, Int) {
        try await withTestServer { server in
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            let retries = NIOLockedValueBox(0)
            if retrying {
                var policy = RetryPolicy(retryLimit: 1)
                policy.initialBackoff = .zero
                policy.retryableMethods.insert(.post)
                let retrying = policy
                manager.interceptor = Interceptor(retriers: [Retrier { attempt in
                    retries.withLockedValue { $0 += 1 }
                    return try await retrying.retry(attempt)
                }])
            }
            let modified = NIOLockedValueBox(0)
            var request = Request(method: kind == .upload ? .post : .get, url: server.url("/delay/10"))
            request.interceptor = Adapter { request, _ in
                modified.withLockedValue { $0 += 1 }
                var request = request
                request.options.timeoutInterval = 0.05
                return request
            }
            let error: CourierError?
            switch kind {
            case .data:
                error = await awaitCallback { finish in manager.dataTask(with: request) { _, _, error in finish(error) }.resume() }
            case .upload:
                error = await awaitCallback { finish in
                    manager.uploadTask(with: request, fromData: Data("data".utf8)) { _, _, error in finish(error) }.resume()
                }
            case .download:
                error = await awaitCallback { finish in
                    manager.downloadTask(with: request) { _, file, error in
                        if let file { try? FileManager.default.removeItem(at: file) }
                        finish(error)
                    }.resume()
                }
            case .stream:
                do {
                    let stream = try await manager.stream(request)
                    for try await _ in stream.body {}
                    error = nil
                } catch let failure as CourierError {
                    error = failure
                }
            }
            return (error, modified.withLockedValue { $0 }, retries.withLockedValue { $0 })
        }
    }

    @Test func testThatDataRequestsCanHaveCustomTimeoutValueSet() async throws {
        let (error, modified, _) = try await Self.timedOut(.data, retrying: false)
        #expect(error?.code == .timedOut)
        #expect(modified == 1)
    }

    @Test func testThatDataRequestsCallRequestModifiersOnRetry() async throws {
        let (error, modified, retries) = try await Self.timedOut(.data, retrying: true)
        #expect(error?.code == .timedOut)
        #expect(modified == 2)
        #expect(retries == 2)
    }

    @Test func testThatUploadRequestsCanHaveCustomTimeoutValueSet() async throws {
        let (error, modified, _) = try await Self.timedOut(.upload, retrying: false)
        #expect(error?.code == .timedOut)
        #expect(modified == 1)
    }

    @Test func testThatUploadRequestsCallRequestModifiersOnRetry() async throws {
        let (error, modified, retries) = try await Self.timedOut(.upload, retrying: true)
        #expect(error?.code == .timedOut)
        #expect(modified == 2)
        #expect(retries == 2)
    }

    @Test func testThatDownloadRequestsCanHaveCustomTimeoutValueSet() async throws {
        let (error, modified, _) = try await Self.timedOut(.download, retrying: false)
        #expect(error?.code == .timedOut)
        #expect(modified == 1)
    }

    @Test func testThatDownloadRequestsCallRequestModifiersOnRetry() async throws {
        let (error, modified, retries) = try await Self.timedOut(.download, retrying: true)
        #expect(error?.code == .timedOut)
        #expect(modified == 2)
        #expect(retries == 2)
    }

    @Test func testThatDataStreamRequestsCanHaveCustomTimeoutValueSet() async throws {
        let (error, modified, _) = try await Self.timedOut(.stream, retrying: false)
        #expect(error?.code == .timedOut)
        #expect(modified == 1)
    }

    /// Differs: a stream is retried only while no response head has reached its consumer (here
    /// none did: the head never came).
    @Test func testThatDataStreamRequestsCallRequestModifiersOnRetry() async throws {
        let (error, modified, retries) = try await Self.timedOut(.stream, retrying: true)
        #expect(error?.code == .timedOut)
        #expect(modified == 2)
        #expect(retries == 2)
    }
}
