import Courier
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import NIOFoundationCompat

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An `Engine` on Foundation's `URLSession`: the transport AFNetworking had, behind
/// the same API as `NIOEngine`.
///
/// Give it to a `SessionManager` (`SessionManager(engine:configuration:)`) and
/// everything above the engine works as with Courier's own: serializers, progress, cookies and
/// the cache (Courier's, above the engine: this engine turns URLSession's own off), adapters,
/// retriers, authentication, redirects asked of the session's `Redirector`, metrics,
/// monitors and notifications. On Linux `URLSession` is FoundationNetworking's, on libcurl.
///
/// What it does not do, and says so rather than ignoring it:
/// - A `SecurityPolicy` other than `SecurityPolicy.default` (pinning,
///   private roots, accepting invalid certificates, a client certificate): every exchange fails
///   with `CourierError.Code.unsupportedOption`. `URLSession` checks certificates
///   against the system's roots.
/// - Request trailer fields: the exchange fails with `CourierError.Code.unsupportedOption`.
/// - A body on a `GET` or `HEAD` (FoundationNetworking refuses a `GET` with one): the exchange
///   fails with `CourierError.Code.unsupportedOption` before anything is sent. An empty body (no
///   byte of data, a file or a stream of known length 0) is no body, and goes out as none.
/// - Sending a streamed body as it is read (`RequestBody.stream(_:length:trailers:)`,
///   `RequestBody.replayableStream(length:trailers:_:)`: multipart forms, OpenAPI bodies):
///   `URLSession` uploads bytes in memory or a file, so such a body is read whole first, in
///   memory up to `streamedBodyMemoryLimit` bytes and past it into a file in
///   `streamedBodyDirectory`, removed when the exchange ends. It goes out with `Content-Length`
///   even when its length was unknown, after its last byte was read: a body that never ends is
///   never sent (cancel the task). A body that fails or gives another length than it declared
///   fails the exchange with `CourierError.Code.bodyReadFailed`, as on `NIOEngine`.
/// - Back-pressure: after `Exchange.suspendReceiving()` what arrives is held in memory until
///   `Exchange.resumeReceiving()`; the server is not slowed down (suspending a running
///   `URLSessionTask` stalled transfers on Linux, and libcurl kept receiving).
/// - Per-hop `TransactionMetrics` and the protocol's name: never reported.
/// - A response with trailer fields (HTTP/1.1 chunked trailers, HTTP/2 trailing `HEADERS`) stops
///   the process: FoundationNetworking (6.3.1) reads the trailer lines as the start of another
///   response head, and when the transfer then ends, without that head, it calls `fatalError`
///   ("Transfer completed, but there's no response."). The engine hears of them too late to stop
///   it: use `NIOEngine` with servers that send trailers.
/// - A `401` or `407` with a challenge reaches the session as its response head without its
///   body (FoundationNetworking hands it over as a challenge); the session's authentication
///   answers it as on `NIOEngine`.
///
/// Responses come decoded, as libcurl hands them over: libcurl decodes every coding it was built
/// with (gzip and deflate, and br and zstd where it has them; it asks for them all unless the
/// request names its own `Accept-Encoding`) whatever `SessionConfiguration.decompression` says,
/// `.disabled` included, and with no ratio limit: a small body that inflates to gigabytes is
/// inflated whole (a data task keeps `SessionConfiguration.maximumResponseBodySize` of it at
/// most, counted on the decoded bytes; a download or a stream takes all of it). The head keeps
/// its `Content-Encoding`. What `NIOEngine`'s configuration holds (proxies, HTTP versions,
/// connection limits, timeouts) is the `URLSessionConfiguration`'s here: the session manager's
/// `SessionConfiguration`-to-engine settings reach `NIOEngine` only, its redirect policy excepted.
/// A request's `RequestOptions.timeoutInterval` applies, and the redirect policy as on
/// `NIOEngine` (the request's `RequestOptions.redirectPolicy`, which the session manager sets to
/// its `SessionConfiguration.redirectPolicy` when the request sets none): with `.disallow` a
/// redirect is the response; past the maximum, or back to a URL already requested when cycles are
/// not allowed, the exchange fails with `CourierError.Code.tooManyRedirects`.
/// A redirect that keeps the request's body (a 307 or 308 to a POST) is followed by the engine
/// itself, on a new `URLSessionTask` that sends the body again: FoundationNetworking sends a
/// redirected request without its body. FoundationNetworking gives up after 20 redirects on one
/// task, whatever the policy allows: past that (a policy whose maximum is higher) the exchange
/// fails with `CourierError.Code.tooManyRedirects` at the 21st. The session decides each redirect
/// (its redirect hook, a request's `Redirector`) on the `URLSession`'s delegate queue, which
/// carries every exchange's events one at a time: while a decision runs, the engine's other
/// exchanges wait, so a redirect hook should return quickly. A decision that outlasts the
/// request's timeout ends the exchange with `CourierError.Code.timedOut` (URLSession stops waiting
/// for it when its timeout fires); one made after the task was cancelled is not followed.
public final class URLSessionEngine: Engine {
    private let session: URLSession
    private let queue: OperationQueue
    private let bridge: Bridge
    private let securityPolicy: SecurityPolicy
    private let spool: BodySpool

