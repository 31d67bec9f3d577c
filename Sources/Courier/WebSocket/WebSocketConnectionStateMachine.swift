import Foundation
import NIOCore
import NIOWebSocket

/// One WebSocket connection after the opening handshake (RFC 6455, 5 to 7): frames from the
/// server, the user's close, the keep-alive PING's timer and the connection's end in; what to
/// send, deliver and close out. A pure state machine (no I/O): ``WebSocketChannelHandler`` runs
/// its actions.
///
/// The closing handshake either way: the first close frame sent or received moves the machine to
/// closing; the reply ends it. Any violation by the server closes with the code RFC 6455 names
/// (1002, 1007, 1009) and ends the connection with an error. It ends exactly once (``Action/finish(_:)``).
///
/// The connection is read at all times, whatever the consumer does, so that control frames (a
/// PING to answer, the PONG of the keep-alive, a close) are never stuck behind unread messages:
/// a consumer that stops reading cannot make the keep-alive time out. What bounds memory is
/// ``messageQueued(unreadBytes:)``: past ``maximumBufferedBytes`` of messages delivered and not
/// yet taken, the connection closes with 1008 (``Ending/consumerFellBehind(unreadBytes:)``).
struct WebSocketConnectionStateMachine {
    /// Why the connection ended.
    enum Ending: Equatable {
        /// The closing handshake completed (either side began it): the code and reason the server
        /// sent, or 1005 when its close frame had none.
        case closed(WebSocketCloseCode, String)
        /// The server broke the protocol; Courier closed with this code.
        case protocolViolation(WebSocketCloseCode, String)
        /// The server stopped answering PINGs.
        case pingTimedOut
        /// The connection closed with no closing handshake.
        case connectionLost
        /// The connection failed under the WebSocket (TLS, for one): no close frame went out.
        case connectionFailed(String)
        /// The server did not answer Courier's close frame in time.
        case closeTimedOut
        /// Courier's close frame waited behind messages the server read nothing of for the close
        /// timeout (the rest of them is dropped, the frame written, the connection closed).
        case closeStalled
        /// The task was cancelled.
        case cancelled
        /// The consumer left more than the maximum of bytes of messages unread; Courier closed
        /// with 1008.
        case consumerFellBehind(unreadBytes: Int)
    }

    enum Action: Equatable {
        case sendPong(ByteBuffer)
        case sendPing(ByteBuffer)
        /// A close frame, at once: nothing of the messages still waiting to go out follows it.
        case sendClose(WebSocketCloseCode?, String)
        /// The user's close frame, after the messages sent before it went out. The wait for the
        /// server's close frame (``closeTimedOut()``) starts as it goes out, not before: the
        /// server cannot answer a frame still queued behind a long upload.
        case sendCloseAfterMessages(WebSocketCloseCode?, String)
        case deliver(WebSocketMessage)
        /// A compressed message to inflate (``inflated(isText:_:)`` takes the result).
        case inflate(isText: Bool, ByteBuffer)
        /// A PONG answered these PINGs of the user's (``WebSocketTask/sendPing()``): its own and
        /// every one sent before it (the keep-alive's among them are settled already).
        case pingsAnswered([ByteBuffer])
        /// Close the TCP connection (after what was written went out).
        case closeConnection
        /// The connection is over: tell the task, once.
        case finish(Ending)
    }

    private enum State {
        case open
        /// Courier sent a close frame and waits for the server's.
        case closeSent
        /// Finished; only the channel's close remains.
        case finished
    }

    private var state = State.open
    private var assembler: WebSocketMessageAssembler
    /// A PING that went out and is not answered yet.
    private struct SentPing {
        var payload: ByteBuffer
        /// The keep-alive's (``pingTimerFired(payload:)``), not the user's.
        var isKeepAlive: Bool
        /// The user's, whose wait was given up (``userPingAbandoned(_:)``): kept only while a
        /// keep-alive PING before it is unanswered, which its PONG answers too; it reports nothing.
        var isAbandoned = false
    }

