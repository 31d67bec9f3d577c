import Dispatch
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers

extension HTTPSessionManager {
    /// Called with the task and the serialized response object.
    public typealias Success = @Sendable (DataTask, (any Sendable)?) -> Void
    /// Called with the task (nil when the request could not be built) and the error.
    public typealias Failure = @Sendable (DataTask?, CourierError) -> Void
    /// Called with a task's upload or download progress.
    public typealias ProgressHandler = @Sendable (Progress) -> Void

    /// Makes and resumes a data task for any method (AFNetworking's
    /// `dataTaskWithHTTPMethod:URLString:parameters:headers:uploadProgress:downloadProgress:success:failure:`).
    ///
    /// When the request cannot be built (a bad URL, parameters the serializer cannot encode),
    /// `failure` is called with a nil task, asynchronously on the completion queue, and no task is
    /// made.
    /// - Returns: The running task, or nil when the request could not be built.
    @discardableResult
    public func dataTask(
        method: HTTPRequest.Method,
        urlString: String,
        parameters: (any Sendable)? = nil,
        headers: HTTPFields = [:],
        uploadProgress: ProgressHandler? = nil,
        downloadProgress: ProgressHandler? = nil,
        success: Success? = nil,
        failure: Failure? = nil
    ) -> DataTask? {
        self.resumedDataTask(
            building: { () throws(CourierError) -> Request in
                try self.request(method: method, urlString: urlString, parameters: parameters, headers: headers)
            },
            uploadProgress: uploadProgress, downloadProgress: downloadProgress, success: success, failure: failure)
    }

    /// Builds a request with `build`, then makes and resumes its data task, routing the end to
    /// `success` or `failure`; when `build` throws, calls `failure` with a nil task,
    /// asynchronously on the completion queue, and makes no task.
    func resumedDataTask(
        building build: () throws(CourierError) -> Request,
        uploadProgress: ProgressHandler?,
        downloadProgress: ProgressHandler?,
        success: Success?,
        failure: Failure?
    ) -> DataTask? {
        let request: Request
        do {
            request = try build()
        } catch {
            let (queue, group) = self.settings.withLockedValue { ($0.completionQueue ?? Self.mainQueue, $0.completionGroup) }
            queue.async(group: group) { failure?(nil, error) }
            return nil
        }
        // The handler is handed its task: no box to reach it through.
        let handler = CompletionHandler.withTask { task, _, object, error in
            guard let task = task as? DataTask else { return }
            if let error {
                failure?(task, error)
            } else {
                success?(task, object)
            }
        }
        let task = self.makeTask(
            DataTask.self, request: request, completion: .handler(self.responseSerializer, handler), uploadProgress: uploadProgress,
            downloadProgress: downloadProgress)
        task.resume()
        return task
    }

    /// GET: parameters go into the query.
    @discardableResult
    public func get(
        _ urlString: String, parameters: Parameters? = nil, headers: HTTPFields = [:],
        progress: ProgressHandler? = nil, success: Success? = nil, failure: Failure? = nil
    ) -> DataTask? {
        self.dataTask(
            method: .get, urlString: urlString, parameters: parameters, headers: headers,
            downloadProgress: progress, success: success, failure: failure)
    }

    /// HEAD: parameters go into the query; `success` gets the task only (there is no body).
    @discardableResult
    public func head(
        _ urlString: String, parameters: Parameters? = nil, headers: HTTPFields = [:],
        success: (@Sendable (DataTask) -> Void)? = nil, failure: Failure? = nil
    ) -> DataTask? {
        self.dataTask(
            method: .head, urlString: urlString, parameters: parameters, headers: headers,
            success: { task, _ in success?(task) }, failure: failure)
    }

    /// POST: parameters go into the body.
    @discardableResult
    public func post(
        _ urlString: String, parameters: Parameters? = nil, headers: HTTPFields = [:],
        progress: ProgressHandler? = nil, success: Success? = nil, failure: Failure? = nil
    ) -> DataTask? {
        self.dataTask(
            method: .post, urlString: urlString, parameters: parameters, headers: headers,
            uploadProgress: progress, success: success, failure: failure)
    }

    /// PUT: parameters go into the body.
    @discardableResult
    public func put(
        _ urlString: String, parameters: Parameters? = nil, headers: HTTPFields = [:],
        success: Success? = nil, failure: Failure? = nil
    ) -> DataTask? {
        self.dataTask(method: .put, urlString: urlString, parameters: parameters, headers: headers, success: success, failure: failure)
    }

    /// PATCH: parameters go into the body.
    @discardableResult
    public func patch(
        _ urlString: String, parameters: Parameters? = nil, headers: HTTPFields = [:],
        success: Success? = nil, failure: Failure? = nil
    ) -> DataTask? {
        self.dataTask(method: .patch, urlString: urlString, parameters: parameters, headers: headers, success: success, failure: failure)
    }

    /// DELETE: parameters go into the query.
    @discardableResult
    public func delete(
        _ urlString: String, parameters: Parameters? = nil, headers: HTTPFields = [:],
        success: Success? = nil, failure: Failure? = nil
    ) -> DataTask? {
        self.dataTask(method: .delete, urlString: urlString, parameters: parameters, headers: headers, success: success, failure: failure)
    }
}
