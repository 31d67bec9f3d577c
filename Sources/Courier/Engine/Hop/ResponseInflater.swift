import CompressNIO
import HTTPTypes
import NIOCore
import NIOHTTP1

/// Decompresses one response's body (`Content-Encoding: gzip` or `deflate`, one coding or up to
/// ``maximumCodings`` stacked) as it arrives, with compress-nio's `ZlibDecompressor`: in an
/// HTTP/1.1 connection's pipeline (``HTTP1ResponseDecompressor``) and in an HTTP/2 stream, which
/// has no pipeline (``HTTP2Stream``).
///
/// Stacked codings (`gzip, gzip`, `deflate, gzip`, or one coding in each of two fields) were
/// applied in the order they are listed (RFC 9110 8.4), so they are undone in reverse: one
/// `Layer` a coding, each fed with what the one outside it inflated, as curl and browsers
/// decode them. Each layer's framing is told by its own first two bytes, whichever of the codings
/// the head named (servers mix the names up): gzip's magic number (`1f 8b`), else the zlib format
/// when the two bytes are a zlib header, else raw deflate (RFC 9110 8.4.1.2 notes servers that
/// send `deflate` without the zlib wrapper: PHP's `gzdeflate`; browsers, curl, urllib3 and undici
/// take it). A gzip stream may be several members one after the other (RFC 1952 2.2), each
/// decoded in turn. Memory stays constant: each piece of input becomes pieces of output handed on
/// as they are made.
///
/// Guards, each a ``ResponseDecompressionError``: past `freeSize` bytes of output
/// (``NIOEngine/Decompression/ratioFreeSize``), more output than `ratio` times the
/// compressed bytes given so far (a decompression bomb; checked on every layer's output, the
/// decoded body's included, so that an inner layer cannot spin on gigabytes that decode to
/// little), data zlib cannot inflate, bytes after the compressed stream (other than another gzip
/// member), a body that ends before it, and a body under more than ``maximumCodings`` codings
/// (refused as curl refuses it, when its first byte comes: a head with no body is not failed).
///
/// Owned by one exchange, on its loop; each decompressor frees its zlib stream on `deinit`.
final class ResponseInflater {
    /// How many stacked codings are decoded: curl's limit (`MAX_ENCODE_STACK`). A body under more
    /// fails with ``ResponseDecompressionError/Reason/tooManyCodings(_:)``, as curl fails it with
    /// `CURLE_BAD_CONTENT_ENCODING`.
    static let maximumCodings = 5

    /// The codings to undo, the outermost (the last listed) first; empty when there are too many.
    private let layers: [Layer]
    /// How many codings the head named, when more than ``maximumCodings``.
    private let tooManyCodings: Int?
    /// How many times its compressed size the body may grow to, past `freeSize` bytes.
    private let ratio: Int
    /// How many bytes the body may inflate to whatever its ratio.
    private let freeSize: Int
    /// The compressed bytes given so far.
    private var given = 0

    /// An inflater for a response whose head names only codings it decodes (`gzip`, `x-gzip` or
    /// `deflate`, one or more), nil otherwise. A factory, not a failable initializer: a class's object is
    /// allocated before its initializer can fail, and most responses are not compressed.
    static func make(
        head: HTTPResponseHead, ratio: Int, freeSize: Int = NIOEngine.Decompression.ratioFreeSize
    ) -> ResponseInflater? {
        // The status first: a closure reading the range would capture the head (a copy, and its
        // retains, for every response).
        if head.status.code == 206, !Self.rangeIsTheWholeCoding(head.headers.first(name: "Content-Range")) { return nil }
        return Self.make(contentEncodings: head.headers["Content-Encoding"], ratio: ratio, freeSize: freeSize)
    }

    /// Whether a `206`'s body is its whole coded representation, so that it can be decoded:
    /// `bytes 0-N/N+1`. Not when its range starts past byte 0 (the middle of a gzip stream cannot
    /// be inflated), ends before the representation does (`bytes 0-1023/50000`: the start of a
    /// gzip stream inflates but never ends, which failed the request as truncated after the
    /// inflated bytes had been handed over), has an unknown length (`/*`), or when the response
    /// has no `Content-Range` of its own (`multipart/byteranges`); every other status's body is
    /// whole. A content coding is the representation's (RFC 9110 8.4), and a range is of its
    /// coded bytes (RFC 9110 14.1.1): such a body is handed over as it came, as OkHttp and curl
    /// hand it (a download resumed from a `.gz` file that Apache labels `Content-Encoding: gzip`
    /// failed with `invalidResponse` before).
    static func rangeIsTheWholeCoding(_ contentRange: String?) -> Bool {
        guard let range = contentRange.flatMap(ContentRange.init) else { return false }
        return range.first == 0 && range.completeLength == range.last + 1
    }

