import NIOConcurrencyHelpers

/// A cap on retries shared by all the tasks of a session, so that an outage does not become a
/// retry storm (Finagle's and gRPC's retry budgets).
///
/// Every task the session starts deposits one request; every retry withdraws one. Over the
/// sliding ``window``, retries may number at most ``ratio`` × requests, plus
/// ``minimumPerSecond`` × the window's seconds so that a quiet session can still retry. A retry
/// the budget refuses is not made: the task ends with the attempt's outcome, as if no retrier had
/// asked for a retry. Retries for ``exemptReasons`` (a credential refresh, a challenge, the
/// network coming back: at most one per task or per refresh) neither need nor spend budget.
///
/// ```swift
/// manager.retryBudget = RetryBudget(ratio: 0.1, minimumPerSecond: 5)
/// ```
public final class RetryBudget: Sendable {
    /// Retries allowed per request, over the window. 0.2 by default.
    public let ratio: Double
    /// Retries allowed per second of the window whatever the traffic. 10 by default.
    public let minimumPerSecond: Double
    /// How far back requests and retries count. 10 s by default.
    public let window: Duration
    /// Reasons whose retries are not counted. ``RetryReason/authentication``,
    /// ``RetryReason/challenge`` and ``RetryReason/connectivity`` by default.
    public let exemptReasons: Set<RetryReason>

    /// What the budget has seen since it was made.
    public struct Statistics: Sendable, Hashable {
        /// Requests deposited.
        public var requests: Int
        /// Retries allowed (budgeted reasons only).
        public var retries: Int
        /// Retries refused.
        public var refused: Int
    }

    private struct Bucket {
        var start: Duration
        var requests: Double = 0
        var retries: Double = 0
    }

    private struct State {
        var buckets: [Bucket] = []
        var statistics = Statistics(requests: 0, retries: 0, refused: 0)
    }

    private static let bucketCount = 10
    private let clock: any RetryClock
    private let state = NIOLockedValueBox(State())

    /// A budget.
    /// - Parameters:
    ///   - ratio: Retries allowed per request over the window.
    ///   - minimumPerSecond: Retries allowed per second whatever the traffic.
    ///   - window: How far back requests and retries count.
    ///   - exemptReasons: Reasons whose retries are not counted.
    ///   - clock: Time, for the window (injected by tests).
    public init(
        ratio: Double = 0.2,
        minimumPerSecond: Double = 10,
        window: Duration = .seconds(10),
        exemptReasons: Set<RetryReason> = [.authentication, .challenge, .connectivity],
        clock: any RetryClock = .system
    ) {
        self.ratio = max(0, ratio)
        self.minimumPerSecond = max(0, minimumPerSecond)
        self.window = max(window, .milliseconds(10))
        self.exemptReasons = exemptReasons
        self.clock = clock
    }

    /// Counts a request (a task's first attempt).
    public func deposit() {
        let now = self.clock.now
        self.state.withLockedValue { state in
            state.buckets[self.currentBucket(at: now, in: &state)].requests += 1
            state.statistics.requests += 1
        }
    }

    /// Spends one retry for `reason` if the budget allows it; returns whether it did. Exempt
    /// reasons always succeed and spend nothing.
    public func tryWithdraw(for reason: RetryReason) -> Bool {
        if self.exemptReasons.contains(reason) { return true }
        let now = self.clock.now
        return self.state.withLockedValue { state in
            let current = self.currentBucket(at: now, in: &state)
            let requests = state.buckets.reduce(0) { $0 + $1.requests }
            let retries = state.buckets.reduce(0) { $0 + $1.retries }
            let allowed = self.ratio * requests + self.minimumPerSecond * self.window.seconds
            guard retries + 1 <= allowed else {
                state.statistics.refused += 1
                return false
            }
            state.buckets[current].retries += 1
            state.statistics.retries += 1
            return true
        }
    }

    /// Requests, retries and refusals since the budget was made.
    public var statistics: Statistics { self.state.withLockedValue { $0.statistics } }

    /// The index of the bucket for `now`, made when needed, after dropping the buckets that left
    /// the window. Buckets are a tenth of the window each, oldest first.
    private func currentBucket(at now: Duration, in state: inout State) -> Int {
        let width = self.window / Self.bucketCount
        state.buckets.removeAll { $0.start + self.window <= now }
        if let last = state.buckets.last, now < last.start + width {
            return state.buckets.count - 1
        }
        let start = state.buckets.last.map { last in last.start + width * Int((now - last.start) / width) } ?? now
        state.buckets.append(Bucket(start: start))
        return state.buckets.count - 1
    }
}
