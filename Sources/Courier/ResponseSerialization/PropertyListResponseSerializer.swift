import Foundation
import HTTPTypes

/// Validates a response and parses its body with `PropertyListSerialization`
/// (AFNetworking's `AFPropertyListResponseSerializer`).
///
/// - Accepts `application/x-plist`; add other types to ``http``.
/// - Reads XML and binary property lists (and OpenStep ones where Foundation can); set ``format``
///   to accept only one.
/// - An absent or empty body and a 204 or 205 response give no object and no error; a body that is
///   not a property list throws ``CourierError/Code/responseSerializationFailed`` with the parse
///   error and the body kept.
/// - With an unacceptable status code the body is still parsed: ``serialize(response:data:)``
///   returns the object beside the status-code error (which ``responseObject(for:data:)``
///   throws), as AFNetworking's failure blocks get it; if the body does not parse either, the
///   status-code error wraps the parse error. An unacceptable content type stops there: the body
///   is not parsed.
///
/// The object is handed over as `PropertyListSerialization` made it: cast it to `[String: Any]`,
/// `[Any]`, `String`, `NSNumber`, `Data` or `Date`.
public struct PropertyListResponseSerializer: ResponseSerializer {
    /// The validation part; its content type is `application/x-plist`.
    public var http = HTTPResponseSerializer()
    /// The only format accepted, or `nil` (the default) for any format Foundation reads.
    public var format: PropertyListSerialization.PropertyListFormat?
    /// Read options (`.mutableContainers`, `.mutableContainersAndLeaves`); none by default.
    public var readOptions: PropertyListSerialization.ReadOptions = []

    /// A serializer that accepts `application/x-plist`, in any format.
    public init() {
        self.http = HTTPResponseSerializer(rules: .propertyList)
    }

    /// A serializer that accepts only `format`, with the given read options.
    public init(format: PropertyListSerialization.PropertyListFormat?, readOptions: PropertyListSerialization.ReadOptions = []) {
        self.init()
        self.format = format
        self.readOptions = readOptions
    }

    public func validate(_ response: HTTPResponse?, data: Data?) throws(CourierError) {
        try self.http.validate(response, data: data)
    }

    public func responseObject(for response: HTTPResponse?, data: Data?) throws(CourierError) -> (any Sendable)? {
        try HTTPResponseSerializer.objectOrError(self.serialize(response: response, data: data))
    }

    public func serialize(response: HTTPResponse?, data: Data?) -> (object: (any Sendable)??, error: CourierError?) {
        self.http.serialize(response, data: data) { data throws(CourierError) in
            var found = PropertyListSerialization.PropertyListFormat.xml
            let object: Any
            do {
                object = try PropertyListSerialization.propertyList(from: data, options: self.readOptions, format: &found)
            } catch {
                throw CourierError(
                    .responseSerializationFailed, "the body is not a property list",
                    response: response, data: data, underlyingError: error)
            }
            if let format = self.format, format != found {
                throw CourierError(
                    .responseSerializationFailed, "the property list is in format \(found.rawValue), not \(format.rawValue)",
                    response: response, data: data)
            }
            return transferringOwnership(of: object)
        }
    }
}
