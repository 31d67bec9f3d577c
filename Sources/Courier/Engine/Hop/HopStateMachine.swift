import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1

/// The decisions of one HTTP/1.1 connection (or of the one HTTP/2 stream a handler in stream mode
/// carries), apart from its I/O: when a request body goes, what a response part means for the hop,
/// whether the connection goes back to the pool, when a hop whose connection closed under it goes
/// again, and when an idle connection has been idle too long.
///
/// A value with no channel, hop object, lock or clock: ``HopHandler`` feeds it the
/// connection's events (a hop to start, a write done, a response part, a read the pipeline asks
/// for, a pause or resume of the exchange, the channel failing or closing, a timer firing), with
/// the time when time matters, and runs the action each returns. The handler keeps the hop itself,
/// its body, its metrics and its timers.
///
/// - One hop at a time: ``startHop(_:)`` refuses a second (``StartAction/restartElsewhere``).
/// - The body waits for `100 Continue` when ``ExpectContinue`` says so: `100 Continue` or the end
///   of the wait (``continueWaitExpired()``) sends it; a final answer instead withholds it, and
///   the connection closes after that answer. A 417 to an expectation the request may go without
///   (``HopStart/canRepeatWithoutExpectation``) is nobody's answer, also one that comes after the
///   wait ended and the body went (or is going) out: its body is discarded and the request goes
///   again without the expectation once it ends (RFC 9110 10.1.1), on another connection. A body
///   read once (a stream) goes again when the 417 came during the wait (none of it was read);
///   after the wait, it cannot, and the hop fails
///   (``Failure/expectationRefusedAfterBodyBegan(_:)``).
/// - A response that ends with a status below 300 before the request body does lets the body
///   finish; the hop ends with it, or with the response alone when the body fails or the upload
///   times out (a server that stopped reading it).
/// - The connection goes back to the pool after a hop when the response allows it
///   (``HopResponseHead/isKeepAlive``: HTTP/1.0 only with `keep-alive`), the whole request went
///   out, and the request did not ask for `Connection: close`; a stream always closes.
/// - While the exchange cannot take more body (it is suspended), response parts are held and
///   reads wait; if the connection fails or closes meanwhile, the held parts are delivered first,
///   and the hop fails after them unless they end it.
/// - A connection that closes under a hop before its answer: ``ResendRule`` decides.
/// - Idle in the pool for the idle timeout, the connection asks the pool to let it close. One
///   idle check at a time: ``IdleAction/scheduleCheck(at:)`` asks for it, ``idleCheckFired(now:)``
///   reports it.
struct HopStateMachine {
    /// What the machine drives.
    enum Mode: Equatable {
        /// An HTTP/1.1 connection of the pool, which carries one hop after another.
        case connection
        /// One HTTP/2 stream (its parts from an ``HTTP2Stream``), which carries one hop.
        case stream
    }

    /// What the handler knows of a hop as it starts it on the connection.
    struct HopStart {
        /// What the request's own fields expect (``ExpectContinue/requested(in:)``).
        var requested: ExpectContinue.Requested
        /// Whether the request's fields ask the server to close the connection after the answer
        /// (``HopStateMachine/asksToClose(_:)``).
        var asksToClose: Bool
        /// Whether the request has content (then `Expect: 100-continue` may apply).
        var hasBody: Bool
        var bodyLength: RequestBody.Length
        var method: HTTPRequest.Method
        /// Whether the body can be produced again (a resend, a repeat without the expectation).
        var bodyIsReplayable: Bool
        /// Whether the hop goes through a forwarding proxy (then a 407 is the proxy's refusal).
        var viaForwardingProxy: Bool
        var expectContinue: ExpectContinue
        /// The server refused `Expect: 100-continue` before (417): this send goes without it.
        var withoutExpectation: Bool
        /// How many times the hop was already sent again after a close (``ResendRule``).
        var resends: Int
        /// Whether the hop was cancelled before it started.
        var isCancelled: Bool
        /// How many times the hop was already sent again because an HTTP/2 server did not process
        /// it (``ResendRule/maximumUnprocessedResends``).
        var unprocessedResends = 0
        /// Whether the hop was already sent again because a GOAWAY that named an error left it
        /// unprocessed (``ResendRule/resentAfterGoAwayError``).
        var resentAfterGoAwayError = false
        /// Whether the request carries an `Idempotency-Key` (or `X-Idempotency-Key`) field: its
        /// sender says it is safe to repeat whatever its method (``ResendRule/hasIdempotencyKey(_:fields:)``).
        var hasIdempotencyKey = false

