// Ported from AsyncHTTPClient's Tests/AsyncHTTPClientTests/HTTP1ConnectionTests.swift and
// HTTPClientResponseTests.swift (https://github.com/swift-server/async-http-client), Copyright (c)
// 2018-2022 Apple Inc. and the AsyncHTTPClient project authors, licensed under the Apache
// License, Version 2.0.

import Courier
import CourierTesting
import Foundation
import NIOConcurrencyHelpers
import Testing

/// Twins of AsyncHTTPClient's HTTP/1.1 connection tests, which drive its connection on an
/// `EmbeddedChannel`; here over a socket, a ``ScriptedHTTPServer`` writing the bytes: an interim
/// answer and then the close, an answer nobody asked for on an idle connection, a malformed status
/// line, and the lengths a `304` or a `HEAD`'s answer announce without a body.
@Suite("Conformance: AsyncHTTPClient HTTP1ConnectionTests")
struct AHCHTTP1ConnectionTests {
    typealias Client = AHCHTTPClientTests

    static func answer(_ body: String) -> String { "HTTP/1.1 200 OK\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)" }

    // AHC: testConnectionDropAfterEarlyHints (a 103 and then the close: the task fails as the
    // connection closing, it does not wait for a final answer that cannot come)
    @Test func aCloseAfterEarlyHintsFailsTheRequest() async throws {
        let hints = "HTTP/1.1 103 Early Hints\r\ndate: Mon, 27 Sep 2021 17:53:14 GMT\r\n\r\n"
        try await Client.overHTTP1({ _, _, _ in .respondBytesThenClose(Array(hints.utf8)) }) { server, manager async throws in
            let error = await #expect(throws: CourierError.self) {
                _ = try await manager.responseOfAnyStatus(for: Request(url: server.baseURL))
            }
            #expect(error?.code == .connectionClosed, "\(String(describing: error))")
            // An answer had begun: the request is not sent again.
            #expect(server.receivedHeads.count == 1)
        }
    }

    // AHC: testConnectionIsClosedIfResponseIsReceivedBeforeRequest (an answer on an idle
    // connection, no request outstanding: the connection is not used again, and the answer is
    // never taken for the next request's)
    @Test func anAnswerOnAnIdleConnectionClosesIt() async throws {
        let gate = OneShotGate()
        let script: ScriptedHTTPServer.Script = { connection, _, _ in
            connection == 0
                ? .respondInTwoParts(Array(Self.answer("first").utf8), then: Array(Self.answer("unasked").utf8), gate: gate)
                : .respond(Self.answer("right"))
        }
        try await Client.overHTTP1(script) { server, manager async throws in
            #expect(Client.text(try await manager.responseOfAnyStatus(for: Request(url: server.baseURL))) == "first")
            gate.open()
            #expect(await server.changes.wait { server.closedConnectionCount == 1 }, "the connection that carried the unasked answer is still open")
            #expect(Client.text(try await manager.responseOfAnyStatus(for: Request(url: server.baseURL))) == "right")
            #expect(server.connectionCount == 2)
        }
    }

    /// Not AHC's: the start of an unasked answer on an idle connection (a server that answered
    /// twice, its second answer cut by TCP; a `408` on its way as the server gives up): the
    /// connection closes at once. Kept, the rest came after the next request went out, and the
    /// stale answer was taken as that request's (Go's transport closes such a connection too).
    @Test func thePartOfAnAnswerOnAnIdleConnectionClosesIt() async throws {
        let gate = OneShotGate()
        let script: ScriptedHTTPServer.Script = { connection, _, _ in
            connection == 0
                ? .respondInTwoParts(Array(Self.answer("first").utf8), then: Array("HTTP/1.1 500 Stale\r\nContent-Le".utf8), gate: gate)
                : .respond(Self.answer("right"))
        }
        // Idle connections are kept for an hour: only the part can close this one.
        var configuration = SessionConfiguration.default
        configuration.connectionIdleTimeout = 3600
        try await ScriptedHTTPServer.with(script) { server async throws in
            try await withManager(baseURL: nil, configuration: configuration) { manager async throws in
                #expect(Client.text(try await manager.responseOfAnyStatus(for: Request(url: server.baseURL))) == "first")
                gate.open()
                #expect(
                    await server.changes.wait { server.closedConnectionCount == 1 },
                    "the connection that carried the part is still open")
                #expect(Client.text(try await manager.responseOfAnyStatus(for: Request(url: server.baseURL))) == "right")
                #expect(server.connectionCount == 2)
            }
        }
    }

    // AHC: testConnectionIsClosedIfResponseIsReceivedBeforeRequest, with the unasked answer in
    // the same write as the asked one (a server that answered twice): the first is the response,
    // the second is never the next request's.
    @Test func anAnswerBehindTheAskedOneIsNeverTheNextRequests() async throws {
        let script: ScriptedHTTPServer.Script = { connection, _, _ in
            connection == 0 ? .respond(Self.answer("first") + Self.answer("unasked")) : .respond(Self.answer("right"))
        }
        try await Client.overHTTP1(script) { server, manager async throws in
            #expect(Client.text(try await manager.responseOfAnyStatus(for: Request(url: server.baseURL))) == "first")
            for _ in 0..<2 {
                #expect(Client.text(try await manager.responseOfAnyStatus(for: Request(url: server.baseURL))) == "right")
            }
            #expect(server.receivedHeads.count == 3)
        }
    }

    // AHC: testDoubleHTTPResponseLine (a status line where a field should be: the answer is
    // malformed, its connection closed, and the next request works on a new one)
    @Test func aSecondStatusLineIsAMalformedAnswer() async throws {
        let script: ScriptedHTTPServer.Script = { connection, _, _ in
            connection == 0 ? .respond("HTTP/1.0 200 OK\r\nHTTP/1.0 200 OK\r\n\r\n") : .respond(Self.answer("right"))
        }
        try await Client.overHTTP1(script) { server, manager async throws in
            let error = await #expect(throws: CourierError.self) {
                _ = try await manager.responseOfAnyStatus(for: Request(url: server.baseURL))
            }
            #expect(error?.code == .invalidResponse, "\(String(describing: error))")
            #expect(Client.text(try await manager.responseOfAnyStatus(for: Request(url: server.baseURL))) == "right")
            #expect(server.connectionCount == 2)
            #expect(await server.changes.wait { server.closedConnectionCount >= 1 })
        }
    }

    // AHC: HTTPClientResponseTests.testSimpleResponseNotModified,
    // testSimpleResponseHeadRequestMethod (a `304`'s and a `HEAD`'s `Content-Length` announce a
    // body they do not carry: nothing is expected, and the connection carries the next request)
    @Test func aNotModifiedOrHEADAnswerExpectsNoBody() async throws {
        let script: ScriptedHTTPServer.Script = { _, _, head in
            head.hasPrefix("HEAD ")
                ? .respond("HTTP/1.1 200 OK\r\nContent-Length: 1025\r\n\r\n")
                : head.hasPrefix("GET /not-modified ")
                    ? .respond("HTTP/1.1 304 Not Modified\r\nContent-Length: 1025\r\n\r\n") : .respond(Self.answer("next"))
        }
        try await Client.overHTTP1(script) { server, manager async throws in
            for request in [Request(url: server.baseURL.appendingPathComponent("not-modified")), Request(method: .head, url: server.baseURL)] {
                let response = try await manager.responseOfAnyStatus(for: request)
                #expect(response.data?.isEmpty != false, "\(request.method)")
            }
            #expect(Client.text(try await manager.responseOfAnyStatus(for: Request(url: server.baseURL.appendingPathComponent("next")))) == "next")
            #expect(server.connectionCount == 1)
        }
    }
}

extension AHCHTTPClientTests {
    /// A response's body as text.
    static func text(_ response: DataResponse<Data>) -> String {
        String(decoding: response.data ?? Data(), as: UTF8.self)
    }
}
