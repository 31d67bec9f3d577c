@testable import Courier
import Foundation
import Testing

/// `Checksum.crc32`: slicing-by-8 against the
/// definition (one bit at a time), over every length and alignment the eight-byte steps and the
/// byte-wise tail meet.
@Suite("Core: CRC-32")
struct ChecksumTests {
    /// CRC-32 one bit at a time, as the polynomial defines it.
    static func reference(_ bytes: some Sequence<UInt8>, continuing crc: UInt32 = 0) -> UInt32 {
        var value = ~crc
        for byte in bytes {
            value ^= UInt32(byte)
            for _ in 0..<8 { value = value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
        }
        return ~value
    }

    @Test("The standard check value, and the definition's value for every length to 80 at every alignment, whole or continued")
    func matchesTheDefinition() {
        #expect(Checksum.crc32(Array("123456789".utf8)) == 0xCBF4_3926)
        #expect(Checksum.crc32([UInt8]()) == 0)
        let bytes = (0..<100).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        for offset in 0..<8 {
            for length in 0...80 {
                let slice = Array(bytes[offset..<offset + min(length, bytes.count - offset)])
                let expected = Self.reference(slice)
                let whole = bytes.withUnsafeBytes { Checksum.crc32(UnsafeRawBufferPointer(rebasing: $0[offset..<offset + slice.count])) }
                #expect(whole == expected, "offset \(offset), length \(length)")
                let split = slice.count / 3
                let continued = Checksum.crc32(slice[split...], continuing: Checksum.crc32(slice[..<split]))
                #expect(continued == expected, "offset \(offset), length \(length), split at \(split)")
            }
        }
        // Not contiguous: byte by byte.
        #expect(Checksum.crc32(bytes.lazy.map { $0 }) == Self.reference(bytes))
    }
}
