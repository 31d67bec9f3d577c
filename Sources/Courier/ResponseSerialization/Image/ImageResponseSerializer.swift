import Foundation
import HTTPTypes

/// Validates an image response and reads its header (AFNetworking's `AFImageResponseSerializer`).
///
/// - Accepts AFNetworking's image types — `image/tiff`, `image/jpeg`, `image/gif`, `image/png`,
///   `image/ico`, `image/x-icon`, `image/bmp`, `image/x-bmp`, `image/x-xbitmap`,
///   `image/x-win-bitmap` — and `image/webp` and `image/vnd.microsoft.icon` (the registered type
///   for ICO, which Apache and Python's `mimetypes` serve).
/// - Returns a ``ResponseImage`` that keeps the bytes and knows the format and pixel size from the
///   header (PNG, JPEG, GIF, BMP, WebP, TIFF, ICO), on every platform; on Apple platforms it also
///   gives the `UIImage`/`NSImage`.
/// - A body that is not one of those formats, or whose header is cut short, throws
///   ``CourierError/Code/responseSerializationFailed`` with the body kept. The format is taken from
///   the bytes, not from `Content-Type`: servers often mislabel images.
/// - An absent or empty body and a 204 or 205 response give `nil` and no error.
/// - With an unacceptable status code the body is still read: ``serialize(response:data:)``
///   returns the image beside the status-code error (which ``responseObject(for:data:)``
///   throws), as AFNetworking's failure blocks get it; if the body is not an image either, the
///   status-code error wraps the serialization error. An unacceptable content type stops there:
///   the body is not read.
public struct ImageResponseSerializer: ResponseSerializer {
    /// The validation part; its content types are the image ones above.
    public var http = HTTPResponseSerializer()
    /// Pixels per point of the images (AFNetworking's `imageScale`); 1 by default. An image of 200
    /// pixels at scale 2 is 100 points wide.
    public var imageScale: Double = 1
    /// Whether to decode the image as soon as it arrives, off the main thread, so drawing it later
    /// does not stall (AFNetworking's `automaticallyInflatesResponseImage`). Used with UIKit only;
    /// elsewhere there is nothing to inflate. On by default, as in AFNetworking; as there, an
    /// image of more than a megapixel is not inflated (it is decoded when drawn).
    public var automaticallyInflatesResponseImage = true

    /// A serializer that accepts the image types above, at scale 1.
    public init() {
        self.http = HTTPResponseSerializer(rules: .image)
    }

    public func validate(_ response: HTTPResponse?, data: Data?) throws(CourierError) {
        try self.http.validate(response, data: data)
    }

    public func responseObject(for response: HTTPResponse?, data: Data?) throws(CourierError) -> ResponseImage? {
        try HTTPResponseSerializer.objectOrError(self.serialize(response: response, data: data))
    }

    public func serialize(response: HTTPResponse?, data: Data?) -> (object: ResponseImage??, error: CourierError?) {
        self.http.serialize(response, data: data) { data throws(CourierError) in
            guard let header = ImageHeader.parse(data) else {
                let message =
                    ImageHeader.sniff(data).map { "the \($0) header is truncated or malformed" }
                    ?? "the body is not an image in a format Courier recognises"
                throw CourierError(.responseSerializationFailed, message, response: response, data: data)
            }
            let scale = self.imageScale > 0 && self.imageScale.isFinite ? self.imageScale : 1
            return ResponseImage(data: data, header: header, scale: scale, inflate: self.automaticallyInflatesResponseImage)
        }
    }
}
