/// Where a task stands between a failed attempt and the next one: retriers deciding, a backoff,
/// a wait for the network. Guarded by the task delegate's lock, with the task's ``TaskLifecycle``.
enum RetryPhase {
    /// What was decided.
    enum Verdict: Sendable {
        /// Send the request again.
        case retry(reason: RetryReason)
        /// End the task: with the attempt's outcome, or with the error a retrier named.
        case finish(CourierError?)
    }

    /// No retry is under way.
    case idle
    /// An attempt failed (with `failure`, or with its response when nil); `waiter` decides
    /// whether to retry and waits before doing so (nil until stored). No exchange runs.
    case waiting(failure: CourierError?, waiter: Task<Void, Never>?)
    /// The decision came while the task was suspended: ``SessionTask/resume()`` acts on it.
    case decided(Verdict, failure: CourierError?)

    /// Whether the task is between a failed exchange and its next attempt (no exchange runs).
    var isWaiting: Bool {
        switch self {
        case .waiting, .decided: true
        case .idle: false
        }
    }

    /// Ends the wait, if any: returns the failure it held and the waiting task to cancel.
    mutating func abandon() -> (failure: CourierError?, waiter: Task<Void, Never>?)? {
        switch self {
        case .waiting(let failure, let waiter):
            self = .idle
            return (failure, waiter)
        case .decided(_, let failure):
            self = .idle
            return (failure, nil)
        case .idle:
            return nil
        }
    }

    /// Takes the verdict kept while the task was suspended.
    mutating func takeDecision() -> (verdict: Verdict, failure: CourierError?)? {
        guard case .decided(let verdict, let failure) = self else { return nil }
        self = .idle
        return (verdict, failure)
    }
}
