/// An image file format Courier recognises by its header.
///
/// An open set: match on the static members and expect new ones.
public struct ImageFormat: Hashable, Sendable, CustomStringConvertible {
    /// A short lower-case name: `png`, `jpeg`, `gif`, `bmp`, `webp`, `tiff`, `ico`.
    public let name: String
    /// The usual MIME type (`image/png`).
    public let mimeType: String

    private init(_ name: String, _ mimeType: String) {
        self.name = name
        self.mimeType = mimeType
    }

    /// Portable Network Graphics.
    public static let png = ImageFormat("png", "image/png")
    /// JPEG (JFIF, Exif).
    public static let jpeg = ImageFormat("jpeg", "image/jpeg")
    /// GIF 87a and 89a.
    public static let gif = ImageFormat("gif", "image/gif")
    /// Windows and OS/2 bitmaps.
    public static let bmp = ImageFormat("bmp", "image/bmp")
    /// WebP, lossy (VP8), lossless (VP8L) and extended (VP8X).
    public static let webp = ImageFormat("webp", "image/webp")
    /// TIFF, either byte order.
    public static let tiff = ImageFormat("tiff", "image/tiff")
    /// Windows icons.
    public static let ico = ImageFormat("ico", "image/x-icon")

    public var description: String { self.name }
}
