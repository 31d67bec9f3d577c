// Ported from Go's src/net/http/transport_test.go (the go1.6 tree, commit 01a5a2f7,
// https://go.dev/), Copyright 2011 The Go Authors. All rights reserved. Use of this source code
// is governed by a BSD-style licence.

import CourierTesting
import Foundation
import HTTPTypes
import NIOCore
import Testing

@testable import Courier

/// More of go1.6's `transport_test.go`: `Expect: 100-continue`, interim answers, compression,
/// bodyless answers, and bodies closed early.
///
/// Where Courier differs on purpose:
/// - A gzip body is decoded whatever the request's own `Accept-Encoding` says, as long as it
///   accepts `gzip` (Go hands the compressed bytes to a caller that asked for gzip itself), and
///   the head keeps its `Content-Encoding` and `Content-Length`: they describe the body as it
///   came (Go removes both). Courier asks for `deflate, gzip` (Go: `gzip`), on a HEAD too (Go
///   asks nothing on a HEAD).
/// - An interim answer other than `100 Continue` (`123 Sesame Street`) is interim (RFC 9110
///   15.2): the final answer is read after it, on the same connection. go1.6 returned it as the
///   response and closed the connection.
/// - A body read to its end, or stopped, reads as ended a second time (an iteration that ends
///   at once), not as an error.
extension GoTransportKeepAliveTests {
    // MARK: Expect: 100-continue

    /// Go's request of `TestTransportExpect100Continue`: a PUT of `hello` that waits for
    /// `100 Continue`.
    static func putExpectingContinue(_ url: URL) -> Request {
        var request = Request(method: .put, url: url, body: .data(Data("hello".utf8)))
        request.headerFields[.expect] = "100-continue"
        return request
    }

    // Go: TestTransportExpect100Continue, `/100`: the server says `100 Continue` and reads the
    // body, which goes whole.
    @Test func expectContinueAnsweredSendsTheBody() async throws {
        var configuration = TestServer.Configuration()
        configuration.recordsRequests = true
        try await withTestServer(configuration) { server in
            server.route("/100") { _ in TestServer.Response(body: Data()) }
            try await withManager(baseURL: nil) { manager in
                let response = try await manager.responseOfAnyStatus(for: Self.putExpectingContinue(server.url("/100")))
                #expect(response.response.status.code == 200)
                #expect(server.receivedRequests.map { String(decoding: $0.body, as: UTF8.self) } == ["hello"])
            }
        }
    }

    // Go: TestTransportExpect100Continue, `/200`, `/500` and `/keepalive`: the final answer
    // comes without `100 Continue` (with `Connection: close` but for `/keepalive`), and the body
    // is not sent. The wait for `100 Continue` is long, so that only the answer can end it.
    @Test(arguments: [(200, true), (500, true), (500, false)])
    func expectContinueRefusedSendsNoBody(status: Int, saysClose: Bool) async throws {
        var configuration = SessionConfiguration.default
        configuration.expectContinueTimeout = 600
        let answer = "HTTP/1.1 \(status) \(status == 200 ? "OK" : "Internal Server Error")\r\n"
            + (saysClose ? "Connection: close\r\n" : "") + "Content-Length: 0\r\n\r\n"
        try await Self.withTransport(configuration: configuration, { _, _, head in
            head.hasPrefix("PUT ") ? .respondBeforeBody(answer) : .respond(Self.ok("next"))
        }) { server, manager in
            let response = try await manager.responseOfAnyStatus(for: Self.putExpectingContinue(server.baseURL))
            #expect(response.response.status.code == status)
            // The connection, whose body was announced and not sent, is closed: only then is all
            // the client wrote in, and the body known never to have been sent.
            #expect(await server.changes.wait { server.closedConnectionCount == 1 }, "the connection was kept")
            #expect(server.receivedBodyLengths.isEmpty, "the body was sent")
            let next = try await Self.fetch(manager, server.baseURL)
            #expect(Self.text(next) == "next")
            #expect(server.connectionCount == 2)
        }
    }

    // Go: TestTransportExpect100Continue, `/timeout`: a server that reads the body without
    // saying `100 Continue` gets it once the wait for `100 Continue` is over.
    @Test func expectContinueUnansweredSendsTheBodyAfterTheWait() async throws {
        var configuration = SessionConfiguration.default
        configuration.expectContinueTimeout = 0.05
        try await Self.withTransport(configuration: configuration, { _, _, _ in
            .respond("HTTP/1.1 200 OK\r\n\r\n", thenClose: true)
        }) { server, manager in
            let response = try await manager.responseOfAnyStatus(for: Self.putExpectingContinue(server.baseURL))
            #expect(response.response.status.code == 200)
            #expect(server.receivedBodyLengths == [5])
        }
    }

