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
        /// Request body bytes sent.
        public var bytesSent: Int64
        /// Response body bytes received.
        public var bytesReceived: Int64
        /// The engine's record of each hop (the first request, then each redirect's), in order;
        /// empty when the engine records none (a response from the cache, a stub engine).
        public var transactions: [TransactionMetrics]

        /// An attempt.
        public init(
            request: Request, start: Duration, exchangeStart: Duration?, responseStart: Duration?, end: Duration,
            response: HTTPResponse?, error: CourierError?, redirectCount: Int, bytesSent: Int64, bytesReceived: Int64,
            transactions: [TransactionMetrics] = []
        ) {
            self.transactions = transactions
            self.request = request
            self.start = start
            self.exchangeStart = exchangeStart
            self.responseStart = responseStart
            self.end = end
            self.response = response
            self.error = error
            self.redirectCount = redirectCount
            self.bytesSent = bytesSent
            self.bytesReceived = bytesReceived
        }
    }

    /// When the task was first resumed.
    public var taskStart: Date
    /// ``taskStart`` on the continuous clock that ``TransactionMetrics`` times are read from.
    public var taskStartInstant: ContinuousClock.Instant
    /// From the first resume to completion.
    public var duration: Duration
    /// The attempts, first to last; more than one when the task was retried.
    public var attempts: [Attempt]
    /// The request the task was made with.
    public var originalRequest: Request
    /// The task's final response, if any.
    public var response: HTTPResponse?
    /// The error the task ends with, if any.
    public var error: CourierError?

    /// Metrics.
    public init(
        taskStart: Date, duration: Duration, attempts: [Attempt], originalRequest: Request, response: HTTPResponse?, error: CourierError?,
        taskStartInstant: ContinuousClock.Instant = .now
    ) {
        self.taskStart = taskStart
        self.taskStartInstant = taskStartInstant
        self.duration = duration
        self.attempts = attempts
        self.originalRequest = originalRequest
        self.response = response
        self.error = error
    }

    /// Redirects followed, over all attempts.
    public var redirectCount: Int { self.attempts.reduce(0) { $0 + $1.redirectCount } }
    /// Request body bytes sent, over all attempts.
    public var bytesSent: Int64 { self.attempts.reduce(0) { $0 + $1.bytesSent } }
    /// Response body bytes received, over all attempts.
    public var bytesReceived: Int64 { self.attempts.reduce(0) { $0 + $1.bytesReceived } }
    /// Every transaction of every attempt, first to last.
    public var transactions: [TransactionMetrics] { self.attempts.flatMap(\.transactions) }

    /// How long after the task's start `instant` came (a ``TransactionMetrics`` time); nil for nil.
    public func offset(of instant: ContinuousClock.Instant?) -> Duration? {
        instant.map { $0 - self.taskStartInstant }
    }
}
