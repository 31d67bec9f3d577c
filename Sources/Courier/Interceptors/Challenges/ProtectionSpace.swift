import Foundation

/// Where a credential applies: an origin (scheme, host, port), a realm and an authentication
/// method (URLSession's `URLProtectionSpace`).
///
/// A space in a ``CredentialStore`` may leave ``realm`` or ``authenticationMethod`` `nil`: it
/// then matches any realm or method of its origin. The spaces of challenges always have both.
public struct ProtectionSpace: Sendable, Hashable, CustomStringConvertible {
    /// `http` or `https`, lower-cased.
    public var urlScheme: String
    /// The host, lower-cased.
    public var host: String
    /// The port (80 or 443 when the URL names none).
    public var port: Int
    /// The realm the server named, or `nil` for any.
    public var realm: String?
    /// The method, or `nil` for any.
    public var authenticationMethod: AuthenticationMethod?

    /// A protection space.
    public init(urlScheme: String, host: String, port: Int, realm: String? = nil, authenticationMethod: AuthenticationMethod? = nil) {
        self.urlScheme = urlScheme.lowercased()
        self.host = host.lowercased()
        self.port = port
        self.realm = realm
        self.authenticationMethod = authenticationMethod
    }

    /// The space of `url`'s origin; nil when the URL has no host.
    public init?(url: URL, realm: String? = nil, authenticationMethod: AuthenticationMethod? = nil) {
        guard let host = url.host, !host.isEmpty else { return nil }
        let scheme = (url.scheme ?? "http").lowercased()
        self.init(
            urlScheme: scheme, host: host, port: url.effectivePort ?? 80, realm: realm,
            authenticationMethod: authenticationMethod)
    }

    /// Whether a credential stored for this space may answer a challenge for `space`.
    func covers(_ space: ProtectionSpace) -> Bool {
        self.urlScheme == space.urlScheme && self.host == space.host && self.port == space.port
            && (self.realm == nil || self.realm == space.realm)
            && (self.authenticationMethod == nil || self.authenticationMethod == space.authenticationMethod)
    }

    /// How specific the space is, to prefer a credential for the realm over one for the origin.
    var specificity: Int { (self.realm == nil ? 0 : 2) + (self.authenticationMethod == nil ? 0 : 1) }

    public var description: String {
        "\(self.urlScheme)://\(self.host):\(self.port) realm=\(self.realm ?? "*") method=\(self.authenticationMethod?.rawValue ?? "*")"
    }
}

/// An HTTP authentication scheme Courier can answer.
public struct AuthenticationMethod: Sendable, Hashable {
    /// The scheme's name, its ASCII letters lower-cased.
    public let rawValue: String

    /// A method by scheme name.
    public init(_ rawValue: String) { self.rawValue = rawValue.lowercasedASCII }

    /// `Basic` (RFC 7617).
    public static let httpBasic = AuthenticationMethod("basic")
    /// `Digest` (RFC 7616).
    public static let httpDigest = AuthenticationMethod("digest")
}

/// A user name and password (URLSession's `URLCredential`, for password authentication).
public struct HTTPCredential: Sendable, Hashable, CustomStringConvertible {
    /// The user name.
    public var user: String
    /// The password.
    public var password: String

    /// A credential.
    public init(user: String, password: String) {
        self.user = user
        self.password = password
    }

    /// Names the user; never shows the password.
    public var description: String { "HTTPCredential(user: \(self.user))" }
}
