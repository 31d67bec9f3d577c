// Ported from OkHttp's okhttp/src/jvmTest/kotlin/okhttp3/CallTest.kt
// (https://github.com/square/okhttp), Copyright (C) 2013 Square, Inc.,
// licensed under the Apache License, Version 2.0.

import Courier
import CourierTesting
import Foundation
import HTTPTypes
import Testing

/// Twins of `CallTest`'s tests of interim (1xx) responses, `Expect: 100-continue` and malformed
/// or unusual response heads, over real sockets. MockWebServer is played by the server each case
/// needs: a ``ScriptedHTTPServer`` (HTTP/1.1 bytes as written: interim heads, broken status
/// lines), a ``ScriptedHTTP2Server`` (HTTP/2 interim HEADERS), or a TestServer (which answers
/// `Expect: 100-continue` with `100 Continue` over HTTP/1.1 and HTTP/2).
///
/// OkHttp's `readTimeout` is Courier's ``SessionConfiguration/timeoutIntervalForRequest`` (the
/// longest wait for the next bytes), MockWebServer's `exchangeIndex` (0 on a new connection) is
/// the server's connection count.
///
/// Where Courier answers otherwise on purpose, the test asserts Courier's answer and says what
/// OkHttp expects ("OkHttp expects") and the rule Courier follows.
@Suite("Conformance: OkHttp CallTest responses and 1xx")
struct OkHttpCallTests {
    /// OkHttp's `"abc".toRequestBody("text/plain".toMediaType())` sent to `url`.
    static func post(_ url: URL, _ body: String = "abc", expectContinue: Bool = false) -> Request {
        var request = Request(method: .post, url: url, body: .data(Data(body.utf8)))
        request.headerFields[.contentType] = "text/plain; charset=utf-8"
        if expectContinue { request.headerFields[.expect] = "100-continue" }
        return request
    }

    /// A `200 OK` with an empty body, as MockWebServer's default response.
    static let ok = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"

    /// OkHttp's `readTimeout` for the cases that wait for one: short, since it must pass.
    static func configuration(readTimeout: TimeInterval? = nil, continueWait: TimeInterval? = nil) -> SessionConfiguration {
        var configuration = SessionConfiguration.default
        if let readTimeout { configuration.timeoutIntervalForRequest = readTimeout }
        if let continueWait { configuration.expectContinueTimeout = continueWait }
        return configuration
    }

    /// Runs `body` with an HTTP/1.1 server answering as `script` says and a manager.
    static func overHTTP1(
        configuration: SessionConfiguration = .default,
        _ script: @escaping ScriptedHTTPServer.Script,
        _ body: (ScriptedHTTPServer, HTTPSessionManager) async throws -> Void
    ) async throws {
        try await ScriptedHTTPServer.with(script) { server in
            try await withManager(baseURL: nil, configuration: configuration) { manager in
                try await body(server, manager)
            }
        }
    }

    /// Runs `body` with an HTTP/2 server (TLS, `h2`) answering as `script` says and a manager
    /// that trusts it; its URLs come from `url(_:)`.
    static func overHTTP2(
        configuration: SessionConfiguration = .default,
        _ script: @escaping @Sendable (_ index: Int, _ path: String) -> ScriptedHTTP2Server.Action,
        _ body: (ScriptedHTTP2Server, HTTPSessionManager) async throws -> Void
    ) async throws {
        let server = try await ScriptedHTTP2Server.start(script: script)
        do {
            try await withManager(baseURL: nil, configuration: configuration, securityPolicy: try HTTP2PoolTests.policy()) { manager in
                try await body(server, manager)
            }
        } catch {
            try? await server.shutdown()
            throw error
        }
        try await server.shutdown()
    }

    static func url(_ server: ScriptedHTTP2Server, _ path: String = "/") -> URL {
        URL(string: "https://localhost:\(server.port)\(path)")!
    }

