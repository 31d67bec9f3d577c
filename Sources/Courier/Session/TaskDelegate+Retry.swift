import NIOConcurrencyHelpers
import Foundation
import HTTPTypes
import Logging
import NIOCore
import NIOFoundationCompat

/// Retries, at the one place every task kind passes through: the end of an exchange. A task whose
/// attempt failed (or whose serializer refused its response, when its retriers want that) does
/// not complete; its retriers decide, in the order of ``RequestInterceptor``,
/// and a retry waits its delay, then the same delegate starts a new attempt (the adapters run
/// again on the request the task was made with). The task keeps its object, identifier, registry
/// entry and progress, and completes once, after the last attempt.
extension TaskDelegate {
    /// Called with the end of an exchange, before the task completes. Returns true when the attempt
    /// failed and may be retried: the task then waits for the decision; false when it should
    /// complete now.
    ///
    /// An attempt may be retried when it failed (an error, or a status of 400 or more other than a
    /// 416 that found a continued download's partial file whole), something
    /// may retry it (``TaskInterception/mayRetry(_:)``), the request's body can be sent again, Courier
    /// did not fail the task itself (a body over the maximum size, a file that could not be
    /// written), the response did not come from the cache, a streamed task had not handed its
    /// response head to its consumer (it holds back a failed status that may be retried), the task is neither cancelled nor done, and the manager is
    /// not invalidated. `failedStatus`: the sink found the status a failure already
    /// (``BodySink/endSucceeded(delegate:)``), and it is not read again.
    func considerRetry(after error: CourierError?, failedStatus: Bool = false) -> Bool {
        let interception = self.interception
        // Read before the task's lock: the registry's lock is never taken inside it.
        let manager: SessionManager?
        if error != nil || failedStatus {
            manager = self.manager
        } else {
            // Success, the common case, costs one look at the status (and, with retriers that want
            // a serializer's failures, the check); a failed status reads the manager in the same
            // transaction. A ternary, not `&&`: its autoclosure would capture (copy) the whole state.
            let (failed, owner) = self.state.withLockedValue { state -> (Bool, SessionManager?) in
                let failed = state.responseStatus >= 400 ? !state.download.keptFileIsWhole : false
                return (failed, failed ? state.owner : nil)
            }
            guard failed else { return interception.checksSerialization && self.checkSerialization() }
            manager = owner
        }
        guard let manager, !manager.isInvalidated else { return false }
        // Asked before the task's lock (the sink's lock is never taken inside it).
        let consumerHasResponse = self.sink.takesResponseAtHead
        let attempt = self.state.withLockedValue { state -> FailedAttempt? in
            let response = state.response
            let retryable = (error != nil || state.responseStatus >= 400) && interception.mayRetry(response)
                && self.originalRequest.body.isReplayable && state.bodyFailure == nil
                // The cache's own answer (a stored error, only-if-cached's 504) would be the same again.
                && state.hop.source != .cache
                // A stream's consumer has the response already (a head held back for a retry is
                // not the consumer's yet).
                && !(consumerHasResponse && response != nil)
            guard state.machine.attemptFailed(error, retryable: retryable) else { return nil }
            let received = state.progress.attemptBytesReceived
            state.metrics?.attemptEnded(response: response, error: error, bytesReceived: received)
            var data: Data?
            if let body = state.body { data = Data(buffer: body, byteTransferStrategy: .copy) }
            var failed = FailedAttempt(
                taskIdentifier: self.identifier, request: state.currentRequest, response: response, data: data, error: error,
                previousRetries: state.retryReasons, logger: interception.logger)
            failed.carriesSessionAuthorization = state.carriesSessionAuthorization
            if let first = state.attemptRequest { failed.initialRequest = first }
            return failed
        }
        guard let attempt else { return false }
        self.endFailedHop(attempt)
        if manager.isInvalidated {
            // `invalidate(cancelingTasks: false)` may have looked at this task before the wait
            // began: the wait ends here (once, whoever gets to it).
            self.abandonRetryWait()
            return true
        }
        // The retriers decide, and the delay passes, on a task of their own: `cancel()` and
        // `invalidate(cancelingTasks:)` cancel it and end the task at once; it ends with the decision.
        let waiter = Task { await self.decideRetry(after: attempt) }
        // The task was cancelled (or the wait ended) meanwhile: nobody needs the waiter any more.
        if !self.state.withLockedValue({ $0.machine.retryWaitStarted(waiter) }) { waiter.cancel() }
        return true
    }

    /// The failed attempt's hop is over.
    private func endFailedHop(_ attempt: FailedAttempt) {
        self.state.withLockedValue { state -> HopSpan? in
            defer { state.tracing.hopSpan = nil }
            return state.tracing.hopSpan?.span
        }?.end(response: attempt.response, error: attempt.error)
    }

