import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import NIOFoundationCompat

extension ResponseStreamSink: BodySink {
    /// The consumer is behind: more than the high watermark waits unread.
    var isBehind: Bool { self.wantsPause }

    /// Whether the caller has the response: then the attempt can no longer be retried. A head
    /// held back for a possible retry is not the caller's yet.
    var takesResponseAtHead: Bool { self.consumerHasHead }

    /// A stream is answered from the session's cache, and its response stored there, as a data
    /// task's is: the sink keeps a copy of the body as it passes while the response may be stored.
    var usesCache: Bool { true }

    func bodyToStore(gathered: Data?) -> Data? {
        // The copy is the sink's own buffer: wrapped, not copied again, when it is (nearly) full;
        // one that grew by doubling is copied, so that the cache keeps no unused capacity.
        self.takeCacheCopy().map { Data(buffer: $0, byteTransferStrategy: $0.capacity - $0.readableBytes <= $0.readableBytes / 8 ? .noCopy : .copy) }
    }

    /// A task that failed stores nothing: its copy for the cache is let go at once, not when
    /// the caller lets go of the stream.
    func end(with error: CourierError?, delegate: TaskDelegate) {
        if error != nil { self.dropCacheCopy() }
        delegate.completeWithGatheredBody(error)
    }

    /// A streamed task's response head: recorded in the head's transaction, then the waiting caller
    /// is told (``headRecorded(_:response:status:holding:delegate:)``). A failed status
    /// that a retrier may retry (``TaskDelegate/mayRetry(after:status:)``) is held back with its body, up
    /// to ``ResponseStreamSink/heldBodyLimit``, until the retriers have decided: the caller gets
    /// the last attempt's response, as a data task does.
    func recordHeadUnderLock(_ response: HTTPResponse, status: Int, url: URL, holding: Bool, in state: inout TaskState, delegate: TaskDelegate) -> RecordedHead? {
        state.metrics?.responseBegan()
        let expected = response.expectedBodyLength(status: status, answeringHEAD: state.currentRequest.method == .head)
        let deliveries = state.recordResponse(response, status: status, url: url, expected: expected, holding: holding)
        return RecordedHead(task: delegate.isWatched ? state.task : nil, deliveries: deliveries, expected: expected, storing: state.hop.storing(currentRequest: state.currentRequest))
    }

    /// The head's part after the lock: the sink keeps it (with the cache's copy, when the response
    /// may be stored), the monitors and hooks hear of it, and the caller is woken (or the head is
    /// held back, or the body gathered first).
    func headRecorded(_ recorded: RecordedHead, response: HTTPResponse, status: Int, holding: Bool, delegate: TaskDelegate) -> ResponseDisposition {
        let expected = recorded.expected
        let task = recorded.task
        // Before any chunk: the head, and the copy for the cache when the response may be stored.
        self.recordHead(response, copy: recorded.storing.flatMap { delegate.cacheCopy(of: response, expected: expected, storing: $0) })
        if let task { delegate.didReceive(response, task: task) }
        delegate.deliver(recorded.deliveries)
        var disposition = ResponseDisposition.allow
        if let hook = delegate.hook({ $0.dataTaskDidReceiveResponse }), let task, let manager = delegate.manager {
            disposition = hook(manager, task, response)
        }
        if disposition == .allow {
            if holding {
                self.holdHead()
            } else if self.gatheringLimit > 0, expected >= 0, expected <= Int64(self.gatheringLimit) {
                self.gatherBody()
            } else {
                self.headArrived()
            }
        }
        return disposition
    }

    /// Hands a chunk to the consumer; pauses the exchange when the consumer is behind. A chunk of
    /// a held response is kept instead; one that takes the held body over the limit hands the
    /// head and the body so far to the consumer, and the attempt is then final.
    func bodyArrived(_ chunk: ByteBuffer, delegate: TaskDelegate) {
        switch self.hold(chunk) {
        case .notHolding:
            self.deliver(chunk, delegate: delegate, counted: false)
        case .held:
            delegate.state.withLockedValue { _ = $0.recordReceivedOrHold(Int64(chunk.readableBytes)) }
        case .released(let chunks):
            let (held, task) = delegate.state.withLockedValue { state -> (HeldReport?, SessionTask?) in
                _ = state.recordReceivedOrHold(Int64(chunk.readableBytes))
                return (HeldReport(taking: &state, succeeded: true), state.task)
            }
            if let held {
                held.send()
                if let task { delegate.didReceiveBodyData(held.bytes, task: task) }
            }
            for chunk in chunks { self.deliver(chunk, delegate: delegate, counted: true) }
        }
    }

    /// Hands one chunk on: progress (unless `counted` already), hooks, monitors, the consumer.
    private func deliver(_ chunk: ByteBuffer, delegate: TaskDelegate, counted: Bool) {
        let bytes = Int64(chunk.readableBytes)
        let (report, task, deliveries) = delegate.state.withLockedValue { state -> (ProgressReport?, SessionTask?, [ProgressDelivery]) in
            let deliveries = counted ? [] : state.recordReceived(bytes)
            // The task only for a monitor or a hook (a copy is a retain a chunk).
            return (ProgressReport(state.progress.downloadObject, state.progress.downloadHandler), delegate.isWatched ? state.task : nil, deliveries)
        }
        if !counted {
            report?.send()
            delegate.deliver(deliveries)
        }
        if let hook = delegate.hook({ $0.dataTaskDidReceiveData }), let task, let manager = delegate.manager {
            hook(manager, task, Data(buffer: chunk, byteTransferStrategy: .copy))
        }
        if let task, !counted { delegate.didReceiveBodyData(bytes, task: task) }
        guard self.yield(chunk) else {
            delegate.cancel()
            return
        }
        if self.wantsPause { delegate.applyReceiveWish() }
    }
}

