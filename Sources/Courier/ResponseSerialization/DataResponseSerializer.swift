import Foundation
import HTTPTypes

/// Validates like ``HTTPResponseSerializer`` and returns the body, an empty `Data` when there was
/// none. The body is returned as it came: no copy.
public struct DataResponseSerializer: ResponseSerializer {
    /// The validation part; accepts any content type and status 200–299 by default.
    public var http = HTTPResponseSerializer()

    /// A serializer that accepts any content type and status 200–299.
    public init() {}

    public func validate(_ response: HTTPResponse?, data: Data?) throws(CourierError) {
        try self.http.validate(response, data: data)
    }

    public func responseObject(for response: HTTPResponse?, data: Data?) throws(CourierError) -> Data {
        try self.validate(response, data: data)
        return data ?? Data()
    }
}
