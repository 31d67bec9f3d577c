// Ported from AsyncHTTPClient's Tests/AsyncHTTPClientTests/HTTPClientTests.swift,
// AsyncAwaitEndToEndTests.swift and RequestValidationTests.swift
// (https://github.com/swift-server/async-http-client), Copyright (c) 2018-2022 Apple Inc. and
// the AsyncHTTPClient project authors, licensed under the Apache License, Version 2.0.

import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import Testing

/// Twins of AsyncHTTPClient's tests of what a client writes and how it treats a connection
/// afterwards: a request's own framing fields, `Connection: close` among other tokens either way,
/// HTTP/1.0 answers, an answer that comes before the upload ends, a large head. AHC's HTTPBin and
/// `NIOHTTP1TestServer` are played by a ``ScriptedHTTPServer`` (the bytes each answer is made of,
/// the heads as received, the connections counted) or a recording TestServer.
///
/// AHC's `RequestValidationTests` check its framing function; here the same table is checked on
/// the wire, as the server received it.
@Suite("Conformance: AsyncHTTPClient HTTPClientTests")
struct AHCHTTPClientTests {
    static let ok = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"

    static func overHTTP1(
        _ script: @escaping ScriptedHTTPServer.Script,
        _ body: (ScriptedHTTPServer, HTTPSessionManager) async throws -> Void
    ) async throws {
        try await ScriptedHTTPServer.with(script) { server in
            try await withManager(baseURL: nil) { manager in
                try await body(server, manager)
            }
        }
    }

    /// A script answering the server's first request (on any connection) with `first`, every
    /// later one with `rest`, the connection left open.
    static func answering(first: String, then rest: String = Self.ok) -> ScriptedHTTPServer.Script {
        let answered = NIOLockedValueBox(0)
        return { _, _, _ in
            let isFirst = answered.withLockedValue { count -> Bool in
                defer { count += 1 }
                return count == 0
            }
            return .respond(isFirst ? first : rest)
        }
    }

    /// The values of the field `name` in a head as received (its lines after the request line).
    static func values(_ name: String, in head: String) -> [String] {
        head.split(separator: "\r\n").dropFirst().compactMap { line -> String? in
            guard let colon = line.firstIndex(of: ":"), line[..<colon].lowercased() == name.lowercased() else { return nil }
            return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
    }

    /// A body of `count` chunks of 8 bytes, from a stream.
    static func chunks(_ count: Int) -> AsyncThrowingStream<ByteBuffer, any Error> {
        AsyncThrowingStream { continuation in
            for index in 0..<count { continuation.yield(ByteBuffer(integer: UInt64(index))) }
            continuation.finish()
        }
    }

    // MARK: Framing

    // AHC: testMultipleContentLengthHeaders
    @Test func aRequestsOwnContentLengthIsSentOnce() async throws {
        try await Self.overHTTP1({ _, _, _ in .respond(Self.ok) }) { server, manager async throws in
            var request = Request(method: .post, url: server.baseURL, body: .data(Data("hello world!".utf8)))
            request.headerFields[.contentLength] = "12"
            let response = try await manager.responseOfAnyStatus(for: request)
            #expect(response.response.status == .ok)
            let head = try #require(server.receivedHeads.first)
            #expect(Self.values("content-length", in: head) == ["12"], "\(head)")
            #expect(server.receivedBodyLengths == [12])
        }
    }

    // AHC: testRequestWithHeaderTransferEncodingIdentityDoesNotFail
    @Test func aRequestsTransferEncodingIdentityGivesWayToItsLength() async throws {
        try await Self.overHTTP1({ _, _, _ in .respond(Self.ok) }) { server, manager async throws in
            var request = Request(method: .post, url: server.baseURL, body: .data(Data("1234".utf8)))
            request.headerFields[.transferEncoding] = "identity"
            request.headerFields[HTTPField.Name("X-Test-Header")!] = "X-Test-Value"
            let response = try await manager.responseOfAnyStatus(for: request)
            #expect(response.response.status == .ok)
            let head = try #require(server.receivedHeads.first)
            #expect(Self.values("transfer-encoding", in: head).isEmpty, "\(head)")
            #expect(Self.values("content-length", in: head) == ["4"], "\(head)")
            #expect(server.receivedBodyLengths == [4])
        }
    }

    /// What a request's own `Content-Length` and `Transfer-Encoding` fields become.
    enum OwnFraming: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case none, contentLength = "Content-Length: 1", chunked = "Transfer-Encoding: chunked"
        case both = "both", codings = "Transfer-Encoding: gzip, chunked"

        var testDescription: String { self.rawValue }

        func apply(to request: inout Request) {
            switch self {
            case .none: break
            case .contentLength: request.headerFields[.contentLength] = "1"
            case .chunked: request.headerFields[.transferEncoding] = "chunked"
            case .both:
                request.headerFields[.contentLength] = "1"
                request.headerFields[.transferEncoding] = "chunked"
            case .codings: request.headerFields[.transferEncoding] = "gzip, chunked"
            }
        }
    }

