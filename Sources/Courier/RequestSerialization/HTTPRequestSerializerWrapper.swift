import Foundation
import HTTPTypes

/// A serializer that writes bodies its own way but takes headers, request options and query
/// encoding from an ``HTTPRequestSerializer`` (AFNetworking's JSON and property-list serializers
/// subclassed `AFHTTPRequestSerializer`; in Swift they hold one as ``base``).
@dynamicMemberLookup
public protocol HTTPRequestSerializerWrapper: RequestSerializer {
    /// The serializer whose headers, options and query encoding this one uses.
    var base: HTTPRequestSerializer { get set }
}

extension HTTPRequestSerializerWrapper {
    /// A property of the ``base`` serializer, set or read on this one directly.
    public subscript<Value>(dynamicMember keyPath: WritableKeyPath<HTTPRequestSerializer, Value>) -> Value {
        get { self.base[keyPath: keyPath] }
        set { self.base[keyPath: keyPath] = newValue }
    }

    /// The start every body-writing serializer shares. A method that encodes its parameters in
    /// the URI is serialized wholly by ``base`` and no parameters are left for the body; any other
    /// gets the base's headers and options, and its parameters, if any, are left for the body.
    func preparingBody(
        of request: Request,
        parameters: (any Sendable)?
    ) throws(CourierError) -> (request: Request, bodyParameters: (any Sendable)?) {
        if self.base.encodesParametersInURI(request.method) {
            return (try self.base.request(bySerializing: request, parameters: parameters), nil)
        }
        return (self.base.applyingDefaults(to: request), parameters)
    }

    /// See ``HTTPRequestSerializer/value(forHTTPHeaderField:)``.
    public func value(forHTTPHeaderField name: String) -> String? { self.base.value(forHTTPHeaderField: name) }

    /// See ``HTTPRequestSerializer/setValue(_:forHTTPHeaderField:)``.
    public mutating func setValue(_ value: String?, forHTTPHeaderField name: String) {
        self.base.setValue(value, forHTTPHeaderField: name)
    }

    /// See ``HTTPRequestSerializer/setAuthorizationHeaderField(username:password:)``.
    public mutating func setAuthorizationHeaderField(username: String, password: String) {
        self.base.setAuthorizationHeaderField(username: username, password: password)
    }

    /// See ``HTTPRequestSerializer/clearAuthorizationHeader()``.
    public mutating func clearAuthorizationHeader() { self.base.clearAuthorizationHeader() }

    /// Makes a request for `method` and `urlString` with the base serializer's options and headers
    /// and `parameters` encoded as ``request(bySerializing:parameters:)`` describes.
    ///
    /// - Throws: ``CourierError/Code/invalidURL`` when `urlString` is not an absolute URL with a
    ///   host; ``CourierError/Code/parameterEncodingFailed`` when a parameter cannot be encoded.
    public func request(method: HTTPRequest.Method, urlString: String, parameters: (any Sendable)?) throws(CourierError) -> Request {
        let url = try HTTPRequestSerializer.url(from: urlString)
        return try self.request(bySerializing: Request(method: method, url: url), parameters: parameters)
    }
}
