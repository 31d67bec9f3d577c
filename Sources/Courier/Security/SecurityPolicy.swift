import Foundation

/// Which servers a session trusts (AFNetworking's `AFSecurityPolicy`).
///
/// ``default`` trusts the system's certificate authorities and checks that the certificate names
/// the host. Add ``additionalTrustedCertificates`` to trust a private authority beside the
/// system's (a test server's root, a company CA).
public struct SecurityPolicy: Sendable, Hashable {
    /// Whether to accept certificates that do not chain to a trusted root (expired, self-signed,
    /// unknown authority). `false` by default; never set it in production.
    public var allowInvalidCertificates: Bool = false
    /// Whether the certificate must name the host the request went to. `true` by default.
    public var validatesDomainName: Bool = true
    /// Certificate authorities trusted beside the system's.
    public var additionalTrustedCertificates: [Certificate] = []

    /// The system's trust roots, domain validated.
    public init() {}

    /// The system's trust roots, domain validated.
    public static var `default`: SecurityPolicy { SecurityPolicy() }
}
