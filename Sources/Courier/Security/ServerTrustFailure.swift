import Foundation

/// Why a server was not trusted: the ``CourierError/underlyingError`` of a
/// ``CourierError/Code/serverTrustEvaluationFailed`` or ``CourierError/Code/tlsFailure`` error.
///
/// It names the host (when known), the policy and the reason.
public struct ServerTrustFailure: Error, Sendable, CustomStringConvertible {
    /// Why the server was not trusted. Reasons are open: match on the static members.
    public struct Reason: Sendable, Hashable, CustomStringConvertible {
        enum Base: String, Sendable, Hashable {
            case untrustedRoot = "the certificate does not chain to a trusted root"
            case expired = "the certificate has expired"
            case notYetValid = "the certificate is not yet valid"
            case nameMismatch = "the certificate does not name the host"
            case pinMismatch = "no certificate or public key in the server's chain is pinned"
            case noPinsConfigured = "the policy pins but has no pinned certificate"
            case invalidPolicy = "the policy is invalid"
            case handshakeFailure = "the TLS handshake failed"
        }

        let base: Base

        /// The chain does not end at a trusted root (self-signed, unknown authority, a pin that is
        /// not a usable anchor), or the chain that does breaks X.509's rules (an authority's name or
        /// path-length constraints, a leaf not meant for server authentication).
        public static let untrustedRoot = Reason(base: .untrustedRoot)
        /// A certificate in the chain has expired.
        public static let expired = Reason(base: .expired)
        /// A certificate in the chain is not valid yet.
        public static let notYetValid = Reason(base: .notYetValid)
        /// The certificate does not name the host.
        public static let nameMismatch = Reason(base: .nameMismatch)
        /// Nothing in the server's chain matches a pin.
        public static let pinMismatch = Reason(base: .pinMismatch)
        /// The policy pins but has no pinned certificate.
        public static let noPinsConfigured = Reason(base: .noPinsConfigured)
        /// The policy breaks one of AFNetworking's rules (see ``SecurityPolicy/validate()``).
        public static let invalidPolicy = Reason(base: .invalidPolicy)
        /// The TLS handshake failed for another reason (protocol version, client certificate refused…).
        public static let handshakeFailure = Reason(base: .handshakeFailure)

        public var description: String { self.base.rawValue }
    }

    /// Why.
    public var reason: Reason
    /// The host the connection went to, when known.
    public var host: String?
    /// The policy that refused the server.
    public var policy: SecurityPolicy
    /// More about the failure (BoringSSL's words, the certificate's subject).
    public var detail: String?

    /// Makes a failure.
    public init(_ reason: Reason, host: String? = nil, policy: SecurityPolicy, detail: String? = nil) {
        self.reason = reason
        self.host = host
        self.policy = policy
        self.detail = detail
    }

    public var description: String {
        var text = self.summary
        if let detail { text += " (\(detail))" }
        return text
    }

    /// Host, reason and policy, without the detail.
    var summary: String {
        "\(self.host.map { "\($0): " } ?? "")\(self.reason) [policy: \(self.policy)]"
    }

    /// The code a ``CourierError`` made of this failure carries.
    var code: CourierError.Code {
        self.reason == .handshakeFailure ? .tlsFailure : .serverTrustEvaluationFailed
    }

    func courierError(request: Request? = nil, file: String = #fileID, line: UInt = #line) -> CourierError {
        CourierError(self.code, self.summary, request: request, underlyingError: self, file: file, line: line)
    }
}
