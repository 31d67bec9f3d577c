// Ported from OkHttp's okhttp/src/jvmTest/kotlin/okhttp3/CallTest.kt
// (https://github.com/square/okhttp), Copyright (C) 2013 Square, Inc.,
// licensed under the Apache License, Version 2.0.

import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOCore
import Testing

/// `CallTest`'s cases of bodies: HEAD, empty and unknown-length bodies either way, trailers,
/// and transparent gzip, over real sockets.
@Suite("Conformance: OkHttp CallTest bodies, HEAD and gzip")
struct OkHttpCallBodyTests {
    typealias Call = OkHttpCallTests

    static func ok(_ body: String, _ fields: String = "") -> String { OkHttpConnectionReuseTests.ok(body, fields) }

    /// The value of `name` in a request head as the server read it, nil when absent.
    static func field(_ name: String, in head: String?) -> String? {
        guard let head else { return nil }
        for line in head.split(separator: "\r\n").dropFirst() {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == name.lowercased() { return parts[1].trimmingCharacters(in: .whitespaces) }
        }
        return nil
    }

    // MARK: HEAD

    // OkHttp: head
    @Test func head() async throws {
        try await Call.overHTTP1({ _, _, _ in .respond("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 0\r\n\r\n") }) {
            server, manager in
            var request = Request(method: .head, url: server.baseURL)
            request.headerFields[.userAgent] = "SyncApiTest"
            let response = try await manager.responseOfAnyStatus(for: request)
            #expect(response.response.status.code == 200)
            #expect(response.response.headerFields[.contentType] == "text/plain")
            let head = server.receivedHeads.first
            #expect(head?.hasPrefix("HEAD / HTTP/1.1") == true)
            #expect(Self.field("User-Agent", in: head) == "SyncApiTest")
            #expect(Self.field("Content-Length", in: head) == nil)
            #expect(Self.field("Transfer-Encoding", in: head) == nil)
        }
    }

    // OkHttp: head_HTTP_2
    @Test func head_HTTP_2() async throws {
        try await Call.withMock(http2: true) { server, manager in
            server.enqueue(Call.mock(code: 200, [("Content-Type", "text/plain")]))
            var request = Request(method: .head, url: server.url("/"))
            request.headerFields[.userAgent] = "SyncApiTest"
            let response = try await manager.responseOfAnyStatus(for: request)
            #expect(response.response.status.code == 200)
            #expect(response.response.headerFields[.contentType] == "text/plain")
            #expect(response.metrics?.transactions.last?.networkProtocolName == "h2")
            #expect(server.requests.first?.method == .head)
            #expect(server.requests.first?.headerFields[.userAgent] == "SyncApiTest")
            #expect(server.requests.first?.body.isEmpty == true)
        }
    }

    // MARK: Empty bodies

    // OkHttp: postZeroLength
    @Test func postZeroLength() async throws {
        try await Call.overHTTP1({ _, _, _ in .respond(Self.ok("abc")) }) { server, manager in
            let response = try await manager.responseOfAnyStatus(for: Request(method: .post, url: server.baseURL, body: .data(Data())))
            #expect(Call.text(response) == "abc")
            let head = server.receivedHeads.first
            #expect(head?.hasPrefix("POST / ") == true)
            #expect(Self.field("Content-Length", in: head) == "0")
            #expect(Self.field("Content-Type", in: head) == nil)
            #expect(server.receivedBodyLengths == [0])
        }
    }

    // OkHttp: emptyResponseBody
    @Test func emptyResponseBody() async throws {
        try await Call.overHTTP1({ _, _, _ in .respond(Self.ok("", "abc: def\r\n")) }) { server, manager in
            let response = try await manager.responseOfAnyStatus(for: Request(url: server.baseURL))
            #expect(response.response.status.code == 200)
            #expect(response.response.headerFields[HTTPField.Name("abc")!] == "def")
            #expect(response.value.isEmpty)
        }
    }

    // MARK: Request bodies of known and unknown length

    /// OkHttp's `upload(chunked, size, writeSize)`: `size` bytes in chunks of `writeSize`, with
    /// the length announced unless `chunked`. Returns the request as the server received it.
    static func upload(chunked: Bool, size: Int, writeSize: Int) async throws -> TestServer.Request? {
        var received: TestServer.Request?
        try await Call.withMock { server, manager in
            server.enqueue(Call.mock())
            let chunks = AsyncStream<ByteBuffer> { continuation in
                var left = size
                while left > 0 {
                    let count = min(writeSize, left)
                    continuation.yield(ByteBuffer(repeating: UInt8(ascii: "x"), count: count))
                    left -= count
                }
                continuation.finish()
            }
            let body = RequestBody.stream(chunks.map { $0 }, length: chunked ? .unknown : .known(Int64(size)))
            let response = try await manager.responseOfAnyStatus(for: Request(method: .post, url: server.url("/"), body: body))
            #expect(response.response.status.code == 200)
            received = server.requests.first
        }
        return received
    }

