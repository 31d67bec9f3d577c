import CCourierZlib

/// Decompresses gzip or zlib data with the system zlib (for checking /gzip and /deflate).
func inflate(_ bytes: [UInt8], windowBits: Int32 = 15 + 32) -> [UInt8]? {
    var output = [UInt8](repeating: 0, count: 1 << 20)
    var length = output.count
    let status = bytes.withUnsafeBufferPointer { input in
        output.withUnsafeMutableBufferPointer { out in
            courier_decompress(input.baseAddress, input.count, out.baseAddress, &length, windowBits)
        }
    }
    return status == 0 ? Array(output.prefix(length)) : nil
}
