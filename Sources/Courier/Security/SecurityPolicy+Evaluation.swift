import Foundation
import NIOSSL

extension SecurityPolicy {
    /// Whether this policy trusts a server that presented `chain` for `domain`
    /// (AFNetworking's `evaluateServerTrust:forDomain:`), step by step as AFNetworking 4 does:
    ///
    /// - the policy's own rules first (``validate()``);
    /// - with no pinning and ``allowInvalidCertificates``, any chain is trusted, even one Courier
    ///   cannot read; otherwise the leaf must be readable, and another certificate that cannot be
    ///   read is left out (it can be on no path, and match no pin), as in the TLS handshake;
    /// - unless ``allowInvalidCertificates``, the chain must be valid against the system's roots
    ///   (the distribution's bundle, read once per process the first time it is needed, with
    ///   ``additionalTrustedCertificates``):
    ///   signatures, every certificate's dates, constraints, and the host name when
    ///   ``validatesDomainName``;
    /// - ``PinningMode/certificate``: then the chain must be valid against the pinned certificates
    ///   as the only anchors;
    /// - ``PinningMode/publicKey``: then a public key of the chain (up to a system root the server
    ///   need not have sent) must be a pinned certificate's.
    ///
    /// - Parameters:
    ///   - chain: The certificates the server presented, its leaf first.
    ///   - domain: The host the connection went to; its name is checked when
    ///     ``validatesDomainName``, a Unicode name in its ASCII form (`bücher.example` as
    ///     `xn--bcher-kva.example`, the form certificates name it in).
    /// - Throws: ``CourierError/Code/serverTrustEvaluationFailed`` whose
    ///   ``CourierError/underlyingError`` is a ``ServerTrustFailure`` naming the host and the reason.
    public func evaluateServerTrust(_ chain: [Certificate], forDomain domain: String) async throws(CourierError) {
        let evaluator = SecurityPolicyEvaluator(policy: self)
        if evaluator.consultsSystemRoots {
            // The first evaluation reads the system's bundle, on NIO's thread pool rather than here.
            await evaluator.trustStore.loadOffTheEventLoops()
        }
        // The chain as a handshake hands it over, so that the same rules decide: a policy that
        // trusts any certificate trusts one Courier cannot read, and a certificate other than the
        // leaf that cannot be read is left out. (Any such certificate refused the chain here.)
        let presented: [NIOSSLCertificate]
        do {
            presented = try chain.map { try $0.nioCertificate() }
        } catch {
            throw ServerTrustFailure(.untrustedRoot, host: domain, policy: self, detail: "a certificate of the chain cannot be parsed").courierError()
        }
        if case .refused(let failure) = await evaluator.evaluate(presented: presented, host: domain) {
            throw failure.courierError()
        }
    }
}
