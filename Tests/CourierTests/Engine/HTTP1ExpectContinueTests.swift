@testable import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import Testing

/// `Expect: 100-continue`: the decision (``ExpectContinue``, pure), and a server that ignores the
/// expectation over a socket (the body goes after the wait).
@Suite("HTTP/1.1 Expect 100-continue")
struct HTTP1ExpectContinueTests {
    private let policy = ExpectContinue(threshold: 1000, timeout: .seconds(1))

    /// Bodies of 1000 bytes or more announce the expectation and wait `seconds` at most.
    private static func configuration(waiting seconds: TimeInterval) -> SessionConfiguration {
        var configuration = SessionConfiguration.default
        configuration.expectContinueThreshold = 1000
        configuration.expectContinueTimeout = seconds
        return configuration
    }
    /// Whether a request with `fields` asks for the expectation itself.
    private func asks(_ fields: HTTPFields = [:]) -> ExpectContinue.Requested {
        ExpectContinue.requested(in: fields)
    }

    @Test func onlyBodiesAtOrAboveTheThresholdAreAnnounced() {
        #expect(self.policy.decision(requested: self.asks(), hasBody: true, length: .known(1000), serverIsHTTP10: false) == .announce)
        #expect(self.policy.decision(requested: self.asks(), hasBody: true, length: .known(999), serverIsHTTP10: false) == .sendAtOnce)
        #expect(self.policy.decision(requested: self.asks(), hasBody: true, length: .unknown, serverIsHTTP10: false) == .sendAtOnce, "a stream of unknown length goes at once")
        #expect(self.policy.decision(requested: self.asks(), hasBody: false, length: .known(0), serverIsHTTP10: false) == .sendAtOnce, "no expectation without content")
        #expect(self.policy.decision(requested: self.asks(), hasBody: true, length: .known(5000), serverIsHTTP10: true) == .sendAtOnce, "an HTTP/1.0 server knows none")
        let never = ExpectContinue(threshold: nil, timeout: .seconds(1))
        #expect(never.decision(requested: self.asks(), hasBody: true, length: .known(1 << 30), serverIsHTTP10: false) == .sendAtOnce)
    }

    @Test func anExpectationTheRequestCarriesIsWaitedFor() {
        let asked = self.asks([.expect: "100-Continue"])
        #expect(self.policy.decision(requested: asked, hasBody: true, length: .known(10), serverIsHTTP10: false) == .wait)
        let never = ExpectContinue(threshold: nil, timeout: .seconds(1))
        #expect(never.decision(requested: asked, hasBody: true, length: .unknown, serverIsHTTP10: false) == .wait)
        #expect(never.decision(requested: asked, hasBody: false, length: .known(0), serverIsHTTP10: false) == .sendAtOnce)
    }

    @Test func anotherExpectationTheRequestCarriesGetsNone() {
        #expect(self.policy.decision(requested: self.asks([.expect: "x-custom"]), hasBody: true, length: .known(5000), serverIsHTTP10: false) == .sendAtOnce)
    }

    /// A request that carries an `Expect` of its own kind gets no `100-continue` added to it:
    /// before, a large body went out with `Expect: x-custom, 100-continue`, a list nobody wrote.
    @Test func aRequestsOwnExpectationIsSentAsWritten() async throws {
        var server = TestServer.Configuration()
        server.recordsRequests = true
        try await withTestServer(server) { server in
            let manager = SessionManager(configuration: Self.configuration(waiting: 600))
            defer { manager.invalidate(cancelingTasks: true) }
            var request = Request(method: .post, url: server.url("/post"), body: .data(Data(count: 5000)))
            request.headerFields[.expect] = "x-custom"
            _ = try await manager.data(for: request)
            #expect(server.receivedRequests.last?.headerFields[values: .expect] == ["x-custom"])
        }
    }

    @Test func overHTTP2NothingIsAnnouncedButARequestsOwnExpectationIsWaitedFor() {
        #expect(self.policy.decision(requested: self.asks(), hasBody: true, length: .known(5000), serverIsHTTP10: false, overHTTP2: true) == .sendAtOnce)
        let asked = self.asks([.expect: "100-continue"])
        #expect(self.policy.decision(requested: asked, hasBody: true, length: .known(5000), serverIsHTTP10: false, overHTTP2: true) == .wait)
    }

    @Test func theConfigurationIsCarriedOver() {
        var configuration = NIOEngine.Configuration()
        #expect(ExpectContinue(configuration) == ExpectContinue(threshold: 1 << 20, timeout: .seconds(1)))
        configuration.expectContinueThreshold = nil
        configuration.expectContinueTimeout = 0
        #expect(ExpectContinue(configuration) == ExpectContinue(threshold: nil, timeout: .milliseconds(1)))
        var session = SessionConfiguration.default
        session.expectContinueThreshold = 42
        session.expectContinueTimeout = 2.5
        #expect(NIOEngine.Configuration(session).expectContinueThreshold == 42)
        #expect(NIOEngine.Configuration(session).expectContinueTimeout == 2.5)
    }

