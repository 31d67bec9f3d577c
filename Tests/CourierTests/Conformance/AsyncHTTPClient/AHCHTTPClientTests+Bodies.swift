// Ported from AsyncHTTPClient's Tests/AsyncHTTPClientTests/HTTPClientTests.swift and
// AsyncAwaitEndToEndTests.swift (https://github.com/swift-server/async-http-client), Copyright (c)
// 2018-2022 Apple Inc. and the AsyncHTTPClient project authors, licensed under the Apache
// License, Version 2.0.

import CompressNIO
import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOCore
import Testing

/// Twins of AsyncHTTPClient's tests of response bodies: decompression (its HTTPBin in `compress`
/// mode, NIO's response compressor choosing the coding the request accepts) and the size limit
/// of its `ResponseAccumulator` (`maxBodySize`), which is Courier's
/// ``SessionConfiguration/maximumResponseBodySize``.
@Suite("Conformance: AsyncHTTPClient response bodies")
struct AHCResponseBodyTests {
    /// AHC's body for its decompression tests: a thousand lines of lorem ipsum (123 KB).
    static let lorem = String(
        repeating: "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua.",
        count: 1000)

    static func compressed(_ data: Data, _ algorithm: ZlibAlgorithm) throws -> [UInt8] {
        var input = ByteBuffer(bytes: data)
        return Array(try input.compress(with: algorithm, configuration: ZlibConfiguration()).readableBytesView)
    }

    /// The coding NIO's `HTTPResponseCompressor` picks for `acceptEncoding` (the first of gzip and
    /// deflate named), and its name in `Content-Encoding`.
    static func coding(for acceptEncoding: String?) -> (name: String, algorithm: ZlibAlgorithm)? {
        let names = (acceptEncoding ?? "").split(separator: ",").map { $0.split(separator: ";")[0].trimmingCharacters(in: .whitespaces).lowercased() }
        for name in names {
            if name == "gzip" { return ("gzip", .gzip) }
            if name == "deflate" { return ("deflate", .zlib) }
        }
        return nil
    }

    /// A chunked answer whose body is `body` in pieces of `size` bytes.
    static func chunked(_ body: [UInt8], size: Int, head: String) -> [UInt8] {
        var bytes = Array((head + "Transfer-Encoding: chunked\r\n\r\n").utf8)
        var index = 0
        while index < body.count {
            let piece = body[index..<min(index + size, body.count)]
            bytes += Array("\(String(piece.count, radix: 16))\r\n".utf8) + piece + Array("\r\n".utf8)
            index += size
        }
        return bytes + Array("0\r\n\r\n".utf8)
    }

    // MARK: Decompression

    // AHC: testDecompression (the body posted comes back in the coding the request accepts:
    // none named, gzip, deflate; here in chunks of 100 bytes, each a piece of the coded stream)
    @Test(arguments: [nil, "gzip", "deflate"])
    func aBodyInTheCodingTheRequestAcceptsIsDecoded(_ acceptEncoding: String?) async throws {
        let plain = Data(Self.lorem.utf8)
        let script: ScriptedHTTPServer.Script = { _, _, head in
            let accepted = AHCHTTPClientTests.values("accept-encoding", in: head).first
            guard let coding = Self.coding(for: accepted), let body = try? Self.compressed(plain, coding.algorithm) else {
                return .respond("HTTP/1.1 406 Not Acceptable\r\nContent-Length: 0\r\n\r\n")
            }
            return .respondBytes(Self.chunked(body, size: 100, head: "HTTP/1.1 200 OK\r\nContent-Encoding: \(coding.name)\r\n"))
        }
        try await AHCHTTPClientTests.overHTTP1(script) { server, manager async throws in
            var request = Request(method: .post, url: server.baseURL, body: .data(plain))
            if let acceptEncoding { request.headerFields[.acceptEncoding] = acceptEncoding }
            let response = try await manager.responseOfAnyStatus(for: request)
            #expect(response.response.status == .ok)
            #expect(response.data == plain, "\(response.data?.count ?? 0) bytes")
            // The request's own `Accept-Encoding` goes as it is; without one, Courier's.
            let head = try #require(server.receivedHeads.first)
            #expect(AHCHTTPClientTests.values("accept-encoding", in: head) == [acceptEncoding ?? "deflate, gzip"], "\(head)")
        }
    }