    /// The same for a response head made as swift-http-types' fields (an HTTP/2 stream's).
    static func make(fields: HTTPFields, ratio: Int, freeSize: Int = NIOEngine.Decompression.ratioFreeSize) -> ResponseInflater? {
        // Most responses name no coding: their names are compared in place first (a filter over
        // the fields copied each one, a few retains a field, for every response).
        guard fields.contains(.contentEncoding) else { return nil }
        return Self.make(contentEncodings: fields[values: .contentEncoding], ratio: ratio, freeSize: freeSize)
    }

    /// One reading of the codings for both heads: the elements of the `Content-Encoding` values,
    /// in every field, split at commas and trimmed of blanks, empty elements ignored (RFC 9110
    /// 5.6.1), `identity` too (it names no coding; old servers send it). A body is inflated only
    /// when every coding it names is `gzip`, `x-gzip` or `deflate`: `identity, gzip` and
    /// `deflate, gzip` are, and `gzip, br` (brotli outside) is left as it came, under the head that
    /// says so. Past ``maximumCodings`` the inflater refuses the body.
    private static func make(contentEncodings values: some Sequence<String>, ratio: Int, freeSize: Int) -> ResponseInflater? {
        let codings = Self.codings(contentEncodings: values)
        return codings > 0 ? ResponseInflater(codings: codings, ratio: ratio, freeSize: freeSize) : nil
    }

    /// Whether a response with these fields (not a `206`) has a body the engine inflates when its
    /// request lets it (``HopHandler/decodesResponse(to:)``): the one reading of `Content-Encoding`
    /// above, for the cache, which must know which form a stored body is in. (A body under more
    /// than ``maximumCodings`` codings counts too: the engine refuses it rather than hand it over
    /// coded, so a coded copy must not be served to a request that gets bodies decoded.)
    static func inflates(_ fields: HTTPFields) -> Bool {
        fields.contains(.contentEncoding) && Self.codings(contentEncodings: fields[values: .contentEncoding]) > 0
    }

    /// How many codings the values name when the engine decodes each of them, 0 when they name
    /// none or one it does not decode.
    private static func codings(contentEncodings values: some Sequence<String>) -> Int {
        let isBlank = { (byte: UInt8) in byte == 0x20 || byte == 0x09 }
        var codings = 0
        for value in values {
            for element in value.utf8.split(separator: UInt8(ascii: ",")) {
                let trimmed = element.drop(while: isBlank).reversed().drop(while: isBlank).reversed()
                guard !trimmed.isEmpty else { continue }
                let coding = String(decoding: trimmed, as: UTF8.self).lowercasedASCII
                if coding == "identity" { continue }
                // `x-gzip` is gzip (RFC 9110 8.4.1.3).
                guard coding == "gzip" || coding == "x-gzip" || coding == "deflate" else { return 0 }
                codings += 1
            }
        }
        return codings
    }

    private init(codings: Int, ratio: Int, freeSize: Int) {
        self.ratio = ratio
        self.freeSize = freeSize
        if codings > Self.maximumCodings {
            self.layers = []
            self.tooManyCodings = codings
        } else {
            self.layers = (0..<codings).map { _ in Layer() }
            self.tooManyCodings = nil
        }
    }

    /// Decompresses `input`, calling `output` with each piece the innermost coding's zlib stream
    /// produced.
    func inflate(_ input: ByteBuffer, allocator: ByteBufferAllocator, output: (ByteBuffer) -> Void) throws(ResponseDecompressionError) {
        guard input.readableBytes > 0 else { return }
        if let codings = self.tooManyCodings { throw ResponseDecompressionError(.tooManyCodings(codings)) }
        self.given += input.readableBytes
        // As NIOHTTPCompression counts: all the compressed bytes given so far, and only past the
        // free size. (Overflow-safe: a ratio of `.max` sets no limit.)
        let (product, overflow) = self.given.multipliedReportingOverflow(by: self.ratio)
        let bound = Layer.Bound(allowed: overflow ? nil : product, freeSize: self.freeSize, ratio: self.ratio)
        try self.feed(input, to: 0, bound: bound, allocator: allocator, output: output)
    }

