import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import NIOFoundationCompat
import Synchronization

/// How a task ended: the one value every way a task ends makes (a data task's gathered body, a
/// stream's end, a download's file) and every completion mode reads. It holds the task and its
/// manager from the task's end until it has been delivered (a running task's own holds are let go
/// when it completes). Made under the task's lock when its machine says the task is over, settled
/// exactly once (``TaskDelegate/settle(_:)``) where the completion goes next, then delivered.
/// Passed on by moves and `inout`, never copied on the way: each copy would retain every field.
struct TaskOutcome: Sendable {
    /// The task that ended.
    let task: SessionTask
    /// The manager that made it.
    let manager: SessionManager
    /// The last request sent.
    var request: Request
    var response: HTTPResponse?
    var data: Data?
    var error: CourierError?
    /// Where a download's file ended up.
    var fileURL: URL?
    /// The task's metrics.
    var metrics: TaskMetrics?
    /// Whether the response came from the network or the cache.
    var source = ResponseSource.network
    /// Whether ``TaskDelegate/settle(_:)`` has run.
    fileprivate(set) var isSettled = false
}

extension TaskOutcome {
    // In an extension, so that it can call the memberwise initializer: one written out field by
    // field was compiled to make the outcome, copy it into place and destroy the first (seven
    // retains a request, and as many releases).
    init(
        task: SessionTask, manager: SessionManager, request: Request, response: HTTPResponse?, data: Data?, error: CourierError?,
        fileURL: URL? = nil
    ) {
        self.init(task: task, manager: manager, request: request, response: response, data: data, error: error, fileURL: fileURL, metrics: nil)
    }
}

/// A completion handler, as the caller gave it or (the HTTP verbs') with the task it completes.
enum CompletionHandler: Sendable {
    /// ``SessionManager/dataTask(with:uploadProgress:downloadProgress:completionHandler:)``'s.
    case plain(@Sendable (HTTPResponse?, (any Sendable)?, CourierError?) -> Void)
    /// One that is handed the task too: no box is needed to reach a task from its own handler.
    case withTask(@Sendable (SessionTask, HTTPResponse?, (any Sendable)?, CourierError?) -> Void)

    func callAsFunction(_ task: SessionTask, _ response: HTTPResponse?, _ object: (any Sendable)?, _ error: CourierError?) {
        switch self {
        case .plain(let handler): handler(response, object, error)
        case .withTask(let handler): handler(task, response, object, error)
        }
    }
}

/// How a task reports its end.
enum TaskCompletion: Sendable {
    /// Nobody waits (hooks and notifications still run).
    case none
    /// AFNetworking's completion handler: serialized off the engine's threads, called on the
    /// completion queue.
    case handler(any ResponseSerializer, CompletionHandler)
    /// The raw outcome, settled and delivered on the engine's thread (a streamed task's, a 2.x
    /// operation's). A delivery is counted before the task is settled
    /// (``SessionManager/beginDelivery()``); the closure ends it
    /// (``SessionManager/endDelivery()``) once what it hands the end to has run, so that an
    /// invalidated manager waits for that.
    case outcome(@Sendable (TaskOutcome) -> Void)
    /// An `async` caller waiting on the task: its continuation waits in
    /// ``TaskState/awaitingCaller`` (``TaskDelegate/resume(awaiting:)``; the task is made before it,
    /// so that the caller holds the task itself and no box for it). Resumed once the task's end is
    /// in ``TaskState/awaitedOutcome``, the caller takes the end from there and settles it on its
    /// own task (``TaskDelegate/settle(_:)``), so that the cache store, the metrics and the task's
    /// end run there instead of on the engine's thread (with HTTP/2, one loop carries every stream
    /// of a connection). (A completion handler's task settles on the processing queue; a download
    /// arrives settled.) The end is not the continuation's value: handing it through the
    /// continuation copied it twice (each copy retains every field of the outcome).
    case awaiting
    /// A download's completion handler: the response, the file's final URL, the error; called on
    /// the completion queue.
    case download(@Sendable (HTTPResponse?, URL?, CourierError?) -> Void)

    /// A completion handler's serializer.
    var serializer: (any ResponseSerializer)? {
        if case .handler(let serializer, _) = self { return serializer }
        return nil
    }
}

