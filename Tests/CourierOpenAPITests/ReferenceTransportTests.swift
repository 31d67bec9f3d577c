import Courier
import CourierOpenAPI
import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import OpenAPIRuntime
import Testing

/// What a generated client relies on of its transport, pinned where ``CourierTransport`` does as
/// swift-openapi-async-http-client's `AsyncHTTPClientTransport` and swift-openapi-urlsession's
/// `URLSessionTransport` do (or, where it differs on purpose, as it does instead):
/// FINDINGS-59 lists the comparison item by item.
@Suite("CourierTransport does what the reference transports do for a generated client")
struct ReferenceTransportTests {
    @Test(
        "The server URL's path, then the request's path and query exactly as encoded: no double encoding, + and %2F kept, one slash at the join, the server URL's own query dropped"
    )
    func targetsOnTheWire() async throws {
        try await TestServer.withServer { server in
            let targets = NIOLockedValueBox<[String]>([])
            server.route("/api/v1/items/a%2Fb+c%20d%25") { request in
                targets.withLockedValue { $0.append(request.target) }
                return .text("ok")
            }
            try await withGeneratedClient(baseURL: server.baseURL) { _, manager in
                let transport = CourierTransport(manager: manager)
                let path = "/items/a%2Fb+c%20d%25?q=1+2%2B3&r=%2F&s=a%20b&t=%3D%26"
                let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: path)
                // TestServer's base URL ends with a slash.
                let root = server.baseURL.absoluteString
                for base in [root + "api/v1", root + "api/v1/", root + "api/v1?key=1"] {
                    let (response, _) = try await transport.send(request, body: nil, baseURL: URL(string: base)!, operationID: "items")
                    #expect(response.status == .ok, "\(base)")
                }
                #expect(targets.withLockedValue { $0 } == Array(repeating: "/api/v1" + path, count: 3))
            }
        }
    }

    @Test("A query value the runtime percent-encoded reaches the server as the runtime wrote it, and decodes to the value given")
    func runtimeEncodedQuery() async throws {
        try await TestServer.withServer { server in
            let paths = NIOLockedValueBox<[String]>([])
            let manager = SessionManager()
            let client = Client(
                serverURL: server.baseURL, transport: CourierTransport(manager: manager), middlewares: [PathRecorder(paths: paths)])
            defer { manager.invalidate(cancelingTasks: true) }
            let value = "a b+c/d&e=f?g#h%é"
            let echo = try await client.getJSON(query: .init(show: value)).ok.body.json
            let path = try #require(paths.withLockedValue { $0 }.first)
            #expect(path.contains("%2B") && path.contains("%2F") && path.contains("%25"), "the runtime encoded it: \(path)")
            #expect(echo.url.hasSuffix(path), "the server got \(echo.url), the runtime made \(path)")
            #expect(echo.args?.additionalProperties["show"] == value)
        }
    }

    @Test(
        "Request fields go out as given (repeated, in order, names in their case; no framing field for a GET without a body); repeated response fields come back each"
    )
    func fieldsPassThrough() async throws {
        try await TestServer.withServer { server in
            let received = NIOLockedValueBox<[HTTPRequest.Method: HTTPFields]>([:])
            let reply = HTTPField.Name("X-Reply")!
            server.route("/fields") { request in
                received.withLockedValue { $0[request.method] = request.headerFields }
                let fields: HTTPFields = [reply: "1", .setCookie: "a=1", reply: "2", .setCookie: "b=2"]
                return TestServer.Response(headerFields: fields, body: Data("ok".utf8))
            }
            try await withGeneratedClient(baseURL: server.baseURL) { _, manager in
                let transport = CourierTransport(manager: manager)
                var request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/fields")
                for (name, value) in [("X-Tag", "a"), ("x-tag", "b"), ("X-Other", "1"), ("X-TAG", "c, d")] {
                    request.headerFields.append(HTTPField(name: HTTPField.Name(name)!, value: value))
                }
                let (response, _) = try await transport.send(request, body: nil, baseURL: server.baseURL, operationID: "fields")
                #expect(response.headerFields[values: reply] == ["1", "2"])
                #expect(response.headerFields[values: .setCookie] == ["a=1", "b=2"])

                request.method = .post
                _ = try await transport.send(request, body: nil, baseURL: server.baseURL, operationID: "fields")

                let get = try #require(received.withLockedValue { $0[.get] })
                let sent = get.filter { $0.name.canonicalName.hasPrefix("x-") }.map { "\($0.name.rawName): \($0.value)" }
                #expect(sent == ["X-Tag: a", "x-tag: b", "X-Other: 1", "X-TAG: c, d"])
                #expect(get[.contentLength] == nil)
                #expect(get[.transferEncoding] == nil)
                // A POST without a body says so, as AsyncHTTPClient's does.
                let post = try #require(received.withLockedValue { $0[.post] })
                #expect(post[.contentLength] == "0")
                #expect(post[.transferEncoding] == nil)
            }
        }
    }

    /// How an upload's `HTTPBody` is made, and so how the transport sends it.
    enum UploadKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
        /// Iterable again, within the collected-body limit: sent as bytes.
        case collected
        /// Iterable again, over the limit: a replayable stream.
        case replayableStream
        /// Single-pass: a one-shot stream.
        case singlePass
        /// Iterable again, of unknown length: a replayable stream, chunked.
        case replayableUnknownLength
        /// Single-pass, of unknown length: a one-shot stream, chunked.
        case singlePassUnknownLength

        var testDescription: String { self.rawValue }

        var count: Int { self == .collected ? 32 << 10 : 256 << 10 }
        var knownLength: Bool { self != .replayableUnknownLength && self != .singlePassUnknownLength }

        var body: HTTPBody {
            let chunks = PatternChunks(count: self.count)
            let length: HTTPBody.Length = self.knownLength ? .known(Int64(self.count)) : .unknown
            switch self {
            case .collected, .replayableStream, .replayableUnknownLength:
                return HTTPBody(chunks, length: length, iterationBehavior: .multiple)
            case .singlePass, .singlePassUnknownLength:
                return HTTPBody(chunks, length: length, iterationBehavior: .single)
            }
        }
    }

    @Test("A request body of known length goes out with that Content-Length however it is sent, one of unknown length chunked", arguments: UploadKind.allCases)
    func uploadFraming(_ kind: UploadKind) async throws {
        try await TestServer.withServer { server in
            try await withGeneratedClient(baseURL: server.baseURL) { client, _ in
                let receipt = try await client.upload(body: .binary(kind.body)).ok.body.json
                #expect(receipt.size == Int64(kind.count))
                #expect(receipt.crc32 == patternCRC(count: kind.count))
                #expect(receipt.chunked == !kind.knownLength)
            }
        }
    }

    @Test("204 and 304 answer with no body (nil); a 200 of Content-Length 0 with an empty one; each task completes rather than being cancelled")
    func bodylessResponses() async throws {
        try await TestServer.withServer { server in
            server.route("/no-content") { _ in TestServer.Response(status: .noContent) }
            server.route("/not-modified") { _ in TestServer.Response(status: .notModified, headerFields: [.eTag: "\"1\""]) }
            server.route("/empty") { _ in TestServer.Response() }
            try await withGeneratedClient(baseURL: server.baseURL) { _, manager in
                let recorder = CompletionRecorder(manager)
                let transport = CourierTransport(manager: manager)
                func send(_ path: String) async throws -> (HTTPResponse, HTTPBody?) {
                    try await transport.send(
                        HTTPRequest(method: .get, scheme: nil, authority: nil, path: path), body: nil, baseURL: server.baseURL,
                        operationID: "bodyless")
                }
                let (noContent, noContentBody) = try await send("/no-content")
                #expect(noContent.status == .noContent)
                #expect(noContentBody == nil)
                let (notModified, notModifiedBody) = try await send("/not-modified")
                #expect(notModified.status == .notModified)
                #expect(notModifiedBody == nil)
                let (empty, emptyBody) = try await send("/empty")
                #expect(empty.status == .ok)
                let body = try #require(emptyBody)
                #expect(body.length == .known(0))
                #expect(try await Data(collecting: body, upTo: 10).isEmpty)
                await recorder.wait(for: 3)
                #expect(recorder.errors.count == 3)
                #expect(recorder.errors.allSatisfy { $0 == nil }, "\(recorder.errors)")
            }
        }
    }

    @Test(
        "A response body is single-pass, with its Content-Length as known length; one the session decompressed has an unknown length (the field counts the coded bytes) and reads decoded"
    )
    func responseBodyLengths() async throws {
        try await TestServer.withServer { server in
            try await withGeneratedClient(baseURL: server.baseURL) { _, manager in
                let transport = CourierTransport(manager: manager)
                func get(_ path: String) async throws -> (HTTPResponse, HTTPBody) {
                    let (head, body) = try await transport.send(
                        HTTPRequest(method: .get, scheme: nil, authority: nil, path: path), body: nil, baseURL: server.baseURL,
                        operationID: "get")
                    return (head, try #require(body))
                }
                let (plainHead, plain) = try await get("/courier/big/200000")
                #expect(plainHead.headerFields[.contentLength] == "200000")
                #expect(plain.length == .known(200_000))
                #expect(plain.iterationBehavior == .single)
                #expect(try await Data(collecting: plain, upTo: 1 << 20).count == 200_000)

                let (gzipHead, gzipped) = try await get("/gzip")
                #expect(gzipHead.headerFields[.contentEncoding] == "gzip")
                #expect(gzipHead.headerFields[.contentLength] != nil)
                #expect(gzipped.length == .unknown)
                #expect(gzipped.iterationBehavior == .single)
                let document = try JSONSerialization.jsonObject(with: try await Data(collecting: gzipped, upTo: 1 << 20))
                #expect((document as? [String: Any])?["gzipped"] as? Bool == true)
            }
        }
    }

    @Test("One transport serves many concurrent calls, each with its own answer")
    func concurrentCalls() async throws {
        try await TestServer.withServer { server in
            try await withGeneratedClient(baseURL: server.baseURL) { client, manager in
                let count = 48
                let shows = try await withThrowingTaskGroup(of: (Int, String?).self) { group in
                    for index in 0..<count {
                        group.addTask {
                            if index.isMultiple(of: 3) {
                                let echo = try await client.postAnything(body: .json(.init(name: "call-\(index)", count: index))).ok.body.json
                                return (index, echo.json?.name)
                            }
                            let echo = try await client.getJSON(query: .init(show: "call-\(index)")).ok.body.json
                            return (index, echo.args?.additionalProperties["show"])
                        }
                    }
                    var shows: [Int: String] = [:]
                    for try await (index, show) in group { shows[index] = show }
                    return shows
                }
                #expect(shows.count == count)
                for index in 0..<count { #expect(shows[index] == "call-\(index)") }
                #expect(manager.tasks.isEmpty)
            }
        }
    }
}

/// Records the path (with query) of each request the runtime hands the transport.
struct PathRecorder: ClientMiddleware {
    let paths: NIOLockedValueBox<[String]>

    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        self.paths.withLockedValue { $0.append(request.path ?? "") }
        return try await next(request, body, baseURL)
    }
}
