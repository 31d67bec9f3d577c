@testable import Courier
import CourierTesting
import Foundation
import NIOCore
import Testing

/// No good request is lost to a stale connection (``ResendRule``): the rule alone, then
/// servers that close or reset kept-alive connections as real ones do.
@Suite("Stale connections")
struct StaleConnectionTests {
    // MARK: The rule, without I/O

    private static func rule(
        _ method: HTTPRequest.Method = .get, replayable: Bool = true, reused: Bool = true, written: Bool = true,
        bytesSeen: Bool = false, closure: ResendRule.Closure = .closed, resends: Int = 0, cancelled: Bool = false,
        unprocessedResends: Int = 0, resentAfterGoAwayError: Bool = false
    ) -> ResendRule {
        ResendRule(
            method: method, bodyIsReplayable: replayable, connectionWasReused: reused, requestWritten: written,
            responseBytesSeen: bytesSeen, closure: closure, resends: resends, isCancelled: cancelled,
            unprocessedResends: unprocessedResends, resentAfterGoAwayError: resentAfterGoAwayError)
    }

    @Test func idempotentRequestsOnAReusedConnectionGoAgain() {
        for method in [HTTPRequest.Method.get, .head, .options, .trace, .put, .delete] {
            #expect(Self.rule(method).allowsResend, "\(method)")
            #expect(Self.rule(method, closure: .reset).allowsResend, "\(method)")
        }
    }

    /// A reset after the request went out does not say the server read none of it (one that read
    /// part of a long body, acted and closed resets too): a `POST` was sent again after it.
    @Test func otherMethodsGoAgainOnlyWhenTheServerCannotHaveReadThem() {
        for method in [HTTPRequest.Method.post, .patch, .connect] {
            #expect(!Self.rule(method).allowsResend, "a clean close after the request went out: the server may have acted on it")
            #expect(!Self.rule(method, closure: .reset).allowsResend, "a reset after the request went out: the server may have acted on it")
            #expect(Self.rule(method, written: false).allowsResend, "nothing was written")
        }
    }

    @Test func nothingGoesAgainOnceTheResponseBegan() {
        #expect(!Self.rule(bytesSeen: true).allowsResend)
        #expect(!Self.rule(.post, bytesSeen: true, closure: .reset).allowsResend)
        #expect(!Self.rule(written: false, bytesSeen: true).allowsResend)
    }

    @Test func aFreshConnectionClosingAfterTheRequestIsTheServersAnswer() {
        #expect(!Self.rule(reused: false).allowsResend)
        #expect(!Self.rule(reused: false, closure: .reset).allowsResend)
        #expect(Self.rule(reused: false, written: false).allowsResend, "nothing reached the server")
    }

    @Test func resendsAreBoundedAndNeverFollowACancellationOrAFailure() {
        #expect(Self.rule(resends: ResendRule.maximumResends - 1).allowsResend)
        #expect(!Self.rule(resends: ResendRule.maximumResends).allowsResend)
        #expect(!Self.rule(cancelled: true).allowsResend)
        #expect(!Self.rule(closure: .failed).allowsResend)
    }

    @Test func whatAnHTTP2ServerDidNotProcessGoesAgainWhateverItsMethod() {
        for method in [HTTPRequest.Method.get, .post, .patch] {
            #expect(Self.rule(method, reused: false, closure: .notProcessed).allowsResend, "\(method)")
        }
        #expect(!Self.rule(.post, replayable: false, closure: .notProcessed).allowsResend)
        #expect(!Self.rule(closure: .notProcessed, cancelled: true).allowsResend)
        #expect(!Self.rule(bytesSeen: true, closure: .notProcessed).allowsResend)
    }

