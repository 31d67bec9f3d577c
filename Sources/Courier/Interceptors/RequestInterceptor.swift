/// An adapter and a retrier in one (Alamofire's `RequestInterceptor`); both do nothing unless
/// implemented.
///
/// A session has one (``SessionManager/interceptor``) and a request may have one
/// (``Request/interceptor``). They are consulted in this order:
///
/// - **Adapting**, before every attempt, starting from the request the task was made with: the
///   session's adapters, then the request's (each in its own order); then the session's HTTP
///   authentication for a protection space it has answered before; then the trace context is
///   injected. The first adapter that throws fails the task.
/// - **Retrying**, after every failed attempt: the session's `WWW-Authenticate` challenge
///   handling (Basic, Digest); then the connectivity retry (``SessionManager/connectivityRetry``);
///   then the session's retriers; then the request's. The first that does not answer
///   ``RetryDecision/doNotRetry`` decides. A task whose body cannot be sent twice
///   (``RequestBody/isReplayable``) is never retried and no retrier is asked; a session's
///   ``RetryBudget`` may refuse a retry that a retrier asked for.
public protocol RequestInterceptor: RequestAdapter, RequestRetrier {}

extension RequestInterceptor {
    /// Returns `request` unchanged.
    public func adapt(_ request: Request, using context: AdaptationContext) async throws -> Request { request }

    /// Answers ``RetryDecision/doNotRetry``.
    public func retry(_ attempt: FailedAttempt) async throws -> RetryDecision { .doNotRetry }
}

/// Adapters and retriers composed in order (Alamofire's `Interceptor`).
///
/// ```swift
/// manager.interceptor = Interceptor(
///     adapters: [Adapter { request, _ in var request = request; request.setValue("1", forHTTPHeaderField: "X-V"); return request }],
///     retriers: [RetryPolicy()])
/// ```
public struct Interceptor: RequestInterceptor {
    /// The adapters, run in order, each on the previous one's output.
    public var adapters: [any RequestAdapter]
    /// The retriers, asked in order until one does not answer ``RetryDecision/doNotRetry``.
    public var retriers: [any RequestRetrier]

    /// Composes adapters, retriers and interceptors; an interceptor counts as an adapter after
    /// `adapters` and as a retrier after `retriers`.
    public init(
        adapters: [any RequestAdapter] = [],
        retriers: [any RequestRetrier] = [],
        interceptors: [any RequestInterceptor] = []
    ) {
        self.adapters = adapters + interceptors.map { $0 as any RequestAdapter }
        self.retriers = retriers + interceptors.map { $0 as any RequestRetrier }
    }

    /// Runs the adapters in order.
    public func adapt(_ request: Request, using context: AdaptationContext) async throws -> Request {
        var request = request
        for adapter in self.adapters {
            try Task.checkCancellation()
            request = try await adapter.adapt(request, using: context)
        }
        return request
    }

    /// Asks the retriers in order; the first that does not answer ``RetryDecision/doNotRetry`` decides.
    public func retry(_ attempt: FailedAttempt) async throws -> RetryDecision {
        for retrier in self.retriers {
            let decision = try await retrier.retry(attempt)
            if case .doNotRetry = decision.kind { continue }
            return decision
        }
        return .doNotRetry
    }

    /// Whether one of the retriers is asked about a serializer's failure.
    public var retriesSerializationFailures: Bool { self.retriers.contains { $0.retriesSerializationFailures } }

    /// Whether there is nothing to run.
    var isEmpty: Bool { self.adapters.isEmpty && self.retriers.isEmpty }
}
