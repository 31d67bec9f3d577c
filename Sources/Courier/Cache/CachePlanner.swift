import Foundation
import HTTPTypes

/// What to do with a request, given what the cache holds for it.
enum CacheDecision: Sendable {
    /// Serve this stored response (its `Age` set) without touching the network.
    case serve(CachedResponse)
    /// Send this conditional request; a `304` confirms `stored`.
    case revalidate(stored: CachedResponse, conditionalRequest: Request)
    /// Send the request as it is; `mayStore` says whether its response may be stored.
    case network(mayStore: Bool)
    /// The policy forbids loading and nothing usable is stored (AFNetworking's
    /// `returnCacheDataDontLoad`): the task fails with ``CourierError/Code/resourceUnavailable``.
    case unavailable
    /// The request said `only-if-cached` and nothing usable is stored: the cache answers
    /// `504 Gateway Timeout` itself (RFC 9111 5.2.1.7).
    case gatewayTimeout
}

/// The decisions of a private cache (RFC 9111), without storage or I/O: which stored response a
/// request may use, how to revalidate it, what may be stored, how a `304` updates it, what an
/// unsafe method invalidates.
enum CachePlanner {
    /// Request fields that make a request the caller's own conditional or partial request: the
    /// cache neither answers it nor revalidates for it.
    static let callerConditionals: [HTTPField.Name] = [.ifNoneMatch, .ifModifiedSince, .ifMatch, .ifUnmodifiedSince, .ifRange, .range]
    static let pragma = HTTPField.Name("Pragma")!

    /// The decision for `request` under `policy`, given the stored response matching it (its
    /// `Vary` fields included), at `now`.
    ///
    /// A stored redirect answers a request that follows redirects (`followsRedirects`) only while
    /// it is fresh: the session then follows it from the cache
    /// (``TaskDelegate/followingStoredRedirects(_:on:readsDisk:)``). One that would need revalidating is
    /// as good as none: the network's answer is followed by the engine.
    static func decide(
        _ request: Request,
        stored: CachedResponse?,
        policy: RequestOptions.CachePolicy,
        now: Date,
        followsRedirects: Bool = true
    ) -> CacheDecision {
        let cacheable = request.method == .get
        switch policy {
        case .reloadIgnoringLocalCacheData:
            return .network(mayStore: cacheable && self.requestAllowsStoring(request))
        case .returnCacheDataElseLoad:
            if cacheable, let stored { return .serve(self.served(stored, now: now)) }
            return .network(mayStore: cacheable && self.requestAllowsStoring(request))
        case .returnCacheDataDontLoad:
            if cacheable, let stored { return .serve(self.served(stored, now: now)) }
            return .unavailable
        case .useProtocolCachePolicy:
            break
        }
        let control = CacheControl(fields: request.headerFields[values: .cacheControl])
        // A request that would go to the network (not a GET, `no-store`, its own conditionals or
        // range) and says only-if-cached gets the 504 (RFC 9111 5.2.1.7, as OkHttp): an app's
        // offline mode sends nothing.
        guard cacheable else { return control.onlyIfCached ? .gatewayTimeout : .network(mayStore: false) }
        if control.noStore { return control.onlyIfCached ? .gatewayTimeout : .network(mayStore: false) }
        if self.callerConditionals.contains(where: { request.headerFields.contains($0) }) {
            return control.onlyIfCached ? .gatewayTimeout : .network(mayStore: true)
        }
        guard let stored else { return control.onlyIfCached ? .gatewayTimeout : .network(mayStore: true) }

        let responseControl = CacheControl(fields: stored.response.headerFields[values: .cacheControl])
        let requestNoCache = control.noCache || self.hasPragmaNoCache(request.headerFields)
        let responseNoCache = responseControl.noCache || self.hasPragmaNoCache(stored.response.headerFields)

        // A response with no lifetime (no max-age, Expires or Last-Modified) is never fresh, and
        // only a request's max-stale can use it stale: skip parsing its dates for its age.
        let mayServe = !requestNoCache && !responseNoCache
            && (control.maxStale != nil || responseControl.maxAge != nil
                || stored.response.headerFields.contains(.expires) || stored.response.headerFields.contains(.lastModified))
        if mayServe {
            let freshness = CacheFreshness(
                response: stored.response, control: responseControl, requestDate: stored.requestDate,
                responseDate: stored.responseDate, now: now)
            var usable = freshness.isFresh
            if let maxAge = control.maxAge, freshness.age > TimeInterval(maxAge) { usable = false }
            if let minFresh = control.minFresh, freshness.lifetime - freshness.age < TimeInterval(minFresh) { usable = false }
            if !freshness.isFresh, !responseControl.mustRevalidate, let maxStale = control.maxStale {
                // A stale response the request accepts (max-stale), unless it must be revalidated.
                let withinStale = maxStale.map { freshness.staleness <= TimeInterval($0) } ?? true
                let ageAllowed = control.maxAge.map { freshness.age <= TimeInterval($0) } ?? true
                let minFreshAllowed = control.minFresh == nil
                usable = withinStale && ageAllowed && minFreshAllowed
            }
            if usable { return .serve(self.served(stored, age: freshness.age)) }
        }
        if control.onlyIfCached { return .gatewayTimeout }
        if followsRedirects, RedirectPlanner.redirectStatuses.contains(stored.response.status.code) { return .network(mayStore: true) }
        guard let conditional = self.conditionalRequest(request, for: stored) else { return .network(mayStore: true) }
        return .revalidate(stored: stored, conditionalRequest: conditional)
    }