/// The per-task delegate of the seed system (AFURLSessionManagerTaskDelegate): it receives the
/// exchange's events, keeps the task's state, gathers the body and reports the end.
final class TaskDelegate: ExchangeDelegate, Sendable {
    enum ProgressKind { case upload, download }

    /// The manager that made the task, while the task runs: the task's state holds it
    /// (``TaskState/owner``) from the task's creation until its completion, and a finished task
    /// keeps nothing of Courier's alive (AFNetworking 3's leak: a task's delegate held its manager
    /// for ever). Not a weak reference: one would give the manager a side table, and every retain
    /// and release of it, by every task, the runtime's slow path. Read outside the task's lock.
    var manager: SessionManager? { self.state.withLockedValue { $0.owner } }
    /// The hook `read` picks from those the task was made with (nil once the task-did-complete
    /// hook was taken, or when there were none).
    @inline(__always)
    func hook<Hook>(_ read: (borrowing SessionManager.Hooks) -> Hook?) -> Hook? { self.hookTable?.read(read) }
    /// The manager's configuration, for the task's own reading on the engine's threads: the
    /// manager's one copy, by reference.
    let configurationReference: SessionConfigurationReference
    /// The manager's configuration.
    var configuration: SessionConfiguration { self.configurationReference.value }
    let identifier: Int
    /// The hooks the task was made with, until its task-did-complete hook is taken; nil when it
    /// was made with none. Read with ``hook(_:)``.
    let hookTable: TaskHooks?
    /// Whether anything outside the task hears of its events as they come: event monitors, or
    /// the session's hooks (a task made while none was set has no hook table).
    var isWatched: Bool { self.interception.monitors != nil || self.hookTable != nil }
    /// The task's state, behind a lock kept inline in the delegate (one allocation fewer per task
    /// than a separate box, and the state is moved in instead of copied).
    let state: Mutex<TaskState>
    /// Where the response body goes: memory, a file or a stream.
    let sink: any BodySink
    /// The request the task was made with: every attempt adapts it afresh.
    let originalRequest: Request
    /// Adapters, retriers, monitors, logger and tracer, as they were when the task was made.
    let interception: TaskInterception

    init(
        manager: SessionManager,
        identifier: Int,
        request: Request,
        completion: TaskCompletion,
        uploadProgress: (@Sendable (Progress) -> Void)?,
        downloadProgress: (@Sendable (Progress) -> Void)?,
        sink: any BodySink = MemoryBodySink()
    ) {
        self.sink = sink
        self.configurationReference = manager.configurationReference
        self.identifier = identifier
        self.originalRequest = request
        let (interception, sessionHooks) = TaskInterception.makeWithHooks(manager: manager, request: request, identifier: identifier)
        self.interception = interception
        // The request's own redirect and cache handlers take the place of the session's hooks for
        // this task, every hop of it, whatever request a redirect or an adapter makes (Alamofire's
        // request-level handlers).
        let hooks = sessionHooks.taking(request.redirector, request.responseCacher)
        self.hookTable = TaskHooks.make(hooks)
        // Moved into the lock: the state is large, and a copy cost a whole copy and destroy.
        // Metrics are gathered when the session asks for them, or when something would read them
        // that the setting does not cover: an event monitor or the metrics hook.
        let collectsMetrics = manager.configurationReference.value.collectsTaskMetrics
            || self.interception.monitors != nil || hooks.taskDidFinishCollectingMetrics != nil
        self.state = Mutex(TaskState(
            request: request, owner: manager, completion: completion, collectsMetrics: collectsMetrics,
            uploadProgressHandler: uploadProgress, downloadProgressHandler: downloadProgress))
        #if DEBUG
        LiveObjectCensus.born(self, .taskDelegate, "\(request.method.rawValue) \(request.url.absoluteString)")
        #endif
    }

    #if DEBUG
    deinit {
        LiveObjectCensus.died(self)
    }
    #endif

    // MARK: Life cycle

    // Resume, suspend and cancel queue their event to the monitors under the task's lock, as they
    // change its state: the monitors hear those changes in the order they were made, whichever
    // threads race (a `suspend()` and a `resume()` on two threads were heard the other way round,
    // the task left resumed). No monitor's code runs there: ``EventMonitorGroup/emit(_:)`` only
    // appends the event to each queue's lane, under the lane's own lock (taken under no other
    // and held while calling nothing out), and the monitors get it on their queue. The event is
    // made only when the session has monitors. The notifications are posted after the lock: their
    // observers run at once.

