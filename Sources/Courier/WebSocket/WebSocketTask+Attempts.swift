import Foundation
import HTTPTypes
import Logging
import NIOConcurrencyHelpers

/// The opening handshake's attempts, as a ``SessionTask``'s: each runs the session's and the
/// request's adapters, then the session's HTTP authentication (an `Authorization` for a protection
/// space it answered), then the trace context; a handshake that failed goes to the same retriers a
/// task's failed attempt goes to (the session's `WWW-Authenticate` handling first, the
/// connectivity retry, then the session's and the request's retriers), under the same retry
/// budget, and a retry waits its delay on the session's ``RetryClock``.
///
/// A handshake answered with a status of 400 or more is a failed attempt with that response (and
/// no error), as a task's; any other failure (no connection, a 101 that breaks RFC 6455, a timeout)
/// is one with its error. Only the handshake is retried: once the connection is open, the task
/// ends with it.
extension WebSocketTask {
    /// Begins the current attempt: the adapters (on a task of their own when there are any, which
    /// ``cancel()`` cancels), then the handshake.
    func beginAttempt() {
        guard let interception = self.interception, interception.adaptsAsynchronously else {
            self.connect(self.prepared(self.request))
            return
        }
        let retries = self.state.withLockedValue { $0.retryReasons.count }
        let context = AdaptationContext(taskIdentifier: 0, retryCount: retries, logger: interception.logger)
        // A task of its own: the adapters are async and this is called from the caller's
        // `resume()` or a retry's end. Kept in the task's state (`keep`), where `cancel()`
        // cancels it; it ends when the adapters do.
        let work = Task {
            do throws(CourierError) {
                let adapted = try await interception.chain.adapt(self.request, using: context)
                // Cancelled meanwhile: nothing to connect.
                guard !self.isFinished, !Task.isCancelled else { return }
                self.connect(self.prepared(adapted))
            } catch {
                self.finish(error: error, code: .abnormalClosure, reason: "")
            }
        }
        self.keep(work)
    }

    /// The steps after the adapters: the session's authentication for a space it answered, then
    /// the attempt's hop span and its trace context.
    private func prepared(_ request: Request) -> Request {
        guard let interception = self.interception else { return request }
        let authenticated = interception.authentication.authenticate(request)
        let ownAuthorization = !request.headerFields.contains(.authorization) && authenticated.headerFields.contains(.authorization)
        let (span, retries) = self.state.withLockedValue { state -> (TaskSpan?, Int) in
            state.carriesSessionAuthorization = ownAuthorization
            return (state.span, state.retryReasons.count)
        }
        guard let span else { return authenticated }
        // The hop's span, started outside the task's lock (the tracer is the caller's code).
        let (hop, traced) = span.startHop(authenticated, attempt: retries, redirect: 0, resendCount: retries)
        // Kept unless the task ended meanwhile, whose end ended the spans it found.
        let kept = self.state.withLockedValue { state -> Bool in
            if case .finished = state.phase { return false }
            state.hopSpan = hop
            return true
        }
        if !kept { hop.end(response: nil, error: self.error) }
        return traced
    }

    /// Keeps `work` for ``cancel()``, or cancels it when the task ended meanwhile.
    private func keep(_ work: Task<Void, Never>) {
        let finished = self.state.withLockedValue { state -> Bool in
            if case .finished = state.phase { return true }
            state.work = work
            return false
        }
        if finished { work.cancel() }
    }

