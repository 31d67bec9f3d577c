import CompressNIO
import NIOCore

/// Decompresses gzip or zlib data with compress-nio (for checking /gzip and /deflate).
func inflate(_ bytes: [UInt8], as algorithm: ZlibAlgorithm = .gzip) -> [UInt8]? {
    var input = ByteBuffer(bytes: bytes)
    guard let output = try? input.decompress(with: algorithm, maxSize: 1 << 20) else { return nil }
    return Array(output.readableBytesView)
}
