import Foundation
import HTTPTypes

/// The one error type Courier throws.
///
/// A `CourierError` says what went wrong (its ``code``), where (``message`` names the request or
/// file), and keeps what was there when it happened: the ``request``, and where the server had
/// answered, the ``response`` and the ``data`` received so far. A failure that wraps another keeps it
/// in ``underlyingError``.
///
/// Compare errors by code: `error.code == .timedOut`. `==` between two errors looks at the code
/// only, and new codes can be added without breaking anyone's `switch`.
///
/// ```swift
/// do {
///     _ = try await manager.get("status/404")
/// } catch let error as CourierError where error.code == .unacceptableStatusCode {
///     print(error.response?.status.code ?? 0, error.data?.count ?? 0)
/// }
/// ```
public struct CourierError: Error, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The kind of failure. Codes are open: match on the static members, expect new ones.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Base: String, Hashable, Sendable {
            case invalidURL
            case missingBaseURL
            case unsupportedScheme
            case parameterEncodingFailed
            case invalidRequest
            case bodyReadFailed
            case connectionFailed
            case connectionClosed
            case timedOut
            case cancelled
            case tlsFailure
            case serverTrustEvaluationFailed
            case tooManyRedirects
            case responseTooLarge
            case invalidResponse
            case sessionInvalidated
            case unacceptableStatusCode
            case unacceptableContentType
            case responseValidationFailed
            case responseSerializationFailed
            case fileSystemFailure
            case requestAdaptationFailed
            case requestRetryFailed
            case missingCredential
            case excessiveRefresh
            case authenticationFailed
            case resourceUnavailable
            case unsupportedOption
            case cellularAccessDenied
            case proxyRefused
            case proxyAuthenticationRequired
            case invalidProxyConfiguration
            case internalInconsistency
            case messageBufferFull
        }

        fileprivate let base: Base

        fileprivate init(_ base: Base) { self.base = base }

        /// A URL string that does not parse, a URL without a host, or one whose host decodes to
        /// what no host holds (`https://a%0D%0Ab/`: a line break, a space, a delimiter), from the
        /// caller or from a redirect's `Location`.
        public static let invalidURL = Code(.invalidURL)
        /// A relative URL string given to a manager that has no base URL.
        public static let missingBaseURL = Code(.missingBaseURL)
        /// A URL whose scheme is neither `http` nor `https` (nor one the engine serves).
        public static let unsupportedScheme = Code(.unsupportedScheme)
        /// Parameters that the request serializer cannot encode.
        public static let parameterEncodingFailed = Code(.parameterEncodingFailed)
        /// A request that cannot be sent as built (bad header, body on a method that forbids one, a
        /// body trailer field HTTP forbids in a trailer (``RequestBody/trailers``)…).
        public static let invalidRequest = Code(.invalidRequest)
        /// The request body could not be read (a missing file, a failing stream).
        public static let bodyReadFailed = Code(.bodyReadFailed)
        /// No connection could be made: refused, unreachable, name not resolved.
        public static let connectionFailed = Code(.connectionFailed)
        /// The server closed the connection before the response was complete.
        public static let connectionClosed = Code(.connectionClosed)
        /// A connect, idle or whole-transfer deadline passed.
        public static let timedOut = Code(.timedOut)
        /// The task was cancelled.
        public static let cancelled = Code(.cancelled)
        /// The TLS handshake failed (bad certificate, no common protocol…).
        public static let tlsFailure = Code(.tlsFailure)
        /// The server's certificate did not satisfy the session's security policy.
        public static let serverTrustEvaluationFailed = Code(.serverTrustEvaluationFailed)
        /// More redirects than the configuration allows, or a redirect cycle.
        public static let tooManyRedirects = Code(.tooManyRedirects)
        /// The response body exceeded the configured maximum size
        /// (``SessionConfiguration/maximumResponseBodySize``), or inflated past the decompression
        /// ratio (``NIOEngine/Decompression``), or a WebSocket message exceeded
        /// ``WebSocketConfiguration/maximumMessageSize``.
        public static let responseTooLarge = Code(.responseTooLarge)
        /// The server sent something that is not a valid HTTP response.
        public static let invalidResponse = Code(.invalidResponse)
        /// The session manager was invalidated before the task could run.
        public static let sessionInvalidated = Code(.sessionInvalidated)
        /// The status code is not one the response serializer accepts.
        public static let unacceptableStatusCode = Code(.unacceptableStatusCode)
        /// The Content-Type is not one the response serializer accepts.
        public static let unacceptableContentType = Code(.unacceptableContentType)
        /// A check of your own refused the response (``ResponseSerializer/validating(_:)``,
        /// Alamofire's custom `validate` closure); ``CourierError/underlyingError`` is what it threw.
        public static let responseValidationFailed = Code(.responseValidationFailed)
        /// The body could not be turned into the serializer's output (invalid JSON, XML…).
        public static let responseSerializationFailed = Code(.responseSerializationFailed)
        /// The codes a response serializer fails with: the two validations, a check of your own and
        /// the decoding.
        static let serializationCodes: Set<Code> = [
            .unacceptableStatusCode, .unacceptableContentType, .responseValidationFailed, .responseSerializationFailed,
        ]
        /// Reading or writing a file failed (full disk, missing folder, permissions).
        public static let fileSystemFailure = Code(.fileSystemFailure)
        /// A request adapter (``RequestAdapter``) failed the request before it was sent.
        public static let requestAdaptationFailed = Code(.requestAdaptationFailed)
        /// A request retrier (``RequestRetrier``) failed while deciding, or a credential refresh
        /// failed with an error that was not a ``CourierError``.
        public static let requestRetryFailed = Code(.requestRetryFailed)
        /// An ``AuthenticationInterceptor`` had no credential to apply.
        public static let missingCredential = Code(.missingCredential)
        /// An ``AuthenticationInterceptor`` refreshed its credential more often than its
        /// ``AuthenticationInterceptor/RefreshWindow`` allows.
        public static let excessiveRefresh = Code(.excessiveRefresh)
        /// The server went on challenging every answer the session gave to its HTTP
        /// authentication challenge (a Digest nonce stale every time): the task ends after a
        /// bounded number of answers, and the message names the challenge.
        public static let authenticationFailed = Code(.authenticationFailed)
        /// The cache policy forbids loading and the cache holds no usable response
        /// (``RequestOptions/CachePolicy/returnCacheDataDontLoad``; URLSession's
        /// `NSURLErrorResourceUnavailable`).
        public static let resourceUnavailable = Code(.resourceUnavailable)
        /// A request or session option that cannot be honoured here: Courier refuses it rather
        /// than ignore it (``RequestOptions/httpShouldUsePipelining``, a store that writes to disk
        /// in an ephemeral session…).
        public static let unsupportedOption = Code(.unsupportedOption)
        /// The request may not use a cellular interface (``RequestOptions/allowsCellularAccess``,
        /// ``SessionConfiguration/allowsCellularAccess``) and the network is reachable only
        /// through one.
        public static let cellularAccessDenied = Code(.cellularAccessDenied)
        /// The proxy answered but would not open the way to the server: an HTTP proxy's answer to
        /// `CONNECT` other than 2xx, 401 and 407 (403, 502…; ``CourierError/response`` holds it), or a
        /// SOCKS5 proxy's error reply. The message names the proxy, the target and the answer.
        public static let proxyRefused = Code(.proxyRefused)
        /// The proxy wants credentials it was not given, or refused the ones it was given: an HTTP
        /// proxy's 407 (``CourierError/response`` holds its `Proxy-Authenticate` fields; tinyproxy answers
        /// `CONNECT` with 401 and `WWW-Authenticate`, taken the same way), or a SOCKS5
        /// proxy that accepts none of the authentication methods offered.
        public static let proxyAuthenticationRequired = Code(.proxyAuthenticationRequired)
        /// A proxy setting that cannot be used: a proxy URL that does not parse, has no host, a bad
        /// port, a scheme Courier does not speak (`socks4://`, `socks4a://`…) or credentials
        /// longer than SOCKS5 carries on a `socks5://` URL; or a malformed `no_proxy` entry. The
        /// message names the setting (the environment variable, for
        /// ``ProxyConfiguration/fromEnvironment(_:)``).
        public static let invalidProxyConfiguration = Code(.invalidProxyConfiguration)
        /// Courier reached a state it should never reach; please report it.
        public static let internalInconsistency = Code(.internalInconsistency)
        /// A WebSocket's consumer left more received messages unread than
        /// ``WebSocketConfiguration/maximumBufferedBytes`` allows; the connection was closed with 1008.
        public static let messageBufferFull = Code(.messageBufferFull)

        public var description: String { self.base.rawValue }
    }

    /// The error's fields, behind one reference: a `CourierError` (and every `CourierError?` in a
    /// task's state, outcome, metrics and response) is one word wide, copied with a retain instead
    /// of several hundred bytes. Copy-on-write: a setter copies the fields when they are shared.
    ///
    /// `@unchecked Sendable`: the fields are only changed through a uniquely referenced instance
    /// (`uniqueStorage()`), as a copy-on-write array's buffer is, so no instance
    /// another thread can reach is ever changed.
    private final class Storage: @unchecked Sendable {
        var code: Code
        var message: String
        var request: Request?
        var response: HTTPResponse?
        var data: Data?
        var resumeData: ResumeData?
        var underlyingError: (any Error)?
        var metrics: TaskMetrics?
        var file: String
        var line: UInt

        init(
            code: Code, message: String, request: Request?, response: HTTPResponse?, data: Data?,
            resumeData: ResumeData?, underlyingError: (any Error)?, file: String, line: UInt
        ) {
            self.code = code
            self.message = message
            self.request = request
            self.response = response
            self.data = data
            self.resumeData = resumeData
            self.underlyingError = underlyingError
            self.file = file
            self.line = line
        }

        func copy() -> Storage {
            let copy = Storage(
                code: self.code, message: self.message, request: self.request, response: self.response, data: self.data,
                resumeData: self.resumeData, underlyingError: self.underlyingError, file: self.file, line: self.line)
            copy.metrics = self.metrics
            return copy
        }
    }

    private var storage: Storage

    private mutating func uniqueStorage() -> Storage {
        if !isKnownUniquelyReferenced(&self.storage) { self.storage = self.storage.copy() }
        return self.storage
    }

    /// What went wrong.
    public var code: Code {
        get { self.storage.code }
        set { self.uniqueStorage().code = newValue }
    }
    /// A sentence saying what went wrong and where, for people.
    public var message: String {
        get { self.storage.message }
        set { self.uniqueStorage().message = newValue }
    }
    /// The request that failed, when there was one.
    public var request: Request? {
        get { self.storage.request }
        set { self.uniqueStorage().request = newValue }
    }
    /// The response head, when the server had answered.
    public var response: HTTPResponse? {
        get { self.storage.response }
        set { self.uniqueStorage().response = newValue }
    }
    /// The response body received, when there was one.
    public var data: Data? {
        get { self.storage.data }
        set { self.uniqueStorage().data = newValue }
    }
    /// For a download that failed or was cancelled after it had received part of its body from a
    /// server that allows resuming (a `GET` of the whole resource whose body was not
    /// content-coded, as ``ResumeData`` describes): what ``SessionManager/downloadTask(withResumeData:progress:destination:completionHandler:)-(Data,_,_,_)``
    /// needs to continue. A continuation whose connection could not be made, or failed or timed
    /// out before it changed the partial file, or whose 206 was not the rest of the partial file's
    /// version (``CourierError/Code/invalidResponse``), carries the resume data it began with; one that
    /// could not write the partial file (a full disk) carries resume data for the bytes it kept
    /// and wrote. The partial file it names is yours to resume from or discard.
    public var resumeData: ResumeData? {
        get { self.storage.resumeData }
        set { self.uniqueStorage().resumeData = newValue }
    }
    /// The error this one wraps: a system, NIO or parser error, or a first ``CourierError``.
    public var underlyingError: (any Error)? {
        get { self.storage.underlyingError }
        set { self.uniqueStorage().underlyingError = newValue }
    }
    /// The failed task's timings and sizes (``TaskMetrics``), on the error an `async` call
    /// throws (`data(for:)`, `response(for:serializer:)`, `download(_:)`…) when the task recorded
    /// them: as Alamofire's failed responses keep their metrics. (A completion handler's error has
    /// none: the task's ``SessionTask/metrics`` are there.)
    public var metrics: TaskMetrics? {
        get { self.storage.metrics }
        set { self.uniqueStorage().metrics = newValue }
    }
    /// Where in Courier the error was made.
    public var file: String {
        get { self.storage.file }
        set { self.uniqueStorage().file = newValue }
    }
    /// Where in Courier the error was made.
    public var line: UInt {
        get { self.storage.line }
        set { self.uniqueStorage().line = newValue }
    }

    /// Makes an error; the factories below are usually clearer.
    public init(
        _ code: Code,
        _ message: String,
        request: Request? = nil,
        response: HTTPResponse? = nil,
        data: Data? = nil,
        underlyingError: (any Error)? = nil,
        file: String = #fileID,
        line: UInt = #line
    ) {
        self.storage = Storage(
            code: code, message: message, request: request, response: response, data: data, resumeData: nil,
            underlyingError: underlyingError, file: file, line: line)
    }

    /// A short, low-cardinality description (the code only), safe for metrics labels.
    public var shortDescription: String { self.code.description }

    public var description: String {
        var text = "CourierError.\(self.code): \(self.message)"
        if let underlying = self.underlyingError {
            text += " (underlying: \(underlying))"
        }
        return text
    }

    public var debugDescription: String {
        var text = self.description
        if let response = self.response { text += " [status \(response.status.code)]" }
        if let data = self.data { text += " [\(data.count) bytes of body]" }
        return text + " at \(self.file):\(self.line)"
    }

    /// The status code of the response, if the server answered.
    public var statusCode: Int? { self.response?.status.code }

    /// This error with the request, response, data and task metrics filled in where they were
    /// missing.
    public func adding(
        request: Request? = nil, response: HTTPResponse? = nil, data: Data? = nil, metrics: TaskMetrics? = nil
    ) -> CourierError {
        // Nothing to fill in: the same error, without copying its fields.
        let fills = (self.request == nil && request != nil) || (self.response == nil && response != nil)
            || (self.data == nil && data != nil) || (self.metrics == nil && metrics != nil)
        guard fills else { return self }
        var copy = self
        if copy.request == nil { copy.request = request }
        if copy.response == nil { copy.response = response }
        if copy.data == nil { copy.data = data }
        if copy.metrics == nil { copy.metrics = metrics }
        return copy
    }
}

