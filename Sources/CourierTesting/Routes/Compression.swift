import CompressNIO
import NIOCore

/// One-shot compression with compress-nio (zlib), for `/gzip` and `/deflate`.
enum Compression {
    enum Format {
        /// RFC 1952, `Content-Encoding: gzip`.
        case gzip
        /// RFC 1950 (zlib), which is what `Content-Encoding: deflate` means.
        case deflate

        var algorithm: ZlibAlgorithm { self == .gzip ? .gzip : .zlib }
    }

    /// `bytes` compressed, or nil if zlib fails.
    static func compress(_ bytes: [UInt8], as format: Format) -> [UInt8]? {
        var input = ByteBuffer(bytes: bytes)
        guard let output = try? input.compress(with: format.algorithm, configuration: ZlibConfiguration()) else { return nil }
        return Array(output.readableBytesView)
    }
}
