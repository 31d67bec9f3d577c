@testable import Courier
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import Testing

/// ``HopStateMachine`` without I/O: events in, actions out, time as arguments.
@Suite("Hop state machine (HTTP/1.1 connection and HTTP/2 stream modes)")
struct HopStateMachineTests {
    typealias Machine = HopStateMachine

    /// Bodies of 1000 bytes or more wait for `100 Continue`, 1 s at most.
    static let expectContinue = ExpectContinue(threshold: 1000, timeout: .seconds(1))

    static func start(
        _ method: HTTPRequest.Method = .get, headers: HTTPHeaders = [:], length: Int64 = 0, replayable: Bool = true,
        viaForwardingProxy: Bool = false, withoutExpectation: Bool = false, resends: Int = 0, cancelled: Bool = false
    ) -> Machine.HopStart {
        Machine.HopStart(
            requested: headers[canonicalForm: "expect"].contains { $0.lowercased() == "100-continue" } ? .continue : .none,
            asksToClose: Self.asksToClose(headers), hasBody: length > 0, bodyLength: .known(length), method: method, bodyIsReplayable: replayable,
            viaForwardingProxy: viaForwardingProxy, expectContinue: Self.expectContinue, withoutExpectation: withoutExpectation,
            resends: resends, isCancelled: cancelled)
    }

    /// Whether a request head with `headers` asks to close, as ``HTTP1RequestHead`` counts it.
    static func asksToClose(_ headers: HTTPHeaders) -> Bool {
        HTTP1RequestHead(HTTPRequestHead(version: .http1_1, method: .GET, uri: "/", headers: headers)).asksToClose
    }

    static func head(_ status: Int, version: HTTPVersion = .http1_1, _ headers: HTTPHeaders = [:]) -> HopResponsePart {
        .head(HopResponseHead(nioHead: HTTPResponseHead(version: version, status: HTTPResponseStatus(statusCode: status), headers: headers)))
    }

    static func body(_ text: String) -> HopResponsePart { .body(ByteBuffer(string: text)) }

    static let end = HopResponsePart.end(nil)

    static func loss(
        _ closure: ResendRule.Closure = .closed, error: (any Error)? = nil, bytesSeen: Bool = false, cancelled: Bool = false
    ) -> Machine.Loss {
        Machine.Loss(error: error, closure: closure, responseBytesSeen: bytesSeen, isCancelled: cancelled)
    }

    struct Failed: Error, CustomStringConvertible {
        let name: String
        var description: String { self.name }
    }

    /// Starts `start` on `machine` and writes its whole request (head and body at once).
    static func send(_ start: Machine.HopStart = Self.start(), on machine: inout Machine) {
        #expect(machine.startHop(start) == .send(expectation: .sendAtOnce, removingExpectField: false))
        machine.requestHeadWritten()
        #expect(machine.requestEnded().summary == "none")
    }

    /// A connection that carried one GET to its end and went back to the pool.
    static func reusedConnection() -> Machine {
        var machine = Machine(mode: .connection)
        Self.send(on: &machine)
        _ = machine.responseReceived(Self.head(200))
        #expect(machine.responseReceived(Self.end).summary == "responseEnded(nil, succeed(giveBack(nil)))")
        return machine
    }

    /// Every action the held parts lead to, once delivery resumed.
    static func drain(_ machine: inout Machine) -> [String] {
        var actions: [String] = []
        while let action = machine.nextHeldAction() { actions.append(action.summary) }
        return actions
    }

    // MARK: Keep-alive or close

    /// A head that cannot be made (an HTTP/2 stream's, with two `Host` fields) fails the hop
    /// with nothing sent: a stream closes, a connection goes back as after any hop.
    @Test func aHeadThatCannotBeMadeEndsTheHopBeforeItStarts() {
        var stream = Machine(mode: .stream)
        #expect(stream.headRefused() == .close)
        #expect(stream.startHop(Self.start()) == .restartElsewhere, "the stream carries nothing more")
        var connection = Machine(mode: .connection)
        #expect(connection.headRefused() == .giveBack(serverIdleTimeout: nil))
        Self.send(on: &connection)
        #expect(connection.headRefused() == .none, "not while a hop runs")
    }

    @Test func aKeptAliveResponseGivesTheConnectionBackForTheNextHop() {
        var machine = Machine(mode: .connection)
        Self.send(on: &machine)
        #expect(machine.responseReceived(Self.head(200)).summary == "forwardHead(200, http/1.1)")
        #expect(machine.responseReceived(Self.body("abc")).summary == "forwardBody(abc)")
        #expect(machine.responseReceived(Self.end).summary == "responseEnded(nil, succeed(giveBack(nil)))")
        #expect(!machine.isRunningHop)
        #expect(machine.startHop(Self.start()) == .send(expectation: .sendAtOnce, removingExpectField: false))
        #expect(machine.hopsCarried == 2)
    }