    /// `caller`: an `async` caller's continuation (``TaskCompletion/awaiting``), left where the
    /// task's end wakes it (``TaskState/awaitingCaller``) in the same transaction as the resume;
    /// resumed at once when the end is there already (a task cancelled before it was resumed).
    func resume(awaiting caller: UnsafeContinuation<Void, Never>? = nil) {
        var ended = false
        let (action, task, owner) = self.state.withLockedValue { state -> (TaskMachine.ResumeAction, SessionTask?, SessionManager?) in
            if let caller {
                if state.awaitedOutcome != nil { ended = true } else { state.awaitingCaller = caller }
            }
            let action = state.machine.resume()
            if case .none = action { return (action, nil, nil) }
            var owner: SessionManager?
            if case .startAttempt = action {
                // From here until its completion has run, the task is held: the caller may drop it.
                // (A task made to be resumed at once is held already.)
                if state.runningTask == nil { state.runningTask = state.unstartedTask }
                owner = state.owner
            }
            let task = state.task
            if let task { self.interception.monitors?.emit { $0.taskDidResume(task) } }
            return (action, task, owner)
        }
        if ended { caller?.resume() }
        switch action {
        case .startAttempt:
            guard let task else { return }
            self.postDidResume(task)
            guard let manager = owner else { return }
            manager.start(self)
        case .resumeReceiving(let then):
            self.applyReceiveWish()
            if let task { self.postDidResume(task) }
            // A retry decided while the task was suspended is acted on now.
            if let then { self.run(then) }
        case .none:
            break
        }
    }

    func suspend() {
        let (action, exchange, task) = self.state.withLockedValue { state -> (TaskMachine.SuspendAction, (any Exchange)?, SessionTask?) in
            let action = state.machine.suspend()
            guard action == .suspendReceiving else { return (action, nil, nil) }
            let task = state.task
            if let task { self.interception.monitors?.emit { $0.taskDidSuspend(task) } }
            return (action, state.machine.exchange, task)
        }
        guard action == .suspendReceiving else { return }
        if exchange != nil { self.applyReceiveWish() }
        if let task { self.postDidSuspend(task) }
    }

    func cancel() {
        let (action, request) = self.state.withLockedValue { state -> (TaskMachine.CancelAction, Request) in
            let action = state.machine.cancel()
            if case .none = action { return (action, state.currentRequest) }
            if let task = state.task { self.interception.monitors?.emit { $0.taskDidCancel(task) } }
            return (action, state.currentRequest)
        }
        if case .none = action { return }
        let error = CourierError.cancelled(request)
        switch action {
        case .complete(let work):
            // Never started, adapting, or deciding or waiting to retry: no exchange runs, the
            // task ends here.
            work?.cancel()
            self.complete(with: error)
        case .cancelExchange(let exchange):
            // The exchange may not be stored yet when the task was cancelled right after resume;
            // `attach(_:attempt:)` cancels it then.
            exchange?.cancel(with: error)
        case .none:
            break
        }
    }

    /// The engine's handle for the exchange it is about to start for the current attempt (inside
    /// the attempt's `execute`): kept now, so that a `suspend()` or `cancel()` called from the
    /// exchange's first events reaches it; ``attach(_:attempt:)`` then acts on what was decided.
    func exchangeWillStart(_ exchange: any Exchange) {
        self.state.withLockedValue { $0.machine.exchangeWillStart(exchange) }
    }

    /// Keeps the engine's handle for the task's `attempt`-th exchange; cancels it at once if the
    /// task was cancelled meanwhile, pauses it if the task was suspended meanwhile.
    func attach(_ exchange: any Exchange, attempt: Int) {
        let (action, request) = self.state.withLockedValue { ($0.machine.attach(exchange, attempt: attempt), $0.currentRequest) }
        switch action {
        case .cancel: exchange.cancel(with: .cancelled(request))
        case .pause: self.applyReceiveWish()
        case .none: break
        }
    }

