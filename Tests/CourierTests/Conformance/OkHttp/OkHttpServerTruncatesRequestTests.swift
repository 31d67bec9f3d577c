// Ported from OkHttp's okhttp/src/jvmTest/kotlin/okhttp3/ServerTruncatesRequestTest.kt
// (https://github.com/square/okhttp), Copyright (C) 2019 Square, Inc.,
// licensed under the Apache License, Version 2.0.

import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import Testing

/// Twins of `ServerTruncatesRequestTest`: a server that answers before it has read the request's
/// body (and never reads it) gives the client a complete response, which the client must return
/// however the body's upload ends, stopping the body's producer and leaving its pool sound.
///
/// OkHttp's `SlowRequestBody` (50 chunks of `abc` 100 ms apart, then a failure) is a
/// ``NeverEndingBody`` here: `abc`, then nothing until the engine stops pulling. A body that ends
/// only when the engine gives it up makes a response that waits for it a hang, not a slow pass.
/// OkHttp's event list (RequestFailed before ResponseHeadersStart) has no Courier counterpart;
/// what it shows, that the response is read after the body failed, is asserted directly.
@Suite("Conformance: OkHttp ServerTruncatesRequestTest")
struct OkHttpServerTruncatesRequestTests {
    typealias Call = OkHttpCallTests

    /// A request body of `abc` and then nothing more, ever: the next pull waits until the task
    /// pulling it is cancelled. Records when that happens (the engine gave the body up).
    struct NeverEndingBody: AsyncSequence, Sendable {
        typealias Element = ByteBuffer
        /// How many chunks were pulled, and whether a pull was cancelled; signals `changes`.
        let state: ObservedBox<(pulls: Int, cancelled: Bool)>

        init() { self.state = ObservedBox((0, false)) }

        struct AsyncIterator: AsyncIteratorProtocol {
            let state: ObservedBox<(pulls: Int, cancelled: Bool)>

            mutating func next() async throws -> ByteBuffer? {
                let pull = self.state.withLockedValue { state -> Int in
                    state.pulls += 1
                    return state.pulls
                }
                if pull == 1 { return ByteBuffer(string: "abc") }
                do {
                    try await untilCancelled()
                } catch {
                    self.state.withLockedValue { $0.cancelled = true }
                    throw error
                }
            }
        }

        func makeAsyncIterator() -> AsyncIterator { AsyncIterator(state: self.state) }

        var changes: Changes { self.state.changes }
        /// Whether no pull is left waiting: the engine stopped after `abc` (its write failed, or
        /// the hop ended first), or cancelled the pull that waits for more.
        var wasCancelled: Bool { self.state.read { $0.pulls == 1 || $0.cancelled } }
    }

    static func ok(_ body: String) -> String { OkHttpConnectionReuseTests.ok(body) }

    /// OkHttp's `makeSimpleCall`: the pool still works.
    static func simpleCall(_ manager: HTTPSessionManager, _ url: URL, expecting body: String) async throws {
        let response = try await manager.responseOfAnyStatus(for: Request(url: url))
        #expect(Call.text(response) == body)
    }

    // OkHttp: serverTruncatesRequestOnLongPostHttp1
    @Test func serverTruncatesRequestOnLongPostHttp1() async throws {
        try await Call.overHTTP1({ connection, _, _ in
            connection == 0 ? .respondWithoutReadingBody(Self.ok("abc")) : .respond(Self.ok("healthy"))
        }) { server, manager in
            let body = NeverEndingBody()
            let request = Request(method: .post, url: server.baseURL, body: .stream(body, length: .unknown))
            let response = try await manager.responseOfAnyStatus(for: request)
            #expect(response.response.status.code == 200)
            #expect(Call.text(response) == "abc")
            // The body's producer is stopped, not left waiting for a pull that never comes.
            #expect(await body.changes.wait { body.wasCancelled }, "the request body is still being pulled")
            try await Self.simpleCall(manager, server.baseURL, expecting: "healthy")
            #expect(server.connectionCount == 2, "the connection whose request was cut short was reused")
        }
    }

    /// Runs `body` with a TestServer over TLS (`h2` by ALPN) and a manager that trusts it.
    static func overHTTP2(_ body: (TestServer, HTTPSessionManager) async throws -> Void) async throws {
        try await withTestServer(.https()) { server in
            try await withManager(baseURL: nil, securityPolicy: try HTTP2PoolTests.policy()) { manager in
                try await body(server, manager)
            }
        }
    }