        /// Whether a 417 to the expectation lets the request go again without it, if its body can
        /// go again: a body read once only while none of it was read (the 417 came during the wait).
        var canRepeatWithoutExpectation: Bool {
            !self.withoutExpectation && self.resends < ResendRule.maximumResends
        }
    }

    /// How the connection (or stream) ended under a hop, in the handler's terms: what the machine
    /// cannot know by itself.
    struct Loss {
        /// Why, if an error says why (nil: the peer closed it).
        var error: (any Error)?
        var closure: ResendRule.Closure
        /// Whether any byte came from the server since the hop began (the read watcher's count,
        /// which sees bytes the decoder has not made into a part yet).
        var responseBytesSeen: Bool
        /// Whether the hop was cancelled meanwhile.
        var isCancelled: Bool
    }

    /// What ``startHop(_:)`` decides.
    enum StartAction: Equatable {
        /// The connection is busy or closed: nothing was sent; the hop goes to another connection.
        case restartElsewhere
        /// The hop was cancelled before it started: end it with its cancellation, then this.
        case endCancelled(then: AfterHop)
        /// Write the request head (without any `Expect` field when `removingExpectField`, with
        /// `Expect: 100-continue` added when `expectation` is ``ExpectContinue/Decision/announce``),
        /// then the body at once (``ExpectContinue/Decision/sendAtOnce``), or flush and hold the
        /// body until ``Action/sendHeldBody``, calling ``continueWaitExpired()`` after the wait.
        case send(expectation: ExpectContinue.Decision, removingExpectField: Bool)
    }

    /// What becomes of the connection once its hop ended.
    enum AfterHop: Equatable {
        /// Nothing more (it closed, or is closing).
        case none
        /// Close it (a stream: close it, which is a reset unless both sides ended it).
        case close
        /// Give it back to the pool, which may hand it another hop at once; the server said it
        /// keeps an idle connection this long (`Keep-Alive: timeout`, less a second), if it said.
        case giveBack(serverIdleTimeout: TimeAmount?)
    }

    /// Why a hop fails.
    enum Failure {
        /// It was cancelled: with its cancellation.
        case cancelled
        /// The connection failed or closed before the response was complete (nil: closed).
        case connectionLost((any Error)?)
        /// Closed before any answer on every one of `attempts` sends.
        case closedBeforeAnswering(attempts: Int)
        /// An HTTP/2 server did not process it (a GOAWAY below its stream, REFUSED_STREAM) on every
        /// one of `attempts` sends.
        case notProcessed(attempts: Int)
        /// A GOAWAY that named an error (`error`) left it unprocessed again, after it had been sent
        /// again once for the same (``ResendRule/Closure/notProcessedWithError``).
        case refusedAgainAfterGoAwayError((any Error)?)
        /// The HTTP/2 server wants the request over HTTP/1.1 (HTTP_1_1_REQUIRED, `error` says how),
        /// and it could not go again (``ResendRule``): the origin's later requests go over HTTP/1.1.
        case http1Required((any Error)?)
        /// The request body failed (a stream threw, or gave more or fewer bytes than declared).
        case requestBodyFailed(any Error)
        /// A reused connection closed as the request went out, with no byte of the response: the
        /// server may not have processed it, but its method is not idempotent, so it did not go
        /// again (RFC 9110 9.2.2).
        case closedOnReuseNotResent(reset: Bool)
        /// A forwarding proxy wants authentication (407): this is its answer.
        case proxyAuthenticationRequired(HopResponseHead)
        /// The server refused the expectation (417, this head) once the body, one read once, had
        /// begun to go out: it cannot go again without the expectation.
        case expectationRefusedAfterBodyBegan(HopResponseHead)
    }

