import CompressNIO
import Foundation
import HTTPTypes
import NIOCore
import Testing

@testable import Courier

@Suite("Interceptors: RequestCompressor (gzip, deflate)")
struct RequestCompressorTests {
    static let url = URL(string: "http://api.courier.test/upload")!
    static let text = Data(String(repeating: "Courier compresses request bodies. ", count: 400).utf8)

    /// gzip or zlib data inflated (at most 4 MiB), by its first bytes.
    static func inflate(_ data: Data) -> Data? {
        var input = ByteBuffer(bytes: data)
        let algorithm: ZlibAlgorithm = data.prefix(2) == Data([0x1f, 0x8b]) ? .gzip : .zlib
        guard let output = try? input.decompress(with: algorithm, maxSize: 4 << 20) else { return nil }
        return Data(output.readableBytesView)
    }

    static func collect(_ body: RequestBody) async throws -> Data {
        var data = Data()
        switch body.storage {
        case .stream(let stream, _):
            for try await chunk in stream { data.append(contentsOf: chunk.readableBytesView) }
        case .replayableStream(let make, _):
            for try await chunk in make() { data.append(contentsOf: chunk.readableBytesView) }
        case .data(let bytes):
            data = bytes
        default:
            Issue.record("unexpected body \(body.storage)")
        }
        return data
    }

    static let context = AdaptationContext(taskIdentifier: 1)

    @Test("An in-memory body: gzip and deflate that zlib inflates back, Content-Encoding set, Content-Length dropped")
    func data() async throws {
        for encoding in [RequestCompressor.Encoding.gzip, .deflate] {
            var request = Request(method: .post, url: Self.url, body: .data(Self.text))
            request.headerFields[.contentLength] = "\(Self.text.count)"
            let adapted = try await RequestCompressor(encoding: encoding).adapt(request, using: Self.context)
            #expect(adapted.headerFields[.contentEncoding] == encoding.name)
            #expect(adapted.headerFields[.contentLength] == nil)
            let compressed = try #require(adapted.body.data)
            #expect(compressed.count < Self.text.count / 10)
            #expect(compressed.prefix(2) == (encoding == .gzip ? Data([0x1f, 0x8b]) : Data([0x78, 0x9c])))
            #expect(Self.inflate(compressed) == Self.text)
        }
    }

