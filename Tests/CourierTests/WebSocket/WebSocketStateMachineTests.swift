@testable import Courier
import Foundation
import NIOCore
import NIOHTTP1
import NIOWebSocket
import Testing

/// The WebSocket's pure state machines, with no I/O: the message assembly, the connection's
/// frames, closing handshake, PINGs and violations, and the opening handshake's checks.
@Suite("WebSocket state machines")
struct WebSocketStateMachineTests {
    private func buffer(_ string: String) -> ByteBuffer { ByteBuffer(string: string) }
    private func buffer(_ bytes: [UInt8]) -> ByteBuffer { ByteBuffer(bytes: bytes) }

    // MARK: Assembly

    @Test func fragmentsMakeOneMessage() {
        var assembler = WebSocketMessageAssembler(maximumMessageSize: 100)
        #expect(assembler.receive(opcode: .text, fin: false, payload: self.buffer("hel")) == .incomplete)
        #expect(assembler.isAssembling)
        #expect(assembler.receive(opcode: .continuation, fin: false, payload: self.buffer("lo ")) == .incomplete)
        #expect(assembler.receive(opcode: .continuation, fin: true, payload: self.buffer("wörld")) == .message(.text("hello wörld")))
        #expect(!assembler.isAssembling)
        #expect(assembler.receive(opcode: .binary, fin: true, payload: self.buffer([1, 2, 3])) == .message(.binary(Data([1, 2, 3]))))
    }

    @Test func aCharacterSplitAcrossFragmentsIsValid() {
        var assembler = WebSocketMessageAssembler(maximumMessageSize: 100)
        let bytes = Array("é".utf8)
        #expect(assembler.receive(opcode: .text, fin: false, payload: self.buffer([bytes[0]])) == .incomplete)
        #expect(assembler.receive(opcode: .continuation, fin: true, payload: self.buffer([bytes[1]])) == .message(.text("é")))
    }

    @Test func invalidUTF8Is1007() {
        var assembler = WebSocketMessageAssembler(maximumMessageSize: 100)
        guard case .failure(let code, _) = assembler.receive(opcode: .text, fin: true, payload: self.buffer([0x61, 0xFF])) else {
            Issue.record("invalid UTF-8 was taken")
            return
        }
        #expect(code == .invalidFramePayloadData)
    }

    @Test func aFragmentThatBreaksUTF8FailsTheMessageAtOnce() {
        // Autobahn 6.4.1: valid, then a fragment with a byte no UTF-8 has, then more valid text.
        var assembler = WebSocketMessageAssembler(maximumMessageSize: 100)
        #expect(assembler.receive(opcode: .text, fin: false, payload: self.buffer(Array("κόσμε".utf8))) == .incomplete)
        guard case .failure(let code, _) = assembler.receive(opcode: .continuation, fin: false, payload: self.buffer([0xCE, 0xBC, 0xF4, 0x90])) else {
            Issue.record("a fragment with F4 90 (past U+10FFFF) was taken")
            return
        }
        #expect(code == .invalidFramePayloadData)
        #expect(!assembler.isAssembling)
        // The next message starts clean.
        #expect(assembler.receive(opcode: .text, fin: true, payload: self.buffer("ok")) == .message(.text("ok")))

        // A character cut open at a fragment's end is not an error, nor is binary data or a
        // compressed message (checked once inflated).
        var cut = WebSocketMessageAssembler(maximumMessageSize: 100)
        #expect(cut.receive(opcode: .text, fin: false, payload: self.buffer([0x61, 0xF0, 0x9F])) == .incomplete)
        #expect(cut.receive(opcode: .continuation, fin: false, payload: self.buffer([0x98])) == .incomplete)
        #expect(cut.receive(opcode: .continuation, fin: true, payload: self.buffer([0x80])) == .message(.text("a😀")))
        var binary = WebSocketMessageAssembler(maximumMessageSize: 100)
        #expect(binary.receive(opcode: .binary, fin: false, payload: self.buffer([0xFF])) == .incomplete)
        var compressed = WebSocketMessageAssembler(maximumMessageSize: 100)
        #expect(compressed.receive(opcode: .text, fin: false, payload: self.buffer([0xFF]), compressed: true) == .incomplete)
        // Text whose last fragment leaves a character unfinished fails at its end.
        var unfinished = WebSocketMessageAssembler(maximumMessageSize: 100)
        #expect(unfinished.receive(opcode: .text, fin: false, payload: self.buffer([0xE2, 0x82])) == .incomplete)
        guard case .failure(.invalidFramePayloadData, _) = unfinished.receive(opcode: .continuation, fin: true, payload: self.buffer([])) else {
            Issue.record("a message that ends inside a character was taken")
            return
        }
    }