    /// What a response's end leads to.
    enum ResponseEnd: Equatable {
        /// The hop ends well, then this.
        case succeed(then: AfterHop)
        /// The request body is still going out: the hop ends when it does (``requestEnded()``).
        case awaitUpload
        /// It was the 417 to an expectation: close, and send the request again, without it.
        case repeatWithoutExpectation
    }

    /// What the handler does after an event about the running hop or the channel.
    enum Action {
        case none
        /// Ask the channel for more bytes.
        case read
        /// Close the connection (or stream).
        case close
        /// Send the body held for `100 Continue` now (stop the wait's timer).
        case sendHeldBody
        /// An interim (1xx) head that asks nothing: the exchange hears the server is alive.
        case interimHead
        /// The response head: to the hop's exchange, as having come over `networkProtocol`.
        case forwardHead(HopResponseHead, networkProtocol: String)
        /// A part of the response body: to the exchange (which may pause delivery).
        case forwardBody(ByteBuffer)
        /// A part of a response nobody takes (the 417 the request is repeated after): count it only.
        case discardBody(ByteBuffer)
        /// The response ended, with trailer fields (`nil` when there are none) for the exchange.
        case responseEnded(trailers: HTTPHeaders?, next: ResponseEnd)
        /// The hop ends well (the request body ended after the response, or the connection closed
        /// once the response had ended), then this.
        case succeedHop(then: AfterHop)
        /// The hop ends with this failure, then this.
        case failHop(Failure, then: AfterHop)
        /// The hop goes again on another connection (``ResendRule``) for `reason` (which says
        /// against which bound it counts, and whether it goes over HTTP/1.1), then this.
        case resendHop(then: AfterHop, reason: ResendRule.Reason)
    }

    /// What the handler does about idleness.
    enum IdleAction: Equatable {
        case none
        /// Call ``idleCheckFired(now:)`` at the deadline.
        case scheduleCheck(at: NIODeadline)
        /// Idle for the idle timeout: close unless the pool handed the connection out meanwhile.
        case closeIfStillIdle
    }

    private enum RequestProgress: Equatable {
        /// The head and body are going out.
        case sending
        /// The head went; the body waits for `100 Continue`.
        case awaitingContinue
        /// A final answer came instead of `100 Continue`: the body is never sent, and the server
        /// may read what follows as that body, so the connection carries nothing more.
        case withheld
        /// The whole request was written.
        case sent
    }

    private enum ResponseProgress: Equatable {
        case awaitingHead
        case receiving(status: Int, keepAlive: Bool)
        /// The response ended (below 300) while the request body still goes out.
        case endedBeforeRequest(keepAlive: Bool)
        /// The 417 to an expectation: nobody's response.
        case refusedExpectation
    }

    /// Nothing in it is counted: a copy of it (taking it out of ``State/running(_:)`` to change
    /// it) retains nothing. The method is kept as whether it is idempotent, all ``ResendRule``
    /// asks of it.
    private struct Hop {
        let methodIsIdempotent: Bool
        let bodyIsReplayable: Bool
        let viaForwardingProxy: Bool
        /// The head carries a `100-continue` expectation, and a 417 to it lets the request go again
        /// without it (``HopStart/canRepeatWithoutExpectation``) if the body can go again.
        let canRepeatWithoutExpectation: Bool
        let resends: Int
        let unprocessedResends: Int
        let resentAfterGoAwayError: Bool
        /// Whether the connection carried a hop before this one (then a close before any response
        /// byte may be the server's idle timeout, and the hop can go again).
        let isReused: Bool
        /// The request asked for `Connection: close`.
        let closeRequested: Bool
        /// Whether the request head reached the socket (then the server may have read it).
        var headWritten = false
        var request: RequestProgress
        var response = ResponseProgress.awaitingHead
    }

    private enum State {
        /// No hop; in the pool's hands until `expiresAt`, once the connection was said idle.
        case idle(expiresAt: NIODeadline?)
        /// The hop's response ended (with `trailers`) within a read whose other bytes are still
        /// being decoded: the hop succeeds, and the connection goes back to the pool, when the read
        /// ends (``readCompleted()``); if those bytes were more than the response, the hop succeeds
        /// and the connection closes.
        case endingRead(serverIdleTimeout: TimeAmount?, trailers: HTTPHeaders?)
        case running(Hop)
        /// Closed or closing; no hop (held parts of the last one may still be delivered).
        case closed
    }