    /// How many bytes of a streamed body are read into memory before it is sent; a longer body
    /// is written to a file in ``streamedBodyDirectory`` first.
    public var streamedBodyMemoryLimit: Int { self.spool.memoryLimit }

    /// Where streamed bodies longer than ``streamedBodyMemoryLimit`` are written before they are
    /// sent, one file an exchange, removed when it ends.
    public var streamedBodyDirectory: URL { self.spool.directory }

    /// An engine on a `URLSession` made from a copy of `configuration` whose cache, cookie store
    /// and credential store are turned off (the session manager above keeps its own); the
    /// configuration given is not changed.
    ///
    /// - Parameters:
    ///   - configuration: The `URLSession`'s configuration (an ephemeral one by default).
    ///   - securityPolicy: Only `SecurityPolicy.default` is honoured (see above).
    ///   - streamedBodyMemoryLimit: How many bytes of a streamed body are gathered in memory
    ///     before it is sent; past it the body goes to a file. 10,000,000 by default (Alamofire's
    ///     threshold for encoding a multipart form in memory).
    ///   - streamedBodyDirectory: Where those files are written; the system's temporary folder by
    ///     default.
    public init(
        configuration: URLSessionConfiguration = .ephemeral, securityPolicy: SecurityPolicy = .default,
        streamedBodyMemoryLimit: Int = 10_000_000, streamedBodyDirectory: URL = FileManager.default.temporaryDirectory
    ) {
        self.spool = BodySpool(memoryLimit: max(0, streamedBodyMemoryLimit), directory: streamedBodyDirectory)
        // `URLSessionConfiguration` is a class: the caller's stays as it was.
        let configuration = configuration.copy() as? URLSessionConfiguration ?? .ephemeral
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.urlCredentialStorage = nil
        let bridge = Bridge()
        let queue = OperationQueue()
        // One exchange's events never overlap: one queue, one at a time.
        queue.maxConcurrentOperationCount = 1
        queue.name = "courier.urlsession-engine"
        self.session = URLSession(configuration: configuration, delegate: bridge, delegateQueue: queue)
        self.bridge = bridge
        self.queue = queue
        self.securityPolicy = securityPolicy
    }

    /// Starts `request` on a `URLSessionTask` (an upload task for a body of data or a file) and
    /// returns its handle; a request this engine cannot send completes at once with the reason.
    public func execute(_ request: Request, delegate: any ExchangeDelegate) -> any Exchange {
        let exchange = URLSessionExchange(request: request, delegate: delegate, queue: self.queue, bridge: self.bridge)
        delegate.exchangeWillStart(exchange)
        if let problem = self.problem(with: request) {
            exchange.finish(problem)
            return exchange
        }
        // An empty body is none: FoundationNetworking fails a GET with one, even empty. A GET or
        // HEAD gets here only with an empty body (``problem(with:)``).
        if request.body.isEmpty || Self.sendsNoBody(request.method) {
            Self.start(exchange, body: nil, session: self.session, bridge: self.bridge)
        } else if let data = request.body.data {
            Self.start(exchange, body: .data(data), session: self.session, bridge: self.bridge)
        } else if let file = request.body.fileURL {
            Self.start(exchange, body: .file(file), session: self.session, bridge: self.bridge)
        } else {
            self.spoolAndStart(exchange)
        }
        return exchange
    }

