import Foundation

/// The per-request options that AFNetworking's request serializer applies only when they were set:
/// each is `nil` until someone sets it, and a `nil` option leaves the session's setting in force.
public struct RequestOptions: Sendable, Hashable {
    /// How a request uses the session's ``SessionConfiguration/responseCache`` (AFNetworking's
    /// `cachePolicy`, as on Apple platforms). Data tasks and streams are answered from the cache;
    /// downloads are not.
    public enum CachePolicy: Sendable, Hashable {
        /// RFC 9111's rules (the default): a fresh stored response is served without the
        /// network, a stale one is revalidated, the request's `Cache-Control` is obeyed.
        case useProtocolCachePolicy
        /// Always load from the network; the response is still stored.
        case reloadIgnoringLocalCacheData
        /// Use a stored response however old, without revalidating it; else load.
        case returnCacheDataElseLoad
        /// Use a stored response however old; never load: without one the task fails with
        /// ``CourierError/Code/resourceUnavailable``.
        case returnCacheDataDontLoad
    }

    /// The idle timeout for this request in seconds: how long the request may wait for the next
    /// bytes before it fails with ``CourierError/Code/timedOut``. `nil` keeps the session's
    /// ``SessionConfiguration/timeoutIntervalForRequest``.
    public var timeoutInterval: TimeInterval?

    /// A timeout as every engine reads it: NaN is 60 seconds, the rest is kept within 1 ms and
    /// 10⁹ s (`.infinity` is "no limit" in practice).
    package static func effectiveTimeout(_ seconds: TimeInterval) -> TimeInterval {
        seconds.isNaN ? 60 : Swift.min(Swift.max(seconds, 0.001), 1e9)
    }
    /// The cache policy; `nil` keeps the session's.
    public var cachePolicy: CachePolicy?
    /// Whether to send the cookies of the session's ``SessionConfiguration/httpCookieStorage`` and
    /// store those the responses set, on every hop; `nil` keeps the session's
    /// ``SessionConfiguration/httpShouldHandleCookies``. With `false`, only a `Cookie` field the
    /// request carries goes out, and nothing is stored.
    public var httpShouldHandleCookies: Bool?
    /// Whether the request may use a cellular interface; `nil` keeps the session's
    /// ``SessionConfiguration/allowsCellularAccess`` (which says how `false` is enforced).
    public var allowsCellularAccess: Bool?
    /// Whether the request may be pipelined. Courier never pipelines HTTP/1.1 requests (HTTP/2
    /// multiplexes instead): `false` and `nil` are honoured; `true` is refused, the task failing
    /// with ``CourierError/Code/unsupportedOption``.
    public var httpShouldUsePipelining: Bool?
    /// Whether this request's redirects are followed; `nil` keeps the session's
    /// ``SessionConfiguration/redirectPolicy``. With ``NIOEngine/RedirectPolicy/disallow`` the
    /// 3xx is the task's response, and the session's cache may store it and answer the next
    /// request that does not follow redirects either (RFC 9111: a redirect is a response like
    /// any other); a request that follows them is never answered with a stored redirect.
    public var redirectPolicy: NIOEngine.RedirectPolicy?

    /// No option set.
    public init(
        timeoutInterval: TimeInterval? = nil,
        cachePolicy: CachePolicy? = nil,
        httpShouldHandleCookies: Bool? = nil,
        allowsCellularAccess: Bool? = nil,
        httpShouldUsePipelining: Bool? = nil,
        redirectPolicy: NIOEngine.RedirectPolicy? = nil
    ) {
        self.timeoutInterval = timeoutInterval
        self.cachePolicy = cachePolicy
        self.httpShouldHandleCookies = httpShouldHandleCookies
        self.allowsCellularAccess = allowsCellularAccess
        self.httpShouldUsePipelining = httpShouldUsePipelining
        self.redirectPolicy = redirectPolicy
    }

    /// These options with every option set in `other` taking precedence.
    public func merging(_ other: RequestOptions) -> RequestOptions {
        RequestOptions(
            timeoutInterval: other.timeoutInterval ?? self.timeoutInterval,
            cachePolicy: other.cachePolicy ?? self.cachePolicy,
            httpShouldHandleCookies: other.httpShouldHandleCookies ?? self.httpShouldHandleCookies,
            allowsCellularAccess: other.allowsCellularAccess ?? self.allowsCellularAccess,
            httpShouldUsePipelining: other.httpShouldUsePipelining ?? self.httpShouldUsePipelining,
            redirectPolicy: other.redirectPolicy ?? self.redirectPolicy
        )
    }
}