    // OkHttp: uploadBodySmallChunkedEncoding
    @Test func uploadBodySmallChunkedEncoding() async throws {
        let request = try await Self.upload(chunked: true, size: 1_048_576, writeSize: 256)
        #expect(request?.body.count == 1_048_576)
        #expect(request?.headerFields[.transferEncoding] == "chunked")
        #expect(request?.headerFields[.contentLength] == nil)
    }

    // OkHttp: uploadBodyEmptyChunkedEncoding
    @Test func uploadBodyEmptyChunkedEncoding() async throws {
        let request = try await Self.upload(chunked: true, size: 0, writeSize: 256)
        #expect(request?.body.isEmpty == true)
        #expect(request?.headerFields[.transferEncoding] == "chunked")
    }

    // OkHttp: uploadBodyLargeChunkedEncoding
    @Test func uploadBodyLargeChunkedEncoding() async throws {
        let request = try await Self.upload(chunked: true, size: 1_048_576, writeSize: 65536)
        #expect(request?.body.count == 1_048_576)
        #expect(request?.headerFields[.transferEncoding] == "chunked")
    }

    // OkHttp: uploadBodySmallFixedLength
    @Test func uploadBodySmallFixedLength() async throws {
        let request = try await Self.upload(chunked: false, size: 1_048_576, writeSize: 256)
        #expect(request?.body.count == 1_048_576)
        #expect(request?.headerFields[.contentLength] == "1048576")
        #expect(request?.headerFields[.transferEncoding] == nil)
    }

    // OkHttp: uploadBodyLargeFixedLength
    @Test func uploadBodyLargeFixedLength() async throws {
        let request = try await Self.upload(chunked: false, size: 1_048_576, writeSize: 65536)
        #expect(request?.body.count == 1_048_576)
        #expect(request?.headerFields[.contentLength] == "1048576")
        #expect(request?.headerFields[.transferEncoding] == nil)
    }

    // MARK: Response bodies of unknown length, trailers

    // OkHttp: clientReadsHeadersDataTrailersHttp1ChunkedTransferEncoding
    @Test func clientReadsHeadersDataTrailersHttp1ChunkedTransferEncoding() async throws {
        let answer = "HTTP/1.1 200 OK\r\nh1: v1\r\nh2: v2\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "c\r\nHelloBonjour\r\n0\r\ntrailers: boom\r\n\r\n"
        try await Call.overHTTP1({ _, _, _ in .respond(answer) }) { server, manager in
            let response = try await manager.stream(Request(url: server.baseURL))
            #expect(response.response.headerFields[HTTPField.Name("h1")!] == "v1")
            #expect(response.response.headerFields[HTTPField.Name("h2")!] == "v2")
            var text = ""
            for try await chunk in response.body { text += String(buffer: chunk) }
            #expect(text == "HelloBonjour")
            #expect(response.task.responseTrailers == [HTTPField.Name("trailers")!: "boom"])
        }
    }

    // OkHttp: connectionsAreNotReusedWithUnknownLengthResponseBody's body, read whole
    @Test func bodyEndingWithTheConnectionIsReadWhole() async throws {
        let body = String(repeating: "0123456789", count: 10_000)
        try await Call.overHTTP1({ _, _, _ in .respond("HTTP/1.1 200 OK\r\n\r\n" + body, thenClose: true) }) { server, manager in
            let response = try await manager.responseOfAnyStatus(for: Request(url: server.baseURL))
            #expect(Call.text(response) == body)
        }
    }

    // MARK: gzip

    // OkHttp: gzip
    @Test func gzip() async throws {
        let gzipped = try OkHttpCacheWireTests.gzip("abcabcabc")
        try await Call.overHTTP1({ _, _, _ in
            .respondBytes(Array("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: \(gzipped.count)\r\n\r\n".utf8) + gzipped)
        }) { server, manager in
            let response = try await manager.responseOfAnyStatus(for: Request(url: server.baseURL))
            #expect(response.response.status.code == 200)
            #expect(Call.text(response) == "abcabcabc")
            // The request asked for gzip (OkHttp's network request; its user request does not).
            #expect(Self.field("Accept-Encoding", in: server.receivedHeads.first)?.contains("gzip") == true)
        }
    }

    // OkHttp: rangeHeaderPreventsAutomaticGzip
    @Test func rangeHeaderPreventsAutomaticGzip() async throws {
        // No `Accept-Encoding` goes with a `Range`, as in OkHttp. A 206 the server gzipped all the
        // same is decoded by Courier (OkHttp hands it over as it came): without the field every
        // coding is acceptable (RFC 9110 12.5.3), and a range that is the whole representation decodes.
        let gzipped = try OkHttpCacheWireTests.gzip("abcabcabc")
        let head = "HTTP/1.1 206 Partial Content\r\nContent-Encoding: gzip\r\nContent-Range: bytes 0-\(gzipped.count - 1)/\(gzipped.count)\r\n"
            + "Content-Length: \(gzipped.count)\r\n\r\n"
        try await Call.overHTTP1({ _, _, _ in .respondBytes(Array(head.utf8) + gzipped) }) { server, manager in
            var request = Request(url: server.baseURL)
            request.headerFields[.range] = "bytes=0-"
            let response = try await manager.responseOfAnyStatus(for: request)
            #expect(response.response.status.code == 206)
            #expect(Call.text(response) == "abcabcabc")
            #expect(Self.field("Accept-Encoding", in: server.receivedHeads.first) == nil)
        }
    }

