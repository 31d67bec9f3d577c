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

/// Twins of the redirect tests of OkHttp's `CallTest`, and of the rules of OkHttp's
/// `RetryAndFollowUpInterceptor` those tests rely on (307/308, a missing or unusable `Location`,
/// one-shot bodies: marked "OkHttp's rule"), over real sockets: two TestServers play
/// MockWebServer's `server` and `server2` (each a queue of scripted responses, whatever the path),
/// `server2` on another loopback address (127.0.0.2), so another host, not only another port.
///
/// OkHttp's `priorResponse` chain is Courier's ``TaskMetrics/transactions`` (each hop's request
/// and response head); MockWebServer's `sequenceNumber` (0 on a new connection) is
/// ``TransactionMetrics/isReusedConnection`` and ``TestServer/connectionCount``.
///
/// Where Courier answers otherwise on purpose, the test asserts Courier's answer and says what
/// OkHttp expects ("OkHttp expects") and the rule Courier follows (URLSession's, Fetch's).
@Suite("Conformance: OkHttp CallTest redirects")
struct OkHttpRedirectTests {
    // MARK: MockWebServer on TestServer

    /// The paths OkHttp's tests (and these) request.
    static let paths = ["/", "/a", "/b", "/c", "/page1", "/page2", "/x/y/z", "/x/y/c", "/x/c"] + (0...25).map { "/\($0)" }

    struct Harness {
        let server: MockWebServer
        let server2: MockWebServer
        let manager: HTTPSessionManager

        /// Sends `request`; any status is a response (OkHttp's `execute()`).
        func send(_ request: Request) async throws -> DataResponse<Data> {
            try await self.manager.responseOfAnyStatus(for: request)
        }

        /// OkHttp's `executeSynchronously(path)`: a GET of `path` on `server`.
        func get(_ path: String, policy: NIOEngine.RedirectPolicy? = nil) async throws -> DataResponse<Data> {
            var request = Request(url: self.server.url(path))
            request.options.redirectPolicy = policy
            return try await self.send(request)
        }
    }