    // Go: TestTransportReading100Continue. Each POST is answered `100 Continue` (with a field),
    // then its final answer, in one write; the final answer echoes the request's ID. Then
    // answers after `123 Sesame Street` (go1.6: that is the response, and the connection closes).
    @Test func interimAnswersAreReadPastOnOneConnection() async throws {
        try await Self.withTransport({ _, _, head in
            let fields = head.split(separator: "\r\n").dropFirst()
            let value = { (name: String) in
                fields.first { $0.lowercased().hasPrefix(name + ":") }.map { $0.dropFirst(name.utf8.count + 1).trimmingCharacters(in: .whitespaces) }
            }
            let interim = value("x-want-response-code") ?? "100 Continue"
            let id = value("request-id") ?? ""
            let body = "Response for \(id)"
            return .respond(
                "HTTP/1.1 \(interim)\r\nDate: Thu, 28 Feb 2013 17:55:41 GMT\r\n\r\n"
                    + Self.ok(body, "Content-Type: text/html\r\nEcho-Request-Id: \(id)\r\n"))
        }) { server, manager in
            var lengths: [Int] = []
            for interim in [nil, "123 Sesame Street"] {
                for number in 1...5 {
                    let body = "request body \(number)"
                    lengths.append(body.utf8.count)
                    var request = Request(method: .post, url: server.baseURL, body: .data(Data(body.utf8)))
                    request.headerFields[HTTPField.Name("Request-Id")!] = "REQ-ID-\(number)"
                    if let interim { request.headerFields[HTTPField.Name("X-Want-Response-Code")!] = interim }
                    let response = try await manager.responseOfAnyStatus(for: request)
                    #expect(response.response.status.code == 200)
                    #expect(response.response.headerFields[HTTPField.Name("Echo-Request-Id")!] == "REQ-ID-\(number)")
                    #expect(Self.text(response) == "Response for REQ-ID-\(number)")
                }
            }
            #expect(server.receivedBodyLengths == lengths)
            #expect(server.connectionCount == 1)
        }
    }

    // MARK: Compression

    /// A response of `body` gzipped, with `Content-Encoding: gzip`, framed by a length or chunked.
    static func gzipped(_ body: [UInt8], chunked: Bool = false) throws -> [UInt8] {
        let coded = try GoReadResponseTests.gzip(body)
        let framing = chunked ? "Transfer-Encoding: chunked" : "Content-Length: \(coded.count)"
        let head = Array("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n\(framing)\r\n\r\n".utf8)
        return chunked ? head + Array("\(String(coded.count, radix: 16))\r\n".utf8) + coded + Array("\r\n0\r\n\r\n".utf8) : head + coded
    }

    /// The value of the request head's `name` field, if any.
    static func field(_ name: String, in head: String) -> String? {
        head.split(separator: "\r\n").dropFirst()
            .first { $0.lowercased().hasPrefix(name.lowercased() + ":") }
            .map { $0.dropFirst(name.utf8.count + 1).trimmingCharacters(in: .whitespaces) }
    }

    // Go: TestRoundTripGzip. The request's own `Accept-Encoding`, the one the server gets, and the
    // answer's `Content-Encoding`. The body is read as the server meant it each time, and the
    // request is left as it was.
    @Test(arguments: [("", "deflate, gzip", "gzip"), ("foo", "foo", "foo"), ("gzip", "gzip", "gzip")])
    func acceptEncodingIsAddedOnlyWhenTheRequestNamesNone(accept: String, sent: String, coding: String) async throws {
        let text = "test response body"
        let gzipped = try Self.gzipped(Array(text.utf8))
        try await Self.withTransport({ _, _, head in
            // The server gzips only for a client that accepts it, as Go's handler.
            (Self.field("Accept-Encoding", in: head) ?? "").contains("gzip")
                ? .respondBytes(gzipped) : .respond(Self.ok(text, "Content-Encoding: \(Self.field("Accept-Encoding", in: head) ?? "")\r\n"))
        }) { server, manager in
            var request = Request(url: server.baseURL)
            if !accept.isEmpty { request.headerFields[.acceptEncoding] = accept }
            let response = try await manager.responseOfAnyStatus(for: request)
            #expect(server.receivedHeads.first.flatMap { Self.field("Accept-Encoding", in: $0) } == sent)
            // Go: the gzip bytes as they came for a request that asked for gzip itself.
            #expect(Self.text(response) == text)
            #expect(response.request.headerFields[.acceptEncoding] == (accept.isEmpty ? nil : accept), "the request was changed")
            // Go: none where the transport asked for gzip itself (it removes the field).
            #expect(response.response.headerFields[.contentEncoding] == coding)
        }
    }