    // OkHttp: rangeHeaderPreventsAutomaticGzip (a range that does not start at 0), and one from
    // byte 0 that is not the whole representation (not OkHttp's)
    /// The range is of the gzipped bytes (Content-Encoding is the representation's): from byte
    /// 10 they cannot be decoded, and a start that is not the whole (`bytes 0-19/N`) inflates but
    /// never ends (it failed as truncated, after the inflated bytes had gone to the caller). The
    /// bytes are the answer, as OkHttp gives them.
    @Test(arguments: [(10, nil), (0, 20)] as [(Int, Int?)])
    func gzippedRangeThatIsNotTheWholeIsHandedOverAsItCame(_ first: Int, _ end: Int?) async throws {
        let gzipped = try OkHttpCacheWireTests.gzip(String(repeating: "abcdefgh", count: 64))
        let end = end ?? gzipped.count
        let part = Array(gzipped[first..<end])
        let head = "HTTP/1.1 206 Partial Content\r\nContent-Encoding: gzip\r\nContent-Range: bytes \(first)-\(end - 1)/\(gzipped.count)\r\n"
            + "Content-Length: \(part.count)\r\n\r\n"
        try await Call.overHTTP1({ _, _, _ in .respondBytes(Array(head.utf8) + part) }) { server, manager in
            var request = Request(url: server.baseURL)
            request.headerFields[.range] = "bytes=\(first)-\(end - 1)"
            let response = try await manager.responseOfAnyStatus(for: request)
            #expect(response.response.status.code == 206)
            #expect(Array(response.value) == part)
        }
    }

    // MARK: Methods and default fields

    // OkHttp: getWithRequestBody
    @Test func getWithRequestBody() async throws {
        // OkHttp refuses to build a GET with a body. Courier sends what it is given: RFC 9110 9.3.1
        // gives such content no meaning but does not forbid it (URLSession drops it; Go and curl
        // send it).
        try await Call.overHTTP1({ _, _, _ in .respond(Self.ok("")) }) { server, manager in
            let response = try await manager.responseOfAnyStatus(for: Request(method: .get, url: server.baseURL, body: .data(Data("abc".utf8))))
            #expect(response.response.status.code == 200)
            #expect(server.receivedHeads.first?.hasPrefix("GET / ") == true)
            #expect(server.receivedBodyLengths == [3])
        }
    }

    // OkHttp: customMethodWithBody, delete, deleteWithRequestBody, put, patch
    @Test(arguments: ["CUSTOM", "DELETE", "PUT", "PATCH"])
    func methodWithBody(_ method: String) async throws {
        try await Call.overHTTP1({ _, _, _ in .respond(Self.ok("abc")) }) { server, manager in
            var request = Request(method: HTTPRequest.Method(method)!, url: server.baseURL, body: .data(Data("def".utf8)))
            request.headerFields[.contentType] = "text/plain; charset=utf-8"
            let response = try await manager.responseOfAnyStatus(for: request)
            #expect(Call.text(response) == "abc")
            let head = server.receivedHeads.first
            #expect(head?.hasPrefix("\(method) / ") == true)
            #expect(Self.field("Content-Length", in: head) == "3")
            #expect(Self.field("Content-Type", in: head) == "text/plain; charset=utf-8")
            #expect(server.receivedBodyLengths == [3])
        }
    }

    // OkHttp: unspecifiedRequestBodyContentTypeDoesNotGetDefault
    @Test func unspecifiedRequestBodyContentTypeDoesNotGetDefault() async throws {
        try await Call.overHTTP1({ _, _, _ in .respond(Self.ok("")) }) { server, manager in
            _ = try await manager.responseOfAnyStatus(for: Request(method: .post, url: server.baseURL, body: .data(Data("abc".utf8))))
            let head = server.receivedHeads.first
            #expect(Self.field("Content-Type", in: head) == nil)
            #expect(Self.field("Content-Length", in: head) == "3")
        }
    }

    // OkHttp: userAgentIsIncludedByDefault
    @Test func userAgentIsIncludedByDefault() async throws {
        try await Call.overHTTP1({ _, _, _ in .respond(Self.ok("")) }) { server, manager in
            _ = try await manager.responseOfAnyStatus(for: Request(url: server.baseURL))
            let userAgent = Self.field("User-Agent", in: server.receivedHeads.first)
            #expect(userAgent != nil)
            #expect(userAgent == SessionConfiguration.default.userAgent)
        }
    }
}