    /// The PINGs not answered yet, the keep-alive's and the user's in one list, in the order they
    /// went out: a peer may answer only the latest of several PINGs (RFC 6455 5.5.3), so a PONG
    /// answers its own PING and every one before it, whoever sent them.
    private var unansweredPings: [SentPing] = []

    /// How many PINGs are looked for answers to, given up ones kept included (for tests).
    var unansweredPingCount: Int { self.unansweredPings.count }

    /// Whether `permessage-deflate` was negotiated (RSV1 marks a compressed message).
    private let compression: Bool
    let maximumMessageSize: Int
    /// The most bytes of messages that may wait for the consumer; never less than one message of
    /// the maximum size.
    let maximumBufferedBytes: Int

    init(maximumMessageSize: Int, maximumBufferedBytes: Int = .max, compression: Bool = false) {
        // A message is put together in one `ByteBuffer`, which holds at most 2³² − 1 bytes.
        let maximumMessageSize = min(maximumMessageSize, Int(UInt32.max))
        self.assembler = WebSocketMessageAssembler(maximumMessageSize: maximumMessageSize)
        self.compression = compression
        self.maximumMessageSize = maximumMessageSize
        self.maximumBufferedBytes = max(maximumBufferedBytes, maximumMessageSize)
    }

    var isOpen: Bool {
        if case .open = self.state { return true }
        return false
    }

    var isFinished: Bool {
        if case .finished = self.state { return true }
        return false
    }

    // MARK: Events

    /// A frame from the server, as it came off the wire (its payload still masked if it was).
    mutating func frameReceived(_ frame: WebSocketFrame) -> [Action] {
        guard !self.isFinished else { return [] }
        // A server never masks (RFC 6455, 5.1).
        if frame.maskKey != nil { return self.violation(.protocolError, "the server sent a masked frame") }
        // No extension was negotiated that defines RSV bits (5.2).
        // RSV1 only on the first frame of a compressed message (RFC 7692, 6), if negotiated.
        let rsv1Allowed = self.compression && (frame.opcode == .text || frame.opcode == .binary)
        if (frame.rsv1 && !rsv1Allowed) || frame.rsv2 || frame.rsv3 {
            return self.violation(.protocolError, "a frame with RSV bits no negotiated extension defines")
        }
        switch frame.opcode {
        case .ping, .pong, .connectionClose:
            if !frame.fin { return self.violation(.protocolError, "a fragmented control frame") }
            if frame.length > 125 { return self.violation(.protocolError, "a control frame of \(frame.length) bytes (at most 125)") }
            return self.controlFrame(frame)
        case .text, .binary, .continuation:
            // Data the server sent before it saw Courier's close is still delivered (5.5.1).
            let outcome = self.assembler.receive(opcode: frame.opcode, fin: frame.fin, payload: frame.data, compressed: frame.rsv1)
            switch outcome {
            case .incomplete: return []
            case .message(let message): return [.deliver(message)]
            case .compressed(let isText, let payload): return [.inflate(isText: isText, payload)]
            case .failure(let code, let reason): return self.violation(code, reason)
            }
        default:
            return self.violation(.protocolError, "a frame with the reserved opcode \(frame.opcode)")
        }
    }

    private mutating func controlFrame(_ frame: WebSocketFrame) -> [Action] {
        switch frame.opcode {
        case .ping:
            // Answered until the server's close frame came (RFC 6455 5.5.2), Courier's own close
            // sent or not: a close frame still queued behind a message left the server's PINGs
            // unanswered for as long as the message took. (Once the server's close came the
            // machine is finished and frames are no longer read.)
            return [.sendPong(frame.data)]
        case .pong:
            // An unsolicited PONG is allowed (5.5.3) and answers nothing.
            guard let index = self.unansweredPings.firstIndex(where: { $0.payload == frame.data }) else { return [] }
            let answered = self.unansweredPings[...index].filter { !$0.isKeepAlive && !$0.isAbandoned }.map(\.payload)
            self.unansweredPings.removeFirst(index + 1)
            self.dropAbandonedPingsNoKeepAliveWaitsBefore()
            return answered.isEmpty ? [] : [.pingsAnswered(answered)]
        default:
            var payload = frame.data
            var code = WebSocketCloseCode.noStatusReceived
            var reason = ""
            if payload.readableBytes == 1 { return self.violation(.protocolError, "a close frame with a one-byte body") }
            if let raw = payload.readInteger(as: UInt16.self) {
                code = WebSocketCloseCode(rawValue: raw)
                guard code.isAllowedOnTheWire else { return self.violation(.protocolError, "a close frame with the code \(raw), which may not be sent") }
                guard let text = String(validating: payload.readableBytesView, as: UTF8.self) else {
                    return self.violation(.invalidFramePayloadData, "a close frame whose reason is not UTF-8")
                }
                reason = text
            }
            switch self.state {
            case .open:
                // Reply with the same code (5.5.1), then close: the closing handshake is done.
                self.state = .finished
                return [.sendClose(code == .noStatusReceived ? nil : code, ""), .closeConnection, .finish(.closed(code, reason))]
            case .closeSent:
                self.state = .finished
                return [.closeConnection, .finish(.closed(code, reason))]
            case .finished:
                return []
            }
        }
    }

