import Foundation
import HTTPTypes

/// What an `async` request returns: the serialized value with the request that got it, the
/// response head and the body it was made from.
public struct DataResponse<Value: Sendable>: Sendable {
    /// The request that was answered (after redirects).
    public let request: Request
    /// The response head.
    public let response: HTTPResponse
    /// The body as received (absent when there was none).
    public let data: Data?
    /// What the response serializer made of the body.
    public let value: Value
    /// Where the response came from: the network, or the session's
    /// ``SessionConfiguration/responseCache``.
    public let source: ResponseSource
    /// The task's timings and sizes (``TaskMetrics``), when it recorded them.
    public let metrics: TaskMetrics?

    /// Makes a response value.
    public init(
        request: Request, response: HTTPResponse, data: Data?, value: Value, source: ResponseSource = .network, metrics: TaskMetrics? = nil
    ) {
        self.metrics = metrics
        self.request = request
        self.response = response
        self.data = data
        self.value = value
        self.source = source
    }
}

extension DataResponse {
    /// The same response with `transform` applied to its value: Alamofire's `map`, and its
    /// `tryMap` when `transform` throws (the error is thrown as it is, typed).
    ///
    /// ```swift
    /// let name = try await manager.get("user", as: User.self).map(\.name)
    /// ```
    ///
    /// A failed call has no response to map: it throws a ``CourierError`` that keeps the request,
    /// the response head and body when there were any, and the task's metrics
    /// (``CourierError/metrics``); map it in a `catch` (Alamofire's `mapError`).
    public func map<NewValue: Sendable, Failure: Error>(
        _ transform: (Value) throws(Failure) -> NewValue
    ) throws(Failure) -> DataResponse<NewValue> {
        DataResponse<NewValue>(
            request: self.request, response: self.response, data: self.data, value: try transform(self.value), source: self.source,
            metrics: self.metrics)
    }
}
