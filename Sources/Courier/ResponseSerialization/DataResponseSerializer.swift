import Foundation
import HTTPTypes

/// Validates like ``HTTPResponseSerializer`` and returns the body, an empty `Data` when there was
/// none. The body is returned as it came: no copy.
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
        guard let data, !data.isEmpty else { return Data() }
        return try HTTPResponseSerializer.preprocessed(data, by: self.preprocessorReference?.preprocessor, response: response)
    }
}
