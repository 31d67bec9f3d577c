import Dispatch
import NIOConcurrencyHelpers
import Foundation
import HTTPTypes

extension SessionManager {
    /// Makes a download task, suspended (AFNetworking's
    /// `downloadTaskWithRequest:progress:destination:completionHandler:`).
    ///
    /// The body goes to a file in ``SessionConfiguration/downloadDirectory`` (the system's temporary
    /// directory by default) as it arrives; at the end `destination`
    /// names the final place and the file is moved there (``Foundation/NSNotification/Name/downloadTaskDidMoveFile``
    /// or ``Foundation/NSNotification/Name/downloadTaskDidFailToMoveFile`` is posted). Any status
    /// code gives a file, as with URLSession: check the response's status.
    ///
    /// - Parameters:
    ///   - request: The request; the configuration's additional headers are added where missing.
    ///   - progress: Called on an engine thread as body bytes arrive.
    ///   - destination: Where the file goes; nil leaves it in the download directory, yours to
    ///     move or remove.
    ///   - completionHandler: Called once on the ``completionQueue`` with the response, the file's
    ///     final URL and the error, if any. A failure after part of the body arrived from a server
    ///     that allows resuming carries ``CourierError/resumeData``.
    /// - Returns: The task; call ``SessionTask/resume()`` to start it.
    public func downloadTask(
        with request: Request,
        progress: (@Sendable (Progress) -> Void)? = nil,
        destination: DownloadDestination? = nil,
        completionHandler: (@Sendable (HTTPResponse?, URL?, CourierError?) -> Void)?
    ) -> DownloadTask {
        let completion: TaskCompletion = completionHandler.map { .download($0) } ?? .none
        return self.makeTask(
            DownloadTask.self, request: request, completion: completion, uploadProgress: nil, downloadProgress: progress,
            sink: DownloadPlan(destination: destination))
    }

    /// Makes a download task that continues an earlier one, suspended (AFNetworking's
    /// `downloadTaskWithResumeData:progress:destination:completionHandler:`).
    ///
    /// It asks for the rest with `Range` and `If-Range`. A 206 that runs from where the partial
    /// file ends to the end of the resource is appended to it (a body that does not fill that
    /// range, ending short of it or running past it, fails with
    /// ``CourierError/Code/invalidResponse``; the partial file keeps the bytes within the range,
    /// and the error carries resume data for them, as when the connection breaks); a 200 (the server ignored the
    /// range, or the resource changed) rewrites the file from the start; a 416 whose
    /// `Content-Range: bytes */N` names exactly the bytes kept, or that names no length (the
    /// server matched the `If-Range` validator, so nothing lies past the bytes kept) when the
    /// resume data records no other whole length, completes the download with the partial file
    /// (it was whole; the response is that 416); any other 206 (its `Content-Range` starts or
    /// ends elsewhere) fails with ``CourierError/Code/invalidResponse`` and keeps the partial file
    /// as it was, the error carrying the resume data the task began with; any other 416, or a 206
    /// that names another strong `ETag` (or `Last-Modified`, when `If-Range` sent a date) than
    /// `If-Range` sent (the rest of another version, from a server or cache that ignored
    /// `If-Range`), fails with ``CourierError/Code/invalidResponse`` and removes the partial file. Any other answer (an
    /// error page) goes to a file of its own and leaves the partial file as it was. When the partial file
    /// is gone, or is not a file Courier made in this session's ``SessionConfiguration/downloadDirectory``
    /// or the system's temporary directory (resume data is bytes from anywhere: Courier will not
    /// append to, move or remove another file it names), the download starts over. So it does when
    /// the partial file is shorter than the resume data records; that file is then removed when
    /// the download ends, whatever its outcome.
    ///
    /// A continuation that cannot write the partial file (a full disk) fails with
    /// ``CourierError/Code/fileSystemFailure`` and keeps the file, unlike a download that does not
    /// continue one: it holds the bytes kept and those written after them before the failure
    /// (cut back to the last write that reached the disk), and the error's
    /// ``CourierError/resumeData`` names them, to continue from once there is room. A 200 (whose
    /// body takes the partial file's place only once written) that cannot be written whole
    /// leaves the partial file as it was, and the error carries the resume data the task began with.
    ///
    /// - Parameters:
    ///   - resumeData: ``ResumeData/data`` from an earlier download.
    ///   - progress: Called on an engine thread as body bytes arrive.
    ///   - destination: Where the file goes; nil leaves it in the download directory.
    ///   - completionHandler: Called once on the ``completionQueue`` with the response, the file's
    ///     final URL and the error, if any.
    /// - Throws: ``CourierError/Code/invalidRequest`` when `resumeData` is not Courier resume data.
    public func downloadTask(
        withResumeData resumeData: Data,
        progress: (@Sendable (Progress) -> Void)? = nil,
        destination: DownloadDestination? = nil,
        completionHandler: (@Sendable (HTTPResponse?, URL?, CourierError?) -> Void)?
    ) throws(CourierError) -> DownloadTask {
        let resume = try ResumeData(data: resumeData)
        return self.downloadTask(withResumeData: resume, progress: progress, destination: destination, completionHandler: completionHandler)
    }