    // Go: TestTransportGzip. A large gzip body, read in part and given up, then a small one
    // read whole, then a HEAD; the body framed by a length or chunked.
    @Test(arguments: [false, true])
    func aGzipBodyGivenUpDoesNotSpoilTheNext(chunked: Bool) async throws {
        let text = "The test string aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        // A megabyte that does not compress, eight random bytes a draw (a draw a byte, each a
        // system call, took seconds of a debug build's thread).
        var generator = SystemRandomNumberGenerator()
        let words = (0..<(1 << 17)).map { _ in generator.next() }
        let large = try Self.gzipped(Array(text.utf8) + words.withUnsafeBytes { Array($0) }, chunked: chunked)
        let small = try Self.gzipped(Array(text.utf8), chunked: chunked)
        try await Self.withTransport({ _, _, head in
            if head.hasPrefix("HEAD ") { return .respond("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n") }
            return head.hasPrefix("GET /large ") ? .respondBytes(large) : .respondBytes(small)
        }) { server, manager in
            let response = try await manager.stream(Request(url: server.baseURL.appendingPathComponent("large")))
            var received = ByteBuffer()
            for try await var chunk in response.body {
                received.writeBuffer(&chunk)
                if received.readableBytes >= text.utf8.count { break }
            }
            #expect(received.getString(at: 0, length: text.utf8.count) == text)
            // Go: a read after Close fails; here the body reads as ended.
            for try await _ in response.body { Issue.record("a chunk after the body was given up") }

            let whole = try await Self.fetch(manager, server.baseURL.appendingPathComponent("small"))
            #expect(Self.text(whole) == text)
            let head = try await manager.responseOfAnyStatus(for: Request(method: .head, url: server.baseURL))
            #expect(head.response.status.code == 200)
            #expect(server.receivedHeads.allSatisfy { Self.field("Accept-Encoding", in: $0) == "deflate, gzip" })
        }
    }

    // Go: TestTransportGzipRecursive, with a body gzipped twice instead of Go's gzip quine: one
    // `Content-Encoding: gzip` is decoded once, not until the bytes stop looking like gzip.
    @Test func aGzipBodyIsDecodedOnce() async throws {
        let inner = try GoReadResponseTests.gzip(Array("inner".utf8))
        let answer = try Self.gzipped(inner)
        try await Self.withTransport({ _, _, _ in .respondBytes(answer) }) { server, manager in
            let response = try await Self.fetch(manager, server.baseURL)
            #expect(Array(response.value) == inner)
        }
    }

    // Go: TestTransportGzipShort. A gzip body cut after its first two bytes fails the request.
    @Test func aGzipBodyCutShortFails() async throws {
        let answer = Array("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 2\r\n\r\n".utf8) + [0x1f, 0x8b]
        try await Self.withTransport({ _, _, _ in .respondBytes(answer) }) { server, manager in
            let error = await #expect(throws: CourierError.self) { try await Self.fetch(manager, server.baseURL) }
            #expect(error?.code == .invalidResponse, "\(String(describing: error))")
        }
    }

    // Go: TestTransportRangeAndGzip. A request for a range is not offered gzip.
    @Test func aRangeRequestIsNotOfferedGzip() async throws {
        try await Self.withTransport({ _, _, _ in .respond(Self.ok("")) }) { server, manager in
            var request = Request(url: server.baseURL)
            request.headerFields[.range] = "bytes=7-11"
            _ = try await manager.responseOfAnyStatus(for: request)
            let head = try #require(server.receivedHeads.first)
            #expect(Self.field("Accept-Encoding", in: head)?.contains("gzip") != true, "\(head)")
            #expect(Self.field("Range", in: head) == "bytes=7-11")
        }
    }

    // MARK: Answers without a body

    // Go: TestChunkedNoContent and TestTransportReuseConnEmptyResponseBody. A 204 (without
    // framing) and an empty 200 give their connection back at once, whether their body is read
    // (a data task) or never (a stream left unread).
    @Test(arguments: ["HTTP/1.1 204 No Content\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"])
    func bodylessAnswersGiveTheirConnectionBack(_ answer: String) async throws {
        try await Self.withTransport({ _, _, _ in .respond(answer) }) { server, manager in
            for _ in 0..<4 {
                let response = try await Self.fetch(manager, server.baseURL)
                #expect(response.value.isEmpty)
            }
            for _ in 0..<4 {
                let response = try await manager.stream(Request(url: server.baseURL))
                #expect(response.response.status.code == (answer.contains("204") ? 204 : 200))
            }
            #expect(server.receivedHeads.count == 8)
            #expect(server.connectionCount == 1)
        }
    }

