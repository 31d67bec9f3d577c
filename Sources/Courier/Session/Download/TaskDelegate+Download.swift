import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore

/// What a download task does with its body.
struct DownloadPlan: Sendable {
    /// Where the file goes at the end; nil keeps it in the download directory.
    var destination: DownloadDestination?
    /// The partial file and how many of its bytes to keep, when the request continues earlier
    /// resume data with `Range`.
    var continuation: (file: URL, offset: Int64)?
    /// The resume data the request continues, with ``continuation``: handed back when the task
    /// fails before it changed the partial file, or fails writing it with no validators of its
    /// own to name the bytes written, so that the caller can try again.
    var resumeData: ResumeData?
    /// The partial file of resume data that the request cannot continue (a file of Courier's
    /// shorter than the resume data records, or resume data with no validator): the download
    /// starts over in a file of its own, and removes this one when it ends, so that nothing is
    /// left behind.
    var unusablePartialFile: URL?
}

extension DownloadPlan: BodySink {
    func headArrived(_ response: HTTPResponse, status: Int, url: URL, delegate: TaskDelegate) -> ResponseDisposition {
        delegate.downloadDidReceive(response, status: status, url: url, plan: self)
    }

    func bodyArrived(_ chunk: ByteBuffer, delegate: TaskDelegate) {
        delegate.downloadDidReceive(chunk)
    }

    func end(with error: CourierError?, delegate: TaskDelegate) {
        delegate.completeDownload(with: error, plan: self)
    }

    /// A download's end closes its file first: it always goes through the retry decision.
    func endSucceeded(delegate: TaskDelegate) -> SucceededEnd { .notCompleted }
}

extension TaskDelegate {
    // MARK: Response head