    /// Makes a download task that continues an earlier one, suspended; see
    /// ``downloadTask(withResumeData:progress:destination:completionHandler:)-(Data,_,_,_)``.
    public func downloadTask(
        withResumeData resumeData: ResumeData,
        progress: (@Sendable (Progress) -> Void)? = nil,
        destination: DownloadDestination? = nil,
        completionHandler: (@Sendable (HTTPResponse?, URL?, CourierError?) -> Void)?
    ) -> DownloadTask {
        let (request, plan) = resumeData.continuation(to: destination, downloadDirectory: self.configuration.downloadDirectory)
        let completion: TaskCompletion = completionHandler.map { .download($0) } ?? .none
        return self.makeTask(
            DownloadTask.self, request: request, completion: completion, uploadProgress: nil, downloadProgress: progress, sink: plan)
    }

    /// Downloads `request`'s body to a file and returns where it is.
    ///
    /// Cancelling the calling task cancels the download (unless ``Request/cancelsWithCallingTask``
    /// is `false`) and removes its partial file. A download cut short by the connection (closed,
    /// failed, timed out) fails with ``CourierError/resumeData`` when it can be continued; to
    /// keep a cancelled one, make a ``DownloadTask`` and cancel it with
    /// ``DownloadTask/cancel(byProducingResumeData:)``.
    /// - Throws: ``CourierError``: a transport failure, a file that could not be written or moved.
    public func download(
        _ request: Request,
        to destination: DownloadDestination? = nil,
        progress: (@Sendable (Progress) -> Void)? = nil
    ) async throws(CourierError) -> DownloadResponse {
        let outcome = await self.run(
            DownloadTask.self, request: request, uploadProgress: nil, downloadProgress: progress,
            sink: DownloadPlan(destination: destination))
        return try self.finishDownload(outcome)
    }

    /// Continues a download from its resume data; see
    /// ``downloadTask(withResumeData:progress:destination:completionHandler:)-(Data,_,_,_)``.
    public func download(
        resumingFrom resumeData: ResumeData,
        to destination: DownloadDestination? = nil,
        progress: (@Sendable (Progress) -> Void)? = nil
    ) async throws(CourierError) -> DownloadResponse {
        let (request, plan) = resumeData.continuation(to: destination, downloadDirectory: self.configuration.downloadDirectory)
        let outcome = await self.run(
            DownloadTask.self, request: request, uploadProgress: nil, downloadProgress: progress, sink: plan)
        return try self.finishDownload(outcome)
    }

    /// Runs the completion hook, posts the notification and returns the file or the error, then
    /// ends the delivery ``run(_:request:uploadProgress:downloadProgress:sink:prepare:)`` counted.
    private func finishDownload(_ outcome: borrowing TaskOutcome) throws(CourierError) -> DownloadResponse {
        defer { self.endDelivery() }
        let task = outcome.task
        task.delegate.hookTable?.takeDidComplete()?(self, task, outcome.error)
        self.postDidComplete(task, outcome: outcome, serializer: nil, object: nil, error: outcome.error)
        if let error = outcome.error { throw error.adding(metrics: outcome.metrics) }
        guard let response = outcome.response, let fileURL = outcome.fileURL else {
            throw CourierError(.internalInconsistency, "\(outcome.request.summary): a download ended with no file and no error", request: outcome.request)
        }
        return DownloadResponse(request: outcome.request, response: response, fileURL: fileURL, metrics: outcome.metrics)
    }

    /// Calls a finished download's handler on the completion queue inside the completion group,
    /// then posts the notification. Its delivery was counted before the task was settled
    /// (``beginDelivery()``).
    func completeDownload(
        _ outcome: TaskOutcome,
        handler: (@Sendable (HTTPResponse?, URL?, CourierError?) -> Void)?
    ) {
        let task = outcome.task
        let (queue, group) = self.settings.withLockedValue { ($0.completionQueue ?? Self.mainQueue, $0.completionGroup) }
        group?.enter()
        task.delegate.hookTable?.takeDidComplete()?(self, task, outcome.error)
        queue.async {
            handler?(outcome.response, outcome.fileURL, outcome.error)
            self.postDidComplete(task, outcome: outcome, serializer: nil, object: nil, error: outcome.error)
            group?.leave()
            self.endDelivery()
        }
    }
}
