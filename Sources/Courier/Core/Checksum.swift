/// CRC-32 (IEEE 802.3, the reflected polynomial `0xEDB88320`), as zlib, gzip, PNG and ZIP compute
/// it: the disk cache tells a damaged entry file from a sound one with it, and `CourierTesting`'s
/// `CRC32` (the test server's `/courier/upload`, the tests' checks of what they moved) is this
/// function too.
///
/// Slicing-by-8 in Swift: eight bytes a step through eight tables made once.
package enum Checksum {
    /// Eight tables of 256 entries, one after the other; table `k` advances a CRC over a byte
    /// followed by `k` zero bytes. Made once and never written again, so reading it from any
    /// thread is safe.
    nonisolated(unsafe) private static let tables: UnsafePointer<UInt32> = {
        let tables = UnsafeMutablePointer<UInt32>.allocate(capacity: 8 * 256)
        for index in 0..<256 {
            var value = UInt32(index)
            for _ in 0..<8 { value = value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
            tables[index] = value
        }
        for slice in 1..<8 {
            for index in 0..<256 {
                let previous = tables[(slice - 1) * 256 + index]
                tables[slice * 256 + index] = tables[Int(previous & 0xFF)] ^ (previous >> 8)
            }
        }
        return UnsafePointer(tables)
    }()

    /// The CRC-32 of `bytes`, continuing `crc` (0 to start).
    package static func crc32(_ bytes: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        guard var pointer = bytes.baseAddress, bytes.count > 0 else { return crc }
        let tables = Self.tables
        var value = ~crc
        var remaining = bytes.count
        while remaining >= 8 {
            let low = value ^ UInt32(littleEndian: pointer.loadUnaligned(as: UInt32.self))
            let high = UInt32(littleEndian: pointer.loadUnaligned(fromByteOffset: 4, as: UInt32.self))
            value =
                tables[7 * 256 + Int(low & 0xFF)] ^ tables[6 * 256 + Int((low >> 8) & 0xFF)]
                ^ tables[5 * 256 + Int((low >> 16) & 0xFF)] ^ tables[4 * 256 + Int(low >> 24)]
                ^ tables[3 * 256 + Int(high & 0xFF)] ^ tables[2 * 256 + Int((high >> 8) & 0xFF)]
                ^ tables[256 + Int((high >> 16) & 0xFF)] ^ tables[Int(high >> 24)]
            pointer += 8
            remaining -= 8
        }
        while remaining > 0 {
            value = tables[Int((value ^ UInt32(pointer.load(as: UInt8.self))) & 0xFF)] ^ (value >> 8)
            pointer += 1
            remaining -= 1
        }
        return ~value
    }

    /// The CRC-32 of `bytes` (`[UInt8]`, `Data`, a `ByteBuffer`'s `readableBytesView`…),
    /// continuing `crc` (0 to start).
    package static func crc32(_ bytes: some Sequence<UInt8>, continuing crc: UInt32 = 0) -> UInt32 {
        if let result = bytes.withContiguousStorageIfAvailable({ Self.crc32(UnsafeRawBufferPointer($0), continuing: crc) }) {
            return result
        }
        let tables = Self.tables
        var value = ~crc
        for byte in bytes { value = tables[Int((value ^ UInt32(byte)) & 0xFF)] ^ (value >> 8) }
        return ~value
    }
}
