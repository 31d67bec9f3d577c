import Dispatch
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers

/// AFNetworking 2.x's `AFHTTPRequestOperationManager`: a base URL, a request and a response
/// serializer, and one method per HTTP verb that builds an ``HTTPRequestOperation`` and adds it to
/// ``operationQueue``.
///
/// ```swift
/// let manager = HTTPRequestOperationManager(baseURL: URL(string: "https://api.example.com/v1"))
/// manager.operationQueue.maxConcurrentOperationCount = 2
/// manager.get("users", parameters: ["page": 2], success: { operation, object in
///     print(object ?? "")
/// }, failure: { operation, error in
///     print(error.message)
/// })
/// ```
///
/// Requests are built by an ``HTTPSessionManager`` that the operation manager owns (its URL
/// joining, request serializer and engine; AFNetworking's `reachabilityManager`, credentials and
/// security policy are its settings: `sessionManager.reachabilityManager`); call
/// ``invalidate(cancelingOperations:)-1o0ak`` when done with a manager that is not meant to live
/// as long as the process.
public final class HTTPRequestOperationManager: @unchecked Sendable {
    /// Called with the operation and the serialized response object.
    public typealias Success = HTTPRequestOperation.Success
    /// Called with the operation (nil when the request could not be built) and the error.
    public typealias Failure = @Sendable (HTTPRequestOperation?, CourierError) -> Void

    private struct Settings {
        var responseSerializer: any ResponseSerializer = JSONResponseSerializer()
        var completionQueue: DispatchQueue?
        var completionGroup: DispatchGroup?
    }

    /// The manager that builds the requests and whose engine carries them.
    public let sessionManager: HTTPSessionManager
    /// The queue the verb methods add their operations to.
    public let operationQueue: OperationQueue
    private let settings = NIOLockedValueBox(Settings())

    /// A manager on a new engine.
    /// - Parameters:
    ///   - baseURL: The URL relative URL strings resolve against.
    ///   - configuration: Timeouts, limits, redirects, proxy.
    ///   - securityPolicy: Which servers to trust.
    public convenience init(baseURL: URL? = nil, configuration: SessionConfiguration = .default, securityPolicy: SecurityPolicy = .default) {
        self.init(sessionManager: HTTPSessionManager(baseURL: baseURL, configuration: configuration, securityPolicy: securityPolicy))
    }

    /// A manager whose requests `sessionManager` builds and carries.
    public init(sessionManager: HTTPSessionManager) {
        self.sessionManager = sessionManager
        self.operationQueue = OperationQueue()
        self.operationQueue.name = "courier.operation-manager"
    }

    /// The URL relative URL strings resolve against.
    public var baseURL: URL? { self.sessionManager.baseURL }

    /// Builds requests from parameters (``HTTPRequestSerializer`` by default); the session
    /// manager's.
    public var requestSerializer: any RequestSerializer {
        get { self.sessionManager.requestSerializer }
        set { self.sessionManager.requestSerializer = newValue }
    }

    /// Given to each operation the manager makes; ``JSONResponseSerializer`` by default.
    public var responseSerializer: any ResponseSerializer {
        get { self.settings.withLockedValue { $0.responseSerializer } }
        set { self.settings.withLockedValue { $0.responseSerializer = newValue } }
    }

    /// Given to each operation: where `success`, `failure` and progress run; nil means the main queue.
    public var completionQueue: DispatchQueue? {
        get { self.settings.withLockedValue { $0.completionQueue } }
        set { self.settings.withLockedValue { $0.completionQueue = newValue } }
    }

    /// Given to each operation: the group `success` or `failure` runs in.
    public var completionGroup: DispatchGroup? {
        get { self.settings.withLockedValue { $0.completionGroup } }
        set { self.settings.withLockedValue { $0.completionGroup = newValue } }
    }

    // MARK: Operations

    /// An operation for `request` with the manager's serializer, queue and group settings and
    /// `success`/`failure` as its completion; not added to the queue (AFNetworking's
    /// `HTTPRequestOperationWithRequest:success:failure:`).
    public func httpRequestOperation(with request: Request, success: Success?, failure: Failure?) -> HTTPRequestOperation {
        let operation = HTTPRequestOperation(request: request, sessionManager: self.sessionManager)
        let settings = self.settings.withLockedValue { $0 }
        operation.responseSerializer = settings.responseSerializer
        operation.completionQueue = settings.completionQueue
        operation.completionGroup = settings.completionGroup
        var operationFailure: HTTPRequestOperation.Failure?
        if let failure {
            operationFailure = { @Sendable operation, error in failure(operation, error) }
        }
        operation.setCompletionBlockWithSuccess(success, failure: operationFailure)
        return operation
    }

    /// Builds a request with `build`, then makes its operation and adds it to the queue; when
    /// `build` throws, calls `failure` with a nil operation, asynchronously on the completion
    /// queue, and makes none.
    private func enqueuedOperation(
        building build: () throws(CourierError) -> Request,
        success: Success?,
        failure: Failure?
    ) -> HTTPRequestOperation? {
        let request: Request
        do {
            request = try build()
        } catch {
            let (queue, group) = self.settings.withLockedValue { ($0.completionQueue ?? SessionManager.mainQueue, $0.completionGroup) }
            queue.async(group: group) { failure?(nil, error) }
            return nil
        }
        let operation = self.httpRequestOperation(with: request, success: success, failure: failure)
        self.operationQueue.addOperation(operation)
        return operation
    }

