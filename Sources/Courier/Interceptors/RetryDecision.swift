/// Why a task was retried: a short, fixed word, safe as a metrics label.
///
/// Retriers name their reason in ``RetryDecision/retry(after:reason:)``; a retrier can count
/// earlier retries for its own reason with ``FailedAttempt/retryCount(for:)``, and a
/// ``RetryBudget`` can exempt reasons.
public struct RetryReason: Sendable, Hashable, CustomStringConvertible {
    /// The word.
    public let rawValue: String

    /// A reason of your own.
    public init(_ rawValue: String) { self.rawValue = rawValue }

    /// A transient failure: a status or error a ``RetryPolicy`` retries.
    public static let transientFailure = RetryReason("transient-failure")
    /// The network was down and came back (``SessionManager/connectivityRetry``).
    public static let connectivity = RetryReason("connectivity")
    /// An ``AuthenticationInterceptor`` refreshed its credential, or saw that it had changed.
    public static let authentication = RetryReason("authentication")
    /// A `WWW-Authenticate` challenge (Basic or Digest) was answered with a credential.
    public static let challenge = RetryReason("challenge")
    /// A server refused a compressed body (``RequestCompressor``).
    public static let compressionRefused = RetryReason("compression-refused")
    /// A retrier that named no reason.
    public static let custom = RetryReason("custom")

    public var description: String { self.rawValue }
}

/// What a ``RequestRetrier`` decided about a failed attempt.
public struct RetryDecision: Sendable, CustomStringConvertible {
    enum Kind: Sendable {
        case retry(delay: Duration, reason: RetryReason)
        case doNotRetry
        case fail(CourierError)
    }

    let kind: Kind

    /// The longest delay a retry waits: about 31 years. A longer one (a server's
    /// `Retry-After: 99999999999999999999` taken without a cap is `.seconds(Int.max)`) is past what
    /// a clock's deadline holds.
    static let longestDelay = Duration.seconds(1_000_000_000)

    /// Send the request again, after `delay` (a negative one is zero, one over about 31 years is
    /// 31 years). The task keeps its identity; adapters run again.
    public static func retry(after delay: Duration = .zero, reason: RetryReason = .custom) -> RetryDecision {
        RetryDecision(kind: .retry(delay: min(max(delay, .zero), Self.longestDelay), reason: reason))
    }

    /// Not this retrier's business: the next retrier decides, and when none retries the task ends
    /// with the attempt's outcome.
    public static let doNotRetry = RetryDecision(kind: .doNotRetry)

    /// Do not retry, and end the task with `error` instead of the attempt's outcome. Later
    /// retriers are not asked.
    public static func doNotRetry(failingWith error: CourierError) -> RetryDecision {
        RetryDecision(kind: .fail(error))
    }

    /// Whether the request is to be sent again.
    public var isRetry: Bool {
        if case .retry = self.kind { return true }
        return false
    }

    /// How long to wait before sending it again, for a retry.
    public var delay: Duration? {
        if case .retry(let delay, _) = self.kind { return delay }
        return nil
    }

    /// Why, for a retry.
    public var reason: RetryReason? {
        if case .retry(_, let reason) = self.kind { return reason }
        return nil
    }

    /// The error to end the task with, for ``doNotRetry(failingWith:)``.
    public var error: CourierError? {
        if case .fail(let error) = self.kind { return error }
        return nil
    }

    public var description: String {
        switch self.kind {
        case .retry(let delay, let reason): "retry after \(delay) (\(reason))"
        case .doNotRetry: "do not retry"
        case .fail(let error): "do not retry, fail with \(error.code)"
        }
    }
}