    @Test func whatAServerDidNotProcessHasABoundOfItsOwn() {
        // A server that ends every connection after a few requests drops the streams beyond them
        // each time: a hop may be among them more often than a stale connection's bound allows.
        #expect(Self.rule(closure: .notProcessed, resends: ResendRule.maximumResends).allowsResend)
        #expect(ResendRule.maximumUnprocessedResends > ResendRule.maximumResends)
        let last = ResendRule.maximumUnprocessedResends
        #expect(Self.rule(closure: .notProcessed, unprocessedResends: last - 1).allowsResend)
        #expect(!Self.rule(closure: .notProcessed, unprocessedResends: last).allowsResend, "still bounded")
        // And the other way round: unprocessed resends leave a stale connection's bound alone.
        #expect(Self.rule(unprocessedResends: last).allowsResend)
        #expect(!Self.rule(resends: ResendRule.maximumResends, unprocessedResends: 0).allowsResend)
    }

    /// A GOAWAY that named an error left the request unprocessed: it goes again once, whatever its
    /// method and whatever graceful refusals came before (within the bound they share); never
    /// with a one-shot body, after a cancellation or once the answer began.
    @Test func whatAGoAwayWithAnErrorLeftUnprocessedGoesAgainOnce() {
        for method in [HTTPRequest.Method.get, .post, .patch] {
            #expect(Self.rule(method, reused: false, closure: .notProcessedWithError).allowsResend, "\(method)")
        }
        #expect(Self.rule(closure: .notProcessedWithError).reason == .notProcessedWithError)
        #expect(Self.rule(closure: .notProcessedWithError, resends: ResendRule.maximumResends).allowsResend)
        #expect(Self.rule(closure: .notProcessedWithError, unprocessedResends: 2).allowsResend)
        #expect(!Self.rule(closure: .notProcessedWithError, unprocessedResends: 1, resentAfterGoAwayError: true).allowsResend, "once")
        let last = ResendRule.maximumUnprocessedResends
        #expect(!Self.rule(closure: .notProcessedWithError, unprocessedResends: last).allowsResend, "within the shared bound")
        #expect(!Self.rule(.post, replayable: false, closure: .notProcessedWithError).allowsResend)
        #expect(!Self.rule(closure: .notProcessedWithError, cancelled: true).allowsResend)
        #expect(!Self.rule(bytesSeen: true, closure: .notProcessedWithError).allowsResend)
    }

    /// HTTP_1_1_REQUIRED: the server processed nothing and wants HTTP/1.1; the request goes so
    /// whatever its method and whatever resends it had, but never with a one-shot body, after a
    /// cancellation or once the answer began.
    @Test func whatAnHTTP2ServerWantsOverHTTP11GoesAgainSoWhateverItsMethod() {
        for method in [HTTPRequest.Method.get, .post, .patch] {
            #expect(Self.rule(method, reused: false, closure: .http1Required).allowsResend, "\(method)")
        }
        let last = ResendRule.maximumUnprocessedResends
        #expect(Self.rule(closure: .http1Required, resends: ResendRule.maximumResends, unprocessedResends: last).allowsResend)
        #expect(Self.rule(closure: .http1Required).reason == .http1Required)
        #expect(!Self.rule(.post, replayable: false, closure: .http1Required).allowsResend)
        #expect(!Self.rule(closure: .http1Required, cancelled: true).allowsResend)
        #expect(!Self.rule(bytesSeen: true, closure: .http1Required).allowsResend)
    }

    @Test func aOneShotStreamIsNeverSentTwice() {
        #expect(!Self.rule(replayable: false).allowsResend)
        #expect(!Self.rule(replayable: false, written: false).allowsResend)
        #expect(!Self.rule(.put, replayable: false, closure: .reset).allowsResend)
    }

