import Foundation
import HTTPTypes
import Logging

/// Retries transient failures with exponential backoff and full jitter, honouring `Retry-After`
/// (Alamofire's `RetryPolicy`).
///
/// An attempt is retried when all of these hold:
/// - the task was retried fewer than ``retryLimit`` times for this reason;
/// - its method is one of ``retryableMethods`` (the idempotent ones by default: a `POST` that
///   reached the server may have done its work), the method it began with
///   (``FailedAttempt/initialRequest``): a retry sends that again, whatever a redirect made of it;
/// - the server answered with one of ``retryableStatusCodes``, or the exchange failed with one of
///   ``retryableErrorCodes`` (timeouts, lost and refused connections, failed name lookups);
/// - the server did not ask, with `Retry-After`, for a longer wait than ``maximumRetryAfter``.
///
/// The wait before retry *n* (counted from 0) is the server's `Retry-After` when it sent one
/// (seconds or an HTTP date), else a random duration between zero and
/// `min(maximumBackoff, initialBackoff × backoffMultiplier^n)` ("full jitter": clients that
/// failed together do not come back together). The session sleeps through it on the session's
/// ``RetryClock``; cancelling the task ends the wait. The session's ``RetryBudget``, when it has
/// one, caps the share of retries across all its tasks.
///
/// ```swift
/// var policy = RetryPolicy()
/// policy.retryLimit = 3
/// policy.retryableStatusCodes.insert(429)
/// manager.interceptor = Interceptor(retriers: [policy])
/// ```
public struct RetryPolicy: RequestInterceptor {
    /// The idempotent methods of RFC 9110 §9.2.2: `GET`, `HEAD`, `OPTIONS`, `TRACE`, `PUT`, `DELETE`.
    public static let idempotentMethods: Set<HTTPRequest.Method> = [.get, .head, .options, .trace, .put, .delete]
    /// 408, 500, 502, 503, 504.
    public static let defaultRetryableStatusCodes: Set<Int> = [408, 500, 502, 503, 504]
    /// Timeouts, lost connections (``CourierError/Code/connectionClosed``), refused connections and
    /// failed name lookups (``CourierError/Code/connectionFailed``).
    public static let defaultRetryableErrorCodes: Set<CourierError.Code> = [.timedOut, .connectionClosed, .connectionFailed]

    /// How many times a task is retried for this policy's reason at most. 2 by default.
    public var retryLimit: Int = 2
    /// The backoff bound of the first retry. 0.5 s by default.
    public var initialBackoff: Duration = .milliseconds(500)
    /// By how much the bound grows with each retry. 2 by default.
    public var backoffMultiplier: Double = 2
    /// The largest backoff bound. 30 s by default.
    public var maximumBackoff: Duration = .seconds(30)
    /// The methods that may be retried. ``idempotentMethods`` by default.
    public var retryableMethods: Set<HTTPRequest.Method> = Self.idempotentMethods
    /// The statuses that are retried. ``defaultRetryableStatusCodes`` by default.
    public var retryableStatusCodes: Set<Int> = Self.defaultRetryableStatusCodes
    /// The failures that are retried. ``defaultRetryableErrorCodes`` by default.
    public var retryableErrorCodes: Set<CourierError.Code> = Self.defaultRetryableErrorCodes
    /// The longest `Retry-After` that is honoured; a response asking for longer is not retried.
    /// 60 s by default.
    public var maximumRetryAfter: Duration = .seconds(60)
    /// The reason this policy gives its retries. ``RetryReason/transientFailure`` by default.
    public var reason: RetryReason = .transientFailure
    /// Where the current date comes from, for `Retry-After` dates.
    public var clock: any RetryClock = .system
    /// The jitter's source: a uniformly distributed number in `0..<1`. `Double.random(in:)` by default.
    public var random: @Sendable () -> Double = { Double.random(in: 0..<1) }

    /// A policy with the defaults described on each property.
    public init() {}

    /// A policy with a retry limit and the other defaults.
    public init(retryLimit: Int) {
        self.retryLimit = retryLimit
    }

    public func retry(_ attempt: FailedAttempt) async throws -> RetryDecision {
        let retries = attempt.retryCount(for: self.reason)
        // The method that a retry sends again: the attempt's first, whatever its redirects made of it
        // (a `POST` answered `303` is not retried for its `GET` failing).
        guard retries < self.retryLimit, self.retryableMethods.contains(attempt.initialRequest.method) else { return .doNotRetry }
        if let error = attempt.error {
            guard self.retryableErrorCodes.contains(error.code) else { return .doNotRetry }
        } else {
            guard let status = attempt.statusCode, self.retryableStatusCodes.contains(status) else { return .doNotRetry }
        }
        if let value = attempt.response?.headerFields.value(of: .retryAfter), let retryAfter = RetryAfter(value) {
            let delay = retryAfter.delay(from: self.clock.date)
            guard delay <= self.maximumRetryAfter else {
                attempt.logger.debug(
                    "not retried: Retry-After asks for longer than the policy's cap",
                    metadata: ["courier.retry-after": "\(value)", "courier.cap": "\(self.maximumRetryAfter)"])
                return .doNotRetry
            }
            return .retry(after: delay, reason: self.reason)
        }
        return .retry(after: self.backoff(forRetry: retries), reason: self.reason)
    }

    /// Whether ``retryableErrorCodes`` holds a code a response serializer fails with
    /// (``CourierError/Code/responseSerializationFailed``, ``CourierError/Code/unacceptableContentType``,
    /// ``CourierError/Code/unacceptableStatusCode``, ``CourierError/Code/responseValidationFailed``):
    /// false for the default codes, so that a task retried by the policy alone skips the check.
    public var retriesSerializationFailures: Bool {
        !self.retryableErrorCodes.isDisjoint(with: CourierError.Code.serializationCodes)
    }

    /// The wait before retry `retry` (0 for the first) when the server named none: a random
    /// duration between zero and `min(maximumBackoff, initialBackoff × backoffMultiplier^retry)`.
    public func backoff(forRetry retry: Int) -> Duration {
        let growth = pow(max(1, self.backoffMultiplier), Double(max(0, retry)))
        let bound = min(self.maximumBackoff.seconds, self.initialBackoff.seconds * growth)
        let fraction = min(max(self.random(), 0), 1)
        return .seconds(bound * fraction)
    }
}

extension Duration {
    /// The duration in seconds, as a `Double`.
    var seconds: Double {
        let (seconds, attoseconds) = self.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
