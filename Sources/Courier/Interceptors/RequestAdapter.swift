import Foundation
import Logging

/// Changes a request before each attempt to send it: adds a header, signs it, compresses its
/// body, or fails it (Alamofire's `RequestAdapter`, as an `async` function).
///
/// A session runs its adapters before every attempt of a task, the first and each retry, always
/// starting from the request the task was made with, so an adapter never sees its own output.
/// Throwing fails the task before anything is sent: a ``CourierError`` as it is, any other error
/// wrapped in one with code ``CourierError/Code/requestAdaptationFailed``. See
/// ``RequestInterceptor`` for the order in which adapters run.
///
/// ```swift
/// struct APIKey: RequestAdapter {
///     let key: String
///     func adapt(_ request: Request, using context: AdaptationContext) async throws -> Request {
///         var request = request
///         request.headerFields[HTTPField.Name("X-API-Key")!] = key
///         return request
///     }
/// }
/// ```
public protocol RequestAdapter: Sendable {
    /// Returns the request to send in place of `request`.
    /// - Parameters:
    ///   - request: The request as the task was made with it, changed by the adapters before this one.
    ///   - context: Which task and attempt this is.
    /// - Throws: To fail the task before it is sent.
    func adapt(_ request: Request, using context: AdaptationContext) async throws -> Request
}

/// What an adapter knows about the attempt it prepares.
public struct AdaptationContext: Sendable {
    /// The identifier of the task (``SessionTask/taskIdentifier``).
    public var taskIdentifier: Int
    /// How many times the task was retried before this attempt: 0 for the first.
    public var retryCount: Int
    /// The request's logger (``Request/logger``, else the session's; a no-op logger when neither is set).
    public var logger: Logger

    /// A context; sessions make these, tests of adapters may too.
    public init(taskIdentifier: Int, retryCount: Int = 0, logger: Logger = .courierNoOp) {
        self.taskIdentifier = taskIdentifier
        self.retryCount = retryCount
        self.logger = logger
    }
}

/// A ``RequestAdapter`` made of a closure.
public struct Adapter: RequestInterceptor {
    private let body: @Sendable (Request, AdaptationContext) async throws -> Request

    /// An adapter that runs `body`.
    public init(_ body: @escaping @Sendable (Request, AdaptationContext) async throws -> Request) {
        self.body = body
    }

    public func adapt(_ request: Request, using context: AdaptationContext) async throws -> Request {
        try await self.body(request, context)
    }

    /// False: an adapter never retries.
    public var retriesSerializationFailures: Bool { false }
}

extension Logger {
    /// A logger that drops everything: what Courier uses when nobody gave it one.
    public static let courierNoOp = Logger(label: "courier.no-op", factory: { _ in SwiftLogNoOpLogHandler() })
}
