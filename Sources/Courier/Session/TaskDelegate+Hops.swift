import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import NIOFoundationCompat

/// What the cookie store and the cache remember of a task between its hops.
struct HopState: Sendable {
    /// The `Cookie` field the caller (or the adapters) put on the attempt's request, taken when
    /// its first hop is prepared.
    var callerCookie: String?
    /// The attempt's first hop's URL, when the caller put a `Cookie` field on it: that field goes
    /// only to its origin.
    var originURL: URL?
    /// Whether this task sends and stores the session's cookies.
    var handlesCookies = false
    /// The request as the current hop was sent, when it is not the task's `currentRequest`
    /// (cookies or validators added, or a redirect's hop); nil when it is.
    var sentRequest: Request?
    /// The stored response the current hop revalidates (Courier added its validators).
    var revalidating: CachedResponse?
    /// Whether the final response may be stored.
    var mayStore = false
    /// Whether the request's or the session's cache policy serves stale responses, so that a
    /// response RFC 9111 would never serve again is still worth storing.
    var servesStale = false
    var requestDate: Date?
    var responseDate: Date?
    var source = ResponseSource.network
    /// The hop's response was a redirect the task declined (the hook or the redirector), whose
    /// cookies and cache invalidation were handled then: it comes again as the final response,
    /// and is not handled twice.
    var handledDeclinedRedirect = false
    /// How many redirects the attempt followed, over the network and from the cache: the limit
    /// of the redirect policy for a chain of stored redirects (``TaskDelegate/followingStoredRedirects(_:on:readsDisk:)``).
    var redirects = 0
    /// How the task goes on once the engine's exchange ended, when the cache had the answer for
    /// the target of a redirect the engine proposed (or the redirect was past the policy's limit
    /// for the whole chain): the session declined that redirect, the exchange is cancelled at the
    /// redirect's head, and this (the cache's answer, a failure) is the task's end instead (``TaskDelegate/exchange(willPerformRedirection:newRequest:)``).
    var afterExchange: Result<CachedResponse, CourierError>?

    /// What the store check needs of the hop (``TaskDelegate/cacheCopy(of:expected:storing:)``).
    struct Storing {
        let request: Request
        let servesStale: Bool
    }

    /// What the store check needs, when the hop's response may be stored; nil when it may not.
    func storing(currentRequest: Request) -> Storing? {
        guard self.mayStore else { return nil }
        return Storing(request: self.sentRequest ?? currentRequest, servesStale: self.servesStale)
    }
}

/// What a hop of a task does, once the session's options, cookies and cache were consulted.
enum HopPlan: Sendable {
    /// Send this request through the engine: the one the plan was made for when nil (the
    /// common case, which then is not copied into the plan).
    case send(Request?)
    /// Answer the task from the cache, without the engine.
    case answer(CachedResponse)
    /// End the task with this error, without the engine.
    case fail(CourierError)
}

