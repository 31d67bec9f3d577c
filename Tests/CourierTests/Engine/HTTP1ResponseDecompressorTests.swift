@testable import Courier
import CompressNIO
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

/// ``HTTP1ResponseDecompressor`` in a pipeline of its own: what it passes on when a body cannot
/// be decompressed.
@Suite("Engine: HTTP1ResponseDecompressor")
struct HTTP1ResponseDecompressorTests {
    /// What reached the end of the pipeline: the parts passed on, and the errors.
    final class Tail: ChannelInboundHandler {
        typealias InboundIn = HTTPClientResponsePart
        var parts: [String] = []
        var bodyBytes = 0
        var errors: [any Error] = []

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch self.unwrapInboundIn(data) {
            case .head: self.parts.append("head")
            case .body(let buffer):
                self.parts.append("body")
                self.bodyBytes += buffer.readableBytes
            case .end: self.parts.append("end")
            }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            self.errors.append(error)
        }
    }

    static func gzip(_ bytes: [UInt8]) throws -> ByteBuffer {
        var input = ByteBuffer(bytes: bytes)
        return try input.compress(with: .gzip, configuration: ZlibConfiguration())
    }

    static func run(_ body: ByteBuffer, ratio: Int = 100) throws -> Tail {
        let tail = Tail()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandlers(
            HTTP1ResponseDecompressor(ratio: ratio, counter: ResponseBodyCounter()), tail)
        let head = HTTPResponseHead(version: .http1_1, status: .ok, headers: ["Content-Encoding": "gzip"])
        try channel.writeInbound(HTTPClientResponsePart.head(head))
        try channel.writeInbound(HTTPClientResponsePart.body(body))
        try channel.writeInbound(HTTPClientResponsePart.end(nil))
        _ = try channel.finish()
        return tail
    }

    /// A body past the ratio limit (16 MiB of zeros, about 16 KB compressed: refused once it
    /// passes the 8 MiB free size) is reported once, and neither the rest of it nor its end is
    /// passed on: with the end passed on, a hop that held the parts for a paused exchange took the
    /// response as whole, and a streamed body ended without an error, cut at the limit.
    @Test func aBodyPastTheLimitHasNoEnd() throws {
        let tail = try Self.run(try Self.gzip([UInt8](repeating: 0, count: 16 << 20)))
        #expect(tail.errors.count == 1)
        #expect((tail.errors.first as? ResponseDecompressionError)?.reason == .limit(ratio: 100))
        #expect(tail.parts.first == "head")
        #expect(!tail.parts.contains("end"), "\(tail.parts)")
        #expect(tail.bodyBytes <= NIOEngine.Decompression.ratioFreeSize + 64 << 10, "\(tail.bodyBytes) bytes passed on")
    }

    /// Bytes that compress less than the ratio limit.
    static let plain = (0..<10_000).map { UInt8(truncatingIfNeeded: ($0 * 7919) % 251) }

    /// A body that ends before its compressed stream does fails at its end, which is not passed on.
    @Test func aTruncatedBodyHasNoEnd() throws {
        let whole = try Self.gzip(Self.plain)
        let tail = try Self.run(whole.getSlice(at: whole.readerIndex, length: whole.readableBytes / 2)!)
        #expect(tail.errors.count == 1)
        #expect((tail.errors.first as? ResponseDecompressionError)?.reason == .truncated)
        #expect(!tail.parts.contains("end"), "\(tail.parts)")
    }

    /// A good body ends as it came.
    @Test func aGoodBodyEnds() throws {
        let tail = try Self.run(try Self.gzip(Self.plain))
        #expect(tail.errors.isEmpty)
        #expect(tail.parts.first == "head" && tail.parts.last == "end")
        #expect(tail.bodyBytes == 10_000)
    }
}