    /// Gives `input` to the layer at `index`, and what it inflates to the next one, the last
    /// layer's to `output`.
    private func feed(
        _ input: ByteBuffer, to index: Int, bound: Layer.Bound, allocator: ByteBufferAllocator, output: (ByteBuffer) -> Void
    ) throws(ResponseDecompressionError) {
        guard index < self.layers.count else {
            output(input)
            return
        }
        try self.layers[index].inflate(input, bound: bound, allocator: allocator) { (piece: ByteBuffer) throws(ResponseDecompressionError) -> Void in
            try self.feed(piece, to: index + 1, bound: bound, allocator: allocator, output: output)
        }
    }

    /// The body ended: it must have ended each compressed stream too (an empty body is left as
    /// it is). The outermost first: a layer that ended has handed all it inflated to the next.
    func finish(allocator: ByteBufferAllocator) throws(ResponseDecompressionError) {
        for layer in self.layers {
            try layer.finish(allocator: allocator)
        }
    }

    /// A decompressor for the framing `input` starts with, and whether it is gzip.
    private static func decompressor(for input: ByteBuffer) throws(ResponseDecompressionError) -> (ZlibDecompressor, isGzip: Bool) {
        let first = input.getInteger(at: input.readerIndex, as: UInt16.self) ?? 0
        let algorithm: ZlibAlgorithm = first == 0x1F8B ? .gzip : (Self.isZlibHeader(first) ? .zlib : .deflate)
        do {
            return (try ZlibDecompressor(algorithm: algorithm), first == 0x1F8B)
        } catch {
            throw ResponseDecompressionError(.corrupt("zlib could not make a decompressor (\(error))"))
        }
    }

    /// Whether two bytes are a zlib header (RFC 1950 2.2): method 8 (deflate), a window of at
    /// most 32 KiB, and a check that makes the pair a multiple of 31. Raw deflate data cannot
    /// pass it unless it starts with a stored block whose padding bits are not zero (a Huffman
    /// block's type bits are never `00`, and zlib pads with zeros).
    static func isZlibHeader(_ bytes: UInt16) -> Bool {
        let cmf = UInt8(bytes >> 8)
        return cmf & 0x0F == 8 && cmf >> 4 <= 7 && bytes % 31 == 0
    }

    /// One coding undone: a zlib stream (or several gzip members), made on its first two bytes.
    final class Layer {
        /// The ratio's bound for one call's output: all the compressed bytes given to the
        /// inflater so far, times the ratio (nil when that overflows: no limit), past the free size.
        struct Bound {
            let allowed: Int?
            let freeSize: Int
            let ratio: Int
        }

        /// Made on the first two bytes, once the framing is known.
        private var decompressor: ZlibDecompressor?
        /// The first byte, while it is alone.
        private var pending: ByteBuffer?
        /// The bytes this layer has inflated.
        private var inflated = 0
        private var complete = false
        /// Whether the framing is gzip, whose stream may hold more members after the first.
        private var isGzip = false

