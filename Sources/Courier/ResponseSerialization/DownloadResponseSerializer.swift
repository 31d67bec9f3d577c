import Foundation
import HTTPTypes

/// Turns a finished download into a value from the file it wrote, without reading the file into
/// memory first (Alamofire's `DownloadResponseSerializerProtocol`): for what works on the file
/// itself (its location, a parser that streams it, an archive to unpack).
///
/// Any ``ResponseSerializer`` reads a download too (``DownloadResponse/value(serializedBy:)-8exso``,
/// ``ResponseSerializer/responseObject(for:fileURL:)``), the whole file at once.
///
/// ```swift
/// struct LineCount: DownloadResponseSerializer {
///     func responseObject(for response: HTTPResponse?, fileURL: URL?) throws(CourierError) -> Int {
///         let file = try URLResponseSerializer().responseObject(for: response, fileURL: fileURL)
///         // … count the file's lines a block at a time
///     }
/// }
/// let lines = try await manager.download(request).value(serializedBy: LineCount())
/// ```
public protocol DownloadResponseSerializer<Output>: Sendable {
    /// What the serializer produces.
    associatedtype Output: Sendable

    /// Makes a value of the file a download wrote, `nil` when it left none.
    func responseObject(for response: HTTPResponse?, fileURL: URL?) throws(CourierError) -> Output
}

/// The downloaded file's URL, as it is (Alamofire's `URLResponseSerializer`): validates nothing.
public struct URLResponseSerializer: DownloadResponseSerializer {
    /// A serializer.
    public init() {}

    /// `fileURL`.
    /// - Throws: ``CourierError/Code/responseSerializationFailed`` when the download left no file
    ///   (Alamofire's `inputFileNil`).
    public func responseObject(for response: HTTPResponse?, fileURL: URL?) throws(CourierError) -> URL {
        guard let fileURL else {
            throw CourierError(.responseSerializationFailed, "no downloaded file (the download left none)", response: response)
        }
        return fileURL
    }
}

extension DownloadResponseSerializer where Self == URLResponseSerializer {
    /// ``URLResponseSerializer``: the downloaded file's URL.
    public static var url: URLResponseSerializer { URLResponseSerializer() }
}

extension DownloadResponse {
    /// The value `serializer` makes of the downloaded file (which stays where it is).
    /// - Throws: What the serializer throws.
    public func value<Serializer: DownloadResponseSerializer>(serializedBy serializer: Serializer) throws(CourierError) -> Serializer.Output {
        try serializer.responseObject(for: self.response, fileURL: self.fileURL)
    }
}