    /// A response that ends within a read succeeds, and gives its connection back, when the
    /// read ends: the rest of the read may be bytes past the response's length (a
    /// `Content-Length` shorter than the body), which the next hop would have read as its own
    /// response's start (RFC 9112 6.3: never a response of its own). Decoded as a response nobody
    /// asked for, or failing to decode, they close the connection instead; the hop still
    /// succeeds, its response being whole.
    @Test func aResponseEndedWithinAReadEndsWhenTheReadEnds() {
        var machine = Machine(mode: .connection)
        Self.send(on: &machine)
        machine.readBegan()
        _ = machine.responseReceived(Self.head(200, ["Keep-Alive": "timeout=5"]))
        #expect(machine.responseReceived(.end(["x-t": "1"])).summary == "none")
        #expect(machine.startHop(Self.start()) == .restartElsewhere, "not the pool's yet")
        #expect(machine.readCompleted().summary == "responseEnded(1, succeed(giveBack(4s)))", "the trailers kept")
        #expect(machine.readCompleted().summary == "none", "once")
        #expect(machine.startHop(Self.start()) == .send(expectation: .sendAtOnce, removingExpectField: false))

        // Garbage after the end (NIO's decoder fails on it) closes the connection.
        var garbage = Machine(mode: .connection)
        Self.send(on: &garbage)
        garbage.readBegan()
        _ = garbage.responseReceived(Self.head(200))
        _ = garbage.responseReceived(Self.end)
        #expect(garbage.channelFailed(Self.loss(.failed, error: Failed(name: "invalid constant string"))).summary == "responseEnded(nil, succeed(close))")
        #expect(garbage.readCompleted().summary == "none")
        #expect(garbage.startHop(Self.start()) == .restartElsewhere)

        // A whole second response after the end: nobody asked for it.
        var unsolicited = Machine(mode: .connection)
        Self.send(on: &unsolicited)
        unsolicited.readBegan()
        _ = unsolicited.responseReceived(Self.head(200))
        _ = unsolicited.responseReceived(Self.end)
        #expect(unsolicited.responseReceived(Self.head(200)).summary == "responseEnded(nil, succeed(close))")
        #expect(unsolicited.readCompleted().summary == "none")

        // The connection closing right after: the hop succeeds, nothing goes back.
        var closing = Machine(mode: .connection)
        Self.send(on: &closing)
        closing.readBegan()
        _ = closing.responseReceived(Self.head(200))
        _ = closing.responseReceived(Self.end)
        #expect(closing.channelInactive(Self.loss()).summary == "responseEnded(nil, succeed(none))")

        // A response that ended outside a read (held parts delivered later) ends at once.
        var outside = Machine(mode: .connection)
        Self.send(on: &outside)
        outside.readBegan()
        _ = outside.readCompleted()
        _ = outside.responseReceived(Self.head(200))
        #expect(outside.responseReceived(Self.end).summary == "responseEnded(nil, succeed(giveBack(nil)))")
    }

    @Test func theServersKeepAliveTimeoutGoesBackWithTheConnection() {
        var machine = Machine(mode: .connection)
        Self.send(on: &machine)
        _ = machine.responseReceived(Self.head(200, ["Keep-Alive": "timeout=5, max=100"]))
        #expect(machine.responseReceived(Self.end).summary == "responseEnded(nil, succeed(giveBack(4s)))")
    }

    @Test func aResponseSayingCloseClosesTheConnection() {
        var machine = Machine(mode: .connection)
        Self.send(on: &machine)
        _ = machine.responseReceived(Self.head(200, ["Connection": "close"]))
        #expect(machine.responseReceived(Self.end).summary == "responseEnded(nil, succeed(close))")
        #expect(machine.startHop(Self.start()) == .restartElsewhere, "closed: the next hop goes elsewhere")
    }

    @Test func aRequestAskingForCloseClosesTheConnection() {
        var machine = Machine(mode: .connection)
        Self.send(Self.start(headers: ["Connection": "close"]), on: &machine)
        _ = machine.responseReceived(Self.head(200))
        #expect(machine.responseReceived(Self.end).summary == "responseEnded(nil, succeed(close))")
        #expect(Self.asksToClose(["connection": "keep-alive, Close"]))
        #expect(Self.asksToClose(["CONNECTION": "close"]))
        #expect(!Self.asksToClose(["Connection": "keep-alive"]))
        #expect(Self.asksToClose(["Connection": "Keep-Alive ,\tCLOSE "]))
        #expect(!Self.asksToClose(["X-Connection": "close", "Connectio": "close"]))
        #expect(!Self.asksToClose(["Connection": "x-enclosed, closer"]), "an option that contains the word is not it")
        #expect(!Self.asksToClose([:]))
    }

    @Test func anHTTP10PeerClosesUnlessItKeepsAliveAndIsNeverAskedToWait() {
        var closing = Machine(mode: .connection)
        Self.send(on: &closing)
        #expect(closing.responseReceived(Self.head(200, version: .http1_0)).summary == "forwardHead(200, http/1.0)")
        #expect(closing.responseReceived(Self.end).summary == "responseEnded(nil, succeed(close))")

        var keeping = Machine(mode: .connection)
        Self.send(on: &keeping)
        _ = keeping.responseReceived(Self.head(200, version: .http1_0, ["Connection": "keep-alive"]))
        #expect(keeping.responseReceived(Self.end).summary == "responseEnded(nil, succeed(giveBack(nil)))")
        // It knows no `Expect: 100-continue`: a large body goes at once.
        #expect(keeping.startHop(Self.start(.put, length: 5000)) == .send(expectation: .sendAtOnce, removingExpectField: false))
        var fresh = Machine(mode: .connection)
        #expect(fresh.startHop(Self.start(.put, length: 5000)) == .send(expectation: .announce, removingExpectField: false))
    }

    /// An HTTP/1.0 answer with a `Transfer-Encoding` has faulty framing (RFC 9112 6.1): read as
    /// it says, then the connection closes, whatever its `Connection: keep-alive`. It was kept.
    @Test func anHTTP10AnswerWithATransferEncodingClosesTheConnection() {
        var machine = Machine(mode: .connection)
        Self.send(on: &machine)
        _ = machine.responseReceived(Self.head(200, version: .http1_0, ["Connection": "keep-alive", "Transfer-Encoding": "chunked"]))
        #expect(machine.responseReceived(Self.end).summary == "responseEnded(nil, succeed(close))")
    }

    /// Interim heads that ask nothing of the hop (`102 Processing`, `103 Early Hints`) tell the
    /// exchange the server is alive, so that its idle clock starts again; they were ignored, and a
    /// WebDAV copy the server reported on every 20 s timed out after 60.
    @Test func interimHeadsAreActivity() {
        var machine = Machine(mode: .connection)
        Self.send(on: &machine)
        #expect(machine.responseReceived(Self.head(102)).summary == "interimHead")
        #expect(machine.responseReceived(Self.head(103, ["Link": "</a.css>; rel=preload"])).summary == "interimHead")
        #expect(machine.responseReceived(Self.head(200)).summary == "forwardHead(200, http/1.1)")
    }

    @Test func aStreamCarriesOneHopAndCloses() {
        var machine = Machine(mode: .stream)
        Self.send(on: &machine)
        #expect(machine.responseReceived(Self.head(200)).summary == "forwardHead(200, h2)")
        #expect(machine.responseReceived(Self.end).summary == "responseEnded(nil, succeed(close))")
        #expect(machine.startHop(Self.start()) == .restartElsewhere)
    }