extension CourierError: Equatable {
    /// Errors are equal when their codes are equal.
    public static func == (lhs: CourierError, rhs: CourierError) -> Bool { lhs.code == rhs.code }
}

extension CourierError {
    /// A value of each code, for `#expect(throws:)` and `catch` patterns.
    public static let timedOut = CourierError(.timedOut, "timed out")
    /// See ``Code/cancelled``.
    public static let cancelled = CourierError(.cancelled, "cancelled")
    /// See ``Code/sessionInvalidated``.
    public static let sessionInvalidated = CourierError(.sessionInvalidated, "the session manager was invalidated")

    /// The error a task the caller cancelled ends with: "`GET http://host/path`: cancelled".
    static func cancelled(_ request: Request) -> CourierError {
        CourierError(.cancelled, "\(request.summary): cancelled", request: request)
    }
}

extension Error {
    /// This error as a ``CourierError``: itself when it is one, else wrapped with the given code.
    func asCourierError(
        _ code: CourierError.Code,
        _ message: @autoclosure () -> String,
        request: Request? = nil,
        file: String = #fileID,
        line: UInt = #line
    ) -> CourierError {
        if let error = self as? CourierError { return error.adding(request: request) }
        return CourierError(code, message(), request: request, underlyingError: self, file: file, line: line)
    }
}
