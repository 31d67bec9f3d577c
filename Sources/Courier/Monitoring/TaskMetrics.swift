import Foundation
import HTTPTypes

/// A task's timings and sizes (URLSession's `URLSessionTaskMetrics`), as Courier sees them above
/// the engine: one entry per attempt.
///
/// Times are offsets from ``taskStart`` (when the task was first resumed), on a monotonic clock.
/// Each attempt's ``Attempt/transactions`` hold what the engine recorded of each hop: name
/// lookup, connect and TLS times, the protocol, whether the connection was reused, addresses
/// and byte counts (``TransactionMetrics``; instants of the same clock, which ``offset(of:)``
/// turns into offsets). A task's metrics are on ``SessionTask/metrics`` once it completed, on
/// ``DataResponse/metrics`` and ``DownloadResponse/metrics``, in the
/// ``SessionManager/Hooks/taskDidFinishCollectingMetrics`` hook, in the
/// ``Foundation/NSNotification/Name/taskDidComplete`` notification
/// (``TaskDidCompleteKey/metrics``) and in ``EventMonitor/task(_:didFinishCollecting:)``.
public struct TaskMetrics: Sendable {
    /// One attempt: adapting, then one exchange with the engine (redirects included).
    public struct Attempt: Sendable {
        // Declared first, so that the memberwise initializer's labels differ from the public
        // initializer's, which calls it (see the extension at the end of the file).
        /// The engine's record of each hop (the first request, then each redirect's), in order;
        /// empty when the engine records none (a response from the cache, a stub engine).
        public var transactions: [TransactionMetrics]
        /// The request as sent (adapted); after redirects, the first hop's.
        public var request: Request
        /// When adapting began.
        public var start: Duration
        /// When the request went to the engine; nil when an adapter failed it.
        public var exchangeStart: Duration?
        /// When the final response head arrived, if it did.
        public var responseStart: Duration?
        /// When the exchange ended.
        public var end: Duration
        /// The final response head, if any.
        public var response: HTTPResponse?
        /// The error the attempt ended with, if any.
        public var error: CourierError?
        /// Redirects followed.
        public var redirectCount: Int
        /// Request body bytes sent, over the attempt's hops (a body a 307 or 308 sent again
        /// counts each time).
        public var bytesSent: Int64
        /// Response body bytes received.
        public var bytesReceived: Int64
    }

    /// The fields, behind one reference: a task's metrics are held by the task, its outcome, the
    /// `DataResponse` and the `taskDidComplete` notification's `userInfo`, and a copy is then one
    /// retain instead of one for each request, response, error and array it holds (and fits in an
    /// `Any` without a box of its own). Copy-on-write: a change copies the fields first when they
    /// are shared.
    ///
    /// A task's ``TaskMetricsRecorder`` fills the same object in as the task runs (under the
    /// task's lock, while nothing else holds it), and its metrics are then that object: nothing
    /// is moved or copied into a new one when the task ends.
    ///
    /// `@unchecked Sendable`: the fields are only changed through a uniquely referenced instance
    /// (`uniqueStorage()`, and the recorder's, whose instance no other value holds until it is
    /// finished), as a copy-on-write array's buffer is, so no instance another thread can reach is
    /// ever changed.
    ///
    /// The attempts are kept as the earlier ones and the last: a task that was not retried has
    /// one attempt and no array at all, and ``attempts`` is only made into an array when read.
    final class Storage: @unchecked Sendable {
        // Not checked for exclusive access at run time (each access to a class's stored `var`
        // otherwise is, and a recorder changes the fields at each event of its task): they change
        // only through a uniquely referenced instance, the recorder's under its task's lock, or
        // one that `uniqueStorage()` made so in a mutation of the one `TaskMetrics` that holds it.
        @exclusivity(unchecked) var taskStart: Date
        @exclusivity(unchecked) var taskStartInstant: ContinuousClock.Instant
        @exclusivity(unchecked) var duration: Duration
        @exclusivity(unchecked) var earlierAttempts: [Attempt]
        @exclusivity(unchecked) var lastAttempt: Attempt?
        /// The attempt a recorder has under way; nil in finished metrics.
        @exclusivity(unchecked) var open: Attempt?
        @exclusivity(unchecked) var originalRequest: Request
        @exclusivity(unchecked) var response: HTTPResponse?
        @exclusivity(unchecked) var error: CourierError?

        init(
            taskStart: Date, taskStartInstant: ContinuousClock.Instant, duration: Duration, earlierAttempts: [Attempt],
            lastAttempt: Attempt?, open: Attempt? = nil, originalRequest: Request, response: HTTPResponse?, error: CourierError?
        ) {
            self.taskStart = taskStart
            self.taskStartInstant = taskStartInstant
            self.duration = duration
            self.earlierAttempts = earlierAttempts
            self.lastAttempt = lastAttempt
            self.open = open
            self.originalRequest = originalRequest
            self.response = response
            self.error = error
        }

        func copy() -> Storage {
            Storage(
                taskStart: self.taskStart, taskStartInstant: self.taskStartInstant, duration: self.duration,
                earlierAttempts: self.earlierAttempts, lastAttempt: self.lastAttempt, open: self.open,
                originalRequest: self.originalRequest, response: self.response, error: self.error)
        }
    }

