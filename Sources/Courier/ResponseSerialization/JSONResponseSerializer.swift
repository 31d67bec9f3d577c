import Foundation
import HTTPTypes

/// Validates a response and parses its body with `JSONSerialization`
/// (AFNetworking's `AFJSONResponseSerializer`).
public struct JSONResponseSerializer: ResponseSerializer {
    /// The validation part.
    public var http = HTTPResponseSerializer()
    /// Reading options for `JSONSerialization`.
    public var readingOptions: JSONSerialization.ReadingOptions = []

    /// A serializer that accepts `application/json`, `text/json` and `text/javascript`.
    public init() {
        self.http.acceptableContentTypes = ["application/json", "text/json", "text/javascript"]
    }

    public func validate(_ response: HTTPResponse?, data: Data?) throws(CourierError) {
        try self.http.validate(response, data: data)
    }

    public func responseObject(for response: HTTPResponse?, data: Data?) throws(CourierError) -> (any Sendable)? {
        try self.validate(response, data: data)
        guard let data, !data.isEmpty else { return nil }
        do {
            let object = try JSONSerialization.jsonObject(with: data, options: self.readingOptions)
            return SendableJSON.wrap(object)
        } catch {
            throw CourierError(.responseSerializationFailed, "invalid JSON", response: response, data: data, underlyingError: error)
        }
    }
}

/// `JSONSerialization` output is plain property-list values; this view makes it `Sendable`.
enum SendableJSON {
    static func wrap(_ object: Any) -> any Sendable {
        switch object {
        case let dictionary as [String: Any]: return dictionary.mapValues { wrap($0) }
        case let array as [Any]: return array.map { wrap($0) }
        case let string as String: return string
        case let number as NSNumber: return number
        case is NSNull: return NSNull()
        default: return String(describing: object)
        }
    }
}