    let mode: Mode
    private var state = State.idle(expiresAt: nil)
    /// How many hops the connection was given (a cancelled one that never started is not counted).
    private(set) var hopsCarried = 0
    /// A read is being decoded (``readBegan()`` to ``readCompleted()``, connection mode): bytes
    /// after a response's end may still come out of it.
    private var inRead = false
    /// The server answered with HTTP/1.0: it knows no `Expect: 100-continue`.
    private var serverIsHTTP10 = false
    /// How long the server said it keeps an idle connection (`Keep-Alive: timeout=N`), less a second.
    private var serverIdleTimeout: TimeAmount?
    private var idleCheckScheduled = false
    /// The exchange wants no more body for now (its task is suspended).
    private var deliveryPaused = false
    /// A read the pipeline asked for while delivery was paused.
    private var readPending = false
    /// Response parts that arrived while delivery was paused (or while earlier ones were still
    /// held), in order; made when the first is held (a hop that never pauses, an HTTP/2 stream's
    /// most often, allocates none).
    private var heldParts: CircularBuffer<HopResponsePart>?
    /// The connection failed or closed while parts were held: the hop ends after them.
    private var lossWhileHeld: Loss?

    /// A stream's machine: whether its connection opened a stream before this one. A stream
    /// carries one hop, so its own count cannot tell that the connection was reused, which the
    /// rule for a connection that closes under a hop asks (``ResendRule``): an idempotent request
    /// on a reused HTTP/2 connection that the server closes without GOAWAY goes again, as it
    /// does over HTTP/1.1.
    private let onReusedConnection: Bool

    /// A machine for one HTTP/1.1 connection, or (`mode` `.stream`) for one stream of an HTTP/2
    /// connection that had opened a stream before this one when `onReusedConnection`.
    init(mode: Mode, onReusedConnection: Bool = false) {
        self.mode = mode
        self.onReusedConnection = onReusedConnection
    }

    /// Whether a hop is under way.
    var isRunningHop: Bool {
        if case .running = self.state { return true }
        return false
    }

    /// Whether response parts wait for the exchange to resume.
    var isHoldingParts: Bool { self.deliveryPaused || self.heldParts?.isEmpty == false }

    // MARK: The request

    /// The pool hands the connection a hop.
    mutating func startHop(_ start: HopStart) -> StartAction {
        guard case .idle = self.state else { return .restartElsewhere }
        if start.isCancelled {
            return .endCancelled(then: self.hopEnded(reusable: true))
        }
        var expectation = start.expectContinue.decision(
            requested: start.requested, hasBody: start.hasBody, length: start.bodyLength, serverIsHTTP10: self.serverIsHTTP10,
            overHTTP2: self.mode == .stream)
        var removingExpectField = false
        if expectation != .sendAtOnce, start.withoutExpectation {
            // The server refused the expectation (417): this send goes without one.
            expectation = .sendAtOnce
            removingExpectField = true
        }
        self.state = .running(
            Hop(
                methodIsIdempotent: start.hasIdempotencyKey || ResendRule.isIdempotent(start.method), bodyIsReplayable: start.bodyIsReplayable, viaForwardingProxy: start.viaForwardingProxy,
                canRepeatWithoutExpectation: expectation != .sendAtOnce && start.canRepeatWithoutExpectation, resends: start.resends,
                unprocessedResends: start.unprocessedResends, resentAfterGoAwayError: start.resentAfterGoAwayError, isReused: self.hopsCarried > 0 || self.onReusedConnection, closeRequested: start.asksToClose,
                request: expectation == .sendAtOnce ? .sending : .awaitingContinue))
        self.hopsCarried += 1
        return .send(expectation: expectation, removingExpectField: removingExpectField)
    }

    /// The hop's request head could not be made (an HTTP/2 stream's, for a request with two
    /// `Host` fields): the hop fails with nothing sent, and the connection goes on as after a
    /// hop (a stream closes).
    mutating func headRefused() -> AfterHop {
        guard case .idle = self.state else { return .none }
        return self.hopEnded(reusable: true)
    }