    /// Opens the download's file for the final response: a new one, or the partial one when a 206
    /// continues it or a 200 sends the whole body again. A 206 that does not run from the partial
    /// file's end to the representation's, or a 416, ends the task, unless the 416 says the
    /// partial file already holds every byte: then the download completes with it.
    func downloadDidReceive(_ response: HTTPResponse, status: Int, url: URL, plan: DownloadPlan) -> ResponseDisposition {
        let request = self.state.withLockedValue { $0.currentRequest }
        var file = DownloadDestination.temporaryFileURL(in: self.configurationReference.value.downloadDirectory)
        var kept: Int64?
        var rangeLast: Int64?
        var expected = response.expectedBodyLength(status: status, answeringHEAD: request.method == .head)
        // A response that may be retried goes to a file of its own, never over the partial file
        // of resume data, which the retry still needs (a 206 or 200, which continue or rewrite
        // it, is never held). A 416 to a continuation is decided here, held or not: it says
        // whether the partial file is whole, and its own body is nobody's download.
        let holding = self.mayRetry(after: response, status: status)
        if let continuation = plan.continuation {
            switch status {
            case 206:
                file = continuation.file
                let value = response.headerFields.value(of: .contentRange)
                // The validator `If-Range` sent, and the other one the 206 names, if it does (a
                // server or cache that ignored `If-Range`).
                let sent = request.headerFields.value(of: .ifRange)
                let other = sent.flatMap { ContentRange.otherVersion(named: response, than: $0) }
                // `bytes=N-` asks for everything from N to the end: a range that starts elsewhere
                // or stops short of the end (when the server says where that is) is not the rest.
                guard let range = value.flatMap(ContentRange.init), range.first == continuation.offset,
                    range.completeLength.map({ range.last == $0 - 1 }) ?? true
                else {
                    // Nothing was written: unless the 206 names another version than `If-Range`
                    // sent, it is part of the version the partial file holds (a server sends 206
                    // only when `If-Range` matched), and the file is kept for another try.
                    return self.refuseDownload(
                        CourierError(
                            .invalidResponse,
                            "\(request.summary): asked for the rest after \(continuation.offset) bytes, the server sent Content-Range \(value ?? "(none)")",
                            request: request, response: response),
                        keepingPartialFile: sent != nil && other == nil)
                }
                if let sent, let other {
                    return self.refuseDownload(
                        CourierError(
                            .invalidResponse,
                            "\(request.summary): asked for the rest of \(sent), the server sent part of \(other) (it ignored If-Range): the resume data is stale",
                            request: request, response: response))
                }
                kept = continuation.offset
                // The body must end where the range does, whatever `Content-Length` says.
                rangeLast = range.last
                // A length past Int64 (a server's `Content-Length`, unchecked) is unknown, not a trap.
                expected =
                    range.completeLength
                    ?? response.expectedBodyLength.flatMap { length in
                        let (sum, overflow) = length.addingReportingOverflow(continuation.offset)
                        return overflow ? nil : sum
                    } ?? -1
            case 416 where Self.keptFileIsWhole(response, status: status, request: request, plan: plan):
                // The validator matched and nothing lies past the partial file: it is the whole
                // representation (as curl's `-C -` and the `courier` command read it). No file is
                // opened; the 416's own body is not written anywhere.
                let (deliveries, task) = self.state.withLockedValue { state in
                    state.download.answerFoundKeptFileWhole()
                    state.metrics?.responseBegan()
                    return (
                        state.recordResponse(
                            response, status: status, url: url, received: continuation.offset, expected: continuation.offset, holding: false),
                        state.task
                    )
                }
                self.deliver(deliveries)
                if let task { self.didReceive(response, task: task) }
                return .allow
            case 416:
                return self.refuseDownload(
                    CourierError(
                        .invalidResponse, "\(request.summary): the server cannot send the rest (416): the resume data is stale",
                        request: request, response: response))
            case 200:
                // The whole body again (the server ignored the range, or the resource changed):
                // the partial file is rewritten from the start.
                file = continuation.file
            default:
                // Any other answer (an error page, a 204) is not the representation: it goes to a
                // file of its own, and the partial file stays for a later continuation.
                break
            }
        }
        let gate = self.state.withLockedValue { $0.download.writeGate }
        let writer = DownloadFileWriter(url: file, keepingFirst: kept, writeGate: gate) { [weak self] event in
            self?.downloadWriter(event)
        }
        let validators = Self.mayLeaveResumeData(request, continuing: plan.continuation != nil, response: response)
            ? ResumeData.validators(of: response, continuing: kept != nil ? request : nil) : nil
        let (deliveries, task) = self.state.withLockedValue { state in
            state.download.answerWritten(to: writer, validators: validators, rangeLast: rangeLast)
            state.metrics?.responseBegan()
            return (state.recordResponse(response, status: status, url: url, received: kept ?? 0, expected: expected, holding: holding), state.task)
        }
        self.deliver(deliveries)
        if let task { self.didReceive(response, task: task) }
        return .allow
    }

    /// Ends the task with `error` instead of the plain cancellation the engine reports; with
    /// `keepingPartialFile`, the partial file of resume data is kept, and the error carries the
    /// resume data the continuation began with (else the file is removed).
    private func refuseDownload(_ error: CourierError, keepingPartialFile: Bool = false) -> ResponseDisposition {
        self.state.withLockedValue { state in
            guard state.bodyFailure == nil else { return }
            state.bodyFailure = error
            state.download.refusalKeepsPartialFile = keepingPartialFile
        }
        return .cancel
    }

    // MARK: Body

    /// Hands a chunk to the file writer and reports progress.
    func downloadDidReceive(_ chunk: ByteBuffer) {
        let bytes = Int64(chunk.readableBytes)
        let received = self.state.withLockedValue { state in
            // No file: the answer is a 416 that found the partial file whole, and its body is not
            // the download's.
            state.download.file.map { writer in
                let deliveries = state.recordReceivedOrHold(bytes)
                // A continuation's 206 whose body runs past the range it named: what lies past
                // it is not written, and the task fails.
                let within = state.bytesWithinContinuedRange(bytes)
                let effects: DownloadFileWriter.QueueEffects
                // Queued under the task's lock, with the count: whoever sees the bytes counted (a
                // cancellation asking for resume data) finds them in the writer's queue.
                if within == bytes {
                    effects = writer.queue(chunk)
                } else {
                    effects = writer.queue(chunk.getSlice(at: chunk.readerIndex, length: Int(within)) ?? ByteBuffer())
                }
                return (
                    writer, effects, ProgressReport(state.progress.downloadObject, state.progress.downloadHandler),
                    state.progress.countOfBytesReceived, state.progress.countOfBytesExpectedToReceive, state.task, deliveries, within != bytes
                )
            }
        }
        guard let (writer, effects, report, total, expected, task, deliveries, overran) = received else { return }
        writer.perform(effects)
        if overran { self.cancelForBodyFailure() }
        // An attempt that may be retried reports its body when it turns out to be the last.
        guard let deliveries else { return }
        report?.send()
        self.deliver(deliveries)
        if let hook = self.hook({ $0.downloadTaskDidWriteData }), let task = task as? DownloadTask, let manager = self.manager {
            hook(manager, task, bytes, total, expected)
        }
        if let task { self.didReceiveBodyData(bytes, task: task) }
    }

