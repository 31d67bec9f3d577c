import Dispatch
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers

/// One request as an `Operation` (AFNetworking 2.x's `AFHTTPRequestOperation`): add it to an
/// `OperationQueue` to bound how many run at once, make operations depend on each other, or batch
/// them with ``batch(of:completionQueue:progress:completion:)``.
///
/// ```swift
/// let operation = HTTPRequestOperation(request: Request(url: URL(string: "https://example.com/feed.json")!))
/// operation.responseSerializer = JSONResponseSerializer()
/// operation.setCompletionBlockWithSuccess({ operation, object in
///     print(object ?? "")
/// }, failure: { operation, error in
///     print(error.message)
/// })
/// queue.addOperation(operation)
/// ```
///
/// The operation runs its request as a ``DataTask`` of its ``sessionManager`` (the process-wide
/// ``HTTPSessionManager/shared`` unless given one), serializes the body with
/// ``responseSerializer`` off the engine's threads, then finishes. It is asynchronous: it occupies
/// its queue's slot from `start()` until the response is serialized.
///
/// - A cancelled operation ends with a ``CourierError/Code/cancelled`` error (and `failure` is
///   called), whether it was cancelled before it started or while it ran.
/// - ``pause()`` suspends the task (the connection stops being read); the operation keeps its
///   slot in the queue until ``resume()`` lets it finish. Paused before it started, it is not
///   ready (`isReady`), so a queue leaves it, and its request, until ``resume()``, as
///   AFNetworking's. Nothing is sent again: AFNetworking 2.x
///   cancels the connection instead and, on resume, asks again with a `Range` header from the
///   bytes it had. As there, a cancelled or finished operation is not paused, and a paused one
///   that is cancelled finishes (no longer paused). Unlike there, ``resume()`` does not start an
///   operation paused before it started: a queue, or `start()`, does.
/// - The operation has no credential, security policy, authentication-challenge or
///   cache-response setting of its own (its ``sessionManager``'s credentials, security policy
///   and hooks apply, and the request's ``Request/redirector`` and ``Request/responseCacher``),
///   no input or output stream, and no background-task expiration handler (Linux has none).
public final class HTTPRequestOperation: Operation, @unchecked Sendable {
    /// How the bytes of a transfer have moved: this step's bytes, the total so far, the total
    /// expected (`-1` when unknown), as AFNetworking's progress blocks report them.
    public typealias TransferProgress = @Sendable (_ bytes: Int64, _ totalBytes: Int64, _ totalBytesExpected: Int64) -> Void
    /// Called with the operation and the serialized response object.
    public typealias Success = @Sendable (HTTPRequestOperation, (any Sendable)?) -> Void
    /// Called with the operation and the error.
    public typealias Failure = @Sendable (HTTPRequestOperation, CourierError) -> Void

    private struct State {
        var lifecycle = OperationLifecycle.ready
        /// `start()` ran (a second call does nothing).
        var isStarted = false
        var task: DataTask?
        /// `launch()` is making the task (it is stored, then resumed, outside the lock).
        var isLaunching = false
        /// `finish(with:)` ran: the operation finishes once, whichever of its ends comes first.
        var isFinishing = false
        var isPaused = false
        var responseSerializer: any ResponseSerializer = HTTPResponseSerializer()
        var completionQueue: DispatchQueue?
        var completionGroup: DispatchGroup?
        var uploadProgress: TransferProgress?
        var downloadProgress: TransferProgress?
        var lastUploadCount: Int64 = 0
        var lastDownloadCount: Int64 = 0
        var response: HTTPResponse?
        var responseData: Data?
        var responseObject: (any Sendable)?
        var error: CourierError?
    }

    /// The request the operation sends.
    public let request: Request
    /// The manager whose engine carries the request (its hooks and notifications apply).
    public let sessionManager: SessionManager
    private let state = NIOLockedValueBox(State())

    /// An operation for `request`, run by `sessionManager`'s engine.
    /// - Parameters:
    ///   - request: The request to send.
    ///   - sessionManager: The manager that makes the operation's task; the process-wide
    ///     ``HTTPSessionManager/shared`` by default.
    public init(request: Request, sessionManager: SessionManager = HTTPSessionManager.shared) {
        self.request = request
        self.sessionManager = sessionManager
        super.init()
    }

    // MARK: Settings

    /// What turns the response into ``responseObject``; ``HTTPResponseSerializer`` (status
    /// 200–299, body as `Data`) by default. Set it before the operation starts: one set after the
    /// operation finished is not used (``responseObject`` was made then; AFNetworking 2.x
    /// serializes the body again with it).
    public var responseSerializer: any ResponseSerializer {
        get { self.state.withLockedValue { $0.responseSerializer } }
        set { self.state.withLockedValue { $0.responseSerializer = newValue } }
    }

