import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// One exchange on the NIO engine: one or more hops (one per redirect), each an ``EngineHop`` on
/// Courier's pool (HTTP/1.1 or an HTTP/2 stream), reported to one ``ExchangeDelegate``.
///
/// A hop's events arrive one at a time, on its connection's loop; `cancel`, `suspend` and
/// `resume` arrive from any thread. The state sits
/// behind one lock; delegate calls, promise completions and transport calls happen after the lock
/// is released.
final class NIOExchange: Exchange, Sendable {
    let engine: NIOEngine
    let delegate: any ExchangeDelegate
    let eventLoop: any EventLoop
    /// The index of ``eventLoop`` in the engine's loops, released when the exchange ends.
    let loopIndex: Int
    /// The whole-transfer deadline, fixed when the exchange starts, enforced by the watchdog.
    let deadline: NIODeadline
    /// How long the exchange may go without an event before it fails: the request's own
    /// timeout, else the session's. Courier keeps this deadline itself rather than AHC's read
    /// timeout, so that a request may set a longer one and a suspended task is not "idle".
    let idleTimeout: TimeAmount
    /// Kept inline, and the state moved in: `NIOLockedValueBox` is one more object an exchange,
    /// and its initializer copied the state in (a retain of each of its references).
    let state: Mutex<NIOExchangeState>

    init(engine: NIOEngine, request: Request, delegate: any ExchangeDelegate) {
        self.engine = engine
        self.delegate = delegate
        self.loopIndex = engine.acquireLoop()
        self.eventLoop = engine.loops[self.loopIndex]
        self.deadline = .now() + .seconds(clamping: engine.configuration.resourceTimeout, to: 0...1e9, nan: 7 * 24 * 3600)
        let interval = request.options.timeoutInterval ?? engine.configuration.requestTimeout
        self.idleTimeout = .nanoseconds(Int64(RequestOptions.effectiveTimeout(interval) * 1e9))
        self.state = Mutex(NIOExchangeState(request: request, expectedBytesToSend: request.body.knownLength))
    }

    // MARK: Starting hops

    func start() {
        // Registered before anything can finish the exchange; `finish` unregisters.
        self.engine.watchdog.register(self)
        self.startHop()
    }

    /// Starts the idle deadline once the request head is on the wire. Before that, a connection
    /// opened for this hop is bounded by the connect timeout; a wait for a busy one to free (the
    /// host at its connection limit) only by the whole-transfer deadline and cancellation.
    func requestHeadSent() {
        self.state.withLockedValue { state in
            state.lastActivity = .now()
            state.isHeadSent = true
        }
    }

    private func startHop() {
        let request = self.state.withLockedValue { $0.request }
        if request.options.cachePolicy == .returnCacheDataDontLoad {
            self.finish(with: CourierError(
                .invalidRequest, "\(request.summary): the NIO engine keeps no cache, and the cache policy forbids loading",
                request: request))
            return
        }
        guard let key = self.engine.pool.key(for: request.url) else {
            let scheme = request.url.scheme
            let error =
                if let scheme, !URL.isRequestableScheme(scheme) {
                    CourierError(
                        .unsupportedScheme, "\(request.summary): only http, https, http+unix and https+unix URLs can be requested",
                        request: request)
                } else if request.url.isUnixSocketURLWithoutSocket {
                    CourierError(
                        .invalidURL, "\(request.summary): the URL names no socket (its host is the socket's path, percent-encoded)",
                        request: request)
                } else if request.url.hasUnacceptableHost {
                    CourierError(
                        .invalidURL,
                        "\(request.summary): \(URL.unacceptableHostProblem)",
                        request: request)
                } else if let port = request.url.port, !ConnectionPool.portRange.contains(port) {
                    CourierError(.invalidURL, "\(request.summary): port \(port) is not a TCP port (0 to 65535)", request: request)
                } else {
                    CourierError(.invalidURL, "\(request.summary): the URL has no scheme or no host", request: request)
                }
            self.finish(with: error)
            return
        }
        self.startHop(request, pool: self.engine.pool, key: key)
    }

    /// Sends the hop on Courier's pool.
    private func startHop(_ request: Request, pool: ConnectionPool, key: ConnectionPool.Key) {
        let hop: EngineHop
        do {
            if case .forward(let proxy) = key.route {
                hop = try EngineHop(exchange: self, request: Self.answeringDigest(of: proxy, request, pool: pool), pool: pool, key: key)
            } else {
                hop = try EngineHop(exchange: self, request: request, pool: pool, key: key)
            }
        } catch {
            self.finish(with: error)
            return
        }
        let pendingCancel = self.state.withLockedValue { state -> CourierError? in
            state.currentTask = hop
            return state.pendingCancellation
        }
        if let pendingCancel {
            hop.end(.failure(pendingCancel))
            return
        }
        // A caller on one of the engine's loops is served by a connection on that loop if one is idle.
        var preferredLoop = self.eventLoop
        if let current = MultiThreadedEventLoopGroup.currentEventLoop, self.engine.loops.contains(where: { $0 === current }) {
            preferredLoop = current
        }
        pool.execute(hop, preferredLoop: preferredLoop)
    }