extension SessionManager {
    /// The steps before the engine for a task's first hop (DESIGN's order: cookies, then the cache
    /// lookup), after the checks of the options that cannot be honoured as asked.
    ///
    /// The attempt's request is recorded as the task's (``TaskState/attemptSends(_:expected:ownAuthorization:)``)
    /// in the same transaction as the hop.
    func planFirstHop(_ request: Request, for delegate: TaskDelegate, expected: Int64?, ownAuthorization: Bool) -> HopPlan {
        let configuration = self.configurationReference
        if let refusal = self.refusal(of: request) {
            delegate.state.withLockedValue { $0.attemptSends(request, expected: expected, ownAuthorization: ownAuthorization) }
            return .fail(refusal)
        }

        // Cookies. The caller's own `Cookie` field is this attempt's, as its adapters made it
        // (a retry's may differ from the first attempt's: a refreshed token), kept for the
        // redirects back to its origin: recorded in the transaction at the end, so that the
        // task's lock is taken once.
        let handlesCookies =
            configuration.value.httpCookieStorage != nil
            && (request.options.httpShouldHandleCookies ?? configuration.value.httpShouldHandleCookies)
        let ownCookie = request.headerFields.value(of: .cookie)
        // The request with the session's cookies; nil when it goes as given (the common case: no
        // cookie to send and none there), which is then neither copied nor kept a second time.
        var withCookies: Request?
        if handlesCookies {
            let joined = Self.joinedCookies(ownCookie, configuration.value.httpCookieStorage?.cookieHeader(for: request.url))
            if joined != nil || ownCookie != nil {
                var changed = request
                changed.replaceCookieField(with: joined)
                withCookies = changed
            }
        }

        // The cache, for data tasks and streams.
        let policy = request.options.cachePolicy ?? configuration.value.requestCachePolicy
        var decision = CacheDecision.network(mayStore: false)
        // The cache's clock, read only when there is a cache: the dates are the cache's (a hop's
        // request and response times for the ages of what it stores).
        let now = configuration.value.responseCache?.now
        if delegate.sink.usesCache {
            // The lookup and the decision see the request as it goes (with the session's cookies);
            // each branch passes its own, as `withCookies ?? request` would copy the request.
            decision =
                if let withCookies {
                    self.cacheDecision(for: withCookies, policy: policy, now: now, readsDisk: true)
                } else {
                    self.cacheDecision(for: request, policy: policy, now: now, readsDisk: true)
                }
        } else if policy == .returnCacheDataDontLoad {
            decision = .unavailable
        }
        let (plan, hop) = Self.plan(decision, for: request, sending: withCookies, usesCache: delegate.sink.usesCache, now: now)

        let servesStale = policy.servesStale || configuration.value.requestCachePolicy.servesStale
        delegate.state.withLockedValue { state in
            state.attemptSends(request, expected: expected, ownAuthorization: ownAuthorization)
            state.hop.callerCookie = ownCookie
            // Where the caller's cookie may go again on a redirect: only needed when there is one.
            state.hop.originURL = ownCookie != nil ? request.url : nil
            state.hop.handlesCookies = handlesCookies
            state.hop.redirects = 0
            state.hop.afterExchange = nil
            state.hop.revalidating = hop.revalidating
            // Nothing is stored without a cache (whose clock `now` is).
            state.hop.mayStore = hop.mayStore && now != nil
            state.hop.servesStale = servesStale
            state.hop.source = hop.source
            state.hop.requestDate = now
            // nil when the hop sends the request as the attempt made it: the state's
            // `currentRequest` (see ``HopState/sentRequest``).
            state.hop.sentRequest = hop.sentRequest
        }
        return plan
    }

    /// What a hop records of its cache decision: ``HopState``'s fields of the same names.
    struct HopCacheRecord {
        var revalidating: CachedResponse?
        var mayStore = false
        var source = ResponseSource.network
        /// The request as the hop sends it, when it is not `request` (``plan(_:for:sending:usesCache:now:)``).
        var sentRequest: Request?
    }

    /// A hop's cache decision for `request` as the hop's plan, and what the hop records of it.
    /// `sending` is the request as it goes when it is not `request` (the session's cookies added),
    /// nil when it is.
    static func plan(
        _ decision: CacheDecision, for request: Request, sending: Request?, usesCache: Bool, now: Date?
    ) -> (HopPlan, HopCacheRecord) {
        var hop = HopCacheRecord(sentRequest: sending)
        switch decision {
        case .serve(let cached):
            hop.source = .cache
            return (.answer(cached), hop)
        case .revalidate(let stored, let conditional):
            hop.sentRequest = conditional
            hop.revalidating = stored
            hop.mayStore = true
            return (.send(conditional), hop)
        case .network(let mayStore):
            hop.mayStore = mayStore
            return (.send(sending), hop)
        case .unavailable:
            return (.fail(Self.cacheMiss(request, reason: usesCache ? "holds no response for it" : "answers data tasks and streams only")), hop)
        case .gatewayTimeout:
            // RFC 9111 5.2.1.7: the cache answers only-if-cached itself when it cannot.
            var fields = HTTPFields()
            fields[.contentLength] = "0"
            let date = now ?? Date()
            fields[.date] = HTTPDate.format(date)
            hop.source = .cache
            let answer = CachedResponse(
                response: HTTPResponse(status: .gatewayTimeout, headerFields: fields), data: Data(), url: request.url,
                storagePolicy: .notAllowed, requestDate: date)
            return (.answer(answer), hop)
        }
    }