    /// Whether fields without `Cache-Control` say `Pragma: no-cache`, which then counts as
    /// `Cache-Control: no-cache`; with `Cache-Control`, that field decides alone. RFC 9111 5.4 says
    /// so of a request; of a response it leaves `Pragma` undefined, and Courier reads it the same
    /// way, as OkHttp and the browsers do: a server that says it wants no caching is asked again.
    static func hasPragmaNoCache(_ fields: HTTPFields) -> Bool {
        !fields.contains(.cacheControl) && fields[values: self.pragma].contains { CacheControl.directives($0).contains { $0.0 == "no-cache" } }
    }

    /// Whether the request's own directives allow storing its response.
    static func requestAllowsStoring(_ request: Request) -> Bool {
        !CacheControl(fields: request.headerFields[values: .cacheControl]).noStore
    }

    /// `request` with `If-None-Match` and `If-Modified-Since` from the stored validators, or nil
    /// when the stored response has none.
    static func conditionalRequest(_ request: Request, for stored: CachedResponse) -> Request? {
        let etag = stored.response.headerFields.value(of: .eTag)
        let lastModified = stored.response.headerFields.value(of: .lastModified)
        guard etag != nil || lastModified != nil else { return nil }
        var conditional = request
        if let etag { conditional.headerFields[.ifNoneMatch] = etag }
        if let lastModified { conditional.headerFields[.ifModifiedSince] = lastModified }
        return conditional
    }

    /// The stored response as served: its `Age` field says how old it is.
    static func served(_ stored: CachedResponse, now: Date) -> CachedResponse {
        let control = CacheControl(fields: stored.response.headerFields[values: .cacheControl])
        let freshness = CacheFreshness(
            response: stored.response, control: control, requestDate: stored.requestDate, responseDate: stored.responseDate, now: now)
        return self.served(stored, age: freshness.age)
    }

    static func served(_ stored: CachedResponse, age: TimeInterval) -> CachedResponse {
        var served = stored
        // At most 2³¹ seconds, as RFC 9111 1.2.2 caps delta-seconds (and `Int64` holds).
        served.response.headerFields[.age] = String(age.isNaN ? 0 : Int64(min(max(0, age), 2_147_483_648).rounded(.down)))
        return served
    }

    // MARK: Storing

    /// Whether a private cache may store `response` to `request` (RFC 9111 section 3): a GET, a
    /// final status other than 206 and 304, no `no-store` either side (unless `must-understand`
    /// with a status the cache understands), no `Vary: *`, and explicit caching information
    /// (`max-age`, `Expires`, `public`, `private`) or a heuristically cacheable status. As on
    /// Apple platforms, a response with neither a lifetime nor a validator is stored too:
    /// ``RequestOptions/CachePolicy/returnCacheDataElseLoad`` and
    /// ``RequestOptions/CachePolicy/returnCacheDataDontLoad`` serve it.
    ///
    /// A redirect (301, 302, 303, 307, 308) is stored like any other response, whether it ended
    /// the task or the engine followed it: a request that follows redirects follows a stored one
    /// from the cache, and the redirect hook is asked again.
    static func isStorable(_ response: HTTPResponse, for request: Request) -> Bool {
        guard request.method == .get, self.requestAllowsStoring(request) else { return false }
        let status = response.status.code
        guard status >= 200, status != 206, status != 304 else { return false }
        let control = CacheControl(fields: response.headerFields[values: .cacheControl])
        if control.mustUnderstand {
            // RFC 9111 5.2.2.3: stored only when the cache knows the status's caching rules, and
            // then despite `no-store`.
            guard Self.understoodStatuses.contains(status) else { return false }
        } else if control.noStore {
            return false
        }
        // `Vary: *` never matches a later request (RFC 9111 4.1), and neither does a member that
        // is no field name (stored, it matched every request: no request has such a field).
        if response.headerFields[values: .vary].contains(where: {
            CacheEntry.varyMembers($0).contains { !$0.isEmpty && ($0 == "*" || HTTPField.Name($0) == nil) }
        }) {
            return false
        }
        let explicit = control.maxAge != nil || response.headerFields.contains(.expires) || control.isPublic || control.isPrivate
        return explicit || CacheFreshness.heuristicallyCacheable.contains(status)
    }

    /// The statuses whose caching rules Courier's cache implements, for `must-understand`
    /// (RFC 9111 5.2.2.3): those RFC 9110 15.1 makes heuristically cacheable and the redirects,
    /// but for the partial content it does not store.
    static let understoodStatuses: Set<Int> = CacheFreshness.heuristicallyCacheable.union(RedirectPlanner.redirectStatuses).subtracting([206])