    /// The handshake of the current attempt failed with `error` (`request` is what was sent):
    /// the retriers decide, or the task ends with it.
    func handshakeFailed(_ error: CourierError, request: Request) {
        // A final answer of 400 or more is a response, as a task sees it; anything else an error.
        let response = error.response
        let answered = (response?.status.code ?? 0) >= 400
        let attemptError = answered ? nil : error
        // Closed while its handshake was under way: no retry.
        guard let interception = self.interception, let manager = self.manager, !manager.isInvalidated,
            !self.state.withLockedValue({ $0.isClosing }), interception.mayRetry(answered ? response : nil)
        else {
            self.finish(error: error, code: .abnormalClosure, reason: "")
            return
        }
        let waiting = self.state.withLockedValue { state -> (FailedAttempt, HopSpan?)? in
            guard case .connecting = state.phase else { return nil }
            state.phase = .awaitingRetry
            state.retryFailure = error
            state.recorder.attemptEnded(response: response, error: error, bytesReceived: 0)
            var attempt = FailedAttempt(
                taskIdentifier: 0, request: request, response: response, error: attemptError, previousRetries: state.retryReasons,
                logger: interception.logger)
            attempt.carriesSessionAuthorization = state.carriesSessionAuthorization
            defer { state.hopSpan = nil }
            return (attempt, state.hopSpan)
        }
        // Ended meanwhile (cancelled): nothing to decide.
        guard let (attempt, hop) = waiting else { return }
        hop?.end(response: response, error: attemptError)
        // A task of its own: the retriers and the retry's delay are async, and this runs on the
        // connection's event loop. Kept in the task's state, where `cancel()` cancels it (which
        // ends the delay's wait at once).
        self.keep(Task { await self.decideRetry(after: attempt, failure: error, interception: interception) })
    }

    /// Ends a retry's wait, and the task with the failure it waited to retry (the manager was
    /// invalidated without cancelling its tasks, as a task's wait ends then).
    func abandonRetryWait() {
        let abandoned = self.state.withLockedValue { state -> (CourierError, Task<Void, Never>?)? in
            guard case .awaitingRetry = state.phase, let failure = state.retryFailure else { return nil }
            return (failure, state.work)
        }
        guard let (failure, work) = abandoned else { return }
        work?.cancel()
        self.finish(error: failure, code: .abnormalClosure, reason: "")
    }

    /// Asks the retriers about a failed handshake; retries after the delay, or ends the task.
    private func decideRetry(after attempt: FailedAttempt, failure: CourierError, interception: TaskInterception) async {
        // The session's challenge hook and its challenge events take a `SessionTask`: a WebSocket
        // task's challenges are answered from the credential store and the URL's user information.
        var retriers: [any RequestRetrier] = [ChallengeRetrier(responder: interception.authentication, hook: nil)]
        if let connectivity = interception.connectivity { retriers.append(connectivity) }
        retriers += interception.chain.retriers
        let verdict = await InterceptorChain(retriers: retriers, budget: interception.budget).decide(attempt)
        // Cancelled meanwhile: `cancel()` ended the task.
        if Task.isCancelled { return }
        switch verdict {
        case .retry(let delay, let reason):
            self.monitors?.emit { $0.webSocketTask(self, willRetry: attempt, after: delay, reason: reason) }
            self.state.withLockedValue { $0.span }?.retrying(after: attempt, reason: reason, delay: delay)
            var metadata: Logger.Metadata = ["courier-retry-reason": "\(reason)", "courier-retry-delay": "\(delay)"]
            if let status = attempt.statusCode { metadata["courier-response-status"] = "\(status)" }
            if let error = attempt.error { metadata["courier-error"] = "\(error.code)" }
            attempt.logger.debug("retrying the WebSocket handshake", metadata: metadata)
            do {
                try await interception.clock.sleep(for: delay)
            } catch {
                return
            }
            let again = self.state.withLockedValue { state -> Bool in
                guard case .awaitingRetry = state.phase else { return false }
                state.phase = .connecting
                state.retryFailure = nil
                state.retryReasons.append(reason)
                state.work = nil
                state.recorder.attemptBegan(self.request)
                return true
            }
            if again { self.beginAttempt() }
        case .finish(let error):
            self.finish(error: error ?? failure, code: .abnormalClosure, reason: "")
        case .refusedByBudget:
            self.finish(error: failure, code: .abnormalClosure, reason: "")
        }
    }
}
