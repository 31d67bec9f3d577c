import CCourierZlib
import NIOCore
import NIOHTTP1
import NIOHTTPCompression

/// Decompresses one HTTP/2 response's body (`Content-Encoding: gzip` or `deflate`) as its DATA
/// frames arrive: what `NIOHTTPResponseDecompressor` does in a pipeline, for a stream that has
/// none (``HTTP2Stream``). The same limit and the same errors: more output than `ratio` times the
/// input is `DecompressionError.limit`, a zlib failure `inflationError`, bytes after the compressed
/// stream `invalidTrailingData`, a body that ends before it `truncatedData`.
///
/// Owned by one stream, on its loop; the zlib stream is freed on `deinit`.
final class HTTP2ResponseInflater {
    private let stream: OpaquePointer
    /// How many times its compressed size the body may grow to.
    private let ratio: Int
    private var compressed = 0
    private var inflated = 0
    private var complete = false

    /// An inflater for a response whose head names a coding it decodes (the first
    /// `Content-Encoding`, `gzip` or `deflate`), nil otherwise. A factory, not a failable
    /// initializer: a class's object is allocated before its initializer can fail, and most
    /// responses are not compressed.
    static func make(head: HTTPResponseHead, ratio: Int) -> HTTP2ResponseInflater? {
        guard let coding = head.headers[canonicalForm: "Content-Encoding"].first?.lowercased(), coding == "gzip" || coding == "deflate",
            let stream = courier_inflater_make()
        else { return nil }
        return HTTP2ResponseInflater(stream: stream, ratio: ratio)
    }

    private init(stream: OpaquePointer, ratio: Int) {
        self.stream = stream
        self.ratio = ratio
    }

    deinit { courier_inflater_free(self.stream) }

    /// Decompresses `input`, calling `output` with each piece zlib produced.
    func inflate(_ input: ByteBuffer, output: (ByteBuffer) -> Void) throws {
        var input = input
        while input.readableBytes > 0 {
            guard !self.complete else { throw NIOHTTPDecompression.ExtraDecompressionError.invalidTrailingData }
            var piece = ByteBuffer()
            let capacity = max(16384, input.readableBytes * 2)
            let (status, consumed, produced) = input.withUnsafeReadableBytes { source -> (Int32, Int, Int) in
                piece.reserveCapacity(minimumWritableBytes: capacity)
                return piece.withUnsafeMutableWritableBytes { target -> (Int32, Int, Int) in
                    var consumed = 0
                    var produced = 0
                    let status = courier_inflater_run(
                        self.stream, source.baseAddress?.assumingMemoryBound(to: UInt8.self), source.count, &consumed,
                        target.baseAddress!.assumingMemoryBound(to: UInt8.self), target.count, &produced)
                    return (status, consumed, produced)
                }
            }
            input.moveReaderIndex(forwardBy: consumed)
            piece.moveWriterIndex(forwardBy: produced)
            self.compressed += consumed
            self.inflated += produced
            if status < 0 { throw NIOHTTPDecompression.DecompressionError.inflationError(Int(status)) }
            // As NIOHTTPCompression counts: all the compressed bytes given so far.
            if self.inflated > (self.compressed + input.readableBytes) * self.ratio {
                throw NIOHTTPDecompression.DecompressionError.limit
            }
            if status == 1 { self.complete = true }
            if produced > 0 { output(piece) }
            // Neither input taken nor output made: zlib needs more input than this.
            if consumed == 0, produced == 0 { break }
        }
    }

    /// The body ended: it must have ended the compressed stream too (an empty body is left as
    /// it is).
    func finish() throws {
        guard self.complete || self.compressed == 0 else { throw NIOHTTPDecompression.ExtraDecompressionError.truncatedData }
    }
}
