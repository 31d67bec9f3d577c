@testable import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import Testing

/// Twins of Alamofire's `Tests/AuthenticationInterceptorTests.swift`, against TestServer: a
/// route that answers 200 to the token it is told is valid and 401 to anything else. Courier's
/// `Authenticator.refresh` is `async` (no completion handler, no refresh queue); a refresh's
/// error is the task's error as it is when it is a `CourierError`.
@Suite("Conformance: Alamofire AuthenticationInterceptorTests")
struct AlamofireAuthenticationInterceptorConformanceTests {
    struct TestCredential: AuthenticationCredential {
        var accessToken = "a0"
        var requiresRefresh = false
    }

    static let refreshFailure = CourierError(.invalidResponse, "refresh network failure")

    /// Alamofire's TestAuthenticator: counts its calls; refreshes to `a1`, `a2`, … (or to
    /// `refreshed` when given), or fails. `onRefresh` runs first in every refresh.
    final class TestAuthenticator: Authenticator {
        struct Counts: Equatable {
            var apply = 0, refresh = 0, didRequestFail = 0, isRequestAuthenticated = 0
        }

        let counts = NIOLockedValueBox(Counts())
        let fails: Bool
        let refreshed: TestCredential?
        let onRefresh: (@Sendable () async -> Void)?

        init(fails: Bool = false, refreshed: TestCredential? = nil, onRefresh: (@Sendable () async -> Void)? = nil) {
            self.fails = fails
            self.refreshed = refreshed
            self.onRefresh = onRefresh
        }

        var snapshot: Counts { self.counts.withLockedValue { $0 } }

        func apply(_ credential: TestCredential, to request: inout Request) {
            self.counts.withLockedValue { $0.apply += 1 }
            request.headerFields[.authorization] = credential.accessToken
        }

        func refresh(_ credential: TestCredential) async throws -> TestCredential {
            let count = self.counts.withLockedValue { $0.refresh += 1; return $0.refresh }
            await self.onRefresh?()
            try await Task.sleep(for: .milliseconds(10))
            if self.fails { throw AlamofireAuthenticationInterceptorConformanceTests.refreshFailure }
            return self.refreshed ?? TestCredential(accessToken: "a\(count)")
        }

        func didRequest(_ request: Request, with response: HTTPResponse, failDueToAuthenticationError error: CourierError?) -> Bool {
            self.counts.withLockedValue { $0.didRequestFail += 1 }
            return response.status == .unauthorized
        }

        func isRequest(_ request: Request, authenticatedWith credential: TestCredential) -> Bool {
            self.counts.withLockedValue { $0.isRequestAuthenticated += 1 }
            return request.headerFields[.authorization] == credential.accessToken
        }
    }

    /// A server whose `/protected` accepts only `valid` tokens (all when nil), a manager, and
    /// the hits; `body` sends.
    static func withProtectedServer<T: Sendable>(
        valid: Set<String>?, _ body: (SessionManager, TestServer, NIOLockedValueBox<Int>) async throws -> T
    ) async throws -> T {
        try await withTestServer { server in
            let hits = NIOLockedValueBox(0)
            server.route("/protected") { request in
                hits.withLockedValue { $0 += 1 }
                let token = request.headerFields[.authorization] ?? ""
                guard valid?.contains(token) ?? true else { return TestServer.Response(status: .unauthorized) }
                return TestServer.Response(headerFields: [.contentType: "application/json"], body: Data("{}".utf8))
            }
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            manager.responseSerializer = HTTPResponseSerializer()
            return try await body(manager, server, hits)
        }
    }

    /// Sends `count` GETs of `/protected` at once with `interceptor`; their errors.
    static func send(
        _ count: Int = 1, to server: TestServer, on manager: SessionManager, with interceptor: any RequestInterceptor,
        url: URL? = nil
    ) async -> [CourierError?] {
        await withTaskGroup(of: CourierError?.self) { group in
            for _ in 0..<count {
                group.addTask {
                    var request = Request(url: url ?? server.url("/protected"))
                    request.interceptor = interceptor
                    return await awaitCallback { finish in manager.dataTask(with: request) { _, _, error in finish(error) }.resume() }
                }
            }
            var errors: [CourierError?] = []
            for await error in group { errors.append(error) }
            return errors
        }
    }

