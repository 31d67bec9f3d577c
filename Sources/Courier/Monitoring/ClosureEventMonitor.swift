import Dispatch
import Foundation
import HTTPTypes

/// An ``EventMonitor`` whose events run the closures you set (Alamofire's `ClosureEventMonitor`).
///
/// ```swift
/// var monitor = ClosureEventMonitor()
/// monitor.taskWillRetry = { task, attempt, delay, reason in print(task.taskIdentifier, "retries in", delay, "for", reason) }
/// manager.eventMonitors.append(monitor)
/// ```
public struct ClosureEventMonitor: EventMonitor {
    public let queue: DispatchQueue

    /// ``EventMonitor/taskDidCreate(_:)``.
    public var taskDidCreate: (@Sendable (SessionTask) -> Void)?
    /// ``EventMonitor/task(_:didAdaptRequest:to:)``.
    public var taskDidAdaptRequest: (@Sendable (SessionTask, Request, Request) -> Void)?
    /// ``EventMonitor/task(_:didFailToAdaptRequest:with:)``.
    public var taskDidFailToAdaptRequest: (@Sendable (SessionTask, Request, CourierError) -> Void)?
    /// ``EventMonitor/taskDidResume(_:)``.
    public var taskDidResume: (@Sendable (SessionTask) -> Void)?
    /// ``EventMonitor/taskDidSuspend(_:)``.
    public var taskDidSuspend: (@Sendable (SessionTask) -> Void)?
    /// ``EventMonitor/taskDidCancel(_:)``.
    public var taskDidCancel: (@Sendable (SessionTask) -> Void)?
    /// ``EventMonitor/task(_:willPerformRedirection:newRequest:)``.
    public var taskWillPerformRedirection: (@Sendable (SessionTask, HTTPResponse, Request?) -> Void)?
    /// ``EventMonitor/task(_:willRetry:after:reason:)``.
    public var taskWillRetry: (@Sendable (SessionTask, FailedAttempt, Duration, RetryReason) -> Void)?
    /// ``EventMonitor/task(_:didReceive:)``.
    public var taskDidReceiveResponse: (@Sendable (SessionTask, HTTPResponse) -> Void)?
    /// ``EventMonitor/task(_:didSendBodyData:totalBytesSent:totalBytesExpectedToSend:)``.
    public var taskDidSendBodyData: (@Sendable (SessionTask, Int64, Int64, Int64) -> Void)?
    /// ``EventMonitor/task(_:didReceiveBodyData:totalBytesReceived:totalBytesExpectedToReceive:)``.
    public var taskDidReceiveBodyData: (@Sendable (SessionTask, Int64, Int64, Int64) -> Void)?
    /// ``EventMonitor/task(_:didFinishCollecting:)``.
    public var taskDidFinishCollectingMetrics: (@Sendable (SessionTask, TaskMetrics) -> Void)?
    /// ``EventMonitor/task(_:didCompleteWith:)``.
    public var taskDidComplete: (@Sendable (SessionTask, CourierError?) -> Void)?
    /// ``EventMonitor/task(_:didSerializeResponseWith:object:error:)``.
    public var taskDidSerializeResponse: (@Sendable (SessionTask, any ResponseSerializer, (any Sendable)?, CourierError?) -> Void)?
    /// ``EventMonitor/task(_:retryRefusedByBudget:reason:)``.
    public var taskRetryRefusedByBudget: (@Sendable (SessionTask, FailedAttempt, RetryReason) -> Void)?
    /// ``EventMonitor/task(_:didAnswerFromCache:source:)``.
    public var taskDidAnswerFromCache: (@Sendable (SessionTask, HTTPResponse, ResponseSource) -> Void)?
    /// ``EventMonitor/task(_:didStoreInCache:)``.
    public var taskDidStoreInCache: (@Sendable (SessionTask, CachedResponse) -> Void)?
    /// ``EventMonitor/task(_:didReceive:disposition:)``.
    public var taskDidReceiveChallenge: (@Sendable (SessionTask, AuthenticationChallenge, ChallengeDisposition) -> Void)?
    /// ``EventMonitor/task(_:didFinishDownloadingTo:)``.
    public var taskDidFinishDownloading: (@Sendable (SessionTask, URL) -> Void)?
    /// ``EventMonitor/taskIsWaitingForConnectivity(_:)``.
    public var taskIsWaitingForConnectivity: (@Sendable (SessionTask) -> Void)?
    /// ``EventMonitor/sessionDidInvalidate(_:)``.
    public var sessionDidInvalidate: (@Sendable (SessionManager) -> Void)?
    /// ``EventMonitor/webSocketTaskDidCreate(_:)``.
    public var webSocketTaskDidCreate: (@Sendable (WebSocketTask) -> Void)?
    /// ``EventMonitor/webSocketTaskDidResume(_:)``.
    public var webSocketTaskDidResume: (@Sendable (WebSocketTask) -> Void)?
    /// ``EventMonitor/webSocketTask(_:willRetry:after:reason:)``.
    public var webSocketTaskWillRetry: (@Sendable (WebSocketTask, FailedAttempt, Duration, RetryReason) -> Void)?
    /// ``EventMonitor/webSocketTask(_:didOpenWith:)``.
    public var webSocketTaskDidOpen: (@Sendable (WebSocketTask, HTTPResponse) -> Void)?
    /// ``EventMonitor/webSocketTask(_:didFinishCollecting:)``.
    public var webSocketTaskDidFinishCollectingMetrics: (@Sendable (WebSocketTask, TaskMetrics) -> Void)?
    /// ``EventMonitor/webSocketTask(_:didCompleteWith:closeCode:)``.
    public var webSocketTaskDidComplete: (@Sendable (WebSocketTask, CourierError?, WebSocketCloseCode) -> Void)?

