import Foundation
import HTTPTypes

/// What an `async` download returns: the request that was answered, the response head and the
/// file holding the body.
public struct DownloadResponse: Sendable {
    /// The request that was answered (after redirects).
    public let request: Request
    /// The response head.
    public let response: HTTPResponse
    /// Where the body is: the destination, or a file in the temporary directory that is yours to
    /// move or remove when there was no destination.
    public let fileURL: URL
    /// The task's timings and sizes (``TaskMetrics``), when it recorded them.
    public var metrics: TaskMetrics?
}
