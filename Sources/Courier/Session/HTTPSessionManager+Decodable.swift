import Foundation
import HTTPTypes

extension HTTPSessionManager {
    /// Sends a request and decodes the body as `type` (JSON by default), with the response.
    ///
    /// ```swift
    /// struct User: Decodable, Sendable { let id: Int; let name: String }
    /// let user = try await manager.get("users/1", as: User.self).value
    /// ```
    /// - Throws: ``CourierError``: the request, the exchange, validation (status 200–299), or
    ///   decoding (``CourierError/Code/responseSerializationFailed``, the data kept).
    public func response<Value: Decodable & Sendable>(
        method: HTTPRequest.Method,
        urlString: String,
        parameters: Parameters? = nil,
        headers: HTTPFields = [:],
        as type: Value.Type,
        decoder: any DataDecoder = JSONDecoder()
    ) async throws(CourierError) -> DataResponse<Value> {
        try await self.response(
            method: method, urlString: urlString, parameters: parameters, headers: headers,
            serializer: DecodableResponseSerializer(type, decoder: decoder))
    }

    /// GET, decoding the body as `type`.
    public func get<Value: Decodable & Sendable>(
        _ urlString: String, parameters: Parameters? = nil, headers: HTTPFields = [:],
        as type: Value.Type, decoder: any DataDecoder = JSONDecoder()
    ) async throws(CourierError) -> DataResponse<Value> {
        try await self.response(method: .get, urlString: urlString, parameters: parameters, headers: headers, as: type, decoder: decoder)
    }

    /// POST, decoding the body as `type`.
    public func post<Value: Decodable & Sendable>(
        _ urlString: String, parameters: Parameters? = nil, headers: HTTPFields = [:],
        as type: Value.Type, decoder: any DataDecoder = JSONDecoder()
    ) async throws(CourierError) -> DataResponse<Value> {
        try await self.response(method: .post, urlString: urlString, parameters: parameters, headers: headers, as: type, decoder: decoder)
    }

    /// PUT, decoding the body as `type`.
    public func put<Value: Decodable & Sendable>(
        _ urlString: String, parameters: Parameters? = nil, headers: HTTPFields = [:],
        as type: Value.Type, decoder: any DataDecoder = JSONDecoder()
    ) async throws(CourierError) -> DataResponse<Value> {
        try await self.response(method: .put, urlString: urlString, parameters: parameters, headers: headers, as: type, decoder: decoder)
    }

    /// PATCH, decoding the body as `type`.
    public func patch<Value: Decodable & Sendable>(
        _ urlString: String, parameters: Parameters? = nil, headers: HTTPFields = [:],
        as type: Value.Type, decoder: any DataDecoder = JSONDecoder()
    ) async throws(CourierError) -> DataResponse<Value> {
        try await self.response(method: .patch, urlString: urlString, parameters: parameters, headers: headers, as: type, decoder: decoder)
    }

    /// DELETE, decoding the body as `type`.
    public func delete<Value: Decodable & Sendable>(
        _ urlString: String, parameters: Parameters? = nil, headers: HTTPFields = [:],
        as type: Value.Type, decoder: any DataDecoder = JSONDecoder()
    ) async throws(CourierError) -> DataResponse<Value> {
        try await self.response(method: .delete, urlString: urlString, parameters: parameters, headers: headers, as: type, decoder: decoder)
    }
}
