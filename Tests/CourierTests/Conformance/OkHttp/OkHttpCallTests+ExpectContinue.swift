// Ported from OkHttp's okhttp/src/jvmTest/kotlin/okhttp3/CallTest.kt
// (https://github.com/square/okhttp), Copyright (C) 2013 Square, Inc.,
// licensed under the Apache License, Version 2.0.

import Courier
import CourierTesting
import Foundation
import HTTPTypes
import Testing

/// `CallTest`'s `Expect: 100-continue` cases. The request carries the expectation itself, as in
/// OkHttp: Courier then holds the body back over either protocol (``ExpectContinue``).
///
/// One rule differs: a server that never answers the expectation gets the body once
/// ``SessionConfiguration/expectContinueTimeout`` has passed (1 s by default; curl's rule, RFC
/// 9110 10.1.1: a client need not wait indefinitely), where OkHttp waits until its read timeout
/// fails the call. The timeout cases below set that wait longer than the request's timeout, which
/// is OkHttp's behaviour; the default's is pinned by `HTTP1ExpectContinueTests`.
extension OkHttpCallTests {
    // OkHttp: expect100ContinueNonEmptyRequestBody
    @Test func expect100ContinueNonEmptyRequestBody() async throws {
        // TestServer answers the expectation with `100 Continue` (MockWebServer's add100Continue).
        try await Self.withMock { server, manager in
            server.enqueue(Self.mock())
            let response = try await manager.responseOfAnyStatus(for: Self.post(server.url("/"), expectContinue: true))
            #expect(response.response.status.code == 200)
            #expect(server.requests.first.map { String(decoding: $0.body, as: UTF8.self) } == "abc")
            #expect(server.requests.first?.headerFields[.expect] == "100-continue")
        }
    }

    // OkHttp: expect100ContinueEmptyRequestBody
    @Test func expect100ContinueEmptyRequestBody() async throws {
        try await Self.withMock { server, manager in
            server.enqueue(Self.mock())
            let response = try await manager.responseOfAnyStatus(for: Self.post(server.url("/"), "", expectContinue: true))
            #expect(response.response.status.code == 200)
        }
    }

    // OkHttp: expect100ContinueEmptyRequestBody_HTTP2
    @Test func expect100ContinueEmptyRequestBody_HTTP2() async throws {
        try await Self.withMock(http2: true) { server, manager in
            server.enqueue(Self.mock())
            let response = try await manager.responseOfAnyStatus(for: Self.post(server.url("/"), "", expectContinue: true))
            #expect(response.response.status.code == 200)
            #expect(response.metrics?.transactions.last?.networkProtocolName == "h2")
        }
    }

    // OkHttp: expect100ContinueTimesOutWithoutContinue
    @Test func expect100ContinueTimesOutWithoutContinue() async throws {
        // The server reads the head and waits for the body, which never comes: no answer.
        let configuration = Self.configuration(readTimeout: 0.5, continueWait: 600)
        try await Self.overHTTP1(configuration: configuration, { _, _, _ in .respond(Self.ok) }) { server, manager in
            let error = await Self.failure { try await manager.responseOfAnyStatus(for: Self.post(server.baseURL, expectContinue: true)) }
            #expect(error?.code == .timedOut, "\(String(describing: error))")
            // The head went before the timeout's clock started; the server's loop may read it later.
            #expect(await server.changes.wait { server.receivedHeads.count == 1 })
            #expect(server.receivedBodyLengths.isEmpty, "the body was held back")
        }
    }

    // OkHttp: expect100ContinueTimesOutWithoutContinue_HTTP2
    @Test func expect100ContinueTimesOutWithoutContinue_HTTP2() async throws {
        // The server answers a request once its body ends, which it never does.
        let configuration = Self.configuration(readTimeout: 0.5, continueWait: 600)
        try await Self.overHTTP2(configuration: configuration, { _, _ in .respond("") }) { server, manager in
            let error = await Self.failure { try await manager.responseOfAnyStatus(for: Self.post(Self.url(server), expectContinue: true)) }
            #expect(error?.code == .timedOut, "\(String(describing: error))")
            #expect(server.requestBodyBytes == 0, "the body was held back")
        }
    }

