import CCourierZlib
import Foundation
import NIOCore
import NIOFoundationCompat

/// zlib's deflate over a stream of chunks: gzip or zlib ("deflate" in HTTP) framing.
///
/// Owned by one iterator at a time (not `Sendable`); the zlib stream is freed on `deinit`.
final class Deflater {
    private let stream: OpaquePointer
    private var ended = false
    private static let outputChunk = 64 * 1024

    /// - Parameter windowBits: 15 + 16 for gzip, 15 for zlib.
    init(windowBits: Int32) throws(CourierError) {
        guard let stream = courier_deflater_make(windowBits) else {
            throw CourierError(.internalInconsistency, "zlib could not make a compressor (out of memory)")
        }
        self.stream = stream
    }

    deinit { courier_deflater_free(self.stream) }

    /// Compresses `input`; with `finish`, ends the stream. Returns what zlib produced (possibly
    /// nothing: it buffers until it has enough).
    func compress(_ input: ByteBuffer?, finish: Bool) throws(CourierError) -> ByteBuffer {
        var output = ByteBuffer()
        var input = input ?? ByteBuffer()
        guard !self.ended else { return output }
        while true {
            let (status, consumed, produced) = input.withUnsafeReadableBytes { source -> (Int32, Int, Int) in
                output.reserveCapacity(minimumWritableBytes: Self.outputChunk)
                return output.withUnsafeMutableWritableBytes { target -> (Int32, Int, Int) in
                    var consumed = 0
                    var produced = 0
                    let status = courier_deflater_run(
                        self.stream, source.baseAddress?.assumingMemoryBound(to: UInt8.self), source.count, &consumed,
                        target.baseAddress!.assumingMemoryBound(to: UInt8.self), target.count, &produced, finish ? 1 : 0)
                    return (status, consumed, produced)
                }
            }
            input.moveReaderIndex(forwardBy: consumed)
            output.moveWriterIndex(forwardBy: produced)
            if status < 0 { throw CourierError(.internalInconsistency, "zlib failed to compress the body (error \(status))") }
            if status == 1 {
                self.ended = true
                return output
            }
            // More to do while input remains, or, when finishing, until zlib says the stream ended;
            // a call that neither took input nor produced output needs nothing more now.
            if input.readableBytes == 0 && !finish { return output }
            if consumed == 0 && produced == 0 && !finish { return output }
        }
    }

    /// Compresses `data` in one go.
    static func compress(_ data: Data, windowBits: Int32) throws(CourierError) -> Data {
        let deflater = try Deflater(windowBits: windowBits)
        var buffer = try deflater.compress(ByteBuffer(bytes: data), finish: true)
        return buffer.readData(length: buffer.readableBytes) ?? Data()
    }
}

/// A body's chunks compressed as they are read.
struct CompressedChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer

    let upstream: RequestBody.Stream
    let windowBits: Int32

    func makeAsyncIterator() -> Iterator {
        Iterator(upstream: self.upstream.makeAsyncIterator(), windowBits: self.windowBits)
    }

    struct Iterator: AsyncIteratorProtocol {
        var upstream: any AsyncIteratorProtocol<ByteBuffer, any Error>
        let windowBits: Int32
        var deflater: Deflater?
        var finished = false

        init(upstream: any AsyncIteratorProtocol<ByteBuffer, any Error>, windowBits: Int32) {
            self.upstream = upstream
            self.windowBits = windowBits
        }

        mutating func next() async throws -> ByteBuffer? {
            if self.finished { return nil }
            let deflater = try self.deflater ?? Deflater(windowBits: self.windowBits)
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