    // AHC: RequestValidationTests' Content-Length/Transfer-Encoding matrix (testNoHeadersNoBody,
    // testNoHeadersHasBody, testContentLengthHeaderNoBody, testContentLengthHeaderHasBody,
    // testTransferEncodingHeaderNoBody, testTransferEncodingHeaderHasBody, testBothHeadersNoBody,
    // testBothHeadersHasBody, testContentLengthHeaderIsRemovedFromGETIfNoBody,
    // testContentLengthHeaderIsAddedToPOSTAndPUTWithNoBody,
    // testContentLengthHeaderIsChangedIfBodyHasDifferentLength,
    // testGET_HEAD_DELETE_CONNECTRequestCanHaveBody, testTransferEncodingsAreOverwrittenIfBodyLengthIsFixed,
    // testTransferEncodingsAreOverwrittenIfBodyLengthIsDynamic), on the wire: the body decides the
    // framing, whatever the request's own fields say. No body: no field for GET, HEAD and DELETE
    // (RFC 9110 8.6), `Content-Length: 0` for the others; a body of known length: its length; a
    // stream of unknown length: `chunked` alone.
    @Test(arguments: OwnFraming.allCases)
    func theBodyDecidesTheFraming(_ own: OwnFraming) async throws {
        var configuration = TestServer.Configuration()
        configuration.recordsRequests = true
        try await withTestServer(configuration) { server in
            try await withManager(baseURL: nil) { manager in
                for method in [HTTPRequest.Method.get, .head, .delete, .post, .put] {
                    for body in ["none", "known", "stream"] {
                        server.resetRequestLog()
                        var request = Request(method: method, url: server.url("/anything"))
                        switch body {
                        case "known": request.body = .data(Data("a".utf8))
                        case "stream": request.body = .stream(Self.chunks(1), length: .unknown)
                        default: break
                        }
                        own.apply(to: &request)
                        let response = try await manager.responseOfAnyStatus(for: request)
                        let label = "\(method) with \(body) body"
                        #expect(response.response.status == .ok, "\(label)")
                        let received = try #require(server.receivedRequests.first, "\(label)")
                        let length = received.headerFields[values: .contentLength]
                        let codings = received.headerFields[values: .transferEncoding]
                        switch body {
                        case "none":
                            #expect(length == ([.get, .head, .delete].contains(method) ? [] : ["0"]), "\(label)")
                            #expect(codings.isEmpty, "\(label)")
                            #expect(received.body.isEmpty, "\(label)")
                        case "known":
                            #expect(length == ["1"], "\(label)")
                            #expect(codings.isEmpty, "\(label)")
                            #expect(received.body == Data("a".utf8), "\(label)")
                        default:
                            #expect(length.isEmpty, "\(label)")
                            #expect(codings == ["chunked"], "\(label)")
                            #expect(received.body.count == 8, "\(label)")
                        }
                    }
                }
            }
        }
    }