    /// Pauses the exchange while the task is suspended or its file writer or stream consumer is
    /// behind, else lets it read.
    ///
    /// More than one party decides (the caller's `suspend()`/`resume()`, a download's file writer,
    /// a stream's consumer), from more than one thread. Each call takes a new number
    /// (``TaskState/receiveWishes``) with the wish and, once it has applied that wish, applies the
    /// newest one again if anyone decided meanwhile: whatever the order in which the threads
    /// reach the exchange, the last wish wins, and no exchange stays paused by a stale call. No
    /// lock is held while the exchange is called, so a call that makes it deliver bytes at once
    /// may re-enter.
    func applyReceiveWish() {
        let sink = self.sink
        var (exchange, mine, suspended, writer) = self.state.withLockedValue { state in
            state.receiveWishes += 1
            return (state.machine.exchange, state.receiveWishes, state.machine.wantsPause, state.download.file)
        }
        guard let exchange else { return }
        while true {
            // The writer and the stream are asked outside the task's lock (they take their own).
            if suspended || writer?.wantsPause == true || sink.isBehind {
                exchange.suspendReceiving()
            } else {
                exchange.resumeReceiving()
            }
            let newer = self.state.withLockedValue { state -> (Int, Bool, DownloadFileWriter?)? in
                guard state.receiveWishes != mine else { return nil }
                state.receiveWishes += 1
                return (state.receiveWishes, state.machine.wantsPause, state.download.file)
            }
            guard let newer else { return }
            (mine, suspended, writer) = newer
        }
    }

    // MARK: Progress

    func progress(_ kind: ProgressKind) -> Progress {
        self.state.withLockedValue { $0.progressObject(kind) }
    }

    // MARK: ExchangeDelegate

    func exchange(didSendBodyData bytesSent: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64?) {
        let (report, task, deliveries) = self.state.withLockedValue { state -> (ProgressReport?, SessionTask?, [ProgressDelivery]) in
            state.metrics?.bodySent(total: totalBytesSent)
            // A redirect or a retry that resends the body counts from zero again: progress stays
            // where it was, and a resend below what went before reports nothing (a body a 307 or
            // 308 sent again reported 1.0 again at each step of the second send).
            guard state.progress.bodySent(total: totalBytesSent, expected: totalBytesExpectedToSend) else { return (nil, state.task, []) }
            state.makeUploadObjectIfWanted()
            return (
                ProgressReport(state.progress.uploadObject, state.progress.uploadHandler), state.task, state.progress.deliveries(.upload)
            )
        }
        self.deliver(deliveries)
        report?.send()
        if let hook = self.hook({ $0.taskDidSendBodyData }), let task, let manager = self.manager {
            hook(manager, task, bytesSent, totalBytesSent, totalBytesExpectedToSend ?? -1)
        }
        if let monitors = self.interception.monitors, let task {
            monitors.emit { $0.task(task, didSendBodyData: bytesSent, totalBytesSent: totalBytesSent, totalBytesExpectedToSend: totalBytesExpectedToSend ?? -1) }
        }
    }

    /// A redirect the engine proposes. The session's part (``redirect(_:newRequest:fromCache:)``),
    /// then, when the task reads and writes the cache, the cache's say on the target
    /// (``SessionManager/planLaterHop(_:for:readsDisk:)``): the engine follows with the request to send
    /// (validators added when a stored response is to be revalidated); when the cache answers the
    /// target (a fresh stored response, or stored redirects that lead to one), or the policy
    /// forbids loading it, the redirect is declined here and the task ends that way once the
    /// engine's exchange has (``HopState/afterExchange``).
    func exchange(willPerformRedirection response: HTTPResponse, newRequest: Request) -> Request? {
        // A redirect that reached the loop after the caller's `cancel()` (whose cancel is on its
        // way to the exchange) is declined before anyone hears of it; its head then is refused as
        // a final head after a cancel is (``finalResponseArrived(_:url:status:holding:)``). Its cookies were
        // stored, the redirect hook ran and the current request moved to its target.
        //
        // The engine counts the redirects of its own exchange only, and the attempt may have
        // followed some from the cache before it (``followingStoredRedirects(_:on:readsDisk:)``):
        // the policy's limit is checked here over the attempt's whole chain (``HopState/redirects``,
        // which counts both), as URLSession and OkHttp count it. Past it, the redirect is declined
        // and the task fails as the engine fails it (``RedirectPlanner``). Without stored
        // redirects the two counts are the same, and the engine never proposes one past it.
        let (cancelling, chain) = self.state.withLockedValue { state in
            (state.machine.isCancelling, (request: state.hop.sentRequest ?? state.currentRequest, redirects: state.hop.redirects))
        }
        if cancelling { return nil }
        if case .follow(let maximum, _) = self.configurationReference.value.redirectPolicy(for: chain.request), chain.redirects >= maximum {
            let failure = CourierError(
                .tooManyRedirects, "\(chain.request.summary): more than \(maximum) redirects", request: chain.request, response: response)
            self.state.withLockedValue { $0.hop.afterExchange = .failure(failure) }
            return nil
        }
        guard let next = self.redirect(response, newRequest: newRequest, fromCache: false) else { return nil }
        guard self.sink.usesCache, self.configurationReference.value.responseCache != nil, let manager = self.manager else { return next }
        // On the engine's thread: the cache's memory tier only.
        let end: Result<CachedResponse, CourierError>
        switch self.followingStoredRedirects(manager.planLaterHop(next, for: self, readsDisk: false), on: manager, readsDisk: false) {
        case .send(let sent): return sent ?? next
        case .answer(let cached): end = .success(cached)
        case .fail(let failure): end = .failure(failure)
        }
        self.state.withLockedValue { $0.hop.afterExchange = end }
        return nil
    }

