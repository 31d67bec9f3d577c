import Foundation
import HTTPTypes
import Instrumentation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket
import Synchronization

/// A WebSocket (RFC 6455) on Courier's own connections, made by
/// ``SessionManager/webSocketTask(with:configuration:)``: the opening handshake goes through the
/// engine's TLS (the security policy and pinning), its proxies (an HTTP proxy's `CONNECT` tunnel,
/// SOCKS5), with the session's additional headers and cookies; its adapters, authentication and
/// retriers act on the handshake as on a task's attempt.
///
/// ```swift
/// let task = manager.webSocketTask(with: Request(url: URL(string: "wss://example.com/chat")!))
/// task.resume()
/// try await task.send(.text("hello"))
/// for try await message in task.messages {
///     print(message)
/// }
/// ```
///
/// Messages arrive through ``messages`` (one consumer). Courier reads the connection at all times,
/// so PINGs, PONGs and the close are handled however slowly the messages are taken; at most
/// ``WebSocketConfiguration/maximumBufferedBytes`` of messages wait unread, past which the task
/// fails with ``CourierError/Code/messageBufferFull``. Client frames are masked; fragmented messages are put together (control frames
/// may come between their fragments); text is checked to be UTF-8. A server that breaks the
/// protocol gets a close frame with the code RFC 6455 names, and the task fails with a
/// ``CourierError``; the task ends exactly once, and nothing is left running afterwards.
public final class WebSocketTask: Sendable {
    /// The request the task was made with.
    public let request: Request
    /// The task's settings.
    public let configuration: WebSocketConfiguration

    typealias Producer = NIOThrowingAsyncSequenceProducer<
        WebSocketMessage, any Error, NIOAsyncSequenceProducerBackPressureStrategies.HighLowWatermark, WebSocketProducerDelegate
    >

    enum Phase {
        case suspended
        /// An attempt's adapters, or its handshake, are under way.
        case connecting
        /// An attempt failed; the retriers decide, or the retry's delay passes.
        case awaitingRetry
        case open
        case finished
    }

    struct State {
        var phase = Phase.suspended
        var channel: (any Channel)?
        var handler: NIOLoopBound<WebSocketChannelHandler>?
        var response: HTTPResponse?
        var subprotocol: String?
        var closeCode: WebSocketCloseCode?
        var closeReason: String?
        var error: CourierError?
        var metrics: TransactionMetrics?
        /// The task's metrics as they are gathered: the handshake is the one attempt.
        var recorder = TaskMetricsRecorder()
        var taskMetrics: TaskMetrics?
        /// Callers of ``waitUntilOpen()`` and ``waitUntilFinished()``, by a number of their own
        /// (``nextWaiter``), so that a cancelled one can leave.
        var openWaiters: [UInt64: CheckedContinuation<Void, any Error>] = [:]
        var finishWaiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter: UInt64 = 0
        var pingWaiters: [(ByteBuffer, CheckedContinuation<Void, any Error>)] = []
        var source: Producer.Source?
        var sequence: Producer?
        /// The caller asked for the closing handshake, or cancelled: sends wait for their write
        /// again (and fail), instead of being queued.
        var isClosing = false
        /// The adapters at work on the handshake's request, or the retriers and the retry's delay,
        /// cancelled by ``WebSocketTask/cancel()``.
        var work: Task<Void, Never>?
        /// The reasons of the retries so far, oldest first (the attempt under way is the next).
        var retryReasons: [RetryReason] = []
        /// The failed handshake a retry waits to send again.
        var retryFailure: CourierError?
        /// Whether the handshake's `Authorization` is the session's own (an answered protection space).
        var carriesSessionAuthorization = false
        /// The task's span, when the session has a tracer, and its current attempt's hop span.
        var span: TaskSpan?
        var hopSpan: HopSpan?
    }

    let state = NIOLockedValueBox(State())
    /// The payload bytes of the messages sent and received (before `permessage-deflate`).
    let messageBytes = MessageByteCounts()
    /// The bytes of messages handed to the connection's loop by ``send(_:)`` without waiting, not
    /// yet written to the channel.
    private let queuedBytes = Atomic<Int>(0)
    /// The most ``queuedBytes`` may hold: past it (or while the channel's own buffer is full), a
    /// send waits until its message is written, which is the sender's back-pressure.
    static let queuedBytesLimit = 64 * 1024
    /// The bytes of messages delivered to ``messages`` and not yet taken by its consumer.
    let unread = UnreadBytes()
    private let engine: NIOEngine?
    /// The session's additional headers and cookie header, added to the handshake.
    private let sessionHeaders: HTTPFields
    private let cookieStorage: (any CookieStorage)?
    /// The session's event monitors when the task was made; nil when there are none.
    let monitors: EventMonitorGroup?
    /// What the handshake consults, as a task's attempts do: the adapters, the session's HTTP
    /// authentication, the retriers with the budget and clock, the tracer. Nil outside a session.
    let interception: TaskInterception?
    /// The manager that made the task: no retry once it is invalidated.
    weak let manager: SessionManager?
    /// Whether the task posts `.taskDidResume` and `.taskDidComplete`
    /// (``SessionConfiguration/postsTaskNotifications`` of its manager; true outside a session).
    let postsNotifications: Bool
    /// Where the task stands among those made before it (``SessionManager/webSocketTasks``'s order).
    let creationOrder = WebSocketTask.madeSoFar.wrappingAdd(1, ordering: .relaxed).newValue
    private static let madeSoFar = Atomic<Int>(0)

