import HTTPTypes

/// A response whose body is read as it arrives (``SessionManager/stream(_:downloadProgress:gatheringBodiesUpTo:)``).
public struct DataStreamResponse: Sendable {
    /// The task; cancel it to stop the transfer.
    public let task: DataTask
    /// The request that was answered (after redirects).
    public let request: Request
    /// The response head.
    public let response: HTTPResponse
    /// The body, chunk by chunk.
    public let body: ResponseBodyStream
}