    /// A compressed message inflated (at most the maximum message size), or why it could not be.
    mutating func inflated(isText: Bool, _ result: Result<ByteBuffer, PerMessageDeflate.DecompressionFailure>) -> [Action] {
        guard !self.isFinished else { return [] }
        switch result {
        case .failure(.tooBig):
            return self.violation(.messageTooBig, "a message over the maximum of \(self.maximumMessageSize) bytes once inflated")
        case .failure(.invalid):
            return self.violation(.invalidFramePayloadData, "a compressed message that does not inflate")
        case .success(let payload):
            guard isText else { return [.deliver(.binary(Data(payload.readableBytesView)))] }
            guard let text = String(validating: payload.readableBytesView, as: UTF8.self) else {
                return self.violation(.invalidFramePayloadData, "a text message that is not UTF-8")
            }
            return [.deliver(.text(text))]
        }
    }

    /// A delivered message joined the consumer's queue, where `unreadBytes` of messages (this one
    /// included) now wait. Past ``maximumBufferedBytes`` the consumer has fallen too far behind:
    /// the connection closes with 1008 rather than stop reading (which would leave PINGs and PONGs
    /// unread) or grow without bound.
    mutating func messageQueued(unreadBytes: Int) -> [Action] {
        guard !self.isFinished, unreadBytes > self.maximumBufferedBytes else { return [] }
        return self.closeWith(.policyViolation, ending: .consumerFellBehind(unreadBytes: unreadBytes))
    }

    /// The user closes with `code` and `reason` (the reason at most 123 bytes of UTF-8). A code
    /// that may not be sent (1005, 1006, 1015, or outside the ranges RFC 6455 7.4 allows) goes as
    /// a close frame with no code, which the server reads as 1005, and so without the reason.
    mutating func closeRequested(code: WebSocketCloseCode, reason: String) -> [Action] {
        guard case .open = self.state else { return [] }
        self.state = .closeSent
        return [code.isAllowedOnTheWire ? .sendCloseAfterMessages(code, reason) : .sendCloseAfterMessages(nil, "")]
    }

    /// The keep-alive timer fired: a PING goes out, or, if the last one is still unanswered (by
    /// its own PONG or a later PING's), the connection is given up.
    mutating func pingTimerFired(payload: ByteBuffer) -> [Action] {
        guard !self.isFinished else { return [] }
        if self.unansweredPings.contains(where: \.isKeepAlive) {
            // The server is not answering: no close frame would be answered either.
            self.state = .finished
            return [.closeConnection, .finish(.pingTimedOut)]
        }
        guard self.isOpen else { return [] }
        self.unansweredPings.append(SentPing(payload: payload, isKeepAlive: true))
        return [.sendPing(payload)]
    }

    /// The user sends a PING with `payload`: true when it may go out (the connection is open),
    /// and then its PONG, or a later PING's, is looked for.
    mutating func userPingSent(_ payload: ByteBuffer) -> Bool {
        guard self.isOpen else { return false }
        self.unansweredPings.append(SentPing(payload: payload, isKeepAlive: false))
        return true
    }

