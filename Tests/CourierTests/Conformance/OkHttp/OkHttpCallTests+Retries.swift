// Ported from OkHttp's okhttp/src/jvmTest/kotlin/okhttp3/CallTest.kt
// (https://github.com/square/okhttp), Copyright (C) 2013 Square, Inc.,
// licensed under the Apache License, Version 2.0.

import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import Testing

/// `CallTest`'s connection failures and retries, over real sockets.
///
/// OkHttp's `retryOnConnectionFailure` (on by default) resends a request whose pooled connection
/// failed, whatever its method, and retries `408` and `503 Retry-After: 0` answers once by itself.
/// Courier resends only as ``ResendRule`` allows (an idempotent method, or a reset, on a reused
/// connection: RFC 9110 9.2.2), and retries a status only through a ``RetryPolicy`` the caller
/// sets (Alamofire's rule; URLSession retries none). Those cases pin Courier's answer and say
/// OkHttp's.
@Suite("Conformance: OkHttp CallTest retries and connection failures")
struct OkHttpCallRetryTests {
    typealias Call = OkHttpCallTests

    static func ok(_ body: String, _ fields: String = "") -> String { OkHttpConnectionReuseTests.ok(body, fields) }

    /// A 408 or 503 with `Connection: close`, closing afterwards (MockWebServer's
    /// `ShutdownConnection`).
    static func refusal(_ code: Int, retryAfter: String? = nil, _ body: String = "You took too long!") -> ScriptedHTTPServer.Action {
        let reason = code == 408 ? "Request Timeout" : "Service Unavailable"
        let retry = retryAfter.map { "Retry-After: \($0)\r\n" } ?? ""
        return .respond(Self.ok(body, "Connection: close\r\n\(retry)").replacingOccurrences(of: "200 OK", with: "\(code) \(reason)"), thenClose: true)
    }

    /// A manager whose retry policy retries at once (no backoff), POST included when `post`.
    static func retrying(_ manager: HTTPSessionManager, post: Bool = false, limit: Int = 1) {
        var policy = RetryPolicy(retryLimit: limit)
        policy.initialBackoff = .zero
        if post { policy.retryableMethods.insert(.post) }
        manager.interceptor = Interceptor(retriers: [policy])
    }

    // OkHttp: recoverWhenRetryOnConnectionFailureIsTrue_HTTP2 (for HTTP/1.1, see
    // silentRetryWhenIdempotentRequestFailsOnReusedConnection)
    @Test func recoverWhenRetryOnConnectionFailureIsTrue_HTTP2() async throws {
        // The second stream's connection closes without GOAWAY: the GET goes again, on a new one.
        try await Call.overHTTP2({ index, _ in index == 1 ? .close : .respond(index == 0 ? "seed connection pool" : "retry success") }) {
            server, manager in
            let text1 = Call.text(try await manager.responseOfAnyStatus(for: Request(url: Call.url(server))))
            #expect(text1 == "seed connection pool")
            let text2 = Call.text(try await manager.responseOfAnyStatus(for: Request(url: Call.url(server))))
            #expect(text2 == "retry success")
            #expect(server.connectionCount == 2)
        }
    }

    // OkHttp: postBodyRetransmittedOnFailureRecovery
    @Test func postBodyNotRetransmittedOnFailureRecovery() async throws {
        // OkHttp sends the POST again on a new connection. Courier does not: the request was
        // written whole on a kept-alive connection that then closed (a FIN, not a reset), and a
        // POST is not idempotent (RFC 9110 9.2.2: the server may have acted on it).
        try await Call.overHTTP1({ connection, request, _ in
            connection == 0 && request == 1 ? .close : .respond(Self.ok(request == 0 ? "abc" : "def"))
        }) { server, manager in
            let text3 = Call.text(try await manager.responseOfAnyStatus(for: Request(url: server.baseURL)))
            #expect(text3 == "abc")
            let error = await Call.failure { try await manager.responseOfAnyStatus(for: Call.post(server.baseURL, "body!")) }
            #expect(error?.code == .connectionClosed, "\(String(describing: error))")
            #expect(server.receivedBodyLengths == [0, 5])
            #expect(server.connectionCount == 1)
        }
    }

    // OkHttp: postBodyRetransmittedOnFailureRecovery (with an `Idempotency-Key`, Courier agrees)
    @Test func postBodyWithIdempotencyKeyRetransmittedOnFailureRecovery() async throws {
        try await Call.overHTTP1({ connection, request, _ in
            connection == 0 && request == 1 ? .close : .respond(Self.ok(connection == 0 ? "abc" : "def"))
        }) { server, manager in
            let text4 = Call.text(try await manager.responseOfAnyStatus(for: Request(url: server.baseURL)))
            #expect(text4 == "abc")
            var post = Call.post(server.baseURL, "body!")
            post.headerFields[HTTPField.Name("Idempotency-Key")!] = "8e03978e-40d5-43e8-bc93-6894a57f9324"
            let text5 = Call.text(try await manager.responseOfAnyStatus(for: post))
            #expect(text5 == "def")
            #expect(server.receivedBodyLengths == [0, 5, 5])
            #expect(server.connectionCount == 2)
        }
    }