    /// Cancels the exchange with the failure Courier recorded for the body
    /// (``TaskState/bodyFailure``).
    private func cancelForBodyFailure() {
        let (exchange, failure) = self.state.withLockedValue { ($0.machine.exchange, $0.bodyFailure) }
        if let failure { exchange?.cancel(with: failure) }
    }

    /// The writer asks to pause or read on, or says that writing failed.
    func downloadWriter(_ event: DownloadFileWriter.Event) {
        switch event {
        case .backlogChanged:
            self.applyReceiveWish()
        case .failed(let underlying):
            let (exchange, failure) = self.state.withLockedValue { state -> ((any Exchange)?, CourierError) in
                let path = state.download.file?.url.path ?? "the download's file"
                let failure = CourierError(
                    .fileSystemFailure, "\(state.currentRequest.summary): writing \(path) failed",
                    request: state.currentRequest, response: state.response, underlyingError: underlying)
                state.bodyFailure = state.bodyFailure ?? failure
                return (state.machine.exchange, failure)
            }
            exchange?.cancel(with: failure)
        }
    }

    // MARK: Completion

    /// Ends a download: the file is finished and moved (or kept as resume data, or removed), then
    /// the handler, hooks and notifications run as for any task.
    func completeDownload(with engineError: CourierError?, plan: DownloadPlan) {
        struct Ending: Sendable {
            var task: SessionTask
            var manager: SessionManager
            var completion: TaskCompletion
            var writer: DownloadFileWriter?
            var error: CourierError?
            /// Whether Courier refused the response (an unusable 206, a 416, a failed write, a
            /// 206 whose body did not fill its range).
            var refused: Bool
            /// Whether the body of a continuation's 206 did not fill the range it named.
            var missedRange: Bool
            /// Whether Courier refused a 206 of the partial file's version that was not the rest
            /// (``DownloadState/refusalKeepsPartialFile``).
            var keepsPartialFile: Bool
            var request: Request
            var response: HTTPResponse?
            var validators: (entityTag: String?, lastModified: String?)?
            var resumeDataHandler: (@Sendable (ResumeData?) -> Void)?
            var expected: Int64
            /// The progress of a response that was held back in case it was retried.
            var held: HeldReport?
        }
        var unheard: UnheardEnd?
        let ending = self.state.withLockedValue { state -> Ending? in
            // Completed once its file is placed and its error known (``TaskMachine/settled()``).
            guard state.machine.complete(settledLater: true), let (task, manager, completion) = state.takeHoldsAtCompletion(else: &unheard)
            else { return nil }
            defer {
                state.download.file = nil
                state.download.resumeDataHandler = nil
                state.progress.dropHandlers()
            }
            var error = state.bodyFailure ?? engineError
            // A continuation's 206 whose body ended short of its range fails here: the exchange
            // finished where its `Content-Length` said.
            if error == nil { error = state.continuedRangeShortfall() }
            let held = HeldReport(taking: &state, succeeded: error == nil)
            return Ending(
                task: task, manager: manager, completion: completion, writer: state.download.file, error: error, refused: state.bodyFailure != nil,
                missedRange: state.download.bodyMissedRange, keepsPartialFile: state.download.refusalKeepsPartialFile, request: state.currentRequest,
                response: state.response, validators: state.download.resumeValidators, resumeDataHandler: state.download.resumeDataHandler,
                expected: state.progress.countOfBytesExpectedToReceive, held: held)
        }
        guard let ending else {
            unheard.map(self.endUnheard)
            return
        }
        if let held = ending.held {
            held.send()
            if let hook = self.hook({ $0.downloadTaskDidWriteData }), let task = ending.task as? DownloadTask {
                hook(ending.manager, task, held.bytes, held.bytes, ending.expected)
            }
            self.didReceiveBodyData(held.bytes, task: ending.task)
        }
        _Concurrency.Task.detached {
            var error = ending.error?.adding(request: ending.request, response: ending.response)
            var fileURL: URL?
            var resumeData: ResumeData?
            if let writer = ending.writer {
                let recorded = Self.requestToResume(original: ending.task.originalRequest, answered: ending.request)
                if error == nil {
                    if let failure = await Self.finishWriting(writer, request: ending.request) {
                        // Writing the last bytes failed: the file is removed, unless it is the
                        // partial file of a continuation, which keeps the caller's bytes.
                        error = failure
                        resumeData = await Self.keepWrittenPart(
                            writer, request: recorded, expected: ending.expected, validators: ending.validators, original: plan.resumeData)
                    } else {
                        (fileURL, error) = await self.place(writer.url, plan: plan, ending.task, request: ending.request, response: ending.response)
                    }
                } else if let validators = ending.validators, let recorded,
                    ending.resumeDataHandler != nil || error.map(Self.leavesResumeData) == true || ending.missedRange
                {
                    // A body cut short (or a 206's that did not fill its range: the bytes within
                    // it were written) leaves the partial file, with resume data.
                    resumeData = await Self.keepPartialFile(
                        writer, request: recorded, expected: ending.expected, validators: validators, original: plan.resumeData)
                } else {
                    // Removed, unless writing a continuation's file failed (a full disk): the
                    // caller's bytes stay, with resume data to continue once there is room.
                    resumeData = await Self.keepWrittenPart(
                        writer, request: recorded, expected: ending.expected, validators: ending.validators, original: plan.resumeData)
                }
            } else if error == nil, let partial = plan.continuation?.file,
                let response = ending.response,
                Self.keptFileIsWhole(response, status: Int(response.status.code), request: ending.request, plan: plan)
            {
                (fileURL, error) = await self.place(partial, plan: plan, ending.task, request: ending.request, response: response)
            } else if ending.refused, let partial = plan.continuation?.file {
                if ending.keepsPartialFile {
                    // A 206 of the same version that was not the rest: nothing was written, and
                    // the resume data the continuation began with still names the file.
                    resumeData = plan.resumeData
                } else {
                    // The server would not continue: the partial file is of no use.
                    try? FileManager.default.removeItem(at: partial)
                }
            }
            if resumeData == nil, let failure = error, !ending.refused, let original = plan.resumeData,
                ending.resumeDataHandler != nil || Self.leavesResumeData(failure),
                ending.writer.map({ $0.url.standardizedFileURL != original.temporaryFileURL.standardizedFileURL }) ?? true
            {
                // A continuation that ended before it changed its partial file (no answer came, or
                // the answer went to a file of its own) leaves that file as it was: the resume
                // data it began with still describes it, and is handed back to try again with.
                resumeData = original
            }
            if let unusable = plan.unusablePartialFile, ResumeData.isPartialFile(unusable),
                fileURL?.standardizedFileURL != unusable.standardizedFileURL,
                resumeData?.temporaryFileURL.standardizedFileURL != unusable.standardizedFileURL
            {
                // The download started over: the partial file it could not continue is of no
                // use, and nothing else names it.
                try? FileManager.default.removeItem(at: unusable)
            }
            error?.resumeData = resumeData
            ending.resumeDataHandler?(resumeData)
            var outcome = TaskOutcome(
                task: ending.task, manager: ending.manager, request: ending.request, response: ending.response, data: nil, error: error,
                fileURL: fileURL)
            self.deliverDownload(&outcome, completion: ending.completion)
        }
    }