    static func mock(body: String = "", code: Int = 200, _ headers: [(String, String)] = []) -> TestServer.Response {
        var fields = HTTPFields()
        for (name, value) in headers { fields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
        return TestServer.Response(status: HTTPResponse.Status(code: code), headerFields: fields, body: Data(body.utf8))
    }

    /// Runs `body` with a MockWebServer on `host` answering ``paths``.
    static func withMock<T>(_ host: String, _ body: (MockWebServer) async throws -> T) async throws -> T {
        try await MockWebServer.with(host: host, paths: Self.paths, body)
    }

    static func run(
        configuration: SessionConfiguration = .default,
        _ body: (Harness) async throws -> Void
    ) async throws {
        try await Self.withMock("127.0.0.1") { server in
            try await Self.withMock("127.0.0.2") { server2 in
                try await withManager(baseURL: nil, configuration: configuration) { manager in
                    try await body(Harness(server: server, server2: server2, manager: manager))
                }
            }
        }
    }

    static func text(_ response: DataResponse<Data>) -> String { String(decoding: response.value, as: UTF8.self) }

    static func field(_ request: TestServer.Request?, _ name: String) -> String? {
        request?.headerFields[HTTPField.Name(name)!]
    }

    // MARK: CallTest

    // OkHttp: redirect
    @Test func redirect() async throws {
        try await Self.run { h in
            h.server.enqueue(Self.mock(body: "/a has moved!", code: 301, [("Location", "/b"), ("Test", "Redirect from /a to /b")]))
            h.server.enqueue(Self.mock(body: "/b has moved!", code: 302, [("Location", "/c"), ("Test", "Redirect from /b to /c")]))
            h.server.enqueue(Self.mock(body: "C"))
            let response = try await h.get("/a")
            #expect(response.response.status.code == 200)
            #expect(Self.text(response) == "C")
            // The prior responses: 302 (from /b), then 301 (from /a).
            let hops = try #require(response.metrics).transactions
            #expect(hops.map { $0.response?.status.code } == [301, 302, 200])
            #expect(hops[1].response?.headerFields[HTTPField.Name("Test")!] == "Redirect from /b to /c")
            #expect(hops[0].response?.headerFields[HTTPField.Name("Test")!] == "Redirect from /a to /b")
            #expect(response.metrics?.redirectCount == 2)
            // New connection, then reused, then reused again.
            #expect(hops.map(\.isReusedConnection) == [false, true, true])
            #expect(h.server.server.connectionCount == 1)
            #expect(h.server.requests.map(\.path) == ["/a", "/b", "/c"])
        }
    }

    // OkHttp: redirect_Async (the callback API)
    @Test func redirect_Async() async throws {
        try await Self.run { h in
            h.server.enqueue(Self.mock(body: "/a has moved!", code: 301, [("Location", "/b")]))
            h.server.enqueue(Self.mock(body: "/b has moved!", code: 302, [("Location", "/c")]))
            h.server.enqueue(Self.mock(body: "C"))
            h.manager.responseSerializer = DataResponseSerializer()
            let (status, body): (Int?, Data?) = await withCheckedContinuation { continuation in
                h.manager.dataTask(with: Request(url: h.server.url("/a"))) { response, object, _ in
                    continuation.resume(returning: (response?.status.code, object as? Data))
                }.resume()
            }
            #expect(status == 200)
            #expect(body.map { String(decoding: $0, as: UTF8.self) } == "C")
            #expect(h.server.server.connectionCount == 1)
            #expect(h.server.requests.map(\.path) == ["/a", "/b", "/c"])
        }
    }

    // OkHttp: postRedirectsToGet
    @Test func postRedirectsToGet() async throws {
        try await Self.run { h in
            h.server.enqueue(Self.mock(body: "This page has moved!", code: 302, [("Location", "/page2")]))
            h.server.enqueue(Self.mock(body: "Page 2"))
            var request = Request(method: .post, url: h.server.url("/page1"), body: .data(Data("Request Body".utf8)))
            request.headerFields[.contentType] = "text/plain; charset=utf-8"
            let response = try await h.send(request)
            #expect(Self.text(response) == "Page 2")
            let requests = h.server.requests
            #expect(requests.count == 2)
            #expect(requests[0].method == .post && requests[0].path == "/page1")
            #expect(String(decoding: requests[0].body, as: UTF8.self) == "Request Body")
            #expect(requests[1].method == .get && requests[1].path == "/page2")
            #expect(requests[1].body.isEmpty)
            // OkHttp drops Content-Type, Content-Length and Transfer-Encoding with the body.
            #expect(Self.field(requests[1], "Content-Type") == nil)
            #expect(Self.field(requests[1], "Content-Length") == nil)
            #expect(Self.field(requests[1], "Transfer-Encoding") == nil)
        }
    }

    // OkHttp: propfindRedirectsToPropfindAndMaintainsRequestBody,
    // queryRedirectsToQueryAndMaintainsRequestBodyOnMovedTemp,
    // queryRedirectsToQueryAndMaintainsRequestBodyOnMovedPerm, queryRedirectsToGetAndDropsRequestBodyOnSeeOther
    // A method with a body other than POST (PROPFIND; QUERY, the safe method with a body,
    // draft-ietf-httpbis-safe-method-w-body) keeps its method and body through a 301 or 302; a
    // 303 makes any of them a GET without a body.
    @Test(arguments: [("PROPFIND", 302, "PROPFIND"), ("QUERY", 301, "QUERY"), ("QUERY", 302, "QUERY"), ("QUERY", 303, "GET")])
    func aMethodWithABodyRedirects(_ sent: String, _ code: Int, _ followed: String) async throws {
        try await Self.run { h in
            h.server.enqueue(Self.mock(body: "This page has moved!", code: code, [("Location", "/page2")]))
            h.server.enqueue(Self.mock(body: "Page 2"))
            var request = Request(method: HTTPRequest.Method(sent)!, url: h.server.url("/page1"), body: .data(Data("Request Body".utf8)))
            request.headerFields[.contentType] = "text/plain; charset=utf-8"
            let response = try await h.send(request)
            #expect(Self.text(response) == "Page 2")
            let requests = h.server.requests
            #expect(requests.map(\.method.rawValue) == [sent, followed])
            #expect(requests.map(\.path) == ["/page1", "/page2"])
            #expect(requests.map { String(decoding: $0.body, as: UTF8.self) } == ["Request Body", followed == "GET" ? "" : "Request Body"])
        }
    }

    // OkHttp: redirectsDoNotIncludeTooManyCookies
    @Test func redirectsDoNotIncludeTooManyCookies() async throws {
        let storage = MemoryCookieStorage()
        var configuration = SessionConfiguration.default
        configuration.httpCookieStorage = storage
        try await Self.run(configuration: configuration) { h in
            h.server2.enqueue(Self.mock(body: "Page 2"))
            h.server.enqueue(Self.mock(code: 302, [("Location", h.server2.url("/").absoluteString)]))
            storage.storeCookies(fromSetCookieFields: ["c=cookie; Path=/"], for: h.server.url("/"))
            let response = try await h.get("/page1")
            #expect(Self.text(response) == "Page 2")
            #expect(Self.field(h.server.requests.first, "Cookie") == "c=cookie")
            #expect(Self.field(h.server2.requests.first, "Cookie") == nil)
        }
    }

    /// OkHttp's test has a cookie jar only; a `Cookie` field the caller set on the request is
    /// dropped too on the way to another origin by Courier (OkHttp keeps a caller's header fields:
    /// "OkHttp expects" the field on `server2`; Courier follows Fetch and curl, which do not send
    /// one origin's cookies to another).
    // OkHttp: redirectsDoNotIncludeTooManyCookies (a caller's Cookie field)
    @Test func redirectsDoNotIncludeTooManyCookies_callerField() async throws {
        try await Self.run { h in
            h.server2.enqueue(Self.mock(body: "Page 2"))
            h.server.enqueue(Self.mock(code: 302, [("Location", h.server2.url("/").absoluteString)]))
            var request = Request(url: h.server.url("/page1"))
            request.headerFields[.cookie] = "c=cookie"
            let response = try await h.send(request)
            #expect(Self.text(response) == "Page 2")
            #expect(Self.field(h.server.requests.first, "Cookie") == "c=cookie")
            #expect(Self.field(h.server2.requests.first, "Cookie") == nil)
        }
    }

    /// OkHttp's test gets its `Authorization` from an authenticator after a 401; here the caller
    /// sets it (what the authenticator's retry sends), and the 302 to another host drops it.
    // OkHttp: redirectsDoNotIncludeTooManyAuthHeaders
    @Test func redirectsDoNotIncludeTooManyAuthHeaders() async throws {
        try await Self.run { h in
            h.server2.enqueue(Self.mock(body: "Page 2"))
            h.server.enqueue(Self.mock(code: 302, [("Location", h.server2.url("/b").absoluteString)]))
            var request = Request(url: h.server.url("/a"))
            request.headerFields[.authorization] = "Basic amVzc2U6c2VjcmV0"
            let response = try await h.send(request)
            #expect(Self.text(response) == "Page 2")
            #expect(Self.field(h.server.requests.first, "Authorization") == "Basic amVzc2U6c2VjcmV0")
            let redirectRequest = try #require(h.server2.requests.first)
            #expect(Self.field(redirectRequest, "Authorization") == nil)
            #expect(redirectRequest.path == "/b")
        }
    }

    /// The same origin keeps `Authorization` (OkHttp's rule: it is dropped only when the
    /// connection cannot be reused, another scheme, host or port).
    // OkHttp's rule: RetryAndFollowUpInterceptor.buildRedirectRequest (same host)
    @Test func sameOriginRedirectKeepsAuthorization() async throws {
        try await Self.run { h in
            h.server.enqueue(Self.mock(code: 302, [("Location", "/b")]))
            h.server.enqueue(Self.mock(body: "B"))
            var request = Request(url: h.server.url("/a"))
            request.headerFields[.authorization] = "Basic amVzc2U6c2VjcmV0"
            request.headerFields[HTTPField.Name("X-Custom")!] = "kept"
            _ = try await h.send(request)
            let requests = h.server.requests
            #expect(requests.map { Self.field($0, "Authorization") } == ["Basic amVzc2U6c2VjcmV0", "Basic amVzc2U6c2VjcmV0"])
            #expect(requests.map { Self.field($0, "X-Custom") } == ["kept", "kept"])
        }
    }

    /// A redirect to the same host on another port is another origin: `Authorization` goes too
    /// (OkHttp: another port cannot reuse the connection, so the same).
    // OkHttp's rule: RetryAndFollowUpInterceptor.buildRedirectRequest (another port)
    @Test func redirectToAnotherPortDropsAuthorization() async throws {
        try await Self.run { h in
            // A third server on server's host (127.0.0.1), on a port of its own.
            try await Self.withMock("127.0.0.1") { third in
                third.enqueue(Self.mock(body: "third"))
                h.server.enqueue(Self.mock(code: 307, [("Location", third.url("/b").absoluteString)]))
                var request = Request(url: h.server.url("/a"))
                request.headerFields[.authorization] = "Bearer t"
                let response = try await h.send(request)
                #expect(Self.text(response) == "third")
                #expect(response.request.url == third.url("/b"))
                #expect(Self.field(third.requests.first, "Authorization") == nil)
            }
        }
    }

    /// Courier's default allows 16 redirects (URLSession's), so OkHttp's 20 need a policy of 20.
    // OkHttp: follow20Redirects
    @Test func follow20Redirects() async throws {
        try await Self.run { h in
            for i in 0...19 {
                h.server.enqueue(Self.mock(body: "Redirecting to /\(i + 1)", code: 301, [("Location", "/\(i + 1)")]))
            }
            h.server.enqueue(Self.mock(body: "Success!"))
            let response = try await h.get("/0", policy: .follow(max: 20, allowCycles: true))
            #expect(response.response.status.code == 200)
            #expect(Self.text(response) == "Success!")
            #expect(response.metrics?.redirectCount == 20)
        }
    }

    // OkHttp: follow20Redirects_Async (the callback API)
    @Test func follow20Redirects_Async() async throws {
        try await Self.run { h in
            for i in 0...19 {
                h.server.enqueue(Self.mock(body: "Redirecting to /\(i + 1)", code: 301, [("Location", "/\(i + 1)")]))
            }
            h.server.enqueue(Self.mock(body: "Success!"))
            h.manager.responseSerializer = DataResponseSerializer()
            var request = Request(url: h.server.url("/0"))
            request.options.redirectPolicy = .follow(max: 20, allowCycles: true)
            let (status, body): (Int?, Data?) = await withCheckedContinuation { continuation in
                h.manager.dataTask(with: request) { response, object, _ in
                    continuation.resume(returning: (response?.status.code, object as? Data))
                }.resume()
            }
            #expect(status == 200)
            #expect(body.map { String(decoding: $0, as: UTF8.self) } == "Success!")
        }
    }

    /// OkHttp fails with "Too many follow-up requests: 21"; Courier with `.tooManyRedirects`.
    // OkHttp: doesNotFollow21Redirects
    @Test func doesNotFollow21Redirects() async throws {
        try await Self.run { h in
            for i in 0...20 {
                h.server.enqueue(Self.mock(body: "Redirecting to /\(i + 1)", code: 301, [("Location", "/\(i + 1)")]))
            }
            let error = await #expect(throws: CourierError.self) {
                try await h.get("/0", policy: .follow(max: 20, allowCycles: true))
            }
            #expect(error?.code == .tooManyRedirects)
            // The 21st redirect arrived and was not followed.
            #expect(h.server.server.requestCount == 21)
        }
    }

