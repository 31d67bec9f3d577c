import Dispatch
import Foundation
import HTTPTypes

/// Receives every event of a session's tasks, on a queue of its own (Alamofire's
/// `EventMonitor`): for logging, metrics, tracing, debugging tools.
///
/// Give a session any number of monitors (``SessionManager/eventMonitors``), and a request
/// monitors of its own (``Request/eventMonitors``: its task's events). Each gets every event of
/// every task, in the order the events happened, on its ``queue`` (serial, one event at a time);
/// monitors never slow the transfer down or each other. Monitors given together that share a
/// queue hear each event in the order they were given (one delivery serves them, taking the
/// events that arrive while it runs); monitors on different queues, or a request's beside the
/// session's, are not ordered among themselves: one may hear an event before another heard the
/// one before. Every method does nothing unless implemented. The session's hooks
/// (``SessionManager/Hooks``) and notifications come from the same events, on their own threads.
///
/// A task's events, in order: ``taskDidCreate(_:)``; ``taskDidResume(_:)``; per attempt,
/// ``task(_:didAdaptRequest:to:)`` (or ``task(_:didFailToAdaptRequest:with:)``), redirections,
/// the response head, body progress both ways; ``task(_:willRetry:after:reason:)`` between
/// attempts (with ``task(_:didReceive:disposition:)`` for a challenge answered,
/// ``taskIsWaitingForConnectivity(_:)`` before a connectivity retry's wait, or
/// ``task(_:retryRefusedByBudget:reason:)`` when the budget refused one);
/// ``task(_:didAnswerFromCache:source:)`` when the cache answered; then
/// ``task(_:didFinishDownloadingTo:)`` for a download, ``task(_:didStoreInCache:)`` when the cache
/// stored the response, ``task(_:didFinishCollecting:)``, ``task(_:didCompleteWith:)`` and, for
/// tasks with a serializer, ``task(_:didSerializeResponseWith:object:error:)``.
/// ``taskDidSuspend(_:)``, ``taskDidResume(_:)`` and ``taskDidCancel(_:)`` come when they are
/// called; ``sessionDidInvalidate(_:)`` last of all. Events arrive as they happen, each monitor's
/// in the order they happened.
///
/// A ``WebSocketTask`` is no ``SessionTask``: its events have methods of their own, in this
/// order: ``webSocketTaskDidCreate(_:)``; ``webSocketTaskDidResume(_:)`` when its opening
/// handshake starts; ``webSocketTask(_:willRetry:after:reason:)`` for each failed handshake a
/// retrier sends again; ``webSocketTask(_:didOpenWith:)`` when the server accepted it (no such
/// event when the handshake failed); then, however it ended,
/// ``webSocketTask(_:didFinishCollecting:)`` and ``webSocketTask(_:didCompleteWith:closeCode:)``.
///
/// A task holds its monitors for as long as the task lives, as Alamofire's requests hold
/// theirs. A monitor that keeps the tasks it is told about (a table of tasks in flight, say) must
/// let go of each by its ``task(_:didCompleteWith:)`` at the latest: a monitor that kept them
/// for good would keep every task it ever saw alive, and each task would keep the monitor.
public protocol EventMonitor: Sendable {
    /// Where this monitor's events are delivered; make it serial. Each monitor should have its own.
    /// Events wait for the queue in memory, with the tasks and metrics they name: a queue that
    /// never runs (`DispatchQueue.main` in a program that never runs the main queue, as most
    /// servers on Linux) keeps every one.
    var queue: DispatchQueue { get }

