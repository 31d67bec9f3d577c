import Courier
import Foundation
import HTTPTypes
import OpenAPIRuntime

/// A swift-openapi-runtime `ClientTransport` that sends every operation of a generated client
/// through a Courier `SessionManager`.
///
/// ```swift
/// import CourierOpenAPI
///
/// let client = Client(serverURL: try Servers.Server1.url(), transport: CourierTransport(manager: manager))
/// let pet = try await client.getPet(path: .init(id: 7)).ok.body.json
/// ```
///
/// Each call becomes one Courier task, so everything the manager does applies: its interceptors
/// (adapters, retriers, `AuthenticationInterceptor`), `RetryPolicy` and
/// `RetryBudget`, security policy and pinning, cookies, cache, proxies, event monitors,
/// metrics, logger and tracer. The call's `operationID` is the request's
/// `Request.operationName`: it names the task's span, goes into its log metadata
/// (`courier-operation`) and stays on its `TaskMetrics.operationName`.
///
/// Bodies stream both ways with back-pressure, so a transfer of any size runs in constant memory:
/// - A request `HTTPBody` of known length goes out with that `Content-Length`, one of unknown
///   length chunked. A body that can be iterated more than once (`iterationBehavior ==
///   .multiple`) is sent as a `RequestBody.replayableStream(length:trailers:_:)`, which a
///   307/308 redirect or a retry can send again; one that cannot is sent once. A small in-memory
///   body (known length up to ``Configuration/collectedBodyLimit``, iterable more than once) is
///   collected and sent as bytes.
/// - The response body comes from `SessionManager.stream(_:downloadProgress:gatheringBodiesUpTo:)`.
///   When the request had no body or one sent as bytes, a response body whose `Content-Length` is
///   at most ``Configuration/gatheredBodyLimit`` (64 KiB) is read whole before the call returns
///   and handed over from memory. Any other returns at the response head (a request body that
///   streams may be written in answer to the response), and the connection stops reading while
///   more than 128 KiB wait unread. The `HTTPBody` has the `Content-Length` as its known length
///   (unknown when the response was chunked or was decompressed), and can be iterated once.
///   Dropping a streamed one unread cancels the task. A `HEAD`, `204` or `304` response has no
///   body (`nil`).
///
/// Errors: whatever fails in Courier is thrown as a `CourierError`, which the runtime
/// wraps in its `ClientError` as the `underlyingError`. A request body stream that throws fails the
/// call with `.bodyReadFailed` whose
/// `underlyingError` is the stream's error. Cancelling the calling task
/// cancels the Courier task (`.cancelled`), before or after the head.
public struct CourierTransport: ClientTransport {
    /// What the transport adds to each operation's request.
    public struct Configuration: Sendable {
        /// Options every operation's request carries: a `nil` option keeps the session's setting.
        public var options: RequestOptions
        /// Options for single operations, by `operationID`, over ``options``: for example a longer
        /// `RequestOptions.timeoutInterval` for one upload.
        public var operationOptions: [String: RequestOptions]
        /// The largest request body, in bytes, that is collected into memory and sent as bytes
        /// rather than streamed, when its length is known and it can be iterated more than once
        /// (the bodies the generated code makes from JSON, forms and `Data`). 64 KiB by default;
        /// 0 streams every body.
        public var collectedBodyLimit: Int
        /// The largest response body, in bytes by its `Content-Length`, that is read whole before
        /// the call returns and then handed to the runtime from memory, rather than streamed from
        /// the response head (the small JSON answers of most operations: cheaper, see
        /// `SessionManager.stream(_:downloadProgress:gatheringBodiesUpTo:)`). Only for a request
        /// with no body or one sent as bytes (see ``collectedBodyLimit``): a request body that
        /// streams may be written in answer to the response, so its call returns at the head.
        /// 64 KiB by default; 0 streams every body.
        public var gatheredBodyLimit: Int

        /// No options, so every setting is the session's.
        public init() {
            self.options = RequestOptions()
            self.operationOptions = [:]
            self.collectedBodyLimit = 64 * 1024
            self.gatheredBodyLimit = 64 * 1024
        }

        /// The options an operation's request carries: ``operationOptions`` for it over ``options``.
        /// - Parameter operationID: The operation's identifier, as the generated client names it.
        public func options(for operationID: String) -> RequestOptions {
            guard let own = self.operationOptions[operationID] else { return self.options }
            return self.options.merging(own)
        }
    }

    /// The manager every call goes through.
    public let manager: SessionManager
    /// What the transport adds to each operation's request.
    public var configuration: Configuration

    /// A transport over `manager`.
    /// - Parameters:
    ///   - manager: The session every call goes through; its owner invalidates it. By default the
    ///     process-wide `HTTPSessionManager.shared`, which is never invalidated.
    ///   - configuration: Options per transport and per operation.
    public init(manager: SessionManager = HTTPSessionManager.shared, configuration: Configuration = Configuration()) {
        self.manager = manager
        self.configuration = configuration
    }

