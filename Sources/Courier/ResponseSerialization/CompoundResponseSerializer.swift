import Foundation
import HTTPTypes

/// Tries several serializers in order and keeps the first object one makes (AFNetworking's
/// `AFCompoundResponseSerializer`).
///
/// - Each member runs in turn (its ``ResponseSerializer/serialize(response:data:)``); the first
///   that makes an object wins, with whatever error comes with it (a JSON error body under a 404
///   is the object, beside the status error, which ``responseObject(for:data:)`` throws). An
///   ``HTTPResponseSerializer`` or ``DataResponseSerializer`` member makes the body its object
///   even when it refuses the response, so it wins with its error.
/// - A member that makes no object — it refused the content type, the body did not parse, or
///   there was nothing to parse (JSON's answer to an empty body) — is skipped, and its error is
///   not reported.
/// - When no member makes an object, the compound behaves as an ``HTTPResponseSerializer`` with
///   its own ``http`` rules (status 200–299 and any content type by default): it returns the body
///   as it came, beside its own validation error if any (which ``responseObject(for:data:)``
///   throws). So a `text/html` error page under a 200 gives the page's `Data`, and under a 500
///   the page with the compound's ``CourierError/Code/unacceptableStatusCode`` error. An empty
///   list behaves the same way.
///
/// ```swift
/// let serializer = CompoundResponseSerializer([JSONResponseSerializer(), XMLParserResponseSerializer()])
/// switch try serializer.responseObject(for: response, data: body) {
/// case let json as [String: Any]: …
/// case let xml as XMLParserSource: …
/// case let other as Data: …  // no member made an object
/// default: …
/// }
/// ```
public struct CompoundResponseSerializer: ResponseSerializer {
    /// The serializers, in the order they are tried.
    public var responseSerializers: [any ResponseSerializer]
    /// The compound's own validation, used when no member makes an object (AFNetworking's
    /// compound inherits it from `AFHTTPResponseSerializer`): status 200–299, any content type.
    public var http = HTTPResponseSerializer()

    /// A serializer that tries `serializers` in order.
    public init(_ serializers: [any ResponseSerializer]) {
        self.responseSerializers = serializers
    }

    /// The compound's own validation (``http``), as AFNetworking's compound validates with the
    /// rules it inherits; the members validate as they run.
    public func validate(_ response: HTTPResponse?, data: Data?) throws(CourierError) {
        try self.http.validate(response, data: data)
    }

    public func responseObject(for response: HTTPResponse?, data: Data?) throws(CourierError) -> (any Sendable)? {
        let (object, error) = self.serialize(response: response, data: data)
        if let error { throw error }
        // Unwrap explicitly: `return object` would box `.some(nil)` as a non-nil `any Sendable`.
        return object ?? nil
    }

    /// The first member's object with its error; without one, the body with the compound's own
    /// validation error, if any.
    public func serialize(response: HTTPResponse?, data: Data?) -> (object: (any Sendable)??, error: CourierError?) {
        for serializer in self.responseSerializers {
            let (object, error) = Self.run(serializer, response: response, data: data)
            if let object { return (.some(object), error) }
        }
        // AFNetworking's `[super responseObjectForResponse:…]`: the body whatever the validation
        // found, beside its error.
        let body: (any Sendable)? = data
        do {
            try self.http.validate(response, data: data)
        } catch {
            return (.some(body), error)
        }
        return (.some(body), nil)
    }

    private static func run<S: ResponseSerializer>(
        _ serializer: S, response: HTTPResponse?, data: Data?
    ) -> (object: (any Sendable)?, error: CourierError?) {
        let (object, error) = serializer.serialize(response: response, data: data)
        // Flatten an optional output so that "no object" is nil and callers cast the value, not `Optional<…>`.
        return (object.flatMap { OptionalFlattening.flattened($0) }, error)
    }
}