    // OkHttp: successfulExpectContinuePermitsConnectionReuse
    @Test func successfulExpectContinuePermitsConnectionReuse() async throws {
        try await Self.withMock { server, manager in
            server.enqueue(Self.mock())
            server.enqueue(Self.mock())
            _ = try await manager.responseOfAnyStatus(for: Self.post(server.url("/"), expectContinue: true))
            let second = try await manager.responseOfAnyStatus(for: Request(url: server.url("/")))
            #expect(second.metrics?.transactions.last?.isReusedConnection == true)
            #expect(server.server.connectionCount == 1)
        }
    }

    // OkHttp: successfulExpectContinuePermitsConnectionReuseWithHttp2
    @Test func successfulExpectContinuePermitsConnectionReuseWithHttp2() async throws {
        try await Self.withMock(http2: true) { server, manager in
            server.enqueue(Self.mock())
            server.enqueue(Self.mock())
            let first = try await manager.responseOfAnyStatus(for: Self.post(server.url("/"), expectContinue: true))
            #expect(first.metrics?.transactions.last?.networkProtocolName == "h2")
            #expect(server.requests.first.map { String(decoding: $0.body, as: UTF8.self) } == "abc")
            let second = try await manager.responseOfAnyStatus(for: Request(url: server.url("/")))
            #expect(second.metrics?.transactions.last?.isReusedConnection == true)
            #expect(server.server.connectionCount == 1)
        }
    }

    // OkHttp: unsuccessfulExpectContinuePreventsConnectionReuse
    @Test func unsuccessfulExpectContinuePreventsConnectionReuse() async throws {
        // The first connection answers 200 as soon as the head is in, without `100 Continue`:
        // the body is never sent, so the server would read the next request as the body. The
        // wait for `100 Continue` is long: with the default 1 s the body went out once in a full
        // parallel run, before the 200 was read.
        try await Self.overHTTP1(configuration: Self.configuration(continueWait: 600), { _, _, _ in .respondBeforeBody(Self.ok) }) { server, manager in
            let first = try await manager.responseOfAnyStatus(for: Self.post(server.baseURL, expectContinue: true))
            #expect(first.response.status.code == 200)
            let second = try await manager.responseOfAnyStatus(for: Request(url: server.baseURL))
            #expect(second.response.status.code == 200)
            #expect(second.metrics?.transactions.last?.isReusedConnection == false)
            #expect(server.connectionCount == 2)
            #expect(server.receivedBodyLengths == [0], "only the GET's empty body is whole: the POST's was never sent")
        }
    }

    // OkHttp: unsuccessfulExpectContinuePermitsConnectionReuseWithHttp2
    @Test func unsuccessfulExpectContinuePermitsConnectionReuseWithHttp2() async throws {
        // MockWebServer's 200 without `100 Continue` is TestServer's `/courier/refuse-upload`:
        // a 413 as soon as the head is in, never `100 Continue`. Only the stream ends.
        var configuration = TestServer.Configuration.https()
        configuration.recordsRequests = true
        try await withTestServer(configuration) { server in
            try await withManager(baseURL: nil, securityPolicy: try HTTP2PoolTests.policy()) { manager in
                let first = try await manager.responseOfAnyStatus(for: Self.post(server.url("/courier/refuse-upload"), expectContinue: true))
                #expect(first.response.status.code == 413)
                #expect(first.metrics?.transactions.last?.networkProtocolName == "h2")
                let second = try await manager.responseOfAnyStatus(for: Request(url: server.url("/get")))
                #expect(second.response.status.code == 200)
                #expect(second.metrics?.transactions.last?.isReusedConnection == true)
                #expect(server.connectionCount == 1)
            }
        }
    }
}