    // OkHttp: postBodyRetransmittedOnFailureRecovery_HTTP2
    @Test func postBodyNotRetransmittedOnFailureRecovery_HTTP2() async throws {
        // The connection closes without GOAWAY once the POST's stream is whole: processed or
        // not, the server does not say; Courier does not send a POST again on that doubt.
        try await Call.overHTTP2({ index, _ in index == 1 ? .close : .respond(index == 0 ? "abc" : "def") }) { server, manager in
            let text6 = Call.text(try await manager.responseOfAnyStatus(for: Request(url: Call.url(server))))
            #expect(text6 == "abc")
            let error = await Call.failure { try await manager.responseOfAnyStatus(for: Call.post(Call.url(server), "body!")) }
            #expect(error?.code == .connectionClosed, "\(String(describing: error))")
            #expect(server.connectionCount == 1)
        }
    }

    // OkHttp: connectFails
    @Test func connectFails() async throws {
        try await withManager(baseURL: nil) { manager in
            let error = await Call.failure { try await manager.responseOfAnyStatus(for: Request(url: URL(string: "http://127.0.0.1:\(closedPort())/")!)) }
            #expect(error?.code == .connectionFailed, "\(String(describing: error))")
        }
    }

    // OkHttp: requestBodySurvivesRetries (OkHttp's dead proxy is a dead first address here)
    @Test func requestBodySurvivesRetries() async throws {
        // `localhost` is 127.0.0.2 first, where nothing listens (the server is on 127.0.0.1 only),
        // then 127.0.0.1: the first route fails, the body goes whole on the second.
        try await ScriptedHTTPServer.with({ _, _, _ in .respond(Self.ok("")) }) { server in
            var configuration = SessionConfiguration.default
            configuration.hostAddresses = ["courier-routes.test": ["127.0.0.2", "127.0.0.1"]]
            try await withManager(baseURL: nil, configuration: configuration) { manager in
                let url = URL(string: "http://courier-routes.test:\(server.port)/")!
                let response = try await manager.responseOfAnyStatus(for: Call.post(url, "abc"))
                #expect(response.response.status.code == 200)
                #expect(server.receivedBodyLengths == [3])
            }
        }
    }

    // OkHttp: getClientRequestTimeout, disableClientRequestTimeoutRetry
    @Test func getClientRequestTimeoutIsTheResponse() async throws {
        // OkHttp retries a 408 by itself (unless `retryOnConnectionFailure` is off). Courier hands
        // it over, as URLSession does; its `Connection: close` is honoured.
        try await Call.overHTTP1({ connection, _, _ in connection == 0 ? Self.refusal(408) : .respond(Self.ok("Body")) }) { server, manager in
            let first = try await manager.responseOfAnyStatus(for: Request(url: server.baseURL))
            #expect(first.response.status.code == 408)
            #expect(Call.text(first) == "You took too long!")
            #expect(server.receivedHeads.count == 1)
            let second = try await manager.responseOfAnyStatus(for: Request(url: server.baseURL))
            #expect(Call.text(second) == "Body")
            #expect(server.connectionCount == 2)
        }
    }

    // OkHttp: getClientRequestTimeout (with Courier's RetryPolicy)
    @Test func getClientRequestTimeoutRetriedByPolicy() async throws {
        try await Call.overHTTP1({ connection, _, _ in connection == 0 ? Self.refusal(408) : .respond(Self.ok("Body")) }) { server, manager in
            Self.retrying(manager)
            let response = try await manager.responseOfAnyStatus(for: Request(url: server.baseURL))
            #expect(Call.text(response) == "Body")
            #expect(server.connectionCount == 2)
        }
    }

    // OkHttp: getClientRequestTimeoutWithBackPressure
    @Test func getClientRequestTimeoutWithBackPressure() async throws {
        // `Retry-After: 1` asks for longer than the policy's cap: not retried (OkHttp: the same).
        try await Call.overHTTP1({ connection, _, _ in connection == 0 ? Self.refusal(408, retryAfter: "1") : .respond(Self.ok("Body")) }) {
            server, manager in
            var policy = RetryPolicy(retryLimit: 1)
            policy.maximumRetryAfter = .milliseconds(500)
            manager.interceptor = Interceptor(retriers: [policy])
            let response = try await manager.responseOfAnyStatus(for: Request(url: server.baseURL))
            #expect(response.response.status.code == 408)
            #expect(Call.text(response) == "You took too long!")
            #expect(server.receivedHeads.count == 1)
        }
    }

