extension ImageHeader {
    /// WebP: the first chunk after `RIFF····WEBP` says which bitstream follows.
    /// - `VP8 `: a lossy key frame; after the start code `9D 01 2A`, 14-bit sizes at 26 and 28.
    /// - `VP8L`: lossless; after the signature byte `2F`, two 14-bit fields holding size − 1.
    /// - `VP8X`: extended; the canvas size − 1 as two 24-bit fields at 24 and 27.
    static func webpSize(_ r: ByteReader) -> (Int, Int)? {
        if r.matches(Array("VP8 ".utf8), at: 12) {
            guard r.matches([0x9D, 0x01, 0x2A], at: 23), let width = r.u16le(26), let height = r.u16le(28) else { return nil }
            return (width & 0x3FFF, height & 0x3FFF)
        }
        if r.matches(Array("VP8L".utf8), at: 12) {
            guard r.u8(20) == 0x2F, let bits = r.u32le(21) else { return nil }
            return ((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1)
        }
        if r.matches(Array("VP8X".utf8), at: 12) {
            guard let width = r.u24le(24), let height = r.u24le(27) else { return nil }
            return (width + 1, height + 1)
        }
        return nil
    }
}
