// Ported from OkHttp's okhttp/src/jvmTest/kotlin/okhttp3/internal/http2/HttpOverHttp2Test.kt
// (https://github.com/square/okhttp), Copyright (C) 2013 Square, Inc.,
// licensed under the Apache License, Version 2.0.

import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP2
import Testing

/// Twins of `HttpOverHttp2Test`: HTTP features (bodies, timeouts, cache, cookies, redirects,
/// authentication, cancellation) and HTTP/2's own (flow control, resets, GOAWAY, SETTINGS, PING)
/// over real sockets, against a ``ScriptedHTTP2Server`` (HTTP/2 over TLS, `h2`). OkHttp runs each
/// case over TLS and over prior knowledge (`h2c`); Courier speaks HTTP/2 only over TLS (ALPN), so
/// each runs once.
///
/// OkHttp's `readTimeout` is Courier's ``SessionConfiguration/timeoutIntervalForRequest`` (or a
/// request's own ``RequestOptions/timeoutInterval``): the longest wait for the next bytes.
/// MockWebServer's `exchangeIndex` (0 on a new connection) is the ``ScriptedHTTP2Server``'s
/// connection count and each recorded request's connection. Reading part of a body and closing
/// it is ``SessionManager/stream(_:downloadProgress:gatheringBodiesUpTo:)`` and stopping its
/// iteration, or cancelling its task.
///
/// Where Courier answers otherwise on purpose, the test asserts Courier's answer, says what OkHttp
/// expects ("OkHttp expects") and the rule Courier follows. Each run checks afterwards that the
/// pool let go of every connection (``HTTP2PoolTests/withManager(_:connections:engine:configure:_:)``).
@Suite("Conformance: OkHttp HttpOverHttp2Test")
struct OkHttpHTTP2Tests {
    typealias Action = ScriptedHTTP2Server.Action

    /// Runs `body` with an HTTP/2 server answering as `script` says (and `atHead`, for requests
    /// with a body, as their HEADERS arrive) and a manager that trusts it.
    static func run(
        maximumStreams: Int = 100,
        extraSettings: [HTTP2Setting] = [],
        configure: (inout SessionConfiguration) -> Void = { _ in },
        atHead: (@Sendable (_ path: String) -> Action?)? = nil,
        _ script: @escaping @Sendable (_ index: Int, _ path: String) -> Action,
        _ body: (ScriptedHTTP2Server, HTTPSessionManager) async throws -> Void
    ) async throws {
        let server = try await ScriptedHTTP2Server.start(
            maximumStreams: maximumStreams, extraSettings: extraSettings, atHead: atHead, script: script)
        try await HTTP2PoolTests().withManager(server, configure: configure) { manager in
            try await body(server, manager)
        }
    }

    static func url(_ server: ScriptedHTTP2Server, _ path: String = "/") -> URL { OkHttpCallTests.url(server, path) }

    /// OkHttp's `execute()` of a GET: any status is a response. With `timeout`, OkHttp's
    /// `readTimeout` for this request alone (the others keep the session's 60 s: on two busy
    /// cores, a fresh connection's first answer has taken more than a second).
    static func get(
        _ server: ScriptedHTTP2Server, _ manager: HTTPSessionManager, _ path: String = "/", timeout: TimeInterval? = nil
    ) async throws -> DataResponse<Data> {
        try await manager.responseOfAnyStatus(for: Self.request(server, path, timeout: timeout))
    }

    /// A GET of `path`, with `timeout` as its own request timeout when given.
    static func request(_ server: ScriptedHTTP2Server, _ path: String = "/", timeout: TimeInterval? = nil) -> Request {
        var request = Request(url: Self.url(server, path))
        if let timeout { request.options.timeoutInterval = timeout }
        return request
    }

    static func text(_ response: DataResponse<Data>) -> String { OkHttpCallTests.text(response) }