    /// A response below 400, for a task whose retriers want its serializer's failures
    /// (``TaskInterception/checksSerialization``; Alamofire asks its retriers when a serializer
    /// fails): the task waits while its serializer looks at the response on a task of its own,
    /// off the engine's thread. A response it refuses is a failed attempt, its error the
    /// serializer's, for the retriers to decide on; one it takes ends the task, and the caller's
    /// serialization takes what it made (``TaskDelegate/takeChecked()``) instead of serializing
    /// again. True when the task now waits; false when it completes now: no serializer (a
    /// download, a stream, a task made without one), a body that cannot be sent again, the
    /// cache's answer, Courier's own failure of the body, or a cancelled task.
    private func checkSerialization() -> Bool {
        guard let manager = self.manager, !manager.isInvalidated else { return false }
        let check = self.state.withLockedValue { state -> (any ResponseSerializer, HTTPResponse, Data?)? in
            guard let serializer = state.checkingSerializer ?? state.completion.serializer, let response = state.response,
                self.originalRequest.body.isReplayable, state.bodyFailure == nil, state.hop.source != .cache,
                state.machine.attemptAwaitsCheck()
            else { return nil }
            state.checked = nil
            // Wrapped, not copied: the check's `Data` lives while the serializer reads it (and in a
            // refusal's error); the caller's is made from the body at the task's end.
            return (serializer, response, state.body.map { Data(buffer: $0, byteTransferStrategy: .noCopy) })
        }
        guard let (serializer, response, data) = check else { return false }
        // Cancelled with the task (`cancel()`, `invalidate(cancelingTasks:)`), as a retry's waiter.
        let waiter = Task { await self.serializationChecked(by: serializer, response: response, data: data) }
        if !self.state.withLockedValue({ $0.machine.retryWaitStarted(waiter) }) { waiter.cancel() }
        return true
    }

    private func serializationChecked(by serializer: any ResponseSerializer, response: HTTPResponse, data: Data?) async {
        let (object, refusal) = serializer.serialize(response: response, data: data)
        if Task.isCancelled { return }
        let attempt = self.state.withLockedValue { state -> FailedAttempt? in
            let request = state.currentRequest
            let error = refusal?.adding(request: request, response: response, data: data)
            state.checked = (OptionalFlattening.flattened(object), error)
            guard let error else { return nil }
            let received = state.progress.attemptBytesReceived
            state.metrics?.attemptEnded(response: response, error: error, bytesReceived: received)
            var failed = FailedAttempt(
                taskIdentifier: self.identifier, request: request, response: response, data: data, error: error,
                previousRetries: state.retryReasons, logger: self.interception.logger)
            failed.carriesSessionAuthorization = state.carriesSessionAuthorization
            if let first = state.attemptRequest { failed.initialRequest = first }
            return failed
        }
        guard let attempt else {
            self.decided(.finish(nil))
            return
        }
        self.endFailedHop(attempt)
        await self.decideRetry(after: attempt)
    }

    private func decideRetry(after attempt: FailedAttempt) async {
        var retriers: [any RequestRetrier] = [
            ChallengeRetrier(responder: self.interception.authentication, hook: self.challengeHook(), observer: self.challengeObserver())
        ]
        if var connectivity = self.interception.connectivity {
            if self.interception.monitors != nil {
                connectivity.willWait = { [weak self] in self?.emit { $0.taskIsWaitingForConnectivity($1) } }
            }
            retriers.append(connectivity)
        }
        retriers += self.interception.chain.retriers
        let verdict = await InterceptorChain(retriers: retriers, budget: self.interception.budget).decide(attempt)
        // Cancelled meanwhile: `cancel()` ended the task.
        if Task.isCancelled { return }
        switch verdict {
        case .retry(let delay, let reason):
            // (At most ``RetryDecision/longestDelay``: a clock's deadline holds no longer.)
            self.willRetry(after: attempt, delay: delay, reason: reason)
            do {
                try await self.interception.clock.sleep(for: delay)
            } catch {
                return
            }
            await self.discardAttemptFile()
            self.decided(.retry(reason: reason))
        case .finish(let error):
            self.decided(.finish(error))
        case .refusedByBudget(let reason):
            if let monitors = self.interception.monitors {
                // Under the task's lock, unless cancelled meanwhile (as ``willRetry(after:delay:reason:)``).
                self.state.withLockedValue { state in
                    guard !state.machine.isCancelling, !state.machine.hasEnded, let task = state.task else { return }
                    monitors.emit { $0.task(task, retryRefusedByBudget: attempt, reason: reason) }
                }
            }
            self.decided(.finish(nil))
        }
    }