    /// A redirect, from the network or the cache: two transactions on the task's lock, one to read
    /// what it needs (``RedirectContext``), one to record the next hop; the redirect's cookies,
    /// its storing and cache invalidation (for one from the network), the redirect hook and the
    /// next hop's cookies run between them, unlocked. Returns the next hop's request, or nil
    /// when the hook declined the redirect.
    func redirect(_ response: HTTPResponse, newRequest: Request, fromCache: Bool) -> Request? {
        let context = self.state.withLockedValue { RedirectContext(&$0) }
        if !fromCache {
            self.responseArrived(response, to: context.sentRequest, handlesCookies: context.handlesCookies)
            if context.mayStore { self.storeFollowedRedirect(response, context: context) }
        }
        let chosen: Request?
        if let hook = self.hook({ $0.taskWillPerformHTTPRedirection }), let task = context.task, let manager = self.manager {
            chosen = hook(manager, task, response, newRequest)
        } else {
            chosen = newRequest
        }
        let planned = chosen.map { self.nextHop($0, proposed: newRequest, context: context) }
        let sent = planned?.request
        // The cache's clock, read only when there is a cache (the dates are for what it stores).
        let requestDate = sent == nil ? nil : self.configurationReference.value.responseCache?.now
        // The hop ends with its redirect; the next one gets a span of its own.
        context.hopSpan?.span.end(response: response, error: nil)
        var next = sent
        var followingSpan: (span: HopSpan, redirects: Int)?
        if let span = context.span, let hop = context.hopSpan, let chosen = sent {
            let (following, prepared) = span.startHop(
                chosen, attempt: context.attempt, redirect: hop.redirects + 1, resendCount: context.tracedHops)
            followingSpan = (following, hop.redirects + 1)
            next = prepared
        }
        self.state.withLockedValue { state in
            state.tracing.hopSpan = followingSpan
            if followingSpan != nil { state.tracing.tracedHops += 1 }
            if let planned {
                state.hop.revalidating = nil
                state.hop.sentRequest = planned.request
                state.hop.requestDate = requestDate
                state.hop.redirects += 1
                state.carriesSessionAuthorization = planned.ownAuthorization
            }
            if let next {
                if state.attemptRequest == nil { state.attemptRequest = state.currentRequest }
                state.currentRequest = next
                // Followed only (a declined redirect is the task's answer, not a redirect).
                state.metrics?.redirected()
            } else {
                state.hop.handledDeclinedRedirect = true
            }
        }
        if let monitors = self.interception.monitors, let task = context.task {
            let redirected = next
            monitors.emit { $0.task(task, willPerformRedirection: response, newRequest: redirected) }
        }
        return next
    }

    func exchange(didReceive response: HTTPResponse, url: URL) -> ResponseDisposition {
        let status = response.status.code
        let holding = self.mayRetry(after: response, status: status)
        switch self.finalResponseArrived(response, url: url, status: status, holding: holding) {
        case .recorded(let recorded):
            return self.sink.headRecorded(recorded, response: response, status: status, holding: holding, delegate: self)
        case .unrecorded:
            return self.sink.headArrived(response, status: status, url: url, delegate: self)
        case .revalidated(let status, let revalidated, let storedBody):
            let disposition = self.sink.headArrived(revalidated, status: status, url: url, delegate: self)
            // A 304 that confirmed a stored response: its body is the stored one.
            if disposition == .allow, let storedBody { self.sink.bodyArrived(storedBody, delegate: self) }
            return disposition
        case .declined:
            return .cancel
        }
    }

