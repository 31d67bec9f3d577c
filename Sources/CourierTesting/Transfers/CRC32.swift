import Courier

/// A running CRC-32 (the IEEE polynomial that zlib, gzip, PNG and ZIP use), computed in Swift by
/// the same function as `Courier`'s disk cache.
///
/// `/courier/upload` answers with the CRC-32 of the body it received; a test computes the same
/// value over what it sent and compares. Feed the bytes in any slicing: the result only depends on
/// their order.
///
/// ```swift
/// var crc = CRC32()
/// crc.update(Array("hello ".utf8))
/// crc.update(Array("world".utf8))
/// #expect(crc.hex == CRC32.checksum(of: Array("hello world".utf8)).hex)  // "0d4a1185"
/// ```
public struct CRC32: Sendable, Hashable, CustomStringConvertible {
    /// The checksum of the bytes fed so far (0 for none).
    public private(set) var value: UInt32
    /// How many bytes were fed so far.
    public private(set) var count: Int

    /// A checksum of no bytes.
    public init() {
        self.value = 0
        self.count = 0
    }

    /// Continues the checksum over `bytes`.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        self.value = Checksum.crc32(bytes, continuing: self.value)
        self.count += bytes.count
    }

    /// Continues the checksum over `bytes` (`[UInt8]`, `Data`, a `ByteBuffer`'s `readableBytesView`…).
    public mutating func update(_ bytes: some Sequence<UInt8>) {
        let done: Void? = bytes.withContiguousStorageIfAvailable { self.update(UnsafeRawBufferPointer($0)) }
        guard done == nil else { return }
        // Not contiguous: go through a small buffer.
        var slice = [UInt8]()
        slice.reserveCapacity(16_384)
        for byte in bytes {
            slice.append(byte)
            if slice.count == 16_384 {
                slice.withUnsafeBytes { self.update($0) }
                slice.removeAll(keepingCapacity: true)
            }
        }
        slice.withUnsafeBytes { self.update($0) }
    }

    /// The checksum as 8 lowercase hexadecimal digits, as `/courier/upload` reports it.
    public var hex: String {
        let digits = String(self.value, radix: 16)
        return String(repeating: "0", count: 8 - digits.count) + digits
    }

    /// ``hex``.
    public var description: String { self.hex }

    /// The checksum of `bytes` in one go.
    public static func checksum(of bytes: some Sequence<UInt8>) -> CRC32 {
        var crc = CRC32()
        crc.update(bytes)
        return crc
    }
}
