import Foundation
import NIOConcurrencyHelpers
import HTTPTypes

/// One request's life in a ``SessionManager`` (URLSession's `URLSessionTask`).
///
/// A task is made suspended; ``resume()`` starts it. It ends once, successfully or with an error,
/// and then reports to its completion handler (or to the `await`ing caller), the manager's hooks
/// and the ``Foundation/NSNotification/Name/taskDidComplete`` notification. Tasks are thread safe.
public class SessionTask: @unchecked Sendable, Hashable, CustomStringConvertible {
    // @unchecked: every mutable property lives in `delegate.state`, behind its lock.

    /// Where a task is in its life.
    public enum State: Int, Sendable, Hashable {
        /// Running: sending, waiting or receiving.
        case running = 0
        /// Made but not resumed, or suspended by ``SessionTask/suspend()``.
        case suspended = 1
        /// ``SessionTask/cancel()`` was called; completion follows.
        case canceling = 2
        /// Finished, successfully or not.
        case completed = 3
    }

    /// A number unique among the manager's tasks.
    public let taskIdentifier: Int
    /// The request as the task was made with it.
    public let originalRequest: Request
    let delegate: TaskDelegate

    required init(identifier: Int, request: Request, delegate: TaskDelegate) {
        self.taskIdentifier = identifier
        self.originalRequest = request
        self.delegate = delegate
        #if DEBUG
        LiveObjectCensus.born(self, .task, "\(type(of: self)) \(request.method.rawValue) \(request.url.absoluteString)")
        #endif
    }

    deinit {
        // A task nobody started and nobody holds is over: its manager forgets it.
        self.delegate.taskReleased()
        #if DEBUG
        LiveObjectCensus.died(self)
        #endif
    }

    /// The request in flight: the original one, or the last redirect's.
    public var currentRequest: Request { self.delegate.state.withLockedValue { $0.currentRequest } }
    /// The response head, once it arrived.
    public var response: HTTPResponse? { self.delegate.state.withLockedValue { $0.response } }
    /// Where the task is in its life.
    public var state: State { self.delegate.state.withLockedValue { $0.machine.publicState } }
    /// The error the task ended with, if it failed.
    public var error: CourierError? { self.delegate.state.withLockedValue { $0.error } }
    /// The task's timings and sizes, each attempt's and each hop's (URLSession's
    /// `URLSessionTaskMetrics`), once it completed; nil before.
    public var metrics: TaskMetrics? { self.delegate.state.withLockedValue { $0.finishedMetrics } }
    /// The protocol the response head came over, as ALPN names it (`"h2"`, `"http/1.1"`,
    /// `"http/1.0"`), as soon as the head arrived; nil before, for a response from the cache, or
    /// when the engine does not say. The same as the last transaction's
    /// ``TransactionMetrics/networkProtocolName`` in ``metrics``.
    public var networkProtocolName: String? { self.delegate.state.withLockedValue { $0.networkProtocolName } }
    /// The trailer fields that ended the response (HTTP/1.1 chunked trailers, HTTP/2 trailing
    /// HEADERS), once its body has been received; nil before, when the response had none, or for
    /// a response from the cache. Fields a server sends after the body (checksums, `Server-Timing`)
    /// cannot be in ``response``'s head; they are kept here as they came, never merged into it.
    public var responseTrailers: HTTPFields? { self.delegate.state.withLockedValue { $0.responseTrailers } }
    /// A description for people, kept with the task (URLSession's `taskDescription`).
    public var taskDescription: String? {
        get { self.delegate.state.withLockedValue { $0.taskDescription } }
        set { self.delegate.state.withLockedValue { $0.taskDescription = newValue } }
    }
    /// Body bytes sent so far.
    public var countOfBytesSent: Int64 { self.delegate.state.withLockedValue { $0.progress.countOfBytesSent } }
    /// Body bytes the request will send, or -1 when unknown: those of the body as the adapters
    /// left it (a file or stream body that ``RequestCompressor`` compresses as it is sent has no
    /// length beforehand); at a successful end, the bytes sent when it was unknown.
    public var countOfBytesExpectedToSend: Int64 { self.delegate.state.withLockedValue { $0.progress.countOfBytesExpectedToSend } }
    /// Body bytes received so far. For a download that continues resume data, the bytes this
    /// task received, as URLSession counts them, not those its partial file kept from before
    /// (``downloadProgress`` counts those too).
    public var countOfBytesReceived: Int64 {
        self.delegate.state.withLockedValue { $0.progress.countOfBytesReceived - $0.progress.keptBytesReceived }
    }
    /// Body bytes the response announced (`Content-Length`), or -1 when unknown, as it is for a
    /// content-coded body (its `Content-Length` counts the coded bytes, and the task receives
    /// the decoded ones); at the end, the bytes received. 0 for a response that has no body
    /// whatever its `Content-Length` says: the answer to a `HEAD` (whose `Content-Length` is the
    /// length a `GET` would get: read it from `HTTPResponse.expectedContentLength`), a 204 or a 304.
    /// For a download that continues resume data, the bytes of the rest its 206 announced, not
    /// the whole file's (``downloadProgress`` counts those); 0 for a 416 that found the partial
    /// file whole.
    public var countOfBytesExpectedToReceive: Int64 {
        self.delegate.state.withLockedValue { state in
            // The task's counts include the bytes kept, for the progress that counts them.
            let expected = state.progress.countOfBytesExpectedToReceive
            return expected < 0 ? expected : expected - state.progress.keptBytesReceived
        }
    }