    @Test func testThatInterceptorCanAdaptURLRequest() async throws {
        try await Self.withProtectedServer(valid: ["a0"]) { manager, server, _ in
            let authenticator = TestAuthenticator()
            let interceptor = AuthenticationInterceptor(authenticator: authenticator, credential: TestCredential())
            let errors = await Self.send(to: server, on: manager, with: interceptor)
            #expect(errors.map { $0 == nil } == [true])
            #expect(authenticator.snapshot == TestAuthenticator.Counts(apply: 1))
        }
    }

    @Test func testThatInterceptorRethrowsRefreshErrorToAllDeferredAdaptOperations() async throws {
        try await Self.withProtectedServer(valid: nil) { manager, server, hits in
            // Alamofire's test takes the three requests to arrive within the refresh's 10 ms, which
            // a loaded machine does not always give (a late one started a refresh of its own): the
            // refresh waits until all three wait for it.
            let made = NIOLockedValueBox<AuthenticationInterceptor<TestAuthenticator>?>(nil)
            let authenticator = TestAuthenticator(fails: true) {
                _ = await eventually { made.withLockedValue { $0 }?.requestsWaitingForRefresh == 3 }
            }
            let interceptor = AuthenticationInterceptor(authenticator: authenticator, credential: TestCredential(requiresRefresh: true))
            made.withLockedValue { $0 = interceptor }
            defer { made.withLockedValue { $0 = nil } }
            let errors = await Self.send(3, to: server, on: manager, with: interceptor)
            #expect(errors.map { $0?.message } == Array(repeating: Self.refreshFailure.message, count: 3))
            #expect(authenticator.snapshot.refresh == 1)
            #expect(authenticator.snapshot.apply == 0)
            #expect(hits.withLockedValue { $0 } == 0)
        }
    }

    @Test func testThatInterceptorQueuesAdaptOperationWhenRefreshing() async throws {
        try await Self.withProtectedServer(valid: ["a1"]) { manager, server, _ in
            let authenticator = TestAuthenticator()
            let interceptor = AuthenticationInterceptor(authenticator: authenticator, credential: TestCredential(requiresRefresh: true))
            let errors = await Self.send(2, to: server, on: manager, with: interceptor)
            #expect(errors.allSatisfy { $0 == nil })
            #expect(authenticator.snapshot.refresh == 1)
            #expect(authenticator.snapshot.apply == 2)
            #expect(interceptor.credential?.accessToken == "a1")
        }
    }

    @Test func testThatInterceptorQueuesMultipleAdaptOperationsWhenRefreshing() async throws {
        try await Self.withProtectedServer(valid: ["a1"]) { manager, server, _ in
            let authenticator = TestAuthenticator()
            let interceptor = AuthenticationInterceptor(authenticator: authenticator, credential: TestCredential(requiresRefresh: true))
            let errors = await Self.send(5, to: server, on: manager, with: interceptor)
            #expect(errors.allSatisfy { $0 == nil })
            #expect(authenticator.snapshot.refresh == 1)
            #expect(authenticator.snapshot.apply == 5)
        }
    }

    @Test func testThatInterceptorThrowsMissingCredentialErrorWhenCredentialIsNil() async throws {
        try await Self.withProtectedServer(valid: nil) { manager, server, hits in
            let authenticator = TestAuthenticator()
            let interceptor = AuthenticationInterceptor<TestAuthenticator>(authenticator: authenticator)
            let errors = await Self.send(to: server, on: manager, with: interceptor)
            #expect(errors.map { $0?.code } == [.missingCredential])
            #expect(authenticator.snapshot == TestAuthenticator.Counts())
            #expect(hits.withLockedValue { $0 } == 0)
        }
    }

    @Test func testThatInterceptorRethrowsRefreshErrorFromAdapt() async throws {
        try await Self.withProtectedServer(valid: nil) { manager, server, _ in
            let authenticator = TestAuthenticator(fails: true)
            let interceptor = AuthenticationInterceptor(authenticator: authenticator, credential: TestCredential(requiresRefresh: true))
            let errors = await Self.send(to: server, on: manager, with: interceptor)
            #expect(errors.map { $0?.message } == [Self.refreshFailure.message])
            #expect(authenticator.snapshot == TestAuthenticator.Counts(refresh: 1))
        }
    }

