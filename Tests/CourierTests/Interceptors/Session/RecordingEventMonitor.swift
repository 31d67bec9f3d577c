import Dispatch
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers

@testable import Courier

/// An event monitor that writes each event as a short line ("retry transient-failure 2s",
/// "response 503") and lets a test wait until some line has been seen.
final class RecordingEventMonitor: EventMonitor {
    let queue = DispatchQueue(label: "test.recording-monitor")
    private struct State {
        var lines: [(task: Int, line: String)] = []
        var metrics: [Int: TaskMetrics] = [:]
        var waiters: [(predicate: @Sendable ([(task: Int, line: String)]) -> Bool, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = NIOLockedValueBox(State())

    /// Every line so far, for one task or all.
    func lines(for task: SessionTask? = nil) -> [String] {
        self.state.withLockedValue { state in state.lines.filter { task == nil || $0.task == task!.taskIdentifier }.map(\.line) }
    }

    func metrics(for task: SessionTask) -> TaskMetrics? { self.state.withLockedValue { $0.metrics[task.taskIdentifier] } }

    /// Returns once `count` lines starting with `prefix` have been seen.
    func wait(for prefix: String, count: Int = 1) async {
        let predicate: @Sendable ([(task: Int, line: String)]) -> Bool = { lines in lines.filter { $0.line.hasPrefix(prefix) }.count >= count }
        await withCheckedContinuation { continuation in
            let ready = self.state.withLockedValue { state -> Bool in
                if predicate(state.lines) { return true }
                state.waiters.append((predicate, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    private func record(_ task: SessionTask, _ line: String, metrics: TaskMetrics? = nil) {
        self.record(task: task.taskIdentifier, line, metrics: metrics)
    }

    private func record(task: Int, _ line: String, metrics: TaskMetrics? = nil) {
        let ready = self.state.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
            state.lines.append((task, line))
            if let metrics { state.metrics[task] = metrics }
            var ready: [CheckedContinuation<Void, Never>] = []
            state.waiters.removeAll { waiter in
                guard waiter.predicate(state.lines) else { return false }
                ready.append(waiter.continuation)
                return true
            }
            return ready
        }
        for continuation in ready { continuation.resume() }
    }

    func taskDidCreate(_ task: SessionTask) { self.record(task, "created") }
    func task(_ task: SessionTask, didAdaptRequest initialRequest: Request, to adaptedRequest: Request) { self.record(task, "adapted") }
    func task(_ task: SessionTask, didFailToAdaptRequest request: Request, with error: CourierError) {
        self.record(task, "adaptation failed \(error.code)")
    }
    func taskDidResume(_ task: SessionTask) { self.record(task, "resumed") }
    func taskDidSuspend(_ task: SessionTask) { self.record(task, "suspended") }
    func taskDidCancel(_ task: SessionTask) { self.record(task, "cancelled") }
    func task(_ task: SessionTask, willPerformRedirection response: HTTPResponse, newRequest: Request?) {
        self.record(task, "redirect \(response.status.code)")
    }
    func task(_ task: SessionTask, willRetry attempt: FailedAttempt, after delay: Duration, reason: RetryReason) {
        self.record(task, "retry \(reason) \(delay)")
    }
    func task(_ task: SessionTask, didReceive response: HTTPResponse) { self.record(task, "response \(response.status.code)") }
    func task(_ task: SessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64) {
        self.record(task, "sent \(totalBytesSent)")
    }
    func task(_ task: SessionTask, didReceiveBodyData bytesReceived: Int64, totalBytesReceived: Int64, totalBytesExpectedToReceive: Int64) {
        self.record(task, "received \(totalBytesReceived)")
    }
    func task(_ task: SessionTask, didFinishCollecting metrics: TaskMetrics) { self.record(task, "metrics", metrics: metrics) }
    func task(_ task: SessionTask, didCompleteWith error: CourierError?) { self.record(task, "completed \(error.map { "\($0.code)" } ?? "ok")") }
    func task(_ task: SessionTask, didSerializeResponseWith serializer: any ResponseSerializer, object: (any Sendable)?, error: CourierError?) {
        self.record(task, "serialized \(error.map { "\($0.code)" } ?? "ok")")
    }
    func task(_ task: SessionTask, retryRefusedByBudget attempt: FailedAttempt, reason: RetryReason) {
        self.record(task, "budget refused \(reason)")
    }
    func task(_ task: SessionTask, didAnswerFromCache response: HTTPResponse, source: ResponseSource) {
        self.record(task, "from cache \(source) \(response.status.code)")
    }
    func task(_ task: SessionTask, didStoreInCache response: CachedResponse) { self.record(task, "stored \(response.response.status.code)") }
    func task(_ task: SessionTask, didReceive challenge: AuthenticationChallenge, disposition: ChallengeDisposition) {
        let answer: String =
            switch disposition {
            case .useCredential(let credential): "use \(credential.user)"
            case .performDefaultHandling: "default"
            case .cancelAuthenticationChallenge: "cancel"
            case .rejectProtectionSpace: "reject"
            }
        self.record(task, "challenge \(challenge.protectionSpace.realm ?? "") \(challenge.previousFailureCount) \(answer)")
    }
    func task(_ task: SessionTask, didFinishDownloadingTo location: URL) { self.record(task, "downloaded \(location.lastPathComponent)") }
    func taskIsWaitingForConnectivity(_ task: SessionTask) { self.record(task, "waiting for connectivity") }
    func sessionDidInvalidate(_ session: SessionManager) {
        // Not a task's event: recorded under task 0.
        self.record(task: 0, "invalidated")
    }
}
