import Foundation
import HTTPTypes
import Testing

@testable import Courier

@Suite("Interceptors: RetryPolicy, Retry-After, exponential backoff with full jitter")
struct RetryPolicyTests {
    static let url = URL(string: "http://api.courier.test/items")!

    static func attempt(
        _ method: HTTPRequest.Method = .get, status: HTTPResponse.Status? = nil, error: CourierError.Code? = nil,
        retryAfter: String? = nil, previous: [RetryReason] = []
    ) -> FailedAttempt {
        var response = status.map { HTTPResponse(status: $0) }
        if let retryAfter { response?.headerFields[.retryAfter] = retryAfter }
        return FailedAttempt(
            request: Request(method: method, url: Self.url), response: response, error: error.map { CourierError($0, "failed") },
            previousRetries: previous)
    }

    static func policy(random: Double = 0.5) -> (RetryPolicy, ManualRetryClock) {
        var policy = RetryPolicy()
        let clock = ManualRetryClock()
        policy.clock = clock
        policy.random = { random }
        return (policy, clock)
    }

    @Test("Retried: the default statuses and error codes, for idempotent methods")
    func retriedByDefault() async throws {
        let (policy, _) = Self.policy()
        for status in [408, 500, 502, 503, 504] {
            let decision = try await policy.retry(Self.attempt(status: HTTPResponse.Status(code: status)))
            #expect(decision.isRetry, "status \(status)")
            #expect(decision.reason == .transientFailure)
        }
        for code in [CourierError.Code.timedOut, .connectionClosed, .connectionFailed] {
            #expect(try await policy.retry(Self.attempt(error: code)).isRetry, "\(code)")
        }
        for method in [HTTPRequest.Method.get, .head, .put, .delete, .options, .trace] {
            #expect(try await policy.retry(Self.attempt(method, status: .serviceUnavailable)).isRetry, "\(method)")
        }
    }

    @Test("Not retried: POST and PATCH, other statuses, other errors, past the limit")
    func notRetried() async throws {
        let (policy, _) = Self.policy()
        #expect(try await !policy.retry(Self.attempt(.post, status: .serviceUnavailable)).isRetry)
        #expect(try await !policy.retry(Self.attempt(.patch, error: .timedOut)).isRetry)
        for status in [400, 401, 403, 404, 429, 501] {
            #expect(try await !policy.retry(Self.attempt(status: HTTPResponse.Status(code: status))).isRetry, "status \(status)")
        }
        for code in [CourierError.Code.tlsFailure, .serverTrustEvaluationFailed, .invalidResponse, .cancelled, .tooManyRedirects] {
            #expect(try await !policy.retry(Self.attempt(error: code)).isRetry, "\(code)")
        }
        let spent = Self.attempt(status: .badGateway, previous: [.transientFailure, .authentication, .transientFailure])
        #expect(try await !policy.retry(spent).isRetry)
        // Retries for other reasons do not count against the limit.
        #expect(try await policy.retry(Self.attempt(status: .badGateway, previous: [.authentication, .challenge, .transientFailure])).isRetry)
    }

    @Test("Backoff: full jitter below min(cap, initial × multiplier^n)")
    func backoff() {
        var policy = RetryPolicy()
        policy.initialBackoff = .milliseconds(100)
        policy.maximumBackoff = .seconds(1)
        policy.random = { 0.999_999 }
        let bounds = (0..<8).map { policy.backoff(forRetry: $0) }
        #expect(abs(bounds[0].timeInterval - 0.1) < 0.001)
        #expect(abs(bounds[1].timeInterval - 0.2) < 0.001)
        #expect(abs(bounds[3].timeInterval - 0.8) < 0.001)
        #expect(bounds[4...].allSatisfy { abs($0.timeInterval - 1) < 0.001 })
        policy.random = { 0 }
        #expect(policy.backoff(forRetry: 5) == .zero)
        policy.random = { 0.25 }
        #expect(abs(policy.backoff(forRetry: 2).timeInterval - 0.1) < 0.001)
        // Huge retry numbers neither overflow nor exceed the cap.
        policy.random = { 1 }
        #expect(policy.backoff(forRetry: 10_000) == .seconds(1))
    }

    @Test("Retry-After in seconds and as an HTTP date is the delay; beyond the cap, no retry")
    func retryAfter() async throws {
        let (policy, clock) = Self.policy()
        let seconds = try await policy.retry(Self.attempt(status: .serviceUnavailable, retryAfter: "7"))
        #expect(seconds.delay == .seconds(7))
        let inTwenty = HTTPDate.format(clock.date.addingTimeInterval(20))
        let dated = try await policy.retry(Self.attempt(status: .serviceUnavailable, retryAfter: inTwenty))
        #expect(dated.delay == .seconds(20))
        let past = HTTPDate.format(clock.date.addingTimeInterval(-20))
        #expect(try await policy.retry(Self.attempt(status: .serviceUnavailable, retryAfter: past)).delay == .zero)
        #expect(try await !policy.retry(Self.attempt(status: .serviceUnavailable, retryAfter: "61")).isRetry)
        #expect(try await !policy.retry(Self.attempt(status: .serviceUnavailable, retryAfter: "99999999999999999999999")).isRetry)
        // Not understood: the backoff applies.
        let garbage = try await policy.retry(Self.attempt(status: .serviceUnavailable, retryAfter: "soon"))
        #expect(garbage.delay == .milliseconds(250))
    }

    @Test("Retry-After parsing: the three date forms of RFC 9110 and delta-seconds")
    func parsing() throws {
        let expected = Date(timeIntervalSince1970: 784_111_777)  // Sun, 06 Nov 1994 08:49:37 GMT
        #expect(RetryAfter("Sun, 06 Nov 1994 08:49:37 GMT") == .date(expected))
        #expect(RetryAfter("Sunday, 06-Nov-94 08:49:37 GMT") == .date(expected))
        #expect(RetryAfter("Sun Nov  6 08:49:37 1994") == .date(expected))
        #expect(RetryAfter(" 120 ") == .seconds(120))
        for bad in ["", "-1", "1.5", "Sun, 32 Nov 1994 08:49:37 GMT", "Sun, 06 Foo 1994 08:49:37 GMT", "tomorrow"] {
            #expect(RetryAfter(bad) == nil, "\(bad)")
        }
    }
}