    func exchange(didReceive chunk: ByteBuffer) {
        self.sink.bodyArrived(chunk, delegate: self)
    }

    func exchange(willReceiveResponseOver networkProtocolName: String) {
        let hop = self.state.withLockedValue { state in
            state.networkProtocolName = networkProtocolName
            return state.tracing.hopSpan?.span
        }
        hop?.responseArrives(over: networkProtocolName)
    }

    func exchange(didReceiveTrailers trailers: HTTPFields) {
        self.state.withLockedValue { $0.responseTrailers = trailers }
    }

    func exchange(didFinishTransaction metrics: TransactionMetrics) {
        self.state.withLockedValue { $0.metrics?.transactionFinished(metrics) }
    }

    func exchange(didCompleteWith error: CourierError?) {
        // The exchange was cancelled at a redirect the session declined for the cache's answer:
        // that answer ends the task (looked for only when the exchange failed, as it then did).
        if error != nil, let end = self.state.withLockedValue({ $0.hop.afterExchange.take() }) {
            self.end(afterDeclinedRedirect: end)
            return
        }
        var error = error
        if error?.code == .cancelled {
            // The caller's cancel, whichever cancel reached the exchange first: a head that came
            // after `cancel()` was refused (``finalResponseArrived(_:url:status:holding:)``), and the exchange
            // ended with that refusal's error, which names the response the task never had.
            let (cancelling, request) = self.state.withLockedValue { ($0.machine.isCancelling, $0.currentRequest) }
            if cancelling { error = .cancelled(request) }
        }
        // Success, the common case: the status is read in the transaction that completes.
        var failedStatus = false
        if error == nil, !self.interception.checksSerialization {
            switch self.sink.endSucceeded(delegate: self) {
            case .completed: return
            case .failedStatus: failedStatus = true
            case .notCompleted: break
            }
        }
        if self.considerRetry(after: error, failedStatus: failedStatus) { return }
        self.complete(with: error)
    }

    // MARK: Completion

    /// The largest body ``complete(with:)`` copies into its `Data` instead of wrapping its buffer.
    static let copiedBodyLimit = 16 * 1024

    /// Ends the task with `error` (nil: success), once: the task's sink finishes the body
    /// (``BodySink/end(with:delegate:)``) and settles the end.
    func complete(with error: CourierError?) {
        self.sink.end(with: error, delegate: self)
    }