    /// Which failures leave resume data without being asked: the connection failed after part of
    /// the body had arrived.
    static func leavesResumeData(_ error: CourierError) -> Bool {
        [.connectionClosed, .connectionFailed, .timedOut].contains(error.code)
    }

    /// Writes what is left of the body and closes the file; the error when that failed (the file
    /// is left for ``keepWrittenPart(_:request:expected:validators:original:)``).
    private static func finishWriting(_ writer: DownloadFileWriter, request: Request) async -> CourierError? {
        do {
            _ = try await writer.finish()
            return nil
        } catch {
            return error.asCourierError(.fileSystemFailure, "\(request.summary): writing \(writer.url.path) failed", request: request)
        }
    }

    /// Moves a finished file to the destination (or leaves it where it is without one); on
    /// failure the file is removed.
    private func place(
        _ file: URL, plan: DownloadPlan, _ task: SessionTask, request: Request, response: HTTPResponse?
    ) async -> (URL?, CourierError?) {
        guard let destination = plan.destination, let response else {
            self.didFinishDownloading(to: file, task: task)
            return (file, nil)
        }
        do throws(CourierError) {
            let moved = try await destination.move(file, response: response, request: request)
            self.configurationReference.postTaskNotification(.downloadTaskDidMoveFile, object: task)
            self.didFinishDownloading(to: moved, task: task)
            return (moved, nil)
        } catch {
            try? FileManager.default.removeItem(at: file)
            self.configurationReference.postTaskNotification(
                .downloadTaskDidFailToMoveFile, object: task, userInfo: [TaskDidCompleteKey.error: error])
            return (nil, error)
        }
    }

