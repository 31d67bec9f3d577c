import Foundation
import HTTPTypes

extension HTTPSessionManager {
    /// Sends a request for any method and returns what `serializer` makes of the response.
    /// - Throws: ``CourierError`` when the request cannot be built, the exchange fails or the
    ///   serializer rejects the response.
    public func response<Serializer: ResponseSerializer>(
        method: HTTPRequest.Method,
        urlString: String,
        parameters: (any Sendable)? = nil,
        headers: HTTPFields = [:],
        serializer: Serializer,
        uploadProgress: ProgressHandler? = nil,
        downloadProgress: ProgressHandler? = nil
    ) async throws(CourierError) -> DataResponse<Serializer.Output> {
        let request = try self.request(method: method, urlString: urlString, parameters: parameters, headers: headers)
        return try await self.response(for: request, serializer: serializer, uploadProgress: uploadProgress, downloadProgress: downloadProgress)
    }

    /// Sends a request and returns what the manager's ``SessionManager/responseSerializer`` makes of it.
    public func response(
        method: HTTPRequest.Method,
        urlString: String,
        parameters: (any Sendable)? = nil,
        headers: HTTPFields = [:]
    ) async throws(CourierError) -> DataResponse<(any Sendable)?> {
        try await self.response(
            method: method, urlString: urlString, parameters: parameters, headers: headers,
            serializer: ErasedResponseSerializer(self.responseSerializer))
    }

    /// GET, returning the serialized object (JSON by default) with the response.
    public func get(_ urlString: String, parameters: Parameters? = nil, headers: HTTPFields = [:]) async throws(CourierError) -> DataResponse<(any Sendable)?> {
        try await self.response(method: .get, urlString: urlString, parameters: parameters, headers: headers)
    }

    /// HEAD, returning the response head.
    public func head(_ urlString: String, parameters: Parameters? = nil, headers: HTTPFields = [:]) async throws(CourierError) -> HTTPResponse {
        try await self.response(method: .head, urlString: urlString, parameters: parameters, headers: headers).response
    }

    /// POST, returning the serialized object with the response.
    public func post(_ urlString: String, parameters: Parameters? = nil, headers: HTTPFields = [:]) async throws(CourierError) -> DataResponse<(any Sendable)?> {
        try await self.response(method: .post, urlString: urlString, parameters: parameters, headers: headers)
    }

    /// PUT, returning the serialized object with the response.
    public func put(_ urlString: String, parameters: Parameters? = nil, headers: HTTPFields = [:]) async throws(CourierError) -> DataResponse<(any Sendable)?> {
        try await self.response(method: .put, urlString: urlString, parameters: parameters, headers: headers)
    }

    /// PATCH, returning the serialized object with the response.
    public func patch(_ urlString: String, parameters: Parameters? = nil, headers: HTTPFields = [:]) async throws(CourierError) -> DataResponse<(any Sendable)?> {
        try await self.response(method: .patch, urlString: urlString, parameters: parameters, headers: headers)
    }

    /// DELETE, returning the serialized object with the response.
    public func delete(_ urlString: String, parameters: Parameters? = nil, headers: HTTPFields = [:]) async throws(CourierError) -> DataResponse<(any Sendable)?> {
        try await self.response(method: .delete, urlString: urlString, parameters: parameters, headers: headers)
    }
}

/// A manager's serializer, whatever its output, seen as one producing `(any Sendable)?`.
struct ErasedResponseSerializer: ResponseSerializer {
    let base: any ResponseSerializer

    init(_ base: any ResponseSerializer) { self.base = base }

    func responseObject(for response: HTTPResponse?, data: Data?) throws(CourierError) -> (any Sendable)? {
        // An optional output opened as a generic value arrives boxed: unwrap it.
        OptionalFlattening.flattened(try Self.open(self.base, response: response, data: data))
    }

    func validate(_ response: HTTPResponse?, data: Data?) throws(CourierError) {
        try self.base.validate(response, data: data)
    }

    /// The base's own value and error together (a refused body's object beside its error). The
    /// double optional (`Output?`) makes this the witness of the requirement: with a single one it
    /// was an overload, and the protocol's default, which gives no object beside an error, was
    /// called instead. `.some(nil)` is "validated, no object".
    func serialize(response: HTTPResponse?, data: Data?) -> (object: (any Sendable)??, error: CourierError?) {
        let (object, error) = self.base.serialize(response: response, data: data)
        return (.some(OptionalFlattening.flattened(object)), error)
    }

    private static func open<S: ResponseSerializer>(_ serializer: S, response: HTTPResponse?, data: Data?) throws(CourierError) -> (any Sendable)? {
        try serializer.responseObject(for: response, data: data)
    }
}

extension HTTPSessionManager {
    /// Sends a request whose parameters are an `Encodable` value, written by `encoder`
    /// (``JSONParameterEncoder`` or ``URLEncodedFormParameterEncoder``), and returns what
    /// `serializer` makes of the response. The manager's request serializer still supplies the
    /// headers and options.
    ///
    /// `encoder` has no default: without it, a call with a dictionary of parameters is
    /// ``response(method:urlString:parameters:headers:serializer:uploadProgress:downloadProgress:)``,
    /// which writes them with the manager's ``requestSerializer`` (a query string for GET, as
    /// AFNetworking does), not a JSON body.
    public func response<Value: Encodable & Sendable, Serializer: ResponseSerializer>(
        method: HTTPRequest.Method,
        urlString: String,
        parameters: Value?,
        encoder: any ParameterEncoder,
        headers: HTTPFields = [:],
        serializer: Serializer
    ) async throws(CourierError) -> DataResponse<Serializer.Output> {
        var request = try self.request(method: method, urlString: urlString, parameters: nil, headers: headers)
        // The serializer gives a body method an empty form body for nil parameters, as
        // AFNetworking does; the encoder writes the body here, so start from none.
        request.body = .empty
        if headers[.contentType] == nil { request.headerFields[.contentType] = nil }
        request = try encoder.encode(parameters, into: request)
        return try await self.response(for: request, serializer: serializer)
    }
}
