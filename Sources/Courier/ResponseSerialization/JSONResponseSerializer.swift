import Foundation
import HTTPTypes

/// Validates a response and parses its body with `JSONSerialization`
/// (AFNetworking's `AFJSONResponseSerializer`).
///
/// - Accepts `application/json`, `text/json`, `text/javascript` and any `+json` type
///   (`application/problem+json`), with or without parameters, in any letter case.
/// - An absent or empty body, a body of white space only, and a 204 or 205 response give no object
///   and no error (a response to `HEAD` arrives with an empty body, so it is covered too).
/// - Invalid JSON throws ``CourierError/Code/responseSerializationFailed`` with the parse error in
///   ``CourierError/underlyingError`` and the body in ``CourierError/data``.
/// - With an unacceptable status code the body is still parsed: ``serialize(response:data:)``
///   returns the object beside the status-code error, as AFNetworking's failure blocks get it; if
///   the body does not parse either, the status-code error wraps the parse error. An unacceptable
///   content type stops there: the body is not parsed. (The XML, property-list and image
///   serializers follow the same rule.)
///
/// The object is what `JSONSerialization` returns, handed over without a copy: cast it to
/// `[String: Any]`, `[Any]`, `String`, `NSNumber` or `NSNull`. Only ``removesKeysWithNullValues``
/// walks the tree.
///
/// ```swift
/// var serializer = JSONResponseSerializer()
/// serializer.removesKeysWithNullValues = true
/// let object = try serializer.responseObject(for: response, data: body)
/// let user = object as? [String: Any]
/// ```
public struct JSONResponseSerializer: ResponseSerializer {
    /// The validation part; its content types are the JSON ones.
    public var http = HTTPResponseSerializer()
    /// Reading options for `JSONSerialization`; add `.fragmentsAllowed` to accept a top-level
    /// string, number, `true`, `false` or `null`.
    public var readingOptions: JSONSerialization.ReadingOptions = []
    /// Whether to remove every `null` from the tree, at any depth: keys whose value is `null` from
    /// dictionaries, and `null` elements from arrays (AFNetworking's
    /// `removesKeysWithNullValues`, which removes both since 4.0). Off by default: it costs a walk
    /// over the whole tree.
    public var removesKeysWithNullValues: Bool {
        get { self.extras?.removesNulls ?? false }
        set { self.extras = Extras.make(removesNulls: newValue, preprocessor: self.dataPreprocessor) }
    }
    /// Prepares a non-empty body before it is decoded (``DataPreprocessor``); none by default.
    public var dataPreprocessor: (any DataPreprocessor)? {
        get { self.extras?.preprocessor }
        set { self.extras = Extras.make(removesNulls: self.removesKeysWithNullValues, preprocessor: newValue) }
    }
    /// The two settings above behind one reference, nil for the defaults: the serializer stays
    /// within an existential's inline buffer (``PreprocessorReference``).
    private var extras: Extras?

    private final class Extras: Sendable {
        let removesNulls: Bool
        let preprocessor: (any DataPreprocessor)?

        private init(removesNulls: Bool, preprocessor: (any DataPreprocessor)?) {
            self.removesNulls = removesNulls
            self.preprocessor = preprocessor
        }

        static func make(removesNulls: Bool, preprocessor: (any DataPreprocessor)?) -> Extras? {
            !removesNulls && preprocessor == nil ? nil : Extras(removesNulls: removesNulls, preprocessor: preprocessor)
        }
    }

    /// A serializer that accepts `application/json`, `text/json`, `text/javascript` and `+json`.
    public init() {
        self.http = HTTPResponseSerializer(rules: .json)
    }

    /// A serializer with the given reading options.
    public init(readingOptions: JSONSerialization.ReadingOptions) {
        self.init()
        self.readingOptions = readingOptions
    }

    /// A serializer that runs `dataPreprocessor` over a non-empty body before it parses it.
    public init(dataPreprocessor: any DataPreprocessor) {
        self.init()
        self.dataPreprocessor = dataPreprocessor
    }

    public func validate(_ response: HTTPResponse?, data: Data?) throws(CourierError) {
        try self.http.validate(response, data: data)
    }

    public func responseObject(for response: HTTPResponse?, data: Data?) throws(CourierError) -> (any Sendable)? {
        try HTTPResponseSerializer.objectOrError(self.serialize(response: response, data: data))
    }

    public func serialize(response: HTTPResponse?, data: Data?) -> (object: (any Sendable)??, error: CourierError?) {
        self.http.serialize(response, data: data, isEmpty: HTTPResponseSerializer.isBlank, preprocessor: self.dataPreprocessor) {
            prepared throws(CourierError) in
            do {
                return try Self.parse(prepared, options: self.readingOptions, removingNulls: self.removesKeysWithNullValues)
            } catch {
                // The body as received in the error, not what the preprocessor made of it.
                throw CourierError(
                    .responseSerializationFailed, "the body is not valid JSON", response: response, data: data, underlyingError: error)
            }
        }
    }

    /// Parses `data`; the only walk over the tree is the optional null removal.
    static func parse(_ data: Data, options: JSONSerialization.ReadingOptions, removingNulls: Bool) throws -> any Sendable {
        var object = try JSONSerialization.jsonObject(with: data, options: options)
        if removingNulls { object = JSONNullRemoval.removingNulls(from: object) }
        return transferringOwnership(of: object)
    }
}