    /// The request resume data records: the caller's own (its fields, not those the session's
    /// adapters, credentials, cookies and tracer added to the attempt, which a continuation adds
    /// afresh, and which resume data, bytes a caller stores anywhere, must not carry) at the URL
    /// that answered, without the caller's credentials, cookies and `Host` when that URL is on
    /// another origin (the redirect dropped them too). Nil when the caller's request was not a `GET` (a
    /// `POST` a 303 made a `GET` of): a continuation could not say what to send.
    static func requestToResume(original: Request, answered: Request) -> Request? {
        guard original.method == .get, answered.method == .get else { return nil }
        var request = original
        request.url = answered.url
        if !original.url.isSameOrigin(as: answered.url) {
            request.headerFields[.authorization] = nil
            request.headerFields[.proxyAuthorization] = nil
            request.headerFields[.cookie] = nil
            request.headerFields[RedirectPlanner.hostField] = nil
        }
        return request
    }

    /// Whether a continuation's answer is a 416 that says the partial file already holds the
    /// whole representation: `Content-Range: bytes */N` with N the bytes kept (the request's
    /// `If-Range` made the server check the validator first, RFC 9110 §13.1.5). A 416 with no
    /// `Content-Range` (Apache and lighttpd send none: RFC 9110 §15.5.17 only says SHOULD) says
    /// it too when `request` carried `If-Range`: a server that found the validator stale would
    /// have ignored `Range` and sent the whole representation, so the validator matched and
    /// nothing lies past the bytes kept. Not when the resume data recorded a whole length other
    /// than the bytes kept: the resume data is then stale.
    static func keptFileIsWhole(_ response: HTTPResponse, status: Int, request: Request, plan: DownloadPlan) -> Bool {
        guard status == 416, let continuation = plan.continuation, continuation.offset > 0 else { return false }
        guard let value = response.headerFields.value(of: .contentRange) else {
            guard request.headerFields.value(of: .ifRange) != nil else { return false }
            return (plan.resumeData?.expectedLength).map { $0 == continuation.offset } ?? true
        }
        return ContentRange.unsatisfiedCompleteLength(value) == continuation.offset
    }

    /// Whether a response may leave resume data: a `GET` (URLSession's rule: a continuation sends
    /// no body, and repeats the method), of the whole representation (a caller's own `Range` is
    /// not what a continuation's `bytes=N-` counts from), whose bytes are written as they come
    /// (`Range` counts the content-coded bytes; a decoded file's length is not an offset in them).
    static func mayLeaveResumeData(_ request: Request, continuing: Bool, response: HTTPResponse) -> Bool {
        request.method == .get && (continuing || !request.headerFields.contains(.range)) && !response.isContentCoded
    }

