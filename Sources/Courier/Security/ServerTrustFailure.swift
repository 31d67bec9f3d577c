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

    public var description: String { self.summary }

    /// Host, reason and what says why, then the policy that refused the server: the message of
    /// the ``CourierError`` made of it. A handshake that failed for another reason than the policy
    /// names no policy, and says why in words (``handshakeReason(_:)``), not as BoringSSL's error
    /// with its source paths.
    var summary: String {
        let host = self.host.map { "\($0): " } ?? ""
        if self.reason == .handshakeFailure {
            return host + "\(self.reason)" + (self.detail.map { ": " + Self.handshakeReason($0, minimum: self.policy.minimumTLSVersion) } ?? "")
        }
        return host + "\(self.reason)" + (self.detail.map { " (\($0))" } ?? "") + " [policy: \(self.policy)]"
    }

    /// What BoringSSL's reason in `detail` (`…:OPENSSL_internal:WRONG_VERSION_NUMBER at …`) means,
    /// with the reason's name; `detail` as it is when it names none. A version refusal names the
    /// versions the policy accepts, from `minimum` (its ``SecurityPolicy/minimumTLSVersion``) to
    /// TLS 1.3: a policy that asks for TLS 1.3 refused a TLS 1.2 server, not Courier.
    static func handshakeReason(_ detail: String, minimum: SecurityPolicy.TLSVersion = .v1_2) -> String {
        guard let marker = detail.range(of: "OPENSSL_internal:") else { return detail }
        let name = String(detail[marker.upperBound...].prefix { $0.isLetter || $0.isNumber || $0 == "_" })
        if name == "TLSV1_ALERT_PROTOCOL_VERSION" || name == "UNSUPPORTED_PROTOCOL" {
            let accepted = minimum >= .v1_3 ? "TLS 1.3 only" : "\(minimum) to TLS 1.3"
            return "no TLS version both sides accept (the policy accepts \(accepted)) (\(name))"
        }
        guard let meaning = Self.handshakeReasons[name] else { return name }
        return "\(meaning) (\(name))"
    }

    private static let handshakeReasons: [String: String] = [
        "TLSV1_ALERT_CERTIFICATE_REQUIRED": "the server requires a client certificate",
        "SSLV3_ALERT_BAD_CERTIFICATE": "the server refused the client certificate",
        "SSLV3_ALERT_CERTIFICATE_UNKNOWN": "the server refused the client certificate",
        "TLSV1_ALERT_UNKNOWN_CA": "the server does not trust the client certificate's authority",
        "SSLV3_ALERT_CERTIFICATE_EXPIRED": "the server refused the client certificate as expired",
        "SSLV3_ALERT_HANDSHAKE_FAILURE":
            "the server refused the handshake (no TLS version, cipher suite or client certificate both sides accept)",
        "WRONG_VERSION_NUMBER": "the server did not answer in TLS (a plain HTTP server?)",
        "NO_SHARED_CIPHER": "no cipher suite both sides accept",
        "HANDSHAKE_FAILURE_ON_CLIENT_HELLO": "no cipher suite both sides accept",
        "TLSV1_ALERT_INTERNAL_ERROR": "the server failed the handshake (an internal error alert)",
        "TLSV1_ALERT_DECRYPT_ERROR": "the server could not verify the handshake (a decrypt error alert)",
    ]

    /// The code a ``CourierError`` made of this failure carries.
    var code: CourierError.Code {
        self.reason == .handshakeFailure ? .tlsFailure : .serverTrustEvaluationFailed
    }

    func courierError(request: Request? = nil, file: String = #fileID, line: UInt = #line) -> CourierError {
        CourierError(self.code, self.summary, request: request, underlyingError: self, file: file, line: line)
    }
}