    init(
        interception: TaskInterception? = nil, manager: SessionManager? = nil, request: Request, configuration: WebSocketConfiguration,
        engine: NIOEngine?, sessionHeaders: HTTPFields, cookieStorage: (any CookieStorage)?
    ) {
        self.interception = interception
        self.manager = manager
        self.postsNotifications = manager?.configurationReference.value.postsTaskNotifications ?? true
        self.monitors = interception?.monitors
        self.request = request
        self.configuration = configuration
        self.engine = engine
        self.sessionHeaders = sessionHeaders
        self.cookieStorage = cookieStorage
        let delegate = WebSocketProducerDelegate()
        let made = Producer.makeSequence(
            elementType: WebSocketMessage.self,
            failureType: (any Error).self,
            // No back-pressure on the connection: it is read at all times (control frames must be),
            // and `maximumBufferedBytes` bounds what waits.
            backPressureStrategy: .init(lowWatermark: 0, highWatermark: .max),
            finishOnDeinit: false,
            delegate: delegate
        )
        delegate.task.withLockedValue { $0 = WeakTask(task: self) }
        self.state.withLockedValue {
            $0.source = made.source
            $0.sequence = made.sequence
        }
        #if DEBUG
        LiveObjectCensus.born(self, .webSocketTask, request.url.absoluteString)
        #endif
    }

    /// A task dropped without having finished (never resumed, say) ends its message sequence:
    /// its producer was made to be finished by hand, and swift-nio stops the process when such a
    /// producer goes unfinished.
    deinit {
        self.state.withLockedValue { $0.source }?.finish()
        #if DEBUG
        LiveObjectCensus.died(self)
        #endif
    }

    // MARK: Public API

    /// The messages the server sends, in order; ends when the connection closes (normally after
    /// a closing handshake, or throwing the task's ``error``). One consumer: a second call gets a
    /// sequence that ends at once. Stopping the iteration (or cancelling the consuming task)
    /// cancels the WebSocket.
    public var messages: WebSocketMessages {
        WebSocketMessages(
            self.state.withLockedValue { state in
                defer { state.sequence = nil }
                return state.sequence
            }, unread: self.unread)
    }

    /// Starts the opening handshake; later calls do nothing.
    public func resume() {
        // Made before its manager was invalidated, resumed after: it ends as a task would.
        if self.manager?.isInvalidated == true {
            self.failBeforeStart(CourierError(.sessionInvalidated, "\(self.request.summary): the session was invalidated", request: self.request))
            return
        }
        let start = self.state.withLockedValue { state -> Bool in
            guard case .suspended = state.phase else { return false }
            state.phase = .connecting
            state.recorder.attemptBegan(self.request)
            return true
        }
        guard start else { return }
        // Started outside the task's lock (the tracer is the caller's code, and may read the
        // task), before the attempt that reads it; ended at once if the task ended meanwhile.
        if let tracer = self.interception?.tracer {
            let span = TaskSpan.start(tracer: tracer, for: self.request, parent: self.interception?.parentContext ?? .topLevel)
            let kept = self.state.withLockedValue { state -> Bool in
                if case .finished = state.phase { return false }
                state.span = span
                return true
            }
            if !kept { span.end(response: nil, error: self.error, retryCount: 0) }
        }
        self.interception?.budget?.deposit()
        if self.postsNotifications { NotificationCenter.default.post(name: .taskDidResume, object: self) }
        self.monitors?.emit { $0.webSocketTaskDidResume(self) }
        self.beginAttempt()
    }