    /// The cache's say on a hop after the first, to `request` (a redirect's target, its cookies
    /// and credentials already chosen): a stored response that answers it, validators to add, or
    /// the network; recorded in the hop's state. The engine follows the redirect with the
    /// request to send; an answer or a failure ends the task instead. Without `readsDisk` (on
    /// the engine's thread, an event loop that must not wait for a file) only the cache's memory
    /// tier is looked in: a target only the disk tier holds is fetched.
    func planLaterHop(_ request: Request, for delegate: TaskDelegate, readsDisk: Bool) -> HopPlan {
        let configuration = self.configurationReference
        let now = configuration.value.responseCache?.now
        let decision = self.cacheDecision(
            for: request, policy: request.options.cachePolicy ?? configuration.value.requestCachePolicy, now: now, readsDisk: readsDisk)
        let (plan, hop) = Self.plan(decision, for: request, sending: nil, usesCache: true, now: now)
        delegate.state.withLockedValue { state in
            state.hop.revalidating = hop.revalidating
            state.hop.mayStore = hop.mayStore && now != nil
            state.hop.source = hop.source
            state.hop.requestDate = now
            if let sent = hop.sentRequest { state.hop.sentRequest = sent }
        }
        return plan
    }

    /// The cache's decision for `sending` under `policy` at `now` (the cache's clock, nil without
    /// a cache), with the stored response it selects when the policy lets the cache answer a GET;
    /// without `readsDisk`, one the memory tier holds (``planLaterHop(_:for:readsDisk:)``).
    func cacheDecision(for sending: Request, policy: RequestOptions.CachePolicy, now: Date?, readsDisk: Bool) -> CacheDecision {
        let configuration = self.configurationReference
        var stored = sending.method == .get && policy != .reloadIgnoringLocalCacheData
            ? configuration.value.responseCache?.cachedResponse(for: sending, readsDisk: readsDisk) : nil
        // A stored body under a coding the engine decodes is decoded (``storeInCache``): not for
        // a request that gets such bodies as they came (decompression off, or its own
        // `Accept-Encoding` refusing gzip and deflate), whatever `Vary` says (the engine adds its
        // `Accept-Encoding` after this lookup, so the stored request named none either way).
        if let found = stored, ResponseInflater.inflates(found.response.headerFields), !configuration.value.decodesBodies(for: sending) {
            stored = nil
        }
        // Without a cache nothing is stored, and `now` is only read for a stored response.
        return CachePlanner.decide(
            sending, stored: stored, policy: policy, now: now ?? .distantPast,
            followsRedirects: configuration.value.redirectPolicy(for: sending) != .disallow)
    }

    /// Why a request cannot be sent as asked, or nil: options Courier refuses rather than ignores.
    func refusal(of request: Request) -> CourierError? {
        let configuration = self.configurationReference
        if request.options.httpShouldUsePipelining == true {
            return CourierError(
                .unsupportedOption, "\(request.summary): HTTP/1.1 pipelining is not supported (httpShouldUsePipelining = true)",
                request: request)
        }
        if configuration.value.isEphemeral {
            if configuration.value.httpCookieStorage?.isPersistent == true {
                return CourierError(
                    .unsupportedOption, "\(request.summary): an ephemeral session cannot use a cookie store that writes to disk",
                    request: request)
            }
            if configuration.value.responseCache?.isPersistent == true {
                return CourierError(
                    .unsupportedOption, "\(request.summary): an ephemeral session cannot use a cache that writes to disk", request: request)
            }
        }
        if !(request.options.allowsCellularAccess ?? configuration.value.allowsCellularAccess) {
            let reachability = self.reachabilityManager
            guard reachability.isMonitoring else {
                return CourierError(
                    .unsupportedOption,
                    "\(request.summary): cellular access is denied, but the reachability manager is not monitoring, so the interface is unknown (call startMonitoring())",
                    request: request)
            }
            if reachability.networkReachabilityStatus == .reachableViaWWAN {
                return CourierError(
                    .cellularAccessDenied, "\(request.summary): the network is reachable only over a cellular interface, which the request may not use",
                    request: request)
            }
        }
        return nil
    }

    static func cacheMiss(_ request: Request, reason: String) -> CourierError {
        CourierError(
            .resourceUnavailable, "\(request.summary): the cache policy forbids loading, and the cache \(reason)", request: request)
    }