    // OkHttp: doesNotFollow21Redirects_Async (the callback API)
    @Test func doesNotFollow21Redirects_Async() async throws {
        try await Self.run { h in
            for i in 0...20 {
                h.server.enqueue(Self.mock(body: "Redirecting to /\(i + 1)", code: 301, [("Location", "/\(i + 1)")]))
            }
            var request = Request(url: h.server.url("/0"))
            request.options.redirectPolicy = .follow(max: 20, allowCycles: true)
            let code: CourierError.Code? = await withCheckedContinuation { continuation in
                h.manager.dataTask(with: request) { _, _, error in continuation.resume(returning: error?.code) }.resume()
            }
            #expect(code == .tooManyRedirects)
        }
    }

    /// Courier's default, 16 (URLSession's): the 17th redirect fails where OkHttp follows up to 20.
    // OkHttp: follow20Redirects / doesNotFollow21Redirects (Courier's default limit)
    @Test func defaultLimitIs16Redirects() async throws {
        try await Self.run { h in
            for i in 0...15 {
                h.server.enqueue(Self.mock(code: 301, [("Location", "/\(i + 1)")]))
            }
            h.server.enqueue(Self.mock(body: "Success!"))
            let answer = try await h.get("/0")
            #expect(Self.text(answer) == "Success!")
            for i in 0...16 {
                h.server.enqueue(Self.mock(code: 301, [("Location", "/\(i + 1)")]))
            }
            h.server.enqueue(Self.mock(body: "OkHttp would get here"))
            let error = await #expect(throws: CourierError.self) { try await h.get("/0") }
            #expect(error?.code == .tooManyRedirects)
        }
    }

