@testable import Courier
import Foundation
import HTTPTypes
import NIOCore
import Testing

/// A request body's trailer fields as HTTP/1.1 bytes, through ``HopHandler`` and NIO's
/// request encoder on an `EmbeddedChannel` (``HopHandlerTests/Setup``): a chunked body
/// whatever its length, `Trailer` in the head, the fields after the last chunk.
@Suite("HTTP/1.1 request trailers on an EmbeddedChannel")
struct HTTP1TrailersWireTests {
    typealias Setup = HopHandlerTests.Setup

    static let trailers: HTTPFields = [.courierChecksum: "crc32=352441c2", .serverTiming: "client;dur=3"]
    /// NIO's encoder writes the framing field it checked in lower case.
    static let head =
        "POST /a?b=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nTrailer: Courier-Checksum, Server-Timing\r\ntransfer-encoding: chunked\r\n\r\n"
    static let trailerSection = "0\r\nCourier-Checksum: crc32=352441c2\r\nServer-Timing: client;dur=3\r\n\r\n"

    /// Sends `body` to a fresh connection, answers it, and returns what went out.
    private static func send(_ body: RequestBody) throws -> String {
        let setup = try Setup()
        let (_, recorder) = try setup.run(Request(method: .post, url: HopHandlerTests.url, body: body))
        let written = try setup.written()
        try setup.receive("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        #expect(recorder.snapshot.status == 200)
        #expect(recorder.snapshot.completions == 1)
        #expect(recorder.snapshot.error == nil)
        return written
    }

    @Test func aShortBodyInMemoryGoesChunkedWithItsTrailers() throws {
        let written = try Self.send(.data(Data("abc".utf8), trailers: Self.trailers))
        #expect(written == Self.head + "3\r\nabc\r\n" + Self.trailerSection)
    }

    @Test func aBodyInSlicesEndsWithItsTrailers() throws {
        let length = HopHandler.sliceLength + 10
        let written = try Self.send(.data(Data(repeating: UInt8(ascii: "x"), count: length), trailers: Self.trailers))
        #expect(written.hasPrefix(Self.head))
        #expect(!written.contains("Content-Length"))
        #expect(written.hasSuffix("\r\n" + Self.trailerSection))
        #expect(written.utf8.count > length)
    }

    @Test func anEmptyBodyIsTheLastChunkAndTheTrailers() throws {
        let written = try Self.send(.data(Data(), trailers: Self.trailers))
        #expect(written == Self.head + Self.trailerSection)
    }

    @Test func theCallersTrailerFieldGivesWayToTheOneTheTrailersMake() throws {
        let setup = try Setup()
        var request = Request(method: .post, url: HopHandlerTests.url, body: .data(Data("abc".utf8), trailers: Self.trailers))
        request.headerFields[.trailer] = "Something-Else"
        request.headerFields[.contentLength] = "3"
        let (_, recorder) = try setup.run(request)
        #expect(try setup.written() == Self.head + "3\r\nabc\r\n" + Self.trailerSection)
        // Answered, the exchange ends and lets go of the engine.
        try setup.receive("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        #expect(recorder.snapshot.completions == 1)
        #expect(recorder.snapshot.error == nil)
    }

    @Test func aForbiddenTrailerFieldWritesNothing() throws {
        let setup = try Setup()
        var trailers = Self.trailers
        trailers[.contentLength] = "3"
        let error = #expect(throws: CourierError.self) {
            try setup.run(Request(method: .post, url: HopHandlerTests.url, body: .data(Data("abc".utf8), trailers: trailers)))
        }
        #expect(error?.code == .invalidRequest)
        #expect(try setup.written().isEmpty)
    }
}