    /// Two `Cookie` field values as one (the caller's first), or nil. An empty (or blank) first
    /// one adds nothing: joined, it made `; a=1`.
    static func joinedCookies(_ first: String?, _ second: String?) -> String? {
        switch (first, second) {
        case (let first?, let second?):
            first.utf8.allSatisfy { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") } ? second : "\(first); \(second)"
        case (let first?, nil): first
        case (nil, let second?): second
        case (nil, nil): nil
        }
    }
}

extension Request {
    /// Sets the `Cookie` field as one field (HTTP/1.1 allows only one), or removes it.
    mutating func setCookieField(_ value: String?) {
        // No cookie to send and none there (the common case): nothing is changed, so a request
        // the task's state shares is not copied (its storage and its header fields).
        if value == nil, !self.headerFields.contains(.cookie) { return }
        self.replaceCookieField(with: value)
    }

    /// Sets the `Cookie` field as one field, or removes it, without first looking whether there is
    /// one (the caller knows).
    mutating func replaceCookieField(with value: String?) {
        self.headerFields[values: .cookie] = value.map { [$0] } ?? []
    }
}

extension TaskDelegate {
    /// Answers the task from the cache as an exchange would have: the head, the body, the end.
    ///
    /// No exchange is attached, so a `cancel()` (from another thread while the entry was read,
    /// or from the head's and the body's hooks and progress, which run inside this call) reaches
    /// nothing: it is looked for between the steps, and the task ends cancelled, as one answered
    /// by the network does.
    func answerFromCache(_ cached: CachedResponse) {
        if let cancelled = self.cancelledWhileAnswering(cached, headDelivered: false) {
            self.exchange(didCompleteWith: cancelled)
            return
        }
        let disposition = self.exchange(didReceive: cached.response, url: cached.url)
        guard disposition == .allow else {
            let request = self.state.withLockedValue { $0.currentRequest }
            self.exchange(didCompleteWith: CourierError(
                .cancelled, "\(request.summary): cancelled on receiving the response", request: request, response: cached.response))
            return
        }
        if !cached.data.isEmpty, self.cancelledWhileAnswering(cached, headDelivered: true) == nil {
            self.exchange(didReceive: ByteBuffer(data: cached.data))
        }
        self.exchange(didCompleteWith: self.cancelledWhileAnswering(cached, headDelivered: true))
    }

    /// The cancellation error when the task was cancelled, nil otherwise.
    private func cancelledWhileAnswering(_ cached: CachedResponse, headDelivered: Bool) -> CourierError? {
        let (cancelling, request) = self.state.withLockedValue { ($0.machine.isCancelling, $0.currentRequest) }
        guard cancelling else { return nil }
        return CourierError(.cancelled, "\(request.summary): cancelled", request: request, response: headDelivered ? cached.response : nil)
    }

    // MARK: Redirects

    /// What a redirect needs of the task's state, read in the event's first transaction: the
    /// cookie store, the cache and the redirect hook then run outside the task's lock, and the
    /// next hop is recorded in its second (``TaskDelegate/exchange(willPerformRedirection:newRequest:)``).
    struct RedirectContext {
        let task: SessionTask?
        let handlesCookies: Bool
        /// The request the redirect answered, as it was sent.
        let sentRequest: Request
        /// Whether Courier added validators to that request (a revalidation).
        let revalidating: Bool
        let originURL: URL?
        /// Whether that request's `Authorization` was the session's own (``FailedAttempt/carriesSessionAuthorization``).
        let carriesSessionAuthorization: Bool
        let callerCookie: String?
        let span: TaskSpan?
        let hopSpan: (span: HopSpan, redirects: Int)?
        let attempt: Int
        let tracedHops: Int
        /// Whether the redirect may be stored (``HopState/mayStore``), and what its storing needs.
        let mayStore: Bool
        let servesStale: Bool
        let requestDate: Date?

