import Foundation

extension SecurityPolicy {
    /// Checks AFNetworking's rules on the policy itself.
    ///
    /// - Throws: ``CourierError/Code/serverTrustEvaluationFailed`` with a ``ServerTrustFailure``
    ///   of reason ``ServerTrustFailure/Reason/noPinsConfigured`` when a pinning mode has no pinned
    ///   certificate, or ``ServerTrustFailure/Reason/invalidPolicy`` when invalid certificates are
    ///   allowed with domain validation and no pin (AFNetworking: "in order to validate a domain
    ///   name for self signed certificates, you MUST use pinning").
    ///
    ///   Also ``ServerTrustFailure/Reason/invalidPolicy`` when a pinned certificate is one the
    ///   chain's evaluation cannot read (a key of a kind or size swift-certificates does not
    ///   check: P-256, P-384, P-521, Ed25519 and RSA of 2048 bits or more are read): such a pin
    ///   could never match, and every server would be refused as not pinned. The same for an
    ///   additional trusted certificate (``additionalTrustedCertificates``): such an anchor would
    ///   be left out without a word, and every server under it refused as untrusted.
    ///
    /// ``NIOEngine`` calls it when it is made and fails every HTTPS request with its error.
    public func validate() throws(CourierError) {
        if self.pinningMode != .none, self.pinnedCertificates.isEmpty {
            throw ServerTrustFailure(.noPinsConfigured, policy: self, detail: "pinning mode \(self.pinningMode) with no pinned certificate").courierError()
        }
        if self.pinningMode != .none {
            // Read as the evaluator reads its pins (``Certificate/x509``).
            if let unreadable = self.pinnedCertificates.first(where: { $0.x509 == nil }) {
                throw ServerTrustFailure(
                    .invalidPolicy, policy: self,
                    detail: "a pinned certificate (\(unreadable.derBytes.count) bytes) cannot be checked by the chain's evaluation, so it could never match"
                ).courierError()
            }
        }
        if let unreadable = self.additionalTrustedCertificates.first(where: { $0.x509 == nil }) {
            throw ServerTrustFailure(
                .invalidPolicy, policy: self,
                detail: "an additional trusted certificate (\(unreadable.derBytes.count) bytes) cannot be checked by the chain's evaluation, so nothing could be trusted through it"
            ).courierError()
        }
        if self.allowInvalidCertificates, self.validatesDomainName, self.pinningMode == .none {
            throw ServerTrustFailure(
                .invalidPolicy,
                policy: self,
                detail: "allowing invalid certificates while validating the domain name needs pinning"
            ).courierError()
        }
    }

    /// Checks that the policy fits a manager with `baseURL`: a pinning policy needs an https base
    /// URL (AFNetworking raised an exception there).
    /// - Throws: ``CourierError/Code/invalidRequest`` naming the base URL.
    public func validate(baseURL: URL?) throws(CourierError) {
        guard self.pinningMode != .none, let baseURL else { return }
        guard baseURL.scheme?.lowercased() == "https" || baseURL.unixSocketTarget?.tls == true else {
            throw CourierError(
                .invalidRequest,
                "a security policy that pins (\(self)) needs an https base URL; \(Request.redacted(baseURL)) is not"
            )
        }
    }
}