    // AHC: testDecompressionHTTP2 (the same over HTTP/2: the coded body in DATA frames)
    @Test func aCompressedBodyIsDecodedOverHTTP2() async throws {
        try await withTestServer(.https()) { server async throws in
            server.route("/post") { request in
                guard let coding = Self.coding(for: request.value(forHTTPHeaderField: "Accept-Encoding")) else {
                    return TestServer.Response(status: .notAcceptable, body: Data())
                }
                return TestServer.Response(
                    headerFields: [.contentEncoding: coding.name, .contentType: "text/plain"],
                    body: Data(try Self.compressed(request.body, coding.algorithm)))
            }
            try await withManager(baseURL: nil, securityPolicy: try Transport.trustingTestRoot()) { manager async throws in
                for acceptEncoding in [nil, "gzip", "deflate"] {
                    var request = Request(method: .post, url: server.url("/post"), body: .data(Data(Self.lorem.utf8)))
                    if let acceptEncoding { request.headerFields[.acceptEncoding] = acceptEncoding }
                    let response = try await manager.responseOfAnyStatus(for: request)
                    #expect(response.response.status == .ok, "\(acceptEncoding ?? "none")")
                    #expect(response.data == Data(Self.lorem.utf8), "\(acceptEncoding ?? "none"): \(response.data?.count ?? 0) bytes")
                }
                #expect(server.requestCountsByHTTPVersion == ["HTTP/2": 3], "\(server.requestCountsByHTTPVersion)")
            }
        }
    }

    // MARK: The body's size limit

    /// A manager whose responses may be at most `limit` bytes.
    static func withLimitedManager<T>(_ limit: Int, _ body: (HTTPSessionManager) async throws -> T) async throws -> T {
        var configuration = SessionConfiguration.default
        configuration.maximumResponseBodySize = limit
        configuration.responseCache = nil
        return try await withManager(baseURL: nil, configuration: configuration, securityPolicy: try Transport.trustingTestRoot(), body)
    }

    /// A script echoing each request's body, framed by `Content-Length` or chunked.
    static func echo(chunked: Bool) -> ScriptedHTTPServer.Script {
        { _, _, head in
            let length = AHCHTTPClientTests.values("content-length", in: head).first.flatMap { Int($0) } ?? 0
            // The echo of AHC's `HTTPEchoHandler`: these bodies are bytes 0..<length.
            let body = (0..<length).map { UInt8($0) }
            return chunked
                ? .respondBytes(Self.chunked(body, size: 4, head: "HTTP/1.1 200 OK\r\n"))
                : .respondBytes(Array("HTTP/1.1 200 OK\r\nContent-Length: \(length)\r\n\r\n".utf8) + body)
        }
    }