    @Test func testThatInterceptorDoesNotRetryWithoutResponse() async throws {
        try await Self.withProtectedServer(valid: nil) { manager, server, _ in
            let authenticator = TestAuthenticator()
            let interceptor = AuthenticationInterceptor(authenticator: authenticator, credential: TestCredential())
            let errors = await Self.send(to: server, on: manager, with: interceptor, url: URL(string: "http://127.0.0.1:\(closedPort())/protected")!)
            #expect(errors.map { $0?.code } == [.connectionFailed])
            #expect(authenticator.snapshot == TestAuthenticator.Counts(apply: 1))
        }
    }

    @Test func testThatInterceptorDoesNotRetryWhenRequestDoesNotFailDueToAuthError() async throws {
        try await withTestServer { server in
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            let authenticator = TestAuthenticator()
            let interceptor = AuthenticationInterceptor(authenticator: authenticator, credential: TestCredential())
            let errors = await Self.send(to: server, on: manager, with: interceptor, url: server.url("/status/500"))
            #expect(errors.map { $0?.code } == [.unacceptableStatusCode])
            #expect(authenticator.snapshot == TestAuthenticator.Counts(apply: 1, didRequestFail: 1))
        }
    }

    @Test func testThatInterceptorRetriesRequestThatFailedWithOutdatedCredential() async throws {
        try await Self.withProtectedServer(valid: ["a9"]) { manager, server, hits in
            let authenticator = TestAuthenticator()
            let interceptor = AuthenticationInterceptor(authenticator: authenticator, credential: TestCredential())
            // The credential changes after the request was sent with the old one.
            var hooks = manager.hooks
            hooks.dataTaskDidReceiveResponse = { _, _, _ in
                if interceptor.credential?.accessToken == "a0" { interceptor.credential = TestCredential(accessToken: "a9") }
                return .allow
            }
            manager.hooks = hooks
            let errors = await Self.send(to: server, on: manager, with: interceptor)
            #expect(errors.map { $0 == nil } == [true])
            #expect(authenticator.snapshot == TestAuthenticator.Counts(apply: 2, refresh: 0, didRequestFail: 1, isRequestAuthenticated: 1))
            #expect(hits.withLockedValue { $0 } == 2)
        }
    }

    @Test func testThatInterceptorRetriesRequestAfterRefresh() async throws {
        try await Self.withProtectedServer(valid: ["a1"]) { manager, server, hits in
            let authenticator = TestAuthenticator()
            let interceptor = AuthenticationInterceptor(authenticator: authenticator, credential: TestCredential())
            let errors = await Self.send(to: server, on: manager, with: interceptor)
            #expect(errors.map { $0 == nil } == [true])
            #expect(authenticator.snapshot == TestAuthenticator.Counts(apply: 2, refresh: 1, didRequestFail: 1, isRequestAuthenticated: 1))
            #expect(hits.withLockedValue { $0 } == 2)
        }
    }

    @Test func testThatInterceptorRethrowsRefreshErrorFromRetry() async throws {
        try await Self.withProtectedServer(valid: []) { manager, server, _ in
            let authenticator = TestAuthenticator(fails: true)
            let interceptor = AuthenticationInterceptor(authenticator: authenticator, credential: TestCredential())
            let errors = await Self.send(to: server, on: manager, with: interceptor)
            #expect(errors.map { $0?.message } == [Self.refreshFailure.message])
            #expect(authenticator.snapshot == TestAuthenticator.Counts(apply: 1, refresh: 1, didRequestFail: 1, isRequestAuthenticated: 1))
        }
    }

    @Test func testThatInterceptorRethrowsRefreshErrorToAllPendingRetryRequests() async throws {
        try await Self.withProtectedServer(valid: []) { manager, server, _ in
            let authenticator = TestAuthenticator(fails: true)
            let interceptor = AuthenticationInterceptor(authenticator: authenticator, credential: TestCredential())
            let errors = await Self.send(3, to: server, on: manager, with: interceptor)
            #expect(errors.map { $0?.message } == Array(repeating: Self.refreshFailure.message, count: 3))
            #expect(authenticator.snapshot.refresh == 1)
        }
    }

