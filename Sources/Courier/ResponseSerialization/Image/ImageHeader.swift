import Foundation

/// What an image file's header says: its format and its size in pixels.
///
/// Parsing reads only the header (for JPEG, the segments before the first frame header) and never
/// decodes pixels. It is total: truncated, malformed or hostile bytes give `nil`, never a trap.
struct ImageHeader: Hashable, Sendable {
    var format: ImageFormat
    var pixelWidth: Int
    var pixelHeight: Int

    /// The format announced by the file's signature, without checking the rest.
    static func sniff(_ data: Data) -> ImageFormat? {
        data.withUnsafeBytes { self.sniff(ByteReader(bytes: $0)) }
    }

    /// The header of `data`, or `nil` when it is not a complete header of a known format.
    static func parse(_ data: Data) -> ImageHeader? {
        data.withUnsafeBytes { raw -> ImageHeader? in
            let reader = ByteReader(bytes: raw)
            guard let format = self.sniff(reader) else { return nil }
            let size: (Int, Int)?
            switch format {
            case .png: size = self.pngSize(reader)
            case .gif: size = self.gifSize(reader)
            case .bmp: size = self.bmpSize(reader)
            case .ico: size = self.icoSize(reader)
            case .jpeg: size = self.jpegSize(reader)
            case .webp: size = self.webpSize(reader)
            case .tiff: size = self.tiffSize(reader)
            default: size = nil
            }
            guard let (width, height) = size, width > 0, height > 0 else { return nil }
            return ImageHeader(format: format, pixelWidth: width, pixelHeight: height)
        }
    }

    static func sniff(_ r: ByteReader) -> ImageFormat? {
        if r.matches([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if r.matches([0xFF, 0xD8, 0xFF]) { return .jpeg }
        if r.matches(Array("GIF87a".utf8)) || r.matches(Array("GIF89a".utf8)) { return .gif }
        if r.matches(Array("RIFF".utf8)) && r.matches(Array("WEBP".utf8), at: 8) { return .webp }
        if r.matches([0x49, 0x49, 0x2A, 0x00]) || r.matches([0x4D, 0x4D, 0x00, 0x2A]) { return .tiff }
        if r.matches(Array("BM".utf8)) { return .bmp }
        if r.matches([0x00, 0x00, 0x01, 0x00]) { return .ico }
        return nil
    }

    /// PNG: the IHDR chunk must come first, or second after the 4-byte `CgBI` chunk of Apple's
    /// "iPhone-optimized" PNGs (`pngcrush -iphone`, which ImageIO decodes); width and height are
    /// big-endian at 16 and 20 of the IHDR's start, each at most 2³¹ − 1 (the PNG specification's
    /// bound, on every word size).
    private static func pngSize(_ r: ByteReader, at start: Int = 0) -> (Int, Int)? {
        // A CgBI chunk: length 4, type, 4 data bytes, CRC: 16 bytes before the IHDR's length.
        let start = r.matches([0, 0, 0, 4] + Array("CgBI".utf8), at: start + 8) ? start + 16 : start
        guard r.matches(Array("IHDR".utf8), at: start + 12), let width = r.u32be(start + 16), let height = r.u32be(start + 20),
            (1...Int(Int32.max)).contains(width), (1...Int(Int32.max)).contains(height)
        else { return nil }
        return (width, height)
    }

    /// GIF: the logical screen size, little-endian at 6 and 8.
    private static func gifSize(_ r: ByteReader) -> (Int, Int)? {
        guard let width = r.u16le(6), let height = r.u16le(8) else { return nil }
        return (width, height)
    }

    /// BMP: an OS/2 1.x core header (12 bytes, 16-bit sizes), or a Windows info header or OS/2 2.x
    /// header (16 bytes or more, 32-bit signed sizes at the same places). The width must be
    /// positive; a negative height means top-down rows, and `Int32.min` is no height (its magnitude
    /// does not fit a 32-bit `Int`).
    private static func bmpSize(_ r: ByteReader) -> (Int, Int)? {
        guard let headerSize = r.u32le(14) else { return nil }
        if headerSize == 12 {
            guard let width = r.u16le(18), let height = r.u16le(20) else { return nil }
            return (width, height)
        }
        guard headerSize >= 16, let rawWidth = r.u32le(18), let rawHeight = r.u32le(22) else { return nil }
        let width = Int32(truncatingIfNeeded: rawWidth)
        let height = Int32(truncatingIfNeeded: rawHeight)
        guard width > 0, height != 0, height != .min else { return nil }
        return (Int(width), Int(height.magnitude))
    }

    /// ICO: the largest entry of the directory; a stored 0 means 256, unless the entry's image is
    /// a PNG, whose own header says (Windows Vista's icons keep 512 or more pixels under a 0).
    private static func icoSize(_ r: ByteReader) -> (Int, Int)? {
        guard let count = r.u16le(4), count > 0 else { return nil }
        var best: (Int, Int)?
        for entry in 0..<count {
            let offset = 6 + entry * 16
            guard let w = r.u8(offset), let h = r.u8(offset + 1), let imageOffset = r.u32le(offset + 12) else { return nil }
            let embedded = r.matches([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A], at: imageOffset) ? self.pngSize(r, at: imageOffset) : nil
            let size = embedded ?? (w == 0 ? 256 : w, h == 0 ? 256 : h)
            // Areas in 64 bits: an embedded PNG's sides reach 2³¹ − 1, and their product
            // overflowed (a trap) where `Int` is 32 bits (arm64_32 watches).
            if best.map({ Int64(size.0) * Int64(size.1) > Int64($0.0) * Int64($0.1) }) ?? true { best = size }
        }
        return best
    }
}