    @Test func aServerThatNeverAnswersTheExpectationGetsTheBodyAfterTheWait() async throws {
        // The scripted server reads the head and the whole body before answering, and never says
        // 100 Continue: the body must go once the wait ends.
        try await ScriptedHTTPServer.with({ _, _, _ in
            .respond("HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")
        }) { server in
            try await withManager(baseURL: server.baseURL, configuration: Self.configuration(waiting: 0.2)) { manager in
                let request = Request(method: .post, url: server.baseURL.appendingPathComponent("a"), body: .data(Data(count: 5000)))
                let response = try await manager.response(for: request, serializer: DataResponseSerializer())
                #expect(response.response.status.code == 201)
                #expect(server.receivedHeads.first?.lowercased().contains("expect: 100-continue") == true, "\(server.receivedHeads)")
                #expect(server.receivedBodyLengths == [5000])
                // The connection carried a whole exchange: it is reused.
                _ = try await manager.response(for: request, serializer: DataResponseSerializer())
                #expect(server.connectionCount == 1)
            }
        }
    }

    /// When a server's 417 comes: during the wait, before the body (the server refuses as soon
    /// as the head is in), or after the wait ended, once the body went (it reads the whole
    /// request before it answers, or is further away than the wait).
    enum Refusal: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case duringTheWait = "during the wait", afterTheWait = "after the wait, the body sent"
        var testDescription: String { self.rawValue }
    }

    /// A 417 to the expectation is not the response, whenever it comes: the request goes again
    /// without the expectation, on another connection, as curl sends it again. Before, only a 417
    /// that came during the wait was taken so, and one after it reached the caller as the
    /// response to a request whose `Expect` it never wrote.
    @Test(arguments: Refusal.allCases)
    func a417IsAnsweredByRepeatingTheRequestWithoutTheExpectation(_ refusal: Refusal) async throws {
        let refused = "HTTP/1.1 417 Expectation Failed\r\nContent-Length: 4\r\n\r\nnope"
        try await ScriptedHTTPServer.with({ _, _, head in
            guard head.lowercased().contains("expect: 100-continue") else { return .respond("HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n") }
            return refusal == .duringTheWait ? .respondBeforeBody(refused) : .respond(refused)
        }) { server in
            let wait: TimeInterval = refusal == .duringTheWait ? 600 : 0.05
            try await withManager(baseURL: server.baseURL, configuration: Self.configuration(waiting: wait)) { manager in
                let request = Request(method: .post, url: server.baseURL.appendingPathComponent("a"), body: .data(Data(count: 5000)))
                let response = try await manager.response(for: request, serializer: DataResponseSerializer())
                #expect(response.response.status.code == 201, "the 417 is not the response")
                let heads = server.receivedHeads.map { $0.lowercased() }
                #expect(heads.count == 2)
                #expect(heads.first?.contains("expect: 100-continue") == true)
                #expect(heads.last?.contains("expect:") == false, "sent again without the expectation")
                #expect(
                    server.receivedBodyLengths == (refusal == .duringTheWait ? [5000] : [5000, 5000]),
                    "the body went with the second request only, or, refused after the wait, with each")
                #expect(server.connectionCount == 2, "the refused request's connection is not reused")
            }
        }
    }

    /// A body read once (a stream): refused during the wait, none of it was read, and it goes with
    /// the request sent again without the expectation (before, the 417 was the answer); refused
    /// after the wait, once it went out, it cannot go again, and the task fails with a typed error
    /// that says why, the 417 in its response.
    @Test(arguments: Refusal.allCases)
    func a417ToAStreamReadOnceRepeatsItOnlyIfNoneOfItWasRead(_ refusal: Refusal) async throws {
        let refused = "HTTP/1.1 417 Expectation Failed\r\nContent-Length: 4\r\n\r\nnope"
        try await ScriptedHTTPServer.with({ _, _, head in
            guard head.lowercased().contains("expect: 100-continue") else { return .respond("HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n") }
            return refusal == .duringTheWait ? .respondBeforeBody(refused) : .respond(refused)
        }) { server in
            let wait: TimeInterval = refusal == .duringTheWait ? 600 : 0.05
            try await withManager(baseURL: server.baseURL, configuration: Self.configuration(waiting: wait)) { manager in
                let once = AsyncThrowingStream<ByteBuffer, any Error> { continuation in
                    continuation.yield(ByteBuffer(repeating: 0x61, count: 5000))
                    continuation.finish()
                }
                let request = Request(method: .post, url: server.baseURL.appendingPathComponent("a"), body: .stream(once, length: .known(5000)))
                #expect(!request.body.isReplayable)
                switch refusal {
                case .duringTheWait:
                    let response = try await manager.response(for: request, serializer: DataResponseSerializer())
                    #expect(response.response.status.code == 201, "the 417 is not the response")
                    let heads = server.receivedHeads.map { $0.lowercased() }
                    #expect(heads.count == 2)
                    #expect(heads.last?.contains("expect:") == false, "sent again without the expectation")
                    #expect(server.receivedBodyLengths == [5000], "the stream went whole, with the second request")
                case .afterTheWait:
                    let error = await #expect(throws: CourierError.self, "a 417 to a stream that went out does not succeed") {
                        try await manager.response(for: request, serializer: DataResponseSerializer())
                    }
                    #expect(error?.code == .bodyReadFailed)
                    #expect(error?.response?.status.code == 417)
                    #expect(error?.message.contains("cannot be sent again") == true, "\(String(describing: error))")
                    #expect(server.receivedHeads.count == 1, "not sent again")
                }
            }
        }
    }
}
