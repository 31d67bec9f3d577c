// Ported from Go's src/net/http/response_test.go (go1.19, https://go.dev/), Copyright 2010 The
// Go Authors. All rights reserved. Use of this source code is governed by a BSD-style licence.

import Courier
import Foundation
import HTTPTypes
import NIOCore
import Testing

/// Go's HTTP/1.x response-reading tables (go1.19, `net/http/response_test.go`): `respTests`,
/// `TestReadResponseErrors`, `TestResponseContentLengthShortBody` and
/// `TestReadResponseCloseInMiddle`. Each row's raw bytes are written by a scripted server over a
/// real socket, in answer to a GET (a HEAD where Go's row reads a HEAD's answer), through
/// Courier's HTTP/1.1 engine; the server closes the connection after them where the row's body
/// ends with the connection. What Go's `Response` struct says is checked where Courier shows it:
/// the status, the header fields as they came (Courier keeps them all), the body, and whether a
/// second request goes over the same connection (Go's `Close`).
///
/// Where Courier answers otherwise, on purpose:
/// - Courier's HTTP/1.1 decoder (llhttp, built without its lenient flags; see
///   `ResponseHeadMender`, which mends only obs-folds, bare LFs, repeated `Content-Length`s,
///   `Content-Length` beside `Transfer-Encoding` and raw `Location` bytes) holds the status line to
///   RFC 9112 4's grammar: two spaces before the code, a version other than 1.0 and 1.1
///   (`HTTP/1.2`, `HTTP/2.0`), and a code that is not three digits are refused with
///   ``CourierError/Code/invalidResponse`` (Go reads the first two, and reads codes 000 and 001).
/// - `Transfer-Encoding` in an HTTP/1.0 response is not ignored (Go ignores it, issue 12785): RFC
///   9112 6.1 says a client MUST treat such a message's framing as faulty, even with a
///   `Content-Length`; and a coding other than `chunked`, which Courier did not ask for (it sends
///   no `TE`), is refused whatever the version (`UnsupportedTransferCoding`, RFC 9112 7.4).
/// - A `Content-Length` beside `Transfer-Encoding: chunked` is removed (the chunks frame the body,
///   as in Go), and the connection is not used again: such a head may come from a server that
///   frames its messages otherwise than the client reads them (Go reuses it).
/// - Empty `Content-Length` fields are refused (Go reads them as no length).
/// - A `gzip` body is decompressed: Courier asked for it (`Accept-Encoding`), as Go's
///   `Transport` does; Go's `ReadResponse` alone gives the compressed bytes.
/// - A 204's bytes after its head are no response: the connection is closed rather than kept
///   (Go keeps it, and would read those bytes as the next response's).
/// - The status text is the standard one where the server's is empty (`303 ` and `303`).
/// The rows say where; Go's answer is in the comment.
@Suite("Go's ReadResponse tests")
struct GoReadResponseTests {
    /// What Courier makes of a row.
    enum Outcome: Sendable {
        /// A response: its status code and text, its header fields (name, value, in order), its
        /// body, and whether the connection carries a second request.
        case response(status: Int, reason: String, fields: [HTTPField], body: [UInt8], reused: Bool)
        /// A failure with this code.
        case failure(CourierError.Code)
    }

    struct Row: Sendable, CustomTestStringConvertible {
        let name: String
        var method: HTTPRequest.Method = .get
        /// The bytes the server writes.
        let raw: [UInt8]
        /// Whether the server closes the connection after them.
        var closes = false
        let outcome: Outcome
        var testDescription: String { self.name }
    }

    static func fields(_ pairs: KeyValuePairs<String, String>) -> [HTTPField] {
        pairs.map { HTTPField(name: HTTPField.Name($0.key)!, value: $0.value) }
    }

    static func ok(
        _ fields: KeyValuePairs<String, String> = [:], status: Int = 200, reason: String = "OK", body: String = "", reused: Bool
    ) -> Outcome {
        .response(status: status, reason: reason, fields: Self.fields(fields), body: Array(body.utf8), reused: reused)
    }

    static func row(_ name: String, _ method: HTTPRequest.Method, _ raw: String, closes: Bool = false, _ outcome: Outcome) -> Row {
        Row(name: name, method: method, raw: Array(raw.utf8), closes: closes, outcome: outcome)
    }

