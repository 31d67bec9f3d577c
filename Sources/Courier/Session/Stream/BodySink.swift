/// Where a task's response body goes.
enum BodySink: Sendable {
    /// Gathered in memory for the response serializer (data and upload tasks).
    case memory
    /// Written to a file (download tasks).
    case file(DownloadPlan)
    /// Handed to an `async` consumer as it arrives (``SessionManager/stream(_:downloadProgress:)``).
    case stream(ResponseStreamSink)
}