    @Test func trailersGoWithTheEnd() {
        var machine = Machine(mode: .connection)
        Self.send(on: &machine)
        _ = machine.responseReceived(Self.head(200, ["Transfer-Encoding": "chunked"]))
        #expect(machine.responseReceived(.end(["X-Checksum": "1", "X-Rows": "2"])).summary == "responseEnded(2, succeed(giveBack(nil)))")
        Self.send(on: &machine)
        _ = machine.responseReceived(Self.head(200))
        #expect(machine.responseReceived(.end([:])).summary == "responseEnded(nil, succeed(giveBack(nil)))", "no fields, no trailers")
    }

    // MARK: One hop at a time, cancellation

    @Test func aBusyConnectionSendsAnotherHopElsewhere() {
        var machine = Machine(mode: .connection)
        #expect(machine.startHop(Self.start()) == .send(expectation: .sendAtOnce, removingExpectField: false))
        #expect(machine.startHop(Self.start()) == .restartElsewhere)
        #expect(machine.hopsCarried == 1)
    }

    @Test func aHopCancelledBeforeItStartsEndsAndLeavesTheConnectionFree() {
        var machine = Machine(mode: .connection)
        #expect(machine.startHop(Self.start(cancelled: true)) == .endCancelled(then: .giveBack(serverIdleTimeout: nil)))
        #expect(machine.hopsCarried == 0)
        #expect(machine.startHop(Self.start()) == .send(expectation: .sendAtOnce, removingExpectField: false))
        var stream = Machine(mode: .stream)
        #expect(stream.startHop(Self.start(cancelled: true)) == .endCancelled(then: .close))
    }

    @Test func aRunningHopCancelledFailsClosesAndDropsHeldParts() {
        var machine = Machine(mode: .connection)
        Self.send(on: &machine)
        _ = machine.responseReceived(Self.head(200))
        _ = machine.responseReceived(Self.body("a"))
        machine.pauseDelivery()
        #expect(machine.responseReceived(Self.body("b")).summary == "none")
        #expect(machine.hopCancelled().summary == "failHop(cancelled, close)")
        machine.resumeDelivery()
        #expect(Self.drain(&machine).isEmpty)
        #expect(machine.hopCancelled().summary == "none", "ended once")
    }

    // MARK: A close under a hop (stale connections)

    @Test func aCloseBeforeAnyResponseByteOnAReusedConnectionSendsTheHopAgain() {
        var machine = Self.reusedConnection()
        Self.send(on: &machine)
        #expect(machine.channelInactive(Self.loss()).summary == "resendHop(none)")
        // The same through an error the handler reads as a reset: the connection closes after.
        var failed = Self.reusedConnection()
        Self.send(on: &failed)
        #expect(failed.channelFailed(Self.loss(.reset, error: Failed(name: "reset"))).summary == "resendHop(close)")
    }

    /// Over HTTP/2 a large body is not announced with `Expect: 100-continue` (servers such as
    /// hypercorn never answer it on a stream, and each such upload waited for the whole wait); a
    /// request that carries the expectation itself still waits. Over HTTP/1.1 it is announced.
    @Test func aStreamAnnouncesNoExpectationOfItsOwn() {
        let large: Int64 = 2 << 20
        var stream = Machine(mode: .stream)
        #expect(stream.startHop(Self.start(.post, length: large)) == .send(expectation: .sendAtOnce, removingExpectField: false))
        var asked = Machine(mode: .stream)
        #expect(asked.startHop(Self.start(.post, headers: ["Expect": "100-continue"], length: large)) == .send(expectation: .wait, removingExpectField: false))
        var connection = Machine(mode: .connection)
        #expect(connection.startHop(Self.start(.post, length: large)) == .send(expectation: .announce, removingExpectField: false))
    }

    /// A stream carries one hop: whether its connection was reused is told when the machine is
    /// made. An idempotent request on a stream of a connection that had opened one before goes
    /// again when the connection closes before any answer (no GOAWAY: a server that restarted,
    /// or closed an idle connection as the stream arrived), as over HTTP/1.1; a connection's
    /// first stream, and a POST, fail. Before, no stream counted as reused.
    @Test func aStreamOfAReusedConnectionThatClosesUnderItGoesAgain() {
        var reused = Machine(mode: .stream, onReusedConnection: true)
        Self.send(on: &reused)
        #expect(reused.channelInactive(Self.loss()).summary == "resendHop(none)")
        var first = Machine(mode: .stream)
        Self.send(on: &first)
        #expect(first.channelInactive(Self.loss()).summary == "failHop(connectionLost(nil), none)")
        var post = Machine(mode: .stream, onReusedConnection: true)
        Self.send(Self.start(.post, length: 10), on: &post)
        #expect(post.channelInactive(Self.loss()).summary == "failHop(closedOnReuseNotResent, none)")
    }

    @Test func aFreshConnectionThatClosesAfterTheRequestFailsTheHop() {
        var machine = Machine(mode: .connection)
        Self.send(on: &machine)
        #expect(machine.channelInactive(Self.loss()).summary == "failHop(connectionLost(nil), none)")
    }

    @Test func aHopWhoseHeadNeverReachedTheSocketGoesAgainEvenFromAFreshConnection() {
        var machine = Machine(mode: .connection)
        #expect(machine.startHop(Self.start(.post, length: 10)) == .send(expectation: .sendAtOnce, removingExpectField: false))
        #expect(machine.channelInactive(Self.loss()).summary == "resendHop(none)")
    }

    @Test func nothingGoesAgainOnceResponseBytesCame() {
        var watched = Self.reusedConnection()
        Self.send(on: &watched)
        #expect(watched.channelInactive(Self.loss(bytesSeen: true)).summary == "failHop(connectionLost(nil), none)")
        var headed = Self.reusedConnection()
        Self.send(on: &headed)
        _ = headed.responseReceived(Self.head(200))
        #expect(headed.channelInactive(Self.loss()).summary == "failHop(connectionLost(nil), none)", "the head came")
    }

