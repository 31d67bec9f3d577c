import CompressNIO
import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOCore
import Testing

/// Response decompression's guards over every wire (HTTP/1.1 in the connection's pipeline,
/// HTTP/2 in the stream): each bad body fails its task with ``CourierError/Code/invalidResponse``,
/// and one past the ratio limit with ``CourierError/Code/responseTooLarge``.
@Suite("Transport: response decompression's guards")
struct TransportDecompressionTests {
    static let text = Data(String(repeating: "Courier decompresses what it asked for. ", count: 500).utf8)

    static func compressed(_ data: Data, _ algorithm: ZlibAlgorithm) throws -> Data {
        var input = ByteBuffer(bytes: data)
        return Data(try input.compress(with: algorithm, configuration: ZlibConfiguration()).readableBytesView)
    }

    static func route(_ server: TestServer, _ path: String, coding: String, body: Data) {
        server.route(path) { _ in TestServer.Response(headerFields: [.contentEncoding: coding, .contentType: "text/plain"], body: body) }
    }

    @Test(arguments: Transport.allCases)
    func badBodiesFailAsInvalidResponses(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            // Bytes that compress less than the ratio limit, or the truncated and trailing bodies
            // would fail at the limit first (they did, and the test could not tell).
            let gzip = try Self.compressed(Data(TestServer.GeneratedFile(length: 64 << 10).bytes()), .gzip)
            Self.route(server, "/bomb", coding: "gzip", body: try Self.compressed(Data(count: 16 << 20), .gzip))
            Self.route(server, "/truncated", coding: "gzip", body: gzip.prefix(gzip.count / 2))
            Self.route(server, "/trailing", coding: "gzip", body: gzip + Data("junk".utf8))
            Self.route(server, "/not-compressed", coding: "deflate", body: Self.text)
            for path in ["bomb", "truncated", "trailing", "not-compressed"] {
                let error = await #expect(throws: CourierError.self, "\(path)") { _ = try await manager.get(path) }
                // A body past the ratio is too large for the configuration, not invalid: it failed
                // with `.invalidResponse` before, where a WebSocket message inflated past its limit,
                // or a body past `maximumResponseBodySize`, fails with `.responseTooLarge`.
                let expected: CourierError.Code = path == "bomb" ? .responseTooLarge : .invalidResponse
                #expect(error?.code == expected, "\(path): \(String(describing: error))")
                let says = path == "bomb" ? "more than 100 times its compressed size" : "the compressed body is invalid"
                #expect(error?.message.contains(says) == true, "\(path): \(String(describing: error))")
            }
        }
    }

    /// A small body that compresses better than the ratio is decoded whole: nginx sends a 1 MB
    /// JSON array of zeros at about 227 to 1 and Caddy a repetitive page at about 300 to 1, and
    /// the default (a ratio of 100) refused both until the ratio applied only past
    /// ``NIOEngine/Decompression/ratioFreeSize`` (found by interop probes).
    @Test(arguments: Transport.allCases)
    func aSmallBodyThatCompressesBetterThanTheRatioIsDecoded(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            let zeros = Data(("[" + String(repeating: "0,", count: 500_000) + "0]").utf8)
            let gzip = try Self.compressed(zeros, .gzip)
            #expect(gzip.count * 100 < zeros.count, "the body must compress better than the ratio")
            Self.route(server, "/zeros.json", coding: "gzip", body: gzip)
            let response = try await manager.response(for: Request(url: server.url("/zeros.json")), serializer: DataResponseSerializer())
            #expect(response.value == zeros)
        }
    }

    /// A decoded body's progress never passes 100 %: its `Content-Length` counts the coded
    /// bytes, so the length the task expects is unknown until the end, in a data task and a
    /// download alike. It was the coded length, and a 10 to 1 body ended at 1,000 %.
    @Test(arguments: Transport.allCases)
    func aDecodedBodysProgressNeverPassesTheWhole(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            let gzip = try Self.compressed(Self.text, .gzip)
            #expect(gzip.count * 4 < Self.text.count)
            Self.route(server, "/coded", coding: "gzip", body: gzip)
            let fractions = Recorder<Double>()
            let data = try await manager.response(
                for: Request(url: server.url("/coded")), serializer: DataResponseSerializer(), downloadProgress: { fractions.append($0.fractionCompleted) })
            #expect(data.value == Self.text)
            let downloaded = Recorder<Double>()
            let download = try await manager.download(Request(url: server.url("/coded")), progress: { downloaded.append($0.fractionCompleted) })
            defer { try? FileManager.default.removeItem(at: download.fileURL) }
            #expect(try Data(contentsOf: download.fileURL) == Self.text)
            // Unknown lengths report 0 (indeterminate) until the end, as a chunked body's do.
            for seen in [fractions.all, downloaded.all] {
                #expect(!seen.isEmpty && seen.allSatisfy { $0 <= 1.0 }, "\(seen)")
            }
        }
    }

    @Test(arguments: Transport.allCases)
    func framingIsToldByTheBody(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            // Servers mix the names up: a zlib body called gzip, a gzip body called deflate. (Bytes
            // that compress less than the ratio limit: the text above compresses too well.)
            let bytes = Data(TestServer.GeneratedFile(length: 64 << 10).bytes())
            Self.route(server, "/zlib-called-gzip", coding: "gzip", body: try Self.compressed(bytes, .zlib))
            Self.route(server, "/gzip-called-deflate", coding: "deflate", body: try Self.compressed(bytes, .gzip))
            for path in ["zlib-called-gzip", "gzip-called-deflate"] {
                let response = try await manager.response(for: Request(url: server.url("/\(path)")), serializer: DataResponseSerializer())
                #expect(response.value == bytes, "\(path)")
            }
        }
    }

    /// A body past the ratio limit read through a stream whose consumer has not started reading:
    /// the stream fails. Before, over HTTP/1.1 the connection's parts were held for the paused
    /// exchange with the body's end after the error, and the end let the response count as whole:
    /// the stream ended without an error, its body cut at the limit (a probe against Go's server
    /// met it 8 times in 10 through the command-line client).
    @Test(arguments: Transport.allCases)
    func aBodyPastTheLimitFailsAStreamReadLate(_ transport: Transport) async throws {
        try await transport.run(wrapEngine: { EventRecordingEngine(base: $0) }) { server, manager in
            let engine = try #require(manager.engine as? EventRecordingEngine)
            Self.route(server, "/bomb", coding: "gzip", body: try Self.compressed(Data(count: 16 << 20), .gzip))
            let stream = try await manager.stream(Request(url: server.url("/bomb")))
            // The unread body stops the exchange (the limit lets 8 MiB through, more than the
            // stream's high watermark) before the error and the end come.
            #expect(await engine.wait { $0.contains(.suspend) }, "the unread body never stopped the exchange")
            var received = 0
            let error = await #expect(throws: CourierError.self) {
                for try await chunk in stream.body { received += chunk.readableBytes }
            }
            #expect(error?.code == .responseTooLarge, "\(String(describing: error)) after \(received) bytes")
            #expect(received < 16 << 20)
        }
    }

    /// A request that refuses the codings the engine decodes (its own `Accept-Encoding` says
    /// `identity`, or gives gzip a q-value of 0) gets a body labelled gzip anyway as it came, as
    /// curl does: Apache's `AddEncoding gzip .gz` labels a `.tar.gz` file so, and a download that
    /// asked for identity to count the file's bytes saved the unpacked tar (found by an interop
    /// probe). A request that accepts gzip itself still gets it decoded, as from URLSession.
    @Test(arguments: Transport.allCases)
    func aRequestThatRefusesCodingsGetsTheBytesAsTheyCame(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            let bytes = Data(TestServer.GeneratedFile(length: 64 << 10).bytes())
            let gzip = try Self.compressed(bytes, .gzip)
            Self.route(server, "/labelled", coding: "gzip", body: gzip)
            for (acceptEncoding, expected) in [("identity", gzip), ("gzip;q=0, identity", gzip), ("br", gzip), ("gzip", bytes), ("*", bytes)] {
                var request = Request(url: server.url("/labelled"))
                request.setValue(acceptEncoding, forHTTPHeaderField: "Accept-Encoding")
                let response = try await manager.response(for: request, serializer: DataResponseSerializer())
                #expect(response.value == expected, "Accept-Encoding: \(acceptEncoding): \(response.value.count) bytes")
            }
        }
    }

    /// A request with `Range` gets no `Accept-Encoding` from the engine (OkHttp's rule): a range
    /// of a compressed body cannot be decoded unless it starts at 0 (Apache's mod_deflate
    /// answered `bytes=100-199` with a slice of its gzip stream, and the task failed). Other
    /// requests still get it.
    @Test(arguments: Transport.allCases)
    func aRangeRequestAsksForNoCoding(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            server.route("/accept-encoding") { request in
                TestServer.Response(headerFields: [.contentType: "text/plain"], body: Data((request.headerFields[.acceptEncoding] ?? "none").utf8))
            }
            var ranged = Request(url: server.url("/accept-encoding"))
            ranged.setValue("bytes=0-", forHTTPHeaderField: "Range")
            let withRange = try await manager.response(for: ranged, serializer: DataResponseSerializer())
            #expect(String(decoding: withRange.value, as: UTF8.self) == "none")
            let plain = try await manager.response(for: Request(url: server.url("/accept-encoding")), serializer: DataResponseSerializer())
            #expect(String(decoding: plain.value, as: UTF8.self) == "deflate, gzip")
        }
    }

    /// Stacked codings are undone in reverse of their listing, as curl and browsers undo them:
    /// `gzip, gzip`, `deflate, gzip`, the same in two fields, and five layers (curl's limit) come
    /// back as the bytes the server coded. Courier handed them over still coded. A sixth layer
    /// fails the task as curl fails it (`CURLE_BAD_CONTENT_ENCODING`).
    @Test(arguments: Transport.allCases)
    func stackedCodingsAreDecodedUpToFive(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            let bytes = Data(TestServer.GeneratedFile(length: 64 << 10).bytes())
            let gzipGzip = try Self.compressed(try Self.compressed(bytes, .gzip), .gzip)
            let deflateGzip = try Self.compressed(try Self.compressed(bytes, .zlib), .gzip)
            Self.route(server, "/gzip-gzip", coding: "gzip, gzip", body: gzipGzip)
            Self.route(server, "/deflate-gzip", coding: "deflate, gzip", body: deflateGzip)
            server.route("/two-fields") { _ in
                TestServer.Response(
                    headerFields: HTTPFields([
                        HTTPField(name: .contentEncoding, value: "deflate"), HTTPField(name: .contentEncoding, value: "gzip"),
                        HTTPField(name: .contentType, value: "text/plain"),
                    ]),
                    body: deflateGzip)
            }
            let five = try (0..<5).reduce(bytes) { body, _ in try Self.compressed(body, .gzip) }
            Self.route(server, "/five", coding: Array(repeating: "gzip", count: 5).joined(separator: ", "), body: five)
            // tinyproxy passes one `Content-Encoding` field of two on (the last): the body under
            // two fields reaches Courier through it with only `gzip` named.
            let paths = transport == .http1ViaHTTPProxy ? ["gzip-gzip", "deflate-gzip", "five"] : ["gzip-gzip", "deflate-gzip", "two-fields", "five"]
            for path in paths {
                let response = try await manager.response(for: Request(url: server.url("/\(path)")), serializer: DataResponseSerializer())
                #expect(response.value == bytes, "\(path): \(response.value.count) bytes")
            }
            let six = try Self.compressed(five, .gzip)
            Self.route(server, "/six", coding: Array(repeating: "gzip", count: 6).joined(separator: ", "), body: six)
            let error = await #expect(throws: CourierError.self) { _ = try await manager.get("six") }
            #expect(error?.code == .invalidResponse, "\(String(describing: error))")
            #expect(error?.message.contains("names 6 content codings") == true, "\(String(describing: error))")
        }
    }

    /// `x-gzip` is gzip (RFC 9110 8.4.1.3): decoded like it.
    @Test(arguments: Transport.allCases)
    func xGzipIsDecodedAsGzip(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            let bytes = Data(TestServer.GeneratedFile(length: 64 << 10).bytes())
            Self.route(server, "/x-gzip", coding: "x-gzip", body: try Self.compressed(bytes, .gzip))
            let response = try await manager.response(for: Request(url: server.url("/x-gzip")), serializer: DataResponseSerializer())
            #expect(response.value == bytes)
        }
    }
}