        init(_ state: inout TaskState) {
            self.task = state.task
            self.handlesCookies = state.hop.handlesCookies
            self.mayStore = state.hop.mayStore
            self.servesStale = state.hop.servesStale
            self.requestDate = state.hop.requestDate
            self.sentRequest = state.hop.sentRequest ?? state.currentRequest
            self.revalidating = state.hop.revalidating != nil
            self.originURL = state.hop.originURL
            self.carriesSessionAuthorization = state.carriesSessionAuthorization
            self.callerCookie = state.hop.callerCookie
            self.span = state.tracing.span
            self.hopSpan = state.tracing.hopSpan
            self.attempt = state.machine.attempt
            self.tracedHops = state.tracing.tracedHops
        }
    }

    /// The request the next hop sends once a redirect was chosen: the validators Courier added
    /// for the first URL removed; unless the redirect hook changed the `Cookie` field, the
    /// cookies rebuilt for the new URL (the caller's own `Cookie` only on the first hop's origin);
    /// unless it changed `Authorization`, the session's own HTTP authentication made for the hop
    /// (``HTTPAuthenticationResponder/authenticate(_:)``): a Digest answer names its hop's method
    /// and target and counts its nonce (RFC 7616 3.4; the first hop's, sent on, was refused by
    /// Apache's `mod_auth_digest` with 400), and a target of another origin gets the credential
    /// of a space the session answered there (as URLSession answers the hop that was
    /// challenged). Also says whether the hop's `Authorization` is the session's.
    func nextHop(_ chosen: Request, proposed: Request, context: RedirectContext) -> (request: Request, ownAuthorization: Bool) {
        var next = chosen
        var ownAuthorization = false
        if chosen.headerFields[values: .authorization] == proposed.headerFields[values: .authorization] {
            ownAuthorization = context.carriesSessionAuthorization && next.headerFields.contains(.authorization)
            if ownAuthorization, next.headerFields[.authorization].map(HTTPAuthenticationResponder.isDigest) == true {
                next.headerFields[.authorization] = nil
            }
            if !next.headerFields.contains(.authorization) {
                next = self.interception.authentication.authenticate(next)
                ownAuthorization = next.headerFields.contains(.authorization)
            }
        }
        if context.revalidating {
            next.headerFields[.ifNoneMatch] = nil
            next.headerFields[.ifModifiedSince] = nil
        }
        if context.handlesCookies, let store = self.configurationReference.value.httpCookieStorage,
            chosen.headerFields[values: .cookie] == proposed.headerFields[values: .cookie]
        {
            let sameOrigin = context.originURL?.isSameOrigin(as: next.url) ?? false
            next.setCookieField(SessionManager.joinedCookies(sameOrigin ? context.callerCookie : nil, store.cookieHeader(for: next.url)))
        }
        return (next, ownAuthorization)
    }

    /// `plan` with the stored redirects it answers with followed: when the cache's answer to the
    /// hop under way is a redirect, each is a redirect of the session's
    /// (``redirect(_:newRequest:fromCache:)``: the hook asked, the next hop's cookies and
    /// credentials chosen), then the cache's say on its target
    /// (``SessionManager/planLaterHop(_:for:readsDisk:)``), until a hop the network must answer
    /// (the plan sends it), a stored final response, a redirect the policy does not follow or the
    /// hook declines (the answer as it is), or the policy's limit (a failure), as the engine would
    /// have followed them. Any other plan is returned as it is. `readsDisk`: see
    /// ``SessionManager/planLaterHop(_:for:readsDisk:)``.
    func followingStoredRedirects(_ plan: HopPlan, on manager: SessionManager, readsDisk: Bool) -> HopPlan {
        guard case .answer(var answer) = plan else { return plan }
        // The stored hops' URLs, for a policy that allows no cycle.
        var visited: Set<String> = []
        // Which proxy carries a URL, for the caller's `Proxy-Authorization`: the engine's routes
        // when it is a NIOEngine; another engine's are unknown (the field then stays on its origin).
        let engine = manager.engine as? NIOEngine
        while RedirectPlanner.redirectStatuses.contains(answer.response.status.code) {
            let (request, redirects) = self.state.withLockedValue { ($0.hop.sentRequest ?? $0.currentRequest, $0.hop.redirects) }
            let policy = manager.configurationReference.value.redirectPolicy(for: request)
            switch RedirectPlanner.step(
                for: answer.response, request: request, policy: policy, redirectCount: redirects, visitedURLs: visited,
                routes: engine)
            {
            case .none:
                return .answer(answer)
            case .fail(let message):
                return .fail(CourierError(.tooManyRedirects, "\(request.summary): \(message)", request: request, response: answer.response))
            case .follow(let proposed):
                visited.insert(request.url.absoluteString)
                guard let next = self.redirect(answer.response, newRequest: proposed, fromCache: true) else { return .answer(answer) }
                switch manager.planLaterHop(next, for: self, readsDisk: readsDisk) {
                case .answer(let following): answer = following
                // The request the plan was made for, unless the plan says otherwise (validators).
                case .send(let sent): return .send(sent ?? next)
                case .fail(let failure): return .fail(failure)
                }
            }
        }
        return .answer(answer)
    }

