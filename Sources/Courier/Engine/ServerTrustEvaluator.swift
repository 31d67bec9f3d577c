import Foundation
import NIOCore
import NIOSSL

/// Enforces a ``SecurityPolicy`` on ``NIOEngine``'s connections: the TLS configuration that
/// BoringSSL verifies the chain with, and a check of the leaf once the handshake is done.
///
/// AsyncHTTPClient 1.37 shows a connection to Courier only once its handshake is done, through
/// `HTTPClient.Configuration.http1_1ConnectionDebugInitializer` and
/// `http2ConnectionDebugInitializer`, and then only the leaf is visible
/// (`NIOSSLHandler.peerCertificate`; the presented chain is internal to swift-nio-ssl). BoringSSL
/// takes only self-signed certificates as trust anchors, but does not check an anchor's own
/// signature. So the pins are split:
/// - *anchor pins*: self-issued certificates (roots, self-signed leaves; in public-key mode only
///   authorities), given to BoringSSL as they are, and pinned intermediate authorities, given as
///   their ``AnchorTwin`` (a self-issued copy with the same name, key and dates). When they are the
///   only pins they are BoringSSL's only trust roots, so a chain that verifies ends at one of them
///   (certificate mode) or at one of their keys (public-key mode);
/// - *leaf pins*, end-entity certificates: the chain is verified against the anchor pins, the
///   system's roots and ``SecurityPolicy/additionalTrustedCertificates``, and the hook then
///   demands that the leaf (certificate mode) or its key (public-key mode) be pinned;
/// - except in certificate mode with invalid certificates allowed, where AFNetworking anchors
///   trust on each pin, a CA-issued leaf's issuer included unknown: when a CA-issued end-entity
///   certificate is pinned, BoringSSL verifies nothing (the handshake still proves that the server
///   holds the leaf's private key) and the hook demands the leaf's exact DER be pinned, the leaf be
///   within its validity dates, and, when the domain name is validated, the leaf names ``host``
///   (``HostnameMatcher``). Such an evaluator serves one host: ``NIOEngine`` makes a client per host.
struct ServerTrustEvaluator: Sendable {
    let policy: SecurityPolicy
    /// Why every connection fails, when the policy breaks AFNetworking's rules or pins what this
    /// engine cannot check.
    let policyError: CourierError?
    /// The host this evaluator's connections go to, when it checks names itself.
    let host: String?
    /// Whether a pinned CA-issued leaf is its own anchor: BoringSSL verifies nothing and the hook
    /// checks the exact leaf, its dates and (if validated) its name.
    let anchorsOnLeaf: Bool
    /// Whether the pinned anchors are BoringSSL's only roots (no leaf to compare in the hook).
    private let anchorsOnly: Bool
    /// The trust roots standing for the anchor pins (an intermediate's twin in its place).
    private let anchors: [Certificate]
    private let pinnedCertificates: Set<Data>
    private let pinnedPublicKeys: Set<Data>

    init(policy: SecurityPolicy, host: String? = nil) {
        self.policy = policy
        self.host = host
        self.anchorsOnLeaf = Self.anchorsOnLeaf(policy)
        self.pinnedCertificates = Set(policy.pinnedCertificates.map(\.derBytes))
        self.pinnedPublicKeys = Set(policy.pinnedCertificates.map(\.publicKeyBytes))
        self.anchorsOnly = policy.pinningMode != .none && policy.pinnedCertificates.allSatisfy { Self.isAnchor($0, policy) }
        let anchorPins = policy.pinnedCertificates.filter { Self.isAnchor($0, policy) }
        let anchors = anchorPins.compactMap { $0.isSelfIssued ? $0 : AnchorTwin.make(for: $0) }
        self.anchors = anchors
        do throws(CourierError) {
            try policy.validate()
            if anchors.count < anchorPins.count {
                throw ServerTrustFailure(
                    .invalidPolicy,
                    policy: policy,
                    detail: "\(anchorPins.count - anchors.count) pinned intermediate certificate(s) could not be read to anchor trust on"
                ).courierError()
            }
            self.policyError = nil
        } catch {
            self.policyError = error
        }
    }

    /// Whether a pin is a trust anchor: any self-issued certificate or authority in certificate
    /// mode (AFNetworking anchors on every pin); only an authority in public-key mode, where a
    /// self-signed leaf must still pass the usual roots unless invalid certificates are allowed.
    /// An intermediate authority anchors through its ``AnchorTwin``.
    static func isAnchor(_ certificate: Certificate, _ policy: SecurityPolicy) -> Bool {
        switch policy.pinningMode.base {
        case .none: false
        case .certificate: certificate.isSelfIssued || certificate.isCertificateAuthority
        case .publicKey: certificate.isCertificateAuthority
        }
    }

    /// Whether AFNetworking would anchor on a pinned CA-issued leaf: certificate mode, invalid
    /// certificates allowed, and an end-entity certificate that is not self-issued among the pins.
    static func anchorsOnLeaf(_ policy: SecurityPolicy) -> Bool {
        policy.pinningMode.base == .certificate && policy.allowInvalidCertificates
            && policy.pinnedCertificates.contains { !$0.isSelfIssued && !$0.isCertificateAuthority }
    }

    /// Whether the evaluator must know the host its connections go to (see ``anchorsOnLeaf``).
    static func needsHost(_ policy: SecurityPolicy) -> Bool {
        Self.anchorsOnLeaf(policy) && policy.validatesDomainName
    }

