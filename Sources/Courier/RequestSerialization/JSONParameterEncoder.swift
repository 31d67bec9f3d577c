import Foundation
import HTTPTypes

/// Encodes an `Encodable` value as a JSON body with a `JSONEncoder` (Alamofire's
/// `JSONParameterEncoder`), and sets `Content-Type: application/json` unless the request has one.
///
/// ```swift
/// struct Login: Encodable, Sendable { var user: String; var password: String }
/// var request = Request(method: .post, url: URL(string: "https://example.com/login")!)
/// request = try JSONParameterEncoder.default.encode(Login(user: "ann", password: "pw"), into: request)
/// // body {"password":"pw","user":"ann"}
/// ```
public struct JSONParameterEncoder: ParameterEncoder {
    /// The encoder used; configure its strategies for dates, data, keys and non-finite numbers.
    public var encoder: JSONEncoder

    /// An encoder with `.sortedKeys`, so the bytes do not depend on hashing.
    public static var `default`: JSONParameterEncoder { JSONParameterEncoder() }

    /// An encoder with `.prettyPrinted` and `.sortedKeys`.
    public static var prettyPrinted: JSONParameterEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return JSONParameterEncoder(encoder: encoder)
    }

    /// Uses `encoder`, or when nil, a `JSONEncoder` with `.sortedKeys`.
    public init(encoder: JSONEncoder? = nil) {
        if let encoder {
            self.encoder = encoder
        } else {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            self.encoder = encoder
        }
    }

    /// Returns `request` with `parameters` as its JSON body; `nil` parameters return it unchanged.
    /// - Throws: ``CourierError/Code/parameterEncodingFailed`` naming the coding path of a value the
    ///   encoder refused (NaN or an infinity without a non-conforming-float strategy, a throwing
    ///   `encode(to:)`).
    public func encode<Parameters: Encodable & Sendable>(_ parameters: Parameters?, into request: Request) throws(CourierError) -> Request {
        guard let parameters else { return request }
        var request = request
        let data: Data
        do {
            data = try self.encoder.encode(parameters)
        } catch let error as EncodingError {
            throw CourierError(
                .parameterEncodingFailed,
                "the value at '\(error.parameterPath)' could not be encoded as JSON: \(error.reason)",
                request: request,
                underlyingError: error
            )
        } catch {
            throw CourierError(.parameterEncodingFailed, "the parameters could not be encoded as JSON", request: request, underlyingError: error)
        }
        if !request.headerFields.contains(.contentType) {
            request.headerFields[.contentType] = "application/json"
        }
        request.body = .data(data)
        return request
    }
}