    /// How the task ends after the engine's exchange ended, when the session declined the
    /// engine's redirect for the cache's answer (``HopState/afterExchange``): that answer, or the
    /// failure (the cancellation, when the task was cancelled meanwhile).
    func end(afterDeclinedRedirect end: Result<CachedResponse, CourierError>) {
        switch end {
        case .success(let cached):
            self.answerFromCache(cached)
        case .failure(let failure):
            let (cancelling, request) = self.state.withLockedValue { ($0.machine.isCancelling, $0.currentRequest) }
            self.exchange(didCompleteWith: cancelling ? .cancelled(request) : failure)
        }
    }

    // MARK: Responses

    /// What the delegate does with a final response head, once the hop's facts were read.
    enum ArrivedHead {
        /// The sink recorded it in the head's transaction (``BodySink/recordHeadUnderLock(_:status:url:holding:in:delegate:)``):
        /// the rest is the sink's ``BodySink/headRecorded(_:response:status:holding:delegate:)``.
        case recorded(RecordedHead)
        /// Not recorded yet (a download's): the sink takes the whole head, ``BodySink/headArrived(_:status:url:delegate:)``.
        case unrecorded
        /// A `304` that confirmed a stored response: the stored one, its headers updated, with
        /// its status code and its body to deliver.
        case revalidated(status: Int, response: HTTPResponse, storedBody: ByteBuffer?)
        /// The head of a redirect the session declined because the cache answers its target
        /// (``HopState/afterExchange``), or one that came after the caller's `cancel()`: the
        /// exchange is to be cancelled.
        case declined
    }

    /// The final response head arrived, with its status code (read once, for the sink and the
    /// retry decision) and whether its progress is held back for a possible retry. One
    /// transaction reads what the hop knows of it and, unless it answers Courier's revalidation,
    /// has the sink record it (so that the head takes the task's lock once); then, unlocked, its
    /// cookies are stored and the cache invalidated after an unsafe method, and a `304` answering
    /// Courier's revalidation is turned into the stored response (its headers updated), whose
    /// body is to be delivered.
    func finalResponseArrived(_ response: HTTPResponse, url: URL, status: Int, holding: Bool) -> ArrivedHead {
        let cache = self.configurationReference.value.responseCache
        // The cache's clock, read only when there is a cache (the dates are for what it stores).
        let now = cache?.now
        // What the response needs of the hop, in one transaction; not a copy of the whole hop
        // state, which would retain each of its requests, URLs and strings.
        // A tuple, not an optional one: returned as it is, its request is not copied (a retain).
        // The head is made here and moved on, never bound again: each copy of a recorded head
        // retains its task and its deliveries.
        let (source, handlesCookies, request, revalidating, requestDate, handled, head) = self.state.withLockedValue { state in
            if state.hop.source != .cache { state.hop.responseDate = now }
            defer { state.hop.handledDeclinedRedirect = false }
            let revalidating = status == 304 ? state.hop.revalidating : nil
            let head: ArrivedHead
            if state.hop.afterExchange != nil || state.machine.isCancelling {
                // A head that reached the loop after the caller's `cancel()` (whose cancel is on
                // its way to the exchange) is refused like a declined redirect's: the task ends
                // cancelled without a response, no monitor, hook or cookie store hears of it.
                head = .declined
            } else if revalidating != nil {
                // A 304 answering a revalidation is recorded as the stored response it confirms,
                // once the cache has updated it (below).
                head = .unrecorded
            } else if let recorded = self.sink.recordHeadUnderLock(response, status: status, url: url, holding: holding, in: &state, delegate: self) {
                head = .recorded(recorded)
            } else {
                head = .unrecorded
            }
            return (
                state.hop.source, state.hop.handlesCookies, state.hop.sentRequest ?? state.currentRequest, revalidating,
                state.hop.requestDate, state.hop.handledDeclinedRedirect, head
            )
        }
        if case .declined = head { return head }
        // The cache's own answer: nothing came from a server.
        if source == .cache {
            self.emit { $0.task($1, didAnswerFromCache: response, source: .cache) }
            return head
        }
        if !handled { self.responseArrived(response, to: request, handlesCookies: handlesCookies) }
        guard let stored = revalidating, let cache, let now else { return head }
        let updated = CachePlanner.updated(stored, with: response, requestDate: requestDate ?? now, responseDate: now)
        // A 304 that makes the response one the cache may not keep (`no-store`): answered with
        // this once, and forgotten (updated in place, it lost its `no-cache` and could be served
        // unasked; OkHttp never serves a stored response its rules would not store).
        let keeps = CachePlanner.isStorable(updated.response, for: request)
        // Freshened only if the cache still holds what was revalidated (not a newer answer that
        // another task stored meanwhile).
        if keeps { cache.storeCachedResponse(updated, for: request, replacing: stored) } else { cache.removeCachedResponse(for: request) }
        let served = CachePlanner.served(updated, now: now)
        self.state.withLockedValue { state in
            state.hop.source = .revalidatedCache
            state.hop.mayStore = false
        }
        self.emit { monitor, task in
            if keeps { monitor.task(task, didStoreInCache: updated) }
            monitor.task(task, didAnswerFromCache: served.response, source: .revalidatedCache)
        }
        return .revalidated(
            status: served.response.status.code, response: served.response, storedBody: served.data.isEmpty ? nil : ByteBuffer(data: served.data))
    }