    /// The request head reached the socket.
    mutating func requestHeadWritten() {
        guard case .running(var hop) = self.state else { return }
        hop.headWritten = true
        self.state = .running(hop)
    }

    /// The whole request was written (its end queued, for a body in memory).
    mutating func requestEnded() -> Action {
        guard case .running(var hop) = self.state else { return .none }
        hop.request = .sent
        if case .endedBeforeRequest(let keepAlive) = hop.response {
            return .succeedHop(then: self.hopEnded(reusable: keepAlive && !hop.closeRequested))
        }
        self.state = .running(hop)
        return .none
    }

    /// The request body failed before its end went out.
    mutating func requestBodyFailed(_ error: any Error) -> Action {
        guard case .running(let hop) = self.state else { return .none }
        switch hop.response {
        case .endedBeforeRequest:
            // A server that answered early ended the upload: its response is the outcome.
            return .succeedHop(then: self.hopEnded(reusable: false))
        case .awaitingHead:
            self.state = .closed
            return .failHop(.requestBodyFailed(error), then: .close)
        case .receiving(let status, _) where status < 300:
            // A success under way may be an answer to a body the server still reads (an echo):
            // it would wait for the rest for ever, and the task with it. The body's error is the
            // outcome, and the connection, which carries half a request, closes.
            self.state = .closed
            return .failHop(.requestBodyFailed(error), then: .close)
        case .receiving:
            // A refusal under way (`413`) is the outcome: the server reads no more of the body,
            // and its answer ends on its own. The connection closes after it (the request was
            // not sent whole).
            return .none
        case .refusedExpectation:
            return .none
        }
    }

    /// The wait for `100 Continue` ended.
    mutating func continueWaitExpired() -> Action {
        guard case .running(var hop) = self.state, hop.request == .awaitingContinue else { return .none }
        hop.request = .sending
        self.state = .running(hop)
        return .sendHeldBody
    }

    /// The hop was cancelled while it ran: it fails now, and the connection closes (its response
    /// is unfinished).
    ///
    /// A timeout (`byTimeout`) that comes once a whole success ended before the upload (the
    /// server answered, then stopped reading or the body's producer stalled) is not a failure:
    /// the response is the outcome, as when the upload fails (``requestBodyFailed(_:)``), and the
    /// connection, which carries half a request, closes. A caller's cancellation still fails it.
    mutating func hopCancelled(byTimeout: Bool = false) -> Action {
        guard case .running(let hop) = self.state else { return .none }
        if byTimeout, case .endedBeforeRequest = hop.response {
            return .succeedHop(then: self.hopEnded(reusable: false))
        }
        self.heldParts = nil
        self.lossWhileHeld = nil
        self.state = .closed
        return .failHop(.cancelled, then: .close)
    }

    // MARK: The response

    /// A response part arrived.
    mutating func responseReceived(_ part: HopResponsePart) -> Action {
        if case .endingRead(_, let trailers) = self.state {
            // More than the response: bytes past its length that NIO decoded as another response
            // (one nobody asked for). The connection cannot carry another hop (RFC 9112 6.3).
            self.state = .closed
            return .responseEnded(trailers: trailers, next: .succeed(then: .close))
        }
        if self.isHoldingParts {
            self.heldParts = self.heldParts ?? CircularBuffer(initialCapacity: 16)
            self.heldParts?.append(part)
            return .none
        }
        return self.handle(part)
    }

    /// The exchange cannot take more body for now: parts are held and reads wait.
    mutating func pauseDelivery() {
        self.deliveryPaused = true
    }

    /// The exchange can take more body: call ``nextHeldAction()`` until it returns nil.
    mutating func resumeDelivery() {
        self.deliveryPaused = false
    }