    /// Waits until the opening handshake completed, starting it if needed.
    ///
    /// A caller waiting when the server's 101 comes returns with it, even when frames right
    /// behind the 101 end the task at once (a server that sends its messages and its close
    /// straight away): those are then in ``messages``, ``closeCode`` and ``error``.
    /// - Returns: The server's 101 response.
    /// - Throws: The task's ``CourierError`` when the handshake failed or the task ended first;
    ///   ``CourierError/Code/cancelled`` when the calling task is cancelled while it waits (the
    ///   handshake goes on; ``cancel()`` ends it).
    @discardableResult
    public func waitUntilOpen() async throws -> HTTPResponse {
        self.resume()
        let waiter = self.state.withLockedValue { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome = self.state.withLockedValue { state -> Result<Void, CourierError>? in
                    switch state.phase {
                    case .open: return .success(())
                    case .finished:
                        if state.response != nil, state.error == nil { return .success(()) }
                        return .failure(state.error ?? Self.notOpenError())
                    case .suspended, .connecting, .awaitingRetry:
                        // Cancelled before the wait began: the cancellation handler found nothing.
                        if Task.isCancelled { return .failure(Self.waitCancelled(for: "the opening handshake", request: self.request)) }
                        state.openWaiters[waiter] = continuation
                        return nil
                    }
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            self.state.withLockedValue { $0.openWaiters.removeValue(forKey: waiter) }?.resume(throwing: Self.waitCancelled(for: "the opening handshake", request: self.request))
        }
        return self.state.withLockedValue { $0.response }!
    }

    /// The error of a caller that stopped waiting for `what` (its task was cancelled).
    static func waitCancelled(for what: String, request: Request) -> CourierError {
        CourierError(.cancelled, "\(request.summary): the wait for \(what) was cancelled", request: request)
    }

    /// Sends a message, once the connection is open (starting the task if needed).
    /// - Throws: A ``CourierError`` when the connection is not open (``CourierError/Code/connectionClosed``),
    ///   or the task's error.
    ///
    /// While the connection takes more (its channel is writable and less than 64 KiB of messages
    /// wait to be written), the message is queued on the connection, in order, and the call
    /// returns without waiting for the write, as a channel's outbound writer does: waiting cost
    /// the caller a wake-up a message. Otherwise (and while the task closes) the call returns once
    /// the message is written; a caller cancelled while it waits gets
    /// ``CourierError/Code/cancelled`` at once, the message staying queued. A write that fails
    /// after the call returned ends the task with its error, which the next call and ``messages``
    /// report.
    public func send(_ message: WebSocketMessage) async throws {
        // Once open, a send takes the task's lock once (waitUntilOpen would take it three times
        // and make a continuation: a measurable share of a small message's round trip).
        let open = self.openConnection()
        if open == nil { try await self.waitUntilOpen() }
        let bytes = message.byteCount
        if let open, open.takesMore {
            if self.queuedBytes.add(bytes, ordering: .relaxed).newValue <= Self.queuedBytesLimit {
                let handler = open.handler
                handler.eventLoop.execute {
                    handler.value.send(message, promise: nil)
                    self.queuedBytes.subtract(bytes, ordering: .relaxed)
                }
                self.messageBytes.sent(bytes)
                return
            }
            self.queuedBytes.subtract(bytes, ordering: .relaxed)
        }
        try await self.onHandler(open?.handler) { handler, promise in handler.send(message, promise: promise) }
        self.messageBytes.sent(bytes)
    }

    /// The connection's handler while the task is open, and whether its channel takes more
    /// without waiting (writable, and no close asked for).
    private func openConnection() -> (handler: NIOLoopBound<WebSocketChannelHandler>, takesMore: Bool)? {
        self.state.withLockedValue { state in
            guard case .open = state.phase, let handler = state.handler else { return nil }
            return (handler, !state.isClosing && (state.channel?.isWritable ?? false))
        }
    }

    /// Sends a PING and waits for its PONG, or for the PONG of a later PING (another
    /// `sendPing()`'s or the keep-alive's): a peer may answer only the most recent of several
    /// PINGs (RFC 6455 5.5.3), which answers the earlier ones too.
    ///
    /// - Throws: the task's error when it ends first; ``CourierError/Code/cancelled`` when the
    ///   calling task is cancelled while it waits (the connection stays open).
    public func sendPing() async throws {
        try await self.waitUntilOpen()
        var payload = ByteBuffer()
        payload.writeInteger(UInt64.random(in: .min ... .max))
        let sent = payload
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let ended = self.state.withLockedValue { state -> CourierError? in
                    guard case .open = state.phase else { return state.error ?? Self.notOpenError() }
                    // Cancelled before the wait began: the cancellation handler found nothing to end.
                    if Task.isCancelled { return Self.waitCancelled(for: "a PONG", request: self.request) }
                    state.pingWaiters.append((sent, continuation))
                    // Queued on the loop under the lock: PINGs go out in the order they wait, so
                    // that a PONG answers its own PING and those before it.
                    let handler = state.handler
                    handler?.eventLoop.execute { handler?.value.sendPing(sent, promise: nil) }
                    return nil
                }
                if let ended { continuation.resume(throwing: ended) }
            }
        } onCancel: {
            let (waiter, handler) = self.state.withLockedValue { state -> (CheckedContinuation<Void, any Error>?, NIOLoopBound<WebSocketChannelHandler>?) in
                guard let index = state.pingWaiters.firstIndex(where: { $0.0 == sent }) else { return (nil, nil) }
                return (state.pingWaiters.remove(at: index).1, state.handler)
            }
            guard let waiter else { return }
            // After the PING on the loop (queued before, under the same lock): the connection
            // stops looking for its PONG.
            if let handler { handler.eventLoop.execute { handler.value.pingAbandoned(sent) } }
            waiter.resume(throwing: Self.waitCancelled(for: "a PONG", request: self.request))
        }
    }

    /// Closes with `code` and `reason` (at most 123 bytes of UTF-8 are sent) and waits until the
    /// closing handshake ended (the server's close frame, or ``WebSocketConfiguration/closeTimeout``).
    /// A code that may not be sent (1005, 1006, 1015, or one outside the ranges RFC 6455 7.4
    /// allows) sends a close frame with no code, which the server reads as 1005.
    ///
    /// A task not yet open (its opening handshake under way, or waiting to be retried) is
    /// cancelled at once: it ends with ``CourierError/Code/cancelled``.
    public func close(code: WebSocketCloseCode = .normalClosure, reason: String = "") async {
        let (handler, notOpenYet) = self.state.withLockedValue { state -> (NIOLoopBound<WebSocketChannelHandler>?, Bool) in
            var notOpenYet = false
            switch state.phase {
            case .connecting, .awaitingRetry: notOpenYet = true
            case .suspended, .open, .finished: break
            }
            state.isClosing = true
            return (state.handler, notOpenYet)
        }
        // Before the handshake completed (or between two) there is nothing to close: the task is
        // cancelled now, rather than wait for the server's 101 (up to the request timeout) or for
        // every retry the policy allows, only to close then.
        if notOpenYet {
            self.cancel()
            await self.waitUntilFinished()
            return
        }
        let suspended = self.state.withLockedValue { state -> Bool in
            if case .suspended = state.phase { return true }
            return false
        }
        if suspended {
            self.finish(error: CourierError(.cancelled, "\(self.request.summary): closed before it was resumed"), code: .abnormalClosure, reason: "")
        }
        handler?.eventLoop.execute { handler?.value.close(code: code, reason: reason) }
        await self.waitUntilFinished()
    }

    /// Ends the task at once: a close frame with 1001 (``WebSocketCloseCode/goingAway``) if it was
    /// open, then the connection closes; the task fails with ``CourierError/Code/cancelled``.
    public func cancel() {
        let (handler, work) = self.state.withLockedValue { state in
            state.isClosing = true
            defer { state.work = nil }
            return (state.handler, state.work)
        }
        work?.cancel()
        if let handler {
            handler.eventLoop.execute { handler.value.cancel() }
        } else {
            // Settled first, then `finish` closes the handshake's channel: closed first, the
            // handshake could fail on the loop (`invalidResponse`, the connection gone) before
            // this thread settled the task as cancelled.
            self.finish(error: CourierError(.cancelled, "\(self.request.summary): cancelled"), code: .abnormalClosure, reason: "")
        }
    }

    /// Waits until the task ended (whatever the way), or until the calling task is cancelled.
    public func waitUntilFinished() async {
        let waiter = self.state.withLockedValue { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let done = self.state.withLockedValue { state -> Bool in
                    if case .finished = state.phase { return true }
                    // Cancelled before the wait began: the cancellation handler found nothing.
                    if Task.isCancelled { return true }
                    state.finishWaiters[waiter] = continuation
                    return false
                }
                if done { continuation.resume() }
            }
        } onCancel: {
            self.state.withLockedValue { $0.finishWaiters.removeValue(forKey: waiter) }?.resume()
        }
    }

    /// The server's answer to the opening handshake (its 101), once it came.
    public var response: HTTPResponse? { self.state.withLockedValue { $0.response } }
    /// The subprotocol the server chose, if any.
    public var subprotocol: String? { self.state.withLockedValue { $0.subprotocol } }
    /// The close code once the task ended: the server's after a closing handshake, the one
    /// Courier sent for a protocol violation, or 1006 (``WebSocketCloseCode/abnormalClosure``)
    /// when the connection ended with no closing handshake.
    public var closeCode: WebSocketCloseCode? { self.state.withLockedValue { $0.closeCode } }
    /// The reason that came with the server's close frame.
    public var closeReason: String? { self.state.withLockedValue { $0.closeReason } }
    /// Why the task failed, if it did (nil after a closing handshake).
    public var error: CourierError? { self.state.withLockedValue { $0.error } }
    /// Whether the task has ended.
    public var isFinished: Bool {
        self.state.withLockedValue { state in
            if case .finished = state.phase { return true }
            return false
        }
    }
    /// The opening handshake's metrics (connection setup, TLS, request and response times), once
    /// its response came.
    public var handshakeMetrics: TransactionMetrics? { self.state.withLockedValue { $0.metrics } }
    /// The task's metrics once it ended, as a ``SessionTask``'s: an attempt per opening handshake
    /// (from its start to the server's 101, or to its failure; more than one when a retrier sent it
    /// again), whose ``TaskMetrics/Attempt/transactions`` hold the handshake's
    /// ``TransactionMetrics`` (the last as ``handshakeMetrics``); the attempt that opened the
    /// connection counts the payload bytes of the messages sent and received as its
    /// ``TaskMetrics/Attempt/bytesSent`` and ``TaskMetrics/Attempt/bytesReceived``; the
    /// ``TaskMetrics/duration`` runs to the task's end. The session's event monitors get them in
    /// ``EventMonitor/webSocketTask(_:didFinishCollecting:)``.
    public var metrics: TaskMetrics? { self.state.withLockedValue { $0.taskMetrics } }

    // MARK: Connecting

    /// The `http` or `https` URL a `ws` or `wss` URL stands for, and the `http+unix` or
    /// `https+unix` URL a `ws+unix` or `wss+unix` one stands for (the socket's path as the host,
    /// percent-encoded: `ws+unix://%2Fvar%2Frun%2Fdocker.sock/…`); the HTTP forms are also
    /// accepted as they are.
    static func httpURL(for url: URL) -> URL? {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: true) else { return nil }
        switch components.scheme?.lowercased() {
        case "ws", "http": components.scheme = "http"
        case "wss", "https": components.scheme = "https"
        case "ws+unix", "http+unix": components.scheme = "http+unix"
        case "wss+unix", "https+unix": components.scheme = "https+unix"
        default: return nil
        }
        return components.url
    }

    /// Ends a task that never started (its manager was invalidated).
    func failBeforeStart(_ error: CourierError) {
        let suspended = self.state.withLockedValue { state -> Bool in
            guard case .suspended = state.phase else { return false }
            state.phase = .connecting
            return true
        }
        if suspended { self.finish(error: error, code: .abnormalClosure, reason: "") }
    }

    static func notOpenError() -> CourierError {
        CourierError(.connectionClosed, "the WebSocket is not open")
    }

    func connect(_ adapted: Request) {
        guard let engine = self.engine else {
            self.finish(
                error: CourierError(.unsupportedScheme, "\(self.request.summary): WebSockets need Courier's NIOEngine"), code: .abnormalClosure,
                reason: "")
            return
        }
        // Any loop: the connection is the task's alone (the engine's per-loop count is for exchanges).
        let loop = engine.loops.randomElement()!
        // Begun on that loop, so that the callbacks on the connection and on the 101 are in place
        // before the connection can answer. Registered from the caller's thread, they could come
        // after the 101, the frames behind it and the close had been read and the pipeline torn
        // down: the frames were lost and the task failed with an internal inconsistency (seen
        // once, a full test run on one core).
        if loop.inEventLoop {
            self.connect(adapted, engine: engine, on: loop)
        } else {
            loop.execute { self.connect(adapted, engine: engine, on: loop) }
        }
    }

    private func connect(_ adapted: Request, engine: NIOEngine, on loop: any EventLoop) {
        // Cancelled before the loop came to it: nothing to open.
        guard !self.isFinished else { return }
        let summary = self.request.summary
        let httpURL = Self.httpURL(for: adapted.url)
        guard let httpURL, let key = engine.pool.webSocketKey(for: httpURL) else {
            let problem =
                httpURL?.isUnixSocketURLWithoutSocket == true
                ? "a ws+unix or wss+unix URL that names no socket (its host, percent-encoded)" : "not a ws or wss URL with a host"
            let error =
                adapted.url.hasUnacceptableHost
                ? CourierError(.invalidURL, "\(summary): \(URL.unacceptableHostProblem)", request: self.request)
                : CourierError(.unsupportedScheme, "\(summary): \(problem)", request: self.request)
            self.finish(error: error, code: .abnormalClosure, reason: "")
            return
        }
        // Which attempt this is: a connection that comes after its attempt ended (a handshake
        // timeout, then a retry) is not the next attempt's.
        let attempt = self.state.withLockedValue { state in
            state.recorder.exchangeBegan(adapted)
            return state.retryReasons.count
        }
        let handshake = WebSocketHandshake(offeredProtocols: self.offeredSubprotocols(adapted), offersCompression: self.configuration.permessageDeflate)
        let head = self.handshakeHead(adapted, key: key, handshake: handshake, url: httpURL)
        let request = self.request
        let completion = loop.makePromise(of: HTTPResponseHead.self)
        let makeError: @Sendable (String, HTTPResponseHead?, (any Error)?) -> any Error = { message, head, underlying in
            var error = CourierError(.invalidResponse, "\(summary): \(message)", request: request, underlyingError: underlying)
            if let head { error.response = Self.response(from: head) }
            return error
        }
        let tls = key.tls ? engine.pool.http1OnlyTLS : nil
        let metrics = NIOLockedValueBox(TransactionMetrics(request: adapted, fetchStart: .now))
        let timeout = TimeAmount.seconds(clamping: engine.configuration.requestTimeout, to: 0...1e9, nan: 60)
        let timer = loop.scheduleTask(in: timeout) {
            completion.fail(CourierError(.timedOut, "\(summary): the opening handshake took over \(engine.configuration.requestTimeout) s", request: request))
        }
        engine.pool.openWebSocketConnection(key: key, tls: tls, on: loop) { channel in
            let sync = channel.pipeline.syncOperations
            try sync.addHandler(WebSocketHandshakeHandler(head: head, handshake: handshake, completion: completion, makeError: makeError))
        }.whenComplete { result in
            switch result {
            case .failure(let error):
                timer.cancel()
                completion.fail(NIOEngine.courierError(from: error, request: request))
            case .success(let (channel, establishment)):
                metrics.withLockedValue { metrics in
                    metrics.requestStart = .now
                    establishment.apply(to: &metrics, carriesSetup: true, channel: channel)
                }
                let late = self.state.withLockedValue { state -> Bool in
                    guard case .connecting = state.phase, state.retryReasons.count == attempt else { return true }
                    state.channel = channel
                    return false
                }
                if late { channel.close(promise: nil) }
                channel.closeFuture.whenComplete { _ in completion.fail(Self.notOpenError()) }
            }
        }
        completion.futureResult.hop(to: loop).whenComplete { result in
            timer.cancel()
            switch result {
            case .failure(let error):
                let channel = self.state.withLockedValue { state in
                    // What was measured of the handshake that failed (its connection, if any).
                    state.recorder.transactionFinished(metrics.withLockedValue { $0 })
                    defer { state.channel = nil }
                    return state.channel
                }
                channel?.close(promise: nil)
                let failure = NIOEngine.courierError(from: error, request: request)
                // An answer that is not a 101 (a 401 that a retry answers, a redirect) sets its
                // cookies too, as a data task's response does.
                if let response = failure.response { self.cookieStorage?.storeCookies(from: response, for: httpURL) }
                self.handshakeFailed(failure, request: adapted)
            case .success(let head):
                // The 101's cookies (a load balancer's sticky session) are stored before anything
                // of the WebSocket starts, as a data task stores its response's.
                if let storage = self.cookieStorage {
                    let fields = head.headers["set-cookie"]
                    if !fields.isEmpty { storage.storeCookies(fromSetCookieFields: fields, for: httpURL) }
                }
                let done = metrics.withLockedValue { metrics in
                    metrics.responseStart = .now
                    metrics.responseEnd = .now
                    return metrics
                }
                self.upgrade(head: head, metrics: done)
            }
        }
    }

    /// Replaces the HTTP handlers with the WebSocket ones; on the loop, right after the 101 ended.
    private func upgrade(head: HTTPResponseHead, metrics: TransactionMetrics) {
        guard let channel = self.state.withLockedValue({ $0.channel }) else { return }
        let timing = WebSocketChannelHandler.Timing(self.configuration)
        var deflate: PerMessageDeflate?
        if case .accepted(let parameters) = PerMessageDeflateParameters.parse(head.headers["sec-websocket-extensions"]) {
            deflate = PerMessageDeflate(parameters)
        }
        let handler = WebSocketChannelHandler(
            maximumMessageSize: max(1, self.configuration.maximumMessageSize), maximumBufferedBytes: self.configuration.bufferedBytesBound,
            timing: timing, deflate: deflate, delegate: self)
        let response = Self.response(from: head)
        let opened = self.state.withLockedValue { state -> Bool in
            // Cancelled (or failed) since the channel was read: nothing of the WebSocket starts.
            guard case .connecting = state.phase else { return false }
            state.phase = .open
            state.handler = NIOLoopBound(handler, eventLoop: channel.eventLoop)
            state.response = response
            state.subprotocol = WebSocketHandshake.chosenProtocol(in: head)
            state.metrics = metrics
            state.recorder.transactionFinished(metrics)
            state.recorder.responseBegan()
            state.recorder.attemptEnded(response: response, error: nil, bytesReceived: 0)
            return true
        }
        guard opened else { return }
        // The hop's span hears the response and ends outside the task's lock (the tracer's spans
        // are the caller's code).
        let hop = self.state.withLockedValue { state -> HopSpan? in
            defer { state.hopSpan = nil }
            return state.hopSpan
        }
        hop?.responseArrives(over: "http/1.1")
        hop?.end(response: response, error: nil)
        self.monitors?.emit { $0.webSocketTask(self, didOpenWith: response) }
        let sync = channel.pipeline.syncOperations
        let handshakeHandler: WebSocketHandshakeHandler
        do {
            handshakeHandler = try sync.handler(type: WebSocketHandshakeHandler.self)
            // Control frames carry up to 125 bytes whatever the maximum message size (a PONG
            // to an 8-byte PING, a close frame's reason); a smaller data frame over the maximum
            // is refused when its message is put together, with 1009 all the same.
            // SwiftNIO's decoder refuses (traps on) a maximum past `UInt32.max`. Under
            // `permessage-deflate` a frame carries compressed bytes, a little more than the
            // message for data that does not compress: the maximum is the message's once
            // inflated, and a frame may hold what a message of that size takes compressed.
            let largest = max(1, self.configuration.maximumMessageSize)
            let maxFrameSize = min(max(125, deflate == nil ? largest : PerMessageDeflate.compressedBound(largest)), Int(UInt32.max))
            // (A 64-bit length with its top bit set is a protocol error, told apart before NIO's
            // decoder, which reports it as a frame too big.)
            let frameDecoder = ByteToMessageHandler(WebSocketFrameHeaderCheck(maxFrameSize: maxFrameSize))
            try sync.addHandler(frameDecoder, position: .after(handshakeHandler))
            try sync.addHandler(WebSocketFrameEncoder(), position: .after(frameDecoder))
            try sync.addHandler(handler, position: .last)
        } catch {
            channel.close(promise: nil)
            // A pipeline torn down by a close is the connection's end, not Courier's.
            let failure =
                channel.isActive
                ? CourierError(.internalInconsistency, "\(self.request.summary): the WebSocket handlers: \(error)")
                : CourierError(.connectionClosed, "\(self.request.summary): the connection closed right after the opening handshake")
            self.finish(error: failure, code: .abnormalClosure, reason: "")
            return
        }
        // The handshake completed: whoever waits for it hears so now, before the frames that came
        // with the 101 are read, since they may end the task at once (a server that sends its
        // messages and its close right behind the 101). What a waiter does next (send, close,
        // cancel) runs on this loop, after this.
        let waiters = self.state.withLockedValue { state in
            defer { state.openWaiters = [:] }
            return state.openWaiters
        }
        for waiter in waiters.values { waiter.resume() }
        // The handshake's handler goes; the bytes it holds (frames that came with the 101) go on
        // to the frame decoder.
        sync.removeHandler(handshakeHandler, promise: nil)
    }

    /// The subprotocols the handshake offers: ``WebSocketConfiguration/subprotocols``, or, when
    /// it is empty, those the request's own `Sec-WebSocket-Protocol` fields name (a list, as
    /// URLSession's and OkHttp's callers offer them), which then go out as they are, and the
    /// server may choose.
    private func offeredSubprotocols(_ request: Request) -> [String] {
        guard self.configuration.subprotocols.isEmpty else { return self.configuration.subprotocols }
        return request.headerFields[values: HTTPField.Name("Sec-WebSocket-Protocol")!]
            .flatMap { $0.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
    }

    /// The handshake's request head: GET, the request's fields, the session's additional ones
    /// where missing, its cookies (after the request's own `Cookie` field, joined as a data
    /// task's first hop joins them), and the upgrade's own.
    private func handshakeHead(_ request: Request, key: ConnectionPool.Key, handshake: WebSocketHandshake, url: URL) -> HTTPRequestHead {
        var request = request
        request.method = .get
        request.body = .empty
        for field in self.sessionHeaders where request.headerFields[field.name] == nil {
            request.headerFields[field.name] = field.value
        }
        if let storage = self.cookieStorage {
            // The caller's own field first, then the store's, as one field (`planFirstHop`): the
            // caller's field no longer hides the store's cookies.
            request.setCookieField(SessionManager.joinedCookies(request.headerFields.value(of: .cookie), storage.cookieHeader(for: url)))
        }
        var head = HopHandler.head(for: request, key: key, length: .known(0))
        for name in ["Upgrade", "Connection", "Sec-WebSocket-Key", "Sec-WebSocket-Version", "Sec-WebSocket-Extensions"] {
            head.headers.remove(name: name)
        }
        head.headers.add(name: "Upgrade", value: "websocket")
        head.headers.add(name: "Connection", value: "Upgrade")
        head.headers.add(name: "Sec-WebSocket-Key", value: handshake.key)
        head.headers.add(name: "Sec-WebSocket-Version", value: "13")
        if handshake.offersCompression {
            head.headers.add(name: "Sec-WebSocket-Extensions", value: PerMessageDeflateParameters.offer)
        }
        if !handshake.offeredProtocols.isEmpty {
            head.headers.replaceOrAdd(name: "Sec-WebSocket-Protocol", value: handshake.offeredProtocols.joined(separator: ", "))
        }
        return head
    }

    static func response(from head: HTTPResponseHead) -> HTTPResponse {
        var fields = HTTPFields()
        for (name, value) in head.headers {
            if let name = HTTPField.Name(name) { fields.append(HTTPField(name: name, value: value)) }
        }
        return HTTPResponse(status: HTTPResponse.Status(code: Int(head.status.code), reasonPhrase: head.status.reasonPhrase), headerFields: fields)
    }

    /// Runs `body` on the connection's loop (`handler`, or the task's if nil) and waits for its promise.
    private func onHandler(
        _ handler: NIOLoopBound<WebSocketChannelHandler>? = nil, _ body: @escaping @Sendable (WebSocketChannelHandler, EventLoopPromise<Void>) -> Void
    ) async throws {
        guard let handler = handler ?? self.state.withLockedValue({ $0.handler }) else { throw self.error ?? Self.notOpenError() }
        let promise = handler.eventLoop.makePromise(of: Void.self)
        handler.eventLoop.execute { body(handler.value, promise) }
        do {
            try await Self.waitCancellably(for: promise.futureResult, request: self.request)
        } catch let error as CourierError {
            throw error
        } catch {
            throw self.error ?? CourierError(.connectionClosed, "\(self.request.summary): the message could not be sent", underlyingError: error)
        }
    }

    /// Waits for `future`, or until the calling task is cancelled: then the wait ends with
    /// ``CourierError/Code/cancelled`` at once (a write to a peer that stopped reading waits for
    /// its window for as long as the connection lives), while the work goes on.
    static func waitCancellably(for future: EventLoopFuture<Void>, request: Request) async throws {
        let settled = NIOLockedValueBox<(done: Bool, continuation: CheckedContinuation<Void, any Error>?)>((false, nil))
        // Resumes the wait once, with the first of the future's result and the cancellation.
        @Sendable func settle(_ result: Result<Void, any Error>) {
            let continuation = settled.withLockedValue { state -> CheckedContinuation<Void, any Error>? in
                guard !state.done else { return nil }
                state.done = true
                defer { state.continuation = nil }
                return state.continuation
            }
            continuation?.resume(with: result)
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let done = settled.withLockedValue { state -> Bool in
                    if !state.done { state.continuation = continuation }
                    return state.done
                }
                // Cancelled before the wait began: the handler found no continuation.
                if done { continuation.resume(throwing: Self.waitCancelled(for: "the write", request: request)) }
                future.whenComplete { settle($0) }
            }
        } onCancel: {
            settle(.failure(Self.waitCancelled(for: "the write", request: request)))
        }
    }

    // MARK: Ending

    /// Ends the task, once: the messages' end, the waiters. The channel closes too, unless its
    /// handler ended the task (`closesChannel` false): it closes the channel itself once its close
    /// frame went out, which a close from here would drop when the frame waits behind a message.
    func finish(error: CourierError?, code: WebSocketCloseCode, reason: String, closesChannel: Bool = true) {
        let (sent, received) = self.messageBytes.counts
        let ended = self.state.withLockedValue { state -> State? in
            if case .finished = state.phase { return nil }
            state.phase = .finished
            state.error = error
            state.closeCode = code
            state.closeReason = reason
            // The attempt that opened the connection carried the messages.
            if state.response != nil { state.recorder.lastAttemptCarried(bytesSent: sent, bytesReceived: received) }
            state.taskMetrics = state.recorder.finish(originalRequest: self.request, response: state.response, error: error, bytesReceived: 0)
            let before = state
            state.span = nil
            state.hopSpan = nil
            state.work = nil
            state.openWaiters = [:]
            state.finishWaiters = [:]
            state.pingWaiters = []
            state.source = nil
            state.handler = nil
            state.channel = nil
            return before
        }
        guard let ended else { return }
        // A handshake that failed was answered (or not) by the failed response in its error.
        let response = ended.response ?? error?.response
        ended.hopSpan?.end(response: error?.response, error: error)
        ended.span?.end(response: response, error: error, retryCount: ended.retryReasons.count)
        if let monitors = self.monitors, let metrics = ended.taskMetrics {
            monitors.emit { $0.webSocketTask(self, didFinishCollecting: metrics) }
            monitors.emit { $0.webSocketTask(self, didCompleteWith: error, closeCode: code) }
        }
        let metrics = ended.taskMetrics
        let post: @Sendable () -> Void = {
            var userInfo: [AnyHashable: Any] = [:]
            if let error { userInfo[TaskDidCompleteKey.error] = error }
            if let metrics { userInfo[TaskDidCompleteKey.metrics] = metrics }
            NotificationCenter.default.post(name: .taskDidComplete, object: self, userInfo: userInfo)
        }
        // Observers run on the posting thread: never on an event loop, whose connections they
        // would hold up (the task often ends there, with its connection).
        if self.postsNotifications {
            if MultiThreadedEventLoopGroup.currentEventLoop != nil { DispatchQueue.global().async(execute: post) } else { post() }
        }
        let failure = error ?? Self.notOpenError()
        for waiter in ended.openWaiters.values { waiter.resume(throwing: failure) }
        for (_, waiter) in ended.pingWaiters { waiter.resume(throwing: failure) }
        if let error { ended.source?.finish(error) } else { ended.source?.finish() }
        if closesChannel { ended.channel?.close(promise: nil) }
        for waiter in ended.finishWaiters.values { waiter.resume() }
        // An invalidated manager waits for its running WebSocket tasks before its engine stops.
        self.manager?.shutDownEngineIfIdle()
    }

    /// Whether the task was resumed and has not ended (its manager's engine waits for it).
    var isRunning: Bool {
        self.state.withLockedValue { state in
            switch state.phase {
            case .connecting, .awaitingRetry, .open: true
            case .suspended, .finished: false
            }
        }
    }
}