    /// The user stopped waiting for the PONG of the PING sent with `payload` (its wait was
    /// cancelled): nobody is told of its PONG any more. (Kept, the PINGs of a peer that never
    /// answers piled up for the connection's life, one a call.)
    ///
    /// While a keep-alive PING sent before it is unanswered it stays, marked given up: a server
    /// may answer only the latest PING (RFC 6455 5.5.3), and its PONG then answers the keep-alive
    /// one too. (Dropped at once, that PONG answered nothing, and the next tick ended a connection
    /// whose server had answered with `pingTimedOut`.) At most until that keep-alive PING is
    /// answered or the next tick ends the connection.
    mutating func userPingAbandoned(_ payload: ByteBuffer) {
        guard let index = self.unansweredPings.firstIndex(where: { !$0.isKeepAlive && !$0.isAbandoned && $0.payload == payload }) else {
            return
        }
        if self.unansweredPings[..<index].contains(where: \.isKeepAlive) {
            self.unansweredPings[index].isAbandoned = true
        } else {
            self.unansweredPings.remove(at: index)
        }
    }

    /// Drops the given-up PINGs that no unanswered keep-alive PING comes before: their PONGs would
    /// answer nothing anybody waits for.
    private mutating func dropAbandonedPingsNoKeepAliveWaitsBefore() {
        let end = self.unansweredPings.firstIndex(where: \.isKeepAlive) ?? self.unansweredPings.endIndex
        guard self.unansweredPings[..<end].contains(where: \.isAbandoned) else { return }
        let kept = self.unansweredPings[..<end].filter { !$0.isAbandoned }
        self.unansweredPings.replaceSubrange(..<end, with: kept)
    }

    /// The server did not answer Courier's close frame in time (counted from when the frame went
    /// out).
    mutating func closeTimedOut() -> [Action] {
        guard case .closeSent = self.state else { return [] }
        self.state = .finished
        return [.closeConnection, .finish(.closeTimedOut)]
    }

    /// Courier's close frame is still queued behind messages of which the server read nothing
    /// for the close timeout (it stopped reading): the wait for it would have no end.
    mutating func closeStalled() -> [Action] {
        guard case .closeSent = self.state else { return [] }
        self.state = .finished
        return [.closeConnection, .finish(.closeStalled)]
    }

    /// The frame decoder refused the bytes (a frame over the maximum size, a control frame over
    /// 125 bytes, a fragmented control frame).
    mutating func decodingFailed(_ code: WebSocketCloseCode, _ reason: String) -> [Action] {
        guard !self.isFinished else { return [] }
        return self.violation(code, reason)
    }

    /// The connection closed.
    mutating func connectionClosed() -> [Action] {
        guard !self.isFinished else { return [] }
        self.state = .finished
        return [.finish(.connectionLost)]
    }

    /// The transport under the WebSocket failed (a TLS error after the handshake): not the
    /// server breaking WebSocket's rules, so no close frame (it could not be read); a close with
    /// no closing handshake (1006).
    mutating func connectionFailed(_ description: String) -> [Action] {
        guard !self.isFinished else { return [] }
        self.state = .finished
        return [.closeConnection, .finish(.connectionFailed(description))]
    }

    /// The task was cancelled: close at once, with 1001 if the connection is still open.
    mutating func cancelled() -> [Action] {
        guard !self.isFinished else { return [] }
        let wasOpen = self.isOpen
        self.state = .finished
        return (wasOpen ? [.sendClose(.goingAway, "")] : []) + [.closeConnection, .finish(.cancelled)]
    }

    private mutating func violation(_ code: WebSocketCloseCode, _ reason: String) -> [Action] {
        self.closeWith(code, ending: .protocolViolation(code, reason))
    }

    /// Closes with `code` (unless Courier's close frame went out already) and ends with `ending`.
    private mutating func closeWith(_ code: WebSocketCloseCode, ending: Ending) -> [Action] {
        let wasOpen = self.isOpen
        self.state = .finished
        // After Courier's own close frame, no second one goes out.
        return (wasOpen ? [.sendClose(code, "")] : []) + [.closeConnection, .finish(ending)]
    }
}
