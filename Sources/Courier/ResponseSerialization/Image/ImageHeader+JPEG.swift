extension ImageHeader {
    /// JPEG: walks the marker segments to the first start-of-frame (SOF0–SOF15 but DHT, JPG and
    /// DAC), whose height and width are big-endian at 3 and 5 into the segment. Bytes between a
    /// segment and the next marker are skipped, as libjpeg skips them ("extraneous bytes before
    /// marker") and decoders show such files. Every step advances, so the walk ends on any input.
    static func jpegSize(_ r: ByteReader) -> (Int, Int)? {
        var offset = 2
        while offset < r.count {
            guard r.u8(offset) == 0xFF else {
                offset += 1
                continue
            }
            // Fill bytes: any number of 0xFF before the marker code.
            var markerOffset = offset + 1
            while r.u8(markerOffset) == 0xFF { markerOffset += 1 }
            guard let marker = r.u8(markerOffset) else { return nil }
            let segment = markerOffset + 1
            switch marker {
            case 0xD0...0xD7, 0x01, 0x00:
                // Stand-alone markers: no length. `FF 00` is no marker but a stray pair, which
                // libjpeg discards as it looks for the next marker; read as a segment, its
                // "length" sent the walk past a frame header a decoder finds.
                offset = segment
            case 0xD9, 0xDA:
                // End of image, or start of scan before any frame header.
                return nil
            case 0xC0...0xCF where marker != 0xC4 && marker != 0xC8 && marker != 0xCC:
                guard let height = r.u16be(segment + 3), let width = r.u16be(segment + 5) else { return nil }
                return (width, height)
            default:
                guard let length = r.u16be(segment), length >= 2 else { return nil }
                offset = segment + length
            }
        }
        return nil
    }
}