extension WebSocketTask: WebSocketChannelHandlerDelegate {
    func webSocketDidReceive(_ message: WebSocketMessage) -> Int {
        guard let source = self.state.withLockedValue({ $0.source }) else { return 0 }
        self.messageBytes.received(message.byteCount)
        // Counted before the consumer can take it, so that the count never goes below zero.
        let unread = self.unread.add(message.queuedCost)
        if case .dropped = source.yield(message) { return self.unread.add(-message.queuedCost) }
        return unread
    }

    /// A PONG answered these PINGs: its own and every PING sent before it, the keep-alive's
    /// included (RFC 6455 5.5.3: a peer may answer only the latest). A waiter that stopped waiting
    /// (cancelled) is not among the waiters any more.
    func webSocketPingsAnswered(_ payloads: [ByteBuffer]) {
        let answered = self.state.withLockedValue { state -> [CheckedContinuation<Void, any Error>] in
            var answered: [CheckedContinuation<Void, any Error>] = []
            state.pingWaiters.removeAll { waiter in
                guard payloads.contains(waiter.0) else { return false }
                answered.append(waiter.1)
                return true
            }
            return answered
        }
        for waiter in answered { waiter.resume() }
    }

    /// The connection's handler ended it; the handler closes the channel (after its close frame
    /// went out, or after the close timeout), not the task.
    func webSocketDidFinish(_ ending: WebSocketConnectionStateMachine.Ending) {
        let (error, code, reason) = self.outcome(of: ending)
        self.finish(error: error, code: code, reason: reason, closesChannel: false)
    }

