import Foundation
import HTTPTypes

/// Validates a response and decodes its body into a `Decodable` value, with `JSONDecoder` by
/// default or any ``DataDecoder``.
///
/// - Status 200–299 and any content type are accepted by default; configure ``http`` to narrow it.
/// - A 204 or 205 response, or an empty body (which is how a response to `HEAD` arrives), gives
///   ``EmptyResponse/emptyValue()`` when `Value` conforms to ``EmptyResponse`` (``Empty`` does),
///   and a ``CourierError/Code/responseSerializationFailed`` error otherwise.
/// - A body that does not decode throws ``CourierError/Code/responseSerializationFailed`` with the
///   `DecodingError` in ``CourierError/underlyingError`` and the body in ``CourierError/data``.
///
/// The body goes to the decoder as it is: no copy, no pre-pass.
///
/// ```swift
/// struct User: Decodable, Sendable { var id: Int; var name: String }
/// let serializer = DecodableResponseSerializer(User.self)
/// let user = try serializer.responseObject(for: response, data: body)
/// ```
public struct DecodableResponseSerializer<Value: Decodable & Sendable>: ResponseSerializer {
    /// The validation part.
    public var http = HTTPResponseSerializer()
    /// The decoder; a `JSONDecoder` with default settings unless you set one.
    public var decoder: any DataDecoder
    /// Status codes whose body is empty by definition; 204 and 205.
    public var emptyResponseCodes: Set<Int> = [204, 205]
    /// Prepares a non-empty body before it is decoded (``DataPreprocessor``); none by default.
    public var dataPreprocessor: (any DataPreprocessor)? {
        get { self.preprocessorReference?.preprocessor }
        set { self.preprocessorReference = .make(newValue) }
    }
    private var preprocessorReference: PreprocessorReference?

    /// A serializer of `type` that decodes with `decoder`, after `dataPreprocessor` when one is given.
    public init(
        _ type: Value.Type = Value.self, decoder: any DataDecoder = JSONDecoder(), dataPreprocessor: (any DataPreprocessor)? = nil
    ) {
        self.decoder = decoder
        self.preprocessorReference = .make(dataPreprocessor)
    }

    public func validate(_ response: HTTPResponse?, data: Data?) throws(CourierError) {
        try self.http.validate(response, data: data)
    }

    public func responseObject(for response: HTTPResponse?, data: Data?) throws(CourierError) -> Value {
        try self.validate(response, data: data)
        let isEmptyStatus = response.map { self.emptyResponseCodes.contains($0.status.code) } ?? false
        guard let data, !data.isEmpty, !isEmptyStatus else {
            if let emptyType = Value.self as? any EmptyResponse.Type, let empty = emptyType.emptyValue() as? Value {
                return empty
            }
            throw CourierError(
                .responseSerializationFailed,
                "the response has no body and \(Value.self) does not conform to EmptyResponse",
                response: response, data: data)
        }
        let body = try HTTPResponseSerializer.preprocessed(data, by: self.preprocessorReference?.preprocessor, response: response)
        do {
            return try self.decoder.decode(Value.self, from: body)
        } catch {
            throw CourierError(
                .responseSerializationFailed, "the body could not be decoded as \(Value.self)",
                response: response, data: data, underlyingError: error)
        }
    }
}
