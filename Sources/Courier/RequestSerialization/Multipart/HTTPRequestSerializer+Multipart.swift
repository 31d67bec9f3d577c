import Foundation
import HTTPTypes

/// A closure that appends the parts of a multipart form (AFNetworking's
/// `constructingBodyWithBlock:`). An error it throws stops the request from being built and
/// reaches the caller: a ``CourierError`` as it is, any other wrapped in one with code
/// ``CourierError/Code/invalidRequest``.
public typealias MultipartFormConstruction = (inout MultipartFormData) throws -> Void

extension HTTPRequestSerializer {
    /// Makes a `multipart/form-data` request: `parameters` become form fields, then `block`
    /// appends more parts (AFNetworking's
    /// `multipartFormRequestWithMethod:URLString:parameters:constructingBodyWithBlock:error:`).
    ///
    /// ```swift
    /// let serializer = HTTPRequestSerializer()
    /// let request = try serializer.multipartFormRequest(
    ///     method: .post, urlString: "https://example.com/upload", parameters: ["album": ["id": 7]]
    /// ) { form in
    ///     try form.appendPart(withFileURL: URL(fileURLWithPath: "/tmp/cat.jpg"), name: "photo")
    /// }
    /// // fields "album[id]" = "7" and "photo" (cat.jpg, image/jpeg)
    /// ```
    ///
    /// The serializer's headers and options apply as for any request. The parameters are
    /// flattened as the query string flattens them (`album[id]`, `tags[]`, or the array keys and
    /// booleans of ``queryStringSerializationStyle``), unescaped, and written in
    /// ``stringEncoding``. The request gets `Content-Type: multipart/form-data; boundary=…`,
    /// a `Content-Length` and a body that reads files only as it is sent. When no part is
    /// appended the request has no body and no `Content-Type`, as with AFNetworking's JSON and
    /// property-list serializers (its `AFHTTPRequestSerializer` leaves the empty
    /// `application/x-www-form-urlencoded` body it made for no parameters).
    /// - Parameters:
    ///   - method: Any method that may carry a body; GET and HEAD are refused.
    ///   - urlString: An absolute URL string.
    ///   - parameters: A dictionary of form fields, or nil.
    ///   - block: Appends parts to the form after the parameters.
    /// - Throws: ``CourierError/Code/invalidRequest`` for GET or HEAD;
    ///   ``CourierError/Code/invalidURL`` for a bad URL string;
    ///   ``CourierError/Code/parameterEncodingFailed`` for a parameter with no form-field form;
    ///   what `block` throws, such as ``CourierError/Code/bodyReadFailed`` for a missing file (an
    ///   error of another type is wrapped with code ``CourierError/Code/invalidRequest``).
    public func multipartFormRequest(
        method: HTTPRequest.Method,
        urlString: String,
        parameters: (any Sendable)? = nil,
        constructingBodyWith block: MultipartFormConstruction = { _ in }
    ) throws(CourierError) -> Request {
        try self.multipartFormRequest(method: method, urlString: urlString, parameters: parameters, boundary: nil, constructingBodyWith: block)
    }

