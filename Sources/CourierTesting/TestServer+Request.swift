import Foundation
import HTTPTypes

extension TestServer {
    /// A request as the server received it: what custom routes get, and what
    /// ``TestServer/receivedRequests`` records.
    public struct Request: Sendable {
        /// The method.
        public var method: HTTPRequest.Method
        /// The request target as sent: the path with its query, for example `/get?a=1`.
        public var target: String
        /// The header fields, in the order received.
        public var headerFields: HTTPFields
        /// The body bytes (empty when there was none).
        public var body: Data
        /// The trailer fields that ended the body, in the order received: a chunked body's trailer
        /// section (HTTP/1.1) or the HEADERS after the last DATA (HTTP/2). Empty when there were
        /// none.
        public var trailerFields: HTTPFields = [:]
        /// The HTTP version the request came over: `"HTTP/1.1"`, `"HTTP/1.0"` or `"HTTP/2"`.
        /// Proves which protocol a client negotiated.
        public var httpVersion: String

        /// Makes a request value (the server makes these; tests rarely need to).
        /// - Parameters:
        ///   - method: The method.
        ///   - target: The request target, the path with its query.
        ///   - headerFields: The header fields.
        ///   - body: The body bytes.
        ///   - httpVersion: The HTTP version it came over (`"HTTP/1.1"` by default).
        public init(method: HTTPRequest.Method, target: String, headerFields: HTTPFields = [:], body: Data = Data(), httpVersion: String = "HTTP/1.1") {
            self.method = method
            self.target = target
            self.headerFields = headerFields
            self.body = body
            self.httpVersion = httpVersion
        }

        /// The path, without the query.
        public var path: String {
            self.target.firstIndex(of: "?").map { String(self.target[..<$0]) } ?? self.target
        }

        /// The query string after `?`, or nil.
        public var query: String? {
            self.target.firstIndex(of: "?").map { String(self.target[self.target.index(after: $0)...]) }
        }

        /// The query's name-value pairs, percent-decoded, in order (`+` reads as a space).
        public var queryItems: [(name: String, value: String)] {
            FormURLEncoding.parse(self.query ?? "")
        }

        /// The value of the first header field named `name` (any case), or nil.
        public func value(forHTTPHeaderField name: String) -> String? {
            HTTPField.Name(name).flatMap { self.headerFields[$0] }
        }
    }

    /// What a custom route answers.
    public struct Response: Sendable {
        /// The status.
        public var status: HTTPResponse.Status
        /// The header fields. `Content-Length` is set by the server.
        public var headerFields: HTTPFields
        /// The body bytes.
        public var body: Data
        /// When set, the head (with `Content-Length`) is sent at once and the body only once this
        /// returns: a test decides when a client has the head alone, instead of betting on time.
        /// It is cancelled when the connection (the stream, on HTTP/2) closes first.
        public var bodyHeldUntil: (@Sendable () async -> Void)?
        /// With ``bodyHeldUntil``, how many of the body's first bytes go out with the head: a
        /// client has part of the body, and the test decides when the rest comes (0 by default).
        public var bytesSentBeforeHold: Int

        /// Makes a response.
        /// - Parameters:
        ///   - status: The status (200 by default).
        ///   - headerFields: Header fields to send.
        ///   - body: The body bytes (none by default).
        ///   - bodyHeldUntil: Holds the body back until it returns (the head goes at once).
        ///   - bytesSentBeforeHold: With `bodyHeldUntil`, the body's first bytes sent with the head.
        public init(
            status: HTTPResponse.Status = .ok, headerFields: HTTPFields = [:], body: Data = Data(),
            bodyHeldUntil: (@Sendable () async -> Void)? = nil, bytesSentBeforeHold: Int = 0
        ) {
            self.status = status
            self.headerFields = headerFields
            self.body = body
            self.bodyHeldUntil = bodyHeldUntil
            self.bytesSentBeforeHold = bytesSentBeforeHold
        }

        /// A `text/plain; charset=utf-8` response.
        public static func text(_ text: String, status: HTTPResponse.Status = .ok) -> Response {
            Response(status: status, headerFields: [.contentType: "text/plain; charset=utf-8"], body: Data(text.utf8))
        }

        /// An `application/json` response whose body is `json` as given.
        public static func json(_ json: String, status: HTTPResponse.Status = .ok) -> Response {
            Response(status: status, headerFields: [.contentType: "application/json"], body: Data(json.utf8))
        }
    }

    /// A custom route's handler. It runs as a task on the Swift concurrency pool.
    public typealias Handler = @Sendable (Request) async throws -> Response
}
