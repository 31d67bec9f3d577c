import Foundation
import HTTPTypes

/// Validates status code and content type and returns the body as it came
/// (AFNetworking's `AFHTTPResponseSerializer`).
public struct HTTPResponseSerializer: ResponseSerializer {
    /// Acceptable status codes; 200–299 by default.
    public var acceptableStatusCodes: IndexSet = IndexSet(integersIn: 200..<300)
    /// Acceptable MIME types; nil accepts any.
    public var acceptableContentTypes: Set<String>?

    /// A serializer with AFNetworking's defaults.
    public init() {}

    public func validate(_ response: HTTPResponse?, data: Data?) throws(CourierError) {
        guard let response else { return }
        if let acceptable = self.acceptableContentTypes, let mime = response.mimeType ?? (data?.isEmpty == false ? "" : nil),
            !acceptable.contains(mime)
        {
            throw CourierError(
                .unacceptableContentType, "unacceptable content type: \(mime.isEmpty ? "(none)" : mime)",
                response: response, data: data)
        }
        if !self.acceptableStatusCodes.contains(response.status.code) {
            throw CourierError(
                .unacceptableStatusCode, "unacceptable status code: \(response.status.code) \(response.status.reasonPhrase)",
                response: response, data: data)
        }
    }

    public func responseObject(for response: HTTPResponse?, data: Data?) throws(CourierError) -> Data? {
        try self.validate(response, data: data)
        return data
    }
}
