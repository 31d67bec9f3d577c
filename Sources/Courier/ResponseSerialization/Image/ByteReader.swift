/// Bounds-checked reads of big- and little-endian integers from raw bytes. Every read past the end
/// gives `nil`, so a truncated or hostile header can never trap.
struct ByteReader {
    let bytes: UnsafeRawBufferPointer

    var count: Int { self.bytes.count }

    func u8(_ offset: Int) -> Int? {
        guard offset >= 0, offset < self.bytes.count else { return nil }
        return Int(self.bytes[offset])
    }

    func u16be(_ offset: Int) -> Int? {
        guard let a = self.u8(offset), let b = self.u8(offset + 1) else { return nil }
        return a << 8 | b
    }

    func u16le(_ offset: Int) -> Int? {
        guard let a = self.u8(offset), let b = self.u8(offset + 1) else { return nil }
        return b << 8 | a
    }

    func u24le(_ offset: Int) -> Int? {
        guard let low = self.u16le(offset), let high = self.u8(offset + 2) else { return nil }
        return high << 16 | low
    }

    func u32be(_ offset: Int) -> Int? {
        guard let high = self.u16be(offset), let low = self.u16be(offset + 2) else { return nil }
        return high << 16 | low
    }

    func u32le(_ offset: Int) -> Int? {
        guard let low = self.u16le(offset), let high = self.u16le(offset + 2) else { return nil }
        return high << 16 | low
    }

    /// Whether the bytes at `offset` are exactly `expected`.
    func matches(_ expected: [UInt8], at offset: Int = 0) -> Bool {
        guard offset >= 0, offset <= self.bytes.count - expected.count else { return false }
        for (index, byte) in expected.enumerated() where self.bytes[offset + index] != byte { return false }
        return true
    }
}