    /// Where `success`, `failure`, the progress blocks and a plain `completionBlock` run; nil (the
    /// default) means the main queue.
    public var completionQueue: DispatchQueue? {
        get { self.state.withLockedValue { $0.completionQueue } }
        set { self.state.withLockedValue { $0.completionQueue = newValue } }
    }

    /// A group that `success` or `failure` (or a plain `completionBlock`) runs in, to be notified
    /// when they have run.
    public var completionGroup: DispatchGroup? {
        get { self.state.withLockedValue { $0.completionGroup } }
        set { self.state.withLockedValue { $0.completionGroup = newValue } }
    }

    /// Reports the request body going out, on the ``completionQueue``.
    public func setUploadProgressBlock(_ block: TransferProgress?) {
        self.state.withLockedValue { $0.uploadProgress = block }
    }

    /// Reports the response body coming in, on the ``completionQueue``.
    public func setDownloadProgressBlock(_ block: TransferProgress?) {
        self.state.withLockedValue { $0.downloadProgress = block }
    }

    /// Runs once the operation has finished, as AFNetworking 2.x's: on the ``completionQueue``
    /// (the main queue when nil), in the ``completionGroup``, not on a Foundation thread.
    public override var completionBlock: (@Sendable () -> Void)? {
        get { super.completionBlock }
        set {
            guard let block = newValue else {
                super.completionBlock = nil
                return
            }
            // Weakly: Foundation holds the operation while it runs its completion block, and
            // an operation that never runs is not kept alive by a block that holds it.
            super.completionBlock = { [weak self] in
                guard let self else { return }
                let (queue, group) = self.state.withLockedValue {
                    ($0.completionQueue ?? SessionManager.mainQueue, $0.completionGroup)
                }
                queue.async(group: group) { block() }
            }
        }
    }

    /// Sets the block Foundation runs when the operation finishes as it is, on Foundation's
    /// thread: for blocks that queue their own work on the ``completionQueue`` (success and
    /// failure, a batch's count).
    func setCompletionBlockUndispatched(_ block: (@Sendable () -> Void)?) {
        super.completionBlock = block
    }

    /// Sets the operation's `completionBlock` to call `success` or `failure` on the
    /// ``completionQueue`` (in the ``completionGroup``) once the operation has finished.
    ///
    /// The block holds the operation (Foundation on Linux may run it after the queue let go of the
    /// operation) and is dropped once it ran, so the operation does not keep itself alive after
    /// that; an operation that never runs keeps itself until its completion block is replaced.
    public func setCompletionBlockWithSuccess(_ success: Success?, failure: Failure?) {
        // It queues `success` or `failure` on the completion queue itself.
        self.setCompletionBlockUndispatched({ [self] in
            let (queue, group, error, object) = self.state.withLockedValue {
                ($0.completionQueue ?? SessionManager.mainQueue, $0.completionGroup, $0.error, $0.responseObject)
            }
            group?.enter()
            queue.async {
                if let error {
                    failure?(self, error)
                } else {
                    success?(self, object)
                }
                group?.leave()
            }
            self.completionBlock = nil
        })
    }

    // MARK: Results

    /// The task running the request, once the operation started.
    public var task: DataTask? { self.state.withLockedValue { $0.task } }
    /// The response head, once it arrived (in progress blocks too, as AFNetworking's idiom reads
    /// its expected length there).
    public var response: HTTPResponse? {
        let (response, task) = self.state.withLockedValue { ($0.response, $0.task) }
        return response ?? task?.response
    }
    /// The whole response body, once the operation finished.
    public var responseData: Data? { self.state.withLockedValue { $0.responseData } }
    /// The body as text, decoded as ``StringResponseSerializer`` decodes it: in the encoding its
    /// byte-order mark or the response's charset names, UTF-8 otherwise (windows-1252, and the
    /// US-ASCII and ISO-8859-1 labels read as it, as the WHATWG standard decodes it: every byte is
    /// a character);
    /// nil when the bytes are not valid text in that encoding.
    public var responseString: String? {
        let (data, response) = self.state.withLockedValue { ($0.responseData, $0.response) }
        guard let data else { return nil }
        return StringResponseSerializer().decodedText(data, response: response).text
    }
    /// What ``responseSerializer`` made of the response, once the operation finished: with a
    /// failure too when the serializer read the body (the default ``HTTPResponseSerializer``
    /// returns it whatever it refused; JSON and the other parsers, under a status they do not
    /// accept, a body they could parse: an API's error message), as AFNetworking 2.x's failure
    /// blocks read it.
    public var responseObject: (any Sendable)? { self.state.withLockedValue { $0.responseObject } }
    /// Why the operation failed, once it finished: the transfer's error or the serializer's.
    public var error: CourierError? { self.state.withLockedValue { $0.error } }

    // MARK: Operation