    /// The upload's progress: total from the body's length, completed as bytes go out.
    ///
    /// It controls the task, as AFNetworking's and URLSession's `progress` do: `cancel()` on it
    /// cancels the task, `pause()` suspends it and `resume()` resumes it.
    public var uploadProgress: Progress { self.delegate.progress(.upload) }
    /// The download's progress: total from `Content-Length`, completed as bytes arrive. For a
    /// download that continues resume data, it counts the bytes its partial file kept from before
    /// (the whole file's length and the bytes of it on disk). It controls the task as
    /// ``uploadProgress`` does.
    public var downloadProgress: Progress { self.delegate.progress(.download) }

    /// Progress snapshots for `direction`, for `async` callers: the current one at once, then one
    /// per change (only the newest when the consumer is slower), never going backwards, the last
    /// one at 1.0 when the task succeeds; the sequence finishes after the task ends. Each call
    /// makes a new sequence; one whose consumer stops (drops it, or is cancelled) costs the task
    /// nothing from then on.
    ///
    /// ```swift
    /// for await snapshot in task.progressUpdates(for: .download) {
    ///     print("\(Int(snapshot.fractionCompleted * 100)) %")
    /// }
    /// ```
    public func progressUpdates(for direction: ProgressSnapshot.Direction) -> AsyncStream<ProgressSnapshot> {
        self.delegate.progressUpdates(for: direction)
    }

    /// Starts the task, or continues it after ``suspend()``.
    public func resume() { self.delegate.resume() }
    /// Pauses the task: a running transfer stops reading (the server is slowed by TCP flow
    /// control) until ``resume()``.
    public func suspend() { self.delegate.suspend() }
    /// Cancels the task; it completes with ``CourierError/Code/cancelled``.
    public func cancel() { self.delegate.cancel() }

    public static func == (lhs: SessionTask, rhs: SessionTask) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }

    public var description: String {
        "\(type(of: self))(\(self.taskIdentifier), \(self.originalRequest.summary), \(self.state))"
    }
}

/// A task whose response body is gathered in memory (URLSession's `URLSessionDataTask`).
public class DataTask: SessionTask, @unchecked Sendable {}

/// A data task that sends a body from memory, a file or a stream (URLSession's `URLSessionUploadTask`).
public final class UploadTask: DataTask, @unchecked Sendable {}

/// A task whose response body goes to a file (URLSession's `URLSessionDownloadTask`).
///
/// The body is written to a file in the session's ``SessionConfiguration/downloadDirectory`` (the
/// system's temporary directory by default) as it arrives, off the engine's
/// threads, with back-pressure: a slow disk slows the download rather than filling memory.
public final class DownloadTask: SessionTask, @unchecked Sendable {
    /// Cancels the download and hands over what it takes to continue it later.
    ///
    /// `completionHandler` gets the ``ResumeData`` when part of the body had arrived from a server
    /// that names a validator (a strong `ETag` or `Last-Modified`) and does not refuse ranges;
    /// else nil, and the partial file is removed. A task that continues resume data and had not
    /// changed its partial file yet (no answer had come, or it went to a file of its own) gets
    /// the resume data it began with. It is called once, before the task's own completion
    /// handler, on a thread of Courier's. On a task that has ended already (or that an earlier
    /// call is cancelling for resume data) it gets nil, also once on a thread of Courier's: never
    /// within this call.
    public func cancel(byProducingResumeData completionHandler: @escaping @Sendable (ResumeData?) -> Void) {
        let accepted = self.delegate.state.withLockedValue { state -> Bool in
            guard !state.machine.hasEnded, state.download.resumeDataHandler == nil else { return false }
            state.download.resumeDataHandler = completionHandler
            return true
        }
        guard accepted else {
            // As a running task's handler is: on a thread of Courier's, not the caller's (a
            // caller holding a lock the handler takes would deadlock). A queue's block, not a
            // `Task`: nothing to cancel, it only answers.
            SessionManager.processingQueue.async { completionHandler(nil) }
            return
        }
        self.cancel()
    }

    /// Cancels the download and returns what it takes to continue it later, or nil; see
    /// ``cancel(byProducingResumeData:)``.
    public func cancelProducingResumeData() async -> ResumeData? {
        await withCheckedContinuation { continuation in
            self.cancel { continuation.resume(returning: $0) }
        }
    }
}