    // AHC: testTRACERequestMustNotHaveBody, testTraceMethodIsNotAllowedToHaveAFixedLengthBody,
    // testTraceMethodIsNotAllowedToHaveADynamicLengthBody. RFC 9110 9.3.8: a client must not send
    // content in a TRACE request; it fails typed, before any connection.
    @Test func aTraceRequestWithABodyIsRefused() async throws {
        try await Self.overHTTP1({ _, _, _ in .respond(Self.ok) }) { server, manager async throws in
            for body in [RequestBody.data(Data("a".utf8)), .stream(Self.chunks(1), length: .unknown), .stream(Self.chunks(1), length: .known(8))] {
                let error = await #expect(throws: CourierError.self) {
                    _ = try await manager.responseOfAnyStatus(for: Request(method: .trace, url: server.baseURL, body: body))
                }
                #expect(error?.code == .invalidRequest, "\(String(describing: error))")
                #expect(error?.message.contains("TRACE") == true, "\(String(describing: error))")
            }
            #expect(server.connectionCount == 0)
            // Without a body it goes, with no framing field.
            let response = try await manager.responseOfAnyStatus(for: Request(method: .trace, url: server.baseURL))
            #expect(response.response.status == .ok)
            let head = try #require(server.receivedHeads.first)
            #expect(head.hasPrefix("TRACE / HTTP/1.1\r\n"))
            #expect(Self.values("content-length", in: head).isEmpty && Self.values("transfer-encoding", in: head).isEmpty, "\(head)")
        }
    }

    // AHC: testPercentEncodedBackslash (an encoded slash is not a path separator: it goes as given)
    @Test func anEncodedSlashStaysEncodedInTheTarget() async throws {
        try await Self.overHTTP1({ _, _, _ in .respond(Self.ok) }) { server, manager async throws in
            let url = URL(string: "percent%2Fencoded/hello", relativeTo: server.baseURL)!.absoluteURL
            _ = try await manager.responseOfAnyStatus(for: Request(url: url))
            #expect(server.receivedHeads.first?.hasPrefix("GET /percent%2Fencoded/hello HTTP/1.1\r\n") == true, "\(server.receivedHeads)")
        }
    }

    // AHC: testMassiveHeaderHTTP1 (a head of about 64 KiB, and a body: written in more than one flush)
    @Test func aHeadOf64KiBGoesWithItsBody() async throws {
        try await Self.overHTTP1({ _, _, _ in .respond(Self.ok) }) { server, manager async throws in
            var request = Request(method: .post, url: server.baseURL, body: .data(Data([0])))
            let value = String(repeating: "0", count: 1024)
            for index in 0..<64 { request.headerFields[HTTPField.Name("larg-header-\(index)")!] = value }
            let response = try await manager.responseOfAnyStatus(for: request)
            #expect(response.response.status == .ok)
            let head = try #require(server.receivedHeads.first)
            #expect(Self.values("larg-header-63", in: head) == [value])
            #expect(server.receivedBodyLengths == [1])
        }
    }

    // MARK: Connections

    // AHC: testWorksWithHTTP10Response (a body that ends with the connection)
    @Test func anHTTP10AnswerEndedByTheConnectionsClose() async throws {
        try await Self.overHTTP1({ _, _, _ in .respond("HTTP/1.0 500 Internal Server Error\r\n\r\n", thenClose: true) }) { server, manager async throws in
            let response = try await manager.responseOfAnyStatus(for: Request(url: server.baseURL.appendingPathComponent("foo")))
            #expect(response.response.status == .internalServerError)
            #expect(response.data?.isEmpty != false)
        }
    }

    /// An HTTP/1.0 answer without `Connection: keep-alive` ends its connection (RFC 9112 9.3),
    /// though the server leaves it open: the next request takes a new one.
    @Test func anHTTP10AnswerIsTheConnectionsLast() async throws {
        try await Self.overHTTP1({ _, _, _ in .respond("HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok") }) { server, manager async throws in
            for _ in 0..<2 {
                let response = try await manager.responseOfAnyStatus(for: Request(url: server.baseURL.appendingPathComponent("foo")))
                #expect(response.data == Data("ok".utf8))
            }
            #expect(server.connectionCount == 2)
        }
    }

    // AHC: testSubsequentRequestsWorkWithServerAlternatingBetweenKeepAliveAndClose
    @Test func answersAlternatingBetweenKeepAliveAndClose() async throws {
        let answered = NIOLockedValueBox(0)
        let script: ScriptedHTTPServer.Script = { _, _, _ in
            let index = answered.withLockedValue { count -> Int in
                defer { count += 1 }
                return count
            }
            return index % 2 == 0
                ? .respond("HTTP/1.0 200 OK\r\nConnection: close\r\n\r\n", thenClose: true)
                : .respond("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n")
        }
        try await Self.overHTTP1(script) { server, manager in
            for index in 0..<10 {
                let response = try await manager.responseOfAnyStatus(for: Request(url: server.baseURL.appendingPathComponent("foo")))
                #expect(response.response.status == .ok, "request \(index)")
                #expect(response.data?.isEmpty != false, "request \(index)")
            }
            // A new connection after each close; a kept-alive HTTP/1.0 one is reused once.
            #expect(server.connectionCount == 6)
        }
    }

    // AHC: HTTPClientInformationalResponsesTests.testServerSendsSwitchingProtocols
    // A 101 nobody asked for is the answer, without a body (what follows is another protocol's,
    // and the server never ends it); the connection is not used again.
    @Test func anUnaskedSwitchingProtocolsIsTheAnswerAndEndsTheConnection() async throws {
        let upgrade = "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: Websocket\r\n\r\nfoo bar"
        try await Self.overHTTP1(Self.answering(first: upgrade)) { server, manager async throws in
            var request = Request(method: .post, url: server.baseURL, body: .data(Data(#"{"foo": "bar"}"#.utf8)))
            request.headerFields[.contentType] = "application/json"
            let response = try await manager.responseOfAnyStatus(for: request)
            #expect(response.response.status == .switchingProtocols)
            #expect(response.data?.isEmpty != false)
            #expect(try await manager.responseOfAnyStatus(for: Request(url: server.baseURL)).response.status == .ok)
            #expect(server.connectionCount == 2)
        }
    }

    // AHC: testWeHandleUsReceivingACloseHeaderCorrectly,
    // testWeHandleUsReceivingACloseHeaderAmongstOtherConnectionHeadersCorrectly
    @Test(arguments: [("Connection", "close"), ("connection", "foo,close,bar"), ("CoNneCTION", "ClOSe"), ("Connection", "foo, ClOSe ,bar")])
    func anAnswersCloseAmongOtherTokensEndsTheConnection(_ name: String, _ value: String) async throws {
        // The server leaves the connection open: the client must not send the next on it.
        let closing = "HTTP/1.1 200 OK\r\n\(name): \(value)\r\nContent-Length: 0\r\n\r\n"
        try await Self.overHTTP1(Self.answering(first: closing)) { server, manager async throws in
            for _ in 0..<3 {
                #expect(try await manager.responseOfAnyStatus(for: Request(url: server.baseURL)).response.status == .ok)
            }
            // The first answer ended its connection; the second and third shared one.
            #expect(server.connectionCount == 2)
        }
    }

    // AHC: testWeHandleUsSendingACloseHeaderCorrectly,
    // testWeHandleUsSendingACloseHeaderAmongstOtherConnectionHeadersCorrectly
    @Test(arguments: ["close", "foo,close,bar", "ClOSe"])
    func aRequestsCloseAmongOtherTokensEndsTheConnection(_ value: String) async throws {
        try await Self.overHTTP1({ _, _, _ in .respond(Self.ok) }) { server, manager async throws in
            var closing = Request(url: server.baseURL)
            closing.headerFields[.connection] = value
            #expect(try await manager.responseOfAnyStatus(for: closing).response.status == .ok)
            for _ in 0..<2 {
                #expect(try await manager.responseOfAnyStatus(for: Request(url: server.baseURL)).response.status == .ok)
            }
            #expect(server.connectionCount == 2)
            #expect(Self.values("connection", in: server.receivedHeads[0]) == [value])
        }
    }

    // AHC: testBiDirectionalStreamingEarly200, testBiDirectionalStreamingEarly200DoesntPreventUsFromSendingMoreRequests
    // The whole answer comes while the upload is still going; the task succeeds with it, and the
    // next request works, on this connection or another.
    @Test func anAnswerBeforeTheUploadEndsAndTheNextRequest() async throws {
        try await Self.overHTTP1({ _, request, _ in
            request == 0 ? .respondBeforeBody(Self.ok) : .respond("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nnext")
        }) { server, manager async throws in
            let upload = Request(method: .post, url: server.baseURL, body: .stream(Self.chunks(30), length: .known(240)))
            #expect(try await manager.responseOfAnyStatus(for: upload).response.status == .ok)
            let next = try await manager.responseOfAnyStatus(for: Request(url: server.baseURL))
            #expect(next.data == Data("next".utf8))
        }
    }

    // AHC: testCloseConnectionAfterEarly2XXWhenStreaming (the request says `Connection: close`)
    @Test func anAnswerBeforeTheUploadEndsOnAConnectionTheRequestCloses() async throws {
        try await Self.overHTTP1({ _, _, _ in .respondBeforeBody(Self.ok) }) { server, manager async throws in
            var upload = Request(method: .post, url: server.baseURL, body: .stream(Self.chunks(30), length: .known(240)))
            upload.headerFields[.connection] = "close"
            #expect(try await manager.responseOfAnyStatus(for: upload).response.status == .ok)
            #expect(try await manager.responseOfAnyStatus(for: Request(url: server.baseURL)).response.status == .ok)
            #expect(server.connectionCount == 2)
        }
    }
}