    /// A row read in answer to a GET.
    static func row(_ name: String, _ raw: String, closes: Bool = false, _ outcome: Outcome) -> Row {
        Row(name: name, method: .get, raw: Array(raw.utf8), closes: closes, outcome: outcome)
    }

    /// The request, with a timeout on every wait: a row that would hang fails with
    /// ``CourierError/Code/timedOut`` instead (60 s: no row waits for it, and a full CI run held
    /// every test for about 36 s).
    static func request(_ method: HTTPRequest.Method, _ url: URL) -> Request {
        var request = Request(method: method, url: url)
        request.options.timeoutInterval = 60
        return request
    }

    /// Any status is a response (Go's rows have 999 and 000), its body as data.
    static func send(_ manager: SessionManager, _ request: Request) async throws -> DataResponse<Data> {
        var serializer = DataResponseSerializer()
        serializer.http.acceptableStatusCodes = IndexSet(integersIn: 0..<1000)
        return try await manager.response(for: request, serializer: serializer)
    }

    /// Runs `row` over a socket and checks Courier's answer.
    static func check(_ row: Row, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        try await ScriptedHTTPServer.with({ _, _, _ in row.closes ? .respondBytesThenClose(row.raw) : .respondBytes(row.raw) }) { server in
            try await withManager(baseURL: nil) { manager in
                let request = Self.request(row.method, server.baseURL)
                switch row.outcome {
                case .failure(let code):
                    do {
                        let response = try await Self.send(manager, request)
                        Issue.record("\(row.name): answered \(response.response.status.code) \(response.response.headerFields)", sourceLocation: sourceLocation)
                    } catch let error as CourierError {
                        #expect(error.code == code, "\(row.name): \(error)", sourceLocation: sourceLocation)
                    }
                case .response(let status, let reason, let fields, let body, let reused):
                    let response = try await Self.send(manager, request)
                    #expect(response.response.status.code == status, sourceLocation: sourceLocation)
                    #expect(response.response.status.reasonPhrase == reason, sourceLocation: sourceLocation)
                    #expect(Array(response.response.headerFields) == fields, sourceLocation: sourceLocation)
                    #expect(Array(response.value) == body, "\(String(decoding: response.value, as: UTF8.self))", sourceLocation: sourceLocation)
                    // Go's `Close`: whether the connection carries the next request.
                    let next = try await Self.send(manager, request)
                    #expect(next.response.status.code == status, sourceLocation: sourceLocation)
                    #expect(Array(next.value) == body, sourceLocation: sourceLocation)
                    #expect(server.connectionCount == (reused ? 1 : 2), "connections", sourceLocation: sourceLocation)
                    #expect(next.metrics?.transactions.last?.isReusedConnection == reused, sourceLocation: sourceLocation)
                }
            }
        }
    }

    // MARK: respTests

    static let gzipBody: [UInt8] = [
        0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x73, 0xf3, 0xf7, 0x07, 0x00, 0xab, 0x27, 0xd4, 0x1a, 0x03,
        0x00, 0x00, 0x00,
    ]

