// Ported from Go's src/net/http/internal/chunked_test.go (go1.19, https://go.dev/), Copyright
// 2011 The Go Authors. All rights reserved. Use of this source code is governed by a BSD-style
// licence.

import Courier
import Foundation
import HTTPTypes
import NIOCore
import Testing

/// Go's chunked reader tests (go1.19, `net/http/internal/chunked_test.go`) whose input is bytes on
/// the wire: `TestChunk`, `TestChunkReadMultiple`, `TestParseHexUint` (its sizes, as chunk-size
/// lines), `TestChunkReadingIgnoresExtensions`, `TestChunkReadPartial`, `TestIncompleteChunk` and
/// `TestChunkEndReadError`, with rows for what `chunked.go` does that no test shows (whitespace
/// around the size, a missing CRLF after the data, a size line past 4 KiB, an empty size line,
/// trailers). Each is the body of a `Transfer-Encoding: chunked` response written by a scripted
/// server over a real socket to Courier's HTTP/1.1 engine: Courier gives the right body, or fails
/// with a typed error whose ``CourierError/data`` is the data of the chunks before the fault —
/// never a hang (every request has a timeout; a failure whose connection stays open must not wait
/// for more bytes) and never bytes lost.
///
/// Where Courier answers otherwise, on purpose:
/// - Its decoder (llhttp, strict) reads the chunk-size grammar of RFC 9112 7.1: whitespace after
///   the size (`4 \r\n`, Go trims it) and an empty size line (Go reads it as the last chunk) are
///   refused with ``CourierError/Code/invalidResponse``; leading zeros are read however many
///   (Go refuses more than 16 digits, "could accept if we wanted"), and a chunk-size or extension
///   line has no length limit of its own (Go: 4,096 bytes).
/// - A chunk's data ended by a bare LF is read as ended by CRLF (`ResponseHeadMender`, as curl
///   and OkHttp read it; Go refuses it as "malformed chunked encoding").
/// - A body that ends at `0\r\n` with the connection closed, without the blank line that ends
///   the trailer section, fails (Go's `ChunkedReader` stops at the last chunk, and its transport
///   also fails reading the trailer).
/// The rows say where; Go's answer is in the comment.
@Suite("Go's chunked reader tests")
struct GoChunkedTests {
    /// How the server ends after the bytes.
    enum End: Sendable {
        case keepOpen
        case close
        case reset
    }

    enum Outcome: Sendable {
        /// The body, and the trailer fields (name, value) that ended it.
        case body(String, trailers: [HTTPField] = [])
        /// A failure with this code, after the data of the chunks before the fault.
        case failure(CourierError.Code, received: String)
    }

    struct Row: Sendable, CustomTestStringConvertible {
        let name: String
        /// The body's bytes on the wire, after the head.
        let wire: String
        var end = End.keepOpen
        let outcome: Outcome
        var testDescription: String { self.name }
    }

    static let head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"

    /// The request, with a timeout on every wait (60 s: no row waits for it, and a full CI run
    /// held every test for about 36 s).
    static func request(_ url: URL) -> Request {
        var request = Request(url: url)
        request.options.timeoutInterval = 60
        return request
    }

    static func check(_ row: Row, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let bytes = Self.head + row.wire
        let action: ScriptedHTTPServer.Action =
            switch row.end {
            case .keepOpen: .respond(bytes)
            case .close: .respond(bytes, thenClose: true)
            case .reset: .reset(partial: bytes)
            }
        try await ScriptedHTTPServer.with({ _, _, _ in action }) { server in
            try await withManager(baseURL: nil) { manager in
                switch row.outcome {
                case .body(let body, let trailers):
                    let response = try await manager.stream(Self.request(server.baseURL))
                    var received: [UInt8] = []
                    for try await chunk in response.body { received += chunk.readableBytesView }
                    #expect(String(decoding: received, as: UTF8.self) == body, sourceLocation: sourceLocation)
                    #expect(Array(response.task.responseTrailers ?? [:]) == trailers, sourceLocation: sourceLocation)
                case .failure(let code, let received):
                    do {
                        let response = try await manager.responseOfAnyStatus(for: Self.request(server.baseURL))
                        Issue.record("\(row.name): answered \(String(decoding: response.value, as: UTF8.self).debugDescription)",
                                     sourceLocation: sourceLocation)
                    } catch let error as CourierError {
                        #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
                        #expect(error.response?.status.code == 200, sourceLocation: sourceLocation)
                        #expect(String(decoding: error.data ?? Data(), as: UTF8.self) == received, sourceLocation: sourceLocation)
                    }
                }
            }
        }
    }

