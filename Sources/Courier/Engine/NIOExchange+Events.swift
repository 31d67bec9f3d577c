import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1

/// What happens to one hop of an exchange, reported by the handler that carries it
/// (``HopHandler``, on an HTTP/1.1 connection or an HTTP/2 stream).
/// Each is called on the event loop of the connection or task carrying the hop, one at a time.
extension NIOExchange {
    /// The hop is about to be sent again on another connection (its connection closed under it
    /// before any answer): the body goes out from its start again. The task's progress never goes
    /// backwards (it keeps the largest count), and the idle clock waits for the new request head.
    func hopWillBeSentAgain() {
        self.state.withLockedValue { state in
            state.bytesSent = 0
            state.sendGeneration += 1
            state.isHeadSent = false
        }
    }

    /// Which send of the body is current: a hop's body writes count only for the send they
    /// belong to (late writes of a send a redirect or a resend replaced are ignored).
    var sendGeneration: Int {
        self.state.withLockedValue { $0.sendGeneration }
    }

    /// `bytes` more of the request body went out; nothing once the exchange finished.
    ///
    /// A body in memory over HTTP/1.1 is queued whole, and its slices leave as the server reads
    /// them: one that answered early (a 2xx or a 413 that keeps the connection, reading and
    /// dropping the rest) ended the exchange first, and the upload's progress handler and
    /// `countOfBytesSent` went on after the task's completion (or into a retry's attempt).
    func hopSentBodyPart(_ bytes: Int64, generation: Int) {
        guard bytes > 0 else { return }
        let counted = self.state.withLockedValue { state -> (total: Int64, expected: Int64?)? in
            guard state.sendGeneration == generation, !state.isFinished else { return nil }
            state.bytesSent += bytes
            state.lastActivity = .now()
            return (state.bytesSent, state.expectedBytesToSend)
        }
        guard let counted else { return }
        self.delegate.exchange(didSendBodyData: bytes, totalBytesSent: counted.total, totalBytesExpectedToSend: counted.expected)
    }

    /// An interim (1xx) head arrived: activity, for the idle timeout (nothing else to do).
    func hopReceivedInterimHead() {
        self.state.withLockedValue { $0.lastActivity = .now() }
    }

    /// The hop's response head arrived over `networkProtocolName`: plan a redirect, or hand the
    /// response to the delegate.
    func hopReceivedHead(_ response: HTTPResponse, over networkProtocolName: String) {
        let (request, redirect) = self.state.withLockedValue { state -> (Request, RedirectStep) in
            state.lastActivity = .now()
            let step = RedirectPlanner.step(
                for: response,
                request: state.request,
                policy: state.request.options.redirectPolicy ?? self.engine.configuration.redirectPolicy,
                redirectCount: state.redirectCount,
                visitedURLs: state.visitedURLs,
                routes: self.engine
            )
            return (state.request, step)
        }
        switch redirect {
        case .none:
            break
        case .fail(let message):
            let error = CourierError(.tooManyRedirects, "\(request.summary): \(message)", request: request, response: response)
            self.cancel(with: error)
            return
        case .follow(let proposed):
            if let chosen = self.delegate.exchange(willPerformRedirection: response, newRequest: proposed) {
                let generation = self.state.withLockedValue { state in
                    state.redirectCount += 1
                    // The request left behind; the next one's URL counts as visited as the
                    // current request's (an exchange that is not redirected builds no set).
                    state.visitedURLs.insert(state.request.url.absoluteString)
                    state.bytesSent = 0
                    state.sendGeneration += 1
                    state.expectedBytesToSend = chosen.body.knownLength
                    state.phase = .redirecting(chosen)
                    return state.sendGeneration
                }
                self.limitRedirectDrain(generation: generation)
                return
            }
        }
        self.state.withLockedValue { $0.phase = .streaming }
        self.delegate.exchange(willReceiveResponseOver: networkProtocolName)
        if self.delegate.exchange(didReceive: response, url: request.url) == .cancel {
            self.cancel(with: CourierError(.cancelled, "\(request.summary): cancelled on receiving the response", request: request, response: response))
        }
    }

    /// How long a redirect's body is read before the redirect is followed without the rest, at
    /// most: OkHttp gives a discarded body 100 ms. Courier gives it up to a second (half the
    /// request's idle timeout when that is shorter), so that a loop busy for a moment does not
    /// cost the connection a reuse.
    static let redirectDrainLimit = TimeAmount.seconds(1)