    /// Cookies and invalidation for any response a server sent to `request`.
    func responseArrived(_ response: HTTPResponse, to request: Request, handlesCookies: Bool) {
        let configuration = self.configurationReference
        // Looked at through the configuration, not bound: most responses set no cookie and most
        // caches are empty, and a binding (or the URL read for the call) would be a retain each.
        if handlesCookies, response.headerFields.contains(.setCookie) {
            configuration.value.httpCookieStorage?.storeCookies(from: response, for: request.url)
        }
        if configuration.value.responseCache?.isEmpty == false, let cache = configuration.value.responseCache {
            for url in CachePlanner.invalidatedURLs(by: response, to: request) {
                cache.removeCachedResponses(for: url)
            }
        }
    }

    /// At a data task's or a stream's end, when its hop may store (``TaskEndRecord/mayStore``):
    /// the response stored in the cache when RFC 9111 and the will-cache hook (the request's
    /// ``ResponseCacher`` when it has one) allow it, and its whole body was kept
    /// (``BodySink/bodyToStore(gathered:)``).
    func storeInCache(_ outcome: borrowing TaskOutcome, servesStale: Bool) {
        guard outcome.error == nil, outcome.response != nil, self.configurationReference.value.responseCache != nil else { return }
        // Asked of the response where it lies, not bound first: most responses are not worth
        // storing, and a binding of the response and of the cache is a retain of each storage.
        guard self.isWorthStoring(outcome.response!, servesStale: servesStale), let response = outcome.response,
            let cache = self.configurationReference.value.responseCache
        else {
            // Not stored, since nothing could serve it again; but a cache that stored it (OkHttp,
            // URLCache) would have replaced what the URL had, so that goes: a later request's
            // `returnCacheDataElseLoad` would have got the older one. (Free while the cache is empty.)
            // A 206 replaces nothing: no cache stores a part (``CachePlanner/isStorable(_:for:)``,
            // OkHttp), so the whole response stored for the URL stays.
            if self.configurationReference.value.responseCache?.isEmpty == false, let cache = self.configurationReference.value.responseCache,
                let status = outcome.response?.status.code, status != 206, CacheFreshness.heuristicallyCacheable.contains(status)
            {
                cache.removeCachedResponse(for: outcome.request)
            }
            return
        }
        let (sentRequest, requestDate, responseDate) = self.state.withLockedValue {
            ($0.hop.sentRequest, $0.hop.requestDate, $0.hop.responseDate)
        }
        let request = sentRequest ?? outcome.request
        guard CachePlanner.isStorable(response, for: request),
            // A body under a coding the engine decodes is stored decoded only: one kept as it came
            // (decompression off, or `Accept-Encoding: identity` that the server ignored) would be
            // served, still coded, to a request that gets bodies decoded (``cacheDecision``).
            !ResponseInflater.inflates(response.headerFields) || self.configurationReference.value.decodesBodies(for: request),
            let data = self.sink.bodyToStore(gathered: outcome.data)
        else { return }
        let now = cache.now
        let cached = CachedResponse(
            response: CachePlanner.storable(response), data: data, url: request.url, storagePolicy: .allowed,
            requestDate: requestDate ?? now, responseDate: responseDate ?? now)
        self.store(cached, for: request, in: cache, task: outcome.task, manager: outcome.manager)
    }

