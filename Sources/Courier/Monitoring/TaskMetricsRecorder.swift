import Foundation
import HTTPTypes

/// Gathers a task's ``TaskMetrics`` as it runs; kept in the task's state, under its lock.
///
/// It fills in the object the finished metrics are (``TaskMetrics/Storage``), made when the first
/// attempt begins (the task's clock starts then): the task's state holds one reference instead of
/// the attempts themselves, and finishing moves nothing. Until ``finish(originalRequest:response:error:bytesReceived:)``
/// nothing else holds that object, so it is changed in place; after it, a change (none is made
/// by Courier) would copy it first, as any ``TaskMetrics`` change does.
struct TaskMetricsRecorder {
    private var storage: TaskMetrics.Storage?

    /// Changes the object (the recorder's own, or a copy when finished metrics share it) when
    /// the first attempt made it. The object is lent to `body`, not returned: a returned
    /// reference is a retain and a release at every event.
    @inline(__always)
    private mutating func update(_ body: (TaskMetrics.Storage) -> Void) {
        if !isKnownUniquelyReferenced(&self.storage), let shared = self.storage { self.storage = shared.copy() }
        switch self.storage {
        case .some(let storage): body(storage)
        case .none: break
        }
    }

    private func offset() -> Duration {
        guard let origin = self.storage?.taskStartInstant else { return .zero }
        return ContinuousClock.now - origin
    }

    /// An attempt begins (adapting first); the first one starts the task's clock (its offset is
    /// zero by definition: the clock is not read twice). `originalRequest` is the request the task
    /// was made with.
    mutating func attemptBegan(_ originalRequest: Request) {
        guard self.storage != nil else {
            self.storage = TaskMetrics.Storage(
                taskStart: Date(), taskStartInstant: .now, duration: .zero, earlierAttempts: [], lastAttempt: nil,
                open: Self.attempt(originalRequest, start: .zero), originalRequest: originalRequest, response: nil, error: nil)
            return
        }
        let attempt = Self.attempt(originalRequest, start: self.offset())
        self.update { $0.open = attempt }
    }

    private static func attempt(_ request: Request, start: Duration) -> TaskMetrics.Attempt {
        TaskMetrics.Attempt(
            request: request, start: start, exchangeStart: nil, responseStart: nil, end: start, response: nil, error: nil,
            redirectCount: 0, bytesSent: 0, bytesReceived: 0)
    }

    /// The attempt's request went to the engine.
    mutating func exchangeBegan(_ request: Request) {
        let now = self.offset()
        self.update { storage in
            storage.open?.request = request
            storage.open?.exchangeStart = now
        }
    }

    /// The attempt's request body went out up to `total` bytes (its current hop's count).
    mutating func bodySent(total: Int64) { self.update { $0.open?.bytesSent = total } }

    /// A redirect was followed.
    mutating func redirected() { self.update { $0.open?.redirectCount += 1 } }

    /// The engine finished a transaction (a hop) of the attempt.
    mutating func transactionFinished(_ metrics: TransactionMetrics) { self.update { $0.open?.transactions.append(metrics) } }

    /// The final response head arrived.
    mutating func responseBegan() {
        let now = self.offset()
        self.update { $0.open?.responseStart = now }
    }

    /// The attempt ended.
    mutating func attemptEnded(response: HTTPResponse?, error: CourierError?, bytesReceived: Int64) {
        let now = self.offset()
        self.update { Self.attemptEnded(in: $0, response: response, error: error, bytesReceived: bytesReceived, at: now) }
    }

    /// The attempt ended `end` after the task's start. The open attempt is finished in place and
    /// swapped into the last attempt, never copied: a copy retains its request, its response, its
    /// error and its transactions.
    private static func attemptEnded(
        in storage: TaskMetrics.Storage, response: HTTPResponse?, error: CourierError?, bytesReceived: Int64, at end: Duration
    ) {
        guard storage.open != nil else { return }
        if storage.open!.redirectCount > 0 {
            // A 307 or 308 sent the body again: the attempt sent what its hops sent together (the
            // running count is the last hop's). Read only after a redirect: most attempts have one hop.
            let sent = storage.open!.transactions.reduce(Int64(0)) { $0 + $1.countOfRequestBodyBytesSent }
            storage.open!.bytesSent = max(storage.open!.bytesSent, sent)
        }
        storage.open!.end = end
        storage.open!.response = response
        storage.open!.error = error
        storage.open!.bytesReceived = bytesReceived
        if let previous = storage.lastAttempt.take() { storage.earlierAttempts.append(previous) }
        swap(&storage.lastAttempt, &storage.open)
    }

    /// The last attempt that ended carried `bytesSent` and `bytesReceived` after it (a WebSocket
    /// task's messages, over the connection its handshake opened).
    mutating func lastAttemptCarried(bytesSent: Int64, bytesReceived: Int64) {
        self.update { storage in
            storage.lastAttempt?.bytesSent = bytesSent
            storage.lastAttempt?.bytesReceived = bytesReceived
        }
    }

    /// The metrics of a task that ends now (an attempt still open ends at the same instant: the
    /// clock is read once). `originalRequest` is only read when no attempt began (a task cancelled
    /// before it was resumed): the first attempt recorded it.
    mutating func finish(originalRequest: Request, response: HTTPResponse?, error: CourierError?, bytesReceived: Int64) -> TaskMetrics {
        guard self.storage != nil else {
            let storage = TaskMetrics.Storage(
                taskStart: Date(), taskStartInstant: .now, duration: .zero, earlierAttempts: [], lastAttempt: nil,
                originalRequest: originalRequest, response: response, error: error)
            self.storage = storage
            return TaskMetrics(recorded: storage)
        }
        let now = self.offset()
        self.update { storage in
            Self.attemptEnded(in: storage, response: response, error: error, bytesReceived: bytesReceived, at: now)
            storage.duration = now
            storage.response = response
            storage.error = error
        }
        return TaskMetrics(recorded: self.storage!)
    }
}
