/// Where a task is in its life, as a pure state machine: each event a task sees (the caller's
/// `resume()`, `suspend()` and `cancel()`, the adapters' start and end, the engine's handle, a
/// failed attempt, the retriers' verdict, the end) changes the phase and returns what the
/// ``TaskDelegate`` must do once the task's lock is released. The delegate never decides on a
/// task's life itself; it asks the machine.
///
/// ```
/// created ──resume──► starting ──(adapters)──► adapting ──► starting
///                        │                                      │
///                        └──────────► exchanging ◄──────────────┘
///                                        │ failed, retryable; or succeeded, checked
///                                        ▼
///                                  awaitingRetry ──verdict: retry──► starting (attempt + 1)
///                                        │ verdict while suspended ──► retryDecided ──resume──►
///                                        ▼
///                 every phase ──complete──► ended
/// ```
///
/// Suspension and cancellation are events. They leave their mark beside the phase (`isSuspended`,
/// `isCancelling`), because a task keeps its phase while suspended (an exchange stays attached,
/// paused) and ends through the phase it was in when cancelled (an exchange is cancelled and
/// completes; an adaptation or a retry wait ends at once).
struct TaskMachine {
    /// What a retry decision said, once the retriers were asked and the delay passed.
    enum Verdict: Sendable, Equatable {
        /// Send the request again (an attempt more).
        case retry(reason: RetryReason)
        /// Give up: end with this error, or with the failed attempt's own outcome when nil.
        case finish(CourierError?)
    }

    enum Phase {
        /// Made, never resumed.
        case created
        /// An attempt is being prepared on the caller's thread (cookies, the cache lookup), or was
        /// handed to the engine, which has not given its handle yet.
        case starting
        /// The adapters run on a task of their own (nil until it is stored).
        case adapting(work: Task<Void, Never>?)
        /// The engine runs the attempt.
        case exchanging(any Exchange)
        /// An attempt failed and may be retried: the retriers decide and the delay passes on the
        /// waiter (nil until it is stored). `failure` is the attempt's error (nil for a response
        /// that was a failure by its status), with which the task ends if nothing is retried.
        case awaitingRetry(failure: CourierError?, waiter: Task<Void, Never>?)
        /// The verdict came while the task was suspended: acted on at `resume()`.
        case retryDecided(Verdict, failure: CourierError?)
        /// Completed (or dropped unstarted).
        case ended
    }

    private(set) var phase = Phase.created
    /// The attempts started after the first (the retries so far).
    private(set) var attempt = 0
    /// The caller suspended the task after it had started.
    private(set) var isSuspended = false
    /// The caller cancelled the task; its end is on its way.
    private(set) var isCancelling = false
    /// A download ended, and its outcome is not final yet: its file is being moved, and the move
    /// may fail. Until its end is settled (``TaskDelegate/settle(_:)``) it does not look completed,
    /// so that nobody reads a completed task's error before it is set.
    private(set) var awaitsSettlement = false

    // MARK: What the task looks like from outside

    var publicState: SessionTask.State {
        if self.hasEnded, !self.awaitsSettlement { return .completed }
        if self.isCancelling { return .canceling }
        if self.hasEnded { return .running }
        if case .created = self.phase { return .suspended }
        return self.isSuspended ? .suspended : .running
    }

    var hasStarted: Bool {
        if case .created = self.phase { return false }
        return true
    }

    var hasEnded: Bool {
        if case .ended = self.phase { return true }
        return false
    }

    /// The engine's handle of the attempt under way, if it has one.
    var exchange: (any Exchange)? {
        if case .exchanging(let exchange) = self.phase { return exchange }
        return nil
    }

    /// Whether the task waits for a retry decision (its last exchange is over).
    var isAwaitingRetry: Bool {
        switch self.phase {
        case .awaitingRetry, .retryDecided: true
        default: false
        }
    }

    /// Whether the exchange should stop reading for the caller's sake.
    var wantsPause: Bool { self.isSuspended && !self.isCancelling && !self.hasEnded }

    // MARK: The caller

    enum ResumeAction {
        /// Start the first attempt.
        case startAttempt
        /// Let the exchange read again (if there is one); then, if a verdict was kept while
        /// suspended, act on it.
        case resumeReceiving(then: VerdictAction?)
        case none
    }