    /// The task's error, close code and reason for the way its connection ended.
    private func outcome(of ending: WebSocketConnectionStateMachine.Ending) -> (CourierError?, WebSocketCloseCode, String) {
        let summary = self.request.summary
        let response = self.response
        func failure(_ code: CourierError.Code, _ message: String) -> CourierError {
            CourierError(code, "\(summary): \(message)", request: self.request, response: response)
        }
        switch ending {
        case .closed(let code, let reason):
            return (nil, code, reason)
        case .protocolViolation(let code, let reason):
            return (failure(code == .messageTooBig ? .responseTooLarge : .invalidResponse, "\(reason); closed with \(code)"), code, reason)
        case .pingTimedOut:
            let within = self.configuration.pingInterval.map { " within \(NIOEngine.seconds($0)) (pingInterval)" } ?? ""
            return (failure(.timedOut, "the server did not answer a PING\(within)"), .abnormalClosure, "")
        case .closeTimedOut:
            let within = " within \(NIOEngine.seconds(self.configuration.closeTimeout)) (closeTimeout)"
            return (failure(.timedOut, "the server did not answer the close frame\(within)"), .abnormalClosure, "")
        case .closeStalled:
            let within = " for \(NIOEngine.seconds(self.configuration.closeTimeout)) (closeTimeout)"
            return (
                failure(.timedOut, "the server read nothing of the messages ahead of the close frame\(within)"),
                .abnormalClosure, ""
            )
        case .connectionLost:
            return (failure(.connectionClosed, "the connection closed with no closing handshake"), .abnormalClosure, "")
        case .connectionFailed(let description):
            return (failure(.connectionClosed, "the connection failed: \(description)"), .abnormalClosure, "")
        case .cancelled:
            return (failure(.cancelled, "cancelled"), .goingAway, "")
        case .consumerFellBehind(let unreadBytes):
            let message = "\(unreadBytes) bytes of messages unread, over the maximum of \(self.configuration.bufferedBytesBound); closed with 1008"
            return (failure(.messageBufferFull, message), .policyViolation, "")
        }
    }
}