    /// Whether a request with `method` goes out without a body on this engine: FoundationNetworking
    /// fails a GET with one (even empty), and has libcurl send a HEAD as a request for no body
    /// (`CURLOPT_NOBODY`), not as an upload.
    static func sendsNoBody(_ method: HTTPRequest.Method) -> Bool {
        method == .get || method == .head
    }

    /// Makes the exchange's task, sending `body`, and resumes it.
    private static func start(_ exchange: URLSessionExchange, body: BodySpool.Spooled?, session: URLSession, bridge: Bridge) {
        let urlRequest = Self.urlRequest(for: exchange.request)
        exchange.sending(body)
        // Made inside the bridge's registration: a task made on an invalidated URLSession is a
        // fatal error in FoundationNetworking, and `shutdown()` closes the bridge first.
        let task = bridge.register(exchange) { Self.task(for: urlRequest, sending: body, on: session) }
        guard let task else {
            exchange.discardSpooledBody()
            exchange.finish(CourierError(.sessionInvalidated, "\(exchange.request.summary): the engine was shut down", request: exchange.request))
            return
        }
        exchange.attach(task)
    }

    /// A task that sends `urlRequest` with `body`: a data task when there is none, or it is empty
    /// (a streamed body that gave no byte), an upload task otherwise.
    static func task(for urlRequest: URLRequest, sending body: BodySpool.Spooled?, on session: URLSession) -> URLSessionTask {
        switch body {
        case .data(let data)? where data.isEmpty: session.dataTask(with: urlRequest)
        case .data(let data)?: session.uploadTask(with: urlRequest, from: data)
        case .file(let file)?: session.uploadTask(with: urlRequest, fromFile: file)
        case nil: session.dataTask(with: urlRequest)
        }
    }

    /// Reads the exchange's streamed body whole (``BodySpool``), then starts its task.
    private func spoolAndStart(_ exchange: URLSessionExchange) {
        guard self.bridge.beginSpooling(exchange) else {
            exchange.finish(CourierError(.sessionInvalidated, "\(exchange.request.summary): the engine was shut down", request: exchange.request))
            return
        }
        let (spool, session, bridge) = (self.spool, self.session, self.bridge)
        // Unstructured: the body is read while `execute` has returned, as NIOEngine's body pump
        // does. The exchange holds it: `cancel(with:)` (and so the engine's shutdown) cancels it and
        // ends the exchange at once, without waiting for a stream that ignores cancellation.
        let work = Task {
            let body: BodySpool.Spooled
            do throws(CourierError) {
                body = try await spool.read(exchange.request)
            } catch {
                // Cancelled: `cancel(with:)` ends the exchange; otherwise the body's failure does.
                exchange.failSpooling(error)
                return
            }
            if case .file(let file) = body { exchange.keepSpooledBody(file) }
            // Cancelled while the body was read: `cancel(with:)` ended the exchange.
            guard !exchange.isCancelled else {
                exchange.discardSpooledBody()
                return
            }
            Self.start(exchange, body: body, session: session, bridge: bridge)
        }
        exchange.spooling(work)
    }

    /// Fails the exchanges still running with `CourierError.Code.sessionInvalidated`, invalidates
    /// the `URLSession`, and returns once every exchange has completed.
    public func shutdown() async throws {
        let running = self.bridge.close()
        for exchange in running {
            exchange.cancel(with: CourierError(.sessionInvalidated, "\(exchange.request.summary): the engine was shut down", request: exchange.request))
        }
        self.session.invalidateAndCancel()
        await self.bridge.waitUntilEmpty()
    }