    /// Makes a `multipart/form-data` request whose parts are separated by `boundary` (Alamofire's
    /// `MultipartFormData(boundary:)`), for bodies that must come out byte for byte the same:
    /// tests, and uploads whose signature covers the body. Otherwise as
    /// ``multipartFormRequest(method:urlString:parameters:constructingBodyWith:)``.
    ///
    /// ```swift
    /// let request = try HTTPRequestSerializer().multipartFormRequest(
    ///     method: .post, urlString: "https://example.com/upload", parameters: ["album": "cats"],
    ///     boundary: "courier-signed-upload"
    /// ) { _ in }
    /// // Content-Type: multipart/form-data; boundary=courier-signed-upload
    /// ```
    /// - Parameters:
    ///   - method: Any method that may carry a body; GET and HEAD are refused.
    ///   - urlString: An absolute URL string.
    ///   - parameters: A dictionary of form fields, or nil.
    ///   - boundary: The boundary, as ``MultipartFormData/init(boundary:)`` accepts it; nil for a
    ///     fresh random one.
    ///   - block: Appends parts to the form after the parameters.
    /// - Throws: ``CourierError/Code/invalidRequest`` for GET or HEAD, or a boundary RFC 2046 does
    ///   not allow; the other errors of
    ///   ``multipartFormRequest(method:urlString:parameters:constructingBodyWith:)``.
    public func multipartFormRequest(
        method: HTTPRequest.Method,
        urlString: String,
        parameters: (any Sendable)?,
        boundary: String?,
        constructingBodyWith block: MultipartFormConstruction
    ) throws(CourierError) -> Request {
        let request = Request(method: method, url: try Self.url(from: urlString))
        try MultipartFormData.checkMethod(of: request)
        return try MultipartFormData.request(
            self.applyingDefaults(to: request), parameters: parameters, encoding: self.stringEncoding,
            style: self.queryStringSerializationStyle, boundary: boundary, constructingBodyWith: block)
    }

    /// Writes the body of `request` to `fileURL` and returns the request without its body, for
    /// sending the file with ``SessionManager/uploadTask(with:fromFile:progress:completionHandler:)``
    /// (AFNetworking's `requestWithMultipartFormRequest:writingStreamContentsToFile:completionHandler:`).
    ///
    /// The body is streamed to the file chunk by chunk, never held whole in memory. It is written
    /// under a temporary name in the same folder and moved into place only once complete, so a
    /// failure (a full disk, a file of the form that vanished or changed size) leaves no partial
    /// file behind, and an existing file at `fileURL` is replaced only on success. The returned
    /// request keeps its headers, with `Content-Length` set to the bytes written, and its body's
    /// trailer fields (``RequestBody/trailers``), which the upload task sends after the file.
    /// - Parameters:
    ///   - request: A request with a body, usually from
    ///     ``multipartFormRequest(method:urlString:parameters:constructingBodyWith:)``.
    ///   - fileURL: A `file:` URL to write to; an existing regular file there is replaced.
    /// - Throws: ``CourierError/Code/fileSystemFailure`` when the file cannot be created or
    ///   written (a missing or read-only folder, a full disk, a directory at `fileURL`);
    ///   ``CourierError/Code/bodyReadFailed`` when the body cannot be read.
    public func request(
        withMultipartFormRequest request: Request,
        writingStreamContentsToFile fileURL: URL
    ) async throws(CourierError) -> Request {
        let written: Int64
        do {
            written = try await RequestBodyFileWriter.write(request.body, to: fileURL)
        } catch {
            throw error.adding(request: request)
        }
        var request = request
        request.body = RequestBody(.empty, trailers: request.body.trailers)
        request.headerFields[.contentLength] = String(written)
        return request
    }
}

extension MultipartFormData {
    /// Refuses the methods that cannot carry a form (AFNetworking asserts on GET and HEAD).
    static func checkMethod(of request: Request) throws(CourierError) {
        if request.method == .get || request.method == .head {
            throw CourierError(
                .invalidRequest, "\(request.summary): a multipart form is a body, which a \(request.method.rawValue) request cannot carry",
                request: request)
        }
    }

    /// `request` with a form made of `parameters` and whatever `block` appends.
    static func request(
        _ request: Request,
        parameters: (any Sendable)?,
        encoding: String.Encoding,
        style: HTTPRequestSerializer.QueryStringSerializationStyle = .default,
        boundary: String?,
        constructingBodyWith block: MultipartFormConstruction
    ) throws(CourierError) -> Request {
        var form: MultipartFormData
        do {
            form = try boundary.map { boundary throws(CourierError) in try MultipartFormData(boundary: boundary) } ?? MultipartFormData()
        } catch {
            throw error.adding(request: request)
        }
        do {
            if let parameters {
                try form.appendParts(fromParameters: parameters, encoding: encoding, style: style)
            }
            try block(&form)
        } catch {
            throw error.asCourierError(.invalidRequest, "\(request.summary): building the multipart form failed: \(error)", request: request)
        }
        return form.finalizing(request)
    }
}

