import Foundation
import HTTPTypes
import NIOCore
import Synchronization

/// Everything about one task that changes, guarded by its delegate's lock.
struct TaskState {
    /// Where the task is in its life: the one authority on its phase, attempt and exchange.
    var machine = TaskMachine()
    #if DEBUG
    /// Debug builds only: the transactions taken on the task's lock so far (counted by the task
    /// state's own `Mutex.withLockedValue`), for the tests that pin how many an event takes.
    var lockTransactions = 0
    #endif
    /// Counts the calls that applied a pause-or-read wish to the exchange
    /// (``TaskDelegate/applyReceiveWish()``): a call that sees a newer number applies again.
    var receiveWishes = 0
    var currentRequest: Request
    /// The request this attempt began with (adapted), kept when its first redirect replaces
    /// ``currentRequest`` (nil until then: most attempts are never redirected): what a retry
    /// sends again, for ``FailedAttempt/initialRequest``.
    var attemptRequest: Request?
    var response: HTTPResponse?
    /// ``response``'s status code, 0 without one: read without making an `HTTPResponse.Status`
    /// (which copies the status field and the reason phrase) each time it is asked.
    var responseStatus = 0
    var responseURL: URL?
    var error: CourierError?
    var taskDescription: String?
    /// How far the transfer got both ways, and who hears of it.
    var progress: TransferProgress
    /// The body gathered so far; handed to the serializer and dropped at completion.
    var body: ByteBuffer?
    /// The task object while nobody has started it: the caller holds a task it has not resumed,
    /// and a task dropped unstarted is freed (its deinit takes it out of the registry).
    weak var unstartedTask: SessionTask?
    /// The task object, held from `resume()` until its completion has run (so that a caller may
    /// drop it), then released: a finished task is held by nothing of Courier's. A task an `async`
    /// call makes and resumes at once is held from its creation (``unstartedTask`` stays nil).
    var runningTask: SessionTask?
    /// The manager that made the task, held from the task's creation until it completes (or is
    /// dropped unstarted): a running task keeps its manager, and so its engine, alive.
    var owner: SessionManager?
    /// How the task reports its end; taken (and so released, with whatever its closures hold)
    /// when the task completes.
    var completion: TaskCompletion
    /// The end of a task an `async` caller waits on, from the task's end until the caller takes
    /// it (``TaskDelegate/takeAwaitedOutcome()``).
    var awaitedOutcome: TaskOutcome?
    /// The `async` caller waiting for the task's end (``TaskCompletion/awaiting``), until it is
    /// resumed.
    var awaitingCaller: UnsafeContinuation<Void, Never>?
    /// What the cookie store and the cache keep between hops.
    var hop = HopState()
    /// The reasons of the retries so far, oldest first.
    var retryReasons: [RetryReason] = []
    /// The serializer of an `async` call whose retriers want its failures
    /// (``TaskInterception/checksSerialization``); a completion handler's is in ``completion``.
    var checkingSerializer: (any ResponseSerializer)?
    /// What that serializer made of the current attempt's response, when it checked it: the
    /// caller's serialization takes it instead of serializing again.
    var checked: (object: (any Sendable)?, error: CourierError?)?
    /// Whether the current attempt's `Authorization` field is the session's own
    /// (``FailedAttempt/carriesSessionAuthorization``).
    var carriesSessionAuthorization = false
    /// The task's timings, gathered when the session has monitors.
    var metrics: TaskMetricsRecorder?
    /// The metrics of the finished task (``SessionTask/metrics``).
    var finishedMetrics: TaskMetrics?
    /// The protocol the latest final response head came over (``SessionTask/networkProtocolName``).
    var networkProtocolName: String?
    /// The trailer fields that ended the current response, if it had any (``SessionTask/responseTrailers``).
    var responseTrailers: HTTPFields?
    /// The task's spans, when the session has a tracer.
    var tracing = TaskTracing()