    /// A monitor with no closures, on `queue` (a new serial queue by default).
    public init(queue: DispatchQueue = DispatchQueue(label: "courier.closure-event-monitor")) {
        self.queue = queue
    }

    public func taskDidCreate(_ task: SessionTask) { self.taskDidCreate?(task) }
    public func task(_ task: SessionTask, didAdaptRequest initialRequest: Request, to adaptedRequest: Request) {
        self.taskDidAdaptRequest?(task, initialRequest, adaptedRequest)
    }
    public func task(_ task: SessionTask, didFailToAdaptRequest request: Request, with error: CourierError) {
        self.taskDidFailToAdaptRequest?(task, request, error)
    }
    public func taskDidResume(_ task: SessionTask) { self.taskDidResume?(task) }
    public func taskDidSuspend(_ task: SessionTask) { self.taskDidSuspend?(task) }
    public func taskDidCancel(_ task: SessionTask) { self.taskDidCancel?(task) }
    public func task(_ task: SessionTask, willPerformRedirection response: HTTPResponse, newRequest: Request?) {
        self.taskWillPerformRedirection?(task, response, newRequest)
    }
    public func task(_ task: SessionTask, willRetry attempt: FailedAttempt, after delay: Duration, reason: RetryReason) {
        self.taskWillRetry?(task, attempt, delay, reason)
    }
    public func task(_ task: SessionTask, didReceive response: HTTPResponse) { self.taskDidReceiveResponse?(task, response) }
    public func task(_ task: SessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64) {
        self.taskDidSendBodyData?(task, bytesSent, totalBytesSent, totalBytesExpectedToSend)
    }
    public func task(
        _ task: SessionTask, didReceiveBodyData bytesReceived: Int64, totalBytesReceived: Int64, totalBytesExpectedToReceive: Int64
    ) {
        self.taskDidReceiveBodyData?(task, bytesReceived, totalBytesReceived, totalBytesExpectedToReceive)
    }
    public func task(_ task: SessionTask, didFinishCollecting metrics: TaskMetrics) { self.taskDidFinishCollectingMetrics?(task, metrics) }
    public func task(_ task: SessionTask, didCompleteWith error: CourierError?) { self.taskDidComplete?(task, error) }
    public func task(
        _ task: SessionTask, didSerializeResponseWith serializer: any ResponseSerializer, object: (any Sendable)?, error: CourierError?
    ) {
        self.taskDidSerializeResponse?(task, serializer, object, error)
    }
    public func task(_ task: SessionTask, retryRefusedByBudget attempt: FailedAttempt, reason: RetryReason) {
        self.taskRetryRefusedByBudget?(task, attempt, reason)
    }
    public func task(_ task: SessionTask, didAnswerFromCache response: HTTPResponse, source: ResponseSource) {
        self.taskDidAnswerFromCache?(task, response, source)
    }
    public func task(_ task: SessionTask, didStoreInCache response: CachedResponse) { self.taskDidStoreInCache?(task, response) }
    public func task(_ task: SessionTask, didReceive challenge: AuthenticationChallenge, disposition: ChallengeDisposition) {
        self.taskDidReceiveChallenge?(task, challenge, disposition)
    }
    public func task(_ task: SessionTask, didFinishDownloadingTo location: URL) { self.taskDidFinishDownloading?(task, location) }
    public func taskIsWaitingForConnectivity(_ task: SessionTask) { self.taskIsWaitingForConnectivity?(task) }
    public func sessionDidInvalidate(_ session: SessionManager) { self.sessionDidInvalidate?(session) }
    public func webSocketTaskDidCreate(_ task: WebSocketTask) { self.webSocketTaskDidCreate?(task) }
    public func webSocketTaskDidResume(_ task: WebSocketTask) { self.webSocketTaskDidResume?(task) }
    public func webSocketTask(_ task: WebSocketTask, willRetry attempt: FailedAttempt, after delay: Duration, reason: RetryReason) {
        self.webSocketTaskWillRetry?(task, attempt, delay, reason)
    }
    public func webSocketTask(_ task: WebSocketTask, didOpenWith response: HTTPResponse) { self.webSocketTaskDidOpen?(task, response) }
    public func webSocketTask(_ task: WebSocketTask, didFinishCollecting metrics: TaskMetrics) {
        self.webSocketTaskDidFinishCollectingMetrics?(task, metrics)
    }
    public func webSocketTask(_ task: WebSocketTask, didCompleteWith error: CourierError?, closeCode: WebSocketCloseCode) {
        self.webSocketTaskDidComplete?(task, error, closeCode)
    }
}