    /// `respTests`, in Go's order.
    static let respTests: [Row] = [
        row("Unchunked response without Content-Length", "HTTP/1.0 200 OK\r\nConnection: close\r\n\r\nBody here\n", closes: true,
            ok(["Connection": "close"], body: "Body here\n", reused: false)),
        row("Unchunked HTTP/1.1 response without Content-Length or Connection headers", "HTTP/1.1 200 OK\r\n\r\nBody here\n", closes: true,
            ok(body: "Body here\n", reused: false)),
        // Go: Close false (the connection is kept, and the bytes after the head would be read as
        // the next response).
        row("Unchunked HTTP/1.1 204 response without Content-Length", "HTTP/1.1 204 No Content\r\n\r\nBody should not be read!\n",
            ok(status: 204, reason: "No Content", reused: false)),
        row("Unchunked response with Content-Length",
            "HTTP/1.0 200 OK\r\nContent-Length: 10\r\nConnection: close\r\n\r\nBody here\n",
            ok(["Content-Length": "10", "Connection": "close"], body: "Body here\n", reused: false)),
        row("Chunked response without Content-Length",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0a\r\nBody here\n\r\n09\r\ncontinued\r\n0\r\n\r\n",
            ok(["Transfer-Encoding": "chunked"], body: "Body here\ncontinued", reused: true)),
        row("Trailer header but no TransferEncoding",
            "HTTP/1.0 200 OK\r\nTrailer: Content-MD5, Content-Sources\r\nContent-Length: 10\r\nConnection: close\r\n\r\nBody here\n",
            ok(["Trailer": "Content-MD5, Content-Sources", "Content-Length": "10", "Connection": "close"], body: "Body here\n", reused: false)),
        // Go: Close false, the connection kept.
        row("Chunked response with Content-Length",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 10\r\n\r\n0a\r\nBody here\n\r\n0\r\n\r\n",
            ok(["Transfer-Encoding": "chunked"], body: "Body here\n", reused: false)),
        row("Chunked response in response to a HEAD request", .head, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            ok(["Transfer-Encoding": "chunked"], reused: true)),
        row("Content-Length in response to a HEAD request", .head, "HTTP/1.0 200 OK\r\nContent-Length: 256\r\n\r\n",
            ok(["Content-Length": "256"], reused: false)),
        row("Content-Length in response to a HEAD request with HTTP/1.1", .head, "HTTP/1.1 200 OK\r\nContent-Length: 256\r\n\r\n",
            ok(["Content-Length": "256"], reused: true)),
        row("No Content-Length or Chunked in response to a HEAD request", .head, "HTTP/1.0 200 OK\r\n\r\n",
            ok(reused: false)),
        row("explicit Content-Length of 0", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
            ok(["Content-Length": "0"], reused: true)),
        // Go: Status "303 " (no text).
        row("Status line without a Reason-Phrase, but trailing space", "HTTP/1.0 303 \r\n\r\n", closes: true,
            ok(status: 303, reason: "See Other", reused: false)),
        // Go: Status "303" (no text).
        row("Status line without a Reason-Phrase, and no trailing space", "HTTP/1.0 303\r\n\r\n", closes: true,
            ok(status: 303, reason: "See Other", reused: false)),
        // Go's row is a raw string: its lines end with LF alone (Go drops the `Connection: close`
        // field of an HTTP/1.1 head; Courier keeps every field).
        row("golang.org/issue/4767: don't special-case multipart/byteranges responses",
            "HTTP/1.1 206 Partial Content\nConnection: close\nContent-Type: multipart/byteranges; boundary=18a75608c8f47cef\n\nsome body",
            closes: true,
            ok(["Connection": "close", "Content-Type": "multipart/byteranges; boundary=18a75608c8f47cef"],
               status: 206, reason: "Partial Content", body: "some body", reused: false)),
        // "Unchunked response without Content-Length, Request is nil": the first row's bytes read
        // without a request (Go's API only: a client's response always has its request).
        row("206 Partial Content. golang.org/issue/8923",
            "HTTP/1.1 206 Partial Content\r\nContent-Type: text/plain; charset=utf-8\r\nAccept-Ranges: bytes\r\n"
                + "Content-Range: bytes 0-5/1862\r\nContent-Length: 6\r\n\r\nfoobar",
            ok(["Content-Type": "text/plain; charset=utf-8", "Accept-Ranges": "bytes", "Content-Range": "bytes 0-5/1862", "Content-Length": "6"],
               status: 206, reason: "Partial Content", body: "foobar", reused: true)),
        row("Both keep-alive and close, on the same Connection line. (Issue 8840)", .head,
            "HTTP/1.1 200 OK\r\nContent-Length: 256\r\nConnection: keep-alive, close\r\n\r\n",
            ok(["Content-Length": "256", "Connection": "keep-alive, close"], reused: false)),
        row("Both keep-alive and close, on different Connection lines. (Issue 8840)", .head,
            "HTTP/1.1 200 OK\r\nContent-Length: 256\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n",
            ok(["Content-Length": "256", "Connection": "keep-alive", "Connection": "close"], reused: false)),
        // Not Go's rows: the same over HTTP/1.0, where `keep-alive` alone keeps the connection and
        // `close` beside it still closes it (llhttp's HTTP/1.0 verdict looks at `keep-alive` only).
        row("HTTP/1.0 with keep-alive is reused", "HTTP/1.0 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok",
            ok(["Content-Length": "2", "Connection": "keep-alive"], body: "ok", reused: true)),
        row("HTTP/1.0 with both keep-alive and close, on the same Connection line",
            "HTTP/1.0 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive, close\r\n\r\nok",
            ok(["Content-Length": "2", "Connection": "keep-alive, close"], body: "ok", reused: false)),
        row("HTTP/1.0 with both keep-alive and close, on different Connection lines",
            "HTTP/1.0 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\nConnection: Close\r\n\r\nok",
            ok(["Content-Length": "2", "Connection": "keep-alive", "Connection": "Close"], body: "ok", reused: false)),
        row("HTTP/1.0 with both keep-alive and close, answering HEAD", .head,
            "HTTP/1.0 200 OK\r\nContent-Length: 256\r\nConnection: close, keep-alive\r\n\r\n",
            ok(["Content-Length": "256", "Connection": "close, keep-alive"], reused: false)),
        row("HTTP/1.0 with keep-alive, answering HEAD", .head,
            "HTTP/1.0 200 OK\r\nContent-Length: 256\r\nConnection: keep-alive\r\n\r\n",
            ok(["Content-Length": "256", "Connection": "keep-alive"], reused: true)),
        // Go: the Transfer-Encoding ignored, the body read until EOF (the first) or by its length.
        row("Issue 12785: HTTP/1.0 response with bogus (to be ignored) Transfer-Encoding. Without a Content-Length.",
            "HTTP/1.0 200 OK\r\nTransfer-Encoding: bogus\r\n\r\nBody here\n", closes: true,
            .failure(.invalidResponse)),
        row("Issue 12785: HTTP/1.0 response with bogus (to be ignored) Transfer-Encoding. With a Content-Length.",
            "HTTP/1.0 200 OK\r\nTransfer-Encoding: bogus\r\nContent-Length: 10\r\n\r\nBody here\n", closes: true,
            .failure(.invalidResponse)),
        Row(name: "gzip, keep-alive",
            raw: Array("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 23\r\nConnection: keep-alive\r\nKeep-Alive: timeout=7200\r\n\r\n".utf8)
                + gzipBody,
            // Go: the compressed bytes (ReadResponse alone does not decompress).
            outcome: ok(["Content-Encoding": "gzip", "Content-Length": "23", "Connection": "keep-alive", "Keep-Alive": "timeout=7200"],
                        body: "FOO", reused: true)),
        // Go: 401, `Content-Type: text/html`, `Www-Authenticate: Basic realm=""`, the body until EOF.
        row("Issue 19989: two spaces between HTTP version and status.",
            "HTTP/1.0  401 Unauthorized\r\nContent-type: text/html\r\nWWW-Authenticate: Basic realm=\"\"\r\n\r\nYour Authentication failed.\r\n",
            closes: true, .failure(.invalidResponse)),
    ]

