import Foundation
import HTTPTypes

/// Tries several serializers in order; the first that succeeds wins (AFNetworking's
/// `AFCompoundResponseSerializer`).
///
/// "Succeeds" means returns without throwing — a JSON serializer that returns no object for an
/// empty body has succeeded. When every serializer fails, the error of the first one is thrown: list
/// the serializer you expect most first. An empty list validates nothing and returns the body.
///
/// ```swift
/// let serializer = CompoundResponseSerializer([JSONResponseSerializer(), XMLParserResponseSerializer()])
/// switch try serializer.responseObject(for: response, data: body) {
/// case let json as [String: Any]: …
/// case let xml as XMLParserSource: …
/// default: …
/// }
/// ```
public struct CompoundResponseSerializer: ResponseSerializer {
    /// The serializers, in the order they are tried.
    public var responseSerializers: [any ResponseSerializer]

    /// A serializer that tries `serializers` in order.
    public init(_ serializers: [any ResponseSerializer]) {
        self.responseSerializers = serializers
    }

    /// Succeeds when any of the serializers' validations succeeds.
    public func validate(_ response: HTTPResponse?, data: Data?) throws(CourierError) {
        var firstError: CourierError?
        for serializer in self.responseSerializers {
            do {
                try serializer.validate(response, data: data)
                return
            } catch {
                if firstError == nil { firstError = error }
            }
        }
        if let firstError { throw firstError }
    }

    public func responseObject(for response: HTTPResponse?, data: Data?) throws(CourierError) -> (any Sendable)? {
        guard !self.responseSerializers.isEmpty else { return data }
        var firstError: CourierError?
        for serializer in self.responseSerializers {
            do {
                return try Self.run(serializer, response: response, data: data)
            } catch {
                if firstError == nil { firstError = error }
            }
        }
        throw firstError ?? CourierError(.internalInconsistency, "no serializer ran", response: response, data: data)
    }

    private static func run<S: ResponseSerializer>(
        _ serializer: S, response: HTTPResponse?, data: Data?
    ) throws(CourierError) -> (any Sendable)? {
        let object = try serializer.responseObject(for: response, data: data)
        // Flatten an optional output so callers cast the value, not `Optional<…>`.
        return OptionalFlattening.flattened(object)
    }
}