    // Go: TestTransportIssue10457. The server says the connection stays open, and closes it.
    @Test func aServerClosingRightAfterAKeepAliveAnswer() async throws {
        try await Self.withTransport({ connection, _, _ in
            .respond("HTTP/1.1 200 OK\r\nFoo: Bar\r\nContent-Length: 0\r\n\r\n", thenClose: connection == 0)
        }) { server, manager in
            let response = try await Self.fetch(manager, server.baseURL)
            #expect(response.response.headerFields[HTTPField.Name("Foo")!] == "Bar")
            #expect(await server.changes.wait { server.closedConnectionCount == 1 })
            _ = try await Self.fetch(manager, server.baseURL)
            #expect(server.connectionCount == 2)
        }
    }

    // MARK: Bodies that end with the connection, or are closed early

    // Go: TestIssue3644. A `Connection: close` answer without a length, read to the close.
    @Test func aBodyEndingWithTheConnectionIsReadWhole() async throws {
        let body = String(repeating: "foo ", count: 5000)
        try await Self.withTransport({ _, _, _ in
            .respond("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + body, thenClose: true)
        }) { server, manager in
            let response = try await Self.fetch(manager, server.baseURL)
            #expect(response.value.count == body.utf8.count)
        }
    }

    // Go: TestTransportCloseResponseBody. Stopping a body the server is still sending closes the
    // connection (Go: the server's next write fails), rather than reading the rest.
    @Test func stoppingABodyClosesItsConnection() async throws {
        let gate = OneShotGate()
        let line = "young\n"
        let head = Array("HTTP/1.1 200 OK\r\nContent-Length: \(1 << 20)\r\n\r\n".utf8)
        try await Self.withTransport({ _, _, _ in
            .respondInTwoParts(head + Array(String(repeating: line, count: 3).utf8), then: Array(repeating: 0x61, count: 1 << 20), gate: gate)
        }) { server, manager in
            let response = try await manager.stream(Request(url: server.baseURL))
            var received = ByteBuffer()
            for try await var chunk in response.body {
                received.writeBuffer(&chunk)
                if received.readableBytes >= 3 * line.utf8.count { break }
            }
            #expect(String(buffer: received) == String(repeating: line, count: 3))
            #expect(await server.changes.wait { server.closedConnectionCount == 1 }, "the connection stayed open")
        }
    }

    // Go: TestTransportNoReuseAfterEarlyResponse. The server answers a POST before its body is in
    // (its last byte is held back) and goes on reading it. The answer's head comes at once.
    //
    // Courier differs on purpose, twice (HopStateMachine's rule for an answer below 300 that ends
    // before the request body, which the server may still be reading): the exchange ends with
    // its upload, not with the answer, so the answer's end comes once the last byte is sent (Go
    // returns the whole response at once, and sends the next request, made before the last byte,
    // on a new connection); and the connection, whose request went whole and whose answer keeps
    // it, carries the next request (Go never reuses it after an early answer).
    @Test func anAnswerThatCameBeforeTheBodyEndsWithTheUpload() async throws {
        let size = 256 << 10
        try await Self.withTransport({ _, _, head in
            head.hasPrefix("POST ") ? .respondBeforeBody(Self.ok("foo")) : .respond(Self.ok("bar"))
        }) { server, manager in
            let (chunks, continuation) = AsyncStream<ByteBuffer>.makeStream()
            continuation.yield(ByteBuffer(repeating: UInt8(ascii: "x"), count: size - 1))
            let post = Request(method: .post, url: server.baseURL, body: .stream(chunks.map { $0 }, length: .known(Int64(size))))
            let first = try await manager.stream(post)
            #expect(first.response.status.code == 200)
            #expect(server.receivedBodyLengths.isEmpty, "the head came before the body")
            continuation.yield(ByteBuffer(string: "x"))
            continuation.finish()
            var received = ByteBuffer()
            for try await var chunk in first.body { received.writeBuffer(&chunk) }
            #expect(String(buffer: received) == "foo")
            // Sent when the answer ended; the server's loop may read it later.
            #expect(await server.changes.wait { server.receivedBodyLengths == [size] })
            let second = try await Self.fetch(manager, server.baseURL)
            #expect(Self.text(second) == "bar")
            // Go: a new connection.
            #expect(Self.reused(second) == true)
            #expect(server.connectionCount == 1)
        }
    }
}