/// A weak reference to a task, for its messages' producer (which the task holds).
struct WeakTask: Sendable {
    weak var task: WebSocketTask?
}

/// The messages' producer's delegate: asks the task's connection for more, or cancels the task
/// when the consumer stopped iterating.
final class WebSocketProducerDelegate: NIOAsyncSequenceProducerDelegate, Sendable {
    let task = NIOLockedValueBox(WeakTask())

    func produceMore() {
        self.task.withLockedValue { $0.task }?.produceMore()
    }

    func didTerminate() {
        self.task.withLockedValue { $0.task }?.didTerminate()
    }
}

extension WebSocketTask {
    func produceMore() {
        // Nothing to resume: the connection is read at all times.
    }

    func didTerminate() {
        // The consumer stopped iterating: the WebSocket is cancelled, unless it is over already.
        if !self.isFinished { self.cancel() }
    }
}

/// The payload bytes of a task's messages, sent (once written) and received (once put together
/// and inflated), for its metrics: added on the connection's loop and by senders, read at the end.
final class MessageByteCounts: Sendable {
    private let sentBytes = Atomic<Int64>(0)
    private let receivedBytes = Atomic<Int64>(0)

    func sent(_ bytes: Int) { self.sentBytes.wrappingAdd(Int64(bytes), ordering: .relaxed) }
    func received(_ bytes: Int) { self.receivedBytes.wrappingAdd(Int64(bytes), ordering: .relaxed) }
    var counts: (sent: Int64, received: Int64) {
        (self.sentBytes.load(ordering: .relaxed), self.receivedBytes.load(ordering: .relaxed))
    }
}