    /// `request`, through a forwarding proxy that sent a Digest challenge before, with the answer
    /// to it (instead of Basic), unless it carries a `Proxy-Authorization` of its own.
    private static func answeringDigest(of proxy: NIOEngine.Proxy, _ request: Request, pool: ConnectionPool) -> Request {
        guard !request.headerFields.contains(.proxyAuthorization),
            let answer = pool.proxyDigestChallenges.authorization(
                for: proxy, method: request.method.rawValue, uri: ProxyRoute.absoluteForm(of: request.url))
        else { return request }
        var request = request
        request.headerFields[.proxyAuthorization] = answer
        return request
    }

    /// The current hop ended: its transaction's metrics go to the delegate, then the next hop
    /// starts or the exchange finishes.
    func hopCompleted(_ result: Result<Void, any Error>, metrics: TransactionMetrics) {
        enum Next {
            case startNextHop
            /// Record a forwarding proxy's Digest challenge, then send the hop again.
            case answer(HTTPAuthorization.DigestChallenge, of: NIOEngine.Proxy)
            case finish(CourierError?)
        }
        let (finished, redirectDrain) = self.state.withLockedValue { state in
            defer { state.redirectDrain = nil }
            return (state.isFinished, state.redirectDrain)
        }
        redirectDrain?.cancel()
        if !finished { self.delegate.exchange(didFinishTransaction: metrics) }
        let next: Next = self.state.withLockedValue { state in
            state.currentTask = nil
            if state.isFinished { return .finish(nil) }
            if let cancellation = state.pendingCancellation {
                // A timeout that met a final response already whole (its upload still going, or
                // stalled: `HopStateMachine.hopCancelled(byTimeout:)`) loses nothing: the
                // response is the outcome, unless a part of it came after the timeout and was
                // dropped (the hop's end raced the timeout). A redirect's hop is not followed then.
                if case .success = result, case .streaming = state.phase, cancellation.code == .timedOut,
                    !state.droppedAfterCancellation
                {
                    return .finish(nil)
                }
                return .finish(cancellation)
            }
            // A redirect is planned on its head, and its body only drained: a failure of the body
            // (the connection closed or reset part-way) loses nothing the exchange needs, and the
            // redirect is followed all the same, on another connection (the failed one is gone),
            // as OkHttp does when discarding a redirect's body fails. Before, the exchange failed.
            if case .failure = result, case .redirecting(let newRequest) = state.phase {
                state.request = newRequest
                state.phase = .awaitingHead
                state.isHeadSent = false
                return .startNextHop
            }
            if case .failure(let error) = result {
                if let (challenge, proxy) = self.proxyChallengeToAnswer(error, state: &state) { return .answer(challenge, of: proxy) }
                return .finish(NIOEngine.courierError(from: error, request: state.request))
            }
            if case .redirecting(let newRequest) = state.phase {
                state.request = newRequest
                state.phase = .awaitingHead
                state.isHeadSent = false
                return .startNextHop
            }
            return .finish(nil)
        }
        switch next {
        case .startNextHop:
            self.startHop()
        case .answer(let challenge, let proxy):
            self.engine.pool.proxyDigestChallenges.record(challenge, for: proxy)
            self.startHop()
        case .finish(let error):
            self.finish(with: error)
        }
    }

    /// The Digest challenge of a forwarding proxy's 407 the hop failed with, when the proxy's
    /// credentials can answer it; the exchange then does (under its lock, `state` is made ready
    /// for the hop to go again; after it, the challenge is recorded for the pool,
    /// ``ProxyDigestChallenges``, and the hop carries its answer). Once, and once more when the
    /// proxy calls the answer's nonce stale (as a `CONNECT` does, ``HTTPConnectStateMachine``);
    /// only when the body can go again and the caller set no `Proxy-Authorization` of its own.
    private func proxyChallengeToAnswer(
        _ error: any Error, state: inout NIOExchangeState
    ) -> (HTTPAuthorization.DigestChallenge, NIOEngine.Proxy)? {
        guard let error = error as? CourierError, error.code == .proxyAuthenticationRequired, let response = error.response,
            response.status.code == 407, !state.request.headerFields.contains(.proxyAuthorization), state.request.body.isReplayable,
            case .forward(let proxy)? = self.engine.pool.key(for: state.request.url)?.route, proxy.credential != nil,
            let challenge = ProxyDigestChallenges.answerable(in: response),
            state.proxyDigestAnswers == 0 || (state.proxyDigestAnswers < HTTPConnectStateMachine.maximumDigestAnswers && challenge.stale)
        else { return nil }
        state.proxyDigestAnswers += 1
        state.phase = .awaitingHead
        state.isHeadSent = false
        state.bytesSent = 0
        state.sendGeneration += 1
        return (challenge, proxy)
    }