    @Test(arguments: Self.respTests)
    func readResponse(_ row: Row) async throws {
        try await Self.check(row)
    }

    // MARK: TestReadResponseErrors

    /// `TestReadResponseErrors`: the head alone matters; the server closes after each.
    static let readResponseErrorRows: [Row] = {
        func status(_ status: String, _ outcome: Outcome) -> Row {
            row("status \(status)", "HTTP/1.1 \(status)\r\nFoo: bar\r\n\r\n", closes: true, outcome)
        }
        func version(_ version: String, _ outcome: Outcome) -> Row {
            row("version \(version)", "\(version) 200 OK\r\n\r\n", closes: true, outcome)
        }
        func contentLength(_ status: String, _ body: String, _ outcome: Outcome) -> Row {
            row("status \(status) \(body.debugDescription)", "HTTP/1.1 \(status)\r\n\(body)", closes: true, outcome)
        }
        let bar: KeyValuePairs<String, String> = ["Foo": "bar"]
        return [
            // Go: io.ErrUnexpectedEOF for the first two, "malformed HTTP response" for the others.
            row("no bytes", "", closes: true, .failure(.connectionClosed)),
            // Go: `io.ErrUnexpectedEOF`. Courier: the connection closed before the head was whole.
            row("a head cut short", "HTTP/1.1 301 Moved Permanently\r\nFoo: bar", closes: true, .failure(.connectionClosed)),
            // Go: `io.ErrUnexpectedEOF`. Courier: the connection closed before the head was whole.
            row("HTTP/1.1 alone", "HTTP/1.1", closes: true, .failure(.connectionClosed)),
            // Go: `io.ErrUnexpectedEOF`. Courier: the connection closed before the head was whole.
            row("HTTP/2.0 alone", "HTTP/2.0", closes: true, .failure(.connectionClosed)),
            // Go: "malformed HTTP status code".
            status("20X Unknown", .failure(.invalidResponse)),
            status("abcd Unknown", .failure(.invalidResponse)),
            status("二百/两百 OK", .failure(.invalidResponse)),
            status(" Unknown", .failure(.invalidResponse)),
            status("c8 OK", .failure(.invalidResponse)),
            status("0x12d Moved Permanently", .failure(.invalidResponse)),
            status("200 OK", ok(bar, status: 200, reason: "OK", reused: false)),
            // Go: read (code 0, 1).
            status("000 OK", .failure(.invalidResponse)),
            status("001 OK", .failure(.invalidResponse)),
            status("404 NOTFOUND", ok(bar, status: 404, reason: "NOTFOUND", reused: false)),
            status("20 OK", .failure(.invalidResponse)),
            status("00 OK", .failure(.invalidResponse)),
            status("-10 OK", .failure(.invalidResponse)),
            status("1000 OK", .failure(.invalidResponse)),
            status("999 Done", ok(bar, status: 999, reason: "Done", reused: false)),
            status("-1 OK", .failure(.invalidResponse)),
            status("-200 OK", .failure(.invalidResponse)),
            // Go: read (HTTP/1.2, HTTP/2.0).
            version("HTTP/1.2", .failure(.invalidResponse)),
            version("HTTP/2.0", .failure(.invalidResponse)),
            // Go: "malformed HTTP version".
            version("HTTP/1.100000000002", .failure(.invalidResponse)),
            version("HTTP/1.-1", .failure(.invalidResponse)),
            version("HTTP/A.B", .failure(.invalidResponse)),
            version("HTTP/1", .failure(.invalidResponse)),
            version("http/1.1", .failure(.invalidResponse)),
            // Go: "message cannot contain multiple Content-Length headers" where refused.
            contentLength("200 OK", "Content-Length: 10\r\nContent-Length: 7\r\n\r\nGopher hey\r\n", .failure(.invalidResponse)),
            contentLength("200 OK", "Content-Length: 7\r\nContent-Length: 7\r\n\r\nGophers\r\n",
                          ok(["Content-Length": "7"], body: "Gophers", reused: false)),
            contentLength("201 OK", "Content-Length: 0\r\nContent-Length: 7\r\n\r\nGophers\r\n", .failure(.invalidResponse)),
            contentLength("300 OK", "Content-Length: 0\r\nContent-Length: 0 \r\n\r\nGophers\r\n",
                          ok(["Content-Length": "0"], status: 300, reason: "OK", reused: false)),
            // Go: read (empty lengths are no length).
            contentLength("200 OK", "Content-Length:\r\nContent-Length:\r\n\r\nGophers\r\n", .failure(.invalidResponse)),
            contentLength("206 OK", "Content-Length:\r\nContent-Length: 0 \r\nConnection: close\r\n\r\nGophers\r\n", .failure(.invalidResponse)),
            // "multiple content-length headers for 204 and 304 should still be checked"
            contentLength("204 OK", "Content-Length: 7\r\nContent-Length: 8\r\n\r\n", .failure(.invalidResponse)),
            contentLength("204 OK", "Content-Length: 3\r\nContent-Length: 3\r\n\r\n",
                          ok(["Content-Length": "3"], status: 204, reason: "OK", reused: false)),
            contentLength("304 OK", "Content-Length: 880\r\nContent-Length: 1\r\n\r\n", .failure(.invalidResponse)),
            contentLength("304 OK", "Content-Length: 961\r\nContent-Length: 961\r\n\r\n",
                          ok(["Content-Length": "961"], status: 304, reason: "OK", reused: false)),
            // golang.org/issue/22464 (Go: "malformed MIME")
            row("leading space in header", "HTTP/1.1 200 OK\r\n Content-type: text/html\r\nFoo: bar\r\n\r\n", closes: true,
                .failure(.invalidResponse)),
            row("leading tab in header", "HTTP/1.1 200 OK\r\n\tContent-type: text/html\r\nFoo: bar\r\n\r\n", closes: true,
                .failure(.invalidResponse)),
        ]
    }()

