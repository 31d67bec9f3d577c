import Foundation
import NIOCore
import NIOEmbedded
import Testing

@testable import Courier

/// Responses NIO's HTTP/1.1 parser (llhttp, built without its lenient flags) refuses, as real
/// servers send them (a probe's raw-socket server): each fails its exchange with a message that
/// says what was refused. NIO's own texts for several were "unknown (http_parser error)" and
/// "strict mode assertion".
@Suite("HTTP/1.1 responses the parser refuses, on an EmbeddedChannel")
struct HTTP1ParserErrorTests {
    typealias Setup = HopHandlerTests.Setup

    /// The error an exchange ends with when `response` comes, and its setup (for the channel).
    static func failure(after response: String) throws -> (error: CourierError, setup: Setup) {
        let setup = try Setup()
        let (_, recorder) = try setup.run(Request(url: HopHandlerTests.url))
        _ = try setup.written()
        try? setup.receive(response)
        return (try #require(recorder.snapshot.error, "the response was taken: \(recorder.snapshot.body)"), setup)
    }

    @Test(arguments: [
        // The same number again, or listed, is mended before the decoder (HTTP1HeadMendingTests).
        ("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabc", "a second Content-Length field with another number"),
        ("HTTP/1.1 200 OK\r\nContent-Length: 3, 4\r\n\r\nabc", "a Content-Length that is not one number"),
        // Beside `chunked`, Content-Length is removed before the decoder (HTTP1HeadMendingTests).
        ("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: identity\r\n\r\nhello", "Content-Length with a Transfer-Encoding other than chunked"),
        // Bare LFs, in a head and in a chunked body, are mended before the decoder.
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5; a=b\r\nhello\r\n0\r\n\r\n", "whitespace around a chunk extension"),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5 ;a=b\r\nhello\r\n0\r\n\r\n", "whitespace before a chunk extension"),
    ])
    func aRefusedResponseSaysWhatWasRefused(_ response: String, _ says: String) throws {
        let (error, _) = try Self.failure(after: response)
        #expect(error.code == .invalidResponse)
        #expect(error.message.contains("the response could not be parsed"), "\(error)")
        #expect(error.message.contains(says), "\(error)")
    }

    /// A transfer coding other than `chunked` (Courier sends no `TE`, so none may come, RFC 9112
    /// 7.4): the exchange fails saying which, and the connection closes. Before, the coded bytes
    /// came as the content with no error (a probe's raw-socket server; curl decodes gzip and
    /// fails on an unknown coding). `chunked` in any case, and the old `identity`, are taken.
    @Test(arguments: [
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", "gzip"),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: foo ,Chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", "foo"),
        ("HTTP/1.1 200 OK\r\ntransfer-encoding: GZIP\r\nConnection: close\r\n\r\nabc", "gzip"),
    ])
    func aTransferCodingOtherThanChunkedFails(_ response: String, _ coding: String) throws {
        let (error, setup) = try Self.failure(after: response)
        #expect(error.code == .invalidResponse)
        #expect(error.message.contains("the server applied the transfer coding '\(coding)'"), "\(error)")
        #expect(!setup.channel.isActive, "the connection stays open")
    }

    /// `chunked` must be the last transfer coding and come once (RFC 9112 6.1): after it,
    /// `identity`, `chunked` again or any other coding, in the same field or a later one, fails
    /// the exchange and closes the connection. llhttp reads only the last coding: with `chunked,
    /// identity` it took the body as ending at the close and handed the chunks' framing on as the
    /// content (Go and curl refuse such a head).
    @Test(arguments: [
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, identity\r\n\r\n3\r\nabc\r\n0\r\n\r\n", "identity"),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n3\r\nabc\r\n0\r\n\r\n", "identity"),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\nTransfer-Encoding: Identity\r\n\r\n3\r\nabc\r\n0\r\n\r\n", "identity"),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", "chunked"),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", "chunked"),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: identity, chunked, gzip\r\n\r\n3\r\nabc\r\n0\r\n\r\n", "gzip"),
    ])
    func aCodingAfterChunkedFails(_ response: String, _ coding: String) throws {
        let (error, setup) = try Self.failure(after: response)
        #expect(error.code == .invalidResponse)
        #expect(error.message.contains("the transfer coding '\(coding)' after 'chunked'"), "\(error)")
        #expect(!setup.channel.isActive, "the connection stays open")
    }

    @Test(arguments: [
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: CHUNKED\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: identity, chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
    ])
    func chunkedInAnyCaseIsTaken(_ response: String) throws {
        let setup = try Setup()
        let (_, recorder) = try setup.run(Request(url: HopHandlerTests.url))
        _ = try setup.written()
        try setup.receive(response)
        #expect(recorder.snapshot.error == nil, "\(String(describing: recorder.snapshot.error))")
        #expect(recorder.snapshot.body == "abc")
    }
}
