/// A type that can stand for an empty response body, so a ``DecodableResponseSerializer`` of it
/// succeeds on a 204, a 205, or a body-less answer to `HEAD` (Alamofire's `EmptyResponse`).
///
/// ```swift
/// struct Accepted: Decodable, EmptyResponse {
///     var id: String?
///     static func emptyValue() -> Accepted { Accepted(id: nil) }
/// }
/// ```
public protocol EmptyResponse: Sendable {
    /// The value that stands for "no body".
    static func emptyValue() -> Self
}

/// A `Decodable` value for responses that carry no body: decode into it when only the status
/// matters (`DecodableResponseSerializer<Empty>`). A non-empty body is decoded as JSON `{}`-like
/// content and ignored.
public struct Empty: Codable, Sendable, Hashable, EmptyResponse {
    /// The value.
    public static let value = Empty()

    /// The empty value.
    public init() {}

    public init(from decoder: any Decoder) throws {}

    public func encode(to encoder: any Encoder) throws {}

    public static func emptyValue() -> Empty { .value }
}
