import Instrumentation
import Foundation
import HTTPTypes
import Logging
import Tracing

/// A request as Courier sends it: a method, a URL and header fields, the body beside them, and the
/// per-request options that AFNetworking's serializers set only when asked.
///
/// `Request` is a value: build it by hand or let a ``RequestSerializer`` build it from a method, a
/// URL string and parameters. The URL keeps everything the caller gave, fragment included; what goes
/// on the wire is ``head``.
public struct Request: Sendable {
    /// The request's fields, behind one reference: a task's state, outcome, metrics and response
    /// each keep a request, and a copy is then a retain instead of 168 bytes and a retain of each
    /// field. Copy-on-write: a change copies the fields first when they are shared.
    ///
    /// `@unchecked Sendable`: the fields are only changed through a uniquely referenced instance
    /// (`uniqueStorage()`), as a copy-on-write array's buffer is, so no instance another
    /// thread can reach is ever changed.
    private final class Storage: @unchecked Sendable {
        // Not checked for exclusive access at run time (each access to a class's stored `var`
        // otherwise is, and a request's fields are read at every step of every request): the
        // fields change only through `uniqueStorage()`, in a mutation of the one `Request` that
        // holds this instance, which Swift already makes exclusive.
        @exclusivity(unchecked) var method: HTTPRequest.Method
        @exclusivity(unchecked) var url: URL
        @exclusivity(unchecked) var headerFields: HTTPFields
        @exclusivity(unchecked) var body: RequestBody
        @exclusivity(unchecked) var options: RequestOptions
        @exclusivity(unchecked) var interceptor: (any RequestInterceptor)?
        @exclusivity(unchecked) var redirector: Redirector?
        @exclusivity(unchecked) var responseCacher: ResponseCacher?
        @exclusivity(unchecked) var logger: Logger?
        @exclusivity(unchecked) var serviceContext: ServiceContext?
        @exclusivity(unchecked) var operationName: String?
        @exclusivity(unchecked) var cancelsWithCallingTask = true
        /// nil when the request has no monitor of its own (most do not): nothing to copy or check.
        @exclusivity(unchecked) var eventMonitors: [any EventMonitor]?

        init(
            method: HTTPRequest.Method, url: URL, headerFields: HTTPFields, body: RequestBody, options: RequestOptions,
            interceptor: (any RequestInterceptor)?, redirector: Redirector?, responseCacher: ResponseCacher?, logger: Logger?,
            serviceContext: ServiceContext?, operationName: String?
        ) {
            self.method = method
            self.url = url
            self.headerFields = headerFields
            self.body = body
            self.options = options
            self.interceptor = interceptor
            self.redirector = redirector
            self.responseCacher = responseCacher
            self.logger = logger
            self.serviceContext = serviceContext
            self.operationName = operationName
        }

        func copy() -> Storage {
            let copy = Storage(
                method: self.method, url: self.url, headerFields: self.headerFields, body: self.body, options: self.options,
                interceptor: self.interceptor, redirector: self.redirector, responseCacher: self.responseCacher, logger: self.logger,
                serviceContext: self.serviceContext, operationName: self.operationName)
            copy.cancelsWithCallingTask = self.cancelsWithCallingTask
            copy.eventMonitors = self.eventMonitors
            return copy
        }
    }

    private var storage: Storage

    /// Whether `other` is this request unchanged: a copy not changed since (the two share their
    /// storage). False says nothing; two requests made apart may still be equal.
    func sharesStorage(with other: Request) -> Bool { self.storage === other.storage }

    private mutating func uniqueStorage() -> Storage {
        if !isKnownUniquelyReferenced(&self.storage) { self.storage = self.storage.copy() }
        return self.storage
    }