    /// A reset does not prove the server read nothing (one that read part of a long body, acted
    /// and closed resets too, RFC 9112 9.6): a `POST` is not sent again after it either. It was.
    @Test func aPOSTGoesAgainOnlyWithAnIdempotencyKey() {
        // Not sent again, and the failure says why (a keep-alive timeout meeting the request,
        // behind HAProxy and Squid in a probe): the server may have processed it.
        var closed = Self.reusedConnection()
        Self.send(Self.start(.post, length: 10), on: &closed)
        #expect(closed.channelInactive(Self.loss()).summary == "failHop(closedOnReuseNotResent, none)")
        // With an `Idempotency-Key`, its sender says it may go again (as Go reads it).
        var keyed = Self.reusedConnection()
        var start = Self.start(.post, length: 10)
        start.hasIdempotencyKey = true
        Self.send(start, on: &keyed)
        #expect(keyed.channelInactive(Self.loss()).summary == "resendHop(none)")
        #expect(ResendRule.hasIdempotencyKey(.post, fields: [HTTPField.Name("Idempotency-Key")!: "k1"]))
        #expect(ResendRule.hasIdempotencyKey(.patch, fields: [HTTPField.Name("x-idempotency-key")!: "k1"]))
        #expect(!ResendRule.hasIdempotencyKey(.post, fields: [:]))
        var reset = Self.reusedConnection()
        Self.send(Self.start(.post, length: 10), on: &reset)
        #expect(reset.channelInactive(Self.loss(.reset, error: Failed(name: "ECONNRESET"))).summary == "failHop(resetOnReuseNotResent, none)")
        var oneShot = Self.reusedConnection()
        Self.send(Self.start(.put, length: 10, replayable: false), on: &oneShot)
        #expect(oneShot.channelInactive(Self.loss()).summary == "failHop(connectionLost(nil), none)", "a one-shot body never goes twice")
    }

    @Test func aStreamTheServerDidNotProcessGoesAgainUnderABoundOfItsOwn() {
        // A stream above a GOAWAY's last stream (or refused): sent again whatever its method, and
        // the stale-connection resends it already had do not count.
        for start in [Self.start(), Self.start(.post, length: 10), Self.start(resends: ResendRule.maximumResends)] {
            var stream = Machine(mode: .stream)
            Self.send(start, on: &stream)
            #expect(stream.channelFailed(Self.loss(.notProcessed, error: Failed(name: "cancel"))).summary == "resendUnprocessedHop(close)")
        }
        var exhausted = Self.start()
        exhausted.unprocessedResends = ResendRule.maximumUnprocessedResends
        var stream = Machine(mode: .stream)
        Self.send(exhausted, on: &stream)
        #expect(stream.channelFailed(Self.loss(.notProcessed, error: Failed(name: "cancel"))).summary == "failHop(notProcessed(\(ResendRule.maximumUnprocessedResends + 1)), close)")
        // Nor do unprocessed resends count against a close's bound.
        var reused = Self.reusedConnection()
        var closed = Self.start()
        closed.unprocessedResends = ResendRule.maximumUnprocessedResends
        Self.send(closed, on: &reused)
        #expect(reused.channelInactive(Self.loss()).summary == "resendHop(none)")
    }

    @Test func aStreamAGoAwayWithAnErrorLeftUnprocessedGoesAgainOnceThenFailsWithWhatTheServerSaid() {
        var stream = Machine(mode: .stream)
        Self.send(Self.start(.post, length: 10), on: &stream)
        #expect(stream.channelFailed(Self.loss(.notProcessedWithError, error: Failed(name: "calm"))).summary == "resendUnprocessedAfterGoAwayError(close)")
        // Unprocessed resends of a graceful kind before do not take its one away.
        var refusedBefore = Self.start()
        refusedBefore.unprocessedResends = 3
        var third = Machine(mode: .stream)
        Self.send(refusedBefore, on: &third)
        #expect(third.channelFailed(Self.loss(.notProcessedWithError, error: Failed(name: "calm"))).summary == "resendUnprocessedAfterGoAwayError(close)")
        var again = Self.start()
        again.unprocessedResends = 1
        again.resentAfterGoAwayError = true
        var second = Machine(mode: .stream)
        Self.send(again, on: &second)
        #expect(second.channelFailed(Self.loss(.notProcessedWithError, error: Failed(name: "calm"))).summary == "failHop(refusedAgainAfterGoAwayError(calm), close)")
    }

    /// HTTP_1_1_REQUIRED (a reset, or a GOAWAY that left the stream unprocessed): the request
    /// goes again over HTTP/1.1 whatever its method and whatever resends it already had; one whose
    /// body cannot go again, or that was cancelled or answered, fails with the server's answer
    /// (and its origin still goes over HTTP/1.1 from then on).
    @Test func aStreamTheServerWantsOverHTTP11GoesAgainSoWhenItsBodyCan() {
        var exhausted = Self.start(resends: ResendRule.maximumResends)
        exhausted.unprocessedResends = ResendRule.maximumUnprocessedResends
        for start in [Self.start(), Self.start(.post, length: 10), exhausted] {
            var stream = Machine(mode: .stream)
            Self.send(start, on: &stream)
            #expect(stream.channelFailed(Self.loss(.http1Required, error: Failed(name: "reset"))).summary == "resendOverHTTP1(close)")
        }
        var oneShot = Machine(mode: .stream)
        Self.send(Self.start(.post, length: 10, replayable: false), on: &oneShot)
        #expect(oneShot.channelFailed(Self.loss(.http1Required, error: Failed(name: "reset"))).summary == "failHop(http1Required(reset), close)")
        var cancelled = Machine(mode: .stream)
        Self.send(on: &cancelled)
        #expect(cancelled.channelFailed(Self.loss(.http1Required, error: Failed(name: "reset"), cancelled: true)).summary == "failHop(http1Required(reset), close)")
        var answered = Machine(mode: .stream)
        Self.send(on: &answered)
        _ = answered.responseReceived(Self.head(200))
        #expect(answered.channelFailed(Self.loss(.http1Required, error: Failed(name: "reset"))).summary == "failHop(http1Required(reset), close)")
    }