    @Test(arguments: Self.readResponseErrorRows)
    func readResponseErrors(_ row: Row) async throws {
        try await Self.check(row)
    }

    // MARK: TestResponseContentLengthShortBody

    /// A body shorter than its `Content-Length`, then the connection closed: the request fails
    /// (Go: `io.ErrUnexpectedEOF` after the bytes that came), and the bytes that came are the
    /// ones a stream of the body gave before the failure.
    @Test func responseContentLengthShortBody() async throws {
        let shortBody = "Short body, not 123 bytes."
        let raw = Array("HTTP/1.1 200 OK\r\nContent-Length: 123\r\n\r\n\(shortBody)".utf8)
        try await ScriptedHTTPServer.with({ _, _, _ in .respondBytesThenClose(raw) }) { server in
            try await withManager(baseURL: nil) { manager in
                let error = await #expect(throws: CourierError.self) { _ = try await Self.send(manager, Self.request(.get, server.baseURL)) }
                #expect(error?.code == .connectionClosed, "\(String(describing: error))")
                #expect(error?.response?.status.code == 200)
                #expect(error?.data.map { String(decoding: $0, as: UTF8.self) } == shortBody)

                let stream = try await manager.stream(Self.request(.get, server.baseURL))
                #expect(stream.response.status.code == 200)
                var received: [UInt8] = []
                let failure = await #expect(throws: CourierError.self) {
                    for try await chunk in stream.body { received += chunk.readableBytesView }
                }
                #expect(failure?.code == .connectionClosed, "\(String(describing: failure))")
                #expect(String(decoding: received, as: UTF8.self) == shortBody)
            }
        }
    }

    // MARK: TestReadResponseCloseInMiddle

    /// A body of a million bytes (by length, in chunks, or in chunks of gzip), of which the
    /// client reads 2,500 and stops; the next request is answered `Next Request Here`, whatever
    /// became of the first connection (Go reads the rest of the body so that the connection can
    /// be used again; Courier may close it instead).
    @Test(arguments: [(false, false), (true, false), (true, true)])
    func readResponseCloseInMiddle(chunked: Bool, compressed: Bool) async throws {
        let chunk = [UInt8](repeating: UInt8(ascii: "x"), count: 1000)
        var content: [UInt8] = []
        for index in 0..<1000 {
            // Go fills the chunks of the compressed body with random bytes ("otherwise this
            // compresses too well"); a fixed pseudo-random sequence does as much.
            content += compressed ? chunk.indices.map { UInt8(truncatingIfNeeded: ($0 &* 7919 &+ index &* 104_729) >> 3) } : chunk
        }
        var body = compressed ? try Self.gzip(content) : content
        var head = "HTTP/1.1 200 OK\r\n" + (chunked ? "Transfer-Encoding: chunked\r\n" : "Content-Length: 1000000\r\n")
        if compressed { head += "Content-Encoding: gzip\r\n" }
        head += "\r\n"
        if chunked {
            var framed: [UInt8] = []
            var offset = 0
            while offset < body.count {
                let end = min(offset + 1000, body.count)
                framed += Array(String(end - offset, radix: 16).utf8) + [13, 10] + body[offset..<end] + [13, 10]
                offset = end
            }
            body = framed + Array("0\r\n\r\n".utf8)
        }
        let first = Array(head.utf8) + body
        let next = Array("HTTP/1.1 200 OK\r\nContent-Length: 17\r\n\r\nNext Request Here".utf8)
        try await ScriptedHTTPServer.with({ connection, request, _ in connection == 0 && request == 0 ? .respondBytes(first) : .respondBytes(next) }) {
            server in
            try await withManager(baseURL: nil) { manager in
                let stream = try await manager.stream(Self.request(.get, server.baseURL))
                var received: [UInt8] = []
                for try await part in stream.body {
                    received += part.readableBytesView
                    if received.count >= 2500 { break }
                }
                #expect(received.count >= 2500)
                #expect(Array(received.prefix(2500)) == Array(content.prefix(2500)))
                let after = try await Self.send(manager, Self.request(.get, server.baseURL))
                #expect(String(decoding: after.value, as: UTF8.self) == "Next Request Here")
            }
        }
    }

    /// `bytes` gzipped.
    static func gzip(_ bytes: [UInt8]) throws -> [UInt8] {
        Array(try HTTP1ResponseDecompressorTests.gzip(bytes).readableBytesView)
    }
}