    /// Why `request` cannot go out on this engine, if it cannot.
    private func problem(with request: Request) -> CourierError? {
        if self.securityPolicy != .default {
            return CourierError(
                .unsupportedOption,
                "\(request.summary): URLSessionEngine checks certificates against the system's roots only; this SecurityPolicy (pinning, private roots, invalid certificates or a client certificate) needs NIOEngine",
                request: request)
        }
        if request.body.trailers != nil {
            return CourierError(.unsupportedOption, "\(request.summary): URLSessionEngine sends no trailer fields", request: request)
        }
        // A body known to be empty is none; any other on a GET or HEAD cannot go out.
        if Self.sendsNoBody(request.method), !request.body.isEmpty, request.body.knownLength != 0 {
            return CourierError(
                .unsupportedOption,
                "\(request.summary): URLSessionEngine cannot send a body with a GET or HEAD (URLSession refuses it); NIOEngine can",
                request: request)
        }
        do {
            try request.checkFieldValues()
        } catch {
            return error
        }
        guard let scheme = request.url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            return CourierError(.unsupportedScheme, "\(request.summary): URLSessionEngine sends http and https URLs", request: request)
        }
        return nil
    }

    static func urlRequest(for request: Request) -> URLRequest {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method.rawValue
        for field in request.headerFields {
            urlRequest.addValue(field.value, forHTTPHeaderField: field.name.rawName)
        }
        if let timeout = request.options.timeoutInterval { urlRequest.timeoutInterval = Self.foundationTimeout(timeout) }
        urlRequest.httpShouldHandleCookies = false
        urlRequest.cachePolicy = .reloadIgnoringLocalCacheData
        return urlRequest
    }

    /// A request's timeout as URLSession can take it, read as every engine reads it
    /// (``RequestOptions/effectiveTimeout(_:)``). FoundationNetworking multiplies
    /// `Int(timeoutInterval)` by 1,000: NaN, an infinity or anything past 9.2 × 10¹⁵ stopped the
    /// process, and a fraction of a second was cut to a timeout of 1 ms, so there it is rounded up
    /// to whole seconds.
    static func foundationTimeout(_ seconds: TimeInterval) -> TimeInterval {
        let clamped = RequestOptions.effectiveTimeout(seconds)
        #if canImport(FoundationNetworking)
        return clamped.rounded(.up)
        #else
        return clamped
        #endif
    }

    /// Whether `status` is an interim response's (1xx), which a final response follows: every one
    /// but `101 Switching Protocols`, which ends the exchange as HTTP.
    static func isInterim(_ status: Int) -> Bool {
        (100...199).contains(status) && status != 101
    }

    /// The response head, or nil when its status is not three digits (a custom `URLProtocol` can
    /// make any `Int`; `HTTPResponse` takes 0 to 999 and stops the process at another).
    static func response(from response: HTTPURLResponse) -> HTTPResponse? {
        guard (0...999).contains(response.statusCode) else { return nil }
        var fields = HTTPFields()
        for (name, value) in response.allHeaderFields {
            guard let text = name as? String, let name = HTTPField.Name(text), let value = value as? String else { continue }
            if name == .setCookie {
                // Kept with their control characters, as NIOEngine keeps them: `HTTPField(name:value:)`
                // makes spaces of them, and the cookie parser, which must ignore such a cookie
                // (RFC 6265bis 5.6), stored `a\u{1}b=c` as `a b=c` and `Sec\u{1}ure` without Secure.
                for cookie in Self.setCookieValues(joined: value) { fields.append(HTTPField(name: name, lenientValue: cookie.utf8)) }
            } else {
                fields.append(HTTPField(name: name, value: value))
            }
        }
        // URLSession keeps no reason phrase; the standard one stands in.
        let status = HTTPResponse.Status(code: response.statusCode, reasonPhrase: HTTPURLResponse.localizedString(forStatusCode: response.statusCode).capitalized)
        return HTTPResponse(status: status, headerFields: fields)
    }
}

extension URLSessionEngine {
    /// The `Set-Cookie` fields URLSession joined into one value with commas (its header
    /// dictionary keeps one value a name), apart again. A comma starts a new cookie only when a
    /// name and `=` follow it before any `;` or `,`: the comma of an `Expires` date
    /// (`Expires=Wed, 21 Oct 2026 07:28:00 GMT`) is followed by a day, a space and no `=`.
    static func setCookieValues(joined value: String) -> [String] {
        var cookies: [String] = []
        var current = Substring()
        var rest = Substring(value)
        while let comma = rest.firstIndex(of: ",") {
            let after = rest[rest.index(after: comma)...]
            let next = after.drop { $0 == " " || $0 == "\t" }
            let name = next.prefix { $0 != "=" && $0 != ";" && $0 != "," }
            let startsCookie = !name.isEmpty && !name.contains(" ") && next.dropFirst(name.count).first == "="
            if startsCookie {
                cookies.append(String(current + rest[..<comma]).trimmingCharacters(in: .whitespaces))
                current = ""
                rest = next
            } else {
                current += rest[...comma]
                rest = after
            }
        }
        let last = String(current + rest).trimmingCharacters(in: .whitespaces)
        if !last.isEmpty { cookies.append(last) }
        return cookies
    }
}