    /// The HTTP method.
    public var method: HTTPRequest.Method {
        get { self.storage.method }
        set { self.uniqueStorage().method = newValue }
    }
    /// The absolute URL.
    public var url: URL {
        get { self.storage.url }
        set { self.uniqueStorage().url = newValue }
    }
    /// The header fields, in order; lookups ignore case.
    public var headerFields: HTTPFields {
        get { self.storage.headerFields }
        // Changed in place: a get-then-set would copy the fields' own storage on every change.
        _modify { yield &self.uniqueStorage().headerFields }
    }
    /// The body.
    public var body: RequestBody {
        get { self.storage.body }
        _modify { yield &self.uniqueStorage().body }
    }
    /// Per-request options: timeout, cache policy, cookie handling.
    public var options: RequestOptions {
        get { self.storage.options }
        _modify { yield &self.uniqueStorage().options }
    }
    /// This request's own adapters and retriers, consulted after the session's
    /// (``SessionManager/interceptor``); see ``RequestInterceptor`` for the order. `nil` by default.
    public var interceptor: (any RequestInterceptor)? {
        get { self.storage.interceptor }
        set { self.uniqueStorage().interceptor = newValue }
    }
    /// This request's own event monitors (Alamofire's `Request.eventMonitor(_:)`), told of every
    /// event of the task made for it, as the session's (``SessionManager/eventMonitors``) are,
    /// each on its own queue. Empty by default.
    ///
    /// ```swift
    /// var monitor = ClosureEventMonitor()
    /// monitor.taskDidComplete = { task, error in print(task.taskIdentifier, error as Any) }
    /// var request = Request(method: .get, url: url)
    /// request.eventMonitors.append(monitor)
    /// ```
    ///
    /// A task keeps the monitors of the request it is made with for its whole life (a request an
    /// adapter or a redirect makes does not change them). A monitor given to several requests is
    /// told of each task's events in order, but not in order across tasks.
    public var eventMonitors: [any EventMonitor] {
        get { self.storage.eventMonitors ?? [] }
        set { self.uniqueStorage().eventMonitors = newValue.isEmpty ? nil : newValue }
    }
    /// Whether the request has monitors of its own, read without copying them.
    var hasEventMonitors: Bool { self.storage.eventMonitors != nil }
    /// How this request's redirects go (``Redirector``: follow, do not follow, or change them),
    /// deciding instead of the session's ``SessionManager/Hooks/taskWillPerformHTTPRedirection``
    /// hook. `nil` (the default) leaves it to the hook, and without one follows them. The task
    /// keeps the redirector of the request it is made with for all its hops (a request a
    /// redirect or an adapter makes does not change it).
    public var redirector: Redirector? {
        get { self.storage.redirector }
        set { self.uniqueStorage().redirector = newValue }
    }
    /// Whether and how this request's response is stored in the session's cache
    /// (``ResponseCacher``: store, do not store, or change it), deciding instead of the session's
    /// ``SessionManager/Hooks/dataTaskWillCacheResponse`` hook. `nil` (the default) leaves it to
    /// the hook, and without one stores what RFC 9111 allows. As with ``redirector``, the task
    /// keeps the one of the request it is made with.
    public var responseCacher: ResponseCacher? {
        get { self.storage.responseCacher }
        set { self.uniqueStorage().responseCacher = newValue }
    }
    /// Whether cancelling the Swift task that awaits this request's `async` call cancels the
    /// request (Alamofire's `automaticallyCancelling:`). `true` (the default): the task is
    /// cancelled and the call throws ``CourierError/Code/cancelled``. `false`: the request goes
    /// on, and the call returns (or throws) what it would have without the cancellation; cancel
    /// it through its task object if you need to. Applies to ``SessionManager/response(for:serializer:uploadProgress:downloadProgress:)``
    /// and the calls built on it (the verbs, uploads, downloads) and to waiting for a stream's
    /// head (``SessionManager/stream(_:downloadProgress:gatheringBodiesUpTo:)``).
    public var cancelsWithCallingTask: Bool {
        get { self.storage.cancelsWithCallingTask }
        set { self.uniqueStorage().cancelsWithCallingTask = newValue }
    }
    /// Where Courier logs what happens to this request (AsyncHTTPClient's convention: nothing is
    /// logged above `.debug` in normal operation). `nil` (the default) uses the session's
    /// ``SessionManager/logger``, and no logger at all when that is `nil` too.
    public var logger: Logger? {
        get { self.storage.logger }
        _modify { yield &self.uniqueStorage().logger }
    }
    /// The trace context the request travels in. A session with a tracer
    /// (``SessionManager/tracer``) starts a span per task, as a child of this context when set
    /// (else of `ServiceContext.current` where the task is made), with a child span per hop, and
    /// hands each hop to the engine with this set to the hop span's context, so that an engine
    /// can hang its own spans (connection, TLS) below it.
    public var serviceContext: ServiceContext? {
        get { self.storage.serviceContext }
        _modify { yield &self.uniqueStorage().serviceContext }
    }
    /// A short, low-cardinality name for what the request does: an OpenAPI `operationId`, a
    /// route template (`GET /users/{id}`), never a URL with identifiers in it. `nil` by default.
    ///
    /// When set, it names the task's span (instead of the bare method; each hop's span is
    /// `"<name> hop"`) and is recorded as the span's `courier.operation` attribute, goes into the
    /// task's log metadata as `courier-operation` (beside `courier-task-id`), and stays on the
    /// task's metrics as ``TaskMetrics/operationName``. It is not sent to the server.
    public var operationName: String? {
        get { self.storage.operationName }
        set { self.uniqueStorage().operationName = newValue }
    }