    /// A task was made (suspended).
    func taskDidCreate(_ task: SessionTask)
    /// The adapters prepared an attempt: `initialRequest` is the task's request, `adaptedRequest`
    /// what is sent.
    func task(_ task: SessionTask, didAdaptRequest initialRequest: Request, to adaptedRequest: Request)
    /// An adapter failed the task before it was sent.
    func task(_ task: SessionTask, didFailToAdaptRequest request: Request, with error: CourierError)
    /// ``SessionTask/resume()`` started or continued the task.
    func taskDidResume(_ task: SessionTask)
    /// ``SessionTask/suspend()`` paused the task.
    func taskDidSuspend(_ task: SessionTask)
    /// ``SessionTask/cancel()`` was called; the task completes next.
    func taskDidCancel(_ task: SessionTask)
    /// The server redirected; `newRequest` is what is followed, nil when the redirect is not followed.
    func task(_ task: SessionTask, willPerformRedirection response: HTTPResponse, newRequest: Request?)
    /// An attempt failed and the task will be sent again after `delay`.
    func task(_ task: SessionTask, willRetry attempt: FailedAttempt, after delay: Duration, reason: RetryReason)
    /// A response head arrived (the final one of an attempt, after redirects).
    func task(_ task: SessionTask, didReceive response: HTTPResponse)
    /// Request body bytes went out (`totalBytesExpectedToSend` is -1 when unknown).
    func task(_ task: SessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64)
    /// Response body bytes arrived (`totalBytesExpectedToReceive` is -1 when unknown).
    func task(_ task: SessionTask, didReceiveBodyData bytesReceived: Int64, totalBytesReceived: Int64, totalBytesExpectedToReceive: Int64)
    /// The task's timings and sizes, just before it completes.
    func task(_ task: SessionTask, didFinishCollecting metrics: TaskMetrics)
    /// The task completed, successfully when `error` is nil.
    func task(_ task: SessionTask, didCompleteWith error: CourierError?)
    /// A response serializer turned the task's response into `object`, or failed with `error`.
    func task(_ task: SessionTask, didSerializeResponseWith serializer: any ResponseSerializer, object: (any Sendable)?, error: CourierError?)
    /// A retrier asked to retry the attempt for `reason`, and the session's ``RetryBudget``
    /// refused: the task ends with the attempt's outcome.
    func task(_ task: SessionTask, retryRefusedByBudget attempt: FailedAttempt, reason: RetryReason)
    /// The session's cache answered the task: a fresh stored response (`source` is
    /// ``ResponseSource/cache``) or one a `304` confirmed (``ResponseSource/revalidatedCache``).
    func task(_ task: SessionTask, didAnswerFromCache response: HTTPResponse, source: ResponseSource)
    /// The session's cache stored the task's response.
    func task(_ task: SessionTask, didStoreInCache response: CachedResponse)
    /// A `WWW-Authenticate` challenge was answered with `disposition` (the challenge hook's, or the
    /// session's default handling; a stale Digest nonce renewed is `.useCredential`).
    func task(_ task: SessionTask, didReceive challenge: AuthenticationChallenge, disposition: ChallengeDisposition)
    /// A download task's file is in its final place (its destination, or the temporary file
    /// when it has none), just before the task completes.
    func task(_ task: SessionTask, didFinishDownloadingTo location: URL)
    /// The task failed for want of a network and waits for it to come back
    /// (``SessionManager/connectivityRetry``), as URLSession's `taskIsWaitingForConnectivity`.
    /// Sent once the wait hears the reachability manager: a status reported from then on counts.
    func taskIsWaitingForConnectivity(_ task: SessionTask)
    /// The session was invalidated and its engine shut down: no event of it follows.
    func sessionDidInvalidate(_ session: SessionManager)

    /// A WebSocket task was made (suspended) by ``SessionManager/webSocketTask(with:configuration:)``.
    func webSocketTaskDidCreate(_ task: WebSocketTask)
    /// A WebSocket task's opening handshake started (``WebSocketTask/resume()``, or the first call
    /// that needs the connection).
    func webSocketTaskDidResume(_ task: WebSocketTask)
    /// A WebSocket task's opening handshake failed and will be tried again after `delay`, as a
    /// retrier decided for `reason` (``SessionManager/webSocketTask(with:configuration:)``).
    func webSocketTask(_ task: WebSocketTask, willRetry attempt: FailedAttempt, after delay: Duration, reason: RetryReason)
    /// The server accepted a WebSocket task's opening handshake with `response` (its 101).
    func webSocketTask(_ task: WebSocketTask, didOpenWith response: HTTPResponse)
    /// A WebSocket task's metrics (``WebSocketTask/metrics``: its handshakes as its attempts, the
    /// last carrying the messages' bytes), just before it completes.
    func webSocketTask(_ task: WebSocketTask, didFinishCollecting metrics: TaskMetrics)
    /// A WebSocket task ended with `closeCode` (``WebSocketTask/closeCode``): after a closing
    /// handshake when `error` is nil, else failed with `error`.
    func webSocketTask(_ task: WebSocketTask, didCompleteWith error: CourierError?, closeCode: WebSocketCloseCode)
}