    /// The TLS configuration BoringSSL verifies with.
    func tlsConfiguration() -> TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = self.policy.minimumTLSVersion.nio
        let verifying: CertificateVerification = self.policy.validatesDomainName ? .fullVerification : .noHostnameVerification
        let anchors = Self.nio(self.anchors)
        let additional = Self.nio(self.policy.additionalTrustedCertificates)
        switch self.policy.pinningMode.base {
        case .none:
            tls.certificateVerification = self.policy.allowInvalidCertificates ? .none : verifying
        case .certificate where self.anchorsOnLeaf:
            // The pinned leaf is its own anchor: the hook checks it, its dates and its name.
            tls.certificateVerification = .none
        case .certificate:
            // AFNetworking evaluates the chain against the pinned anchors even when invalid
            // certificates are allowed.
            tls.certificateVerification = verifying
        case .publicKey where self.policy.allowInvalidCertificates:
            // AFNetworking evaluates nothing here but the keys. With only anchor pins the chain is
            // still verified to a pinned key (there is no other way to see a CA's key), not the name.
            tls.certificateVerification = self.anchorsOnly ? .noHostnameVerification : .none
        case .publicKey:
            tls.certificateVerification = verifying
        }
        if self.anchorsOnly {
            tls.trustRoots = .certificates(anchors)
        } else if !(anchors + additional).isEmpty {
            tls.additionalTrustRoots = [.certificates(anchors + additional)]
        }
        if let identity = self.policy.clientIdentity, let (chain, key) = try? identity.nioChainAndKey() {
            tls.certificateChain = chain
            tls.privateKey = key
        }
        return tls
    }

    /// The check of a connection's leaf once its handshake is done, or `nil` when it passes.
    func evaluate(leaf: NIOSSLCertificate?) -> ServerTrustFailure? {
        if let policyError = self.policyError {
            return policyError.underlyingError as? ServerTrustFailure ?? ServerTrustFailure(.invalidPolicy, policy: self.policy)
        }
        // No pinning, or BoringSSL verified the chain against the pinned anchors only.
        if self.policy.pinningMode == .none || self.anchorsOnly { return nil }
        guard let leaf, let der = try? leaf.toDERBytes(), let key = try? leaf.extractPublicKey().toSPKIBytes() else {
            return ServerTrustFailure(.pinMismatch, host: self.host, policy: self.policy, detail: "the server presented no certificate")
        }
        if self.anchorsOnLeaf { return self.evaluateAnchor(leaf: leaf, der: Data(der)) }
        switch self.policy.pinningMode.base {
        case .certificate where self.pinnedCertificates.contains(Data(der)): return nil
        case .publicKey where self.pinnedPublicKeys.contains(Data(key)): return nil
        default:
            return ServerTrustFailure(.pinMismatch, policy: self.policy, detail: "the server's leaf \(leaf) is not pinned")
        }
    }

    /// The check of a leaf that BoringSSL did not verify: pinned exactly, in its dates, naming the host.
    private func evaluateAnchor(leaf: NIOSSLCertificate, der: Data, now: time_t = time(nil)) -> ServerTrustFailure? {
        func failure(_ reason: ServerTrustFailure.Reason, _ detail: String) -> ServerTrustFailure {
            ServerTrustFailure(reason, host: self.host, policy: self.policy, detail: detail)
        }
        guard self.pinnedCertificates.contains(der) else {
            return failure(.pinMismatch, "the server's leaf \(leaf) is not pinned")
        }
        switch ServerTrustDiagnosis.reason(for: [leaf], now: now) {
        case .expired: return failure(.expired, "the pinned leaf \(leaf) has expired")
        case .notYetValid: return failure(.notYetValid, "the pinned leaf \(leaf) is not valid yet")
        default: break
        }
        if self.policy.validatesDomainName {
            guard let host = self.host, HostnameMatcher.matches(host: host, names: HostnameMatcher.names(of: leaf)) else {
                return failure(.nameMismatch, "the pinned leaf \(leaf) does not name \(self.host ?? "the host")")
            }
        }
        return nil
    }

    /// AsyncHTTPClient's per-connection initializer: fails and closes a connection whose leaf the
    /// policy refuses, before any request byte is written. Plain-http connections pass.
    func connectionInitializer() -> @Sendable (any Channel) -> EventLoopFuture<Void> {
        { channel in
            channel.pipeline.handler(type: NIOSSLHandler.self).flatMap { handler -> EventLoopFuture<Void> in
                guard let failure = self.evaluate(leaf: handler.peerCertificate) else {
                    return channel.eventLoop.makeSucceededVoidFuture()
                }
                // AHC does not close a connection whose initializer failed: close it here.
                channel.close(promise: nil)
                return channel.eventLoop.makeFailedFuture(failure)
            }.flatMapError { error in
                if error is ServerTrustFailure { return channel.eventLoop.makeFailedFuture(error) }
                // No TLS handler: a plain-http connection.
                return channel.eventLoop.makeSucceededVoidFuture()
            }
        }
    }

    private static func nio(_ certificates: some Sequence<Certificate>) -> [NIOSSLCertificate] {
        // `Certificate` checked its bytes when it was made, so parsing cannot fail here.
        certificates.compactMap { try? $0.nioCertificate() }
    }
}