    /// Makes and queues an operation for any method.
    @discardableResult
    public func operation(
        method: HTTPRequest.Method,
        urlString: String,
        parameters: (any Sendable)? = nil,
        headers: HTTPFields = [:],
        success: Success? = nil,
        failure: Failure? = nil
    ) -> HTTPRequestOperation? {
        self.enqueuedOperation(
            building: { () throws(CourierError) -> Request in
                try self.sessionManager.request(method: method, urlString: urlString, parameters: parameters, headers: headers)
            },
            success: success, failure: failure)
    }

    /// GET: parameters go into the query.
    @discardableResult
    public func get(
        _ urlString: String, parameters: Parameters? = nil, headers: HTTPFields = [:],
        success: Success? = nil, failure: Failure? = nil
    ) -> HTTPRequestOperation? {
        self.operation(method: .get, urlString: urlString, parameters: parameters, headers: headers, success: success, failure: failure)
    }

    /// HEAD: `success` gets the operation only (there is no body).
    @discardableResult
    public func head(
        _ urlString: String, parameters: Parameters? = nil, headers: HTTPFields = [:],
        success: (@Sendable (HTTPRequestOperation) -> Void)? = nil, failure: Failure? = nil
    ) -> HTTPRequestOperation? {
        var headSuccess: Success?
        if let success {
            headSuccess = { @Sendable operation, _ in success(operation) }
        }
        return self.operation(
            method: .head, urlString: urlString, parameters: parameters, headers: headers, success: headSuccess, failure: failure)
    }

    /// POST: parameters go into the body as the request serializer encodes them.
    @discardableResult
    public func post(
        _ urlString: String, parameters: Parameters? = nil, headers: HTTPFields = [:],
        success: Success? = nil, failure: Failure? = nil
    ) -> HTTPRequestOperation? {
        self.operation(method: .post, urlString: urlString, parameters: parameters, headers: headers, success: success, failure: failure)
    }

    /// POST with a `multipart/form-data` body: `parameters` become form fields and `block`
    /// appends files, data and streams.
    @discardableResult
    public func post(
        _ urlString: String, parameters: Parameters? = nil, headers: HTTPFields = [:],
        constructingBodyWith block: MultipartFormConstruction,
        success: Success? = nil, failure: Failure? = nil
    ) -> HTTPRequestOperation? {
        self.enqueuedOperation(
            building: { () throws(CourierError) -> Request in
                try self.sessionManager.multipartFormRequest(
                    method: .post, urlString: urlString, parameters: parameters.map { $0 as any Sendable }, headers: headers,
                    constructingBodyWith: block)
            },
            success: success, failure: failure)
    }

    /// PUT: parameters go into the body.
    @discardableResult
    public func put(
        _ urlString: String, parameters: Parameters? = nil, headers: HTTPFields = [:],
        success: Success? = nil, failure: Failure? = nil
    ) -> HTTPRequestOperation? {
        self.operation(method: .put, urlString: urlString, parameters: parameters, headers: headers, success: success, failure: failure)
    }

    /// PATCH: parameters go into the body.
    @discardableResult
    public func patch(
        _ urlString: String, parameters: Parameters? = nil, headers: HTTPFields = [:],
        success: Success? = nil, failure: Failure? = nil
    ) -> HTTPRequestOperation? {
        self.operation(method: .patch, urlString: urlString, parameters: parameters, headers: headers, success: success, failure: failure)
    }

    /// DELETE: parameters go into the query.
    @discardableResult
    public func delete(
        _ urlString: String, parameters: Parameters? = nil, headers: HTTPFields = [:],
        success: Success? = nil, failure: Failure? = nil
    ) -> HTTPRequestOperation? {
        self.operation(method: .delete, urlString: urlString, parameters: parameters, headers: headers, success: success, failure: failure)
    }

    // MARK: Ending

    /// Cancels the queued and running operations when `cancelingOperations`, else lets the
    /// running ones finish; then invalidates the session manager (its engine closes once no task
    /// is left). Operations that start after this fail with ``CourierError/Code/sessionInvalidated``.
    /// Returns at once.
    public func invalidate(cancelingOperations: Bool) {
        if cancelingOperations {
            self.operationQueue.cancelAllOperations()
        }
        self.sessionManager.invalidate(cancelingTasks: cancelingOperations)
    }

    /// Ends the manager as ``invalidate(cancelingOperations:)-1o0ak`` does and returns once its engine
    /// has shut down: every task already started has ended and its operation has finished.
    ///
    /// The operations' `success` and `failure` blocks may still run after it returns (they are
    /// queued on the completion queue once their operation finished), and so may operations
    /// still waiting in ``operationQueue``: they finish when the queue starts them, cancelled, or
    /// failing with ``CourierError/Code/sessionInvalidated``.
    public func invalidate(cancelingOperations: Bool) async {
        if cancelingOperations {
            self.operationQueue.cancelAllOperations()
        }
        await self.sessionManager.invalidate(cancelingTasks: cancelingOperations)
    }
}
