import Foundation

/// Which servers a session trusts (AFNetworking's `AFSecurityPolicy`).
///
/// ``default`` trusts the system's certificate authorities, checks that the certificate names the
/// host and pins nothing. Add ``additionalTrustedCertificates`` to trust a private authority beside
/// the system's (a test server's root, a company CA).
///
/// Pinning follows AFNetworking's rules:
/// - Unless ``allowInvalidCertificates``, the chain must first be valid against the system's roots.
/// - ``PinningMode/certificate``: then the pinned certificates are the only trust anchors, and the
///   chain must be valid against them.
/// - ``PinningMode/publicKey``: then one public key (SubjectPublicKeyInfo) of the chain must be a
///   pinned certificate's.
/// - Pinning with no pinned certificates fails every connection, and so does allowing invalid
///   certificates while validating the domain name without a pin: see ``validate()``.
///
/// ```swift
/// let pins = try SecurityPolicy.certificates(in: URL(fileURLWithPath: "Pins"))
/// let policy = SecurityPolicy(pinningMode: .publicKey, pinnedCertificates: pins)
/// let manager = HTTPSessionManager(baseURL: URL(string: "https://api.example.com/")!, securityPolicy: policy)
/// ```
///
/// On ``NIOEngine`` the policy is enforced on every connection, before any request byte is sent:
/// see <doc:Pinning>.
public struct SecurityPolicy: Sendable, Hashable {
    /// How the server's certificate chain is compared with ``pinnedCertificates``.
    public struct PinningMode: Sendable, Hashable, CustomStringConvertible {
        enum Base: String, Sendable, Hashable {
            case none
            case publicKey
            case certificate
        }

        let base: Base

        /// No pinning: the chain is checked against the trust roots only.
        public static let none = PinningMode(base: .none)
        /// One public key in the server's chain must be a pinned certificate's.
        public static let publicKey = PinningMode(base: .publicKey)
        /// The pinned certificates are the trust anchors; one must be in the server's chain.
        public static let certificate = PinningMode(base: .certificate)

        public var description: String { self.base.rawValue }
    }

    /// How pins are compared; ``PinningMode/none`` by default.
    public var pinningMode: PinningMode = .none
    /// The certificates pinned; their public keys too in public-key mode.
    public var pinnedCertificates: Set<Certificate> = []
    /// Whether to accept certificates that do not chain to a trusted root (expired, self-signed,
    /// unknown authority). `false` by default; never set it in production.
    ///
    /// It skips only the check against the system's roots: in certificate mode the chain is still
    /// evaluated against the pinned certificates (a pinned leaf, even CA-issued, anchors trust on
    /// itself), in public-key mode a key of the chain must still be pinned.
    public var allowInvalidCertificates: Bool = false
    /// Whether the certificate must name the host the request went to. `true` by default.
    public var validatesDomainName: Bool = true
    /// Certificate authorities trusted beside the system's roots, wherever AFNetworking evaluates
    /// against the system's roots (in certificate mode the pins alone are the anchors of the
    /// second evaluation).
    public var additionalTrustedCertificates: [Certificate] = []
    /// The certificate and key presented when a server asks for one (mutual TLS); none by default.
    public var clientIdentity: ClientIdentity?
    /// The oldest TLS version accepted; ``TLSVersion/v1_2`` by default.
    public var minimumTLSVersion: TLSVersion = .v1_2

    /// The system's trust roots, domain validated, no pinning.
    public init() {}

    /// A policy that pins `pinnedCertificates` (AFNetworking's `policyWithPinningMode:withPinnedCertificates:`).
    ///
    /// No certificate is loaded for you: AFNetworking's `policyWithPinningMode:` pins every `.cer`
    /// file of a bundle, `SecurityPolicy(pinningMode:)` pins none, and a pinning mode with no pin
    /// refuses every server (``validate()``). Load the files with ``certificates(in:)``.
    /// - Parameters:
    ///   - pinningMode: How to compare the server's chain with the pins.
    ///   - pinnedCertificates: The certificates pinned; load them with ``certificates(in:)`` or
    ///     ``Certificate/certificates(contentsOf:)``.
    public init(pinningMode: PinningMode, pinnedCertificates: Set<Certificate> = []) {
        self.pinningMode = pinningMode
        self.pinnedCertificates = pinnedCertificates
    }

    /// The system's trust roots, domain validated, no pinning.
    public static var `default`: SecurityPolicy { SecurityPolicy() }
}

extension SecurityPolicy: CustomStringConvertible {
    /// A one-line summary for error messages: `pinning certificate (2 pins), domain validated`.
    public var description: String {
        var parts = ["pinning \(self.pinningMode)"]
        if self.pinningMode != .none { parts[0] += " (\(self.pinnedCertificates.count) pins)" }
        parts.append(self.validatesDomainName ? "domain validated" : "domain not validated")
        if self.allowInvalidCertificates { parts.append("invalid certificates allowed") }
        return parts.joined(separator: ", ")
    }
}