    /// Runs `body` with a TestServer (HTTP/2 over TLS when `http2`) whose `/` answers from a
    /// MockWebServer queue, and a manager that trusts it.
    static func withMock(
        http2: Bool = false, configuration: SessionConfiguration = .default, _ body: (MockWebServer, HTTPSessionManager) async throws -> Void
    ) async throws {
        var server = http2 ? TestServer.Configuration.https() : TestServer.Configuration()
        server.http2 = http2
        server.recordsRequests = true
        try await withTestServer(server) { server in
            let script = MockWebServer.Script()
            server.route("/") { _ in script.next() }
            try await withManager(baseURL: nil, configuration: configuration, securityPolicy: try HTTP2PoolTests.policy()) { manager in
                try await body(MockWebServer(server: server, script: script), manager)
            }
        }
    }

    static func mock(body: String = "", code: Int = 200, _ headers: [(String, String)] = []) -> TestServer.Response {
        var fields = HTTPFields()
        for (name, value) in headers { fields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
        return TestServer.Response(status: HTTPResponse.Status(code: code), headerFields: fields, body: Data(body.utf8))
    }

    static func text(_ response: DataResponse<Data>) -> String { String(decoding: response.value, as: UTF8.self) }

    /// The error `send` fails with, nil (and a recorded issue) when it does not.
    static func failure(
        sourceLocation: SourceLocation = #_sourceLocation, _ send: () async throws -> DataResponse<Data>
    ) async -> CourierError? {
        await #expect(throws: CourierError.self, sourceLocation: sourceLocation) { _ = try await send() }
    }

    // MARK: 1xx

    /// An HTTP/1.1 final answer `200 OK` after the interim heads `interim` (each its status line
    /// and fields), all in one write after the request's body is in.
    static func afterInterim(_ interim: [String]) -> String {
        interim.map { $0 + "\r\n\r\n" }.joined() + Self.ok
    }

    // OkHttp: serverRespondsWithUnsolicited100Continue
    @Test func serverRespondsWithUnsolicited100Continue() async throws {
        try await Self.overHTTP1({ _, _, _ in .respond(Self.afterInterim(["HTTP/1.1 100 Continue"])) }) { server, manager in
            let response = try await manager.responseOfAnyStatus(for: Self.post(server.baseURL))
            #expect(response.response.status.code == 200)
            #expect(server.receivedBodyLengths == [3])
            // The 100 was interim: the connection carries the next exchange.
            _ = try await manager.responseOfAnyStatus(for: Request(url: server.baseURL))
            #expect(server.connectionCount == 1)
        }
    }

    // OkHttp: serverRespondsWithUnsolicited100Continue_HTTP2
    @Test func serverRespondsWithUnsolicited100Continue_HTTP2() async throws {
        try await Self.overHTTP2({ _, _ in .respondAfterInterim([[(":status", "100")]], body: "") }) { server, manager in
            let response = try await manager.responseOfAnyStatus(for: Self.post(Self.url(server)))
            #expect(response.response.status.code == 200)
            #expect(server.requestBodyLengths == [3])
        }
    }

    // OkHttp: serverRespondsWithEarlyHints
    @Test func serverRespondsWithEarlyHints() async throws {
        let hints = "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload; as=style"
        try await Self.overHTTP1({ _, _, _ in .respond(Self.afterInterim([hints])) }) { server, manager in
            let response = try await manager.responseOfAnyStatus(for: Self.post(server.baseURL))
            #expect(response.response.status.code == 200)
            #expect(server.receivedBodyLengths == [3])
            #expect(server.receivedHeads.first?.lowercased().contains("link:") == false)
            // The hints' fields stay the hints': the final response has none of them.
            #expect(response.response.headerFields[HTTPField.Name("Link")!] == nil)
        }
    }

    // OkHttp: serverRespondsWithEarlyHintsHttp2
    @Test func serverRespondsWithEarlyHintsHttp2() async throws {
        let hints = [(":status", "103"), ("link", "</style.css>; rel=preload; as=style")]
        try await Self.overHTTP2({ _, _ in .respondAfterInterim([hints], body: "") }) { server, manager in
            let response = try await manager.responseOfAnyStatus(for: Self.post(Self.url(server)))
            #expect(response.response.status.code == 200)
            #expect(server.requestBodyLengths == [3])
            #expect(response.response.headerFields[HTTPField.Name("Link")!] == nil)
        }
    }

    // OkHttp: serverReturnsMultiple100Continues
    @Test func serverReturnsMultiple100Continues() async throws {
        let interim = Self.afterInterim(Array(repeating: "HTTP/1.1 100 Continue", count: 3))
        try await Self.overHTTP1({ _, _, _ in .respond(interim) }) { server, manager in
            let response = try await manager.responseOfAnyStatus(for: Self.post(server.baseURL))
            #expect(response.response.status.code == 200)
            #expect(server.receivedBodyLengths == [3])
        }
    }

    // OkHttp: serverReturnsMultiple100ContinuesHttp2
    @Test func serverReturnsMultiple100ContinuesHttp2() async throws {
        let interim = Array(repeating: [(":status", "100")], count: 3)
        try await Self.overHTTP2({ _, _ in .respondAfterInterim(interim, body: "") }) { server, manager in
            let response = try await manager.responseOfAnyStatus(for: Self.post(Self.url(server)))
            #expect(response.response.status.code == 200)
            #expect(server.requestBodyLengths == [3])
        }
    }

    // OkHttp: serverRespondsWithProcessing
    @Test func serverRespondsWithProcessing() async throws {
        try await Self.overHTTP1({ _, _, _ in .respond(Self.afterInterim(["HTTP/1.1 102 Processing"])) }) { server, manager in
            let response = try await manager.responseOfAnyStatus(for: Self.post(server.baseURL))
            #expect(response.response.status.code == 200)
            #expect(server.receivedBodyLengths == [3])
        }
    }

    // OkHttp: serverRespondsWithProcessingHttp2
    @Test func serverRespondsWithProcessingHttp2() async throws {
        try await Self.overHTTP2({ _, _ in .respondAfterInterim([[(":status", "102")]], body: "") }) { server, manager in
            let response = try await manager.responseOfAnyStatus(for: Self.post(Self.url(server)))
            #expect(response.response.status.code == 200)
            #expect(server.requestBodyLengths == [3])
        }
    }

    // OkHttp: serverRespondsWithProcessingMultiple
    @Test func serverRespondsWithProcessingMultiple() async throws {
        let interim = Self.afterInterim(Array(repeating: "HTTP/1.1 102 Processing", count: 10))
        try await Self.overHTTP1({ _, _, _ in .respond(interim) }) { server, manager in
            let response = try await manager.responseOfAnyStatus(for: Self.post(server.baseURL))
            #expect(response.response.status.code == 200)
            #expect(server.receivedBodyLengths == [3])
        }
    }

    // OkHttp: serverRespondsWith100ContinueOnly
    @Test func serverRespondsWith100ContinueOnly() async throws {
        try await Self.overHTTP1(configuration: Self.configuration(readTimeout: 0.5), { _, _, _ in .respond("HTTP/1.1 100 Continue\r\n\r\n") }) {
            server, manager in
            let error = await Self.failure { try await manager.responseOfAnyStatus(for: Self.post(server.baseURL)) }
            #expect(error?.code == .timedOut, "\(String(describing: error))")
            // The body went out with the head; the server's loop (shared with the whole suite) may
            // read it after the client's timeout has fired.
            #expect(await server.changes.wait { server.receivedBodyLengths == [3] }, "\(server.receivedBodyLengths)")
        }
    }

    // OkHttp: serverRespondsWith100ContinueOnly_HTTP2
    @Test func serverRespondsWith100ContinueOnly_HTTP2() async throws {
        try await Self.overHTTP2(configuration: Self.configuration(readTimeout: 0.5), { _, _ in
            .respondWithBlock([(":status", "100")], endStream: false)
        }) { server, manager in
            let error = await Self.failure { try await manager.responseOfAnyStatus(for: Self.post(Self.url(server))) }
            #expect(error?.code == .timedOut, "\(String(describing: error))")
            #expect(await server.changes.wait { server.requestBodyLengths == [3] }, "\(server.requestBodyLengths)")
        }
    }
}