    /// A redirect the engine follows, stored under the URL it answered when RFC 9111 allows it
    /// (``CachePlanner/isStorable(_:for:)``), so that a later request follows it from the cache
    /// (``followingStoredRedirects(_:on:readsDisk:)``). Stored without its body, which the engine does not
    /// read, and its head says so: a request that does not follow redirects gets it empty.
    func storeFollowedRedirect(_ response: HTTPResponse, context: RedirectContext) {
        guard let cache = self.configurationReference.value.responseCache, self.isWorthStoring(response, servesStale: context.servesStale),
            CachePlanner.isStorable(response, for: context.sentRequest)
        else { return }
        var head = CachePlanner.storable(response)
        head.headerFields[.contentLength] = "0"
        head.headerFields[.contentEncoding] = nil
        let now = cache.now
        let cached = CachedResponse(
            response: head, data: Data(), url: context.sentRequest.url, storagePolicy: .allowed,
            requestDate: context.requestDate ?? now, responseDate: now)
        self.store(cached, for: context.sentRequest, in: cache, task: context.task, manager: self.manager)
    }

    /// Stores `cached` as the answer to `request`, when the will-cache hook (the request's
    /// ``ResponseCacher`` when it has one) lets it, changed or not.
    private func store(_ cached: CachedResponse, for request: Request, in cache: ResponseCache, task: SessionTask?, manager: SessionManager?) {
        var cached = cached
        if let hook = self.hook({ $0.dataTaskWillCacheResponse }) {
            guard let dataTask = task as? DataTask, let manager, let chosen = hook(manager, dataTask, cached) else { return }
            cached = chosen
        }
        cache.storeCachedResponse(cached, for: request)
        if let monitors = self.interception.monitors, let task {
            let stored = cached
            monitors.emit { $0.task(task, didStoreInCache: stored) }
        }
    }
}

extension TaskDelegate {
    /// Work nobody would see: a response the session's rules could never serve again is not
    /// stored, unless a policy that serves stale responses or the will-cache hook might use it.
    func isWorthStoring(_ response: HTTPResponse, servesStale: Bool) -> Bool {
        servesStale || self.hook({ $0.dataTaskWillCacheResponse }) != nil || CachePlanner.saysAnythingAboutCaching(response)
    }

    /// The copy of a streamed response's body to keep for the cache, up to the largest entry the
    /// session's cache keeps, when the response may be stored and its announced length is within
    /// that; nil to keep nothing. An event stream (`text/event-stream`) is a live feed, never a
    /// document to serve again, and may run for hours: nothing of it is kept.
    func cacheCopy(of response: HTTPResponse, expected: Int64, storing: HopState.Storing) -> ResponseStreamSink.CacheCopy? {
        guard let cache = self.configurationReference.value.responseCache,
            self.isWorthStoring(response, servesStale: storing.servesStale),
            CachePlanner.isStorable(response, for: storing.request),
            response.mimeType != "text/event-stream"
        else { return nil }
        let limit = cache.largestEntrySize
        return expected <= Int64(limit) ? ResponseStreamSink.CacheCopy(cache: cache, limit: limit, expected: expected) : nil
    }
}

extension SessionTask {
    /// Where the task's response came from: the network, or the session's
    /// ``SessionConfiguration/responseCache``; nil until a response head arrived.
    public var responseSource: ResponseSource? {
        self.delegate.state.withLockedValue { $0.response == nil ? nil : $0.hop.source }
    }
}
