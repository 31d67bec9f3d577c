import Logging

/// A task's adapters and retriers in the order of ``RequestInterceptor``, with the session's
/// retry budget: what a session runs before each attempt and after each failed one.
struct InterceptorChain: Sendable {
    /// The adapters, in order.
    var adapters: [any RequestAdapter] = []
    /// The retriers, in order.
    var retriers: [any RequestRetrier] = []
    /// The session's budget, if any.
    var budget: RetryBudget?

    /// Whether there is no adapter to run.
    var adapts: Bool { !self.adapters.isEmpty }
    /// Whether there is a retrier to ask.
    var retries: Bool { !self.retriers.isEmpty }

    /// Runs the adapters in order on `request`.
    /// - Throws: The first adapter's failure: a ``CourierError`` as it is (with the request filled
    ///   in), another error wrapped in ``CourierError/Code/requestAdaptationFailed``; a cancelled
    ///   task's ``CourierError/Code/cancelled``.
    func adapt(_ request: Request, using context: AdaptationContext) async throws(CourierError) -> Request {
        var adapted = request
        for adapter in self.adapters {
            do {
                try Task.checkCancellation()
                adapted = try await adapter.adapt(adapted, using: context)
            } catch let error as CourierError {
                throw error.adding(request: request)
            } catch is CancellationError {
                throw CourierError(.cancelled, "\(request.summary): cancelled", request: request)
            } catch {
                throw CourierError(
                    .requestAdaptationFailed, "\(request.summary): an adapter (\(type(of: adapter))) failed the request", request: request,
                    underlyingError: error)
            }
        }
        return adapted
    }

    /// What the chain decided about a failed attempt.
    enum Verdict: Sendable {
        /// Send again after `delay`.
        case retry(delay: Duration, reason: RetryReason)
        /// End the task with the attempt's outcome, or with `error` when a retrier named one.
        case finish(error: CourierError?)
        /// A retrier asked for a retry that the budget refused: end with the attempt's outcome.
        case refusedByBudget(reason: RetryReason)
    }

    /// Asks the retriers in order; the first that does not answer ``RetryDecision/doNotRetry``
    /// decides, then the budget has its say. A retrier that throws ends the task with its error
    /// (wrapped in ``CourierError/Code/requestRetryFailed`` unless it is a ``CourierError``). In a
    /// cancelled task, no further retrier is asked: the verdict is ``CourierError/Code/cancelled``.
    func decide(_ attempt: FailedAttempt) async -> Verdict {
        for retrier in self.retriers {
            let decision: RetryDecision
            do {
                // A task cancelled while an earlier retrier was deciding (or before the first was
                // asked) is over: the retriers after it do not hear of it, as adapters do not.
                try Task.checkCancellation()
                decision = try await retrier.retry(attempt)
            } catch let error as CourierError {
                return .finish(error: error.adding(request: attempt.request, response: attempt.response, data: attempt.data))
            } catch is CancellationError {
                return .finish(error: CourierError(.cancelled, "\(attempt.request.summary): cancelled", request: attempt.request))
            } catch {
                return .finish(
                    error: CourierError(
                        .requestRetryFailed, "\(attempt.request.summary): a retrier (\(type(of: retrier))) failed", request: attempt.request,
                        response: attempt.response, data: attempt.data, underlyingError: error))
            }
            switch decision.kind {
            case .doNotRetry:
                continue
            case .fail(let error):
                return .finish(error: error.adding(request: attempt.request, response: attempt.response, data: attempt.data))
            case .retry(let delay, let reason):
                if let budget = self.budget, !budget.tryWithdraw(for: reason) {
                    attempt.logger.debug("not retried: the session's retry budget is spent", metadata: ["courier.retry.reason": "\(reason)"])
                    return .refusedByBudget(reason: reason)
                }
                return .retry(delay: delay, reason: reason)
            }
        }
        return .finish(error: nil)
    }
}
