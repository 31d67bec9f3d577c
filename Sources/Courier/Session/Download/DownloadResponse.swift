import Foundation
import HTTPTypes

/// What an `async` download returns: the request that was answered, the response head and the
/// file holding the body.
public struct DownloadResponse: Sendable {
    /// The request that was answered (after redirects).
    public let request: Request
    /// The response head.
    public let response: HTTPResponse
    /// Where the body is: the destination, or a file in the session's download directory
    /// (``SessionConfiguration/downloadDirectory``, the system's temporary directory by default) that is yours to
    /// move or remove when there was no destination.
    public let fileURL: URL
    /// The task's timings and sizes (``TaskMetrics``), when it recorded them.
    public var metrics: TaskMetrics?
}

extension DownloadResponse {
    /// Reads the downloaded file and turns it into a value with `serializer`, which validates the
    /// response first (Alamofire's `responseDecodable`, `responseString`… on a download request).
    ///
    /// ```swift
    /// let download = try await manager.download(request)
    /// let user = try download.value(serializedBy: DecodableResponseSerializer<User>())
    /// ```
    ///
    /// The whole file is read into memory; for a body too large for that, read the file at
    /// ``fileURL`` yourself. The file stays where it is.
    /// - Throws: ``CourierError/Code/fileSystemFailure`` when the file cannot be read, or what the
    ///   serializer throws (an unacceptable status or content type, a body it cannot decode).
    public func value<Serializer: ResponseSerializer>(serializedBy serializer: Serializer) throws(CourierError) -> Serializer.Output {
        try serializer.responseObject(for: self.response, fileURL: self.fileURL, request: self.request)
    }
}

extension ResponseSerializer {
    /// Validates `response` and decodes the file a download wrote (Alamofire's
    /// `serializeDownload(request:response:fileURL:error:)`): for the completion handler of
    /// ``SessionManager/downloadTask(with:progress:destination:completionHandler:)``, which gets
    /// the file's URL.
    ///
    /// An empty file is an empty body, which Courier's serializers take as AFNetworking does (no
    /// object, empty `Data`, `""`); a `Decodable` type that cannot be empty fails.
    /// - Throws: ``CourierError/Code/responseSerializationFailed`` when `fileURL` is nil (the
    ///   download left no file), ``CourierError/Code/fileSystemFailure`` when the file cannot be
    ///   read, or what ``responseObject(for:data:)`` throws.
    public func responseObject(for response: HTTPResponse?, fileURL: URL?) throws(CourierError) -> Output {
        try self.responseObject(for: response, fileURL: fileURL, request: nil)
    }

    func responseObject(for response: HTTPResponse?, fileURL: URL?, request: Request?) throws(CourierError) -> Output {
        let prefix = request.map { "\($0.summary): " } ?? ""
        guard let fileURL else {
            throw CourierError(
                .responseSerializationFailed, "\(prefix)no downloaded file to read (the download left none)", request: request,
                response: response)
        }
        let data: Data
        do {
            data = try Data(contentsOf: fileURL)
        } catch {
            throw CourierError(
                .fileSystemFailure, "\(prefix)cannot read the downloaded file \(fileURL.path)", request: request, response: response,
                underlyingError: error)
        }
        return try self.responseObject(for: response, data: data)
    }
}
