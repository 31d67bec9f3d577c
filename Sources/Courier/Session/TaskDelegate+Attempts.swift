import Instrumentation
import NIOConcurrencyHelpers
import Foundation
import Logging

/// The start of each attempt: adapt the request the task was made with (adapters, then the
/// session's HTTP authentication, then the trace context), then hand it to the engine.
extension TaskDelegate {
    /// Begins the task's current attempt. Without adapters this runs on the caller's thread; with
    /// them, on a task of its own that ``cancel()`` cancels.
    func beginAttempt(on manager: SessionManager) {
        let interception = self.interception
        // The task's span, started outside the task's lock: the tracer is the caller's code, and
        // may read the task or its manager.
        var started: TaskSpan?
        if let tracer = interception.tracer, self.state.withLockedValue({ $0.machine.attempt == 0 && $0.tracing.span == nil }) {
            started = TaskSpan.start(tracer: tracer, for: self.originalRequest, parent: interception.parentContext ?? .topLevel)
        }
        let (attempt, retries, span, unkept) = self.state.withLockedValue { state -> (Int, Int, TaskSpan?, TaskSpan?) in
            state.metrics?.attemptBegan(self.originalRequest)
            // Kept unless the task ended meanwhile (a cancel): its end, which ends the span it
            // finds, has run.
            var unkept: TaskSpan?
            if let started {
                if state.tracing.span == nil, !state.machine.hasEnded { state.tracing.span = started } else { unkept = started }
            }
            if interception.adaptsAsynchronously { state.machine.adaptationBegan() }
            return (state.machine.attempt, state.retryReasons.count, state.tracing.span, unkept)
        }
        unkept?.end(response: nil, error: nil, retryCount: 0)
        if attempt == 0 { interception.budget?.deposit() }
        if interception.logger.logLevel <= .trace {
            interception.logger.trace(
                "attempt started",
                metadata: ["courier-attempt": "\(attempt + 1)", "courier-request": "\(self.originalRequest.summary)"])
        }
        guard interception.adaptsAsynchronously else {
            let (request, ownAuthorization) = self.finishAdapting(self.originalRequest, span: span)
            self.send(request, attempt: attempt, ownAuthorization: ownAuthorization, on: manager)
            return
        }
        let context = AdaptationContext(taskIdentifier: self.identifier, retryCount: retries, logger: interception.logger)
        // The adapters are `async`: they run on a task of their own, which ends when they do;
        // `cancel()` (and so `invalidate(cancelingTasks: true)`) cancels it and ends the task at once.
        let work = Task {
            let result: Result<Request, CourierError>
            do throws(CourierError) {
                result = .success(try await interception.chain.adapt(self.originalRequest, using: context))
            } catch {
                result = .failure(error)
            }
            self.adaptationDidFinish(result, attempt: attempt, span: span, on: manager)
        }
        // A cancellation cancels the work it finds; one that came before the work existed is
        // acted on here.
        // (The request is read only for the error: a copy of it is a retain.)
        let (action, request) = self.state.withLockedValue { state -> (TaskMachine.AdaptersStartedAction, Request?) in
            let action = state.machine.adaptationStarted(work)
            return (action, action == .cancelAndComplete ? state.currentRequest : nil)
        }
        switch action {
        case .keep:
            break
        case .cancel:
            work.cancel()
        case .cancelAndComplete:
            work.cancel()
            if let request { self.complete(with: .cancelled(request)) }
        }
    }

    /// The adapters are done: send their request, or end the task with their failure.
    private func adaptationDidFinish(_ result: Result<Request, CourierError>, attempt: Int, span: TaskSpan?, on manager: SessionManager) {
        let (action, task, request) = self.state.withLockedValue {
            ($0.machine.adaptationFinished(attempt: attempt), $0.task, $0.currentRequest)
        }
        if action == .completeCancelled {
            self.complete(with: .cancelled(request))
            return
        }
        guard action == .send, let task else { return }
        switch result {
        case .success(let adapted):
            let (request, ownAuthorization) = self.finishAdapting(adapted, span: span)
            self.interception.monitors?.emit { $0.task(task, didAdaptRequest: self.originalRequest, to: request) }
            self.send(request, attempt: attempt, ownAuthorization: ownAuthorization, on: manager)
        case .failure(let error):
            self.interception.monitors?.emit { $0.task(task, didFailToAdaptRequest: self.originalRequest, with: error) }
            self.interception.logger.debug("an adapter failed the request", metadata: ["courier-error": "\(error.code)"])
            self.complete(with: error)
        }
    }

    /// The steps after the adapters: the session's HTTP authentication for a space it answered
    /// before, and the trace context (a hop span's, when the session has a tracer). Also says
    /// whether the `Authorization` field is the session's own (a stale Digest nonce is then the
    /// session's to renew, not the caller's refusal).
    private func finishAdapting(_ request: Request, span: TaskSpan?) -> (request: Request, ownAuthorization: Bool) {
        let authenticated = self.interception.authentication.authenticate(request)
        // The responder hands back the request itself when it added nothing (the common case):
        // neither request's fields are then looked through.
        let ownAuthorization =
            !authenticated.sharesStorage(with: request) && !request.headerFields.contains(.authorization)
            && authenticated.headerFields.contains(.authorization)
        guard let span else { return (authenticated, ownAuthorization) }
        let (attempt, resends) = self.state.withLockedValue { state in
            defer { state.tracing.tracedHops += 1 }
            return (state.machine.attempt, state.tracing.tracedHops)
        }
        let (hop, prepared) = span.startHop(authenticated, attempt: attempt, redirect: 0, resendCount: resends)
        let previous = self.state.withLockedValue { state -> HopSpan? in
            defer { state.tracing.hopSpan = (hop, 0) }
            return state.tracing.hopSpan?.span
        }
        previous?.end(response: nil, error: nil)
        return (prepared, ownAuthorization)
    }

    /// Hands an attempt's request to the engine.
    private func send(_ request: Request, attempt: Int, ownAuthorization: Bool, on manager: SessionManager) {
        // The adapters may have given the body another length (a compressor sends a file or a
        // stream compressed as it goes, its length unknown): the upload's expected total is the
        // body sent, -1 when unknown (URLSession's `NSURLSessionTransferSizeUnknown`), not the
        // task's request's. The first attempt's request, unchanged, is not looked at again (a
        // file body's size is a system call); a later attempt's is, after an earlier one changed it.
        let expected: Int64? =
            attempt == 0 && request.sharesStorage(with: self.originalRequest) ? nil : request.body.knownLength ?? -1
        // Recorded in the first hop's transaction (``TaskState/attemptSends(_:expected:ownAuthorization:)``).
        manager.execute(request, for: self, attempt: attempt, expected: expected, ownAuthorization: ownAuthorization)
    }
}

extension TaskState {
    /// The attempt's request goes to the engine: it is the task's current request from now on.
    /// `expected` is the upload's total when the adapters changed the body (see
    /// ``TaskDelegate``'s `send`); `ownAuthorization` whether its `Authorization` is the session's.
    mutating func attemptSends(_ request: Request, expected: Int64?, ownAuthorization: Bool) {
        if let expected {
            self.progress.bodyLengthChanged(to: expected)
        }
        self.currentRequest = request
        self.attemptRequest = nil
        self.carriesSessionAuthorization = ownAuthorization
        self.metrics?.exchangeBegan(request)
    }
}