    /// Ends the exchange exactly once, fulfilling any pending back-pressure promise.
    func finish(with error: CourierError?) {
        let (alreadyFinished, promise) = self.state.withLockedValue { state -> (Bool, EventLoopPromise<Void>?) in
            let was = state.isFinished
            state.isFinished = true
            defer { state.pausedPromise = nil }
            return (was, state.pausedPromise)
        }
        promise?.fail(error ?? CourierError.cancelled)
        guard !alreadyFinished else { return }
        // The watchdog holds the exchange: let go so that nothing outlives it.
        self.engine.watchdog.unregister(self)
        self.engine.releaseLoop(self.loopIndex)
        self.delegate.exchange(didCompleteWith: error)
    }

    // MARK: Exchange

    func cancel(with error: CourierError) {
        let (task, promise) = self.state.withLockedValue { state -> ((any NIOHopTask)?, EventLoopPromise<Void>?) in
            guard !state.isFinished, state.pendingCancellation == nil else { return (nil, nil) }
            state.pendingCancellation = error
            defer { state.pausedPromise = nil }
            return (state.currentTask, state.pausedPromise)
        }
        promise?.fail(error)
        task?.fail(reason: error)
    }

    func suspendReceiving() {
        self.state.withLockedValue { $0.isPaused = true }
    }

    func resumeReceiving() {
        let promise = self.state.withLockedValue { state -> EventLoopPromise<Void>? in
            state.isPaused = false
            defer { state.pausedPromise = nil }
            return state.pausedPromise
        }
        promise?.succeed()
    }

    // MARK: Deadlines

    /// Called by the watchdog on an event loop: fails the exchange when the whole-transfer
    /// deadline has passed, or when it has been idle for longer than ``idleTimeout`` since its
    /// request head went out.
    func checkDeadlines(now: NIODeadline) {
        enum Verdict { case fine, resource(Request), idle(Request) }
        let idleTimeout = self.idleTimeout
        let verdict: Verdict = self.state.withLockedValue { state in
            if state.isFinished || state.pendingCancellation != nil { return .fine }
            if now >= self.deadline { return .resource(state.request) }
            if state.isPaused {
                // A paused exchange is idle by the caller's choice: idle time counts from the resume.
                state.lastActivity = now
                return .fine
            }
            guard state.isHeadSent, now - state.lastActivity >= idleTimeout else { return .fine }
            return .idle(state.request)
        }
        switch verdict {
        case .fine:
            return
        case .resource(let request):
            self.cancel(with: CourierError(.timedOut, "\(request.summary): the whole-transfer deadline passed", request: request))
        case .idle(let request):
            self.cancel(with: CourierError(.timedOut, "\(request.summary): no data for \(NIOEngine.seconds(idleTimeout))", request: request))
        }
    }
}

/// The mutable part of an exchange, guarded by its lock.
struct NIOExchangeState {
    enum Phase {
        /// Waiting for the current hop's response head.
        case awaitingHead
        /// The current hop is a redirect to follow once its body is drained.
        case redirecting(Request)
        /// The final response is streaming to the delegate.
        case streaming
    }

    /// The request of the current hop.
    var request: Request
    var phase: Phase = .awaitingHead
    var currentTask: (any NIOHopTask)?
    var pendingCancellation: CourierError?
    var isFinished = false
    var isPaused = false
    var pausedPromise: EventLoopPromise<Void>?
    /// Whether the current hop's request head went out (the idle deadline runs from then).
    var isHeadSent = false
    var redirectCount = 0
    /// The URLs of the requests redirected from, before `request` (empty until a redirect).
    var visitedURLs: Set<String> = []
    var lastActivity = NIODeadline.now()
    var bytesSent: Int64 = 0
    /// Bumped whenever the body starts over (a redirect, a resend): see `sendGeneration`.
    var sendGeneration = 0
    /// A part of the final response (body or trailers) came after `pendingCancellation` was set
    /// and was not delivered: the response the delegate has is not whole.
    var droppedAfterCancellation = false
    /// The limit on reading a redirect's body (`limitRedirectDrain`), while it runs.
    var redirectDrain: Scheduled<Void>?
    /// How many of a forwarding proxy's Digest challenges the exchange answered.
    var proxyDigestAnswers = 0
    var expectedBytesToSend: Int64?
}