    // OkHttp: requestBodyRetransmittedOnClientRequestTimeout
    @Test func requestBodyRetransmittedOnClientRequestTimeout() async throws {
        // A POST is retried only when the policy names the method (Alamofire's rule).
        try await Call.overHTTP1({ connection, _, _ in connection == 0 ? Self.refusal(408) : .respond(Self.ok("Body")) }) { server, manager in
            Self.retrying(manager, post: true)
            let response = try await manager.responseOfAnyStatus(for: Call.post(server.baseURL, "Hello"))
            #expect(Call.text(response) == "Body")
            #expect(server.receivedBodyLengths == [5, 5])
        }
    }

    // OkHttp: maxClientRequestTimeoutRetries
    @Test func maxClientRequestTimeoutRetries() async throws {
        try await Call.overHTTP1({ _, _, _ in Self.refusal(408) }) { server, manager in
            Self.retrying(manager)
            let response = try await manager.responseOfAnyStatus(for: Request(url: server.baseURL))
            #expect(response.response.status.code == 408)
            #expect(Call.text(response) == "You took too long!")
            #expect(server.receivedHeads.count == 2)
        }
    }

    // OkHttp: maxUnavailableTimeoutRetries
    @Test func maxUnavailableTimeoutRetries() async throws {
        try await Call.overHTTP1({ _, _, _ in Self.refusal(503, retryAfter: "0") }) { server, manager in
            Self.retrying(manager)
            let response = try await manager.responseOfAnyStatus(for: Request(url: server.baseURL))
            #expect(response.response.status.code == 503)
            #expect(server.receivedHeads.count == 2)
        }
    }

    // OkHttp: retryOnUnavailableWith0RetryAfter
    @Test func retryOnUnavailableWith0RetryAfter() async throws {
        try await Call.overHTTP1({ connection, _, _ in connection == 0 ? Self.refusal(503, retryAfter: "0") : .respond(Self.ok("Body")) }) {
            server, manager in
            Self.retrying(manager)
            let response = try await manager.responseOfAnyStatus(for: Request(url: server.baseURL))
            #expect(Call.text(response) == "Body")
        }
    }

    /// A 503 asking for a retry at once, kept alive, then `thank you for retrying`.
    static func pleaseRetry(_ connection: Int, _ request: Int, _ head: String) -> ScriptedHTTPServer.Action {
        request == 0 && connection == 0
            ? .respond(Self.ok("please retry", "Retry-After: 0\r\n").replacingOccurrences(of: "200 OK", with: "503 Service Unavailable"))
            : .respond(Self.ok("thank you for retrying"))
    }

    /// OkHttp's body that writes `attempt N`, N counting the sends.
    final class Attempts: Sendable {
        let count = NIOLockedValueBox(0)
        func next() -> ByteBuffer {
            let attempt = self.count.withLockedValue { count -> Int in
                defer { count += 1 }
                return count
            }
            return ByteBuffer(string: "attempt \(attempt)")
        }
    }

    // OkHttp: canRetryNormalRequestBody
    @Test func canRetryNormalRequestBody() async throws {
        try await Call.overHTTP1(Self.pleaseRetry) { server, manager in
            Self.retrying(manager, post: true)
            let attempts = Attempts()
            let body = RequestBody.replayableStream(length: .known(9)) {
                let chunk = attempts.next()
                return AsyncThrowingStream<ByteBuffer, any Error> { continuation in
                    continuation.yield(chunk)
                    continuation.finish()
                }
            }
            let response = try await manager.responseOfAnyStatus(for: Request(method: .post, url: server.baseURL, body: body))
            #expect(response.response.status.code == 200)
            #expect(Call.text(response) == "thank you for retrying")
            #expect(server.receivedBodyLengths == [9, 9])
            #expect(attempts.count.withLockedValue { $0 } == 2)
        }
    }

    // OkHttp: cannotRetryOneShotRequestBody
    @Test func cannotRetryOneShotRequestBody() async throws {
        // A one-shot stream cannot be sent again: the 503 is the answer, however willing the policy.
        try await Call.overHTTP1(Self.pleaseRetry) { server, manager in
            Self.retrying(manager, post: true)
            let response = try await manager.responseOfAnyStatus(for: Request(method: .post, url: server.baseURL, body: oneShotBody("attempt 0")))
            #expect(response.response.status.code == 503)
            #expect(Call.text(response) == "please retry")
            #expect(server.receivedBodyLengths == [9])
        }
    }
}