    mutating func resume() -> ResumeAction {
        switch self.phase {
        case .created:
            guard !self.isCancelling else { return .none }
            self.phase = .starting
            return .startAttempt
        case .ended:
            return .none
        case .retryDecided(let verdict, let failure):
            guard self.isSuspended, !self.isCancelling else { return .none }
            self.isSuspended = false
            return .resumeReceiving(then: self.act(on: verdict, failure: failure))
        case .starting, .adapting, .exchanging, .awaitingRetry:
            guard self.isSuspended, !self.isCancelling else { return .none }
            self.isSuspended = false
            return .resumeReceiving(then: nil)
        }
    }

    enum SuspendAction: Equatable {
        /// Pause the exchange, if there is one, and tell the observers.
        case suspendReceiving
        case none
    }

    mutating func suspend() -> SuspendAction {
        guard self.hasStarted, !self.hasEnded, !self.isSuspended, !self.isCancelling else { return .none }
        self.isSuspended = true
        return .suspendReceiving
    }

    enum CancelAction {
        /// Nothing runs (never started, adapting, or waiting for a retry): end the task now, after
        /// cancelling the work or waiter, if any.
        case complete(cancelling: Task<Void, Never>?)
        /// Cancel the exchange, which then completes (nil: the engine has not handed it over yet;
        /// ``attach(_:attempt:)`` cancels it).
        case cancelExchange((any Exchange)?)
        case none
    }

    mutating func cancel() -> CancelAction {
        guard !self.hasEnded, !self.isCancelling else { return .none }
        self.isCancelling = true
        switch self.phase {
        case .created:
            return .complete(cancelling: nil)
        case .adapting(let work):
            return .complete(cancelling: work)
        case .awaitingRetry(_, let waiter):
            return .complete(cancelling: waiter)
        case .retryDecided:
            return .complete(cancelling: nil)
        case .exchanging(let exchange):
            return .cancelExchange(exchange)
        case .starting:
            return .cancelExchange(nil)
        case .ended:
            return .none
        }
    }

    /// The caller let go of a task it never resumed: it is over. False when it had started.
    mutating func released() -> Bool {
        guard case .created = self.phase else { return false }
        self.phase = .ended
        return true
    }

    // MARK: The attempt

    /// The adapters are about to run on a task of their own.
    mutating func adaptationBegan() {
        if case .starting = self.phase { self.phase = .adapting(work: nil) }
    }

    /// What to do with the adapters' task once it exists.
    enum AdaptersStartedAction: Equatable {
        /// Let it run.
        case keep
        /// Cancel it: the task ended meanwhile.
        case cancel
        /// Cancel it and end the task now: a `cancel()` came while the attempt was starting,
        /// before the adapters began, and found nothing to cancel. (Left to run, adapters that
        /// never return, a token refresh that hangs, kept a cancelled task from ending.)
        case cancelAndComplete
    }

    /// The adapters' task exists.
    mutating func adaptationStarted(_ work: Task<Void, Never>) -> AdaptersStartedAction {
        switch self.phase {
        case .adapting(nil):
            self.phase = .adapting(work: work)
            return self.isCancelling ? .cancelAndComplete : .keep
        case .ended:
            return .cancel
        default:
            // The adapters finished already.
            return .keep
        }
    }

    enum AdaptedAction: Equatable {
        /// Hand the adapted request to the engine.
        case send
        /// The task was cancelled before the adapters' task existed: end it now.
        case completeCancelled
        /// Nothing: the task ended meanwhile (`cancel()` ended it) or another attempt replaced it.
        case none
    }

    /// The adapters of `attempt` are done.
    mutating func adaptationFinished(attempt: Int) -> AdaptedAction {
        guard attempt == self.attempt, case .adapting = self.phase else { return .none }
        self.phase = .starting
        return self.isCancelling ? .completeCancelled : .send
    }

    /// The engine made the exchange for the attempt under way (inside `execute`, before any of
    /// its events), so that a `suspend()` or `cancel()` from its first events reaches it.
    mutating func exchangeWillStart(_ exchange: any Exchange) {
        switch self.phase {
        case .starting, .exchanging: self.phase = .exchanging(exchange)
        default: break
        }
    }

    enum AttachAction {
        /// Cancel it: the task was cancelled before the handle arrived.
        case cancel
        /// Pause it: the task was suspended before the handle arrived.
        case pause
        case none
    }