    // OkHttp: serverTruncatesRequestOnLongPostHttp2
    @Test func serverTruncatesRequestOnLongPostHttp2() async throws {
        // TestServer's `/courier/refuse-upload` answers as soon as the head is in and reads no body
        // (a 413 rather than OkHttp's 200 `abc`): the stream's answer is whole while the client
        // still has a body to send.
        try await Self.overHTTP2 { server, manager in
            let body = NeverEndingBody()
            let request = Request(method: .post, url: server.url("/courier/refuse-upload"), body: .stream(body, length: .unknown))
            let response = try await manager.responseOfAnyStatus(for: request)
            #expect(response.response.status.code == 413)
            #expect(response.metrics?.transactions.last?.networkProtocolName == "h2")
            #expect(await body.changes.wait { body.wasCancelled }, "the request body is still being pulled")
            let healthy = try await manager.responseOfAnyStatus(for: Request(url: server.url("/get")))
            #expect(healthy.response.status.code == 200)
            #expect(healthy.metrics?.transactions.last?.isReusedConnection == true)
            #expect(server.connectionCount == 1)
        }
    }

    // OkHttp: serverTruncatesRequestHttp2OnDuplexRequest
    @Test func serverTruncatesRequestHttp2OnDuplexRequest() async throws {
        // OkHttp's duplex body is written by the caller after the response arrived, and those
        // writes fail. Courier's streamed body is the same thing pulled: once the answer is
        // whole, the stream task returns it and the engine pulls no more (the producer is
        // cancelled), and the connection carries on.
        try await Self.overHTTP2 { server, manager in
            let body = NeverEndingBody()
            let request = Request(method: .post, url: server.url("/courier/refuse-upload"), body: .stream(body, length: .unknown))
            let response = try await manager.stream(request)
            var received = 0
            for try await chunk in response.body { received += chunk.readableBytes }
            #expect(response.response.status.code == 413)
            #expect(received > 0)
            #expect(await body.changes.wait { body.wasCancelled }, "the request body is still being pulled")
            let healthy = try await manager.responseOfAnyStatus(for: Request(url: server.url("/get")))
            #expect(healthy.response.status.code == 200)
            #expect(server.connectionCount == 1)
        }
    }

    // OkHttp: serverTruncatesRequestButTrailersCanStillBeReadHttp1
    @Test func serverTruncatesRequestButTrailersCanStillBeReadHttp1() async throws {
        // A chunked answer (one byte a chunk, as OkHttp's `chunkedBody("abc", 1)`) with a trailer.
        let answer = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: caboose\r\n\r\n"
            + "1\r\na\r\n1\r\nb\r\n1\r\nc\r\n0\r\ncaboose: xyz\r\n\r\n"
        try await Call.overHTTP1({ _, _, _ in .respondWithoutReadingBody(answer) }) { server, manager in
            let body = NeverEndingBody()
            let request = Request(method: .post, url: server.baseURL, body: .stream(body, length: .unknown))
            let response = try await manager.stream(request)
            var text = ""
            for try await chunk in response.body { text += String(buffer: chunk) }
            #expect(text == "abc")
            #expect(response.task.responseTrailers?[HTTPField.Name("caboose")!] == "xyz")
        }
    }

    // OkHttp: noAttemptToReadResponseIfLoadingRequestBodyIsSourceOfFailure
    @Test func noAttemptToReadResponseIfLoadingRequestBodyIsSourceOfFailure() async throws {
        struct Boom: Error, CustomStringConvertible {
            var description: String { "boom" }
        }
        // The first connection's first request waits for its 3 body bytes; had the client reused
        // that connection, the next request's bytes would be read as that body and answered
        // `first connection`.
        try await Call.overHTTP1({ connection, request, _ in
            .respond(Self.ok(connection == 0 && request == 0 ? "first connection" : "abc"))
        }) { server, manager in
            let failing = Call.StepwiseBody(steps: [{ throw Boom() }])
            let error = await Call.failure {
                try await manager.responseOfAnyStatus(for: Request(method: .post, url: server.baseURL, body: .stream(failing, length: .known(3))))
            }
            #expect("\(String(describing: error))".contains("boom"), "\(String(describing: error))")
            #expect(server.receivedBodyLengths.isEmpty, "no request reached the server whole")
            try await Self.simpleCall(manager, server.baseURL, expecting: "abc")
        }
    }
}
