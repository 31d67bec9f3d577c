import Foundation
import HTTPTypes
import Logging

/// Decides whether a failed attempt is sent again (Alamofire's `RequestRetrier`, as an `async`
/// function).
///
/// A session asks its retriers about every attempt that failed: the exchange ended with an error,
/// or the server answered with a status of 400 or more; and, for a data or upload task made with a
/// response serializer (the `async` calls, the completion handlers), about a response below 400
/// that the serializer refused (a body it could not decode, an unacceptable content type), as
/// Alamofire does: ``FailedAttempt/error`` is then the serializer's error. A retrier that never
/// retries those says so with ``retriesSerializationFailures``, and its tasks skip the check.
/// The first retrier that does not answer ``RetryDecision/doNotRetry`` decides; see
/// ``RequestInterceptor`` for the order. Throwing is taken as
/// ``RetryDecision/doNotRetry(failingWith:)`` with the error (wrapped in
/// ``CourierError/Code/requestRetryFailed`` unless it is a ``CourierError``).
///
/// A retrier may take its time: waiting for a credential refresh or for the network is part of
/// deciding. The task can still be cancelled meanwhile, which cancels the retrier's work. A
/// retrier that always answers retry retries for ever: count with ``FailedAttempt/retryCount`` or
/// ``FailedAttempt/retryCount(for:)``, as ``RetryPolicy`` does.
public protocol RequestRetrier: Sendable {
    /// Decides about a failed attempt.
    func retry(_ attempt: FailedAttempt) async throws -> RetryDecision

    /// Whether this retrier is asked about a response that the task's serializer refused (true
    /// unless the retrier says otherwise). When no retrier of a task answers true, a successful
    /// response is handed to the serializer once, where the caller waits, and never before: the
    /// check costs a hop off the engine's thread and a copy of the body.
    var retriesSerializationFailures: Bool { get }
}

extension RequestRetrier {
    /// True: a retrier is asked about a serializer's failure unless it says otherwise.
    public var retriesSerializationFailures: Bool { true }
}

/// An attempt that failed, as a ``RequestRetrier`` sees it.
public struct FailedAttempt: Sendable {
    /// The identifier of the task (``SessionTask/taskIdentifier``).
    public var taskIdentifier: Int
    /// The request as it was sent: adapted, and after the redirects that were followed.
    public var request: Request
    /// The request as this attempt began: adapted, before any redirect. A retry sends it again
    /// (the task's request, adapted anew), not ``request``: a `POST` answered `303` and then a
    /// failing `GET` is a `POST` again if retried. The same as ``request`` when no redirect was
    /// followed.
    public var initialRequest: Request
    /// The response head, when the server answered.
    public var response: HTTPResponse?
    /// The response body, when the task gathers it in memory (data and upload tasks).
    public var data: Data?
    /// The error, when the exchange failed; `nil` when the server answered with a status of 400 or more.
    public var error: CourierError?
    /// The reasons of the task's earlier retries, oldest first.
    public var previousRetries: [RetryReason]
    /// The request's logger (a no-op logger when none was set).
    public var logger: Logger
    /// Whether the request's `Authorization` field is the session's own, added for a protection
    /// space it answered before (not the caller's, nor an adapter's).
    var carriesSessionAuthorization = false
    /// When the attempt failed (when this was made): the connectivity retry trusts only a
    /// reachability report that came after it.
    var failedAt = ContinuousClock.now

    /// An attempt; sessions make these, tests of retriers may too.
    public init(
        taskIdentifier: Int = 0,
        request: Request,
        initialRequest: Request? = nil,
        response: HTTPResponse? = nil,
        data: Data? = nil,
        error: CourierError? = nil,
        previousRetries: [RetryReason] = [],
        logger: Logger = .courierNoOp
    ) {
        self.taskIdentifier = taskIdentifier
        self.request = request
        self.initialRequest = initialRequest ?? request
        self.response = response
        self.data = data
        self.error = error
        self.previousRetries = previousRetries
        self.logger = logger
    }

    /// How many times the task was retried before, for any reason.
    public var retryCount: Int { self.previousRetries.count }

    /// How many times the task was retried before for `reason`.
    public func retryCount(for reason: RetryReason) -> Int {
        self.previousRetries.reduce(0) { $0 + ($1 == reason ? 1 : 0) }
    }

    /// The status code, when the server answered.
    public var statusCode: Int? { self.response?.status.code }

    /// Whether a retry would send again a request a server has already acted on: the attempt's
    /// first request has a method that is not idempotent (not one of
    /// ``RetryPolicy/idempotentMethods``) and a redirect changed it (a `POST` answered `303`, or
    /// `301`/`302`, followed as a `GET`: the server did its work). A `307` or `308` keeps the
    /// method: the server that sent it did nothing, and the chain may go again.
    ///
    /// The session's own retriers do not retry such an attempt, whatever failed after the redirect
    /// (a challenge, a refused credential, a connection that could not be made): HTTP
    /// authentication, ``AuthenticationInterceptor``, the connectivity retry, and ``RetryPolicy``
    /// with its default methods. A retrier of yours can ask the same.
    public var retryWouldRepeatAProcessedRequest: Bool {
        self.initialRequest.method != self.request.method && !RetryPolicy.idempotentMethods.contains(self.initialRequest.method)
    }
}

/// A ``RequestRetrier`` made of a closure.
public struct Retrier: RequestInterceptor {
    private let body: @Sendable (FailedAttempt) async throws -> RetryDecision

    /// A retrier that runs `body`.
    public init(_ body: @escaping @Sendable (FailedAttempt) async throws -> RetryDecision) {
        self.body = body
    }

    public func retry(_ attempt: FailedAttempt) async throws -> RetryDecision {
        try await self.body(attempt)
    }
}
