import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import Testing

/// Twins of Alamofire's `Tests/RetryPolicyTests.swift`. Courier's `RetryPolicy` is Alamofire's with
/// two differences the twins pin: the backoff has full jitter (a random wait below Alamofire's
/// delay; `random` returning 1 gives Alamofire's delay exactly), and a status of 400 or more is not
/// an error in Courier, so a status is judged when the attempt has no error. Its error codes are
/// Courier's (`.timedOut`, `.connectionClosed`, `.connectionFailed`), not URLError's.
@Suite("Conformance: Alamofire RetryPolicyTests")
struct AlamofireRetryPolicyConformanceTests {
    static let url = URL(string: "http://alamofire.courier.test/get")!

    /// A policy whose jitter always takes the whole bound: Alamofire's delays.
    static func policy(retryLimit: Int = 2) -> RetryPolicy {
        var policy = RetryPolicy(retryLimit: retryLimit)
        policy.random = { 1 }
        return policy
    }

    static func attempt(
        _ method: HTTPRequest.Method = .get, status: Int? = nil, error: CourierError.Code? = nil, retries: Int = 0
    ) -> FailedAttempt {
        FailedAttempt(
            request: Request(method: method, url: Self.url),
            response: status.map { HTTPResponse(status: .init(code: $0)) },
            error: error.map { CourierError($0, "a failure") },
            previousRetries: Array(repeating: .transientFailure, count: retries))
    }

    static let connectionLost = CourierError.Code.connectionClosed

    @Test func testThatRetryIsNotPerformedOnCancelledRequests() async throws {
        try await withTestServer { server in
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            let calls = NIOLockedValueBox(0)
            manager.interceptor = Retrier { _ in
                calls.withLockedValue { $0 += 1 }
                return .retry()
            }
            let error: CourierError? = await awaitCallback { finish in
                let task = manager.dataTask(with: Request(url: server.url("/get"))) { _, _, error in finish(error) }
                task.cancel()
                task.resume()
            }
            #expect(error?.code == .cancelled)
            #expect(calls.withLockedValue { $0 } == 0)
        }
    }

    @Test func testThatRetryPolicyRetriesRequestsBelowRetryLimit() async throws {
        let policy = Self.policy()
        var decisions: [RetryDecision] = []
        for retries in 0...2 {
            decisions.append(try await policy.retry(Self.attempt(error: Self.connectionLost, retries: retries)))
        }
        #expect(decisions.map(\.isRetry) == [true, true, false])
        #expect(decisions.map(\.delay) == [.milliseconds(500), .seconds(1), nil])
        #expect(decisions.allSatisfy { $0.error == nil })
    }

    @Test func testThatRetryPolicyRetriesIdempotentRequests() async throws {
        let methods: [HTTPRequest.Method] = [.connect, .delete, .get, .head, .options, .patch, .post, .put, .trace]
        let idempotent: Set<HTTPRequest.Method> = [.delete, .get, .head, .options, .put, .trace]
        for method in methods {
            let decision = try await Self.policy().retry(Self.attempt(method, error: Self.connectionLost))
            #expect(decision.isRetry == idempotent.contains(method), "\(method)")
            #expect(decision.delay == (decision.isRetry ? .milliseconds(500) : nil))
            #expect(decision.error == nil)
        }
    }

    @Test func testThatRetryPolicyRetriesRequestsWithRetryableStatusCodes() async throws {
        let retryable: Set<Int> = [408, 500, 502, 503, 504]
        for status in Array(400...599) {
            let decision = try await Self.policy().retry(Self.attempt(status: status))
            #expect(decision.isRetry == retryable.contains(status), "\(status)")
            #expect(decision.delay == (decision.isRetry ? .milliseconds(500) : nil))
            #expect(decision.error == nil)
        }
    }

    /// Differs: Courier's errors are `CourierError` codes; timeouts, lost and refused connections
    /// and failed name lookups (`.timedOut`, `.connectionClosed`, `.connectionFailed`) are retried, a
    /// TLS failure or a malformed response is not (Alamofire retries URLError's
    /// `secureConnectionFailed` and `badServerResponse`).
    @Test func testThatRetryPolicyRetriesRequestsWithRetryableErrors() async throws {
        let retryable: Set<CourierError.Code> = [.timedOut, .connectionClosed, .connectionFailed]
        let codes: [CourierError.Code] = [
            .timedOut, .connectionClosed, .connectionFailed, .tlsFailure, .invalidResponse, .cancelled, .invalidURL,
            .tooManyRedirects, .responseTooLarge, .sessionInvalidated,
        ]
        for code in codes {
            let decision = try await Self.policy().retry(Self.attempt(error: code))
            #expect(decision.isRetry == retryable.contains(code), "\(code)")
            #expect(decision.delay == (decision.isRetry ? .milliseconds(500) : nil))
            #expect(decision.error == nil)
        }
    }