/// The bytes of messages delivered and not yet taken, shared by the connection's loop (which adds)
/// and the consumer (which takes away).
final class UnreadBytes: Sendable {
    private let count = Atomic(0)

    /// Adds `bytes` (taken away when negative); returns the new count.
    @discardableResult
    func add(_ bytes: Int) -> Int {
        self.count.wrappingAdd(bytes, ordering: .relaxed).newValue
    }
}

/// The messages of a ``WebSocketTask``: an `AsyncSequence`, iterated once. What waits unread is
/// bounded by ``WebSocketConfiguration/maximumBufferedBytes``.
///
/// ``decoded(_:decoder:)`` reads them as values instead (Alamofire's `streamDecodable`).
public struct WebSocketMessages: AsyncSequence, Sendable {
    public typealias Element = WebSocketMessage
    public typealias Failure = any Error
    private let producer: WebSocketTask.Producer?
    private let unread: UnreadBytes
    private let once = SingleIteration()

    init(_ producer: WebSocketTask.Producer?, unread: UnreadBytes) {
        self.producer = producer
        self.unread = unread
    }

    /// The messages' one iterator: a second one (of this value or a copy) ends at once.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(self.once.claim() ? self.producer?.makeAsyncIterator() : nil, unread: self.unread)
    }

    /// Iterates the messages.
    public struct AsyncIterator: AsyncIteratorProtocol {
        private var base: WebSocketTask.Producer.AsyncIterator?
        private let unread: UnreadBytes

        init(_ base: WebSocketTask.Producer.AsyncIterator?, unread: UnreadBytes) {
            self.base = base
            self.unread = unread
        }

        public mutating func next() async throws -> WebSocketMessage? {
            let message = try await self.base?.next()
            if let message { self.unread.add(-message.queuedCost) }
            return message
        }
    }

    /// Each message decoded as a `Value` (``WebSocketMessage/decoded(as:decoder:)``; Alamofire's
    /// `streamDecodable`). A message that does not decode ends the iteration with its
    /// ``CourierError/Code/responseSerializationFailed``, and so, as any end of the messages'
    /// iteration does, cancels the task (a close frame with 1001). To go on past such a message,
    /// iterate ``WebSocketMessages`` and call ``WebSocketMessage/decoded(as:decoder:)`` yourself
    /// (Alamofire's events carry the failure and go on).
    ///
    /// ```swift
    /// for try await update in task.messages.decoded(PriceUpdate.self) { show(update) }
    /// ```
    public func decoded<Value: Decodable & Sendable>(
        _ type: Value.Type, decoder: any DataDecoder = JSONDecoder()
    ) -> AsyncThrowingMapSequence<WebSocketMessages, Value> {
        self.map { message throws(CourierError) in try message.decoded(as: type, decoder: decoder) }
    }
}