    /// A redirect's body is read to its end (then its connection carries the next hop) for at
    /// most ``redirectDrainLimit``: one slower (it stalls, or is large) is given up, its
    /// connection (HTTP/2: its stream) closes, and the redirect is followed on another. Before, a
    /// stalled body held the redirect until the idle timeout failed the request.
    private func limitRedirectDrain(generation: Int) {
        let timer = self.eventLoop.scheduleTask(in: self.redirectDrainWait) { [weak self] () -> Void in
            self?.giveUpRedirectBody(generation: generation)
        }
        self.state.withLockedValue { $0.redirectDrain = timer }
    }

    /// ``redirectDrainLimit``, or half the idle timeout when that is shorter (the drain is given
    /// up before the timeout fails the request).
    private var redirectDrainWait: TimeAmount {
        min(Self.redirectDrainLimit, .nanoseconds(self.idleTimeout.nanoseconds / 2))
    }

    private func giveUpRedirectBody(generation: Int) {
        let hop = self.state.withLockedValue { state -> (any NIOHopTask)? in
            guard case .redirecting = state.phase, state.sendGeneration == generation, !state.isFinished,
                state.pendingCancellation == nil
            else { return nil }
            state.redirectDrain = nil
            return state.currentTask
        }
        // The hop fails; `hopCompleted` follows a redirect whose hop failed.
        hop?.fail(reason: CourierError(.cancelled, "the redirect's body was not read within \(NIOEngine.seconds(self.redirectDrainWait))"))
    }

    /// The hop's response ended with trailer fields (HTTP/1.1 chunked trailers, HTTP/2 trailing
    /// HEADERS): they go to the delegate when the response is the final one.
    func hopReceivedTrailers(_ trailers: HTTPFields) {
        let deliver = self.state.withLockedValue { state -> Bool in
            guard case .streaming = state.phase, !state.isFinished else { return false }
            if state.pendingCancellation != nil {
                state.droppedAfterCancellation = true
                return false
            }
            return true
        }
        if deliver { self.delegate.exchange(didReceiveTrailers: trailers) }
    }

    /// A part of the hop's response body arrived. Returns nil to go on reading, or a future on
    /// `eventLoop` that `resumeReceiving` (or the exchange's end) completes while the task is
    /// suspended (back-pressure).
    func hopReceivedBodyPart(_ buffer: ByteBuffer, on eventLoop: any EventLoop) -> EventLoopFuture<Void>? {
        let deliver = self.state.withLockedValue { state -> Bool in
            state.lastActivity = .now()
            guard case .streaming = state.phase, !state.isFinished else { return false }
            if state.pendingCancellation != nil {
                state.droppedAfterCancellation = true
                return false
            }
            return true
        }
        guard deliver else { return nil }
        self.delegate.exchange(didReceive: buffer)
        return self.state.withLockedValue { state -> EventLoopFuture<Void>? in
            guard state.isPaused, !state.isFinished, state.pendingCancellation == nil else { return nil }
            let promise = eventLoop.makePromise(of: Void.self)
            state.pausedPromise = promise
            return promise.futureResult
        }
    }
}

extension HTTPFields {
    /// NIO's header fields as Courier's (fields whose name HTTP does not allow are left out).
    init(nioHeaders headers: HTTPHeaders) {
        self.init()
        self.reserveCapacity(headers.count)
        for (name, value) in headers {
            if let fieldName = HTTPField.Name(name) {
                self.append(HTTPField(received: fieldName, value: value))
            }
        }
    }
}

extension HTTPField {
    /// A field a server sent. `HTTPField(name:value:)` turns control characters into spaces, which
    /// is right for a value an app reads, but not for `Set-Cookie`: a cookie with a control
    /// character is to be ignored (RFC 6265bis 5.6), and with spaces instead it was stored
    /// (`a\u{1}b=c` as `a b=c`), or lost its `Secure` (`Sec\u{1}ure`). `Set-Cookie` keeps them
    /// (newlines and NULs, refused on the wire, aside) for the cookie parser to see.
    @inline(__always)
    init(received name: HTTPField.Name, value: String) {
        if name == .setCookie, value.utf8.contains(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }) {
            self.init(name: name, lenientValue: value.utf8)
        } else {
            self.init(name: name, value: value)
        }
    }
}

extension HTTPResponse {
    /// A response head from NIO as Courier's response (HTTP/2's, converted by swift-nio-http2's
    /// codec, included).
    init(nioHead head: HTTPResponseHead) {
        let fields = HTTPFields(nioHeaders: head.headers)
        self.init(
            status: HTTPResponse.Status(code: Int(head.status.code), reasonPhrase: head.status.reasonPhrase),
            headerFields: fields
        )
    }
}
