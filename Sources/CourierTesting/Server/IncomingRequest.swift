import Foundation
import NIOFoundationCompat
import HTTPTypes
import NIOCore
import NIOHTTP1

/// A whole request as the connection handler assembled it, with what routes need to know about
/// the connection it came on.
struct IncomingRequest {
    var head: HTTPRequestHead
    var body: ByteBuffer
    /// The trailer fields that ended the body (a chunked body's trailer section, HTTP/2's
    /// trailing HEADERS), if any.
    var trailers: HTTPHeaders?
    /// `http` or `https`.
    var scheme: String
    /// The peer's IP address, for httpbin's `origin`.
    var origin: String
    /// The host and port the server listens on, used when the request has no `Host`.
    var defaultAuthority: String
    /// How many requests came before this one on its HTTP/1.1 connection (0 for the first; always
    /// 0 on HTTP/2, where each stream is served on its own).
    var earlierRequestsOnConnection = 0

    /// The path without the query, percent-encoding kept.
    var path: Substring {
        let uri = self.head.uri[...]
        return uri.firstIndex(of: "?").map { uri[..<$0] } ?? uri
    }

    /// The query string without `?` (empty when there is none).
    var query: Substring {
        let uri = self.head.uri[...]
        return uri.firstIndex(of: "?").map { uri[uri.index(after: $0)...] } ?? ""
    }

    /// The query's decoded pairs.
    var queryItems: [(name: String, value: String)] { FormURLEncoding.parse(self.query) }

    /// The first value of query parameter `name`.
    func queryValue(_ name: String) -> String? {
        self.queryItems.first { $0.name == name }?.value
    }

    /// The first value of header `name`.
    func header(_ name: String) -> String? { self.head.headers.first(name: name) }

    /// `Host` or the listening address.
    var authority: String { self.header("Host") ?? self.defaultAuthority }

    /// The URL the client asked for, as httpbin reports it.
    var url: String { "\(self.scheme)://\(self.authority)\(self.head.uri)" }

    /// The request as custom routes and the request log see it.
    var publicRequest: TestServer.Request {
        var request = TestServer.Request(
            method: HTTPRequest.Method(self.head.method.rawValue) ?? .get,
            target: self.head.uri,
            headerFields: Self.fields(self.head.headers),
            body: Data(buffer: self.body),
            httpVersion: Self.name(of: self.head.version)
        )
        request.trailerFields = Self.fields(self.trailers ?? [:])
        return request
    }

    /// NIO's fields as swift-http-types' (a name HTTP does not allow is left out).
    private static func fields(_ headers: HTTPHeaders) -> HTTPFields {
        var fields = HTTPFields()
        for (name, value) in headers {
            if let fieldName = HTTPField.Name(name) { fields.append(HTTPField(name: fieldName, value: value)) }
        }
        return fields
    }

    /// `HTTP/1.1`, `HTTP/1.0`, or `HTTP/2` (HTTP/2 has no minor version).
    static func name(of version: HTTPVersion) -> String {
        version.major >= 2 ? "HTTP/\(version.major)" : "HTTP/\(version.major).\(version.minor)"
    }
}