    private func didFinishDownloading(to location: URL, task: SessionTask) {
        self.interception.monitors?.emit { $0.task(task, didFinishDownloadingTo: location) }
    }

    /// Closes the partial file and describes it as resume data; removes it when nothing is in it.
    /// When writing failed, a continuation's partial file is kept as
    /// ``keepWrittenPart(_:request:expected:validators:original:)`` keeps it.
    private static func keepPartialFile(
        _ writer: DownloadFileWriter, request: Request, expected: Int64,
        validators: (entityTag: String?, lastModified: String?), original: ResumeData?
    ) async -> ResumeData? {
        let size: Int64
        do {
            size = try await writer.finish()
        } catch {
            return await Self.keepWrittenPart(writer, request: request, expected: expected, validators: validators, original: original)
        }
        guard size > 0 else {
            await writer.abandon()
            return nil
        }
        return ResumeData(
            request: request, temporaryFileURL: writer.url, bytesReceived: size, expectedLength: expected >= 0 ? expected : nil,
            entityTag: validators.entityTag, lastModified: validators.lastModified)
    }

    /// The partial file of a continuation whose writing failed (a full disk), described as resume
    /// data: it holds the caller's bytes from before, and those written after them before the
    /// failure (cut back to them, ``DownloadFileWriter/lengthKeptAfterFailure()``), which the
    /// caller can continue once there is room, as curl's `-C -` does. The resume data names this
    /// response's validators (the 206 continued the same version), else it is the resume data
    /// the task began with, whose bytes the file still holds (a continuation cuts the file back
    /// to them). A 200 that was rewriting the partial file and failed leaves it as it was (its
    /// body was never made visible over it): the resume data the task began with is returned.
    /// Any other writer's file (a new download's: it is not kept; a writer that has not failed)
    /// is removed, and nil returned.
    private static func keepWrittenPart(
        _ writer: DownloadFileWriter, request: Request?, expected: Int64,
        validators: (entityTag: String?, lastModified: String?)?, original: ResumeData?
    ) async -> ResumeData? {
        guard let length = await writer.lengthKeptAfterFailure() else {
            if writer.startOffset == 0, writer.hasFailed, let original,
                writer.url.standardizedFileURL == original.temporaryFileURL.standardizedFileURL
            {
                await writer.abandon(removingFile: false)
                let size = (try? FileManager.default.attributesOfItem(atPath: original.temporaryFileURL.path)[.size] as? NSNumber)?.int64Value
                if let size, size >= original.bytesReceived { return original }
            }
            await writer.abandon()
            return nil
        }
        if let request, let validators {
            return ResumeData(
                request: request, temporaryFileURL: writer.url, bytesReceived: length, expectedLength: expected >= 0 ? expected : nil,
                entityTag: validators.entityTag, lastModified: validators.lastModified)
        }
        guard let original, original.bytesReceived <= length else {
            await writer.abandon()
            return nil
        }
        return original
    }

    /// Records the end, settles it (drops the task from the registry, among the rest) and
    /// reports to whoever waits.
    private func deliverDownload(_ outcome: inout TaskOutcome, completion: TaskCompletion) {
        self.state.withLockedValue { [error = outcome.error] state in
            state.error = error
            if error == nil { state.progress.settleTotals() }
        }
        // The delivery (a handler's, or the `async` caller's hook and notification) is counted
        // before the task leaves the registry, so that an invalidated manager waits for it
        // (``SessionManager/beginDelivery()``).
        outcome.manager.beginDelivery()
        // Settled where every task's end is (``TaskDelegate/settle(_:)``), once the file is done:
        // here, or on the `async` caller's task as it takes the end, as a data task's is
        // (``TaskDelegate/takeAwaitedOutcome()``).
        switch completion {
        case .awaiting:
            self.handToAwaitingCaller(outcome)
        case .outcome(let deliver):
            self.settle(&outcome)
            deliver(outcome)
        case .download(let handler):
            self.settle(&outcome)
            outcome.manager.completeDownload(outcome, handler: handler)
        case .handler, .none:
            self.settle(&outcome)
            outcome.manager.completeDownload(outcome, handler: nil)
        }
    }
}
