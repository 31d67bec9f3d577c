import Foundation

/// The per-request options that AFNetworking's request serializer applies only when they were set:
/// each is `nil` until someone sets it, and a `nil` option leaves the session's setting in force.
public struct RequestOptions: Sendable, Hashable {
    /// How a request uses a response cache.
    ///
    /// The NIO engine keeps no response cache, so every policy loads from the network except
    /// ``returnCacheDataDontLoad``, which fails with ``CourierError/Code/invalidRequest``.
    public enum CachePolicy: Sendable, Hashable {
        /// The protocol's rules (the default).
        case useProtocolCachePolicy
        /// Always load from the network.
        case reloadIgnoringLocalCacheData
        /// Use cached data however old, else load.
        case returnCacheDataElseLoad
        /// Use cached data only; never load.
        case returnCacheDataDontLoad
    }

    /// The idle timeout for this request in seconds: how long the request may wait for the next
    /// bytes before it fails with ``CourierError/Code/timedOut``. `nil` keeps the session's
    /// ``SessionConfiguration/timeoutIntervalForRequest``.
    public var timeoutInterval: TimeInterval?
    /// The cache policy; `nil` keeps the session's.
    public var cachePolicy: CachePolicy?
    /// Whether to send and store cookies; `nil` keeps the session's.
    ///
    /// Carried with the request for engines that keep a cookie store. ``NIOEngine`` keeps none yet:
    /// it sends only the `Cookie` fields the request already has and stores nothing it receives.
    public var httpShouldHandleCookies: Bool?
    /// Whether the request may use a cellular interface (honoured on Apple platforms).
    public var allowsCellularAccess: Bool?
    /// Whether the request may be pipelined (advisory; HTTP/2 multiplexes regardless).
    public var httpShouldUsePipelining: Bool?

    /// No option set.
    public init(
        timeoutInterval: TimeInterval? = nil,
        cachePolicy: CachePolicy? = nil,
        httpShouldHandleCookies: Bool? = nil,
        allowsCellularAccess: Bool? = nil,
        httpShouldUsePipelining: Bool? = nil
    ) {
        self.timeoutInterval = timeoutInterval
        self.cachePolicy = cachePolicy
        self.httpShouldHandleCookies = httpShouldHandleCookies
        self.allowsCellularAccess = allowsCellularAccess
        self.httpShouldUsePipelining = httpShouldUsePipelining
    }

    /// These options with every option set in `other` taking precedence.
    public func merging(_ other: RequestOptions) -> RequestOptions {
        RequestOptions(
            timeoutInterval: other.timeoutInterval ?? self.timeoutInterval,
            cachePolicy: other.cachePolicy ?? self.cachePolicy,
            httpShouldHandleCookies: other.httpShouldHandleCookies ?? self.httpShouldHandleCookies,
            allowsCellularAccess: other.allowsCellularAccess ?? self.allowsCellularAccess,
            httpShouldUsePipelining: other.httpShouldUsePipelining ?? self.httpShouldUsePipelining
        )
    }
}