extension EventMonitor {
    /// Does nothing.
    public func taskDidCreate(_ task: SessionTask) {}
    /// Does nothing.
    public func task(_ task: SessionTask, didAdaptRequest initialRequest: Request, to adaptedRequest: Request) {}
    /// Does nothing.
    public func task(_ task: SessionTask, didFailToAdaptRequest request: Request, with error: CourierError) {}
    /// Does nothing.
    public func taskDidResume(_ task: SessionTask) {}
    /// Does nothing.
    public func taskDidSuspend(_ task: SessionTask) {}
    /// Does nothing.
    public func taskDidCancel(_ task: SessionTask) {}
    /// Does nothing.
    public func task(_ task: SessionTask, willPerformRedirection response: HTTPResponse, newRequest: Request?) {}
    /// Does nothing.
    public func task(_ task: SessionTask, willRetry attempt: FailedAttempt, after delay: Duration, reason: RetryReason) {}
    /// Does nothing.
    public func task(_ task: SessionTask, didReceive response: HTTPResponse) {}
    /// Does nothing.
    public func task(_ task: SessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64) {}
    /// Does nothing.
    public func task(
        _ task: SessionTask, didReceiveBodyData bytesReceived: Int64, totalBytesReceived: Int64, totalBytesExpectedToReceive: Int64
    ) {}
    /// Does nothing.
    public func task(_ task: SessionTask, didFinishCollecting metrics: TaskMetrics) {}
    /// Does nothing.
    public func task(_ task: SessionTask, didCompleteWith error: CourierError?) {}
    /// Does nothing.
    public func task(
        _ task: SessionTask, didSerializeResponseWith serializer: any ResponseSerializer, object: (any Sendable)?, error: CourierError?
    ) {}
    /// Does nothing.
    public func task(_ task: SessionTask, retryRefusedByBudget attempt: FailedAttempt, reason: RetryReason) {}
    /// Does nothing.
    public func task(_ task: SessionTask, didAnswerFromCache response: HTTPResponse, source: ResponseSource) {}
    /// Does nothing.
    public func task(_ task: SessionTask, didStoreInCache response: CachedResponse) {}
    /// Does nothing.
    public func task(_ task: SessionTask, didReceive challenge: AuthenticationChallenge, disposition: ChallengeDisposition) {}
    /// Does nothing.
    public func task(_ task: SessionTask, didFinishDownloadingTo location: URL) {}
    /// Does nothing.
    public func taskIsWaitingForConnectivity(_ task: SessionTask) {}
    /// Does nothing.
    public func sessionDidInvalidate(_ session: SessionManager) {}
    /// Does nothing.
    public func webSocketTaskDidCreate(_ task: WebSocketTask) {}
    /// Does nothing.
    public func webSocketTaskDidResume(_ task: WebSocketTask) {}
    /// Does nothing.
    public func webSocketTask(_ task: WebSocketTask, willRetry attempt: FailedAttempt, after delay: Duration, reason: RetryReason) {}
    /// Does nothing.
    public func webSocketTask(_ task: WebSocketTask, didOpenWith response: HTTPResponse) {}
    /// Does nothing.
    public func webSocketTask(_ task: WebSocketTask, didFinishCollecting metrics: TaskMetrics) {}
    /// Does nothing.
    public func webSocketTask(_ task: WebSocketTask, didCompleteWith error: CourierError?, closeCode: WebSocketCloseCode) {}
}