    @Test func aHopClosedBeforeAnyAnswerOnEverySendFailsSayingSo() {
        var machine = Self.reusedConnection()
        Self.send(Self.start(resends: ResendRule.maximumResends), on: &machine)
        #expect(machine.channelInactive(Self.loss()).summary == "failHop(closedBeforeAnswering(4), none)")
        var failed = Self.reusedConnection()
        Self.send(Self.start(resends: ResendRule.maximumResends), on: &failed)
        #expect(failed.channelFailed(Self.loss(.failed, error: Failed(name: "tls"))).summary == "failHop(connectionLost(tls), close)")
    }

    @Test func aCancelledHopIsNotSentAgain() {
        var machine = Self.reusedConnection()
        Self.send(on: &machine)
        #expect(machine.channelInactive(Self.loss(cancelled: true)).summary == "failHop(connectionLost(nil), none)")
    }

    @Test func aCloseWithNoHopClosesAndNothingMore() {
        var machine = Self.reusedConnection()
        #expect(machine.channelFailed(Self.loss(.failed, error: Failed(name: "x"))).summary == "close")
        #expect(machine.channelInactive(Self.loss()).summary == "none")
        #expect(machine.startHop(Self.start()) == .restartElsewhere)
    }

    // MARK: Paused delivery

    @Test func partsHeldWhilePausedReachTheExchangeBeforeTheCloseFailsTheHop() {
        var machine = Machine(mode: .connection)
        Self.send(on: &machine)
        _ = machine.responseReceived(Self.head(200, ["Content-Length": "9"]))
        #expect(machine.responseReceived(Self.body("abc")).summary == "forwardBody(abc)")
        machine.pauseDelivery()
        #expect(machine.responseReceived(Self.body("def")).summary == "none")
        #expect(machine.responseReceived(Self.body("ghi")).summary == "none")
        #expect(machine.readRequested().summary == "none")
        #expect(machine.channelInactive(Self.loss(bytesSeen: true)).summary == "none", "held parts first")
        #expect(machine.nextHeldAction() == nil, "still paused")
        machine.resumeDelivery()
        #expect(Self.drain(&machine) == ["forwardBody(def)", "forwardBody(ghi)", "failHop(connectionLost(nil), none)"])
    }

    @Test func heldPartsThatEndTheResponseMakeTheCloseNobodysFailure() {
        var machine = Machine(mode: .connection)
        Self.send(on: &machine)
        _ = machine.responseReceived(Self.head(200))
        _ = machine.responseReceived(Self.body("abc"))
        machine.pauseDelivery()
        _ = machine.responseReceived(Self.body("def"))
        _ = machine.responseReceived(Self.end)
        #expect(machine.channelInactive(Self.loss()).summary == "none")
        machine.resumeDelivery()
        #expect(Self.drain(&machine) == ["forwardBody(def)", "responseEnded(nil, succeed(close))"], "closed: not given back")
    }

    @Test func aFailureWhileHeldClosesAtOnceAndKeepsTheFirstReason() {
        var machine = Machine(mode: .connection)
        Self.send(on: &machine)
        _ = machine.responseReceived(Self.head(200))
        _ = machine.responseReceived(Self.body("abc"))
        machine.pauseDelivery()
        _ = machine.responseReceived(Self.body("def"))
        #expect(machine.channelFailed(Self.loss(.failed, error: Failed(name: "first"))).summary == "close")
        #expect(machine.channelInactive(Self.loss()).summary == "none")
        machine.resumeDelivery()
        #expect(Self.drain(&machine) == ["forwardBody(def)", "failHop(connectionLost(first), none)"])
    }

    @Test func aPauseMidwayHoldsTheRestAgain() {
        var machine = Machine(mode: .connection)
        Self.send(on: &machine)
        _ = machine.responseReceived(Self.head(200))
        machine.pauseDelivery()
        _ = machine.responseReceived(Self.body("a"))
        _ = machine.responseReceived(Self.body("b"))
        machine.resumeDelivery()
        #expect(machine.nextHeldAction()?.summary == "forwardBody(a)")
        machine.pauseDelivery()
        #expect(machine.nextHeldAction() == nil)
        #expect(machine.responseReceived(Self.body("c")).summary == "none", "after the held ones")
        machine.resumeDelivery()
        #expect(Self.drain(&machine) == ["forwardBody(b)", "forwardBody(c)"])
        #expect(machine.responseReceived(Self.body("d")).summary == "forwardBody(d)", "flowing again")
    }

    @Test func aReadAskedForWhilePausedWaitsForTheResume() {
        var machine = Machine(mode: .connection)
        #expect(machine.readRequested().summary == "read")
        machine.pauseDelivery()
        #expect(machine.readRequested().summary == "none")
        machine.resumeDelivery()
        #expect(Self.drain(&machine) == ["read"])
        #expect(Self.drain(&machine).isEmpty, "once")
    }

    // MARK: Expect: 100-continue

    @Test func aLargeBodyWaitsForContinue() {
        var machine = Machine(mode: .connection)
        #expect(machine.startHop(Self.start(.put, length: 5000)) == .send(expectation: .announce, removingExpectField: false))
        machine.requestHeadWritten()
        #expect(machine.responseReceived(Self.head(100)).summary == "sendHeldBody")
        #expect(machine.continueWaitExpired().summary == "none", "sent already")
        #expect(machine.requestEnded().summary == "none")
        #expect(machine.responseReceived(Self.head(201)).summary == "forwardHead(201, http/1.1)")
        #expect(machine.responseReceived(Self.end).summary == "responseEnded(nil, succeed(giveBack(nil)))")
    }

    @Test func theBodyGoesWhenTheWaitEnds() {
        var machine = Machine(mode: .connection)
        _ = machine.startHop(Self.start(.put, length: 5000))
        #expect(machine.continueWaitExpired().summary == "sendHeldBody")
        #expect(machine.continueWaitExpired().summary == "none")
        #expect(machine.responseReceived(Self.head(100)).summary == "interimHead", "a late 100 Continue changes nothing but the idle clock")
    }