    @Test func testThatInterceptorAllowsNewRequestsToTriggerRefreshAfterPreviousRefreshFailure() async throws {
        try await Self.withProtectedServer(valid: []) { manager, server, _ in
            let authenticator = TestAuthenticator(fails: true)
            let interceptor = AuthenticationInterceptor(authenticator: authenticator, credential: TestCredential())
            _ = await Self.send(to: server, on: manager, with: interceptor)
            _ = await Self.send(to: server, on: manager, with: interceptor)
            #expect(authenticator.snapshot.refresh == 2)
        }
    }

    /// Differs: ten requests in parallel (Alamofire sends as many); Courier's hundred are in
    /// `SessionAuthenticationTests`.
    @Test func testThatInterceptorTriggersRefreshWithMultipleParallelRequestsReturning401Responses() async throws {
        try await Self.withProtectedServer(valid: ["a1"]) { manager, server, hits in
            let authenticator = TestAuthenticator()
            let interceptor = AuthenticationInterceptor(authenticator: authenticator, credential: TestCredential())
            let errors = await Self.send(10, to: server, on: manager, with: interceptor)
            #expect(errors.allSatisfy { $0 == nil })
            #expect(authenticator.snapshot.refresh == 1)
            #expect(hits.withLockedValue { $0 } == 20)
        }
    }

    @Test func testThatInterceptorIgnoresExcessiveRefreshWhenRefreshWindowIsNil() async throws {
        try await Self.withProtectedServer(valid: ["a6"]) { manager, server, _ in
            let authenticator = TestAuthenticator()
            let interceptor = AuthenticationInterceptor(authenticator: authenticator, credential: TestCredential(), refreshWindow: nil)
            let errors = await Self.send(to: server, on: manager, with: interceptor)
            #expect(errors.map { $0 == nil } == [true])
            #expect(authenticator.snapshot.refresh == 6)
        }
    }

    @Test func testThatInterceptorThrowsExcessiveRefreshErrorWhenExcessiveRefreshOccurs() async throws {
        try await Self.withProtectedServer(valid: []) { manager, server, _ in
            let authenticator = TestAuthenticator()
            let interceptor = AuthenticationInterceptor(
                authenticator: authenticator, credential: TestCredential(),
                refreshWindow: .init(interval: .seconds(30), maximumAttempts: 2))
            let errors = await Self.send(to: server, on: manager, with: interceptor)
            #expect(errors.map { $0?.code } == [.excessiveRefresh])
            #expect(authenticator.snapshot.refresh == 2)
        }
    }

    @Test func testThatInterceptorThrowsExcessiveRefreshErrorImmediatelyWhenMaximumAttemptsIsZero() async throws {
        try await Self.withProtectedServer(valid: []) { manager, server, hits in
            let authenticator = TestAuthenticator()
            let interceptor = AuthenticationInterceptor(
                authenticator: authenticator, credential: TestCredential(),
                refreshWindow: .init(interval: .seconds(30), maximumAttempts: 0))
            let errors = await Self.send(to: server, on: manager, with: interceptor)
            #expect(errors.map { $0?.code } == [.excessiveRefresh])
            #expect(authenticator.snapshot.refresh == 0)
            #expect(hits.withLockedValue { $0 } == 1)
        }
    }

    @Test func testThatInterceptorThrowsMissingCredentialErrorWhenCredentialIsSetToNilAfterBeingValid() async throws {
        try await Self.withProtectedServer(valid: ["a0"]) { manager, server, _ in
            let authenticator = TestAuthenticator()
            let interceptor = AuthenticationInterceptor(authenticator: authenticator, credential: TestCredential())
            let first = await Self.send(to: server, on: manager, with: interceptor)
            interceptor.credential = nil
            let second = await Self.send(to: server, on: manager, with: interceptor)
            #expect(first.map { $0 == nil } == [true])
            #expect(second.map { $0?.code } == [.missingCredential])
        }
    }
}