    private var storage: Storage

    private mutating func uniqueStorage() -> Storage {
        if !isKnownUniquelyReferenced(&self.storage) { self.storage = self.storage.copy() }
        return self.storage
    }

    /// When the task was first resumed.
    public var taskStart: Date {
        get { self.storage.taskStart }
        _modify { yield &self.uniqueStorage().taskStart }
    }
    /// ``taskStart`` on the continuous clock that ``TransactionMetrics`` times are read from.
    public var taskStartInstant: ContinuousClock.Instant {
        get { self.storage.taskStartInstant }
        _modify { yield &self.uniqueStorage().taskStartInstant }
    }
    /// From the first resume to completion.
    public var duration: Duration {
        get { self.storage.duration }
        _modify { yield &self.uniqueStorage().duration }
    }
    /// The attempts, first to last; more than one when the task was retried.
    public var attempts: [Attempt] {
        get {
            guard let last = self.storage.lastAttempt else { return self.storage.earlierAttempts }
            return self.storage.earlierAttempts + CollectionOfOne(last)
        }
        set {
            let storage = self.uniqueStorage()
            storage.lastAttempt = newValue.last
            storage.earlierAttempts = Array(newValue.dropLast())
        }
    }
    /// The request the task was made with.
    public var originalRequest: Request {
        get { self.storage.originalRequest }
        _modify { yield &self.uniqueStorage().originalRequest }
    }
    /// The ``Request/operationName`` of the request the task was made with: what the task did, as
    /// a low-cardinality name (an OpenAPI `operationId`), or `nil`.
    public var operationName: String? { self.storage.originalRequest.operationName }
    /// The task's final response, if any.
    public var response: HTTPResponse? {
        get { self.storage.response }
        _modify { yield &self.uniqueStorage().response }
    }
    /// The error the task ends with, if any.
    public var error: CourierError? {
        get { self.storage.error }
        _modify { yield &self.uniqueStorage().error }
    }

    /// Metrics.
    public init(
        taskStart: Date, duration: Duration, attempts: [Attempt], originalRequest: Request, response: HTTPResponse?, error: CourierError?,
        taskStartInstant: ContinuousClock.Instant = .now
    ) {
        self.init(
            taskStart: taskStart, duration: duration, earlierAttempts: Array(attempts.dropLast()), lastAttempt: attempts.last,
            originalRequest: originalRequest, response: response, error: error, taskStartInstant: taskStartInstant)
    }

    /// The metrics a ``TaskMetricsRecorder`` filled in.
    init(recorded storage: Storage) {
        self.storage = storage
    }

    /// Metrics whose attempts are given as the earlier ones and the last.
    init(
        taskStart: Date, duration: Duration, earlierAttempts: [Attempt], lastAttempt: Attempt?, originalRequest: Request,
        response: HTTPResponse?, error: CourierError?, taskStartInstant: ContinuousClock.Instant
    ) {
        self.storage = Storage(
            taskStart: taskStart, taskStartInstant: taskStartInstant, duration: duration, earlierAttempts: earlierAttempts,
            lastAttempt: lastAttempt, originalRequest: originalRequest, response: response, error: error)
    }

    /// Adds up `value` over the attempts, without making their array.
    private func sum<Value: AdditiveArithmetic>(_ value: (Attempt) -> Value) -> Value {
        let earlier = self.storage.earlierAttempts.reduce(.zero) { $0 + value($1) }
        return self.storage.lastAttempt.map { earlier + value($0) } ?? earlier
    }

    /// Redirects followed, over all attempts.
    public var redirectCount: Int { self.sum(\.redirectCount) }
    /// Request body bytes sent, over all attempts.
    public var bytesSent: Int64 { self.sum(\.bytesSent) }
    /// Response body bytes received, over all attempts.
    public var bytesReceived: Int64 { self.sum(\.bytesReceived) }
    /// Every transaction of every attempt, first to last.
    public var transactions: [TransactionMetrics] { self.attempts.flatMap(\.transactions) }

    /// How long after the task's start `instant` came (a ``TransactionMetrics`` time); nil for nil.
    public func offset(of instant: ContinuousClock.Instant?) -> Duration? {
        instant.map { $0 - self.taskStartInstant }
    }
}

extension TaskMetrics.Attempt {
    /// An attempt.
    public init(
        request: Request, start: Duration, exchangeStart: Duration?, responseStart: Duration?, end: Duration,
        response: HTTPResponse?, error: CourierError?, redirectCount: Int, bytesSent: Int64, bytesReceived: Int64,
        transactions: [TransactionMetrics] = []
    ) {
        // The memberwise initializer: written out field by field, this was compiled to make the
        // attempt, copy it into place and destroy the first (a retain and a release of its request,
        // response and error).
        self.init(
            transactions: transactions, request: request, start: start, exchangeStart: exchangeStart, responseStart: responseStart,
            end: end, response: response, error: error, redirectCount: redirectCount, bytesSent: bytesSent, bytesReceived: bytesReceived)
    }
}