    // OkHttp: setFollowRedirectsFalse (Courier: the request's `.doNotFollow` redirector)
    @Test func setFollowRedirectsFalse() async throws {
        try await Self.run { h in
            h.server.enqueue(Self.mock(body: "A", code: 302, [("Location", "/b")]))
            h.server.enqueue(Self.mock(body: "B"))
            var request = Request(url: h.server.url("/a"))
            request.redirector = .doNotFollow
            let response = try await h.send(request)
            #expect(response.response.status.code == 302)
            #expect(Self.text(response) == "A")
            #expect(h.server.server.requestCount == 1)
        }
    }

    // OkHttp: setFollowRedirectsFalse (Courier: RequestOptions.redirectPolicy .disallow)
    @Test func setFollowRedirectsFalse_policy() async throws {
        try await Self.run { h in
            h.server.enqueue(Self.mock(body: "A", code: 302, [("Location", "/b")]))
            h.server.enqueue(Self.mock(body: "B"))
            let response = try await h.get("/a", policy: .disallow)
            #expect(response.response.status.code == 302)
            #expect(Self.text(response) == "A")
            #expect(h.server.server.requestCount == 1)
        }
    }

    // OkHttp: setFollowRedirectsFalse (Courier: the session's hook returns nil)
    @Test func setFollowRedirectsFalse_sessionHook() async throws {
        try await Self.run { h in
            h.server.enqueue(Self.mock(body: "A", code: 302, [("Location", "/b")]))
            h.server.enqueue(Self.mock(body: "B"))
            var hooks = h.manager.hooks
            hooks.taskWillPerformHTTPRedirection = { _, _, _, _ in nil }
            h.manager.hooks = hooks
            let response = try await h.get("/a")
            #expect(response.response.status.code == 302)
            #expect(Self.text(response) == "A")
            #expect(h.server.server.requestCount == 1)
        }
    }