    public override var isAsynchronous: Bool { true }
    public override var isExecuting: Bool { self.state.withLockedValue { $0.lifecycle == .executing } }
    public override var isFinished: Bool { self.state.withLockedValue { $0.lifecycle == .finished } }
    /// As AFNetworking's: an operation paused before it started is not ready, so that a queue
    /// leaves it (and its slot) until ``resume()``; a cancelled one is, to finish.
    public override var isReady: Bool {
        let held = self.state.withLockedValue { $0.isPaused && !$0.isStarted }
        return super.isReady && (!held || self.isCancelled)
    }

    public override func start() {
        // Started by hand before its dependencies finished, it does nothing (AFNetworking's
        // `start` asks `isReady`); a queue starts it only once they have.
        guard super.isReady || self.isCancelled else { return }
        let first = self.state.withLockedValue { state -> Bool in
            guard state.lifecycle == .ready, !state.isStarted else { return false }
            state.isStarted = true
            return true
        }
        guard first else { return }
        if self.isCancelled {
            self.finish(with: CourierError(.cancelled, "\(self.request.summary): the operation was cancelled before it started", request: self.request))
            return
        }
        self.changeLifecycle(to: .executing)
        self.launch()
    }

    /// Makes and resumes the task, unless the operation is paused (``resume()`` launches it
    /// then: nothing is sent while paused), or the task exists. A cancelled operation gets no
    /// task: it finishes cancelled here.
    private func launch() {
        enum Step { case nothing, make, finishCancelled }
        let step = self.state.withLockedValue { state -> Step in
            guard state.lifecycle == .executing, state.task == nil, !state.isLaunching else { return .nothing }
            // A `cancel()` that came while `start()` ran, after its check and before the
            // operation was executing, found nothing to end: no task will end the operation, so
            // it ends here (once: `cancel()` may end it too, when it saw it executing).
            if self.isCancelled { return .finishCancelled }
            guard !state.isPaused else { return .nothing }
            state.isLaunching = true
            return .make
        }
        switch step {
        case .nothing:
            return
        case .finishCancelled:
            self.finish(with: CourierError(.cancelled, "\(self.request.summary): the operation was cancelled before its request was sent", request: self.request))
            return
        case .make:
            break
        }
        let task = self.sessionManager.makeTask(
            DataTask.self,
            request: self.request,
            completion: .outcome { [self] outcome in self.taskFinished(outcome) },
            uploadProgress: { [self] progress in self.report(progress, upload: true) },
            downloadProgress: { [self] progress in self.report(progress, upload: false) }
        )
        // The retriers that want a serializer's failures (Alamofire's) see this operation's, as
        // they see an `async` call's: the task checks the response before it ends.
        if task.delegate.interception.checksSerialization {
            let serializer = self.responseSerializer
            task.delegate.state.withLockedValue { $0.checkingSerializer = serializer }
        }
        self.state.withLockedValue { state in
            state.task = task
            state.isLaunching = false
        }
        task.resume()
        // A `pause()` while the task was being made or resumed found it not started (its suspend
        // does nothing then): suspended here. Suspending and resuming a task are idempotent, so
        // whichever side acts last leaves the task as `isPaused` says.
        if self.isPaused { task.suspend() }
        // A cancel that came while the task was being made finds no task: cancel it here.
        if self.isCancelled { task.cancel() }
    }

    public override func cancel() {
        super.cancel()
        // Executing with no task made or being made (paused after the queue started it, or
        // between `start()` and `launch()`): no task will end it. `launch()` ends it too when it
        // finds it cancelled; whichever comes second does nothing.
        let (task, endNow, paused) = self.state.withLockedValue { state in
            (state.task, state.lifecycle == .executing && state.task == nil && !state.isLaunching, state.isPaused)
        }
        task?.cancel()
        if endNow {
            let when = paused ? "while paused, before its request was sent" : "before its request was sent"
            self.finish(with: CourierError(.cancelled, "\(self.request.summary): the operation was cancelled \(when)", request: self.request))
        }
    }

    /// Stops reading the response (the task is suspended); the operation keeps its place. Paused
    /// before it started, it is not ready and sends nothing until ``resume()``. Does nothing to an
    /// operation that was cancelled or has finished.
    public func pause() {
        guard !self.isCancelled else { return }
        let (changed, beforeStart) = self.state.withLockedValue { state -> (Bool, Bool) in
            guard state.lifecycle != .finished, !state.isPaused else { return (false, false) }
            return (true, !state.isStarted)
        }
        guard changed else { return }
        if beforeStart { self.willChangeValue(forKey: "isReady") }
        // The task is read in the transaction that sets the flag: a `launch()` that stores it
        // later finds the flag set and suspends it itself. The flag is set only if the operation
        // has not finished since the check above, in the same transaction: the end clears it,
        // and a flag set after that would leave a finished operation paused.
        let (paused, task) = self.state.withLockedValue { state -> (Bool, DataTask?) in
            guard state.lifecycle != .finished else { return (false, nil) }
            state.isPaused = true
            return (true, state.task)
        }
        if beforeStart { self.didChangeValue(forKey: "isReady") }
        guard paused, let task else { return }
        task.suspend()
        // A `resume()` between the two found the task running: resumed again here.
        if !self.isPaused { task.resume() }
    }