extension RequestSerializer {
    /// A multipart form request from any serializer: the request it makes for `method` and
    /// `urlString` with no parameters, its body replaced by the form; parameters become form
    /// fields written in UTF-8. ``HTTPRequestSerializer`` and the serializers that wrap one
    /// use their own headers, options and string encoding instead.
    public func multipartFormRequest(
        method: HTTPRequest.Method,
        urlString: String,
        parameters: (any Sendable)?,
        constructingBodyWith block: MultipartFormConstruction
    ) throws(CourierError) -> Request {
        try self.genericMultipartFormRequest(method: method, urlString: urlString, parameters: parameters, boundary: nil, constructingBodyWith: block)
    }

    /// A multipart form request with a chosen boundary from any serializer, made as
    /// ``multipartFormRequest(method:urlString:parameters:constructingBodyWith:)`` makes
    /// one. With a nil boundary it asks the serializer's own
    /// ``multipartFormRequest(method:urlString:parameters:constructingBodyWith:)``, so a
    /// serializer that implements only that one keeps its behaviour.
    public func multipartFormRequest(
        method: HTTPRequest.Method,
        urlString: String,
        parameters: (any Sendable)?,
        boundary: String?,
        constructingBodyWith block: MultipartFormConstruction
    ) throws(CourierError) -> Request {
        guard let boundary else {
            return try self.multipartFormRequest(method: method, urlString: urlString, parameters: parameters, constructingBodyWith: block)
        }
        return try self.genericMultipartFormRequest(
            method: method, urlString: urlString, parameters: parameters, boundary: boundary, constructingBodyWith: block)
    }

    private func genericMultipartFormRequest(
        method: HTTPRequest.Method,
        urlString: String,
        parameters: (any Sendable)?,
        boundary: String?,
        constructingBodyWith block: MultipartFormConstruction
    ) throws(CourierError) -> Request {
        let bare = try self.request(method: method, urlString: urlString, parameters: nil)
        try MultipartFormData.checkMethod(of: bare)
        var request = bare
        // What the serializer wrote for no parameters (an empty form or JSON body) is not the form.
        request.body = .empty
        request.headerFields[.contentType] = nil
        return try MultipartFormData.request(request, parameters: parameters, encoding: .utf8, boundary: boundary, constructingBodyWith: block)
    }
}

extension HTTPRequestSerializerWrapper {
    /// See ``HTTPRequestSerializer/multipartFormRequest(method:urlString:parameters:constructingBodyWith:)``;
    /// the ``base`` serializer builds the request, so a JSON or property-list serializer's form
    /// fields are form fields, not JSON.
    public func multipartFormRequest(
        method: HTTPRequest.Method,
        urlString: String,
        parameters: (any Sendable)? = nil,
        constructingBodyWith block: MultipartFormConstruction = { _ in }
    ) throws(CourierError) -> Request {
        try self.base.multipartFormRequest(method: method, urlString: urlString, parameters: parameters, constructingBodyWith: block)
    }

    /// See ``HTTPRequestSerializer/multipartFormRequest(method:urlString:parameters:boundary:constructingBodyWith:)``.
    public func multipartFormRequest(
        method: HTTPRequest.Method,
        urlString: String,
        parameters: (any Sendable)?,
        boundary: String?,
        constructingBodyWith block: MultipartFormConstruction
    ) throws(CourierError) -> Request {
        try self.base.multipartFormRequest(
            method: method, urlString: urlString, parameters: parameters, boundary: boundary, constructingBodyWith: block)
    }

    /// See ``HTTPRequestSerializer/request(withMultipartFormRequest:writingStreamContentsToFile:)``.
    public func request(
        withMultipartFormRequest request: Request,
        writingStreamContentsToFile fileURL: URL
    ) async throws(CourierError) -> Request {
        try await self.base.request(withMultipartFormRequest: request, writingStreamContentsToFile: fileURL)
    }
}
