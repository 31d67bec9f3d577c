@testable import Courier
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import Testing

/// ``RequestBody/trailers`` without I/O: which fields HTTP forbids, the HTTP/1.1 head a body with
/// trailers gets, and what `cURLDescription()` says of them.
@Suite("Request trailers")
struct RequestTrailersTests {
    static let url = URL(string: "http://example.com/upload")!
    static let key = ConnectionPool.Key(host: "example.com", port: 80)

    static func request(_ trailers: HTTPFields?) -> Request {
        Request(method: .put, url: Self.url, body: .data(Data("abc".utf8), trailers: trailers))
    }

    @Test(arguments: [
        "Content-Length", "Transfer-Encoding", "Trailer", "Host", "Cache-Control", "Expect", "Max-Forwards", "Pragma", "Range", "TE",
        "If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since", "If-Range", "Cookie", "Authorization",
        "Proxy-Authorization", "WWW-Authenticate", "Proxy-Authenticate", "Authentication-Info", "Content-Encoding", "Content-Type",
        "Content-Range", "Connection", "Keep-Alive", "Proxy-Connection", "Upgrade", "content-length", "HOST",
    ])
    func aFieldHTTPForbidsInATrailerIsRefused(_ name: String) throws {
        let fieldName = try #require(HTTPField.Name(name))
        let request = Self.request([.courierChecksum: "crc32=1", fieldName: "x"])
        let error = #expect(throws: CourierError.self) { try RequestBody.checkedTrailers(of: request) }
        #expect(error?.code == .invalidRequest)
        #expect(error?.message.contains(fieldName.rawName) == true)
        #expect(error?.request?.url == Self.url)
        #expect(throws: CourierError.self) { try OutgoingBody(request) }
    }

    @Test func otherFieldsPassAndNoneIsNil() throws {
        let trailers: HTTPFields = [.courierChecksum: "crc32=1", .serverTiming: "a", HTTPField.Name("Digest")!: "sha-256=x"]
        #expect(try RequestBody.checkedTrailers(of: Self.request(trailers)) == trailers)
        #expect(try RequestBody.checkedTrailers(of: Self.request(nil)) == nil)
        #expect(try RequestBody.checkedTrailers(of: Self.request([:])) == nil, "an empty set is no trailers")
    }

    @Test func aBodyWithTrailersIsChunkedWithItsNamesAnnounced() {
        let trailers: HTTPFields = [.courierChecksum: "crc32=1", .serverTiming: "a", HTTPField.Name("server-timing")!: "b"]
        let head = HopHandler.head(for: Self.request(trailers), key: Self.key, length: .known(3))
        #expect(head.headers["Transfer-Encoding"] == ["chunked"])
        #expect(head.headers["Content-Length"].isEmpty, "chunked even though the length is known")
        #expect(head.headers["Trailer"] == ["Courier-Checksum, Server-Timing"], "each name once")
        #expect(HopHandler.trailers(of: Self.request(trailers)) == HTTPHeaders(trailers.map { ($0.name.rawName, $0.value) }))

        let plain = HopHandler.head(for: Self.request(nil), key: Self.key, length: .known(3))
        #expect(plain.headers["Content-Length"] == ["3"])
        #expect(plain.headers["Trailer"].isEmpty)
        #expect(HopHandler.trailers(of: Self.request([:])) == nil)
    }

    @Test func cURLDescriptionNamesTheTrailersCurlCannotSend() throws {
        let request = Self.request([.courierChecksum: "crc32=1"])
        #expect(
            request.cURLDescription() == """
                curl --request PUT http://example.com/upload \\
                  --data-binary abc
                # trailer fields after the body, which curl cannot send: Courier-Checksum: crc32=1
                """)
        #expect(try request.cURLArguments() == ["--request", "PUT", "http://example.com/upload", "--data-binary", "abc"])
    }

    @Test func bodiesMadeAgainKeepTheirTrailers() async throws {
        let trailers: HTTPFields = [.courierChecksum: "crc32=1"]
        var request = Self.request(trailers)
        request.headerFields[.contentType] = "text/plain"
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("courier-trailers-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        let written = try await HTTPRequestSerializer().request(withMultipartFormRequest: request, writingStreamContentsToFile: file)
        #expect(written.body.isEmpty)
        #expect(written.body.trailers == trailers, "for the upload task that sends the file")
        #expect(RequestBody.stream(AsyncThrowingStream<ByteBuffer, any Error> { $0.finish() }, length: .unknown, trailers: trailers).trailers == trailers)
        #expect(RequestBody.replayableStream(length: .unknown, trailers: trailers) { AsyncThrowingStream<ByteBuffer, any Error> { $0.finish() } }.trailers == trailers)
        #expect(RequestBody.file(file, trailers: trailers).trailers == trailers)

        let big = Request(method: .put, url: Self.url, body: .data(Data(repeating: 0x61, count: 4096), trailers: trailers))
        let compressed = try await RequestCompressor().adapt(big, using: AdaptationContext(taskIdentifier: 1))
        #expect(compressed.headerFields[.contentEncoding] == "gzip")
        #expect(compressed.body.trailers == trailers, "a compressed body keeps its trailers")
    }
}
