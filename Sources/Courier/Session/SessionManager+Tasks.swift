import Foundation
import NIOConcurrencyHelpers
import Synchronization
import HTTPTypes

extension SessionManager {
    /// Makes a data task, suspended (AFNetworking's
    /// `dataTaskWithRequest:uploadProgress:downloadProgress:completionHandler:`).
    ///
    /// - Parameters:
    ///   - request: The request; the configuration's additional headers are added where missing.
    ///   - uploadProgress: Called on an engine thread as body bytes go out.
    ///   - downloadProgress: Called on an engine thread as body bytes arrive.
    ///   - completionHandler: Called once on the ``completionQueue`` with the response, the object
    ///     the ``responseSerializer`` made of the body, and the error, if any. A transfer that
    ///     failed (cancelled, timed out, cut short) is not serialized: its object is nil, even
    ///     when a response arrived; a serializer's error may come with an object.
    /// - Returns: The task; call ``SessionTask/resume()`` to start it.
    public func dataTask(
        with request: Request,
        uploadProgress: (@Sendable (Progress) -> Void)? = nil,
        downloadProgress: (@Sendable (Progress) -> Void)? = nil,
        completionHandler: (@Sendable (HTTPResponse?, (any Sendable)?, CourierError?) -> Void)?
    ) -> DataTask {
        let completion: TaskCompletion = completionHandler.map { .handler(self.responseSerializer, .plain($0)) } ?? .none
        return self.makeTask(DataTask.self, request: request, completion: completion, uploadProgress: uploadProgress, downloadProgress: downloadProgress)
    }

    /// Makes an upload task sending `bodyData`, suspended (AFNetworking's
    /// `uploadTaskWithRequest:fromData:progress:completionHandler:`), with the trailer fields of
    /// `request`'s body (``RequestBody/trailers``), if any.
    public func uploadTask(
        with request: Request,
        fromData bodyData: Data,
        progress: (@Sendable (Progress) -> Void)? = nil,
        completionHandler: (@Sendable (HTTPResponse?, (any Sendable)?, CourierError?) -> Void)?
    ) -> UploadTask {
        var request = request
        request.body = .data(bodyData, trailers: request.body.trailers)
        let completion: TaskCompletion = completionHandler.map { .handler(self.responseSerializer, .plain($0)) } ?? .none
        return self.makeTask(UploadTask.self, request: request, completion: completion, uploadProgress: progress, downloadProgress: nil)
    }

    /// Makes an upload task sending the file at `fileURL` in chunks, suspended (AFNetworking's
    /// `uploadTaskWithRequest:fromFile:progress:completionHandler:`), with the trailer fields of
    /// `request`'s body (``RequestBody/trailers``), if any.
    public func uploadTask(
        with request: Request,
        fromFile fileURL: URL,
        progress: (@Sendable (Progress) -> Void)? = nil,
        completionHandler: (@Sendable (HTTPResponse?, (any Sendable)?, CourierError?) -> Void)?
    ) -> UploadTask {
        var request = request
        request.body = .file(fileURL, trailers: request.body.trailers)
        let completion: TaskCompletion = completionHandler.map { .handler(self.responseSerializer, .plain($0)) } ?? .none
        return self.makeTask(UploadTask.self, request: request, completion: completion, uploadProgress: progress, downloadProgress: nil)
    }

    /// Makes an upload task sending the body `request` carries, suspended (AFNetworking's
    /// `uploadTaskWithStreamedRequest:progress:completionHandler:`).
    ///
    /// Give the request a ``RequestBody/stream(_:length:trailers:)`` or
    /// ``RequestBody/replayableStream(length:trailers:_:)`` body: chunks go out as the sequence
    /// yields them, with back-pressure; a body of unknown length is sent chunked.
    public func uploadTask(
        withStreamedRequest request: Request,
        progress: (@Sendable (Progress) -> Void)? = nil,
        completionHandler: (@Sendable (HTTPResponse?, (any Sendable)?, CourierError?) -> Void)?
    ) -> UploadTask {
        let completion: TaskCompletion = completionHandler.map { .handler(self.responseSerializer, .plain($0)) } ?? .none
        return self.makeTask(UploadTask.self, request: request, completion: completion, uploadProgress: progress, downloadProgress: nil)
    }