    // AHC: testResponseAccumulatorMaxBodySizeLimitExceedingWithContentLength,
    // testResponseAccumulatorMaxBodySizeLimitNotExceedingWithContentLength,
    // testResponseAccumulatorMaxBodySizeLimitExceedingWithTransferEncodingChuncked,
    // testResponseAccumulatorMaxBodySizeLimitNotExceedingWithTransferEncodingChuncked (a limit of
    // 10 bytes: a body of 10 is the response, one of 11 is refused, framed either way)
    @Test(arguments: [false, true])
    func aBodyOneBytePastTheLimitIsRefused(chunked: Bool) async throws {
        try await AHCHTTPClientTests.overHTTP1(Self.echo(chunked: chunked)) { server, _ async throws in
            try await Self.withLimitedManager(10) { manager async throws in
                let ten = Data((0..<10).map { UInt8($0) })
                let response = try await manager.responseOfAnyStatus(for: Request(method: .post, url: server.baseURL, body: .data(ten)))
                #expect(response.data == ten)
                let eleven = Data((0..<11).map { UInt8($0) })
                let error = await #expect(throws: CourierError.self) {
                    _ = try await manager.responseOfAnyStatus(for: Request(method: .post, url: server.baseURL, body: .data(eleven)))
                }
                #expect(error?.code == .responseTooLarge, "\(String(describing: error))")
                #expect(error?.response?.status == .ok)
            }
        }
    }

    // AHC: testResponseAccumulatorMaxBodySizeLimitExceedingWithContentLengthButMethodIsHead (a
    // HEAD's answer has no body, whatever its `Content-Length` says: RFC 9110 9.3.2)
    @Test func aHeadsContentLengthPastTheLimitIsNoBody() async throws {
        try await AHCHTTPClientTests.overHTTP1({ _, _, _ in .respond("HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n") }) { server, _ async throws in
            try await Self.withLimitedManager(10) { manager async throws in
                for _ in 0..<2 {
                    let response = try await manager.responseOfAnyStatus(for: Request(method: .head, url: server.baseURL))
                    #expect(response.response.status == .ok)
                    #expect(response.response.headerFields[.contentLength] == "11")
                    #expect(response.data?.isEmpty != false)
                }
                // The answer was whole without a body: the connection carried the second HEAD.
                #expect(server.connectionCount == 1)
            }
        }
        // Over HTTP/2: `/get` answers a HEAD with the length of its document, more than 10 bytes.
        try await withTestServer(.https()) { server async throws in
            try await Self.withLimitedManager(10) { manager async throws in
                let response = try await manager.responseOfAnyStatus(for: Request(method: .head, url: server.url("/get")))
                #expect(response.response.status == .ok)
                #expect(Int(response.response.headerFields[.contentLength] ?? "0") ?? 0 > 10)
                #expect(response.data?.isEmpty != false)
                #expect(server.requestCountsByHTTPVersion == ["HTTP/2": 1])
            }
        }
    }

    // AHC: testResponseAccumulatorMaxBodySizeLimitExceedingWithContentLength, with a compressed
    // body (AHC's accumulator counts the body its decompressor gives, not the coded bytes): a
    // `Content-Length` under the limit whose decoded body is over it is refused, and a decoded
    // body at the limit is the response.
    @Test func theLimitCountsTheDecodedBody() async throws {
        let decoded = Data(String(repeating: "a", count: 1000).utf8)
        let coded = try Self.compressed(decoded, .gzip)
        let answer = Array("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: \(coded.count)\r\n\r\n".utf8) + coded
        try await AHCHTTPClientTests.overHTTP1({ _, _, _ in .respondBytes(answer) }) { server, _ async throws in
            #expect(coded.count < 100)
            try await Self.withLimitedManager(999) { manager async throws in
                let error = await #expect(throws: CourierError.self) {
                    _ = try await manager.responseOfAnyStatus(for: Request(url: server.baseURL))
                }
                #expect(error?.code == .responseTooLarge, "\(String(describing: error))")
            }
            try await Self.withLimitedManager(1000) { manager async throws in
                #expect(try await manager.responseOfAnyStatus(for: Request(url: server.baseURL)).data == decoded)
            }
        }
    }

    // AHC: testResponseAccumulatorMaxBodySizeLimitExceedingWithContentLengthButMethodIsHead and
    // HTTPClientResponseTests.testSimpleResponseNotModified, with a coded answer (`HEAD`, `204`,
    // `304` labelled `Content-Encoding: gzip`): there is no body, so nothing to decode, and no
    // "invalid compressed body" for the bytes that never come
    @Test func aBodilessAnswerLabelledGzipIsNoBodyToDecode() async throws {
        let script: ScriptedHTTPServer.Script = { _, _, head in
            if head.hasPrefix("HEAD ") { return .respond("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 40\r\n\r\n") }
            if head.hasPrefix("GET /204 ") { return .respond("HTTP/1.1 204 No Content\r\nContent-Encoding: gzip\r\n\r\n") }
            if head.hasPrefix("GET /304 ") { return .respond("HTTP/1.1 304 Not Modified\r\nContent-Encoding: gzip\r\nContent-Length: 40\r\n\r\n") }
            return .respond(AHCHTTPClientTests.ok)
        }
        try await AHCHTTPClientTests.overHTTP1(script) { server, manager async throws in
            let requests = [
                Request(method: .head, url: server.baseURL), Request(url: server.baseURL.appendingPathComponent("204")),
                Request(url: server.baseURL.appendingPathComponent("304")),
            ]
            for request in requests {
                let response = try await manager.responseOfAnyStatus(for: request)
                #expect(response.data?.isEmpty != false, "\(request.url.path)")
            }
            #expect(try await manager.responseOfAnyStatus(for: Request(url: server.baseURL.appendingPathComponent("next"))).response.status == .ok)
            #expect(server.connectionCount == 1)
        }
    }

    // AHC: testSimpleContentLengthErrorNoBody (its `/content-length-without-body` declares a body
    // over HTTP/2 and ends the stream without one: AHC's `collect(upTo: 3)` fails; a response
    // that ends before its `Content-Length` is not whole, RFC 9113 8.1.1)
    @Test func anHTTP2AnswerEndingShortOfItsContentLengthFails() async throws {
        try await OkHttpHTTP2Tests.run({ index, _ in
            index == 0 ? .respondWithBlock([(":status", "200"), ("content-length", "1000")]) : .respond("next")
        }) { server, manager async throws in
            let error = await #expect(throws: CourierError.self) { _ = try await OkHttpHTTP2Tests.get(server, manager) }
            #expect(error?.code == .invalidResponse || error?.code == .connectionClosed, "\(String(describing: error))")
            // A stream error: the connection carries the next request.
            #expect(OkHttpHTTP2Tests.text(try await OkHttpHTTP2Tests.get(server, manager)) == "next")
            #expect(server.connectionCount == 1)
        }
    }
}
