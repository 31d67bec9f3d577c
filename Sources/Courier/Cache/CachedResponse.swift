import Foundation
import HTTPTypes

/// A response as a ``ResponseCache`` keeps it (URLSession's `CachedURLResponse`): the head, the
/// whole body, the URL it answered, when it was fetched, and where it may be stored.
///
/// A session hands one to ``SessionManager/Hooks/dataTaskWillCacheResponse`` before storing it
/// (AFNetworking's `setDataTaskWillCacheResponseBlock:`): return it changed, with a narrower
/// ``storagePolicy``, or nil to store nothing.
///
public struct CachedResponse: Sendable {
    /// Where a response may be stored.
    public enum StoragePolicy: Sendable, Hashable {
        /// In memory and on disk.
        case allowed
        /// In memory only.
        case allowedInMemoryOnly
        /// Nowhere.
        case notAllowed
    }

    /// The response head as it was received (or as last updated by a `304 Not Modified`).
    public var response: HTTPResponse
    /// The whole body.
    public var data: Data
    /// The URL the response answered.
    public var url: URL
    /// Where it may be stored.
    public var storagePolicy: StoragePolicy
    /// When the request that fetched (or last validated) it went out.
    public var requestDate: Date
    /// When its head arrived.
    public var responseDate: Date

    /// Makes a cached response.
    /// - Parameters:
    ///   - response: The response head.
    ///   - data: The body.
    ///   - url: The URL it answered.
    ///   - storagePolicy: Where it may be stored (anywhere by default).
    ///   - requestDate: When its request went out (now by default).
    ///   - responseDate: When its head arrived (`requestDate` by default).
    public init(
        response: HTTPResponse,
        data: Data,
        url: URL,
        storagePolicy: StoragePolicy = .allowed,
        requestDate: Date = Date(),
        responseDate: Date? = nil
    ) {
        self.response = response
        self.data = data
        self.url = url
        self.storagePolicy = storagePolicy
        self.requestDate = requestDate
        self.responseDate = responseDate ?? requestDate
    }
}

/// Where a task's response came from: the network, or a ``ResponseCache``.
///
/// Read it on ``DataResponse/source``, ``SessionTask/responseSource`` or in the user info of
/// ``Foundation/NSNotification/Name/taskDidComplete`` (``TaskDidCompleteKey/responseSource``).
public enum ResponseSource: String, Sendable, Hashable, CustomStringConvertible {
    /// The server sent the response (the cache, if any, had nothing usable).
    case network
    /// The cache served the response without contacting the server.
    case cache
    /// The cache served a stored response after the server confirmed it with
    /// `304 Not Modified` (its headers updated from the 304).
    case revalidatedCache

    /// Whether the body came from the cache.
    public var isFromCache: Bool { self != .network }

    public var description: String { self.rawValue }
}