    /// The body of an intermediate hop is not the response's: only the final one is read into it
    /// (OkHttp's prior response bodies are unreadable); the head of each hop stays in the metrics.
    // OkHttp: priorResponseBodyNotReadable
    @Test func priorResponseBodyNotReadable() async throws {
        try await Self.run { h in
            h.server.enqueue(Self.mock(body: "/a has moved!", code: 301, [
                ("Location", "/b"), ("Content-Type", "text/plain; charset=UTF-8"), ("Test", "Redirect from /a to /b"),
            ]))
            h.server.enqueue(Self.mock(body: "this is the redirect target"))
            let response = try await h.get("/")
            #expect(Self.text(response) == "this is the redirect target")
            let prior = try #require(response.metrics?.transactions.first?.response)
            #expect(prior.headerFields[.contentType] == "text/plain; charset=UTF-8")
            #expect(response.data == Data("this is the redirect target".utf8))
        }
    }

    // MARK: OkHttp's rules (RetryAndFollowUpInterceptor), not tests of CallTest

    /// OkHttp: a 303 to a POST is a GET without the body.
    @Test func post303RedirectsToGet() async throws {
        try await Self.run { h in
            h.server.enqueue(Self.mock(code: 303, [("Location", "/page2")]))
            h.server.enqueue(Self.mock(body: "Page 2"))
            let request = Request(method: .post, url: h.server.url("/page1"), body: .data(Data("Request Body".utf8)))
            let answer = try await h.send(request)
            #expect(Self.text(answer) == "Page 2")
            let requests = h.server.requests
            #expect(requests.map(\.method) == [.post, .get])
            #expect(requests[1].body.isEmpty)
            #expect(Self.field(requests[1], "Content-Length") == nil)
        }
    }

    /// OkHttp: a 301 to a POST is a GET without the body (as the 302 of `postRedirectsToGet`).
    @Test func post301RedirectsToGet() async throws {
        try await Self.run { h in
            h.server.enqueue(Self.mock(code: 301, [("Location", "/page2")]))
            h.server.enqueue(Self.mock(body: "Page 2"))
            let request = Request(method: .post, url: h.server.url("/page1"), body: .data(Data("Request Body".utf8)))
            let answer = try await h.send(request)
            #expect(Self.text(answer) == "Page 2")
            #expect(h.server.requests.map(\.method) == [.post, .get])
            #expect(h.server.requests[1].body.isEmpty)
        }
    }