    /// The rest of a streamed body, as text.
    static func read(_ body: ResponseBodyStream) async throws -> String {
        var bytes: [UInt8] = []
        for try await chunk in body { bytes += chunk.readableBytesView }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The error a streamed body's iteration throws, nil (and a recorded issue) when it ends.
    static func failure(of body: ResponseBodyStream, sourceLocation: SourceLocation = #_sourceLocation) async -> CourierError? {
        do {
            for try await _ in body {}
            Issue.record("the body ended without an error", sourceLocation: sourceLocation)
            return nil
        } catch {
            return error
        }
    }

    /// OkHttp's `"FGHIJ"` request body as a stream of one chunk, of `length`.
    static func streamedPost(_ url: URL, _ text: String, length: RequestBody.Length) -> Request {
        let body = OkHttpCallTests.StepwiseBody(steps: [{ ByteBuffer(string: text) }])
        var request = Request(method: .post, url: url, body: .stream(body, length: length))
        request.headerFields[.contentType] = "text/plain; charset=utf-8"
        return request
    }

    // MARK: Requests and responses

    // OkHttp: get
    @Test func get() async throws {
        try await Self.run({ _, _ in .respond("ABCDE") }) { server, manager async throws in
            let response = try await Self.get(server, manager, "/foo")
            #expect(Self.text(response) == "ABCDE")
            #expect(response.response.status.code == 200)
            #expect(response.metrics?.transactions.last?.networkProtocolName == "h2")
            let request = try #require(server.requests.first)
            #expect(request.value(of: ":method") == "GET")
            #expect(request.value(of: ":path") == "/foo")
            #expect(request.value(of: ":scheme") == "https")
            #expect(request.value(of: ":authority") == "localhost:\(server.port)")
        }
    }

    // OkHttp: get204Response
    @Test func get204Response() async throws {
        try await Self.run({ _, _ in .answer(status: 204) }) { server, manager async throws in
            let response = try await Self.get(server, manager, "/foo")
            #expect(response.value.isEmpty)
            #expect(response.response.status.code == 204)
            // No length of Courier's own in a head whose server gave none.
            #expect(response.response.headerFields[.contentLength] == nil)
            #expect(server.requests.first?.value(of: ":path") == "/foo")
        }
    }

    // OkHttp: head
    @Test func head() async throws {
        try await Self.run({ _, _ in .answer(status: 200, fields: [("content-length", "5")]) }) { server, manager async throws in
            let response = try await manager.responseOfAnyStatus(for: Request(method: .head, url: Self.url(server, "/foo")))
            #expect(response.value.isEmpty)
            // The length stays what the server said of the resource.
            #expect(response.response.headerFields[.contentLength] == "5")
            #expect(server.requests.first?.value(of: ":method") == "HEAD")
        }
    }

    // OkHttp: emptyResponse
    @Test func emptyResponse() async throws {
        try await Self.run({ _, _ in .answer(status: 200) }) { server, manager async throws in
            let response = try await manager.stream(Request(url: Self.url(server, "/foo")))
            var iterator = response.body.makeAsyncIterator()
            #expect(try await iterator.next() == nil)
        }
    }

    // OkHttp: noDefaultContentLengthOnStreamingPost
    @Test func noDefaultContentLengthOnStreamingPost() async throws {
        try await Self.run({ _, _ in .respond("ABCDE") }) { server, manager async throws in
            let response = try await manager.responseOfAnyStatus(for: Self.streamedPost(Self.url(server, "/foo"), "FGHIJ", length: .unknown))
            #expect(Self.text(response) == "ABCDE")
            let request = try #require(server.requests.first)
            #expect(request.value(of: ":method") == "POST")
            #expect(request.body == Array("FGHIJ".utf8))
            #expect(request.value(of: "content-length") == nil)
        }
    }

    // OkHttp: userSuppliedContentLengthHeader
    @Test func userSuppliedContentLengthHeader() async throws {
        try await Self.run({ _, _ in .respond("ABCDE") }) { server, manager async throws in
            let response = try await manager.responseOfAnyStatus(for: Self.streamedPost(Self.url(server, "/foo"), "FGHIJ", length: .known(5)))
            #expect(Self.text(response) == "ABCDE")
            let request = try #require(server.requests.first)
            #expect(request.body == Array("FGHIJ".utf8))
            #expect(request.value(of: "content-length") == "5")
        }
    }

    // OkHttp: closeAfterFlush
    @Test func closeAfterFlush() async throws {
        // OkHttp's body writes, flushes (a DATA frame as the window allows) and closes (an empty
        // DATA frame with END_STREAM); a body in memory is Courier's nearest: its bytes and its end.
        try await Self.run({ _, _ in .respond("ABCDE") }) { server, manager async throws in
            let response = try await manager.responseOfAnyStatus(for: OkHttpCallTests.post(Self.url(server, "/foo"), "FGHIJ"))
            #expect(Self.text(response) == "ABCDE")
            let request = try #require(server.requests.first)
            #expect(request.value(of: ":method") == "POST")
            #expect(request.body == Array("FGHIJ".utf8))
            #expect(request.value(of: "content-length") == "5")
            #expect(!request.headersEndedStream)
            #expect((1...2).contains(request.dataFrames), "\(request.dataFrames) DATA frames")
        }
    }

    // OkHttp: readAfterLastByte
    @Test func readAfterLastByte() async throws {
        try await Self.run({ _, _ in .respond("ABC") }) { server, manager async throws in
            let response = try await manager.stream(Request(url: Self.url(server)))
            var iterator = response.body.makeAsyncIterator()
            var bytes: [UInt8] = []
            while let chunk = try await iterator.next() { bytes += chunk.readableBytesView }
            #expect(bytes == Array("ABC".utf8))
            // Past the end, the body stays ended.
            #expect(try await iterator.next() == nil)
            #expect(try await iterator.next() == nil)
        }
    }

    // OkHttp: gzippedResponseBody
    @Test func gzippedResponseBody() async throws {
        let gzipped = try OkHttpCacheWireTests.gzip("ABCABCABC")
        try await Self.run({ _, _ in .answer(status: 200, fields: [("content-encoding", "gzip")], body: gzipped) }) { server, manager async throws in
            let response = try await Self.get(server, manager, "/r1")
            #expect(Self.text(response) == "ABCABCABC")
        }
    }

    // OkHttp: nonAsciiResponseHeader (its value)
    @Test func nonASCIIResponseFieldValue() async throws {
        // RFC 9113 8.2.1 forbids only NUL, CR and LF in a value: "α" (UTF-8) is taken.
        try await Self.run({ _, _ in .answer(status: 200, fields: [("alpha", "α")]) }) { server, manager async throws in
            let response = try await Self.get(server, manager)
            #expect(response.response.status.code == 200)
            let value = response.response.headerFields[HTTPField.Name("Alpha")!]
            #expect(value == "α" || value.map { Array($0.utf8) } == [0xCE, 0xB1], "\(String(describing: value))")
        }
    }

    // OkHttp: nonAsciiResponseHeader (its name)
    @Test func nonASCIIResponseFieldNameIsMalformed() async throws {
        // OkHttp expects `β: Beta` read leniently. RFC 9113 8.2.1: a name with a byte above 0x7F
        // makes the response malformed, a stream error (8.1.1): Courier fails the request and
        // resets the stream with PROTOCOL_ERROR; the connection goes on. (With END_STREAM on the
        // head, both sides have ended the stream and nothing is reset: nothing is left to stop.)
        // The head does not end the stream, so that the reset has a stream to end.
        let malformed = Action.respondWithBlock([(":status", "200"), ("β", "Beta")], endStream: false)
        try await Self.run({ index, _ in index == 0 ? malformed : .respond("next") }) { server, manager async throws in
            let error = await OkHttpCallTests.failure { try await Self.get(server, manager) }
            #expect(error?.code == .invalidResponse, "\(String(describing: error))")
            #expect(await server.changes.wait { server.resetsReceived == [.protocolError] }, "\(server.resetsReceived)")
            #expect(Self.text(try await Self.get(server, manager)) == "next")
            #expect(server.connectionCount == 1)
        }
    }

    // OkHttp: noDataFramesSentWithNullRequestBody
    @Test func noDataFramesSentWithNullRequestBody() async throws {
        try await Self.run({ _, _ in .respond("ABC") }) { server, manager async throws in
            let response = try await manager.responseOfAnyStatus(for: Request(method: .delete, url: Self.url(server)))
            #expect(Self.text(response) == "ABC")
            let request = try #require(server.requests.first)
            #expect(request.headersEndedStream, "HEADERS with END_STREAM")
            #expect(request.dataFrames == 0)
        }
    }

    // OkHttp: emptyDataFrameSentWithEmptyBody
    @Test func emptyBodyIsSentAsNoBody() async throws {
        // OkHttp expects HEADERS without END_STREAM and an empty DATA frame with it for
        // `RequestBody.EMPTY`. Courier sends an empty body as none: HEADERS with END_STREAM
        // (RFC 9113 8.1 allows either; the request's content is empty both ways).
        try await Self.run({ _, _ in .respond("ABC") }) { server, manager async throws in
            let response = try await manager.responseOfAnyStatus(for: Request(method: .delete, url: Self.url(server), body: .data(Data())))
            #expect(Self.text(response) == "ABC")
            let request = try #require(server.requests.first)
            #expect(request.body.isEmpty)
            #expect(request.headersEndedStream, "HEADERS with END_STREAM")
            #expect(request.dataFrames == 0)
        }
    }

    // OkHttp: domainFronting
    @Test func domainFronting() async throws {
        try await Self.run({ _, _ in .answer(status: 200) }) { server, manager async throws in
            var request = Request(url: Self.url(server))
            request.headerFields[HTTPField.Name("Host")!] = "privateobject.com"
            let response = try await manager.responseOfAnyStatus(for: request)
            #expect(response.value.isEmpty)
            let recorded = try #require(server.requests.first)
            #expect(recorded.value(of: ":authority") == "privateobject.com")
            #expect(recorded.value(of: "host") == nil, "no Host beside :authority")
        }
    }

    // MARK: HTTP features over HTTP/2

    // OkHttp: authenticate
    @Test func authenticate() async throws {
        let refusal = Action.answer(
            status: 401, fields: [("www-authenticate", #"Basic realm="protected area""#)], body: Array("Please authenticate.".utf8))
        try await Self.run({ index, _ in index == 0 ? refusal : .respond("Successful auth!") }) { server, manager async throws in
            let url = URL(string: "https://username:password@localhost:\(server.port)/")!
            let response = try await manager.responseOfAnyStatus(for: Request(url: url))
            #expect(Self.text(response) == "Successful auth!")
            let requests = server.requests
            try #require(requests.count == 2)
            #expect(requests[0].value(of: "authorization") == nil)
            #expect(requests[1].value(of: ":method") == "GET")
            #expect(requests[1].value(of: "authorization") == "Basic dXNlcm5hbWU6cGFzc3dvcmQ=")
        }
    }

    // OkHttp: redirect
    @Test func redirect() async throws {
        let moved = Action.answer(status: 302, fields: [("location", "/foo")], body: Array("This page has moved!".utf8))
        try await Self.run({ index, _ in index == 0 ? moved : .respond("This is the new location!") }) { server, manager async throws in
            let response = try await Self.get(server, manager)
            #expect(Self.text(response) == "This is the new location!")
            #expect(server.paths == ["/", "/foo"])
            #expect(server.connectionCount == 1)
        }
    }

    // OkHttp: responsesAreCached
    @Test func responsesAreCached() async throws {
        let cacheable = Action.answer(status: 200, fields: [("cache-control", "max-age=60")], body: Array("A".utf8))
        try await Self.run(configure: { $0.responseCache = ResponseCache() }, { _, _ in cacheable }) { server, manager async throws in
            for _ in 0..<3 {
                #expect(Self.text(try await Self.get(server, manager)) == "A")
            }
            #expect(server.streamCount == 1, "two of three from the cache")
        }
    }

    // OkHttp: conditionalCache
    @Test func conditionalCache() async throws {
        let tagged = Action.answer(status: 200, fields: [("etag", "v1")], body: Array("A".utf8))
        try await Self.run(configure: { $0.responseCache = ResponseCache() }, { index, _ in index == 0 ? tagged : .answer(status: 304) }) {
            server, manager async throws in
            #expect(Self.text(try await Self.get(server, manager)) == "A")
            let second = try await Self.get(server, manager)
            #expect(Self.text(second) == "A")
            #expect(second.response.status.code == 200)
            #expect(server.streamCount == 2)
            #expect(server.requests.last?.value(of: "if-none-match") == "v1")
        }
    }

    // OkHttp: responseCachedWithoutConsumingFullBody
    @Test func aBodyNotReadWholeIsNotCached() async throws {
        // OkHttp expects the second response from the cache ("ABCD"). Courier stores a streamed
        // response only once its body ended whole and was read (`SessionManager.stream`'s
        // contract): a consumer that stops leaves nothing stored, and the second request goes to
        // the network.
        try await Self.run(configure: { $0.responseCache = ResponseCache() }, { index, _ in
            .respondPartlyThenHold(part: index == 0 ? "AB" : "EF", rest: index == 0 ? "CD" : "GH")
        }) { server, manager async throws in
            let first = try await manager.stream(Request(url: Self.url(server)))
            var iterator = first.body.makeAsyncIterator()
            #expect(try await iterator.next().map { String(buffer: $0) } == "AB")
            first.task.cancel()
            server.releaseHeld(andLater: true)
            let second = try await Self.get(server, manager)
            #expect(Self.text(second) == "EFGH")
            #expect(server.streamCount == 2)
        }
    }

    // OkHttp: sendRequestCookies
    @Test func sendRequestCookies() async throws {
        let storage = MemoryCookieStorage()
        try await Self.run(configure: { $0.httpCookieStorage = storage }, { _, _ in .answer(status: 200) }) { server, manager async throws in
            storage.storeCookies(fromSetCookieFields: ["a=b"], for: Self.url(server))
            let response = try await Self.get(server, manager)
            #expect(response.value.isEmpty)
            #expect(server.requests.first?.value(of: "cookie") == "a=b")
        }
    }

    // OkHttp: receiveResponseCookies
    @Test func receiveResponseCookies() async throws {
        let storage = MemoryCookieStorage()
        try await Self.run(configure: { $0.httpCookieStorage = storage }, { _, _ in .answer(status: 200, fields: [("set-cookie", "a=b")]) }) {
            server, manager async throws in
            _ = try await Self.get(server, manager)
            let cookies = storage.cookies(for: Self.url(server))
            #expect(cookies.map { "\($0.name)=\($0.value)" } == ["a=b"])
            #expect(cookies.first?.path == "/")
        }
    }
}
