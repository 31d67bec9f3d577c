import Foundation

/// What one request's response does in the cache (Alamofire's `ResponseCacher`): stored as the
/// session proposes, not stored, or changed by a closure. Set it on the request
/// (``Request/responseCacher``); it then decides instead of the session's
/// ``SessionManager/Hooks/dataTaskWillCacheResponse`` hook.
///
/// ```swift
/// var request = Request(url: url)
/// request.responseCacher = .doNotCache
/// request.responseCacher = .modify { task, cached in
///     var kept = cached
///     kept.storagePolicy = .allowedInMemoryOnly
///     return kept
/// }
/// ```
///
/// It is asked only about a response the session would store: a data task's, through a session
/// with a ``SessionConfiguration/responseCache``, that RFC 9111 lets a cache store.
public struct ResponseCacher: Sendable {
    /// What a response gets.
    public enum Behavior: Sendable {
        /// Stored as proposed.
        case cache
        /// Not stored.
        case doNotCache
        /// The closure's response is stored, or nothing when it returns `nil`. It gets the task
        /// and the proposed response.
        case modify(@Sendable (DataTask, CachedResponse) -> CachedResponse?)
    }

    /// What a response gets.
    public let behavior: Behavior

    /// A cacher with `behavior`.
    public init(behavior: Behavior) {
        self.behavior = behavior
    }

    /// Responses are stored as proposed.
    public static let cache = ResponseCacher(behavior: .cache)
    /// Responses are not stored.
    public static let doNotCache = ResponseCacher(behavior: .doNotCache)

    /// Responses are stored as `closure` changes them, or not when it returns `nil`.
    public static func modify(using closure: @escaping @Sendable (DataTask, CachedResponse) -> CachedResponse?) -> ResponseCacher {
        ResponseCacher(behavior: .modify(closure))
    }

    /// The cacher as the session's will-cache hook is written, to take its place for a task.
    var hook: @Sendable (SessionManager, DataTask, CachedResponse) -> CachedResponse? {
        switch self.behavior {
        case .cache: { _, _, cached in cached }
        case .doNotCache: { _, _, _ in nil }
        case .modify(let closure): { _, task, cached in closure(task, cached) }
        }
    }
}