    /// OkHttp: a 307 or 308 keeps the method and the body.
    @Test(arguments: [307, 308])
    func post307And308KeepMethodAndBody(code: Int) async throws {
        try await Self.run { h in
            h.server.enqueue(Self.mock(body: "moved", code: code, [("Location", "/page2")]))
            h.server.enqueue(Self.mock(body: "Page 2"))
            var request = Request(method: .post, url: h.server.url("/page1"), body: .data(Data("Request Body".utf8)))
            request.headerFields[.contentType] = "text/plain; charset=utf-8"
            let answer = try await h.send(request)
            #expect(Self.text(answer) == "Page 2")
            let requests = h.server.requests
            #expect(requests.map(\.method) == [.post, .post])
            #expect(requests.map(\.path) == ["/page1", "/page2"])
            #expect(requests.map { String(decoding: $0.body, as: UTF8.self) } == ["Request Body", "Request Body"])
            #expect(Self.field(requests[1], "Content-Type") == "text/plain; charset=utf-8")
            #expect(Self.field(requests[1], "Content-Length") == "12")
        }
    }

    /// OkHttp turns every method that permits a body, but PROPFIND, into a GET on a 301, 302 or
    /// 303 (`HttpMethod.redirectsToGet`). OkHttp expects `GET /page2` with no body for a PUT,
    /// PATCH or DELETE on a 301 or 302; Courier keeps the method and the body, as Fetch (only a
    /// POST becomes a GET on a 301 or 302) and URLSession do. On a 303 both make a GET.
    @Test(arguments: [("PUT", 301), ("PUT", 302), ("PATCH", 302), ("DELETE", 301), ("PUT", 303)])
    func nonPostMethodsOn301And302(method: String, code: Int) async throws {
        try await Self.run { h in
            h.server.enqueue(Self.mock(code: code, [("Location", "/page2")]))
            h.server.enqueue(Self.mock(body: "Page 2"))
            let request = Request(method: HTTPRequest.Method(method)!, url: h.server.url("/page1"), body: .data(Data("abc".utf8)))
            let answer = try await h.send(request)
            #expect(Self.text(answer) == "Page 2")
            let second = try #require(h.server.requests.last)
            if code == 303 {
                #expect(second.method == .get)
                #expect(second.body.isEmpty)
            } else {
                // OkHttp expects GET without a body here.
                #expect(second.method.rawValue == method)
                #expect(String(decoding: second.body, as: UTF8.self) == "abc")
            }
        }
    }

    /// OkHttp: HEAD stays HEAD on a 303 (it does not permit a body, so it is never changed).
    @Test func head303StaysHead() async throws {
        try await Self.run { h in
            h.server.enqueue(Self.mock(code: 303, [("Location", "/b")]))
            h.server.enqueue(Self.mock())
            let response = try await h.send(Request(method: .head, url: h.server.url("/a")))
            #expect(response.response.status.code == 200)
            #expect(h.server.requests.map(\.method) == [.head, .head])
        }
    }

    /// OkHttp (`followUpRequest`): a follow-up whose body is one-shot is not sent; the 307 is the
    /// response. Courier: a streamed body (`RequestBody.stream`) cannot be sent again.
    @Test(arguments: [307, 308])
    func oneShotBodyIsNotReplayedOn307And308(code: Int) async throws {
        try await Self.run { h in
            h.server.enqueue(Self.mock(body: "moved", code: code, [("Location", "/page2")]))
            h.server.enqueue(Self.mock(body: "Page 2"))
            let body = AsyncThrowingStream<ByteBuffer, any Error> { continuation in
                continuation.yield(ByteBuffer(string: "once"))
                continuation.finish()
            }
            let request = Request(method: .post, url: h.server.url("/page1"), body: .stream(body, length: .known(4)))
            let response = try await h.send(request)
            #expect(response.response.status.code == code)
            #expect(Self.text(response) == "moved")
            #expect(h.server.server.requestCount == 1)
            #expect(h.server.requests.first.map { String(decoding: $0.body, as: UTF8.self) } == "once")
        }
    }

    /// A replayable stream is sent again on a 307.
    @Test func replayableStreamIsReplayedOn307() async throws {
        try await Self.run { h in
            h.server.enqueue(Self.mock(code: 307, [("Location", "/page2")]))
            h.server.enqueue(Self.mock(body: "Page 2"))
            let request = Request(method: .post, url: h.server.url("/page1"), body: .replayableStream(length: .known(5)) {
                AsyncThrowingStream<ByteBuffer, any Error> { continuation in
                    continuation.yield(ByteBuffer(string: "again"))
                    continuation.finish()
                }
            })
            let answer = try await h.send(request)
            #expect(Self.text(answer) == "Page 2")
            #expect(h.server.requests.map { String(decoding: $0.body, as: UTF8.self) } == ["again", "again"])
        }
    }

