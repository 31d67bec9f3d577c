import Foundation
import HTTPTypes

/// Gathers a task's ``TaskMetrics`` as it runs; kept in the task's state, under its lock.
struct TaskMetricsRecorder {
    private var taskStart: Date?
    private var origin: ContinuousClock.Instant?
    /// The attempts that ended, but the last; then the last (no array for a task that was not
    /// retried).
    private var earlierAttempts: [TaskMetrics.Attempt] = []
    private var lastAttempt: TaskMetrics.Attempt?
    /// The attempt under way, filled in as it runs and moved to ``lastAttempt`` when it ends
    /// (its end, response, error and bytes received are set then).
    private var open: TaskMetrics.Attempt?

    private func offset() -> Duration {
        guard let origin = self.origin else { return .zero }
        return ContinuousClock.now - origin
    }

    /// An attempt begins (adapting first); the first one starts the task's clock (its offset is
    /// zero by definition: the clock is not read twice).
    mutating func attemptBegan(_ request: Request) {
        if self.origin == nil {
            self.origin = .now
            self.taskStart = Date()
            self.open = Self.attempt(request, start: .zero)
        } else {
            self.open = Self.attempt(request, start: self.offset())
        }
    }

    private static func attempt(_ request: Request, start: Duration) -> TaskMetrics.Attempt {
        TaskMetrics.Attempt(
            request: request, start: start, exchangeStart: nil, responseStart: nil, end: start, response: nil, error: nil,
            redirectCount: 0, bytesSent: 0, bytesReceived: 0)
    }

    /// The attempt's request went to the engine.
    mutating func exchangeBegan(_ request: Request) {
        let now = self.offset()
        self.open?.request = request
        self.open?.exchangeStart = now
    }

    /// The attempt's request body went out up to `total` bytes (its current hop's count).
    mutating func bodySent(total: Int64) { self.open?.bytesSent = total }

    /// A redirect was followed.
    mutating func redirected() { self.open?.redirectCount += 1 }

    /// The engine finished a transaction (a hop) of the attempt.
    mutating func transactionFinished(_ metrics: TransactionMetrics) { self.open?.transactions.append(metrics) }

    /// The final response head arrived.
    mutating func responseBegan() {
        let now = self.offset()
        self.open?.responseStart = now
    }

    /// The attempt ended.
    mutating func attemptEnded(response: HTTPResponse?, error: CourierError?, bytesReceived: Int64) {
        self.attemptEnded(response: response, error: error, bytesReceived: bytesReceived, at: self.offset())
    }

    /// The attempt ended `end` after the task's start. The open attempt is finished in place and
    /// swapped into ``lastAttempt``, never copied: a copy retains its request, its response, its
    /// error and its transactions (binding it to a `var` and storing it back, even from `take()`,
    /// was compiled as such a copy).
    private mutating func attemptEnded(response: HTTPResponse?, error: CourierError?, bytesReceived: Int64, at end: Duration) {
        guard self.open != nil else { return }
        self.open!.end = end
        self.open!.response = response
        self.open!.error = error
        self.open!.bytesReceived = bytesReceived
        if let previous = self.lastAttempt.take() { self.earlierAttempts.append(previous) }
        swap(&self.lastAttempt, &self.open)
    }

    /// The metrics of a task that ends now (an attempt still open ends at the same instant: the
    /// clock is read once).
    mutating func finish(originalRequest: Request, response: HTTPResponse?, error: CourierError?, bytesReceived: Int64) -> TaskMetrics {
        let now = self.offset()
        self.attemptEnded(response: response, error: error, bytesReceived: bytesReceived, at: now)
        var earlier: [TaskMetrics.Attempt] = []
        swap(&earlier, &self.earlierAttempts)
        var last: TaskMetrics.Attempt?
        swap(&last, &self.lastAttempt)
        return TaskMetrics(
            taskStart: self.taskStart ?? Date(), duration: now, earlierAttempts: consume earlier, lastAttempt: consume last,
            originalRequest: originalRequest, response: response, error: error, taskStartInstant: self.origin ?? .now)
    }
}