    static func row(_ name: String, _ wire: String, _ end: End, _ outcome: Outcome) -> Row {
        Row(name: name, wire: wire, end: end, outcome: outcome)
    }

    /// A row whose server keeps the connection open after the bytes.
    static func row(_ name: String, _ wire: String, _ outcome: Outcome) -> Row {
        Row(name: name, wire: wire, end: .keepOpen, outcome: outcome)
    }

    static let rows: [Row] = [
        // TestChunk: the writer's output, with the blank line that ends a message.
        row("TestChunk", "7\r\nhello, \r\n17\r\nworld! 0123456789abcdef\r\n0\r\n\r\n", .body("hello, world! 0123456789abcdef")),
        // TestChunkReadMultiple
        row("small chunks", "3\r\nfoo\r\n3\r\nbar\r\n0\r\n\r\n", .body("foobar")),
        row("a big chunk, then a small one", "b\r\n0123456789a\r\n3\r\nfoo\r\n0\r\n\r\n", .body("0123456789afoo")),
        // Go: "foo", then io.EOF from the ChunkedReader (its transport then fails reading the
        // trailer: "http: unexpected EOF reading trailer").
        row("the last chunk without the trailer section's end", "3\r\nfoo\r\n0\r\n", .close, .failure(.connectionClosed, received: "foo")),
        // TestParseHexUint, its sizes as chunk-size lines.
        row("size x", "x\r\n", .failure(.invalidResponse, received: "")),
        row("size 0000000000000000", "0000000000000000\r\n\r\n", .body("")),
        row("size 0000000000000001", "0000000000000001\r\nz\r\n0\r\n\r\n", .body("z")),
        // Go reads the size; the body breaks off after `abc`.
        row("size ffffffffffffffff", "ffffffffffffffff\r\nabc", .close, .failure(.connectionClosed, received: "abc")),
        row("size 000000000000bogus", "000000000000bogus\r\n", .failure(.invalidResponse, received: "")),
        // Go: "http chunk length too large" ("could accept if we wanted").
        row("size 00000000000000000", "00000000000000000\r\n\r\n", .body("")),
        row("size 10000000000000000", "10000000000000000\r\nabc", .failure(.invalidResponse, received: "")),
        // Go: "http chunk length too large" ("could accept if we wanted").
        row("size 00000000000000001", "00000000000000001\r\nz\r\n0\r\n\r\n", .body("z")),
        row("size 4d2", "4d2\r\n" + String(repeating: "y", count: 1234) + "\r\n0\r\n\r\n", .body(String(repeating: "y", count: 1234))),
        // TestChunkReadingIgnoresExtensions
        row("extensions", "7;ext=\"some quoted string\"\r\nhello, \r\n17;someext\r\nworld! 0123456789abcdef\r\n0;someextension=sometoken\r\n\r\n",
            .body("hello, world! 0123456789abcdef")),
        // TestChunkEndReadError: the connection reset after a chunk's data.
        row("TestChunkEndReadError", "4\r\nabcd", .reset, .failure(.connectionClosed, received: "abcd")),
        // chunked.go: a chunk's data not followed by CRLF ("malformed chunked encoding").
        row("data not followed by CRLF", "4\r\nabcdXX0\r\n\r\n", .failure(.invalidResponse, received: "abcd")),
        // Go: "malformed chunked encoding".
        row("data followed by a bare LF", "4\r\nabcd\n0\r\n\r\n", .body("abcd")),
        // Go: "abcd" (trailing whitespace trimmed).
        row("a size with trailing spaces", "4  \r\nabcd\r\n0\r\n\r\n", .failure(.invalidResponse, received: "")),
        // Go: "abcd" (trailing whitespace trimmed).
        row("a size with a trailing tab", "4\t\r\nabcd\r\n0\r\n\r\n", .failure(.invalidResponse, received: "")),
        // Go: "invalid byte in chunk length".
        row("a size with a leading space", " 4\r\nabcd\r\n0\r\n\r\n", .failure(.invalidResponse, received: "")),
        // Go: "invalid byte in chunk length" (only the end of the line is trimmed).
        row("a size with a space before its extension", "4 ;a=b\r\nabcd\r\n0\r\n\r\n", .failure(.invalidResponse, received: "")),
        row("a second chunk's size refused", "4\r\nabcd\r\nzz\r\n", .failure(.invalidResponse, received: "abcd")),
        // Go: the last chunk (an empty size is 0).
        row("an empty size line", "4\r\nabcd\r\n\r\n", .failure(.invalidResponse, received: "abcd")),
        // Go: "header line too long" (a line of 4,096 bytes or more).
        row("a size line of 5,000 bytes", "4;x=" + String(repeating: "a", count: 4996) + "\r\nabcd\r\n0\r\n\r\n", .body("abcd")),
        row("trailers", "4\r\nabcd\r\n0\r\nExpires: never\r\nX-Trailer: yes\r\n\r\n",
            .body("abcd", trailers: [HTTPField(name: .expires, value: "never"), HTTPField(name: HTTPField.Name("X-Trailer")!, value: "yes")])),
    ]