    /// Makes a task of the given class and registers its delegate.
    ///
    /// - Parameter resumedAtOnce: Whether the caller resumes the task right away without handing
    ///   it to anyone first (an `async` call's task). Such a task is held from here; another is
    ///   held weakly until it is resumed, so that a task dropped unstarted ends. A weak reference
    ///   gives the task a side table (an allocation, and slower retains and releases all its life).
    func makeTask<Task: SessionTask>(
        _ kind: Task.Type,
        request: Request,
        completion: TaskCompletion,
        uploadProgress: (@Sendable (Progress) -> Void)?,
        downloadProgress: (@Sendable (Progress) -> Void)?,
        sink: any BodySink = MemoryBodySink(),
        resumedAtOnce: Bool = false
    ) -> Task {
        var request = request
        let additionalHeaders = self.configurationReference.value.httpAdditionalHeaders
        if !additionalHeaders.isEmpty {
            for field in additionalHeaders where !request.headerFields.contains(field.name) {
                request.headerFields.append(field)
            }
        }
        let identifier = self.lastTaskIdentifier.add(1, ordering: .relaxed).newValue
        let delegate = TaskDelegate(
            manager: self,
            identifier: identifier,
            request: request,
            completion: completion,
            uploadProgress: uploadProgress,
            downloadProgress: downloadProgress,
            sink: sink
        )
        let task = Task(identifier: identifier, request: request, delegate: delegate)
        delegate.state.withLockedValue { state in
            if resumedAtOnce { state.runningTask = task } else { state.unstartedTask = task }
        }
        self.registry.withLockedValue { $0.delegates[identifier] = delegate }
        delegate.interception.monitors?.emit { $0.taskDidCreate(task) }
        return task
    }

    /// Starts a resumed task's attempt (or a retried task's next one): adapting, then the engine;
    /// or fails it when the manager was invalidated.
    func start(_ delegate: TaskDelegate) {
        if self.invalidated.load(ordering: .acquiring) {
            let request = delegate.state.withLockedValue { $0.currentRequest }
            delegate.exchange(
                didCompleteWith: CourierError(
                    .sessionInvalidated, "\(request.summary): the session manager was invalidated before the task started",
                    request: request))
            return
        }
        delegate.beginAttempt(on: self)
    }

    /// Hands an attempt's (adapted) request on (DESIGN's order, after the adapters: cookies, the
    /// cache lookup, then the engine).
    func execute(_ request: Request, for delegate: TaskDelegate, attempt: Int, expected: Int64?, ownAuthorization: Bool) {
        let plan = self.planFirstHop(request, for: delegate, expected: expected, ownAuthorization: ownAuthorization)
        // A stored redirect the cache answers with: the session follows it (and those after it).
        switch delegate.followingStoredRedirects(plan, on: self, readsDisk: true) {
        case .send(let changed):
            // Not `changed ?? request`: that would copy the request the attempt made.
            let exchange =
                if let policy = self.redirectPolicyForEngine, (changed ?? request).options.redirectPolicy == nil {
                    // An engine that does not hold the session's configuration gets its redirect
                    // policy in the request (``RequestOptions/redirectPolicy``: nil is the session's).
                    self.engine.execute(Self.redirecting(changed ?? request, by: policy), delegate: delegate)
                } else if let changed {
                    self.engine.execute(changed, delegate: delegate)
                } else {
                    self.engine.execute(request, delegate: delegate)
                }
            delegate.attach(exchange, attempt: attempt)
        case .answer(let cached):
            delegate.answerFromCache(cached)
        case .fail(let error):
            // A cancel() made while the lookup ran reached no exchange: it is the answer.
            let cancelled = delegate.state.withLockedValue { $0.machine.isCancelling }
            delegate.exchange(
                didCompleteWith: cancelled ? .cancelled(request) : error)
        }
    }

    /// `request` with `policy` as its redirect policy.
    private static func redirecting(_ request: Request, by policy: NIOEngine.RedirectPolicy) -> Request {
        var request = request
        request.options.redirectPolicy = policy
        return request
    }

    /// Drops a finished (or dropped unstarted) task's delegate; shuts the engine down when an
    /// invalidated manager has no task left.
    func taskDidFinish(_ delegate: TaskDelegate) {
        let invalidated = self.registry.withLockedValue { registry -> Bool in
            registry.delegates[delegate.identifier] = nil
            return registry.isInvalidated
        }
        if invalidated { self.shutDownEngineIfIdle() }
    }
}