    /// A one-shot body on a 302 POST: the follow-up is a GET without a body, so it is followed
    /// (OkHttp: the follow-up has no body, so nothing one-shot stops it).
    @Test func oneShotBodyPost302IsFollowedAsGet() async throws {
        try await Self.run { h in
            h.server.enqueue(Self.mock(code: 302, [("Location", "/page2")]))
            h.server.enqueue(Self.mock(body: "Page 2"))
            let body = AsyncThrowingStream<ByteBuffer, any Error> { continuation in
                continuation.yield(ByteBuffer(string: "once"))
                continuation.finish()
            }
            let request = Request(method: .post, url: h.server.url("/page1"), body: .stream(body, length: .known(4)))
            let answer = try await h.send(request)
            #expect(Self.text(answer) == "Page 2")
            #expect(h.server.requests.map(\.method) == [.post, .get])
        }
    }

    /// OkHttp: a 3xx without `Location` is the response.
    @Test(arguments: [301, 302, 303, 307, 308])
    func redirectWithoutLocationIsTheResponse(code: Int) async throws {
        try await Self.run { h in
            h.server.enqueue(Self.mock(body: "no location", code: code))
            h.server.enqueue(Self.mock(body: "unreachable"))
            let response = try await h.get("/a")
            #expect(response.response.status.code == code)
            #expect(Self.text(response) == "no location")
            #expect(h.server.server.requestCount == 1)
        }
    }

    /// OkHttp: a `Location` that is not an http or https URL (`HttpUrl.resolve` gives null) leaves
    /// the 3xx as the response.
    @Test(arguments: ["ftp://example.com/file", "mailto:a@example.com", "file:///etc/passwd"])
    func redirectToUnsupportedSchemeIsTheResponse(location: String) async throws {
        try await Self.run { h in
            h.server.enqueue(Self.mock(body: "elsewhere", code: 302, [("Location", location)]))
            let response = try await h.get("/a")
            #expect(response.response.status.code == 302)
            #expect(Self.text(response) == "elsewhere")
            #expect(h.server.server.requestCount == 1)
        }
    }

    /// OkHttp follows a 300 with a `Location` (`HTTP_MULT_CHOICE` is among its redirects);
    /// Courier, as Fetch (redirect statuses are 301, 302, 303, 307, 308), answers with the 300.
    /// OkHttp expects the 200 of `/b`.
    @Test func multipleChoicesIsTheResponse() async throws {
        try await Self.run { h in
            h.server.enqueue(Self.mock(body: "choose", code: 300, [("Location", "/b")]))
            h.server.enqueue(Self.mock(body: "B"))
            let response = try await h.get("/a")
            #expect(response.response.status.code == 300)
            #expect(Self.text(response) == "choose")
            #expect(h.server.server.requestCount == 1)
        }
    }

    /// A relative `Location` resolves against the request's URL (RFC 3986), as OkHttp's
    /// `HttpUrl.resolve`: `c` from `/x/y/z` is `/x/y/c`, `../c` is `/x/c`, `//host:port/b` keeps
    /// the scheme.
    @Test func relativeLocations() async throws {
        try await Self.run { h in
            h.server.enqueue(Self.mock(code: 302, [("Location", "c")]))
            h.server.enqueue(Self.mock(body: "C1"))
            let first = try await h.get("/x/y/z")
            #expect(Self.text(first) == "C1")
            #expect(first.request.url.path == "/x/y/c")

            h.server.enqueue(Self.mock(code: 302, [("Location", "../c")]))
            h.server.enqueue(Self.mock(body: "C2"))
            let second = try await h.get("/x/y/z")
            #expect(Self.text(second) == "C2")
            #expect(second.request.url.path == "/x/c")

            h.server.enqueue(Self.mock(code: 302, [("Location", "//127.0.0.2:\(h.server2.server.port)/b")]))
            h.server2.enqueue(Self.mock(body: "B"))
            let third = try await h.get("/a")
            #expect(Self.text(third) == "B")
            #expect(third.request.url == h.server2.url("/b"))
            #expect(h.server.requests.map(\.path) == ["/x/y/z", "/x/y/c", "/x/y/z", "/x/c", "/a"])
        }
    }