    /// After ``resumeDelivery()``: what the next held part (or, once none is left, the loss or the
    /// read that waited) means; nil when nothing is left or delivery paused again.
    mutating func nextHeldAction() -> Action? {
        guard !self.deliveryPaused else { return nil }
        if let part = self.heldParts?.popFirst() {
            return self.handle(part)
        }
        if let loss = self.lossWhileHeld {
            self.lossWhileHeld = nil
            self.readPending = false
            // The held parts may have ended the hop: then the loss is nobody's.
            guard self.isRunningHop else { return nil }
            return self.connectionLost(loss, then: .none)
        }
        if self.readPending {
            self.readPending = false
            return .read
        }
        return nil
    }

    /// The pipeline asks for more bytes.
    mutating func readRequested() -> Action {
        if self.deliveryPaused {
            self.readPending = true
            return .none
        }
        return .read
    }

    private mutating func handle(_ part: HopResponsePart) -> Action {
        switch part {
        case .head(let head):
            return self.handleHead(head)
        case .body(let buffer):
            guard case .running(let hop) = self.state else { return .none }
            // The body of a 417 that the request is repeated after is nobody's.
            return hop.response == .refusedExpectation ? .discardBody(buffer) : .forwardBody(buffer)
        case .end(let trailers):
            return self.handleEnd(trailers: trailers)
        }
    }

    private mutating func handleHead(_ head: HopResponseHead) -> Action {
        guard case .running(var hop) = self.state else {
            // An answer nobody asked for.
            self.state = .closed
            return .close
        }
        let code = head.status
        // 1xx answers other than 101 precede the real response; `100 Continue` lets a body held
        // back for it go.
        if code >= 100, code < 200, code != 101 {
            // The server is alive (`102 Processing` every few seconds of a long WebDAV copy):
            // the exchange's idle clock starts again.
            guard code == 100, hop.request == .awaitingContinue else { return .interimHead }
            hop.request = .sending
            self.state = .running(hop)
            return .sendHeldBody
        }
        if hop.request == .awaitingContinue {
            // A final answer instead of `100 Continue`: the body is not sent (RFC 9110 10.1.1).
            hop.request = .withheld
        }
        if code == 417, hop.canRepeatWithoutExpectation, !hop.bodyIsReplayable, hop.request != .withheld {
            // A body read once that began to go out (the 417 came after the wait): it cannot go
            // again, and the 417 answers an expectation the caller may never have written.
            self.state = .closed
            return .failHop(.expectationRefusedAfterBodyBegan(head), then: .close)
        }
        if code == 417, hop.canRepeatWithoutExpectation {
            // Refused because of the expectation: the request is repeated without it, on another
            // connection, once this answer ends. Also when the 417 comes after the wait ended and
            // the body went, or is going, out (a server further than the wait, or one that reads
            // the body first): it refuses the expectation Courier sent all the same, as curl reads
            // it (the body's pump stops when the hop ends and the connection closes). A body read
            // once goes again only from here, during the wait: withheld, none of it was read.
            hop.response = .refusedExpectation
            self.state = .running(hop)
            return .none
        }
        if head.version == .http1_0, self.mode == .connection { self.serverIsHTTP10 = true }
        if code == 407, hop.viaForwardingProxy {
            // The forwarding proxy, not the origin, refused.
            self.state = .closed
            return .failHop(.proxyAuthenticationRequired(head), then: .close)
        }
        // After `101 Switching Protocols` the connection speaks another protocol, which NIO's
        // decoder stops reading (as it must): the connection is not given back, whatever its
        // head says. (HTTP/2 has no 101: its stream refuses one as malformed.)
        hop.response = .receiving(status: code, keepAlive: head.isKeepAlive && code != 101)
        self.state = .running(hop)
        if case .idleTimeout(let timeout) = head.keepAlive {
            self.serverIdleTimeout = timeout
        }
        let networkProtocol = self.mode == .stream ? "h2" : (head.version == .http1_0 ? "http/1.0" : "http/1.1")
        return .forwardHead(head, networkProtocol: networkProtocol)
    }

