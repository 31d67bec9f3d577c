import NIOCore
import NIOHTTP1

/// One hop's request and response on one stream (an HTTP/1.1 connection while it carries the
/// hop, or an HTTP/2 stream), as a pure state machine: the stream's handler reports what happened
/// and performs the actions returned, in order. Shared by both protocols, so that back-pressure,
/// early answers, `Expect: 100-continue`, interim responses and failures behave the same.
///
/// - The request goes head first; a body follows at once, or after a `100 Continue` (or a bounded
///   wait for one) when the head asked for it.
/// - A final answer that arrives before the body is all sent: below 300 the body is finished and
///   the hop ends with it (the server may still read it); 300 or more stops the body, and the
///   stream is not reused.
/// - While the consumer is paused, decoded parts are held and delivered, in order, on resume; a
///   failure that comes meanwhile waits behind them, so every byte received reaches the consumer
///   before the error does.
struct HopStreamStateMachine {
    /// How the request's body is sent.
    enum Body: Equatable {
        /// No body: the head ends the request.
        case none
        /// Bytes in memory, written at once.
        case data
        /// A file or stream, pumped chunk by chunk by the handler.
        case stream
    }

    enum RequestState: Equatable {
        case idle
        /// The head asked for `100 Continue`; the body waits for it (or for the wait to end).
        case waitingForContinue(Body)
        /// The body is being written.
        case sendingBody
        /// The whole request is written.
        case sent
        /// The server answered 300 or more before the body was all sent: the rest is not sent.
        case abandoned
    }

    enum ResponseState: Equatable {
        case waitingForHead
        case receivingBody
        case ended
    }

    enum Action: Equatable {
        /// Write the request head; then, for `.data`, the body and the end; for `.none`, the end.
        case writeHead(Body, startBody: Bool)
        /// Start writing a body held for `100 Continue`.
        case startBody(Body)
        /// Hand the final response head to the exchange.
        case deliverHead(HTTPResponseHead)
        /// Hand a body part to the exchange.
        case deliverBodyPart(ByteBuffer)
        /// Ask the stream for more bytes (reading had stopped for a pause).
        case read
        /// The hop is done: success; the stream may carry another hop when `reusable`. A body still
        /// being pumped stops.
        case succeed(reusable: Bool, trailers: HTTPHeaders?)
        /// The hop failed with `error`; the stream cannot be reused. A body still being pumped stops.
        case fail(any Error)
        case none

        static func == (lhs: Action, rhs: Action) -> Bool {
            switch (lhs, rhs) {
            case (.writeHead(let a, let b), .writeHead(let c, let d)): a == c && b == d
            case (.startBody(let a), .startBody(let b)): a == b
            case (.read, .read), (.none, .none): true
            case (.deliverHead(let a), .deliverHead(let b)): a == b
            case (.deliverBodyPart(let a), .deliverBodyPart(let b)): a == b
            case (.succeed(let a, let b), .succeed(let c, let d)): a == c && b == d
            case (.fail(let a), .fail(let b)): "\(a)" == "\(b)"
            default: false
            }
        }
    }

    private(set) var request = RequestState.idle
    private(set) var response = ResponseState.waitingForHead
    /// The final response's status, once it arrived.
    private(set) var status: Int?
    /// Whether the server lets the connection carry another hop.
    private var keepAlive = true
    /// Whether the request asked to close the connection afterwards.
    private let closeRequested: Bool
    /// Whether the consumer paused the body.
    private(set) var isPaused = false
    /// A read the stream asked for while paused.
    private var readPending = false
    /// Parts decoded while paused, delivered on resume.
    private var held = CircularBuffer<HTTPClientResponsePart>()
    /// A failure that came while parts were held: it ends the hop once they are delivered.
    private var heldFailure: (any Error)?
    /// Whether the hop ended (succeeded or failed): later events do nothing.
    private(set) var isFinished = false
    /// Trailers of the response, once it ended.
    private var trailers: HTTPHeaders?

    init(closeRequested: Bool) {
        self.closeRequested = closeRequested
    }

    // MARK: Request

    /// Starts the hop: the head goes out, with the body at once unless it waits for `100 Continue`.
    mutating func start(body: Body, expectsContinue: Bool) -> Action {
        precondition(self.request == .idle, "a hop starts once")
        if expectsContinue, body != .none {
            self.request = .waitingForContinue(body)
            return .writeHead(body, startBody: false)
        }
        self.request = body == .stream ? .sendingBody : .sent
        return .writeHead(body, startBody: true)
    }

    /// The wait for `100 Continue` ended without one: send the body anyway (RFC 9110 10.1.1).
    mutating func continueWaitEnded() -> Action {
        guard case .waitingForContinue(let body) = self.request, !self.isFinished else { return .none }
        self.request = body == .stream ? .sendingBody : .sent
        return .startBody(body)
    }

    /// The pumped body was all written, end included.
    mutating func bodySent() -> Action {
        guard self.request == .sendingBody, !self.isFinished else { return .none }
        self.request = .sent
        if self.response == .ended { return self.succeed() }
        return .none
    }

