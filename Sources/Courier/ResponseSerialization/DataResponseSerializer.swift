import Foundation
import HTTPTypes

/// Validates like ``HTTPResponseSerializer`` and returns the body, an empty `Data` when there was
/// none. The body is returned as it came: no copy. ``serialize(response:data:)`` returns it beside
/// the validation error too, as AFNetworking's `AFHTTPResponseSerializer` does.
public struct DataResponseSerializer: ResponseSerializer {
    /// The validation part; accepts any content type and status 200–299 by default.
    public var http = HTTPResponseSerializer()
    /// Prepares a non-empty body before it is decoded (``DataPreprocessor``); none by default.
    public var dataPreprocessor: (any DataPreprocessor)? {
        get { self.preprocessorReference?.preprocessor }
        set { self.preprocessorReference = .make(newValue) }
    }
    private var preprocessorReference: PreprocessorReference?

    /// A serializer that accepts any content type and status 200–299.
    public init() {}

    /// A serializer that runs `dataPreprocessor` over a non-empty body.
    public init(dataPreprocessor: any DataPreprocessor) {
        self.dataPreprocessor = dataPreprocessor
    }

    public func validate(_ response: HTTPResponse?, data: Data?) throws(CourierError) {
        try self.http.validate(response, data: data)
    }

    public func responseObject(for response: HTTPResponse?, data: Data?) throws(CourierError) -> Data {
        try self.validate(response, data: data)
        return try self.prepared(data, response: response)
    }

    /// The body beside the validation error if any, as ``HTTPResponseSerializer`` (AFNetworking's
    /// `AFHTTPResponseSerializer`) returns it: a refused body comes as it came (an empty `Data`
    /// when there was none, not preprocessed: the preprocessor prepares a value, and a refused
    /// body is none), so a completion handler gets the error page of a 500 with the status error.
    /// A preprocessor that fails gives its error and no body. ``responseObject(for:data:)``
    /// throws the error instead.
    public func serialize(response: HTTPResponse?, data: Data?) -> (object: Data?, error: CourierError?) {
        do {
            try self.validate(response, data: data)
        } catch {
            return (data ?? Data(), error)
        }
        do {
            return (try self.prepared(data, response: response), nil)
        } catch {
            return (nil, error)
        }
    }

    /// A validated body, preprocessed; an empty `Data` when there was none.
    private func prepared(_ data: Data?, response: HTTPResponse?) throws(CourierError) -> Data {
        guard let data, !data.isEmpty else { return Data() }
        return try HTTPResponseSerializer.preprocessed(data, by: self.preprocessorReference?.preprocessor, response: response)
    }
}