    @Test func keepAliveTimeoutsAreRead() {
        #expect(HopStateMachine.idleTimeout(fromKeepAlive: "timeout=5, max=100") == .seconds(4))
        #expect(HopStateMachine.idleTimeout(fromKeepAlive: "max=100,Timeout = 2") == .seconds(1))
        #expect(HopStateMachine.idleTimeout(fromKeepAlive: "timeout=0") == .seconds(0))
        #expect(HopStateMachine.idleTimeout(fromKeepAlive: "max=3") == nil)
        #expect(HopStateMachine.idleTimeout(fromKeepAlive: "timeout=soon") == nil)
    }

    // MARK: Over sockets

    private func withScriptedServer<T>(_ script: @escaping ScriptedHTTPServer.Script, _ body: (ScriptedHTTPServer) async throws -> T) async throws -> T {
        try await ScriptedHTTPServer.with(script, body)
    }

    private static let ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

    /// The first connection answers once, then ends as `second` says when the next request
    /// arrives; every later connection answers.
    private static func firstConnectionEnds(with second: ScriptedHTTPServer.Action) -> ScriptedHTTPServer.Script {
        { connection, request, _ in connection == 0 && request == 1 ? second : .respond(Self.ok) }
    }

    /// A reused connection reset as the request arrives: a `GET` (or a `POST` with an
    /// `Idempotency-Key`) goes again on a new connection; a `POST` does not, and says why. The
    /// server here read the `POST` before it reset the connection, as one that acts on part of a
    /// long body and closes does: the `POST` was sent again, and would have been applied twice.
    @Test func aResetReusedConnectionSendsAgainOnlyWhatMayBeRepeated() async throws {
        let key: HTTPFields = [HTTPField.Name("Idempotency-Key")!: "order-1"]
        for (method, headers) in [(HTTPRequest.Method.get, HTTPFields()), (.post, key)] {
            try await withScriptedServer(Self.firstConnectionEnds(with: .reset())) { server in
                try await withManager(baseURL: server.baseURL) { manager in
                    _ = try await manager.response(method: .get, urlString: "a", serializer: DataResponseSerializer())
                    let second = try await manager.response(
                        method: method, urlString: "b", parameters: ["k": "v"], headers: headers, serializer: DataResponseSerializer())
                    #expect(second.value == Data("ok".utf8), "\(method)")
                    #expect(server.connectionCount == 2)
                    #expect(server.receivedHeads.count == 3)
                }
            }
        }
        let seen = try await self.expectAPOSTNotSentAgain(when: .reset(), says: "reset")
        #expect(seen.connections == 1)
        #expect(seen.heads == 2, "the POST reached the server once")
    }

