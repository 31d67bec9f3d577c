import Foundation
import HTTPTypes

/// Encodes an `Encodable` value with a ``URLEncodedFormEncoder`` into a request's query or its body
/// (Alamofire's `URLEncodedFormParameterEncoder`).
///
/// ```swift
/// struct Page: Encodable, Sendable { var page: Int; var q: String }
/// let request = Request(method: .get, url: URL(string: "https://example.com/search?lang=en#top")!)
/// let encoded = try URLEncodedFormParameterEncoder.default.encode(Page(page: 2, q: "a b"), into: request)
/// // https://example.com/search?lang=en&page=2&q=a%20b#top
/// ```
public struct URLEncodedFormParameterEncoder: ParameterEncoder {
    /// Where the encoded parameters go.
    public struct Destination: Hashable, Sendable {
        fileprivate enum Base: Hashable, Sendable { case methodDependent, queryString, httpBody }
        fileprivate let base: Base
        /// The query for GET, HEAD and DELETE, else the body (the default).
        public static let methodDependent = Destination(base: .methodDependent)
        /// Always the query.
        public static let queryString = Destination(base: .queryString)
        /// Always the body.
        public static let httpBody = Destination(base: .httpBody)
    }

    /// The encoder used.
    public var encoder: URLEncodedFormEncoder
    /// Where the parameters go.
    public var destination: Destination

    /// An encoder with ``URLEncodedFormEncoder``'s defaults and a method-dependent destination.
    public static var `default`: URLEncodedFormParameterEncoder { URLEncodedFormParameterEncoder() }

    /// Uses `encoder` and puts the parameters at `destination`.
    public init(encoder: URLEncodedFormEncoder = URLEncodedFormEncoder(), destination: Destination = .methodDependent) {
        self.encoder = encoder
        self.destination = destination
    }

    /// Appends the form string to the URL's query (before any fragment), or makes it the body with
    /// `Content-Type: application/x-www-form-urlencoded; charset=utf-8` unless the request has one.
    public func encode<Parameters: Encodable & Sendable>(_ parameters: Parameters?, into request: Request) throws(CourierError) -> Request {
        guard let parameters else { return request }
        var request = request
        let form: String
        do {
            form = try self.encoder.encode(parameters)
        } catch {
            throw error.adding(request: request)
        }
        if self.usesQuery(for: request.method) {
            if !form.isEmpty {
                request.url = try HTTPRequestSerializer.url(request.url, appendingQuery: form)
            }
        } else {
            if !request.headerFields.contains(.contentType) {
                request.headerFields[.contentType] = "application/x-www-form-urlencoded; charset=utf-8"
            }
            request.body = .data(Data(form.utf8))
        }
        return request
    }

    private func usesQuery(for method: HTTPRequest.Method) -> Bool {
        switch self.destination.base {
        case .queryString: true
        case .httpBody: false
        case .methodDependent: method == .get || method == .head || method == .delete
        }
    }
}
