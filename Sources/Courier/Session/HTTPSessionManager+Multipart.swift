import Dispatch
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers

extension HTTPSessionManager {
    /// Builds a `multipart/form-data` POST for a verb: resolves the URL, asks the request serializer
    /// for the form (parameters first, then what `block` appends) and adds `headers`, which win.
    func multipartFormRequest(
        method: HTTPRequest.Method,
        urlString: String,
        parameters: (any Sendable)?,
        headers: HTTPFields,
        boundary: String? = nil,
        constructingBodyWith block: MultipartFormConstruction
    ) throws(CourierError) -> Request {
        let absolute = try self.absoluteURLString(for: urlString)
        var request = try self.requestSerializer.multipartFormRequest(
            method: method, urlString: absolute, parameters: parameters, boundary: boundary, constructingBodyWith: block)
        request.headerFields.replaceFields(named: headers)
        return request
    }

    /// POST with a `multipart/form-data` body: `parameters` become form fields and `block`
    /// appends files, data and streams (AFNetworking's
    /// `POST:parameters:headers:constructingBodyWithBlock:progress:success:failure:`).
    ///
    /// ```swift
    /// manager.post("upload", parameters: ["album": "cats"], constructingBodyWith: { form in
    ///     try form.appendPart(withFileURL: URL(fileURLWithPath: "/tmp/cat.jpg"), name: "photo")
    /// }, progress: { print($0.fractionCompleted) },
    /// success: { task, object in print(object ?? "") },
    /// failure: { task, error in print(error.message) })
    /// ```
    ///
    /// The body is streamed: each file is opened when its turn comes and read in chunks. The
    /// task is resumed and returned. When the request cannot be built (a bad URL, a missing
    /// file, a parameter with no form-field form, a `block` that throws, a boundary RFC 2046 does
    /// not allow), `failure` is called with a nil task, asynchronously on the completion queue,
    /// and no task is made.
    /// - Parameters:
    ///   - urlString: A URL string, relative to ``baseURL`` or absolute.
    ///   - parameters: Form fields, flattened as the query string flattens them.
    ///   - headers: Header fields that win over the serializer's.
    ///   - boundary: The boundary between parts (Alamofire's `MultipartFormData(boundary:)`), for
    ///     a body that must come out byte for byte the same; nil (the default) for a fresh random one.
    ///   - block: Appends parts after the parameters.
    ///   - progress: Upload progress.
    ///   - success: Called with the task and the serialized response object.
    ///   - failure: Called with the task (nil when the request could not be built) and the error.
    /// - Returns: The running task, or nil when the request could not be built.
    @discardableResult
    public func post(
        _ urlString: String,
        parameters: Parameters? = nil,
        headers: HTTPFields = [:],
        boundary: String? = nil,
        constructingBodyWith block: MultipartFormConstruction,
        progress: ProgressHandler? = nil,
        success: Success? = nil,
        failure: Failure? = nil
    ) -> DataTask? {
        self.resumedDataTask(
            building: { () throws(CourierError) -> Request in
                try self.multipartFormRequest(
                    method: .post, urlString: urlString, parameters: parameters.map { $0 as any Sendable }, headers: headers,
                    boundary: boundary, constructingBodyWith: block)
            },
            uploadProgress: progress, downloadProgress: nil, success: success, failure: failure)
    }

    /// POST with a `multipart/form-data` body, returning the serialized object (JSON by default)
    /// with the response: the async twin of
    /// ``post(_:parameters:headers:boundary:constructingBodyWith:progress:success:failure:)``.
    ///
    /// ```swift
    /// let response = try await manager.post("upload", parameters: ["album": "cats"]) { form in
    ///     try form.appendPart(withFileURL: URL(fileURLWithPath: "/tmp/cat.jpg"), name: "photo")
    /// }
    /// ```
    /// - Throws: ``CourierError`` when the request cannot be built (see
    ///   ``HTTPRequestSerializer/multipartFormRequest(method:urlString:parameters:boundary:constructingBodyWith:)``),
    ///   a file cannot be read as it is sent, the exchange fails or the serializer rejects the response.
    public func post(
        _ urlString: String,
        parameters: Parameters? = nil,
        headers: HTTPFields = [:],
        boundary: String? = nil,
        progress: ProgressHandler? = nil,
        constructingBodyWith block: MultipartFormConstruction
    ) async throws(CourierError) -> DataResponse<(any Sendable)?> {
        let request = try self.multipartFormRequest(
            method: .post, urlString: urlString, parameters: parameters.map { $0 as any Sendable }, headers: headers,
            boundary: boundary, constructingBodyWith: block)
        return try await self.response(for: request, serializer: ErasedResponseSerializer(self.responseSerializer), uploadProgress: progress)
    }
}
