import Foundation

/// HTTP Basic credentials as RFC 7617 writes them, for the routes and the proxy that check them.
enum BasicAuthorization {
    /// The base64 of `user:password`: what follows `Basic ` in the field.
    static func credentials(user: some StringProtocol, password: some StringProtocol) -> String {
        Data("\(user):\(password)".utf8).base64EncodedString()
    }

    /// The whole `Authorization` (or `Proxy-Authorization`) value.
    static func fieldValue(user: some StringProtocol, password: some StringProtocol) -> String {
        "Basic " + Self.credentials(user: user, password: password)
    }
}