    /// Why receiving stopped, when it was Courier's choice (a body over the maximum size, an
    /// unusable 206, a write that failed): the task ends with this rather than the engine's error,
    /// even when the exchange had already finished on its own.
    var bodyFailure: CourierError?
    /// A download task's file and what its answer said about resuming it (empty for other tasks).
    var download = DownloadState()

    /// Records a final response head and its status code (``responseStatus``, kept beside the
    /// head here only) and what its body will hold: `received` bytes already (a resumed
    /// download's), `expected` in all (-1 when unknown); when `holding`, its progress is held
    /// back until the attempt is final (``TransferProgress/held``). Returns the progress
    /// snapshots owed to `progressUpdates` consumers.
    mutating func recordResponse(
        _ response: HTTPResponse, status: Int, url: URL, received: Int64 = 0, expected: Int64, holding: Bool
    ) -> [ProgressDelivery] {
        self.responseStatus = status
        self.response = response
        self.responseURL = url
        self.responseTrailers = nil
        return self.progress.responseArrived(url: url, received: received, expected: expected, holding: holding)
    }

    /// Counts body bytes received and moves the download progress, making its object first when
    /// the caller's progress closure wants one. Returns the progress snapshots owed to
    /// `progressUpdates` consumers.
    mutating func recordReceived(_ bytes: Int64) -> [ProgressDelivery] {
        self.makeDownloadObjectIfWanted()
        return self.progress.received(bytes)
    }

    /// Counts body bytes as ``recordReceived(_:)`` does, or holds them back; nil when held (there
    /// is nothing to report).
    mutating func recordReceivedOrHold(_ bytes: Int64) -> [ProgressDelivery]? {
        if self.progress.held == nil { self.makeDownloadObjectIfWanted() }
        return self.progress.receivedOrHeld(bytes)
    }

    /// The download object, made for the caller's closure when it wants one.
    private mutating func makeDownloadObjectIfWanted() {
        if self.progress.wantsDownloadObject { _ = self.progressObject(.download) }
    }

    /// The upload object, made for the caller's closure when it wants one.
    mutating func makeUploadObjectIfWanted() {
        if self.progress.wantsUploadObject { _ = self.progressObject(.upload) }
    }

    /// The progress object of `kind` (``SessionTask``'s `uploadProgress` and `downloadProgress`,
    /// the one a progress closure is handed), made at the current counts, with the task it
    /// controls, when there is none yet.
    mutating func progressObject(_ kind: TaskDelegate.ProgressKind) -> Progress {
        switch kind {
        case .upload:
            if let object = self.progress.uploadObject { return object }
            let object = Self.makeProgress(
                total: self.progress.countOfBytesExpectedToSend, completed: self.progress.countOfBytesSent, of: self.task)
            self.progress.uploadObject = object
            return object
        case .download:
            if let object = self.progress.downloadObject { return object }
            let object = Self.makeProgress(
                total: self.progress.countOfBytesExpectedToReceive, completed: self.progress.countOfBytesReceived, of: self.task)
            self.progress.downloadObject = object
            return object
        }
    }

    /// The attempt whose progress was held back is the task's last: its progress is reported now.
    mutating func releaseHeldProgress() -> (deliveries: [ProgressDelivery], bytes: Int64)? {
        if self.progress.held != nil { self.makeDownloadObjectIfWanted() }
        return self.progress.releaseHeld()
    }

    /// A task's progress object, which controls `task` as AFNetworking's (and URLSession's
    /// `task.progress`) do: cancelling it cancels the task, pausing it suspends the task, resuming
    /// it resumes the task.
    static func makeProgress(total: Int64, completed: Int64, of task: SessionTask?) -> Progress {
        let progress = Progress(parent: nil, userInfo: nil)
        progress.totalUnitCount = total
        progress.completedUnitCount = completed
        if let task {
            progress.isCancellable = true
            progress.isPausable = true
            progress.cancellationHandler = { [weak task] in task?.cancel() }
            progress.pausingHandler = { [weak task] in task?.suspend() }
            progress.resumingHandler = { [weak task] in task?.resume() }
        }
        return progress
    }

