import Foundation
import HTTPTypes

/// Gathers a task's ``TaskMetrics`` as it runs; kept in the task's state, under its lock.
struct TaskMetricsRecorder {
    private struct OpenAttempt {
        var request: Request
        var start: Duration
        var exchangeStart: Duration?
        var responseStart: Duration?
        var redirectCount = 0
        var bytesSent: Int64 = 0
        var transactions: [TransactionMetrics] = []
    }

    private var taskStart: Date?
    private var origin: ContinuousClock.Instant?
    /// The attempts that ended, but the last; then the last (no array for a task that was not
    /// retried).
    private var earlierAttempts: [TaskMetrics.Attempt] = []
    private var lastAttempt: TaskMetrics.Attempt?
    private var open: OpenAttempt?

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
            self.open = OpenAttempt(request: request, start: .zero)
        } else {
            self.open = OpenAttempt(request: request, start: self.offset())
        }
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

    /// The attempt ended `end` after the task's start. The open attempt is moved into the list,
    /// not copied (a copy retains its request, its response and each transaction).
    private mutating func attemptEnded(response: HTTPResponse?, error: CourierError?, bytesReceived: Int64, at end: Duration) {
        guard let open = self.open.take() else { return }
        if let previous = self.lastAttempt.take() { self.earlierAttempts.append(previous) }
        self.lastAttempt = TaskMetrics.Attempt(
            request: open.request, start: open.start, exchangeStart: open.exchangeStart, responseStart: open.responseStart,
            end: end, response: response, error: error, redirectCount: open.redirectCount, bytesSent: open.bytesSent,
            bytesReceived: bytesReceived, transactions: open.transactions)
    }

    /// The metrics of a task that ends now (an attempt still open ends at the same instant: the
    /// clock is read once).
    mutating func finish(originalRequest: Request, response: HTTPResponse?, error: CourierError?, bytesReceived: Int64) -> TaskMetrics {
        let now = self.offset()
        self.attemptEnded(response: response, error: error, bytesReceived: bytesReceived, at: now)
        var earlier: [TaskMetrics.Attempt] = []
        swap(&earlier, &self.earlierAttempts)
        return TaskMetrics(
            taskStart: self.taskStart ?? Date(), duration: now, earlierAttempts: earlier, lastAttempt: self.lastAttempt.take(),
            originalRequest: originalRequest, response: response, error: error, taskStartInstant: self.origin ?? .now)
    }
}
