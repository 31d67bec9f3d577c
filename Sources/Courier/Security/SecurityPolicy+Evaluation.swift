import Foundation

extension SecurityPolicy {
    /// Whether this policy trusts a server that presented `chain` for `domain`
    /// (AFNetworking's `evaluateServerTrust:forDomain:`), step by step as AFNetworking 4 does:
    ///
    /// - the policy's own rules first (``validate()``);
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
        let parsed = chain.compactMap(\.x509)
        guard parsed.count == chain.count else {
            throw ServerTrustFailure(.untrustedRoot, host: domain, policy: self, detail: "a certificate of the chain cannot be parsed").courierError()
        }
        if case .refused(let failure) = await evaluator.evaluate(serverChain: parsed, host: domain) {
            throw failure.courierError()
        }
    }
}