    /// The response is the last hop's: its URL, status, fields and body.
    @Test func finalResponseIsTheLastHops() async throws {
        try await Self.run { h in
            h.server.enqueue(Self.mock(body: "moved", code: 301, [("Location", h.server2.url("/b").absoluteString), ("X-Hop", "1")]))
            h.server2.enqueue(Self.mock(body: "B", [("X-Hop", "2")]))
            let response = try await h.get("/a")
            #expect(response.request.url == h.server2.url("/b"))
            #expect(response.response.headerFields[HTTPField.Name("X-Hop")!] == "2")
            #expect(Self.text(response) == "B")
            #expect(response.metrics?.transactions.map(\.request.url) == [h.server.url("/a"), h.server2.url("/b")])
        }
    }

    /// OkHttp has no cycle check (only its limit of 20); Courier's default allows cycles too.
    @Test func redirectBackToTheSameURLIsFollowed() async throws {
        try await Self.run { h in
            h.server.enqueue(Self.mock(code: 302, [("Location", "/a")]))
            h.server.enqueue(Self.mock(code: 302, [("Location", "/a")]))
            h.server.enqueue(Self.mock(body: "A"))
            let response = try await h.get("/a")
            #expect(Self.text(response) == "A")
            #expect(h.server.requests.map(\.path) == ["/a", "/a", "/a"])
        }
    }

    /// Two `Location` fields: OkHttp's `Response.header("Location")` is the last one, so OkHttp
    /// expects `/c`; Courier follows the first (curl's choice), `/b`.
    @Test func twoLocationFieldsFollowTheFirst() async throws {
        try await Self.run { h in
            h.server.enqueue(Self.mock(code: 302, [("Location", "/b"), ("Location", "/c")]))
            h.server.enqueue(Self.mock(body: "target"))
            let response = try await h.get("/a")
            #expect(Self.text(response) == "target")
            // OkHttp expects "/c".
            #expect(h.server.requests.map(\.path) == ["/a", "/b"])
        }
    }

    /// A 307 POST to another host keeps the method and the body, and drops `Authorization` and
    /// `Cookie` (OkHttp: the same, `Authorization` only; cookies come from its jar by URL).
    @Test func post307ToAnotherHostKeepsBodyDropsCredentials() async throws {
        try await Self.run { h in
            h.server.enqueue(Self.mock(code: 307, [("Location", h.server2.url("/b").absoluteString)]))
            h.server2.enqueue(Self.mock(body: "B"))
            var request = Request(method: .post, url: h.server.url("/a"), body: .data(Data("payload".utf8)))
            request.headerFields[.authorization] = "Bearer t"
            request.headerFields[.cookie] = "c=1"
            let answer = try await h.send(request)
            #expect(Self.text(answer) == "B")
            let second = h.server2.requests.first
            #expect(second?.method == .post)
            #expect(second.map { String(decoding: $0.body, as: UTF8.self) } == "payload")
            #expect(Self.field(second, "Authorization") == nil)
            #expect(Self.field(second, "Cookie") == nil)
        }
    }

    /// An empty `Location` is a same-document reference (RFC 3986 5.2.2: the request's own URL).
    /// OkHttp follows it (`HttpUrl.resolve("")` is the same URL) and expects "A" after a second
    /// GET of `/a`; Courier answers with the 302, as Go's client does (an empty `Location` is no
    /// `Location`): a server that sends one would loop a client that followed it.
    @Test func emptyLocationIsTheResponse() async throws {
        try await Self.run { h in
            h.server.enqueue(Self.mock(body: "again", code: 302, [("Location", "")]))
            h.server.enqueue(Self.mock(body: "A"))
            let response = try await h.get("/a")
            // OkHttp expects 200 "A" and two requests.
            #expect(response.response.status.code == 302)
            #expect(Self.text(response) == "again")
            #expect(h.server.requests.map(\.path) == ["/a"])
        }
    }

    /// A `Location` with a space: OkHttp's `HttpUrl` percent-encodes it; Courier too.
    @Test func locationWithASpaceIsEncoded() async throws {
        try await Self.run { h in
            h.server.server.route("/b c") { _ in Self.mock(body: "decoded path") }
            h.server.server.route("/b%20c") { _ in Self.mock(body: "encoded path") }
            h.server.enqueue(Self.mock(code: 302, [("Location", "/b c")]))
            let response = try await h.get("/a")
            #expect(response.response.status.code == 200)
            #expect(response.request.url.absoluteString.hasSuffix("/b%20c"))
            #expect(h.server.requests.last?.target == "/b%20c")
        }
    }
}