/// One exchange on a `URLSessionTask`.
///
/// `@unchecked Sendable`: `request`, `delegate`, `queue` and `bridge` are immutable and `state`
/// is behind its lock; the compiler cannot see that `URLSessionTask` and `OperationQueue` are only
/// used through their thread-safe calls.
final class URLSessionExchange: Exchange, @unchecked Sendable {
    let request: Request
    let delegate: any ExchangeDelegate

    private struct State {
        var task: URLSessionTask?
        /// Reads a streamed body before the task is made (``BodySpool``); nil once it has.
        var spooling: Task<Void, Never>?
        /// The file a streamed body was written to, removed when URLSession is done with it.
        var spooledFile: URL?
        /// What the current task sends: sent again when Courier follows a redirect itself.
        var sentBody: BodySpool.Spooled?
        /// The request of the current hop: the exchange's, then each redirect's.
        var current: Request
        /// A redirect Courier follows itself, once the current task has ended
        /// (``followItself(_:)``).
        var redirect: Request?
        /// The URLs requested before the current hop, for a policy that allows no cycle.
        var visited: Set<String> = []
        /// Why a redirect broke the request's policy: the exchange ends with it.
        var redirectFailure: CourierError?
        /// URLSession proposed a redirect and was told not to follow it (the policy does not
        /// follow it, or the session declined it): its head, which URLSession then hands over as
        /// the response, is the answer, never a redirect to ask about again.
        var declinedRedirect = false
        /// The current hop's request went out: a head arrived for it (an interim one, a redirect's
        /// or the response's), or bytes of its body were sent. A failure after that is never one
        /// that says no request went out (``Bridge/courierError(_:request:reachedServer:)``).
        var reachedServer = false
        /// The error ``cancel(with:)`` gave, reported instead of URLSession's own.
        var cancellation: CourierError?
        var isSuspended = false
        /// Chunks that arrived while receiving was suspended.
        var held: [Data] = []
        var hasEnded = false
        /// The final response head went to the delegate.
        var deliveredHead = false
        var redirects = 0

        /// What the task receives now is not the exchange's body: the body of a redirect Courier
        /// follows itself or that broke the policy, or what comes after the exchange was cancelled
        /// (its head refused, or ``URLSessionExchange/cancel(with:)``) or ended.
        var dropsBody: Bool {
            self.redirect != nil || self.redirectFailure != nil || self.cancellation != nil || self.hasEnded
        }

        /// The next hop is `request`.
        mutating func follow(_ request: Request) {
            self.redirects += 1
            self.visited.insert(self.current.url.absoluteString)
            self.current = request
            self.reachedServer = false
        }
    }

    private let state: NIOLockedValueBox<State>

    /// The session's delegate queue: every event of the exchange is delivered on it.
    private let queue: OperationQueue
    /// Keeps the exchange while it reads a streamed body.
    private let bridge: Bridge

    init(request: Request, delegate: any ExchangeDelegate, queue: OperationQueue, bridge: Bridge) {
        self.request = request
        self.delegate = delegate
        self.queue = queue
        self.bridge = bridge
        self.state = NIOLockedValueBox(State(current: request))
    }

    /// The request of the hop under way.
    var current: Request { self.state.withLockedValue { $0.current } }

    /// What the task being made sends.
    func sending(_ body: BodySpool.Spooled?) {
        self.state.withLockedValue { $0.sentBody = body }
    }

    /// URLSession follows a redirect with `request`.
    func followed(_ request: Request) {
        self.state.withLockedValue { $0.follow(request) }
    }

    /// Courier follows a redirect with `request` itself, on a new task, once the current one has
    /// ended (FoundationNetworking sends a redirected request without its body). What the current
    /// task still receives is dropped.
    func followItself(_ request: Request) {
        self.state.withLockedValue { state in
            state.follow(request)
            state.redirect = request
        }
    }

    /// Whether a redirect Courier follows itself waits for the current task to end.
    var isFollowingItself: Bool { self.state.withLockedValue { $0.redirect != nil } }

    /// URLSession's redirect is not followed: the policy does not follow it, or the session
    /// declined it (``State/declinedRedirect``).
    func declineRedirect() {
        self.state.withLockedValue { $0.declinedRedirect = true }
    }

    /// Whether URLSession proposed a redirect that was not followed: the head it hands over next
    /// is that redirect's, the answer.
    var hasDeclinedRedirect: Bool { self.state.withLockedValue { $0.declinedRedirect } }