    /// Pumping the body failed (a file that cannot be read, a stream that threw, a length that
    /// differs from the declared one, a write refused because the stream closed).
    mutating func bodyFailed(_ error: any Error) -> Action {
        guard !self.isFinished else { return .none }
        switch self.request {
        case .abandoned:
            // The body was stopped on purpose; the response decides.
            return .none
        case .sendingBody where self.response == .ended:
            // The server had its answer already: it is the outcome; the stream is not reused.
            self.request = .abandoned
            return self.succeed()
        case .sendingBody where self.response == .receivingBody:
            // The answer is coming: it is the outcome, but the stream is not reused.
            self.request = .abandoned
            return .none
        default:
            return self.fail(error)
        }
    }

    // MARK: Response

    /// A response part arrived from the stream.
    mutating func received(_ part: HTTPClientResponsePart) -> Action {
        guard !self.isFinished else { return .none }
        if self.isPaused || !self.held.isEmpty {
            self.held.append(part)
            return .none
        }
        return self.handle(part)
    }

    private mutating func handle(_ part: HTTPClientResponsePart) -> Action {
        switch part {
        case .head(let head):
            let code = Int(head.status.code)
            if code >= 100, code < 200, code != 101 {
                // Interim answers precede the real one; `100 Continue` releases a held body.
                if code == 100, case .waitingForContinue(let body) = self.request {
                    self.request = body == .stream ? .sendingBody : .sent
                    return .startBody(body)
                }
                return .none
            }
            guard self.response == .waitingForHead else { return .none }
            self.response = .receivingBody
            self.status = code
            self.keepAlive = head.isKeepAlive
            if case .waitingForContinue = self.request {
                // A final answer instead of `100 Continue`: the body is never sent.
                self.request = .abandoned
            }
            return .deliverHead(head)
        case .body(let buffer):
            guard self.response == .receivingBody else { return .none }
            return .deliverBodyPart(buffer)
        case .end(let trailers):
            guard self.response == .receivingBody else { return .none }
            self.response = .ended
            self.trailers = trailers
            switch self.request {
            case .sendingBody where (self.status ?? 0) < 300:
                // The server answered before the upload ended and may still read it: let it finish.
                return .none
            case .sendingBody:
                // 300 or more: the rest of the body is not wanted (the handler stops its pump
                // when the hop ends), and the stream is not reused.
                self.request = .abandoned
                return self.succeed()
            default:
                return self.succeed()
            }
        }
    }

    // MARK: Back-pressure

    /// The consumer wants no more body for now.
    mutating func pause() {
        self.isPaused = true
    }

    /// The consumer wants body again: the held parts, in order, then a read if one was asked for
    /// meanwhile. A failure that came while they were held follows them.
    mutating func resume() -> [Action] {
        guard self.isPaused else { return [] }
        self.isPaused = false
        var actions: [Action] = []
        while !self.isPaused, !self.isFinished, let part = self.held.popFirst() {
            let action = self.handle(part)
            if action != .none { actions.append(action) }
        }
        guard !self.isPaused, !self.isFinished else { return actions }
        if let failure = self.heldFailure {
            self.heldFailure = nil
            actions.append(self.fail(failure))
        } else if self.readPending {
            self.readPending = false
            actions.append(.read)
        }
        return actions
    }

    /// The stream asks whether it may read more.
    mutating func shouldRead() -> Bool {
        if self.isPaused {
            self.readPending = true
            return false
        }
        return true
    }

    // MARK: Ends

    /// The stream failed or closed under the hop (`error` nil for a clean close). Parts still held
    /// for a paused consumer are delivered first.
    mutating func streamEnded(_ error: (any Error)?) -> Action {
        guard !self.isFinished else { return .none }
        if self.response == .ended, self.request == .sendingBody {
            // The whole response came; the rest of the upload had nowhere to go.
            self.request = .abandoned
            return self.succeed()
        }
        let failure = error ?? HopStreamError.closedBeforeResponseComplete
        if self.isPaused || !self.held.isEmpty {
            self.heldFailure = self.heldFailure ?? failure
            return .none
        }
        return self.fail(failure)
    }

    /// The hop was cancelled.
    mutating func cancel(_ error: any Error) -> Action {
        guard !self.isFinished else { return .none }
        self.held.removeAll()
        self.heldFailure = nil
        return self.fail(error)
    }

    private mutating func succeed() -> Action {
        guard !self.isFinished else { return .none }
        self.isFinished = true
        let reusable = self.keepAlive && self.request == .sent && !self.closeRequested
        return .succeed(reusable: reusable, trailers: self.trailers)
    }

    private mutating func fail(_ error: any Error) -> Action {
        guard !self.isFinished else { return .none }
        self.isFinished = true
        return .fail(error)
    }

    // MARK: What the stream's owner asks

    /// Whether any of the response had arrived (a head, interim answers aside).
    var responseStarted: Bool { self.response != .waitingForHead }
}

/// Why a hop's stream could not carry it.
enum HopStreamError: Error, Hashable, CustomStringConvertible {
    /// The server closed the stream before the response was complete.
    case closedBeforeResponseComplete
    /// A streamed body's length differed from its declared length.
    case bodyLengthMismatch(declared: Int64, sent: Int64)

    var description: String {
        switch self {
        case .closedBeforeResponseComplete: "the server closed the connection before the response was complete"
        case .bodyLengthMismatch(let declared, let sent): "the body declared \(declared) bytes and gave \(sent)"
        }
    }
}
