import CompressNIO
import Foundation
import NIOCore
import NIOFoundationCompat

/// zlib's deflate over a stream of chunks, gzip or zlib ("deflate" in HTTP) framing, through
/// compress-nio's `ZlibCompressor`.
///
/// Owned by one iterator at a time (not `Sendable`); the compressor frees its zlib stream on `deinit`.
final class Deflater {
    private let compressor: ZlibCompressor
    private var ended = false
    private static let outputChunk = 64 * 1024

    /// - Parameter algorithm: `.gzip` or `.zlib` (HTTP's `deflate`).
    init(algorithm: ZlibAlgorithm) throws(CourierError) {
        do {
            self.compressor = try ZlibCompressor(algorithm: algorithm)
        } catch {
            throw CourierError(.internalInconsistency, "zlib could not make a compressor (\(error))", underlyingError: error)
        }
    }

    /// Compresses `input`; with `finish`, ends the stream. Returns what zlib produced (possibly
    /// nothing: it buffers until it has enough).
    func compress(_ input: ByteBuffer?, finish: Bool) throws(CourierError) -> ByteBuffer {
        var output = ByteBuffer()
        var input = input ?? ByteBuffer()
        guard !self.ended else { return output }
        do {
            // Everything in: zlib takes all the input it is given while it has room for output.
            while input.readableBytes > 0 {
                output.reserveCapacity(minimumWritableBytes: Self.outputChunk)
                try self.compressor.deflate(from: &input, to: &output, flush: .no)
            }
            guard finish else { return output }
            // Then the end: `bufferOverflow` asks for more room for it.
            while true {
                output.reserveCapacity(minimumWritableBytes: Self.outputChunk)
                do {
                    try self.compressor.deflate(from: &input, to: &output, flush: .finish)
                    self.ended = true
                    return output
                } catch let error as CompressNIOError where error == .bufferOverflow {
                    continue
                }
            }
        } catch {
            throw CourierError(.internalInconsistency, "zlib failed to compress the body (\(error))", underlyingError: error)
        }
    }

    /// Compresses `data` in one go.
    static func compress(_ data: Data, algorithm: ZlibAlgorithm) throws(CourierError) -> Data {
        let deflater = try Deflater(algorithm: algorithm)
        var buffer = try deflater.compress(ByteBuffer(bytes: data), finish: true)
        return buffer.readData(length: buffer.readableBytes) ?? Data()
    }
}

/// A body's chunks compressed as they are read.
struct CompressedChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer

    let upstream: RequestBody.Stream
    let algorithm: ZlibAlgorithm

    func makeAsyncIterator() -> Iterator {
        Iterator(upstream: self.upstream.makeAsyncIterator(), algorithm: self.algorithm)
    }

    struct Iterator: AsyncIteratorProtocol {
        var upstream: any AsyncIteratorProtocol<ByteBuffer, any Error>
        let algorithm: ZlibAlgorithm
        var deflater: Deflater?
        var finished = false

        init(upstream: any AsyncIteratorProtocol<ByteBuffer, any Error>, algorithm: ZlibAlgorithm) {
            self.upstream = upstream
            self.algorithm = algorithm
        }

        mutating func next() async throws -> ByteBuffer? {
            if self.finished { return nil }
            let deflater = try self.deflater ?? Deflater(algorithm: self.algorithm)
            self.deflater = deflater
            while true {
                let chunk = try await self.upstream.next()
                let output = try deflater.compress(chunk, finish: chunk == nil)
                if chunk == nil {
                    self.finished = true
                    self.deflater = nil
                    return output.readableBytes > 0 ? output : nil
                }
                if output.readableBytes > 0 { return output }
            }
        }
    }
}