    /// Differs: there is no error wrapper to look through (Alamofire's `AFError.sessionTaskFailed`);
    /// the same codes, with the error carrying a response, are judged by the code.
    @Test func testThatRetryPolicyRetriesRequestsWithRetryableAFErrors() async throws {
        for code: CourierError.Code in [.timedOut, .connectionClosed, .connectionFailed] {
            let attempt = FailedAttempt(
                request: Request(url: Self.url), response: HTTPResponse(status: .ok),
                error: CourierError(code, "failed mid-body", underlyingError: CourierError(.connectionClosed, "reset")))
            let decision = try await Self.policy().retry(attempt)
            #expect(decision.isRetry)
            #expect(decision.delay == .milliseconds(500))
        }
    }

    @Test func testThatRetryPolicyDoesNotRetryErrorsThatAreNotRetryable() async throws {
        for code: CourierError.Code in [.resourceUnavailable, .invalidResponse, .unacceptableStatusCode, .responseSerializationFailed] {
            let decision = try await Self.policy().retry(Self.attempt(error: code))
            #expect(!decision.isRetry, "\(code)")
            #expect(decision.delay == nil)
            #expect(decision.error == nil)
        }
    }

    @Test func testThatRetryPolicyTimeDelayBacksOffExponentially() async throws {
        let policy = Self.policy(retryLimit: 4)
        var decisions: [RetryDecision] = []
        for retries in 0...4 {
            decisions.append(try await policy.retry(Self.attempt(error: Self.connectionLost, retries: retries)))
        }
        #expect(decisions.map(\.isRetry) == [true, true, true, true, false])
        #expect(decisions.map(\.delay) == [.milliseconds(500), .seconds(1), .seconds(2), .seconds(4), nil])
        // Full jitter: any draw stays below the bound.
        var jittered = RetryPolicy(retryLimit: 4)
        jittered.random = { 0.25 }
        #expect(jittered.backoff(forRetry: 3) == .seconds(1))
    }

    /// Differs: no `ConnectionLostRetryPolicy` type; a `RetryPolicy` whose only retryable error is
    /// `.connectionClosed` is the same policy (limit 2, base 2, scale 0.5 by default).
    @Test func testThatConnectionLostRetryPolicyCanBeInitializedWithDefaultValues() async throws {
        var policy = RetryPolicy()
        policy.retryableErrorCodes = [.connectionClosed]
        #expect(policy.retryLimit == 2)
        #expect(policy.backoffMultiplier == 2)
        #expect(policy.initialBackoff == .milliseconds(500))
        #expect(policy.retryableMethods == RetryPolicy.idempotentMethods)
        policy.random = { 1 }
        #expect(try await policy.retry(Self.attempt(error: .connectionClosed)).isRetry)
        #expect(try await !policy.retry(Self.attempt(error: .timedOut)).isRetry)
    }

    /// Differs: as for the defaults, a `RetryPolicy` limited to `.connectionClosed`, with its own values.
    @Test func testThatConnectionLostRetryPolicyCanBeInitializedWithCustomValues() async throws {
        var policy = RetryPolicy(retryLimit: 3)
        policy.backoffMultiplier = 4
        policy.initialBackoff = .milliseconds(250)
        policy.retryableMethods = [.delete, .get]
        policy.retryableErrorCodes = [.connectionClosed]
        policy.random = { 1 }
        #expect(policy.retryLimit == 3)
        #expect(policy.backoffMultiplier == 4)
        #expect(policy.initialBackoff == .milliseconds(250))
        #expect(policy.retryableMethods == [.delete, .get])
        #expect(try await policy.retry(Self.attempt(error: .connectionClosed, retries: 1)).delay == .seconds(1))
        #expect(try await !policy.retry(Self.attempt(.put, error: .connectionClosed)).isRetry)
    }
}