    /// The redirect to follow now, with the body to send: its own when it is data or a file, else
    /// the one the ended task sent (a streamed body, read once).
    func takeRedirect() -> (request: Request, body: BodySpool.Spooled?)? {
        self.state.withLockedValue { state in
            guard let redirect = state.redirect else { return nil }
            state.redirect = nil
            state.task = nil
            if redirect.body.isEmpty { return (redirect, nil) }
            if let data = redirect.body.data { return (redirect, .data(data)) }
            if let file = redirect.body.fileURL { return (redirect, .file(file)) }
            return (redirect, state.sentBody)
        }
    }

    func attach(_ task: URLSessionTask) {
        let cancellation = self.state.withLockedValue { state -> CourierError? in
            state.task = task
            state.spooling = nil
            return state.cancellation
        }
        // Cancelled in the delegate's first event (or while its body was read): the task never
        // starts, and completes cancelled.
        if cancellation != nil { task.cancel() }
        task.resume()
    }

    /// Whether ``cancel(with:)`` was called.
    var isCancelled: Bool { self.state.withLockedValue { $0.cancellation != nil } }

    /// Calls `completionHandler` with `request`, URLSession's answer about a redirect, unless the
    /// exchange was cancelled: its task was (or is being) cancelled, and URLSession ends it without
    /// the answer. Under the state's lock, so that a cancel either comes first (no answer) or
    /// reaches the task after the answer: the handler only queues the answer on the task's own
    /// queue, where the cancel goes too, and calls nothing of Courier's.
    func answerRedirect(_ request: URLRequest?, with completionHandler: @Sendable (URLRequest?) -> Void) {
        self.state.withLockedValue { state in
            guard state.cancellation == nil else { return }
            completionHandler(request)
        }
    }

    func cancel(with error: CourierError) {
        let (task, spooling) = self.state.withLockedValue { state -> (URLSessionTask?, Task<Void, Never>?) in
            let first = state.cancellation == nil
            if first { state.cancellation = error }
            return (state.task, first ? state.spooling : nil)
        }
        if let task {
            task.cancel()
        } else if let spooling {
            self.stopSpooling(spooling)
        }
    }

    /// The task reading a streamed body (``BodySpool``): cancelled with the exchange.
    func spooling(_ work: Task<Void, Never>) {
        let cancelled = self.state.withLockedValue { state -> Bool in
            guard state.task == nil, !state.hasEnded else { return false }
            state.spooling = work
            return state.cancellation != nil
        }
        // Cancelled before the reading task was kept: `cancel(with:)` could not stop it.
        if cancelled { self.stopSpooling(work) }
    }

    /// Cancelled with no task yet, while the body is read: the reading stops, and the exchange
    /// ends now, on the delegate queue, whatever the body's stream does with the cancellation.
    private func stopSpooling(_ work: Task<Void, Never>) {
        work.cancel()
        self.queue.addOperation {
            self.finish(nil)
            self.bridge.endSpooling(self)
        }
    }

    /// The streamed body could not be read: the exchange ends with `error` (or its cancellation).
    func failSpooling(_ error: CourierError) {
        self.queue.addOperation {
            self.finish(error)
            self.bridge.endSpooling(self)
        }
    }

    /// Keeps the file a streamed body was written to, for ``discardSpooledBody()``.
    func keepSpooledBody(_ file: URL) {
        self.state.withLockedValue { $0.spooledFile = file }
    }

    /// Removes the file a streamed body was written to, if any: URLSession is done with it, or
    /// never got it.
    func discardSpooledBody() {
        guard let file = self.state.withLockedValue({ state -> URL? in
            defer { state.spooledFile = nil }
            return state.spooledFile
        }) else { return }
        try? FileManager.default.removeItem(at: file)
    }

    /// Holds what arrives from now on. The task goes on: suspending a running `URLSessionTask` on
    /// Linux stalled some transfers for good (FoundationNetworking over libcurl; seen in this
    /// engine's tests, a 10 MiB body that never resumed until its timeout), and libcurl did not
    /// stop receiving meanwhile anyway.
    func suspendReceiving() {
        self.state.withLockedValue { $0.isSuspended = true }
    }

