import Foundation
import HTTPTypes

/// A serializer that writes bodies its own way but takes headers, request options and query
/// encoding from an ``HTTPRequestSerializer`` (AFNetworking's JSON and property-list serializers
/// subclassed `AFHTTPRequestSerializer`; in Swift they hold one as ``base``).
public protocol HTTPRequestSerializerWrapper: RequestSerializer {
    /// The serializer whose headers, options and query encoding this one uses.
    var base: HTTPRequestSerializer { get set }
}

extension HTTPRequestSerializerWrapper {
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