    @Test func anExpectationTheRequestCarriesIsWaitedFor() {
        var machine = Machine(mode: .connection)
        #expect(
            machine.startHop(Self.start(.put, headers: ["Expect": "100-continue"], length: 10))
                == .send(expectation: .wait, removingExpectField: false))
    }

    @Test func aFinalAnswerInsteadOfContinueWithholdsTheBodyAndClosesAfter() {
        var machine = Machine(mode: .connection)
        _ = machine.startHop(Self.start(.put, length: 5000))
        machine.requestHeadWritten()
        #expect(machine.responseReceived(Self.head(413)).summary == "forwardHead(413, http/1.1)")
        #expect(machine.continueWaitExpired().summary == "none", "the body is withheld")
        #expect(machine.responseReceived(Self.body("too large")).summary == "forwardBody(too large)")
        #expect(machine.responseReceived(Self.end).summary == "responseEnded(nil, succeed(close))")
        // A success instead of 100 Continue too: the server may read what follows as the body.
        var ok = Machine(mode: .connection)
        _ = ok.startHop(Self.start(.put, length: 5000))
        _ = ok.responseReceived(Self.head(200))
        #expect(ok.responseReceived(Self.end).summary == "responseEnded(nil, succeed(close))")
    }

    @Test func a417RepeatsTheRequestWithoutTheExpectation() {
        var machine = Machine(mode: .connection)
        _ = machine.startHop(Self.start(.put, length: 5000))
        #expect(machine.responseReceived(Self.head(417)).summary == "none", "nobody's answer")
        #expect(machine.responseReceived(Self.body("no")).summary == "discardBody(2)")
        #expect(machine.responseReceived(.end(["X-Trailer": "1"])).summary == "responseEnded(nil, repeatWithoutExpectation)")
        #expect(machine.startHop(Self.start()) == .restartElsewhere, "closed")
        // The repeat, on another connection: without the expectation, whatever the request carried.
        var next = Machine(mode: .connection)
        #expect(
            next.startHop(Self.start(.put, headers: ["Expect": "100-continue"], length: 5000, withoutExpectation: true))
                == .send(expectation: .sendAtOnce, removingExpectField: true))
    }

    @Test func a417ThatCannotBeRepeatedIsTheAnswer() {
        var machine = Machine(mode: .connection)
        _ = machine.startHop(Self.start(.put, length: 5000, resends: ResendRule.maximumResends))
        #expect(machine.responseReceived(Self.head(417)).summary == "forwardHead(417, http/1.1)")
        #expect(machine.responseReceived(Self.end).summary == "responseEnded(nil, succeed(close))")
    }

    /// A body read once (a stream) whose 417 came during the wait was never read: it goes again
    /// without the expectation, as a body that can be made again does. Before, the 417 was the
    /// answer. Once the wait ended and the body began to go out, it cannot go again: the hop
    /// fails, and the connection closes.
    @Test func a417ToABodyReadOnceRepeatsItOnlyIfNoneOfItWasRead() {
        var withheld = Machine(mode: .connection)
        _ = withheld.startHop(Self.start(.put, length: 5000, replayable: false))
        withheld.requestHeadWritten()
        #expect(withheld.responseReceived(Self.head(417)).summary == "none", "nobody's answer")
        #expect(withheld.responseReceived(Self.end).summary == "responseEnded(nil, repeatWithoutExpectation)")

        var sending = Machine(mode: .connection)
        _ = sending.startHop(Self.start(.put, length: 5000, replayable: false))
        sending.requestHeadWritten()
        #expect(sending.continueWaitExpired().summary == "sendHeldBody")
        #expect(sending.responseReceived(Self.head(417)).summary == "failHop(expectationRefusedAfterBodyBegan(417), close)")
        #expect(!sending.isRunningHop)

        var sent = Machine(mode: .connection)
        _ = sent.startHop(Self.start(.put, length: 5000, replayable: false))
        #expect(sent.responseReceived(Self.head(100)).summary == "sendHeldBody")
        #expect(sent.requestEnded().summary == "none")
        #expect(sent.responseReceived(Self.head(417)).summary == "failHop(expectationRefusedAfterBodyBegan(417), close)")
    }

    /// A 417 after the wait ended (the body went, or is going, out) refuses the expectation all the
    /// same: the request goes again without it. It was the answer, to an `Expect` the caller never
    /// wrote. A request sent without an expectation gets its 417 as the answer.
    @Test func a417AfterTheWaitEndedRepeatsTheRequestToo() {
        var sent = Machine(mode: .connection)
        _ = sent.startHop(Self.start(.put, length: 5000))
        sent.requestHeadWritten()
        #expect(sent.continueWaitExpired().summary == "sendHeldBody")
        #expect(sent.requestEnded().summary == "none")
        #expect(sent.responseReceived(Self.head(417)).summary == "none", "nobody's answer")
        #expect(sent.responseReceived(Self.end).summary == "responseEnded(nil, repeatWithoutExpectation)")

        var sending = Machine(mode: .connection)
        _ = sending.startHop(Self.start(.put, length: 5000))
        #expect(sending.continueWaitExpired().summary == "sendHeldBody")
        #expect(sending.responseReceived(Self.head(417)).summary == "none")
        #expect(sending.requestBodyFailed(Failed(name: "reset")).summary == "none", "the body stops with the repeat")
        #expect(sending.responseReceived(Self.end).summary == "responseEnded(nil, repeatWithoutExpectation)")

        var unannounced = Machine(mode: .connection)
        Self.send(Self.start(.put, length: 10), on: &unannounced)
        #expect(unannounced.responseReceived(Self.head(417)).summary == "forwardHead(417, http/1.1)")
    }

    // MARK: A response before the request's end

    @Test func aSuccessEndingBeforeTheUploadLetsItFinish() {
        var machine = Machine(mode: .connection)
        _ = machine.startHop(Self.start(.post, length: 10))
        machine.requestHeadWritten()
        _ = machine.responseReceived(Self.head(200))
        #expect(machine.responseReceived(Self.end).summary == "responseEnded(nil, awaitUpload)")
        #expect(machine.isRunningHop)
        #expect(machine.requestEnded().summary == "succeedHop(giveBack(nil))")
    }

    @Test func anErrorStatusBeforeTheUploadEndsEndsTheHopAndTheConnection() {
        var machine = Machine(mode: .connection)
        _ = machine.startHop(Self.start(.post, length: 10))
        _ = machine.responseReceived(Self.head(413))
        #expect(machine.responseReceived(Self.end).summary == "responseEnded(nil, succeed(close))")
    }

    @Test func theUploadFailingOrTheConnectionClosingAfterAnEarlyAnswerEndsWell() {
        var failing = Machine(mode: .connection)
        _ = failing.startHop(Self.start(.post, length: 10))
        _ = failing.responseReceived(Self.head(200))
        _ = failing.responseReceived(Self.end)
        #expect(failing.requestBodyFailed(Failed(name: "stream")).summary == "succeedHop(close)")
        var closing = Machine(mode: .connection)
        _ = closing.startHop(Self.start(.post, length: 10))
        _ = closing.responseReceived(Self.head(200))
        _ = closing.responseReceived(Self.end)
        #expect(closing.channelInactive(Self.loss()).summary == "succeedHop(close)")
    }

    /// A timeout once a whole success came (the server stopped reading the upload, or its
    /// producer stalled) ends the hop with that success, and the half-sent connection closes; a
    /// caller's cancellation fails it, and a timeout before the response's end too. Before, the
    /// timeout failed the hop and the whole response was lost.
    @Test func aTimeoutAfterAWholeEarlySuccessEndsTheHopWithIt() {
        var timedOut = Machine(mode: .connection)
        _ = timedOut.startHop(Self.start(.post, length: 10))
        timedOut.requestHeadWritten()
        _ = timedOut.responseReceived(Self.head(200))
        _ = timedOut.responseReceived(Self.end)
        #expect(timedOut.hopCancelled(byTimeout: true).summary == "succeedHop(close)")
        #expect(timedOut.hopCancelled(byTimeout: true).summary == "none", "ended once")
        #expect(timedOut.isRunningHop == false)

        var cancelled = Machine(mode: .stream)
        _ = cancelled.startHop(Self.start(.post, length: 10))
        _ = cancelled.responseReceived(Self.head(200))
        _ = cancelled.responseReceived(Self.end)
        #expect(cancelled.hopCancelled().summary == "failHop(cancelled, close)")

        var unfinished = Machine(mode: .connection)
        _ = unfinished.startHop(Self.start(.post, length: 10))
        _ = unfinished.responseReceived(Self.head(200))
        #expect(unfinished.hopCancelled(byTimeout: true).summary == "failHop(cancelled, close)")
    }

    @Test func anUploadFailingBeforeAnyAnswerFailsTheHop() {
        var machine = Machine(mode: .connection)
        _ = machine.startHop(Self.start(.post, length: 10))
        #expect(machine.requestBodyFailed(Failed(name: "stream")).summary == "failHop(requestBodyFailed(stream), close)")
    }

    /// A success under way when the upload fails may answer a body the server still reads (an
    /// echo): the body's error ends the hop at once. Before, the hop waited for the response's
    /// end, then for an upload that would never end, and the task timed out with the error lost.
    @Test func anUploadFailingUnderASuccessFailsTheHop() {
        var answered = Machine(mode: .connection)
        _ = answered.startHop(Self.start(.post, length: 10))
        answered.requestHeadWritten()
        _ = answered.responseReceived(Self.head(200))
        #expect(answered.requestBodyFailed(Failed(name: "stream")).summary == "failHop(requestBodyFailed(stream), close)")
        #expect(!answered.isRunningHop)
        #expect(answered.responseReceived(Self.end).summary == "none")
    }

    /// A refusal under way (`413`) is the outcome: it ends on its own, and the connection, which
    /// carries half a request, closes after it.
    @Test func anUploadFailingUnderARefusalLetsTheRefusalEnd() {
        var refused = Machine(mode: .connection)
        _ = refused.startHop(Self.start(.post, length: 10))
        refused.requestHeadWritten()
        _ = refused.responseReceived(Self.head(413))
        #expect(refused.requestBodyFailed(Failed(name: "stream")).summary == "none", "the response under way is the outcome")
        #expect(refused.responseReceived(Self.end).summary == "responseEnded(nil, succeed(close))")
    }

    /// After `101 Switching Protocols` the connection speaks another protocol, which NIO's
    /// decoder no longer reads: it closes, whatever the head says. Before, it went back to the
    /// pool, and the next request on it waited for an answer that was never read.
    @Test func aSwitchingProtocolsAnswerClosesTheConnection() {
        var machine = Machine(mode: .connection)
        Self.send(on: &machine)
        #expect(machine.responseReceived(Self.head(101)).summary == "forwardHead(101, http/1.1)")
        #expect(machine.responseReceived(Self.end).summary == "responseEnded(nil, succeed(close))")
    }

    // MARK: Proxies, strays

    @Test func aForwardingProxysRefusalFailsTheHop() {
        var proxied = Machine(mode: .connection)
        Self.send(Self.start(viaForwardingProxy: true), on: &proxied)
        #expect(proxied.responseReceived(Self.head(407)).summary == "failHop(proxyAuthenticationRequired(407), close)")
        var direct = Machine(mode: .connection)
        Self.send(on: &direct)
        #expect(direct.responseReceived(Self.head(407)).summary == "forwardHead(407, http/1.1)", "an origin's 407 is its answer")
    }

    @Test func anAnswerNobodyAskedForClosesTheConnection() {
        var machine = Machine(mode: .connection)
        #expect(machine.responseReceived(Self.head(200)).summary == "close")
        #expect(machine.responseReceived(Self.body("x")).summary == "none")
        #expect(machine.startHop(Self.start()) == .restartElsewhere)
    }

    // MARK: Idleness

    static let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)
    static func at(_ seconds: Int64) -> NIODeadline { Self.t0 + .seconds(seconds) }

    @Test func anIdleConnectionAsksToCloseAfterTheIdleTimeout() {
        var machine = Machine(mode: .connection)
        #expect(machine.becameIdle(now: Self.at(0), timeout: .seconds(60)) == .scheduleCheck(at: Self.at(60)))
        #expect(machine.idleCheckFired(now: Self.at(60)) == .closeIfStillIdle)
    }

    @Test func aConnectionIdleAgainLaterIsCheckedLater() {
        var machine = Machine(mode: .connection)
        #expect(machine.becameIdle(now: Self.at(0), timeout: .seconds(60)) == .scheduleCheck(at: Self.at(60)))
        Self.send(on: &machine)
        _ = machine.responseReceived(Self.head(200))
        _ = machine.responseReceived(Self.end)
        #expect(machine.becameIdle(now: Self.at(30), timeout: .seconds(60)) == .none, "one check at a time")
        #expect(machine.idleCheckFired(now: Self.at(60)) == .scheduleCheck(at: Self.at(90)))
        #expect(machine.idleCheckFired(now: Self.at(90)) == .closeIfStillIdle)
    }

    @Test func aBusyConnectionIsNotClosedForIdleness() {
        var machine = Machine(mode: .connection)
        _ = machine.becameIdle(now: Self.at(0), timeout: .seconds(60))
        _ = machine.startHop(Self.start())
        #expect(machine.idleCheckFired(now: Self.at(60)) == .none)
        #expect(machine.becameIdle(now: Self.at(61), timeout: .seconds(60)) == .none, "a running hop is not idle")
    }

    @Test func aStreamHasNoIdleClockAndAClosedConnectionNoneLeft() {
        var stream = Machine(mode: .stream)
        #expect(stream.becameIdle(now: Self.at(0), timeout: .seconds(60)) == .none)
        var closed = Machine(mode: .connection)
        _ = closed.becameIdle(now: Self.at(0), timeout: .seconds(60))
        _ = closed.channelInactive(Self.loss())
        #expect(closed.idleCheckFired(now: Self.at(60)) == .none)
        #expect(closed.becameIdle(now: Self.at(60), timeout: .seconds(60)) == .none)
    }

    @Test func keepAliveTimeoutsAreRead() {
        #expect(Machine.idleTimeout(fromKeepAlive: "timeout=5, max=100") == .seconds(4))
        #expect(Machine.idleTimeout(fromKeepAlive: "max=100,Timeout = 2") == .seconds(1))
        #expect(Machine.idleTimeout(fromKeepAlive: "timeout=0") == .seconds(0))
        #expect(Machine.idleTimeout(fromKeepAlive: "max=3") == nil)
        #expect(Machine.idleTimeout(fromKeepAlive: "timeout=soon") == nil)
    }
}