    /// `execute` returned the handle of the task's `attempt`-th exchange. An exchange that
    /// already completed (the task ended or waits for a retry) or that a retry replaced is not kept.
    mutating func attach(_ exchange: any Exchange, attempt: Int) -> AttachAction {
        guard attempt == self.attempt else { return .none }
        switch self.phase {
        case .starting, .exchanging: self.phase = .exchanging(exchange)
        default: return .none
        }
        if self.isCancelling { return .cancel }
        return self.isSuspended ? .pause : .none
    }

    /// The attempt failed (an error, or a failure status), and `retryable` says whether its
    /// request may be sent again (the driver's rules: something may retry it, its body can be
    /// sent again, no byte of a stream was handed out, it was not the cache's own answer). True
    /// when the task now waits for the retriers' verdict; false when it must complete.
    mutating func attemptFailed(_ failure: CourierError?, retryable: Bool) -> Bool {
        guard retryable, !self.isCancelling else { return false }
        switch self.phase {
        case .starting, .exchanging:
            self.phase = .awaitingRetry(failure: failure, waiter: nil)
            return true
        default:
            return false
        }
    }

    /// The attempt succeeded, and the task's serializer now checks the response for retriers that
    /// want its failures (``RequestRetrier/retriesSerializationFailures``): the task waits as for a
    /// retry decision, with no failure of its own (cancelling ends the wait and the task; the
    /// check passing is the verdict `.finish(nil)`). False when it must complete now (cancelled).
    mutating func attemptAwaitsCheck() -> Bool {
        self.attemptFailed(nil, retryable: true)
    }

    /// The waiter that asks the retriers exists. False when it must be cancelled: the wait ended
    /// meanwhile.
    mutating func retryWaitStarted(_ waiter: Task<Void, Never>) -> Bool {
        guard case .awaitingRetry(let failure, nil) = self.phase else { return false }
        self.phase = .awaitingRetry(failure: failure, waiter: waiter)
        return true
    }

    enum VerdictAction: Equatable {
        /// Start the next attempt, for this reason.
        case retry(RetryReason)
        /// End the task with this error (nil: with the failed attempt's response).
        case complete(CourierError?)
    }

    /// The retriers decided (and the delay passed). Nil when there is nothing to do now: the
    /// wait had ended, or the task is suspended and keeps the verdict for `resume()`.
    mutating func retryDecided(_ verdict: Verdict) -> VerdictAction? {
        guard case .awaitingRetry(let failure, _) = self.phase else { return nil }
        if self.isSuspended {
            self.phase = .retryDecided(verdict, failure: failure)
            return nil
        }
        return self.act(on: verdict, failure: failure)
    }

    private mutating func act(on verdict: Verdict, failure: CourierError?) -> VerdictAction {
        switch verdict {
        case .retry(let reason):
            self.attempt += 1
            self.phase = .starting
            return .retry(reason)
        case .finish(let error):
            return .complete(error ?? failure)
        }
    }

    /// The session is invalidated while the task waits for a retry: the wait ends, and the task
    /// with its attempt's failure. Nil when it was not waiting.
    /// The phase goes back to `starting`, not `ended`: the driver completes the task next, and
    /// `complete()` must still answer true for it; a second call finds no wait to abandon.
    mutating func abandonRetryWait() -> (failure: CourierError?, waiter: Task<Void, Never>?)? {
        switch self.phase {
        case .awaitingRetry(let failure, let waiter):
            self.phase = .starting
            return (failure, waiter)
        case .retryDecided(_, let failure):
            self.phase = .starting
            return (failure, nil)
        default:
            return nil
        }
    }

    // MARK: The end

    /// The task completes. False when it had already: a task ends exactly once.
    /// - Parameter settledLater: The outcome is final only when the end is settled (a download's
    ///   file is moved first): until ``settled()`` the task does not look completed.
    mutating func complete(settledLater: Bool = false) -> Bool {
        guard !self.hasEnded else { return false }
        self.phase = .ended
        self.awaitsSettlement = settledLater
        return true
    }

    /// The ended task's outcome is final (where every end is settled, in the transaction that
    /// records its metrics): from now on it looks completed.
    mutating func settled() {
        self.awaitsSettlement = false
    }
}