        /// Decompresses `input`, calling `output` with each piece zlib produced.
        func inflate(
            _ input: ByteBuffer, bound: Bound, allocator: ByteBufferAllocator,
            output: (ByteBuffer) throws(ResponseDecompressionError) -> Void
        ) throws(ResponseDecompressionError) {
            var input = input
            if var pending = self.pending.take() {
                pending.writeImmutableBuffer(input)
                input = pending
            }
            guard input.readableBytes > 0 else { return }
            let decompressor: ZlibDecompressor
            if let existing = self.decompressor {
                decompressor = existing
            } else {
                guard input.readableBytes >= 2 else {
                    self.pending = input
                    return
                }
                let (made, isGzip) = try ResponseInflater.decompressor(for: input)
                decompressor = made
                self.decompressor = decompressor
                self.isGzip = isGzip
            }
            // Whether zlib filled the last piece: it may hold output of input it has taken
            // already, and is asked again even once no input is left (raw deflate's last bytes,
            // which no trailer follows, can be taken whole while their output waits in zlib).
            var outputFull = false
            while input.readableBytes > 0 || outputFull {
                if self.complete {
                    // Another gzip member (RFC 1952 2.2): the decompressor starts over on it.
                    guard self.isGzip else { throw ResponseDecompressionError(.trailingData) }
                    guard input.readableBytes >= 2 else {
                        self.pending = input
                        return
                    }
                    guard input.getInteger(at: input.readerIndex, as: UInt16.self) == 0x1F8B else {
                        throw ResponseDecompressionError(.trailingData)
                    }
                    do {
                        try decompressor.reset()
                    } catch {
                        throw ResponseDecompressionError(.corrupt("zlib could not start the next gzip member (\(error))"))
                    }
                    self.complete = false
                }
                var piece = allocator.buffer(capacity: max(16384, input.readableBytes * 2))
                let before = input.readableBytes
                var ended = false
                outputFull = false
                do {
                    try decompressor.inflate(from: &input, to: &piece)
                    // A call that returns leaves input only when the compressed stream ended
                    // before it (zlib takes all it is given otherwise, while it has room for output).
                    ended = input.readableBytes > 0
                } catch let error as CompressNIOError where error == .bufferOverflow {
                    // The piece is full: another goes round, input left or not.
                    outputFull = true
                } catch let error as CompressNIOError where error == .inputBufferOverflow {
                    // zlib wants more input than this.
                } catch {
                    throw ResponseDecompressionError(.corrupt("\(error)"))
                }
                self.inflated += piece.readableBytes
                if let allowed = bound.allowed, self.inflated > bound.freeSize, self.inflated > allowed {
                    throw ResponseDecompressionError(.limit(ratio: bound.ratio))
                }
                if ended { self.complete = true }
                if piece.readableBytes > 0 { try output(piece) }
                // Neither input taken nor output made: zlib needs more input than this.
                if before == input.readableBytes, piece.readableBytes == 0, !ended { break }
            }
        }

        /// The body ended: it must have ended this compressed stream too (a layer given nothing
        /// is left as it is).
        func finish(allocator: ByteBufferAllocator) throws(ResponseDecompressionError) {
            if let pending = self.pending {
                // One byte after a complete gzip member is no member: trailing data.
                throw ResponseDecompressionError(self.complete && pending.readableBytes > 0 ? .trailingData : .truncated)
            }
            guard !self.complete, let decompressor = self.decompressor else { return }
            // The stream may have ended with its last byte, which a call that took all its input
            // does not tell. A decompressor whose stream ended takes no more input, whatever it is
            // given; one whose stream goes on takes it (or finds it invalid).
            var probe = allocator.buffer(capacity: 1)
            probe.writeInteger(UInt8(0))
            var sink = allocator.buffer(capacity: 64)
            do {
                try decompressor.inflate(from: &probe, to: &sink)
            } catch {
                throw ResponseDecompressionError(.truncated)
            }
            guard probe.readableBytes == 1, sink.readableBytes == 0 else { throw ResponseDecompressionError(.truncated) }
            self.complete = true
        }
    }
}

/// Why a compressed response body could not be decompressed; the engine reports it as a
/// ``CourierError`` with the code `responseTooLarge` for the ratio limit, `invalidResponse` for
/// the others.
struct ResponseDecompressionError: Error, Equatable, CustomStringConvertible {
    enum Reason: Equatable {
        /// The body grew past `ratio` times its compressed size (and past the free size).
        case limit(ratio: Int)
        /// zlib could not inflate it (compress-nio's reason).
        case corrupt(String)
        /// Bytes came after the end of the compressed stream.
        case trailingData
        /// The body ended before the compressed stream did.
        case truncated
        /// The head named this many codings, more than ``ResponseInflater/maximumCodings``
        /// (curl's limit).
        case tooManyCodings(Int)
    }

    let reason: Reason

    init(_ reason: Reason) { self.reason = reason }

    var description: String {
        switch self.reason {
        case .limit(let ratio): "past \(NIOEngine.Decompression.ratioFreeSize >> 20) MiB, it inflates to more than \(ratio) times its compressed size"
        case .corrupt(let detail): "zlib could not inflate it: \(detail)"
        case .trailingData: "bytes follow the end of the compressed stream"
        case .truncated: "it ends before the compressed stream does"
        case .tooManyCodings(let codings):
            "its head names \(codings) content codings, more than the \(ResponseInflater.maximumCodings) Courier decodes (curl's limit)"
        }
    }
}
