import HTTPTypes

/// A credential an ``AuthenticationInterceptor`` applies to requests: an OAuth token, an API key
/// with an expiry (Alamofire's `AuthenticationCredential`).
public protocol AuthenticationCredential: Sendable {
    /// Whether the credential must be refreshed before it is used: true once it expired, and
    /// wisely a little before.
    var requiresRefresh: Bool { get }
}

/// Applies and refreshes one kind of credential for an ``AuthenticationInterceptor``
/// (Alamofire's `Authenticator`).
///
/// ```swift
/// struct Token: AuthenticationCredential { var access: String; var refresh: String; var expiry: Date
///     var requiresRefresh: Bool { Date(timeIntervalSinceNow: 60) > expiry } }
///
/// struct OAuth: Authenticator {
///     func apply(_ token: Token, to request: inout Request) {
///         request.headerFields[.authorization] = "Bearer \(token.access)"
///     }
///     func refresh(_ token: Token) async throws -> Token { try await myTokenEndpoint.refresh(token.refresh) }
///     func isRequest(_ request: Request, authenticatedWith token: Token) -> Bool {
///         request.headerFields[.authorization] == "Bearer \(token.access)"
///     }
/// }
/// ```
public protocol Authenticator: Sendable {
    /// The credential.
    associatedtype Credential: AuthenticationCredential

    /// Puts `credential` on `request` (for OAuth 2, an `Authorization: Bearer` field).
    func apply(_ credential: Credential, to request: inout Request)

    /// Returns a fresh credential for an expired or refused one. Called once however many
    /// requests need it at the same time; they all wait for it. Throwing fails every one of them
    /// with the error (as it is when it is a ``CourierError``, else wrapped in
    /// ``CourierError/Code/requestRetryFailed``).
    func refresh(_ credential: Credential) async throws -> Credential

    /// Whether the server refused `request` because of its credential. By default: the status is
    /// 401. Say more when a 401 can come from elsewhere (a backend's own authorization), lest a
    /// refused permission trigger refreshes.
    func didRequest(_ request: Request, with response: HTTPResponse, failDueToAuthenticationError error: CourierError?) -> Bool

    /// Whether `request` carried `credential` (for OAuth 2, whether its bearer token is the
    /// credential's). A request refused with an older credential is retried with the current one
    /// without another refresh.
    func isRequest(_ request: Request, authenticatedWith credential: Credential) -> Bool

    /// Whether ``didRequest(_:with:failDueToAuthenticationError:)`` is also asked about a response
    /// below 400 that the task's serializer refused, its error the serializer's (an API that
    /// answers an expired token with a 200 and an error body). False by default: tasks whose
    /// only retrier is the ``AuthenticationInterceptor`` then skip the serializer's check
    /// (``RequestRetrier/retriesSerializationFailures``) and its cost.
    var refreshesOnSerializationFailures: Bool { get }
}

extension Authenticator {
    /// True for a 401.
    public func didRequest(_ request: Request, with response: HTTPResponse, failDueToAuthenticationError error: CourierError?) -> Bool {
        response.status == .unauthorized
    }

    /// False: a refusal is a status.
    public var refreshesOnSerializationFailures: Bool { false }
}