    /// How many of a chunk's `bytes`, just counted in ``TransferProgress/countOfBytesReceived``, lie within the
    /// range a continuation's 206 named: all of them for any other answer. A body that runs past
    /// the range's end is not the range it names: the bytes past it are not the file's, and the
    /// task fails with ``CourierError/Code/invalidResponse`` (as ``bodyFailure``, unless it had
    /// failed already).
    mutating func bytesWithinContinuedRange(_ bytes: Int64) -> Int64 {
        // The count includes the bytes kept (at least one): less one, it is the offset of the
        // last byte counted, past the range once it is over `last`.
        guard let last = self.download.continuedRangeLast, self.progress.countOfBytesReceived - 1 > last else { return bytes }
        let past = min(bytes, self.progress.countOfBytesReceived - 1 - last)
        self.failContinuedRange("runs past byte \(last)")
        return bytes - past
    }

    /// At the end of a continuation's 206 whose exchange finished without an error: the failure
    /// when its body ended short of the last byte its `Content-Range` named (a `Content-Length`
    /// that disagrees with it), recorded as ``bodyFailure``; nil when it filled it, or for any
    /// other answer.
    mutating func continuedRangeShortfall() -> CourierError? {
        guard let last = self.download.continuedRangeLast, self.progress.countOfBytesReceived <= last else { return nil }
        self.failContinuedRange("ends at byte \(self.progress.countOfBytesReceived - 1), not \(last)")
        return self.bodyFailure
    }

    private mutating func failContinuedRange(_ how: String) {
        self.download.bodyMissedRange = true
        guard self.bodyFailure == nil else { return }
        let range = self.response?.headerFields.value(of: .contentRange) ?? "(none)"
        self.bodyFailure = CourierError(
            .invalidResponse, "\(self.currentRequest.summary): the body of the 206 with Content-Range \(range) \(how)",
            request: self.currentRequest, response: self.response)
    }

    /// The task object, while anyone holds it.
    ///
    /// A `mutating get` and no `??`: the state holds a weak reference, so it is not loadable, and
    /// both a plain getter and `??`'s autoclosure made the compiler copy the whole state (every
    /// field retained, then released) on each read under the lock, about 2 % of a request's client
    /// CPU. Reached through the lock's `inout`, this reads the two fields in place.
    var task: SessionTask? {
        mutating get {
            if let running = self.runningTask { return running }
            return self.unstartedTask
        }
    }

    init(
        request: Request,
        owner: SessionManager,
        completion: TaskCompletion,
        collectsMetrics: Bool,
        uploadProgressHandler: (@Sendable (Progress) -> Void)? = nil,
        downloadProgressHandler: (@Sendable (Progress) -> Void)? = nil
    ) {
        self.currentRequest = request
        self.owner = owner
        self.completion = completion
        self.progress = TransferProgress(
            expectedToSend: request.body.knownLength ?? -1, uploadHandler: uploadProgressHandler, downloadHandler: downloadProgressHandler)
        // Nothing is gathered (no clock read, no object made) when nothing would read it.
        if collectsMetrics { self.metrics = TaskMetricsRecorder() }
    }
}

/// A task's spans, when its session has a tracer (``TaskState/tracing``): empty otherwise.
struct TaskTracing {
    /// The task's span, when the session has a tracer.
    var span: TaskSpan?
    /// The span of the hop under way, and how many redirects the attempt followed.
    var hopSpan: (span: HopSpan, redirects: Int)?
    /// How many hops of the task got a span so far (each one's `http.request.resend_count` is
    /// the number before it).
    var tracedHops = 0
}

#if DEBUG
extension Mutex where Value == TaskState {
    /// Debug builds only: a task's state counts the transactions taken on its lock
    /// (``TaskState/lockTransactions``). Chosen over the general `withLockedValue` wherever the
    /// state is a task's, so that no other lock pays for it.
    @inline(__always)
    borrowing func withLockedValue<Result: Sendable, Failure: Error>(
        _ body: (inout TaskState) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try self.withLock { (value: inout sending TaskState) throws(Failure) -> sending Result in
            value.lockTransactions += 1
            return try body(&value)
        }
    }
}
#endif