    /// Ends a task whose body was gathered in memory, or streamed (the sinks' common end): the
    /// state completes, and the end moves on to where it settles. With `unlessFailedStatus`, a
    /// response of status 400 or more is left for the retry decision instead
    /// (``BodySink/endSucceeded(delegate:)``).
    @discardableResult
    func completeWithGatheredBody(_ error: CourierError?, unlessFailedStatus: Bool = false) -> SucceededEnd {
        // The outcome is made in place and moved out (`take()`), never copied: a copy of it
        // retains each of its fields.
        var made: TaskOutcome?
        var unheard: UnheardEnd?
        var failedStatus = false
        // An `async` caller's end is left where the caller takes it in the same transaction
        // (``takeAwaitedOutcome()``), its delivery counted first (an atomic, no lock); the caller
        // (`awaiting`) is woken after the lock, once a held report went out. A held report goes
        // out with what its data hook gets: the manager, the task and the body.
        let finished = self.state.withLockedValue {
            state -> (
                completion: TaskCompletion, held: (report: HeldReport, manager: SessionManager, task: SessionTask, data: Data?)?,
                awaiting: UnsafeContinuation<Void, Never>?
            )? in
            if unlessFailedStatus, state.responseStatus >= 400 {
                failedStatus = true
                return nil
            }
            guard state.machine.complete(), let (task, manager, completion) = state.takeHoldsAtCompletion(else: &unheard) else { return nil }
            let body = state.body.take()
            // A small body is copied out of the buffer it arrived in: cheaper than wrapping the
            // buffer, and the caller's `Data` then keeps nothing alive of a read buffer that may be
            // many times its size. A large one is wrapped, not copied.
            let data = body.map {
                Data(buffer: $0, byteTransferStrategy: $0.readableBytes <= Self.copiedBodyLimit ? .copy : .noCopy)
            }
            let finalError = (state.bodyFailure ?? error)?.adding(request: state.currentRequest, response: state.response, data: data)
            state.error = finalError
            // A response whose progress was held back is the task's last: report it now.
            let held = HeldReport(taking: &state, succeeded: finalError == nil).map { ($0, manager, task, data) }
            if finalError == nil { state.progress.settleTotals() }
            state.progress.dropHandlers()
            let awaited = if case .awaiting = completion { true } else { false }
            // Counted as a handler's delivery is: the caller settles the end (the task leaves the
            // registry) before it serializes, runs the hook and posts, and an invalidated manager
            // waits for those (the caller ends the delivery once it posted). (Before the outcome
            // is made: that is the manager's last use here, which then costs no retain.)
            if awaited { manager.beginDelivery() }
            let outcome = TaskOutcome(
                task: task, manager: manager, request: state.currentRequest, response: state.response, data: data, error: finalError)
            guard awaited else {
                made = consume outcome
                return (completion, held, nil)
            }
            state.awaitedOutcome = consume outcome
            return (completion, held, state.awaitingCaller.take())
        }
        guard let (completion, held, awaiting) = finished else {
            if failedStatus { return .failedStatus }
            unheard.map(self.endUnheard)
            return .completed
        }
        if let (held, manager, task, data) = held {
            held.send()
            if let hook = self.hook({ $0.dataTaskDidReceiveData }), let data, !data.isEmpty {
                hook(manager, task, data)
            }
            self.didReceiveBodyData(held.bytes, task: task)
        }
        // What is left of the end (``settle(_:)``) runs where the completion goes next: on the
        // awaiting caller's task, or on the processing queue before serialization; not on the
        // engine's thread (with HTTP/2, one loop carries every stream of a connection).
        switch completion {
        case .awaiting:
            awaiting?.resume()
        case .handler(let serializer, let handler):
            guard let outcome = made.take() else { return .completed }
            let manager = outcome.manager
            manager.complete(consume outcome, serializer: serializer, handler: handler)
        case .none, .download:
            guard let outcome = made.take() else { return .completed }
            let manager = outcome.manager
            manager.complete(consume outcome, serializer: nil, handler: nil)
        case .outcome(let deliver):
            guard var outcome = made.take() else { return .completed }
            outcome.manager.beginDelivery()
            self.settle(&outcome)
            deliver(consume outcome)
        }
        return .completed
    }

    /// Leaves the task's end where its `async` caller takes it (``takeAwaitedOutcome()``), then
    /// wakes the caller if it waits already (else ``resume(awaiting:)`` finds the end there).
    func handToAwaitingCaller(_ outcome: consuming TaskOutcome) {
        var handed: TaskOutcome? = consume outcome
        let caller = self.state.withLockedValue { state in
            state.awaitedOutcome = handed.take()
            return state.awaitingCaller.take()
        }
        caller?.resume()
    }

    /// What the task's serializer made of the response it ended with, when it checked it for the
    /// retriers (``considerRetry(after:failedStatus:)``); taken once.
    func takeChecked() -> (object: (any Sendable)?, error: CourierError?)? {
        guard self.interception.checksSerialization else { return nil }
        return self.state.withLockedValue { $0.checked.take() }
    }

    /// The end of a task its `async` caller waited on (``TaskCompletion/awaiting``), once the
    /// continuation was resumed (which the machine does only with the end there), settled
    /// (``settle(_:)``) on the caller's task. The outcome and what settling it needs of the state
    /// are taken in one transaction.
    func takeAwaitedOutcome() -> TaskOutcome {
        var taken: TaskOutcome?
        let end = self.state.withLockedValue { state -> TaskEndRecord in
            let outcome = state.awaitedOutcome.take()!
            // Every task kind hands its `async` caller an end not settled yet (a download's too).
            assert(!outcome.isSettled, "an awaited outcome was settled before its caller took it")
            let end = state.takeEnd(originalRequest: self.originalRequest, response: outcome.response, error: outcome.error)
            taken = consume outcome
            return end
        }
        var outcome = taken.take()!
        self.settle(&outcome, with: end)
        return outcome
    }

