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
    private var attempts: [TaskMetrics.Attempt] = []
    private var open: OpenAttempt?

    private func offset() -> Duration {
        guard let origin = self.origin else { return .zero }
        return ContinuousClock.now - origin
    }

    /// An attempt begins (adapting first); the first one starts the task's clock.
    mutating func attemptBegan(_ request: Request) {
        if self.origin == nil {
            self.origin = .now
            self.taskStart = Date()
        }
        self.open = OpenAttempt(request: request, start: self.offset())
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
        guard let open = self.open else { return }
        self.attempts.append(
            TaskMetrics.Attempt(
                request: open.request, start: open.start, exchangeStart: open.exchangeStart, responseStart: open.responseStart,
                end: self.offset(), response: response, error: error, redirectCount: open.redirectCount, bytesSent: open.bytesSent,
                bytesReceived: bytesReceived, transactions: open.transactions))
        self.open = nil
    }

    /// The metrics of a task that ends now.
    mutating func finish(originalRequest: Request, response: HTTPResponse?, error: CourierError?, bytesReceived: Int64) -> TaskMetrics {
        if self.open != nil { self.attemptEnded(response: response, error: error, bytesReceived: bytesReceived) }
        return TaskMetrics(
            taskStart: self.taskStart ?? Date(), duration: self.offset(), attempts: self.attempts, originalRequest: originalRequest,
            response: response, error: error, taskStartInstant: self.origin ?? .now)
    }
}