    /// Lets a paused operation go on: one paused after it started but before its task was made
    /// sends its request now. One paused before it started becomes ready again, and is sent once
    /// its queue (or a call to `start()`) starts it: this does not start it.
    public func resume() {
        let (changed, beforeStart) = self.state.withLockedValue { state -> (Bool, Bool) in
            guard state.isPaused else { return (false, false) }
            return (true, !state.isStarted)
        }
        guard changed else { return }
        if beforeStart { self.willChangeValue(forKey: "isReady") }
        let task = self.state.withLockedValue { state -> DataTask? in
            state.isPaused = false
            return state.task
        }
        if beforeStart { self.didChangeValue(forKey: "isReady") }
        guard let task else {
            self.launch()
            return
        }
        task.resume()
        // A `pause()` between the two found the task suspended: suspended again here.
        if self.isPaused { task.suspend() }
    }

    /// Whether ``pause()`` was called and ``resume()`` not since; false once the operation finished.
    public var isPaused: Bool { self.state.withLockedValue { $0.isPaused } }

    // MARK: Internals

    private func report(_ progress: Progress, upload: Bool) {
        let completed = progress.completedUnitCount
        let total = progress.totalUnitCount
        let delivery = self.state.withLockedValue { state -> (TransferProgress, Int64, DispatchQueue)? in
            let block = upload ? state.uploadProgress : state.downloadProgress
            let last = upload ? state.lastUploadCount : state.lastDownloadCount
            guard let block, completed > last else { return nil }
            if upload { state.lastUploadCount = completed } else { state.lastDownloadCount = completed }
            return (block, completed - last, state.completionQueue ?? SessionManager.mainQueue)
        }
        guard let (block, step, queue) = delivery else { return }
        queue.async { block(step, completed, total > 0 ? total : -1) }
    }

    /// The task's raw outcome: serialize it off the engine's threads, then finish.
    private func taskFinished(_ outcome: TaskOutcome) {
        SessionManager.processingQueue.async { [self] in
            let serializer = self.responseSerializer
            var (object, error): ((any Sendable)?, CourierError?) = (nil, outcome.error)
            if let task = self.task {
                (object, error) = self.sessionManager.serializeRunningHook(task, outcome: outcome, serializer: serializer)
                self.sessionManager.postDidComplete(task, outcome: outcome, serializer: serializer, object: object, error: error)
            }
            self.state.withLockedValue { state in
                state.response = outcome.response
                state.responseData = outcome.data
                state.responseObject = object
                state.error = error
            }
            self.finish(with: error)
            // The delivery the task's end counted (``TaskCompletion/outcome(_:)``).
            self.sessionManager.endDelivery()
        }
    }

    /// Ends the operation with `error` (nil: success), once: a later call (a `cancel()` and a
    /// `launch()` that both found a cancelled operation with no task) does nothing.
    private func finish(with error: CourierError?) {
        let first = self.state.withLockedValue { state -> Bool in
            guard !state.isFinishing else { return false }
            state.isFinishing = true
            if let error { state.error = state.error ?? error }
            return true
        }
        guard first else { return }
        self.changeLifecycle(to: .finished)
    }

    /// Moves the lifecycle on, telling observers (the queue) through key-value notifications.
    private func changeLifecycle(to next: OperationLifecycle) {
        let previous = self.state.withLockedValue { $0.lifecycle }
        guard previous != next, previous != .finished else { return }
        let keys = OperationLifecycle.changedKeys(from: previous, to: next)
        for key in keys { self.willChangeValue(forKey: key) }
        self.state.withLockedValue { state in
            state.lifecycle = next
            // A finished operation is not paused (a paused one ends when it is cancelled).
            if next == .finished { state.isPaused = false }
        }
        for key in keys.reversed() { self.didChangeValue(forKey: key) }
    }
}

/// Where an ``HTTPRequestOperation`` is in its life.
enum OperationLifecycle: Sendable, Hashable {
    case ready, executing, finished

    /// The key paths whose values change between two states, as `Operation` observers know them.
    static func changedKeys(from previous: OperationLifecycle, to next: OperationLifecycle) -> [String] {
        var keys: [String] = []
        if (previous == .executing) != (next == .executing) { keys.append("isExecuting") }
        if (previous == .finished) != (next == .finished) { keys.append("isFinished") }
        return keys
    }
}
