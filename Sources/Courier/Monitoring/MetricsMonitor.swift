import Dispatch
import Foundation
import HTTPTypes
import Metrics
import NIOConcurrencyHelpers

/// Records a session's traffic with swift-metrics, through whatever backend the process
/// bootstrapped (`MetricsSystem.bootstrap`). Add it to ``SessionManager/eventMonitors``.
///
/// | metric | kind | dimensions |
/// |---|---|---|
/// | `courier_requests_total` | counter, one per task | `method` (see below), `status_class` (`2xx`…`5xx`, or `error`) |
/// | `courier_request_failures_total` | counter, one per failed task | `code` (``CourierError/Code``) |
/// | `courier_request_duration_seconds` | timer, resume to completion | `method`, `status_class` |
/// | `courier_request_body_bytes_total` | counter | — |
/// | `courier_response_body_bytes_total` | counter | — |
/// | `courier_retries_total` | counter, tasks' and WebSocket handshakes' | `reason` (``RetryReason``) |
/// | `courier_websocket_tasks_total` | counter, one per ``WebSocketTask`` | `outcome` (`closed`, or the ``CourierError/Code``) |
/// | `courier_websocket_duration_seconds` | timer, resume to end | `outcome` |
/// | `courier_websocket_message_bytes_sent_total` | counter, message payloads | — |
/// | `courier_websocket_message_bytes_received_total` | counter, message payloads | — |
///
/// Every dimension is low-cardinality: no URL, host or identifier. `method` is one of RFC 9110's
/// methods or `PATCH`, and `_OTHER` for any other (as OpenTelemetry's HTTP conventions say): a
/// method is any token, and a service that passes its callers' methods on would otherwise make a
/// series, and an instrument kept here, for each one it is sent. The label prefix (`courier`)
/// can be changed. Open connections are the engine's to report: `courier_open_connections`, a
/// `Meter` by `protocol` (see ``NIOEngine/Configuration/metricsFactory``).
public struct MetricsMonitor: EventMonitor {
    public let queue: DispatchQueue
    /// What metric labels begin with.
    public let prefix: String
    private let instruments: Instruments

    /// A monitor.
    /// - Parameters:
    ///   - prefix: What metric labels begin with (`courier` by default).
    ///   - factory: The metrics backend; `nil` (the default) uses the one bootstrapped in `MetricsSystem`.
    ///   - queue: Where events are recorded (a new serial queue by default).
    public init(
        prefix: String = "courier", factory: (any MetricsFactory)? = nil, queue: DispatchQueue = DispatchQueue(label: "courier.metrics-monitor")
    ) {
        self.prefix = prefix
        self.queue = queue
        self.instruments = Instruments(prefix: prefix, factory: factory ?? MetricsSystem.factory)
    }

    public func task(_ task: SessionTask, didFinishCollecting metrics: TaskMetrics) {
        let method = Self.methodDimension(metrics.originalRequest.method)
        let statusClass = metrics.response.map { "\($0.status.code / 100)xx" } ?? "error"
        self.instruments.counter("requests_total", [("method", method), ("status_class", statusClass)]).increment()
        if let error = metrics.error {
            self.instruments.counter("request_failures_total", [("code", error.code.description)]).increment()
        }
        self.instruments.timer("request_duration_seconds", [("method", method), ("status_class", statusClass)])
            .recordNanoseconds(Self.nanoseconds(metrics.duration))
        let sent = metrics.bytesSent
        let received = metrics.bytesReceived
        if sent > 0 { self.instruments.counter("request_body_bytes_total", []).increment(by: sent) }
        if received > 0 { self.instruments.counter("response_body_bytes_total", []).increment(by: received) }
    }

    public func task(_ task: SessionTask, willRetry attempt: FailedAttempt, after delay: Duration, reason: RetryReason) {
        self.instruments.counter("retries_total", [("reason", reason.rawValue)]).increment()
    }

    public func webSocketTask(_ task: WebSocketTask, willRetry attempt: FailedAttempt, after delay: Duration, reason: RetryReason) {
        self.instruments.counter("retries_total", [("reason", reason.rawValue)]).increment()
    }

    public func webSocketTask(_ task: WebSocketTask, didFinishCollecting metrics: TaskMetrics) {
        let outcome = metrics.error.map { $0.code.description } ?? "closed"
        self.instruments.counter("websocket_tasks_total", [("outcome", outcome)]).increment()
        self.instruments.timer("websocket_duration_seconds", [("outcome", outcome)]).recordNanoseconds(Self.nanoseconds(metrics.duration))
        let sent = metrics.bytesSent
        let received = metrics.bytesReceived
        if sent > 0 { self.instruments.counter("websocket_message_bytes_sent_total", []).increment(by: sent) }
        if received > 0 { self.instruments.counter("websocket_message_bytes_received_total", []).increment(by: received) }
    }

    /// The `method` dimension: a known method's name, else `_OTHER`.
    static func methodDimension(_ method: HTTPRequest.Method) -> String {
        switch method {
        case .get, .head, .post, .put, .delete, .connect, .options, .trace, .patch: method.rawValue
        default: "_OTHER"
        }
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    /// The counters and timers, made once per label and dimensions.
    private final class Instruments: Sendable {
        struct Key: Hashable {
            var name: String
            var dimensions: [String]
        }

        let prefix: String
        let factory: any MetricsFactory
        let counters = NIOLockedValueBox<[Key: Counter]>([:])
        let timers = NIOLockedValueBox<[Key: Metrics.Timer]>([:])

        init(prefix: String, factory: any MetricsFactory) {
            self.prefix = prefix
            self.factory = factory
        }

        func counter(_ name: String, _ dimensions: [(String, String)]) -> Counter {
            let key = Key(name: name, dimensions: dimensions.flatMap { [$0.0, $0.1] })
            return self.counters.withLockedValue { counters in
                if let counter = counters[key] { return counter }
                let counter = Counter(label: "\(self.prefix)_\(name)", dimensions: dimensions, factory: self.factory)
                counters[key] = counter
                return counter
            }
        }

        func timer(_ name: String, _ dimensions: [(String, String)]) -> Metrics.Timer {
            let key = Key(name: name, dimensions: dimensions.flatMap { [$0.0, $0.1] })
            return self.timers.withLockedValue { timers in
                if let timer = timers[key] { return timer }
                let timer = Metrics.Timer(label: "\(self.prefix)_\(name)", dimensions: dimensions, factory: self.factory)
                timers[key] = timer
                return timer
            }
        }
    }
}