    @Test(arguments: Self.rows)
    func chunkedBody(_ row: Row) async throws {
        try await Self.check(row)
    }

    /// TestIncompleteChunk (Go issue 48861): every prefix of a chunked body, then the connection
    /// closed, fails (Go: `io.ErrUnexpectedEOF`) after the data before the cut; the whole body
    /// with the blank line that ends it reads.
    static let valid = "4\r\nabcd\r\n" + "5\r\nabc\r\n\r\n" + "0\r\n"

    /// The chunk data in the first `length` bytes of ``valid``.
    static func data(inPrefix length: Int) -> String {
        let bytes = Array(Self.valid.utf8)
        let data = (3..<7).filter { $0 < length } + (12..<17).filter { $0 < length }
        return String(decoding: data.map { bytes[$0] }, as: UTF8.self)
    }

    @Test(arguments: 0..<22)
    func incompleteChunk(_ length: Int) async throws {
        let wire = String(decoding: Array(Self.valid.utf8).prefix(length), as: UTF8.self)
        try await Self.check(Self.row("prefix \(length)", wire, .close, .failure(.connectionClosed, received: Self.data(inPrefix: length))))
    }

    @Test func completeChunk() async throws {
        try await Self.check(Self.row("whole", Self.valid + "\r\n", .body("abcdabc\r\n")))
    }

    /// TestChunkReadPartial (Go issue 17355): a chunk whose data has come is given at once, before
    /// the bytes after it (which do not come until it has been); then `xx`, where the data's CRLF
    /// should be, fails the body (Go: "malformed chunked encoding").
    @Test func chunkReadPartial() async throws {
        let gate = OneShotGate()
        let first = Array((Self.head + "7\r\n1234567").utf8)
        try await ScriptedHTTPServer.with({ _, _, _ in .respondInTwoParts(first, then: Array("xx".utf8), gate: gate) }) { server in
            try await withManager(baseURL: nil) { manager in
                let stream = try await manager.stream(Self.request(server.baseURL))
                var received: [UInt8] = []
                let error = await #expect(throws: CourierError.self) {
                    for try await chunk in stream.body {
                        received += chunk.readableBytesView
                        if received.count == 7 { gate.open() }
                    }
                }
                gate.open()
                #expect(String(decoding: received, as: UTF8.self) == "1234567")
                #expect(error?.code == .invalidResponse, "\(String(describing: error))")
            }
        }
    }
}
