import Foundation
import HTTPTypes

/// Encodes parameters as a JSON body (AFNetworking's `AFJSONRequestSerializer`); GET, HEAD and
/// DELETE (``HTTPRequestSerializer/httpMethodsEncodingParametersInURI``) still use the query.
///
/// Everything else — default headers, request options, the methods that use the query — is the
/// ``base`` serializer's, and its properties can be set on this one directly:
///
/// ```swift
/// var serializer = JSONRequestSerializer()
/// serializer.timeoutInterval = 5
/// serializer.setValue("Bearer t", forHTTPHeaderField: "Authorization")
/// let request = try serializer.request(method: .post, urlString: "https://example.com/items",
///                                      parameters: ["name": "pen", "tags": ["a", "b"], "price": 1.5])
/// // body {"name":"pen","price":1.5,"tags":["a","b"]}, Content-Type: application/json
/// ```
///
/// Keys are always written sorted: as query-string keys are, or, with `.sortedKeys` in
/// ``writingOptions``, in the order `JSONSerialization` gives them then (`a9` before `a10`, `b`
/// beside `B`). Top-level arrays and dictionaries are accepted; a top-level
/// string, number, boolean or null only with `.fragmentsAllowed`.
/// NaN, infinities, sets, dates, data, closures and other objects fail with
/// ``CourierError/Code/parameterEncodingFailed`` naming the path of the value.
@dynamicMemberLookup
public struct JSONRequestSerializer: HTTPRequestSerializerWrapper {
    /// The serializer that supplies headers, options and the query-string encoding.
    public var base = HTTPRequestSerializer()

    /// How to write JSON: `.prettyPrinted`,
    /// `.withoutEscapingSlashes`,
    /// `.fragmentsAllowed`, `.sortedKeys`. Keys are sorted without `.sortedKeys` too, as
    /// query-string keys are; with it, in `JSONSerialization`'s `.sortedKeys` order (`a9` before
    /// `a10`, `b` beside `B`).
    public var writingOptions: JSONSerialization.WritingOptions = []

    /// A serializer with AFNetworking's defaults.
    public init() {}

    /// Applies the base serializer's options and headers; for methods that encode parameters in the
    /// URI, puts them in the query; else, when there are parameters, writes them as the body with
    /// `Content-Type: application/json` unless the request has one. `nil` parameters leave the body
    /// alone, as in AFNetworking.
    public func request(bySerializing request: Request, parameters: (any Sendable)?) throws(CourierError) -> Request {
        let prepared = try self.preparingBody(of: request, parameters: parameters)
        var request = prepared.request
        guard let parameters = prepared.bodyParameters else { return request }
        let tree: ParameterValue
        do {
            tree = try ParameterValue(parameters)
        } catch {
            throw error.adding(request: request)
        }
        switch tree {
        case .array, .dictionary:
            break
        default:
            guard self.writingOptions.contains(.fragmentsAllowed) else {
                throw CourierError(
                    .parameterEncodingFailed,
                    "JSON parameters must be an array or a dictionary, not a \(tree.kind), unless writingOptions has .fragmentsAllowed",
                    request: request
                )
            }
        }
        let data: Data
        do {
            data = try JSONWriter(options: self.writingOptions).write(tree)
        } catch {
            throw error.adding(request: request)
        }
        if !request.headerFields.contains(.contentType) {
            request.headerFields[.contentType] = "application/json"
        }
        request.body = .data(data)
        return request
    }
}
