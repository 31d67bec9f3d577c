import NIOConcurrencyHelpers
import Foundation
import HTTPTypes
import Logging

/// A task's events go out from here to everyone who listens: the AFNetworking notifications and
/// hooks, the session's event monitors (``SessionManager/eventMonitors``), its logger and its
/// tracer. The hooks that decide something (a response's disposition, a redirect) are called
/// where the decision is made; they see the same events.
extension TaskDelegate {
    /// Hands an event of this task to the monitors; costs nothing when the session has none.
    func emit(_ event: @escaping @Sendable (any EventMonitor, SessionTask) -> Void) {
        guard let monitors = self.interception.monitors, let task = self.state.withLockedValue({ $0.task }) else { return }
        monitors.emit { event($0, task) }
    }

    // The monitors' resume, suspend and cancel events are queued under the task's lock, by the
    // change of state each tells of (``resume()``, ``suspend()``, ``cancel()``).

    /// Posts `.taskDidResume`, after the task's lock: its observers run at once.
    func postDidResume(_ task: SessionTask) {
        self.configurationReference.postTaskNotification(.taskDidResume, object: task)
    }

    /// Posts `.taskDidSuspend`, after the task's lock: its observers run at once.
    func postDidSuspend(_ task: SessionTask) {
        self.configurationReference.postTaskNotification(.taskDidSuspend, object: task)
    }

    func didReceive(_ response: HTTPResponse, task: SessionTask) {
        self.interception.monitors?.emit { $0.task(task, didReceive: response) }
    }

    func didReceiveBodyData(_ bytes: Int64, task: SessionTask) {
        guard let monitors = self.interception.monitors else { return }
        let (total, expected) = self.state.withLockedValue { ($0.progress.countOfBytesReceived, $0.progress.countOfBytesExpectedToReceive) }
        monitors.emit { $0.task(task, didReceiveBodyData: bytes, totalBytesReceived: total, totalBytesExpectedToReceive: expected) }
    }

    /// The task ends: its metrics (taken from its state with the rest of its end, see
    /// ``TaskState/takeEnd(originalRequest:response:error:)``) go to the hook and the monitors with
    /// its completion, its spans end, the end is logged. Called once, before the completion is
    /// delivered.
    func reportEnd(_ end: TaskEndRecord, task: SessionTask, manager: SessionManager, response: HTTPResponse?, error: CourierError?) {
        end.hopSpan?.end(response: response, error: error)
        if let metrics = end.metrics, let hook = self.hook({ $0.taskDidFinishCollectingMetrics }) {
            hook(manager, task, metrics)
        }
        if let monitors = self.interception.monitors {
            if let metrics = end.metrics { monitors.emit { $0.task(task, didFinishCollecting: metrics) } }
            monitors.emit { $0.task(task, didCompleteWith: error) }
        }
        end.span?.end(response: response, error: error, retryCount: end.retries)
        let logger = self.interception.logger
        if logger.logLevel <= .debug {
            var metadata: Logger.Metadata = ["courier-request-method": "\(self.originalRequest.method.rawValue)"]
            if let response { metadata["courier-response-status"] = "\(response.status.code)" }
            if let error { metadata["courier-error"] = "\(error.code)" }
            if end.retries > 0 { metadata["courier-retries"] = "\(end.retries)" }
            logger.debug("task completed", metadata: metadata)
        }
    }

    /// Whether the attempt that got `response` (whose status code is `status`) may still be
    /// retried, so that its progress is held back: it failed (400 or more), something may retry
    /// it, and its body can be sent again.
    func mayRetry(after response: HTTPResponse, status: Int) -> Bool {
        status >= 400 && self.originalRequest.body.isReplayable && self.interception.mayRetry(response)
    }
}

/// The progress of a response that was held back (it might have been retried) and turned out to
/// be the task's last: taken under the task's lock, reported after.
struct HeldReport {
    let report: ProgressReport?
    let deliveries: [ProgressDelivery]
    /// The body bytes the attempt received.
    let bytes: Int64

    /// Nil when nothing was held back, or when the task failed: its progress is not reported, and
    /// what was held stays until the task's end takes it, for the attempt's metrics
    /// (``TaskState/takeEnd(originalRequest:response:error:)``: the bytes it received).
    init?(taking state: inout TaskState, succeeded: Bool) {
        guard succeeded, let (deliveries, bytes) = state.releaseHeldProgress() else { return nil }
        self.bytes = bytes
        self.deliveries = deliveries
        self.report = ProgressReport(state.progress.downloadObject, state.progress.downloadHandler)
    }

    func send() {
        self.report?.send()
        for delivery in self.deliveries { delivery.continuation.yield(delivery.snapshot) }
    }
}

/// What a task's end takes from its state, in the one transaction ``TaskDelegate/settle(_:)``
/// makes: the hop fields the cache store decides on, the progress consumers' last snapshots, the
/// finished metrics, the spans and the retry count.
struct TaskEndRecord {
    var source: ResponseSource
    var mayStore: Bool
    var servesStale: Bool
    /// The `progressUpdates(for:)` consumers with their last snapshot each.
    var progressObservers: [(ProgressObserver, ProgressSnapshot)]
    var metrics: TaskMetrics?
    var span: TaskSpan?
    var hopSpan: HopSpan?
    var retries: Int
}

extension TaskState {
    /// Takes what the task's end needs out of the state (``TaskEndRecord``): the progress updates
    /// finish, the metrics are finished and kept on the task (``finishedMetrics``), the spans are
    /// let go of.
    mutating func takeEnd(originalRequest: Request, response: HTTPResponse?, error: CourierError?) -> TaskEndRecord {
        // The attempt's bytes, held back or not: a response held for a retry that never came (the
        // task was cancelled, or failed, mid-body) received them all the same.
        let bytesReceived = self.progress.attemptBytesReceived
        let metrics = self.metrics?.finish(originalRequest: originalRequest, response: response, error: error, bytesReceived: bytesReceived)
        self.metrics = nil
        self.progress.held = nil
        self.finishedMetrics = metrics
        self.machine.settled()
        defer {
            self.tracing.span = nil
            self.tracing.hopSpan = nil
        }
        return TaskEndRecord(
            source: self.hop.source, mayStore: self.hop.mayStore, servesStale: self.hop.servesStale,
            progressObservers: self.progress.finishObservers(failed: error != nil), metrics: metrics, span: self.tracing.span,
            hopSpan: self.tracing.hopSpan?.span, retries: self.retryReasons.count)
    }
}
