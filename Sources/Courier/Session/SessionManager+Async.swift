import Foundation
import HTTPTypes
import NIOConcurrencyHelpers

extension SessionManager {
    /// Sends `request` and returns the value `serializer` makes of the response.
    ///
    /// The task is made, resumed and, if the calling task is cancelled, cancelled for you (unless
    /// ``Request/cancelsWithCallingTask`` is `false`).
    /// Serialization runs on the calling task, never on an engine thread.
    /// - Throws: ``CourierError``: a transport failure, or the serializer's.
    public func response<Serializer: ResponseSerializer>(
        for request: Request,
        serializer: Serializer,
        uploadProgress: (@Sendable (Progress) -> Void)? = nil,
        downloadProgress: (@Sendable (Progress) -> Void)? = nil
    ) async throws(CourierError) -> DataResponse<Serializer.Output> {
        // The serializer reaches the task through a closure, and is boxed only for a task that
        // checks (most have no retrier that wants it): an optional argument was a copy of it, its
        // fields retained, on every call.
        var outcome = await self.run(DataTask.self, request: request, uploadProgress: uploadProgress, downloadProgress: downloadProgress) { delegate in
            if delegate.interception.checksSerialization { delegate.state.withLockedValue { $0.checkingSerializer = serializer } }
        }
        // The end's delivery was counted as it was handed over (an invalidated manager waits for it).
        defer { self.endDelivery() }
        return try self.finish(&outcome, serializer: serializer)
    }

    /// Sends `request` and returns the body, validated as ``DataResponseSerializer`` does (status 200–299).
    public func data(for request: Request) async throws(CourierError) -> DataResponse<Data> {
        try await self.response(for: request, serializer: DataResponseSerializer())
    }

    /// Makes a task of the given kind, resumes it and waits for its raw outcome, whose delivery is
    /// counted (``beginDelivery()``): the caller ends it (``endDelivery()``) once it has run the
    /// completion hook and posted the notification. Cancelling the
    /// calling task cancels the task, unless the request says otherwise
    /// (``Request/cancelsWithCallingTask``); the outcome arrives exactly once either way. (A
    /// ``connectivityRetry`` happens inside the task, as for every task.)
    /// `prepare` sees the task's delegate before the task is resumed: a call that serializes the
    /// outcome gives it its serializer there, to check the response with before the task ends
    /// when its retriers want a serializer's failures (``RequestRetrier/retriesSerializationFailures``).
    func run<Task: SessionTask>(
        _ kind: Task.Type,
        request: Request,
        uploadProgress: (@Sendable (Progress) -> Void)?,
        downloadProgress: (@Sendable (Progress) -> Void)?,
        sink: any BodySink = MemoryBodySink(),
        prepare: (TaskDelegate) -> Void = { _ in }
    ) async -> TaskOutcome {
        // The task is made first and held here: the cancellation handler needs it, and a box
        // filled inside the continuation's closure was one more object and two lock transactions
        // a request. No checked continuation: the task's machine completes it exactly once (the
        // checked one's canary would be one more object a request).
        let task = self.makeTask(
            kind, request: request, completion: .awaiting, uploadProgress: uploadProgress, downloadProgress: downloadProgress,
            sink: sink, resumedAtOnce: true)
        let delegate = task.delegate
        prepare(delegate)
        if request.cancelsWithCallingTask {
            await withTaskCancellationHandler {
                await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
                    delegate.resume(awaiting: continuation)
                    if _Concurrency.Task.isCancelled { task.cancel() }
                }
            } onCancel: {
                task.cancel()
            }
        } else {
            // Alamofire's `automaticallyCancelling: false`: the caller's cancellation does not reach the task.
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
                delegate.resume(awaiting: continuation)
            }
        }
        // The task's end was left with its delegate before the continuation could resume. It
        // settles here, on the calling task, not on the engine's thread.
        return delegate.takeAwaitedOutcome()
    }

    /// Serializes an outcome on the calling task, runs the completion hook and posts the notification.
    /// The response, body and metrics are then moved out of `outcome` into the returned value.
    func finish<Serializer: ResponseSerializer>(
        _ outcome: inout TaskOutcome,
        serializer: Serializer
    ) throws(CourierError) -> DataResponse<Serializer.Output> {
        let task = outcome.task
        let delegate = task.delegate
        // The response is built once, at the end: it is large, and each copy of it (or of a
        // `Result` holding it) retains and releases every field.
        var value: Serializer.Output?
        var failure: CourierError?
        // What the serializer made of a body it refused (a 404's JSON error document), for the
        // monitors and the notification, as the callback API hands it on; never returned.
        var refusedObject: (any Sendable)?
        if let error = outcome.error {
            failure = error
        } else if let response = outcome.response.take() {
            // Taken out and put back below: binding a copy would retain each of its storages.
            // The task's serializer checked the response already when its retriers wanted that
            // (an output that is nil is made again: it does not come back out of `any Sendable`).
            let checked = delegate.takeChecked()
            if let error = checked?.error {
                failure = error
                refusedObject = checked?.object
            } else if let object = checked?.object, let output = object as? Serializer.Output {
                value = output
            } else {
                // One call gives the value and the error together, as the callback API's
                // serialization has them: the object of a refused body is kept, not parsed again.
                let (object, error) = serializer.serialize(response: response, data: outcome.data)
                if let error {
                    failure = error.adding(request: outcome.request, response: response, data: outcome.data)
                    refusedObject = object.flatMap { OptionalFlattening.flattened($0) }
                } else if let object {
                    value = object
                } else {
                    // Neither (a serializer of the caller's own, never Courier's): its throwing
                    // entry point makes the value this call returns.
                    do {
                        value = try serializer.responseObject(for: response, data: outcome.data)
                    } catch {
                        failure = error.adding(request: outcome.request, response: response, data: outcome.data)
                    }
                }
            }
            outcome.response = consume response
        } else {
            failure = CourierError(.internalInconsistency, "\(outcome.request.summary): no response and no error", request: outcome.request)
        }
        // `value` is set exactly when there is no failure (a serializer's output may itself be nil).
        let object: (any Sendable)? = if failure == nil, let value { value } else { refusedObject }
        if let monitors = delegate.interception.monitors {
            let error = failure
            monitors.emit { $0.task(task, didSerializeResponseWith: serializer, object: object, error: error) }
        }
        // The transfer's error, not the serializer's (AFNetworking's `taskDidComplete` block).
        task.delegate.hookTable?.takeDidComplete()?(self, task, outcome.error)
        self.postDidComplete(task, outcome: outcome, serializer: serializer, object: object, error: failure)
        // Moved, not copied (a copy retains each): the outcome ends here.
        guard failure == nil, let response = outcome.response.take(), let value = value.take() else {
            let error = failure ?? CourierError(.internalInconsistency, "\(outcome.request.summary): no value and no error", request: outcome.request)
            throw error.adding(metrics: outcome.metrics.take())
        }
        return DataResponse(
            request: outcome.request, response: response, data: outcome.data.take(), value: value, source: outcome.source,
            metrics: outcome.metrics.take())
    }
}