    @Test("A file and streams are compressed as they are read, chunked; a replayable stream stays replayable")
    func streamed() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-compressor-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let big = Data((0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 % 251 < 200 ? 65 : $0) })
        let file = folder.appendingPathComponent("body.bin")
        try big.write(to: file)
        let compressor = RequestCompressor()
        let fromFile = try await compressor.adapt(Request(method: .put, url: Self.url, body: .file(file)), using: Self.context)
        #expect(fromFile.body.knownLength == nil)
        #expect(fromFile.body.isReplayable)
        let first = try await Self.collect(fromFile.body)
        #expect(Self.inflate(first).map { $0 == big } == true)
        #expect(try await Self.collect(fromFile.body) == first)

        let chunks = stride(from: 0, to: Self.text.count, by: 1000).map { ByteBuffer(bytes: Self.text[$0..<min($0 + 1000, Self.text.count)]) }
        let replayable = RequestBody.replayableStream(length: .known(Int64(Self.text.count))) { AsyncThrowingStream<ByteBuffer, any Error> { continuation in
            for chunk in chunks { continuation.yield(chunk) }
            continuation.finish()
        } }
        let adapted = try await compressor.adapt(Request(method: .post, url: Self.url, body: replayable), using: Self.context)
        #expect(Self.inflate(try await Self.collect(adapted.body)) == Self.text)
        let oneShot = RequestBody.stream(AsyncThrowingStream<ByteBuffer, any Error> { continuation in
            for chunk in chunks { continuation.yield(chunk) }
            continuation.finish()
        }, length: .unknown)
        let adaptedOnce = try await compressor.adapt(Request(method: .post, url: Self.url, body: oneShot), using: Self.context)
        #expect(!adaptedOnce.body.isReplayable)
        #expect(Self.inflate(try await Self.collect(adaptedOnce.body)) == Self.text)
    }

    @Test("Left alone: small bodies, bodies with a Content-Encoding, compressed media, a refusing predicate")
    func leftAlone() async throws {
        let compressor = RequestCompressor(minimumSize: 1024) { $0.url.path != "/skip" }
        let small = Request(method: .post, url: Self.url, body: .data(Data(count: 100)))
        #expect(try await compressor.adapt(small, using: Self.context).headerFields[.contentEncoding] == nil)
        var encoded = Request(method: .post, url: Self.url, body: .data(Self.text))
        encoded.headerFields[.contentEncoding] = "br"
        #expect(try await compressor.adapt(encoded, using: Self.context).body.data == Self.text)
        for type in ["image/png", "video/mp4", "application/zip", "application/gzip; q=1"] {
            var media = Request(method: .post, url: Self.url, body: .data(Self.text))
            media.headerFields[.contentType] = type
            #expect(try await compressor.adapt(media, using: Self.context).body.data == Self.text, "\(type)")
        }
        var svg = Request(method: .post, url: Self.url, body: .data(Self.text))
        svg.headerFields[.contentType] = "image/svg+xml"
        #expect(try await compressor.adapt(svg, using: Self.context).headerFields[.contentEncoding] == "gzip")
        let skipped = Request(method: .post, url: URL(string: "http://api.courier.test/skip")!, body: .data(Self.text))
        #expect(try await compressor.adapt(skipped, using: Self.context).body.data == Self.text)
        #expect(try await compressor.adapt(Request(url: Self.url), using: Self.context).headerFields[.contentEncoding] == nil)
        // Streams whose declared length is under the minimum, or zero, are left alone too (they
        // were compressed: an empty one grew to 20 bytes of gzip framing).
        for length in [0, 10, 1023] as [Int64] {
            for replayable in [false, true] {
                let body: RequestBody = replayable
                    ? .replayableStream(length: .known(length)) { AsyncThrowingStream<ByteBuffer, any Error> { $0.finish() } }
                    : .stream(AsyncThrowingStream<ByteBuffer, any Error> { $0.finish() }, length: .known(length))
                let adapted = try await compressor.adapt(Request(method: .post, url: Self.url, body: body), using: Self.context)
                #expect(adapted.headerFields[.contentEncoding] == nil, "\(length) \(replayable)")
                #expect(adapted.body.knownLength == length)
            }
        }
    }

    @Test("A body with a Content-Encoding of its own: sent as it is, compressed with the field replaced, or refused")
    func duplicateHeader() async throws {
        var encoded = Request(method: .post, url: Self.url, body: .data(Self.text))
        encoded.headerFields[.contentEncoding] = "value"
        let skipped = try await RequestCompressor(duplicateHeaderBehavior: .skip).adapt(encoded, using: Self.context)
        #expect(skipped.body.data == Self.text && skipped.headerFields[.contentEncoding] == "value")

        let replaced = try await RequestCompressor(encoding: .deflate, duplicateHeaderBehavior: .replace).adapt(encoded, using: Self.context)
        #expect(replaced.headerFields[values: .contentEncoding] == ["deflate"])
        #expect(Self.inflate(try #require(replaced.body.data)) == Self.text)
        // Replacing still honours the other checks: a small body stays as it came.
        var small = encoded
        small.body = .data(Data(count: 10))
        #expect(try await RequestCompressor(duplicateHeaderBehavior: .replace).adapt(small, using: Self.context).headerFields[.contentEncoding] == "value")

        await #expect(throws: RequestCompressor.DuplicateHeaderError(contentEncoding: "value")) {
            try await RequestCompressor(duplicateHeaderBehavior: .error).adapt(encoded, using: Self.context)
        }
        // Without the field, `.error` compresses as usual.
        let plain = Request(method: .post, url: Self.url, body: .data(Self.text))
        #expect(try await RequestCompressor(duplicateHeaderBehavior: .error).adapt(plain, using: Self.context).headerFields[.contentEncoding] == "gzip")
    }

    @Test("A 415 to a compressed body: the origin is remembered and the request retried once as it is")
    func refused() async throws {
        let compressor = RequestCompressor()
        let request = Request(method: .post, url: Self.url, body: .data(Self.text))
        let sent = try await compressor.adapt(request, using: Self.context)
        let attempt = FailedAttempt(request: sent, response: HTTPResponse(status: .unsupportedMediaType))
        let decision = try await compressor.retry(attempt)
        #expect(decision.isRetry && decision.reason == .compressionRefused)
        #expect(compressor.refusingOriginList == ["http://api.courier.test:80"])
        #expect(try await compressor.adapt(request, using: Self.context).body.data == Self.text)
        // Only once, and only for 415 to a body it compressed.
        #expect(try await !compressor.retry(FailedAttempt(request: sent, response: HTTPResponse(status: .unsupportedMediaType), previousRetries: [.compressionRefused])).isRetry)
        #expect(try await !compressor.retry(FailedAttempt(request: request, response: HTTPResponse(status: .unsupportedMediaType))).isRetry)
        #expect(try await !compressor.retry(FailedAttempt(request: sent, response: HTTPResponse(status: .badRequest))).isRetry)
    }

    @Test("The origins that refused are bounded: past the limit, the one that refused longest ago is forgotten")
    func refusingOriginsAreBounded() {
        var origins = RequestCompressor.RefusingOrigins()
        for index in 0..<5 { origins.insert("https://h\(index).courier.test:443", limit: 3) }
        origins.insert("https://h4.courier.test:443", limit: 3)
        #expect(origins.origins == ["https://h2.courier.test:443", "https://h3.courier.test:443", "https://h4.courier.test:443"])
        #expect(!origins.contains("https://h0.courier.test:443"))
        #expect(RequestCompressor.rememberedOriginLimit == 1024)
    }
}