    func resumeReceiving() {
        // On the delegate queue, where the task's events come: the held chunks go out before any
        // that arrives after them, and never beside another event of the exchange.
        self.queue.addOperation {
            let held = self.state.withLockedValue { state -> [Data]? in
                // Ended meanwhile: the end delivered what was held.
                guard !state.hasEnded else { return nil }
                state.isSuspended = false
                defer { state.held = [] }
                // Cancelled meanwhile: what was held is dropped, as what still arrives is.
                return state.cancellation == nil ? state.held : nil
            }
            for data in held ?? [] { self.delegate.exchange(didReceive: ByteBuffer(data: data)) }
        }
    }

    /// A chunk arrived: delivered, or held while receiving is suspended; dropped when it is not
    /// the exchange's (``State/dropsBody``). FoundationNetworking ignores a refusal of the head
    /// (`.cancel`), and hands a declined redirect's body over after its head: once the head was
    /// refused, the exchange cancelled, such bytes are not delivered.
    func received(_ data: Data) {
        let deliver = self.state.withLockedValue { state -> Bool in
            guard !state.dropsBody else { return false }
            if state.isSuspended { state.held.append(data) }
            return !state.isSuspended
        }
        if deliver { self.delegate.exchange(didReceive: ByteBuffer(data: data)) }
    }

    /// A head arrived for the current hop's request, or bytes of its body went out
    /// (``State/reachedServer``).
    func requestReachedServer() {
        self.state.withLockedValue { $0.reachedServer = true }
    }

    /// Whether the current hop's request went out (``State/reachedServer``).
    var hasReachedServer: Bool { self.state.withLockedValue { $0.reachedServer } }

    /// Whether the final response head went to the delegate.
    var hasDeliveredHead: Bool { self.state.withLockedValue { $0.deliveredHead } }

    /// The final response head is going to the delegate.
    func markHeadDelivered() {
        self.state.withLockedValue { $0.deliveredHead = true }
    }

    /// What the request's redirect policy makes of `response` to the current hop: `NIOEngine`'s
    /// `RedirectPlanner`, so that a policy means the same on both engines. A step that breaks the
    /// policy is kept as ``redirectFailure``, which the exchange ends with.
    func planRedirect(_ response: HTTPResponse) -> RedirectStep {
        // A session manager sets the session's in a request that sets none; NIOEngine's default
        // for an exchange started otherwise.
        let policy = self.request.options.redirectPolicy ?? .follow(max: 16, allowCycles: true)
        return self.state.withLockedValue { state in
            let step = RedirectPlanner.step(
                for: response, request: state.current, policy: policy, redirectCount: state.redirects, visitedURLs: state.visited)
            if case .fail(let message) = step {
                state.redirectFailure = CourierError(
                    .tooManyRedirects, "\(self.request.summary): \(message)", request: self.request, response: response)
            }
            return step
        }
    }

    /// Whether a redirect broke the request's policy: what the task still receives is not the
    /// exchange's.
    var brokeRedirectPolicy: Bool { self.state.withLockedValue { $0.redirectFailure != nil } }

    /// Ends the exchange once: held chunks first (a completion is the last call; none once the
    /// exchange was cancelled), then the completion with `error`, or with the cancellation's error
    /// when there was one.
    func finish(_ error: CourierError?) {
        let ending = self.state.withLockedValue { state -> ([Data], CourierError?, Bool)? in
            guard !state.hasEnded else { return nil }
            state.hasEnded = true
            defer { state.held = [] }
            return (state.cancellation == nil ? state.held : [], state.cancellation ?? state.redirectFailure, state.deliveredHead)
        }
        guard let (held, cancellation, deliveredHead) = ending else { return }
        // A task that ends well must have answered: an end with neither a response nor an error
        // (FoundationNetworking has such paths) is said to be one, never left to the caller.
        if cancellation == nil, error == nil, !deliveredHead {
            let missing = CourierError(.invalidResponse, "\(self.request.summary): URLSession ended the task without a response", request: self.request)
            self.delegate.exchange(didCompleteWith: missing)
            return
        }
        for data in held { self.delegate.exchange(didReceive: ByteBuffer(data: data)) }
        self.delegate.exchange(didCompleteWith: cancellation ?? error)
    }
}

extension URLSessionExchange {
    /// The failure of a response whose status `HTTPResponse` cannot hold.
    func badStatus(_ code: Int) -> CourierError {
        CourierError(.invalidResponse, "\(self.request.summary): the response's status \(code) is not three digits", request: self.request)
    }
}