    /// A GET, then a POST on the same kept-alive connection, which the server ends as `ending`
    /// says when the POST arrives: the POST fails with `connectionClosed`, saying the connection
    /// was `word` and that it was not sent again. Returns the connections the server saw and the
    /// request heads it received.
    private func expectAPOSTNotSentAgain(
        when ending: ScriptedHTTPServer.Action, says word: String, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> (connections: Int, heads: Int) {
        try await withScriptedServer(Self.firstConnectionEnds(with: ending)) { server in
            try await withManager(baseURL: server.baseURL) { manager in
                _ = try await manager.response(method: .get, urlString: "a", serializer: DataResponseSerializer())
                let error = await #expect(throws: CourierError.self, sourceLocation: sourceLocation) {
                    try await manager.response(method: .post, urlString: "b", parameters: ["k": "v"], serializer: DataResponseSerializer())
                }
                #expect(error?.code == .connectionClosed, sourceLocation: sourceLocation)
                #expect(
                    error?.message.contains("the server \(word) the kept-alive connection as the request went out") == true,
                    "\(String(describing: error))", sourceLocation: sourceLocation)
                #expect(
                    error?.message.contains("POST is not idempotent, so Courier did not send it again") == true,
                    "\(String(describing: error))", sourceLocation: sourceLocation)
            }
            return (server.connectionCount, server.receivedHeads.count)
        }
    }

    /// A POST on a kept-alive connection that the server closes (FIN, as HAProxy and Squid do at
    /// their idle timeout) as it arrives is not sent again: the server may have processed it (RFC
    /// 9110 9.2.2; Go's rule too). The error says so, and how to let it go again; with an
    /// `Idempotency-Key` field it does go again, on a new connection.
    @Test func aPOSTOnAClosedKeptAliveConnectionSaysWhyItWasNotSentAgain() async throws {
        #expect(try await self.expectAPOSTNotSentAgain(when: .close, says: "closed").connections == 1)
        try await withScriptedServer(Self.firstConnectionEnds(with: .close)) { server in
            try await withManager(baseURL: server.baseURL) { manager in
                _ = try await manager.response(method: .get, urlString: "a", serializer: DataResponseSerializer())
                let second = try await manager.response(
                    method: .post, urlString: "b", parameters: ["k": "v"], headers: [HTTPField.Name("Idempotency-Key")!: "order-1"],
                    serializer: DataResponseSerializer())
                #expect(second.value == Data("ok".utf8))
                #expect(server.connectionCount == 2, "sent again on a new connection")
            }
        }
    }

    @Test func aResetAfterPartOfTheAnswerIsNotHidden() async throws {
        try await withScriptedServer(Self.firstConnectionEnds(with: .reset(partial: "HTTP/1.1 200 O"))) { server in
            try await withManager(baseURL: server.baseURL) { manager in
                _ = try await manager.response(method: .get, urlString: "a", serializer: DataResponseSerializer())
                let error = await #expect(throws: CourierError.self) {
                    try await manager.response(method: .get, urlString: "b", serializer: DataResponseSerializer())
                }
                #expect([.connectionClosed, .invalidResponse].contains(error?.code))
                #expect(server.connectionCount == 1, "not sent again: the server had begun to answer")
            }
        }
    }

    @Test func aOneShotStreamOnAClosedConnectionFailsRatherThanSendingHalfABody() async throws {
        try await withScriptedServer(Self.firstConnectionEnds(with: .close)) { server in
            try await withManager(baseURL: server.baseURL) { manager in
                _ = try await manager.response(method: .get, urlString: "a", serializer: DataResponseSerializer())
                var request = Request(method: .put, url: server.baseURL.appending(path: "b"))
                request.body = oneShotBody("abc")
                let error = await #expect(throws: CourierError.self) {
                    try await manager.response(for: request, serializer: DataResponseSerializer())
                }
                #expect(error?.code == .connectionClosed)
                #expect(server.connectionCount == 1)
            }
        }
    }

    /// A server that closes every kept-alive connection as the next request arrives (the worst
    /// case of an idle timeout): every request still succeeds, each after one resend.
    @Test func aServerThatClosesEveryReusedConnectionLosesNoRequest() async throws {
        let script: ScriptedHTTPServer.Script = { _, request, _ in request == 0 ? .respond(Self.ok) : .close }
        try await withScriptedServer(script) { server in
            try await withManager(baseURL: server.baseURL) { manager in
                for index in 0..<50 {
                    let response = try await manager.response(method: .get, urlString: "r\(index)", serializer: DataResponseSerializer())
                    #expect(response.value == Data("ok".utf8))
                }
                #expect(server.connectionCount == 50)
            }
        }
    }

    /// A server that closes every connection right after its first response, although the
    /// response kept it alive (an idle timeout of zero). With one connection allowed, each one
    /// the pool gets back is handed at once to the next waiting request, which finds it closing;
    /// that request goes again on a new connection only, where it is answered, never on another
    /// connection just given back (which is closing too): every request succeeds. (Before, a
    /// request could be handed closing connections four times in a row and fail.)
    @Test func aResendGoesOnANewConnectionNotOneJustGivenBack() async throws {
        let script: ScriptedHTTPServer.Script = { _, _, _ in .respond(Self.ok, thenClose: true) }
        try await withScriptedServer(script) { server in
            var configuration = SessionConfiguration.default
            configuration.httpMaximumConnectionsPerHost = 1
            try await withManager(baseURL: server.baseURL, configuration: configuration) { manager in
                let count = 12
                let failures = await withTaskGroup(of: String?.self) { group in
                    for index in 0..<count {
                        group.addTask {
                            do {
                                _ = try await manager.response(method: .get, urlString: "r\(index)", serializer: DataResponseSerializer())
                                return nil
                            } catch {
                                return "r\(index): \(error)"
                            }
                        }
                    }
                    return await group.reduce(into: [String]()) { if let failure = $1 { $0.append(failure) } }
                }
                #expect(failures.isEmpty, "\(failures)")
                #expect(server.connectionCount == count, "each connection answers one request")
            }
        }
    }

    /// Four idle connections that the server has all given up on (each closes when its next
    /// request arrives): the request that finds the first one closed goes on a new connection,
    /// not on another of the idle ones.
    @Test func theResendNeverTakesAnotherIdleConnection() async throws {
        let script: ScriptedHTTPServer.Script = { connection, request, _ in
            if connection < 4 { return request == 0 ? .respondOnceReceived(Self.ok, requests: 4) : .close }
            return .respond(Self.ok)
        }
        try await withScriptedServer(script) { server in
            try await withManager(baseURL: server.baseURL) { manager in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for index in 0..<4 {
                        group.addTask { _ = try await manager.response(method: .get, urlString: "p\(index)", serializer: DataResponseSerializer()) }
                    }
                    try await group.waitForAll()
                }
                #expect(server.connectionCount == 4, "\(server.receivedHeads.map { $0.split(separator: " ")[1] })")
                let response = try await manager.response(method: .get, urlString: "next", serializer: DataResponseSerializer())
                #expect(response.value == Data("ok".utf8))
                #expect(server.connectionCount == 5, "one stale connection tried, then a new one")
                #expect(server.receivedHeads.count == 6)
            }
        }
    }

    /// A server that resets every connection once it has answered one request: the resend goes
    /// on a new connection, which is reset too; the request then fails with the reset, having
    /// been sent twice, not in a loop.
    @Test func aServerThatResetsEveryConnectionEndsInATypedErrorNotALoop() async throws {
        let script: ScriptedHTTPServer.Script = { connection, request, _ in
            connection == 0 && request == 0 ? .respond(Self.ok) : .reset()
        }
        try await withScriptedServer(script) { server in
            try await withManager(baseURL: server.baseURL) { manager in
                _ = try await manager.response(method: .get, urlString: "a", serializer: DataResponseSerializer())
                let error = await #expect(throws: CourierError.self) {
                    try await manager.response(method: .get, urlString: "b", serializer: DataResponseSerializer())
                }
                #expect(error?.code == .connectionClosed)
                #expect(error?.message.contains("reset") == true, "\(error?.message ?? "")")
                #expect(server.receivedHeads.count == 3, "the first request, then the second one twice")
            }
        }
    }

    /// A server that promises to keep idle connections for no time (`Keep-Alive: timeout=0`):
    /// the pool does not hand out such a connection again, so nothing needs resending.
    @Test func aConnectionPastTheServersKeepAliveTimeoutIsNotReused() async throws {
        let calls = Recorder<String>()
        let script: ScriptedHTTPServer.Script = { connection, request, _ in
            calls.append("\(connection).\(request)")
            return .respond("HTTP/1.1 200 OK\r\nKeep-Alive: timeout=0\r\nContent-Length: 2\r\n\r\nok")
        }
        try await withScriptedServer(script) { server in
            try await withManager(baseURL: server.baseURL) { manager in
                _ = try await manager.response(method: .get, urlString: "a", serializer: DataResponseSerializer())
                _ = try await manager.response(method: .get, urlString: "b", serializer: DataResponseSerializer())
                #expect(calls.all == ["0.0", "1.0"])
            }
        }
    }
}