    /// Makes a request.
    /// - Parameters:
    ///   - method: The HTTP method (GET by default).
    ///   - url: The absolute URL to send it to.
    ///   - headerFields: Header fields to send.
    ///   - body: The body (none by default).
    ///   - options: Per-request options (none set by default).
    public init(
        method: HTTPRequest.Method = .get,
        url: URL,
        headerFields: HTTPFields = [:],
        body: RequestBody = .empty,
        options: RequestOptions = RequestOptions()
    ) {
        self.storage = Storage(
            method: method, url: url, headerFields: headerFields, body: body, options: options,
            interceptor: nil, redirector: nil, responseCacher: nil, logger: nil, serviceContext: nil, operationName: nil)
    }

    /// The request head as swift-http-types sees it: method, scheme, authority, path with query.
    public var head: HTTPRequest {
        HTTPRequest(method: self.method, url: self.url, headerFields: self.headerFields)
    }

    /// A one-line summary for messages: `GET http://host/path`; a password in the URL reads `***`
    /// (`http://ann:***@host/path`), so that errors and logs do not carry it.
    public var summary: String { "\(self.method.rawValue) \(Self.redacted(self.url))" }

    /// `url` as text, its password (if it has one) replaced by `***`.
    static func redacted(_ url: URL) -> String {
        let text = url.absoluteString
        // User information comes before an `@`: most URLs have none, and are not parsed further.
        guard text.contains("@"), let password = url.password, !password.isEmpty,
            var components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        else { return text }
        components.percentEncodedPassword = "***"
        return components.url?.absoluteString ?? text
    }

    /// The value of a header field, or nil (AFNetworking's `valueForHTTPHeaderField:`).
    public func value(forHTTPHeaderField name: String) -> String? {
        guard let fieldName = HTTPField.Name(name) else { return nil }
        return self.headerFields.value(of: fieldName)
    }

    /// Sets or, with `nil`, removes a header field (AFNetworking's `setValue:forHTTPHeaderField:`).
    ///
    /// A `name` that is no field name sets nothing: RFC 9110 section 5.1 makes a name a token, so
    /// one with white space (even around it), a colon, a control or a non-ASCII letter has no
    /// `HTTPField.Name`. The value is made legal as swift-http-types' `HTTPField` makes it: white
    /// space around it is dropped, and CR, LF, NUL and the other controls become spaces, so no
    /// value can end its field; non-ASCII characters are sent as their UTF-8 bytes.
    public mutating func setValue(_ value: String?, forHTTPHeaderField name: String) {
        guard let fieldName = HTTPField.Name(name) else { return }
        self.headerFields[fieldName] = value
    }
}

extension Request: CustomStringConvertible {
    public var description: String { self.summary }
}