    private mutating func handleEnd(trailers: HTTPHeaders?) -> Action {
        guard case .running(var hop) = self.state else { return .none }
        let status: Int
        let keepAlive: Bool
        switch hop.response {
        case .refusedExpectation:
            self.state = .closed
            return .responseEnded(trailers: nil, next: .repeatWithoutExpectation)
        case .endedBeforeRequest:
            return .none
        case .awaitingHead:
            (status, keepAlive) = (0, true)
        case .receiving(let code, let keep):
            (status, keepAlive) = (code, keep)
        }
        let trailers = trailers.flatMap { $0.isEmpty ? nil : $0 }
        if hop.request == .sending || hop.request == .awaitingContinue, status < 300 {
            // The server answered before the upload ended and may still read it: let it finish.
            hop.response = .endedBeforeRequest(keepAlive: keepAlive)
            self.state = .running(hop)
            return .responseEnded(trailers: trailers, next: .awaitUpload)
        }
        let reusable = keepAlive && hop.request == .sent && !hop.closeRequested
        if reusable, self.inRead, self.mode == .connection, self.lossWhileHeld == nil {
            // The rest of the read may hold bytes past the response (a `Content-Length` shorter
            // than the body): given back now, the next hop would read them as its response's
            // start. Their decoding fails the connection, or ends it, before the read completes.
            // The hop succeeds then too, so that its caller's next request finds the connection
            // back in the pool.
            self.state = .endingRead(serverIdleTimeout: self.serverIdleTimeout, trailers: trailers)
            return .none
        }
        return .responseEnded(trailers: trailers, next: .succeed(then: self.hopEnded(reusable: reusable)))
    }

    // MARK: The channel

    /// The channel (or stream) failed; it closes.
    mutating func channelFailed(_ loss: Loss) -> Action {
        if case .endingRead(_, let trailers) = self.state {
            // The response was whole; what came after it in the read was not a response.
            self.state = .closed
            return .responseEnded(trailers: trailers, next: .succeed(then: .close))
        }
        if self.isHoldingParts {
            // Parts that arrived before the failure are held for a suspended exchange: the hop
            // fails after they are delivered (the first reason is kept).
            if self.lossWhileHeld == nil { self.lossWhileHeld = loss }
            if case .idle = self.state { self.state = .closed }
            return .close
        }
        return self.connectionLost(loss, then: .close)
    }

    /// The channel (or stream) closed.
    mutating func channelInactive(_ loss: Loss) -> Action {
        self.idleCheckScheduled = false
        if case .endingRead(_, let trailers) = self.state {
            self.state = .closed
            return .responseEnded(trailers: trailers, next: .succeed(then: .none))
        }
        if self.isHoldingParts {
            // The held parts may end the response; the hop fails only if they do not.
            if self.lossWhileHeld == nil { self.lossWhileHeld = loss }
            if case .idle = self.state { self.state = .closed }
            return .none
        }
        return self.connectionLost(loss, then: .none)
    }

    /// The connection ended with a hop perhaps under way: the hop fails, or goes again as
    /// ``ResendRule`` allows.
    private mutating func connectionLost(_ loss: Loss, then: AfterHop) -> Action {
        guard case .running(let hop) = self.state else {
            self.state = .closed
            return then == .close ? .close : .none
        }
        if case .endedBeforeRequest = hop.response {
            // The whole response came; the rest of the upload had nowhere to go.
            return .succeedHop(then: self.hopEnded(reusable: false))
        }
        self.state = .closed
        let rule = ResendRule(
            methodIsIdempotent: hop.methodIsIdempotent,
            bodyIsReplayable: hop.bodyIsReplayable,
            connectionWasReused: hop.isReused,
            requestWritten: hop.headWritten,
            responseBytesSeen: hop.response != .awaitingHead || loss.responseBytesSeen,
            closure: loss.closure,
            resends: hop.resends,
            isCancelled: loss.isCancelled,
            unprocessedResends: hop.unprocessedResends,
            resentAfterGoAwayError: hop.resentAfterGoAwayError)
        if rule.allowsResend {
            return .resendHop(then: then, reason: rule.reason)
        }
        if rule.closure == .http1Required {
            // Not sent again (a body read once, a cancellation, an answer begun): the server's
            // answer is the error, and the origin's later requests still go over HTTP/1.1.
            return .failHop(.http1Required(loss.error), then: then)
        }
        if rule.closure == .notProcessed, hop.unprocessedResends >= ResendRule.maximumUnprocessedResends,
            !rule.responseBytesSeen, !rule.isCancelled
        {
            // Sent again as often as allowed, and not processed each time.
            return .failHop(.notProcessed(attempts: hop.unprocessedResends + 1), then: then)
        }
        if rule.closure == .notProcessedWithError, hop.resentAfterGoAwayError, !rule.responseBytesSeen, !rule.isCancelled {
            // The second such refusal is the answer: it went again once already.
            return .failHop(.refusedAgainAfterGoAwayError(loss.error), then: then)
        }
        if !rule.methodIsIdempotent, rule.bodyIsReplayable, rule.connectionWasReused, rule.requestWritten, !rule.responseBytesSeen,
            rule.closure == .closed || rule.closure == .reset, !rule.isCancelled, hop.resends < ResendRule.maximumResends
        {
            // Most likely a keep-alive timeout that met the request: say why it did not go again.
            return .failHop(.closedOnReuseNotResent(reset: rule.closure == .reset), then: then)
        }
        if hop.resends >= ResendRule.maximumResends, !rule.responseBytesSeen, rule.closure == .closed || rule.closure == .reset {
            // Sent again as often as allowed, and closed each time before any answer.
            return .failHop(.closedBeforeAnswering(attempts: hop.resends + 1), then: then)
        }
        return .failHop(.connectionLost(loss.error), then: then)
    }