    /// Sends one operation's request and returns at its response head.
    ///
    /// - Parameters:
    ///   - request: The request the generated client built; its path (with query), percent-encoded
    ///     as it is, is appended to `baseURL`'s path with one slash between (a `baseURL` ending in
    ///     `/` gives no `//`); `baseURL`'s own query and fragment are not sent. Its header fields go
    ///     out as they are, repeated ones repeated.
    ///   - body: The request body, streamed as described on ``CourierTransport``.
    ///   - baseURL: The server URL the client was made with.
    ///   - operationID: The operation's identifier, set as `Request.operationName`.
    /// - Returns: The response head and its body, read as it arrives (`nil` for `HEAD`, `204` and
    ///   `304`).
    /// - Throws: `CourierError`: `.invalidURL` when the URL
    ///   cannot be made, else whatever the task failed with before the response head.
    public func send(
        _ request: HTTPRequest,
        body: HTTPBody?,
        baseURL: URL,
        operationID: String
    ) async throws -> (HTTPResponse, HTTPBody?) {
        let courierRequest = try await self.courierRequest(request, body: body, baseURL: baseURL, operationID: operationID)
        // A request body that goes out as a stream may be written in answer to the response (a
        // bidirectional stream): that call returns at the head whatever the response's length,
        // so that its caller reads while it writes.
        let sentWhole = courierRequest.body.isEmpty || courierRequest.body.data != nil
        let stream = try await self.manager.stream(
            courierRequest, gatheringBodiesUpTo: sentWhole ? self.configuration.gatheredBodyLimit : 0)
        return try await Self.response(stream, method: request.method)
    }

    // MARK: Request

    /// The Courier request for a generated client's request.
    func courierRequest(_ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String) async throws -> Request {
        let url = try Self.url(request, baseURL: baseURL)
        var courierRequest = Request(
            method: request.method, url: url, headerFields: request.headerFields,
            body: try await self.requestBody(body, request: request),
            options: self.configuration.options(for: operationID))
        courierRequest.operationName = operationID
        return courierRequest
    }

    /// `baseURL` with the request's path and query appended: the server URL's own path is kept, its
    /// query and fragment are not, and neither is a fragment of the request's path.
    ///
    /// Joined as text and parsed once, because this runs for every call: taking both apart with
    /// `URLComponents` and putting them together again cost 1.3 µs a call on this machine, the
    /// join 0.6 µs. A character that a URL cannot hold is percent-encoded, as `URLComponents` did.
    static func url(_ request: HTTPRequest, baseURL: URL) throws(CourierError) -> URL {
        let path = request.path ?? ""
        let base = baseURL.absoluteString
        // The server URL up to its query or fragment; the request's path up to its fragment.
        var head = base[..<(base.utf8.firstIndex { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? base.endIndex)]
        let tail = path[..<(path.utf8.firstIndex(of: UInt8(ascii: "#")) ?? path.endIndex)]
        if head.utf8.last == UInt8(ascii: "/") && tail.utf8.first == UInt8(ascii: "/") { head.removeLast() }
        guard let url = URL(string: String(head) + tail), url.host?.isEmpty == false else {
            throw CourierError(.invalidURL, "cannot join the request path \(path) to the server URL \(base)")
        }
        return url
    }

    /// The Courier body for an `HTTPBody`: bytes for a small replayable body, else a stream.
    func requestBody(_ body: HTTPBody?, request: HTTPRequest) async throws -> RequestBody {
        guard let body else { return .empty }
        let length: RequestBody.Length
        switch body.length {
        case .known(let count): length = .known(count)
        case .unknown: length = .unknown
        }
        switch (body.iterationBehavior, body.length) {
        case (.multiple, .known(let count)) where count <= Int64(self.configuration.collectedBodyLimit):
            // Iterating a body that allows it more than once consumes nothing; an error here is the
            // body's own, as it would be mid-upload.
            let data: Data
            do {
                data = try await Data(collecting: body, upTo: Int(count))
            } catch is CancellationError {
                // The caller's task was cancelled while the body was read: the call was cancelled
                // (``CourierError/Code/cancelled``, as after the request went out), the body did not fail.
                throw CourierError(.cancelled, "\(request.method.rawValue) \(request.path ?? ""): cancelled while the request body was read")
            } catch {
                throw CourierError(
                    .bodyReadFailed, "\(request.method.rawValue) \(request.path ?? ""): the request body failed",
                    underlyingError: error)
            }
            // Fewer bytes than the body's length says: not sent short, as a streamed body of the
            // same kind is not (the engine fails it, `.bodyReadFailed`). More fail the collecting.
            guard Int64(data.count) == count else {
                throw CourierError(
                    .bodyReadFailed,
                    "\(request.method.rawValue) \(request.path ?? ""): the request body declared \(count) bytes and gave \(data.count)")
            }
            return .data(data)
        case (.multiple, _):
            return .replayableStream(length: length) { HTTPBodyChunks(body: body) }
        case (.single, _):
            return .stream(HTTPBodyChunks(body: body), length: length)
        }
    }

    // MARK: Response

    /// The head and body the runtime gets from a streamed response.
    static func response(_ stream: DataStreamResponse, method: HTTPRequest.Method) async throws -> (HTTPResponse, HTTPBody?) {
        let response = stream.response
        if method == .head || response.status.code == 204 || response.status.code == 304 {
            // No body can follow: read the (empty) end, so that the task completes and keeps its
            // connection, rather than being cancelled when the unread stream is dropped.
            try await Self.drain(stream.body)
            return (response, nil)
        }
        let length: HTTPBody.Length
        let encoding = response.headerFields[.contentEncoding]?.lowercased()
        if let count = response.expectedContentLength, encoding == nil || encoding == "identity" {
            length = .known(count)
        } else {
            // Chunked, or decompressed by the session: the body's length is not the field's.
            length = .unknown
        }
        if length == .known(0) {
            try await Self.drain(stream.body)
            return (response, HTTPBody())
        }
        return (response, HTTPBody(ResponseChunks(base: stream.body), length: length, iterationBehavior: .single))
    }

    /// Reads a body that is expected to be empty to its end.
    static func drain(_ body: ResponseBodyStream) async throws(CourierError) {
        for try await _ in body {}
    }
}