extension HopStateMachine.Action {
    /// A short rendering for assertions: the case and what tells it apart.
    var summary: String {
        switch self {
        case .none: "none"
        case .read: "read"
        case .close: "close"
        case .sendHeldBody: "sendHeldBody"
        case .interimHead: "interimHead"
        case .forwardHead(let head, let networkProtocol): "forwardHead(\(head.status), \(networkProtocol))"
        case .forwardBody(let buffer): "forwardBody(\(String(buffer: buffer)))"
        case .discardBody(let buffer): "discardBody(\(buffer.readableBytes))"
        case .responseEnded(let trailers, let next): "responseEnded(\(trailers.map { "\($0.count)" } ?? "nil"), \(next.summary))"
        case .succeedHop(let then): "succeedHop(\(then.summary))"
        case .failHop(let failure, let then): "failHop(\(failure.summary), \(then.summary))"
        case .resendHop(let then, .closed): "resendHop(\(then.summary))"
        case .resendHop(let then, .notProcessed): "resendUnprocessedHop(\(then.summary))"
        case .resendHop(let then, .notProcessedWithError): "resendUnprocessedAfterGoAwayError(\(then.summary))"
        case .resendHop(let then, .http1Required): "resendOverHTTP1(\(then.summary))"
        case .resendHop(let then, .headTooLargeForHTTP2): "resendHeadTooLargeForHTTP2(\(then.summary))"
        }
    }
}