    /// The hop is over for this connection: whether the connection goes back to the pool.
    private mutating func hopEnded(reusable: Bool) -> AfterHop {
        guard self.mode == .connection, reusable, self.lossWhileHeld == nil else {
            self.state = .closed
            return .close
        }
        self.state = .idle(expiresAt: nil)
        return .giveBack(serverIdleTimeout: self.serverIdleTimeout)
    }

    /// A read's bytes are being decoded into response parts (connection mode).
    mutating func readBegan() {
        if self.mode == .connection { self.inRead = true }
    }

    /// The read ended (every byte of it decoded): a hop whose response ended within it succeeds,
    /// and its connection goes back to the pool.
    mutating func readCompleted() -> Action {
        self.inRead = false
        guard case .endingRead(let serverIdleTimeout, let trailers) = self.state else { return .none }
        self.state = .idle(expiresAt: nil)
        return .responseEnded(trailers: trailers, next: .succeed(then: .giveBack(serverIdleTimeout: serverIdleTimeout)))
    }

    // MARK: Idleness

    /// The connection waits in the pool (after a hop, or new and unasked for) from `now`, for
    /// `timeout` at most.
    mutating func becameIdle(now: NIODeadline, timeout: TimeAmount) -> IdleAction {
        guard case .idle = self.state else { return .none }
        self.state = .idle(expiresAt: now + timeout)
        guard self.mode == .connection, !self.idleCheckScheduled else { return .none }
        self.idleCheckScheduled = true
        return .scheduleCheck(at: now + timeout)
    }

    /// The scheduled idle check came due.
    mutating func idleCheckFired(now: NIODeadline) -> IdleAction {
        self.idleCheckScheduled = false
        guard case .idle(let expiresAt?) = self.state else { return .none }
        if expiresAt > now {
            // Idle again since the check was scheduled: it comes due later.
            self.idleCheckScheduled = true
            return .scheduleCheck(at: expiresAt)
        }
        return .closeIfStillIdle
    }

    // MARK: Heads

    /// Whether a `Connection` field's value asks the server to close the connection after the
    /// answer: one of its comma-separated options is `close`, in any case (RFC 9112 9.6).
    static func asksToClose(connection value: String) -> Bool {
        value.split(separator: ",").contains { $0.trimmingSpaces().equalsLowercased("close") }
    }

    /// The idle time a `Keep-Alive` header promises (`timeout=5, max=100`), less a second for the
    /// request to reach the server before it closes; nil when it names none.
    static func idleTimeout(fromKeepAlive value: String) -> TimeAmount? {
        for parameter in value.split(separator: ",") {
            let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard pair.count == 2, pair[0].equalsLowercased("timeout"), let seconds = Int64(pair[1]), seconds >= 0 else { continue }
            return .seconds(max(seconds - 1, 0))
        }
        return nil
    }
}
