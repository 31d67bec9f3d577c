extension ImageHeader {
    /// TIFF: the first image file directory's ImageWidth (256) and ImageLength (257) tags, as SHORT
    /// or LONG, in the file's byte order (`II` little-endian, `MM` big-endian).
    static func tiffSize(_ r: ByteReader) -> (Int, Int)? {
        let littleEndian = r.u8(0) == 0x49
        func u16(_ offset: Int) -> Int? { littleEndian ? r.u16le(offset) : r.u16be(offset) }
        func u32(_ offset: Int) -> Int? { littleEndian ? r.u32le(offset) : r.u32be(offset) }

        guard let directory = u32(4), let count = u16(directory) else { return nil }
        var width: Int?
        var height: Int?
        for index in 0..<count {
            let entry = directory + 2 + index * 12
            guard let tag = u16(entry), let type = u16(entry + 2) else { return nil }
            guard tag == 256 || tag == 257 else { continue }
            let value: Int?
            switch type {
            case 3: value = u16(entry + 8)  // SHORT, left-justified in the value field
            case 4: value = u32(entry + 8)  // LONG
            default: value = nil
            }
            guard let value else { return nil }
            if tag == 256 { width = value } else { height = value }
            if let width, let height { return (width, height) }
        }
        return nil
    }
}
