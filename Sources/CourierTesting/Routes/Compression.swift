import CCourierZlib

/// One-shot compression over the system zlib (the `CCourierZlib` shim), for `/gzip` and `/deflate`.
enum Compression {
    enum Format {
        /// RFC 1952, `Content-Encoding: gzip`.
        case gzip
        /// RFC 1950 (zlib), which is what `Content-Encoding: deflate` means.
        case deflate

        var windowBits: Int32 { self == .gzip ? 15 + 16 : 15 }
    }

    /// `bytes` compressed, or nil if zlib fails.
    static func compress(_ bytes: [UInt8], as format: Format) -> [UInt8]? {
        var output = [UInt8](repeating: 0, count: courier_compress_bound(bytes.count))
        var length = output.count
        let status = bytes.withUnsafeBufferPointer { input in
            output.withUnsafeMutableBufferPointer { out in
                courier_compress(input.baseAddress, input.count, out.baseAddress, &length, format.windowBits)
            }
        }
        guard status == 0 else { return nil }
        return Array(output.prefix(length))
    }
}