    /// Acts on a decision, or keeps it for ``resume()`` when the task is suspended.
    private func decided(_ verdict: TaskMachine.Verdict) {
        if let action = self.state.withLockedValue({ $0.machine.retryDecided(verdict) }) { self.run(action) }
    }

    /// Starts the next attempt, or ends the task, as the machine decided on a retry verdict.
    func run(_ action: TaskMachine.VerdictAction) {
        switch action {
        case .retry(let reason):
            let manager = self.state.withLockedValue { state -> SessionManager? in
                state.retryReasons.append(reason)
                state.response = nil
                state.responseStatus = 0
                state.responseURL = nil
                // The next attempt counts from nothing (its head sets them again; one that fails
                // before its head kept the last attempt's, and its metrics counted them twice).
                // The progress object keeps its floor: it never goes backwards.
                state.progress.attemptRetried()
                state.responseTrailers = nil
                state.body = nil
                state.download.attemptRetried()
                state.checked = nil
                state.currentRequest = self.originalRequest
                return state.owner
            }
            manager?.start(self)
        case .complete(let error):
            self.complete(with: error)
        }
    }

    /// Ends a retry wait, and the task with its failed attempt's outcome (the session was invalidated).
    func abandonRetryWait() {
        guard let abandoned = self.state.withLockedValue({ $0.machine.abandonRetryWait() }) else { return }
        abandoned.waiter?.cancel()
        self.complete(with: abandoned.failure)
    }

    /// Lets go of the failed attempt's file. The partial file of resume data stays: the retry
    /// asks for the same range again and continues it (it is truncated back to the bytes the
    /// resume data kept).
    private func discardAttemptFile() async {
        let writer = self.state.withLockedValue { $0.download.takeFile() }
        guard let writer else { return }
        let continued = (self.sink as? DownloadPlan)?.continuation?.file
        await writer.abandon(removingFile: continued.map { $0.standardizedFileURL != writer.url.standardizedFileURL } ?? true)
    }

    /// The retry is decided: monitors, span and logger hear of it.
    private func willRetry(after attempt: FailedAttempt, delay: Duration, reason: RetryReason) {
        // Queued under the task's lock, as `cancel()` queues its event, and only while the task is
        // neither cancelled nor ended: a cancel between the waiter's check and here told the
        // monitors first, and its retry never comes.
        let (announced, span) = self.state.withLockedValue { state in
            guard !state.machine.isCancelling, !state.machine.hasEnded else { return (false, state.tracing.span) }
            if let task = state.task, let monitors = self.interception.monitors {
                monitors.emit { $0.task(task, willRetry: attempt, after: delay, reason: reason) }
            }
            return (true, state.tracing.span)
        }
        guard announced else { return }
        span?.retrying(after: attempt, reason: reason, delay: delay)
        var metadata: Logger.Metadata = ["courier-retry-reason": "\(reason)", "courier-retry-delay": "\(delay)"]
        if let status = attempt.statusCode { metadata["courier-response-status"] = "\(status)" }
        if let error = attempt.error { metadata["courier-error"] = "\(error.code)" }
        attempt.logger.debug("retrying", metadata: metadata)
    }

    /// The session's challenge hook for this task, if set; it looks the task up when called, so
    /// that nothing here holds the task.
    /// Tells the monitors of each challenge answered; nil without monitors.
    private func challengeObserver() -> (@Sendable (AuthenticationChallenge, ChallengeDisposition) -> Void)? {
        guard let monitors = self.interception.monitors else { return nil }
        return { [weak self] challenge, disposition in
            guard let task = self?.state.withLockedValue({ $0.task }) else { return }
            monitors.emit { $0.task(task, didReceive: challenge, disposition: disposition) }
        }
    }

    private func challengeHook() -> (@Sendable (AuthenticationChallenge) -> ChallengeDisposition)? {
        guard let hook = self.hook({ $0.taskDidReceiveAuthenticationChallenge }) else { return nil }
        return { [weak self] challenge in
            guard let self, let task = self.state.withLockedValue({ $0.task }), let manager = self.manager else {
                return .performDefaultHandling
            }
            return hook(manager, task, challenge)
        }
    }
}

/// The session's `WWW-Authenticate` handling as the first retrier of every task.
struct ChallengeRetrier: RequestRetrier {
    let responder: HTTPAuthenticationResponder
    let hook: (@Sendable (AuthenticationChallenge) -> ChallengeDisposition)?
    var observer: (@Sendable (AuthenticationChallenge, ChallengeDisposition) -> Void)?

    func retry(_ attempt: FailedAttempt) async throws -> RetryDecision {
        self.responder.respond(to: attempt, hook: self.hook, observer: self.observer)
    }
}
