import Foundation
import HTTPTypes

/// Builds requests from a method, a URL string and parameters (AFNetworking's
/// `AFURLRequestSerialization`).
///
/// ``HTTPSessionManager`` resolves the URL string against its base URL and then asks its
/// serializer for the request. Serializers are values: configure one, then hand it to a manager.
public protocol RequestSerializer: Sendable {
    /// Makes a request for `method` and the absolute URL string `urlString`, with `parameters`
    /// encoded as the serializer does (in the query for GET, HEAD and DELETE by default, else the
    /// body), and the serializer's headers and request options applied.
    func request(method: HTTPRequest.Method, urlString: String, parameters: (any Sendable)?) throws(CourierError) -> Request

    /// Returns `request` with the serializer's headers applied and `parameters` encoded into it
    /// (AFNetworking's `requestBySerializingRequest:withParameters:error:`). Headers the request
    /// already has win over the serializer's.
    func request(bySerializing request: Request, parameters: (any Sendable)?) throws(CourierError) -> Request

    /// Makes a `multipart/form-data` request whose form fields are `parameters`, followed by the
    /// parts `block` appends (AFNetworking's
    /// `multipartFormRequestWithMethod:URLString:parameters:constructingBodyWithBlock:error:`).
    /// GET and HEAD are refused with ``CourierError/Code/invalidRequest``.
    ///
    /// A default implementation serves any serializer; see
    /// ``HTTPRequestSerializer/multipartFormRequest(method:urlString:parameters:constructingBodyWith:)``.
    func multipartFormRequest(
        method: HTTPRequest.Method,
        urlString: String,
        parameters: (any Sendable)?,
        constructingBodyWith block: MultipartFormConstruction
    ) throws(CourierError) -> Request

    /// Makes a `multipart/form-data` request as
    /// ``multipartFormRequest(method:urlString:parameters:constructingBodyWith:)`` does, its parts
    /// separated by `boundary` (a fresh random one when nil). A boundary RFC 2046 does not allow
    /// is refused with ``CourierError/Code/invalidRequest``.
    ///
    /// A default implementation serves any serializer; see
    /// ``HTTPRequestSerializer/multipartFormRequest(method:urlString:parameters:boundary:constructingBodyWith:)``.
    func multipartFormRequest(
        method: HTTPRequest.Method,
        urlString: String,
        parameters: (any Sendable)?,
        boundary: String?,
        constructingBodyWith block: MultipartFormConstruction
    ) throws(CourierError) -> Request
}

extension RequestSerializer {
    /// ``request(method:urlString:parameters:)`` for a ``Parameters`` dictionary, so that a mixed
    /// literal such as `["q": "swift", "page": 2]` type-checks as `[String: any Sendable]`.
    public func request(method: HTTPRequest.Method, urlString: String, parameters: Parameters?) throws(CourierError) -> Request {
        let erased: (any Sendable)? = parameters.map { $0 as any Sendable }
        return try self.request(method: method, urlString: urlString, parameters: erased)
    }

    /// ``request(bySerializing:parameters:)`` for a ``Parameters`` dictionary, so that a mixed
    /// literal type-checks as `[String: any Sendable]`.
    public func request(bySerializing request: Request, parameters: Parameters?) throws(CourierError) -> Request {
        let erased: (any Sendable)? = parameters.map { $0 as any Sendable }
        return try self.request(bySerializing: request, parameters: erased)
    }
}

/// Courier's own serializers: they build a request from a URL already parsed and checked as
/// ``HTTPRequestSerializer/url(from:)`` does, so that ``HTTPSessionManager`` parses each URL
/// string it resolves once, not once per request (Foundation's parse is a few microseconds of
/// every request). A serializer of the caller's own gets the URL string, as always.
protocol ParsedURLRequestSerializer: RequestSerializer {
    /// ``RequestSerializer/request(method:urlString:parameters:)`` for the URL that
    /// ``HTTPRequestSerializer/url(from:)`` made of that string.
    func request(method: HTTPRequest.Method, parsedURL url: URL, parameters: (any Sendable)?) throws(CourierError) -> Request
}

extension ParsedURLRequestSerializer {
    /// What each of Courier's serializers does after parsing the string: serialize a request for
    /// the URL.
    func request(method: HTTPRequest.Method, parsedURL url: URL, parameters: (any Sendable)?) throws(CourierError) -> Request {
        try self.request(bySerializing: Request(method: method, url: url), parameters: parameters)
    }
}

extension HTTPRequestSerializer: ParsedURLRequestSerializer {}
extension JSONRequestSerializer: ParsedURLRequestSerializer {}
extension PropertyListRequestSerializer: ParsedURLRequestSerializer {}