extension HopStateMachine.ResponseEnd {
    var summary: String {
        switch self {
        case .succeed(let then): "succeed(\(then.summary))"
        case .awaitUpload: "awaitUpload"
        case .repeatWithoutExpectation: "repeatWithoutExpectation"
        }
    }
}

extension HopStateMachine.AfterHop {
    var summary: String {
        switch self {
        case .none: "none"
        case .close: "close"
        case .giveBack(let timeout): "giveBack(\(timeout.map { "\($0.nanoseconds / 1_000_000_000)s" } ?? "nil"))"
        }
    }
}

extension HopStateMachine.Failure {
    var summary: String {
        switch self {
        case .cancelled: "cancelled"
        case .connectionLost(let error): "connectionLost(\(error.map { "\($0)" } ?? "nil"))"
        case .closedBeforeAnswering(let attempts): "closedBeforeAnswering(\(attempts))"
        case .notProcessed(let attempts): "notProcessed(\(attempts))"
        case .refusedAgainAfterGoAwayError(let error): "refusedAgainAfterGoAwayError(\(error.map { "\($0)" } ?? "nil"))"
        case .http1Required(let error): "http1Required(\(error.map { "\($0)" } ?? "nil"))"
        case .requestBodyFailed(let error): "requestBodyFailed(\(error))"
        case .closedOnReuseNotResent(let reset): reset ? "resetOnReuseNotResent" : "closedOnReuseNotResent"
        case .proxyAuthenticationRequired(let head): "proxyAuthenticationRequired(\(head.status))"
        case .expectationRefusedAfterBodyBegan(let head): "expectationRefusedAfterBodyBegan(\(head.status))"
        }
    }
}

extension HopResponseHead {
    /// A head NIO's HTTP/1 decoder made, whatever its transfer codings (the hop handler's own
    /// initializer, for tests that need no coding or phrase).
    init(nioHead head: HTTPResponseHead) {
        var ignored: UnsupportedTransferCoding?
        self.init(nioHead: head, unsupportedTransferCoding: &ignored)
    }
}