extension SessionManager {
    /// A data task whose body goes to `sink`: its end finishes the sink, then the hooks and the
    /// `.taskDidComplete` notification (which carries no data). The delivery the end counts
    /// (``TaskCompletion/outcome(_:)``) ends there, or, with `handOn`, once the reader that hands
    /// the events on has handed on the last.
    func makeStreamTask(
        _ request: Request, sink: ResponseStreamSink, downloadProgress: (@Sendable (Progress) -> Void)?, resumedAtOnce: Bool,
        handOn: HandOnEnd? = nil
    ) -> DataTask {
        let task = self.makeTask(
            DataTask.self, request: request,
            completion: .outcome { outcome in
                sink.finish(with: outcome.error)
                // The outcome carries its task: no box to reach it through.
                let task = outcome.task
                task.delegate.hookTable?.takeDidComplete()?(self, task, outcome.error)
                self.postDidComplete(task, outcome: outcome, serializer: nil, object: nil, error: outcome.error)
                if let handOn { handOn.taskEnded(self) } else { self.endDelivery() }
            },
            uploadProgress: nil, downloadProgress: downloadProgress, sink: sink, resumedAtOnce: resumedAtOnce)
        sink.attach(task.delegate)
        return task
    }

    /// Sends `request` and returns as soon as the response head arrives, with the body to read as
    /// it comes (Alamofire's `DataStreamRequest`, as an `AsyncSequence`).
    ///
    /// ```swift
    /// let stream = try await manager.stream(Request(url: url))
    /// for try await chunk in stream.body {
    ///     print("got \(chunk.readableBytes) bytes")
    /// }
    /// ```
    ///
    /// Little is buffered for a consumer that falls behind: once more than 128 KiB wait unread,
    /// the connection (the stream, on HTTP/2) stops reading until the consumer has brought them
    /// down to 32 KiB. The status is not validated: check ``DataStreamResponse/response``. A status
    /// of 400 or more that the session's retriers may retry is held back, with up to 256 KiB of its
    /// body, until they have decided: the call returns the last attempt's response.
    /// Cancelling the calling task before the head arrives, or stopping the iteration, cancels the
    /// request. The task completes (hooks, ``Foundation/NSNotification/Name/taskDidComplete``) when
    /// the body ends; the notification carries no data.
    ///
    /// The session's ``SessionConfiguration/responseCache`` answers a stream as it answers a data
    /// task (a fresh stored response comes from memory, a stale one is revalidated), and a
    /// streamed response is stored when it may be: the session keeps a copy of the body as it
    /// passes, up to the largest entry the cache keeps, and stores it once the body has ended
    /// whole. The copies of all streams at once stay within the cache's memory capacity. A longer
    /// body, one that breaks off, or one whose consumer stops, is not stored; nor is an event
    /// stream (`text/event-stream`).
    ///
    /// With `gatheringBodiesUpTo` above 0, a response whose `Content-Length` is at most that many
    /// bytes is read whole before the call returns, and its body then comes from memory in one
    /// chunk: for the small responses of an API, that costs less than streaming (no back-pressure
    /// to keep, one wake-up of the caller instead of two), and a failure before the body is
    /// whole is thrown by the call. A longer body, or one without a `Content-Length`, streams
    /// from its head; one that turns out longer than announced (decompressed) streams from there.
    /// - Parameters:
    ///   - request: The request.
    ///   - downloadProgress: Called as the body arrives.
    ///   - gatheringBodiesUpTo: The longest `Content-Length`, in bytes, read whole before the call
    ///     returns; 0 (the default) returns at every response's head.
    /// - Throws: ``CourierError`` when the request fails before the response head (or, for a
    ///   body read whole, before its end).
    public func stream(
        _ request: Request,
        downloadProgress: (@Sendable (Progress) -> Void)? = nil,
        gatheringBodiesUpTo: Int = 0
    ) async throws(CourierError) -> DataStreamResponse {
        let sink = ResponseStreamSink(gatheringUpTo: gatheringBodiesUpTo)
        let task = self.makeStreamTask(request, sink: sink, downloadProgress: downloadProgress, resumedAtOnce: true)
        do {
            if request.cancelsWithCallingTask {
                try await withTaskCancellationHandler {
                    task.resume()
                    try await sink.waitForHead()
                } onCancel: {
                    task.cancel()
                }
            } else {
                task.resume()
                try await sink.waitForHead()
            }
        } catch {
            throw error.asCourierError(.internalInconsistency, "\(request.summary): waiting for the response failed", request: request)
        }
        guard let response = task.response, let body = sink.takeBody() else {
            throw CourierError(.internalInconsistency, "\(request.summary): the stream has no response", request: request)
        }
        return DataStreamResponse(task: task, request: task.currentRequest, response: response, body: body)
    }
}