    /// Whether `response` says anything a cache could serve it again by: a `Cache-Control` or
    /// `Expires` field (a lifetime, or `public`/`private`/`no-cache` and kin), or a validator
    /// (`ETag`, or `Last-Modified`, which also gives a heuristic lifetime). A response with none of
    /// them is stale when it arrives and cannot be revalidated: RFC 9111's rules never serve it
    /// again, and only a policy that serves stale responses
    /// (``RequestOptions/CachePolicy/returnCacheDataElseLoad``,
    /// ``RequestOptions/CachePolicy/returnCacheDataDontLoad``) would.
    static func saysAnythingAboutCaching(_ response: HTTPResponse) -> Bool {
        let fields = response.headerFields
        return fields.contains(.cacheControl) || fields.contains(.expires) || fields.contains(.eTag)
            || fields.contains(.lastModified)
    }

    /// Fields a cache does not store (RFC 9111 3.1): the connection's own (RFC 9110 7.6.1) and the
    /// proxy's authentication fields. The fields the `Connection` field names go too
    /// (``storable(_:)``).
    static let fieldsNotStored: Set<HTTPField.Name> = [
        .connection, .te, .transferEncoding, .upgrade, HTTPField.Name("Keep-Alive")!, HTTPField.Name("Proxy-Connection")!,
        .proxyAuthenticate, .proxyAuthenticationInfo, .proxyAuthorization,
    ]

    /// Fields of a `304` that do not replace the stored ones (RFC 9111 3.2): the length and the
    /// fields a cache does not store.
    static let fieldsNotUpdatedBy304: Set<HTTPField.Name> = Self.fieldsNotStored.union([
        .contentLength, .contentEncoding, .trailer,
    ])

    /// `response` as a cache stores it: without the fields RFC 9111 3.1 says a cache must not
    /// store (``fieldsNotStored``, and those the `Connection` field names).
    static func storable(_ response: HTTPResponse) -> HTTPResponse {
        let options = response.headerFields.connectionOptions
        guard response.headerFields.contains(where: { Self.fieldsNotStored.contains($0.name) || options.contains($0.name) }) else {
            return response
        }
        var stored = response
        stored.headerFields = HTTPFields(response.headerFields.filter { !Self.fieldsNotStored.contains($0.name) && !options.contains($0.name) })
        return stored
    }

    /// `stored` updated by a `304 Not Modified` to a request sent at `requestDate`, received at
    /// `responseDate`: the 304's fields replace the stored ones of the same name, but for those
    /// that are not updated (``fieldsNotUpdatedBy304``, and those its `Connection` field names).
    /// The stored `Age` goes unless the 304 has one: it counted the time since the origin made or
    /// validated the response (RFC 9111 5.1), and the 304 validated it now. (Kept, a response
    /// stored at `Age: 3500` with `max-age=3600` was stale again 100 s after each revalidation.)
    static func updated(_ stored: CachedResponse, with notModified: HTTPResponse, requestDate: Date, responseDate: Date) -> CachedResponse {
        var updated = stored
        let options = notModified.headerFields.connectionOptions
        var names: [HTTPField.Name] = []
        for field in notModified.headerFields
        where !self.fieldsNotUpdatedBy304.contains(field.name) && !options.contains(field.name) && !names.contains(field.name) {
            names.append(field.name)
        }
        for name in names {
            updated.response.headerFields[values: name] = notModified.headerFields[values: name]
        }
        if !names.contains(.age) { updated.response.headerFields[.age] = nil }
        // A 304 without `Date` (RFC 9110 6.6.1 has its recipient add one, the time it came): the
        // stored `Date` would have counted the time since the first response as the updated one's
        // age, and left it stale at once, revalidated by every request after.
        if !names.contains(.date), updated.response.headerFields[.date] != nil {
            updated.response.headerFields[.date] = HTTPDate.format(responseDate)
        }
        updated.response = Self.storable(updated.response)
        updated.requestDate = requestDate
        updated.responseDate = responseDate
        return updated
    }

    // MARK: Invalidation

    /// The URLs whose stored responses an answer to `request` invalidates (RFC 9111 4.4): for an
    /// unsafe method answered with 2xx or 3xx, the target and the `Location` and
    /// `Content-Location` URLs of the same origin.
    static func invalidatedURLs(by response: HTTPResponse, to request: Request) -> [URL] {
        switch request.method {
        case .get, .head, .options, .trace: return []
        default: break
        }
        guard (200..<400).contains(response.status.code) else { return [] }
        var urls = [request.url]
        for name in [HTTPField.Name.location, .contentLocation] {
            // The first of repeated fields, as the redirect follows (joined, they name no URL).
            guard let value = response.headerFields[values: name].first, let url = URL(string: value, relativeTo: request.url)?.absoluteURL,
                url.isSameOrigin(as: request.url)
            else { continue }
            urls.append(url)
        }
        return urls
    }
}

extension RequestOptions.CachePolicy {
    /// Whether the policy serves a stored response however old.
    var servesStale: Bool {
        switch self {
        case .returnCacheDataElseLoad, .returnCacheDataDontLoad: true
        case .useProtocolCachePolicy, .reloadIgnoringLocalCacheData: false
        }
    }
}