    @Test func theUTF8PrefixCheckAgreesWithTheStandardLibrary() {
        // Each boundary of RFC 3629's table, whole and cut at every byte, then random bytes
        // biased toward the interesting leads.
        let cases: [[UInt8]] = [
            [0x7F], [0x80], [0xC1, 0xBF], [0xC2, 0x80], [0xDF, 0xBF], [0xE0, 0x9F, 0x80], [0xE0, 0xA0, 0x80],
            [0xED, 0x9F, 0xBF], [0xED, 0xA0, 0x80], [0xEF, 0xBF, 0xBF], [0xF0, 0x8F, 0xBF, 0xBF], [0xF0, 0x90, 0x80, 0x80],
            [0xF4, 0x8F, 0xBF, 0xBF], [0xF4, 0x90, 0x80, 0x80], [0xF5, 0x80, 0x80, 0x80], [0xFF], [0xE1, 0x80, 0x41],
        ]
        var generator = SystemRandomNumberGenerator()
        let leads: [UInt8] = [0x41, 0x80, 0xBF, 0xC2, 0xDF, 0xE0, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0x90, 0xA0, 0x9F, 0x8F]
        let random = (0..<2000).map { _ in
            (0..<Int.random(in: 1...8, using: &generator)).map { _ in
                Bool.random(using: &generator) ? leads.randomElement(using: &generator)! : UInt8.random(in: 0...255, using: &generator)
            }
        }
        for bytes in cases + random {
            let valid = String(validating: bytes, as: UTF8.self) != nil
            for cut in 0...bytes.count {
                var validator = UTF8PrefixValidator()
                let taken = validator.take(bytes[..<cut]) && validator.take(bytes[cut...])
                #expect((taken && validator.isAtCharacterBoundary) == valid, "\(bytes) cut at \(cut)")
            }
            // A prefix that fails can never be completed into valid text.
            var whole = UTF8PrefixValidator()
            if !whole.take(bytes) { #expect(!valid) }
        }
    }

    @Test func aMessageOverTheMaximumIs1009() {
        var assembler = WebSocketMessageAssembler(maximumMessageSize: 4)
        #expect(assembler.receive(opcode: .binary, fin: false, payload: self.buffer([1, 2, 3])) == .incomplete)
        guard case .failure(let code, _) = assembler.receive(opcode: .continuation, fin: true, payload: self.buffer([4, 5])) else {
            Issue.record("an oversized message was taken")
            return
        }
        #expect(code == .messageTooBig)
        // Exactly the maximum is fine.
        var exact = WebSocketMessageAssembler(maximumMessageSize: 4)
        #expect(exact.receive(opcode: .binary, fin: true, payload: self.buffer([1, 2, 3, 4])) == .message(.binary(Data([1, 2, 3, 4]))))
    }

    @Test func continuationWithoutAMessageAndANewMessageInsideOneAre1002() {
        var assembler = WebSocketMessageAssembler(maximumMessageSize: 100)
        guard case .failure(.protocolError, _) = assembler.receive(opcode: .continuation, fin: true, payload: self.buffer("x")) else {
            Issue.record("an orphan continuation was taken")
            return
        }
        var interrupted = WebSocketMessageAssembler(maximumMessageSize: 100)
        _ = interrupted.receive(opcode: .text, fin: false, payload: self.buffer("a"))
        guard case .failure(.protocolError, _) = interrupted.receive(opcode: .binary, fin: true, payload: self.buffer("b")) else {
            Issue.record("a message inside a message was taken")
            return
        }
    }

    // MARK: Connection

    private func frame(_ opcode: WebSocketOpcode, fin: Bool = true, _ data: ByteBuffer = ByteBuffer(), masked: Bool = false, rsv1: Bool = false) -> WebSocketFrame {
        WebSocketFrame(fin: fin, rsv1: rsv1, opcode: opcode, maskKey: masked ? .random() : nil, data: data)
    }

    private func closePayload(_ code: UInt16, _ reason: String = "") -> ByteBuffer {
        var payload = ByteBuffer()
        payload.writeInteger(code)
        payload.writeString(reason)
        return payload
    }

    @Test func messagesAndControlFramesBetweenFragments() {
        var machine = WebSocketConnectionStateMachine(maximumMessageSize: 100)
        #expect(machine.frameReceived(self.frame(.text, fin: false, self.buffer("a"))) == [])
        #expect(machine.frameReceived(self.frame(.ping, self.buffer("p"))) == [.sendPong(self.buffer("p"))])
        let sentQ = machine.userPingSent(self.buffer("q"))
        #expect(sentQ)
        #expect(machine.frameReceived(self.frame(.pong, self.buffer("q"))) == [.pingsAnswered([self.buffer("q")])])
        #expect(machine.frameReceived(self.frame(.continuation, self.buffer("b"))) == [.deliver(.text("ab"))])
    }

    @Test func theServersCloseIsEchoedAndEndsTheConnection() {
        var machine = WebSocketConnectionStateMachine(maximumMessageSize: 100)
        #expect(
            machine.frameReceived(self.frame(.connectionClose, self.closePayload(1001, "bye")))
                == [.sendClose(.goingAway, ""), .closeConnection, .finish(.closed(.goingAway, "bye"))])
        #expect(machine.isFinished)
        #expect(machine.frameReceived(self.frame(.text, self.buffer("late"))) == [])
        #expect(machine.connectionClosed() == [])
    }