    /// What is left of a task's end once its state has completed: the one place every task's end
    /// is settled. The cache store (data tasks and streams), the end of its progress updates, its
    /// metrics (hook, monitors, span, log) and its leaving the registry. Runs once (a second call
    /// does nothing), before the completion is delivered: where the completion goes next for a
    /// data task, once its file is in place for a download.
    func settle(_ outcome: inout TaskOutcome) {
        guard !outcome.isSettled else { return }
        // Everything the end needs of the task's state, in one transaction.
        let end = self.state.withLockedValue { [response = outcome.response, error = outcome.error] state in
            state.takeEnd(originalRequest: self.originalRequest, response: response, error: error)
        }
        self.settle(&outcome, with: end)
    }

    /// Settles `outcome` with what its end took out of the state (``TaskState/takeEnd(originalRequest:response:error:)``).
    private func settle(_ outcome: inout TaskOutcome, with end: TaskEndRecord) {
        outcome.isSettled = true
        outcome.source = end.source
        if end.source == .network, end.mayStore { self.storeInCache(outcome, servesStale: end.servesStale) }
        self.finishProgressUpdates(end.progressObservers)
        outcome.metrics = end.metrics
        self.reportEnd(end, task: outcome.task, manager: outcome.manager, response: outcome.response, error: outcome.error)
        outcome.manager.taskDidFinish(self)
    }

    /// An end nobody hears (``UnheardEnd``): the task leaves the registry, its progress
    /// sequences finish and its sink hears that nothing will come.
    func endUnheard(_ end: UnheardEnd) {
        self.finishProgressUpdates(end.observers)
        self.sink.abandon()
        end.owner?.taskDidFinish(self)
    }

    /// The caller let go of the task object. A task never resumed is then over: it leaves the
    /// registry and lets go of its manager, and its sink hears that nothing will come
    /// (``BodySink/abandon()``). (A started task is held until it completes, so it is not
    /// released before.)
    func taskReleased() {
        let unheard = self.state.withLockedValue { state -> UnheardEnd? in
            guard state.machine.released() else { return nil }
            // The task object is already going: only the other holds are dropped.
            return state.takeUnheardEnd()
        }
        unheard.map(self.endUnheard)
    }
}

/// The end of a task that nobody hears: the task object went (its caller dropped it before
/// resuming it), or was going as the task completed (cancelled by the manager's invalidation
/// just as its caller let go of it, after the object could no longer be reached and before
/// ``TaskDelegate/taskReleased()`` ran). Without it the registry kept the task, an invalidated
/// manager never shut its engine down, and `progressUpdates(for:)` readers waited for ever.
struct UnheardEnd {
    let owner: SessionManager?
    let observers: [(ProgressObserver, ProgressSnapshot)]
}

extension TaskState {
    /// Takes the task's holds out of the state at its completion: the task object (which stays
    /// reachable weakly while its caller keeps it), the manager and the completion, to be handed
    /// to the task's ``TaskOutcome``; the progress handlers stay for the last report. Nil when the
    /// task object is already going or the manager was never kept: then `unheard` says what its
    /// end still owes. (The owner is read once, on the path every task takes.)
    mutating func takeHoldsAtCompletion(else unheard: inout UnheardEnd?) -> (SessionTask, SessionManager, TaskCompletion)? {
        defer { self.dropHolds(keepingProgressHandlers: true) }
        guard let task = self.task, let manager = self.owner else {
            unheard = self.unheardEnd()
            return nil
        }
        return (task, manager, self.completion)
    }

    /// What the end of a task whose object went owes (``UnheardEnd``); its holds are dropped.
    mutating func takeUnheardEnd() -> UnheardEnd {
        defer { self.dropHolds(keepingProgressHandlers: false) }
        return self.unheardEnd()
    }

    private mutating func unheardEnd() -> UnheardEnd {
        UnheardEnd(owner: self.owner, observers: self.progress.finishObservers(failed: true))
    }

    /// Lets go of the running task, the manager and the completion (and the progress handlers,
    /// unless kept for a last report).
    private mutating func dropHolds(keepingProgressHandlers: Bool) {
        self.runningTask = nil
        self.owner = nil
        self.completion = .none
        if !keepingProgressHandlers { self.progress.dropHandlers() }
    }
}

/// A progress object and the caller's closure for it, taken under the task's lock and called after.
struct ProgressReport {
    let progress: Progress
    let handler: @Sendable (Progress) -> Void

    /// Nil when there is no progress object or nobody to tell.
    init?(_ progress: Progress?, _ handler: (@Sendable (Progress) -> Void)?) {
        guard let progress, let handler else { return nil }
        self.progress = progress
        self.handler = handler
    }

    func send() { self.handler(self.progress) }
}
