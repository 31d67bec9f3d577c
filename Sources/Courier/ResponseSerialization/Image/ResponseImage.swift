import Foundation

#if canImport(UIKit)
import UIKit
#elseif canImport(AppKit)
import AppKit
#endif

/// An image received by ``ImageResponseSerializer``: its bytes, its format and pixel size read from
/// the header, and the scale it is meant for.
///
/// Pixels are not decoded on Linux; hand ``data`` to an image library to draw it. On Apple platforms
/// `platformImage` gives a `UIImage` or `NSImage`.
public struct ResponseImage: Sendable, Equatable {
    /// The encoded image, as received.
    public let data: Data
    /// The file format, from the header.
    public let format: ImageFormat
    /// Width in pixels, from the header.
    public let pixelWidth: Int
    /// Height in pixels, from the header.
    public let pixelHeight: Int
    /// Pixels per point (AFNetworking's `imageScale`): 2 for an `@2x` image.
    public let scale: Double

    #if canImport(UIKit)
    /// The decoded image, kept when the serializer inflated it.
    let decoded: DecodedImage?
    #endif

    /// Width in points: pixels divided by ``scale``.
    public var width: Double { Double(self.pixelWidth) / self.scale }
    /// Height in points: pixels divided by ``scale``.
    public var height: Double { Double(self.pixelHeight) / self.scale }

    init(data: Data, header: ImageHeader, scale: Double, inflate: Bool) {
        self.data = data
        self.format = header.format
        self.pixelWidth = header.pixelWidth
        self.pixelHeight = header.pixelHeight
        self.scale = scale
        #if canImport(UIKit)
        self.decoded = inflate && Self.isSmallEnoughToInflate(header) ? DecodedImage(data: data, scale: scale, inflate: true) : nil
        #endif
    }

    /// The most pixels an image may have to be inflated as it arrives (AFNetworking's limit, one
    /// megapixel): a larger one is left to decode when drawn. Its bitmap costs four bytes a pixel,
    /// and a server can send a small file that names a huge size (a 30,000-pixel square PNG of
    /// one colour is 3.5 MB and would inflate to 3.6 GB).
    static let maximumInflatedPixels = 1024 * 1024

    /// Whether an image of `header`'s size is inflated as it arrives (UIKit only).
    static func isSmallEnoughToInflate(_ header: ImageHeader) -> Bool {
        let (pixels, overflow) = header.pixelWidth.multipliedReportingOverflow(by: header.pixelHeight)
        return !overflow && pixels <= Self.maximumInflatedPixels
    }

    public static func == (lhs: ResponseImage, rhs: ResponseImage) -> Bool {
        lhs.format == rhs.format && lhs.pixelWidth == rhs.pixelWidth && lhs.pixelHeight == rhs.pixelHeight
            && lhs.scale == rhs.scale && lhs.data == rhs.data
    }
}

#if canImport(UIKit)
extension ResponseImage {
    /// The image as a `UIImage` at ``scale``: the inflated one when the serializer inflated it,
    /// else decoded from ``data`` now.
    public var platformImage: UIImage? {
        self.decoded?.image ?? UIImage(data: self.data, scale: CGFloat(self.scale))
    }
}

/// A decoded `UIImage`. `@unchecked Sendable`: `UIImage` is immutable and documented as safe to
/// use from any thread; this box only lets it travel inside a `Sendable` value.
final class DecodedImage: @unchecked Sendable {
    let image: UIImage?

    init(data: Data, scale: Double, inflate: Bool) {
        let image = UIImage(data: data, scale: CGFloat(scale))
        #if os(watchOS)
        self.image = image
        #else
        self.image = inflate ? (image?.preparingForDisplay() ?? image) : image
        #endif
    }
}
#elseif canImport(AppKit)
extension ResponseImage {
    /// The image as an `NSImage`, decoded from ``data`` now, sized in points by ``scale``.
    public var platformImage: NSImage? {
        guard let image = NSImage(data: self.data) else { return nil }
        image.size = NSSize(width: self.width, height: self.height)
        return image
    }
}
#endif