    @Test func anEmptyCloseIsAnsweredWithNoCode() {
        var machine = WebSocketConnectionStateMachine(maximumMessageSize: 100)
        #expect(
            machine.frameReceived(self.frame(.connectionClose))
                == [.sendClose(nil, ""), .closeConnection, .finish(.closed(.noStatusReceived, ""))])
    }

    /// A code RFC 6455 7.4 forbids on the wire (1005, 1006, 1015, or outside the allowed ranges)
    /// goes as a close frame with no code: the server reads 1005. (It went out as given, and a
    /// strict server answered with 1002.)
    @Test func aCodeThatMayNotBeSentClosesWithNoCode() {
        for raw: UInt16 in [1005, 1006, 1015, 999, 1004, 2000, 5000] {
            var machine = WebSocketConnectionStateMachine(maximumMessageSize: 100)
            #expect(machine.closeRequested(code: WebSocketCloseCode(rawValue: raw), reason: "why") == [.sendCloseAfterMessages(nil, "")], "\(raw)")
        }
    }

    @Test func courierClosesFirstThenTheServerAnswers() {
        var machine = WebSocketConnectionStateMachine(maximumMessageSize: 100)
        #expect(machine.closeRequested(code: .normalClosure, reason: "done") == [.sendCloseAfterMessages(.normalClosure, "done")])
        #expect(machine.closeRequested(code: .normalClosure, reason: "again") == [])
        // Data the server sent before it saw the close is delivered; a PING is answered until the
        // server's close frame came (RFC 6455 5.5.2), Courier's own sent or not (it was not
        // answered once Courier was closing).
        #expect(machine.frameReceived(self.frame(.text, self.buffer("x"))) == [.deliver(.text("x"))])
        #expect(machine.frameReceived(self.frame(.ping, self.buffer("p"))) == [.sendPong(self.buffer("p"))])
        #expect(
            machine.frameReceived(self.frame(.connectionClose, self.closePayload(1000)))
                == [.closeConnection, .finish(.closed(.normalClosure, ""))])
        #expect(machine.frameReceived(self.frame(.ping, self.buffer("late"))) == [], "not after the server's close")
    }

    @Test func aServerThatNeverAnswersTheCloseTimesOut() {
        var machine = WebSocketConnectionStateMachine(maximumMessageSize: 100)
        _ = machine.closeRequested(code: .normalClosure, reason: "")
        #expect(machine.closeTimedOut() == [.closeConnection, .finish(.closeTimedOut)])
        #expect(machine.closeTimedOut() == [])
    }

    @Test func violationsCloseWithTheCodeRFC6455Names() {
        let cases: [(WebSocketFrame, WebSocketCloseCode)] = [
            (self.frame(.text, self.buffer("m"), masked: true), .protocolError),
            (self.frame(.text, self.buffer("r"), rsv1: true), .protocolError),
            (self.frame(.ping, self.buffer(String(repeating: "a", count: 126))), .protocolError),
            (self.frame(.ping, fin: false), .protocolError),
            (self.frame(.connectionClose, self.closePayload(1005)), .protocolError),
            (self.frame(.connectionClose, self.closePayload(999)), .protocolError),
            (self.frame(.connectionClose, self.closePayload(2000)), .protocolError),
            (self.frame(.connectionClose, self.buffer([0x03])), .protocolError),
            (self.frame(.connectionClose, { var b = self.closePayload(1000); b.writeBytes([0xFF]); return b }()), .invalidFramePayloadData),
            (self.frame(.text, self.buffer([0xC3])), .invalidFramePayloadData),
            (self.frame(.continuation, self.buffer("x")), .protocolError),
            (self.frame(WebSocketOpcode(encodedWebSocketOpcode: 3)!), .protocolError),
            (self.frame(.binary, self.buffer(String(repeating: "a", count: 101))), .messageTooBig),
        ]
        for (frame, code) in cases {
            var machine = WebSocketConnectionStateMachine(maximumMessageSize: 100)
            let actions = machine.frameReceived(frame)
            #expect(actions.first == .sendClose(code, ""), "\(frame)")
            #expect(actions.dropFirst().first == .closeConnection)
            guard case .finish(.protocolViolation(code, _)) = actions.last else {
                Issue.record("\(frame): \(actions)")
                continue
            }
            #expect(machine.isFinished)
        }
    }

    @Test func allowedCloseCodes() {
        for code: UInt16 in [1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 3000, 4999] {
            #expect(WebSocketCloseCode(rawValue: code).isAllowedOnTheWire)
        }
        for code: UInt16 in [0, 999, 1004, 1005, 1006, 1015, 1016, 2999, 5000] {
            #expect(!WebSocketCloseCode(rawValue: code).isAllowedOnTheWire)
        }
    }

    @Test func anUnansweredPingEndsTheConnection() {
        var machine = WebSocketConnectionStateMachine(maximumMessageSize: 100)
        #expect(machine.pingTimerFired(payload: self.buffer("1")) == [.sendPing(self.buffer("1"))])
        #expect(machine.frameReceived(self.frame(.pong, self.buffer("1"))) == [], "the keep-alive's own: nothing for the user")
        #expect(machine.pingTimerFired(payload: self.buffer("2")) == [.sendPing(self.buffer("2"))])
        // A PONG for another PING does not settle it.
        _ = machine.frameReceived(self.frame(.pong, self.buffer("other")))
        #expect(machine.pingTimerFired(payload: self.buffer("3")) == [.closeConnection, .finish(.pingTimedOut)])
        #expect(machine.pingTimerFired(payload: self.buffer("4")) == [])
    }

    /// The keep-alive's PINGs and the user's are answered in the order they went out: a PONG for
    /// a later PING answers the earlier ones, whoever sent them (RFC 6455 5.5.3). Before, a server
    /// that answered only the latest left the keep-alive's PING outstanding (the connection timed
    /// out) or the user's waiting for ever.
    @Test func aPongAnswersTheKeepAlivesPingsAndTheUsersInOrder() {
        var machine = WebSocketConnectionStateMachine(maximumMessageSize: 100)
        // The keep-alive's, then the user's; only the user's is answered.
        #expect(machine.pingTimerFired(payload: self.buffer("k1")) == [.sendPing(self.buffer("k1"))])
        let sentU1 = machine.userPingSent(self.buffer("u1"))
        #expect(sentU1)
        #expect(machine.frameReceived(self.frame(.pong, self.buffer("u1"))) == [.pingsAnswered([self.buffer("u1")])])
        #expect(machine.pingTimerFired(payload: self.buffer("k2")) == [.sendPing(self.buffer("k2"))], "k1 was answered by u1's PONG")
        // The user's two, then the keep-alive's; only the keep-alive's is answered.
        _ = machine.frameReceived(self.frame(.pong, self.buffer("k2")))
        let sentU2 = machine.userPingSent(self.buffer("u2"))
        #expect(sentU2)
        let sentU3 = machine.userPingSent(self.buffer("u3"))
        #expect(sentU3)
        #expect(machine.pingTimerFired(payload: self.buffer("k3")) == [.sendPing(self.buffer("k3"))])
        #expect(machine.frameReceived(self.frame(.pong, self.buffer("k3"))) == [.pingsAnswered([self.buffer("u2"), self.buffer("u3")])])
        // A PONG for an earlier PING answers that one and those before it only.
        let sentU4 = machine.userPingSent(self.buffer("u4"))
        #expect(sentU4)
        #expect(machine.pingTimerFired(payload: self.buffer("k4")) == [.sendPing(self.buffer("k4"))])
        let sentU5 = machine.userPingSent(self.buffer("u5"))
        #expect(sentU5)
        #expect(machine.frameReceived(self.frame(.pong, self.buffer("u4"))) == [.pingsAnswered([self.buffer("u4")])])
        #expect(machine.pingTimerFired(payload: self.buffer("k5")) == [.closeConnection, .finish(.pingTimedOut)], "k4 was not answered")
        let sentU6 = machine.userPingSent(self.buffer("u6"))
        #expect(!sentU6, "not after the end")
    }

    /// A PING whose wait was given up (the caller cancelled) is no longer looked for: neither its
    /// PONG nor a later one reports it, and a peer that never answers does not make them pile up;
    /// the keep-alive's PINGs are untouched. Given up while a keep-alive PING before it is
    /// unanswered, it waits with that one (its PONG answers it too) and goes with its answer.
    @Test func aPingGivenUpIsNoLongerLookedFor() {
        var machine = WebSocketConnectionStateMachine(maximumMessageSize: 100)
        #expect(machine.pingTimerFired(payload: self.buffer("k1")) == [.sendPing(self.buffer("k1"))])
        for payload in ["u1", "u2", "u3"] {
            let sent = machine.userPingSent(self.buffer(payload))
            #expect(sent)
        }
        machine.userPingAbandoned(self.buffer("u1"))
        machine.userPingAbandoned(self.buffer("u2"))
        machine.userPingAbandoned(self.buffer("k1"))  // not a user's: kept
        #expect(machine.frameReceived(self.frame(.pong, self.buffer("u1"))) == [], "u1 was given up")
        #expect(machine.frameReceived(self.frame(.pong, self.buffer("u3"))) == [.pingsAnswered([self.buffer("u3")])], "not u2")
        #expect(machine.pingTimerFired(payload: self.buffer("k2")) == [.sendPing(self.buffer("k2"))], "k1 was answered by u1's PONG")
        #expect(machine.frameReceived(self.frame(.pong, self.buffer("k2"))) == [])
        // Ten thousand given up on a peer that never answers, with no keep-alive PING unanswered
        // before them, leave nothing behind.
        func sendAndGiveUp(_ prefix: String, _ count: Int) {
            for index in 0..<count {
                let sent = machine.userPingSent(self.buffer("\(prefix)\(index)"))
                #expect(sent)
                machine.userPingAbandoned(self.buffer("\(prefix)\(index)"))
            }
        }
        sendAndGiveUp("p", 10_000)
        #expect(machine.unansweredPingCount == 0)
        #expect(machine.frameReceived(self.frame(.pong, self.buffer("p9999"))) == [])
        // Behind an unanswered keep-alive PING they wait for its answer, then go.
        #expect(machine.pingTimerFired(payload: self.buffer("k3")) == [.sendPing(self.buffer("k3"))])
        sendAndGiveUp("q", 100)
        #expect(machine.unansweredPingCount == 101)
        #expect(machine.frameReceived(self.frame(.pong, self.buffer("k3"))) == [])
        #expect(machine.unansweredPingCount == 0)
        #expect(machine.pingTimerFired(payload: self.buffer("k4")) == [.sendPing(self.buffer("k4"))])
        #expect(machine.frameReceived(self.frame(.pong, self.buffer("q99"))) == [], "q99 was dropped with k3's answer")
        #expect(machine.pingTimerFired(payload: self.buffer("k5")) == [.closeConnection, .finish(.pingTimedOut)], "k4 is still unanswered")
    }

    /// The PONG of a PING given up answers the keep-alive PING sent before it, and reports
    /// nothing: a server may answer only the latest of several PINGs (RFC 6455 5.5.3). (The PING
    /// given up was dropped at once: its PONG answered nothing, and the next tick ended the
    /// connection with `pingTimedOut` though the server had answered.)
    @Test func aPongForAPingGivenUpAnswersTheKeepAlivesBeforeIt() {
        var machine = WebSocketConnectionStateMachine(maximumMessageSize: 100)
        #expect(machine.pingTimerFired(payload: self.buffer("k1")) == [.sendPing(self.buffer("k1"))])
        let sentU1 = machine.userPingSent(self.buffer("u1"))
        #expect(sentU1)
        machine.userPingAbandoned(self.buffer("u1"))
        #expect(machine.frameReceived(self.frame(.pong, self.buffer("u1"))) == [], "nobody waits for u1")
        #expect(machine.pingTimerFired(payload: self.buffer("k2")) == [.sendPing(self.buffer("k2"))], "k1 was answered by u1's PONG")
        // A PING given up with no keep-alive PING unanswered before it answers none sent after it.
        #expect(machine.frameReceived(self.frame(.pong, self.buffer("k2"))) == [])
        let sentU3 = machine.userPingSent(self.buffer("u3"))
        #expect(sentU3)
        machine.userPingAbandoned(self.buffer("u3"))
        #expect(machine.pingTimerFired(payload: self.buffer("k3")) == [.sendPing(self.buffer("k3"))])
        #expect(machine.frameReceived(self.frame(.pong, self.buffer("u3"))) == [])
        #expect(machine.pingTimerFired(payload: self.buffer("k4")) == [.closeConnection, .finish(.pingTimedOut)], "k3 went after u3")
    }

    /// Unread messages up to the bound change nothing: the keep-alive's PONG is still taken, a
    /// PING answered, a close seen. One byte past it closes with 1008, once.
    @Test func unreadMessagesDoNotStarveControlFramesAndAreBounded() {
        var machine = WebSocketConnectionStateMachine(maximumMessageSize: 10, maximumBufferedBytes: 25)
        #expect(machine.maximumBufferedBytes == 25)
        #expect(machine.pingTimerFired(payload: self.buffer("1")) == [.sendPing(self.buffer("1"))])
        #expect(machine.frameReceived(self.frame(.binary, self.buffer("0123456789"))) == [.deliver(.binary(Data("0123456789".utf8)))])
        #expect(machine.messageQueued(unreadBytes: 20) == [])
        #expect(machine.messageQueued(unreadBytes: 25) == [])
        #expect(machine.frameReceived(self.frame(.pong, self.buffer("1"))) == [], "the keep-alive's own: nothing for the user")
        #expect(machine.pingTimerFired(payload: self.buffer("2")) == [.sendPing(self.buffer("2"))], "the PONG settled the PING")
        #expect(machine.frameReceived(self.frame(.ping, self.buffer("p"))) == [.sendPong(self.buffer("p"))])
        #expect(machine.messageQueued(unreadBytes: 26) == [.sendClose(.policyViolation, ""), .closeConnection, .finish(.consumerFellBehind(unreadBytes: 26))])
        #expect(machine.isFinished)
        #expect(machine.messageQueued(unreadBytes: 40) == [])
        #expect(machine.connectionClosed() == [])
        // After Courier's own close, no second close frame.
        var closing = WebSocketConnectionStateMachine(maximumMessageSize: 10, maximumBufferedBytes: 25)
        _ = closing.closeRequested(code: .normalClosure, reason: "")
        #expect(closing.messageQueued(unreadBytes: 30) == [.closeConnection, .finish(.consumerFellBehind(unreadBytes: 30))])
        // The bound is never below one message of the maximum size.
        #expect(WebSocketConnectionStateMachine(maximumMessageSize: 100, maximumBufferedBytes: 10).maximumBufferedBytes == 100)
    }

    @Test func theConnectionLostAndCancelledEndOnce() {
        var lost = WebSocketConnectionStateMachine(maximumMessageSize: 100)
        #expect(lost.connectionClosed() == [.finish(.connectionLost)])
        #expect(lost.connectionClosed() == [])
        #expect(lost.cancelled() == [])
        var cancelled = WebSocketConnectionStateMachine(maximumMessageSize: 100)
        #expect(cancelled.cancelled() == [.sendClose(.goingAway, ""), .closeConnection, .finish(.cancelled)])
        #expect(cancelled.connectionClosed() == [])
    }

    // MARK: Opening handshake

    private func response(_ fields: [(String, String)], status: HTTPResponseStatus = .switchingProtocols) -> HTTPResponseHead {
        HTTPResponseHead(version: .http1_1, status: status, headers: HTTPHeaders(fields))
    }

    @Test func theAcceptValueOfRFC6455sExample() {
        #expect(WebSocketHandshake.acceptValue(for: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        #expect(Data(base64Encoded: WebSocketHandshake.makeKey())?.count == 16)
    }

    @Test func theHandshakesChecks() {
        let handshake = WebSocketHandshake(key: "dGhlIHNhbXBsZSBub25jZQ==", offeredProtocols: ["chat"])
        let good = [("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Accept", "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")]
        #expect(handshake.failure(of: self.response(good)) == nil)
        #expect(handshake.failure(of: self.response(good + [("Sec-WebSocket-Protocol", "chat")])) == nil)
        #expect(handshake.failure(of: self.response(good, status: .ok)) != nil)
        #expect(handshake.failure(of: self.response(Array(good.dropFirst()))) != nil)
        #expect(handshake.failure(of: self.response([good[0], good[2]])) != nil)
        #expect(handshake.failure(of: self.response([good[0], good[1], ("Sec-WebSocket-Accept", "wrong")])) != nil)
        #expect(handshake.failure(of: self.response(good + [("Sec-WebSocket-Accept", "again")])) != nil)
        #expect(handshake.failure(of: self.response(good + [("Sec-WebSocket-Extensions", "permessage-deflate")])) != nil)
        #expect(handshake.failure(of: self.response(good + [("Sec-WebSocket-Protocol", "other")])) != nil)
    }

    @Test func wsURLsStandForHTTPOnes() throws {
        #expect(WebSocketTask.httpURL(for: URL(string: "ws://example.com/a?b=1")!)?.absoluteString == "http://example.com/a?b=1")
        #expect(WebSocketTask.httpURL(for: URL(string: "WSS://example.com:8443/")!)?.absoluteString == "https://example.com:8443/")
        #expect(WebSocketTask.httpURL(for: URL(string: "ftp://example.com/")!) == nil)
        // An HTTP proxy tunnels a WebSocket even for ws://.
        var proxied = NIOEngine.Configuration()
        proxied.proxy = .http(host: "127.0.0.1", port: 3128)
        let key = try #require(NIOEngine(configuration: proxied).pool.webSocketKey(for: URL(string: "http://example.com/")!))
        guard case .connectTunnel = key.route else {
            Issue.record("route \(key.route)")
            return
        }
    }

    // MARK: The handshake's answer

    /// The answer's head is taken up to its bound, its blank line included, and refused past it,
    /// the same whether it comes in one read or in pieces (as the handler gathers them): a head
    /// of 64 KiB is read, one byte longer is refused, a head whose end can only come past the
    /// bound is refused before it ends.
    @Test func theAnswersHeadBoundIsTheSameHoweverItIsCut() {
        func parse(_ pieces: [[UInt8]], maximumSize: Int) -> WebSocketHandshakeHandler.Parsed {
            var received = ByteBuffer()
            var searchFrom = 0
            for piece in pieces {
                received.writeBytes(piece)
                let parsed = WebSocketHandshakeHandler.parseHead(&received, searchFrom: &searchFrom, maximumSize: maximumSize)
                if parsed != .incomplete { return parsed }
            }
            return .incomplete
        }
        let status = "HTTP/1.1 101 Switching Protocols\r\nX-Filler: "
        for extra in [0, 1] {
            let head = Array((status + String(repeating: "a", count: 100 - status.utf8.count - 4 + extra) + "\r\n\r\n").utf8)
            #expect(head.count == 100 + extra)
            for cut in 0...head.count {
                let parsed = parse([Array(head[..<cut]), Array(head[cut...])], maximumSize: 100)
                if extra == 0 {
                    guard case .head(let answer) = parsed else {
                        Issue.record("cut at \(cut): \(parsed)")
                        continue
                    }
                    #expect(answer.status == .switchingProtocols)
                } else {
                    #expect(parsed == .tooLarge, "cut at \(cut)")
                }
            }
            let byteByByte = parse(head.map { [$0] }, maximumSize: 100)
            #expect(extra == 0 ? byteByByte != .tooLarge && byteByByte != .incomplete : byteByByte == .tooLarge)
        }
        // A head that has not ended at the bound is refused then, without waiting for its end.
        #expect(parse([Array(repeating: UInt8(ascii: "a"), count: 100)], maximumSize: 100) == .tooLarge)
        #expect(parse([Array(repeating: UInt8(ascii: "a"), count: 99)], maximumSize: 100) == .incomplete)
    }
}
