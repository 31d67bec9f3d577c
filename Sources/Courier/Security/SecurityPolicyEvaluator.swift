import Foundation
import NIOSSL
import SwiftASN1
import X509

/// Evaluates a ``SecurityPolicy`` on the chain a server presented, step by step as AFNetworking's
/// last release evaluates it (`-[AFSecurityPolicy evaluateServerTrust:forDomain:]`), with
/// swift-certificates doing what Apple's `SecTrust` does there (path building, signatures,
/// validity dates, constraints, the host name: ``SecTrustPolicy``).
///
/// 1. The policy itself: a pinning mode with no pin, or invalid certificates allowed with the
///    domain name validated and no pinning, refuses every server (``SecurityPolicy/validate()``).
/// 2. The SSL policy for the host when ``SecurityPolicy/validatesDomainName``, else basic X.509.
/// 3. No pinning: trusted when invalid certificates are allowed, else when the chain is valid
///    against the system's roots (``TrustStore``, with ``SecurityPolicy/additionalTrustedCertificates``).
/// 4. Pinning without ``SecurityPolicy/allowInvalidCertificates``: the chain must first be valid
///    against the system's roots.
/// 5. Certificate mode: the pinned certificates become the only anchors and the chain must be valid
///    against them (any pinned certificate anchors: a root, an intermediate, the leaf itself); then
///    some certificate of that chain must be pinned.
/// 6. Public-key mode: some certificate of the chain evaluated against the system's roots has a
///    pinned public key. That chain is the one path building found even when it is not valid (with
///    invalid certificates allowed): the presented certificates up to a system root the server may
///    not have sent, or as far as they chain when no root is reached.
///
/// It does no I/O: the caller parses the presented chain and completes the handshake.
struct SecurityPolicyEvaluator: Sendable {
    /// What the evaluation decided.
    enum Verdict: Sendable {
        /// The server is trusted; the chain validated on the way, leaf first, when one was (none
        /// when the policy trusted without validating, with invalid certificates allowed).
        case trusted(validatedChain: [X509.Certificate]?)
        /// The server is refused, and why.
        case refused(ServerTrustFailure)
    }

    /// The policy evaluated.
    let policy: SecurityPolicy
    /// Why every server is refused, when the policy breaks AFNetworking's rules.
    private let policyFailure: ServerTrustFailure?
    /// The system's roots and the policy's additional trusted certificates (the system's are read
    /// when the verifier first looks a certificate up in them, not before).
    private let systemAnchors: CertificateStore
    /// The store standing for the system's roots.
    let trustStore: TrustStore
    /// The pinned certificates, as anchors for certificate mode.
    private let pinnedAnchors: CertificateStore
    private let pinnedCertificates: Set<X509.Certificate>
    /// The public keys of the pinned certificates, each once, for public-key mode.
    let pinnedPublicKeys: Set<X509.Certificate.PublicKey>

    /// An evaluator of `policy`.
    /// - Parameters:
    ///   - policy: The policy; its ``SecurityPolicy/additionalTrustedCertificates`` join `trustStore`.
    ///   - trustStore: What stands for the system's roots; ``TrustStore/system`` (not read here)
    ///     unless a test brings its own.
    init(policy: SecurityPolicy, trustStore: TrustStore = .system) {
        self.policy = policy
        let pins = policy.pinnedCertificates.compactMap(\.x509)
        self.pinnedCertificates = Set(pins)
        self.pinnedPublicKeys = Set(pins.map(\.publicKey))
        self.pinnedAnchors = CertificateStore(pins)
        self.trustStore = trustStore
        self.systemAnchors = trustStore.anchors(adding: policy.additionalTrustedCertificates)
        do throws(CourierError) {
            try policy.validate()
            self.policyFailure = nil
        } catch {
            self.policyFailure = error.underlyingError as? ServerTrustFailure ?? ServerTrustFailure(.invalidPolicy, policy: policy)
        }
    }

    /// Whether an evaluation consults the system's roots (steps 3, 4 and 6: unless invalid
    /// certificates are allowed, or in public-key mode, whose chain is built towards them even
    /// then). A policy that breaks AFNetworking's rules, or that allows invalid certificates with
    /// no pinning or with certificate pinning, never does.
    var consultsSystemRoots: Bool {
        self.policyFailure == nil && (!self.policy.allowInvalidCertificates || self.policy.pinningMode.base == .publicKey)
    }

    /// The most certificates a server may present. Real chains have two to four; path building
    /// over many certificates of one name grows fast, and a server must not make a client spin.
    static let maximumPresentedCount = 32

    /// Evaluates the chain presented by `host`, leaf first, as swift-nio-ssl hands it over.
    ///
    /// A policy that trusts any certificate (no pinning, invalid certificates allowed: AFNetworking's
    /// `allowInvalidCertificates || valid`) trusts without reading the chain: one Courier cannot
    /// read (an RSA key under 2048 bits, an algorithm swift-certificates does not know, as old
    /// routers and printers present) is no reason to refuse it. Otherwise the leaf must be
    /// readable; another certificate that cannot be read is left out (it can be on no path that
    /// is built, and match no pin, which must be readable), as SecTrust and OpenSSL ignore
    /// presented certificates they do not use.
    func evaluate(presented chain: [NIOSSLCertificate], host: String) async -> Verdict {
        if self.policyFailure == nil, self.policy.pinningMode == .none, self.policy.allowInvalidCertificates {
            return .trusted(validatedChain: nil)
        }
        guard chain.count <= Self.maximumPresentedCount else {
            return .refused(self.failure(.untrustedRoot, host: host, "the server presented \(chain.count) certificates; at most \(Self.maximumPresentedCount) are evaluated"))
        }
        var parsed: [X509.Certificate] = []
        for (index, certificate) in chain.enumerated() {
            do {
                parsed.append(try X509.Certificate(derEncoded: try certificate.toDERBytes()))
            } catch where index > 0 {
                continue
            } catch {
                return .refused(self.failure(.untrustedRoot, host: host, "the server's certificate cannot be parsed (\(error))"))
            }
        }
        return await self.evaluate(serverChain: parsed, host: host)
    }

    /// Evaluates the chain presented by `host`, leaf first.
    func evaluate(serverChain: [X509.Certificate], host: String) async -> Verdict {
        if var policyFailure = self.policyFailure {
            policyFailure.host = host
            return .refused(policyFailure)
        }
        guard let leaf = serverChain.first else {
            return .refused(self.failure(.untrustedRoot, host: host, "the server presented no certificate"))
        }
        let intermediates = Array(serverChain.dropFirst())
        // Certificates name hosts in ASCII: a Unicode host (`evaluateServerTrust`'s domain, an
        // https proxy's name) is checked in its IDNA form; it was compared as UTF-8, and refused.
        let serverName = self.policy.validatesDomainName ? HostnameMatcher.referenceName(host) : nil

        if self.policy.pinningMode == .none, self.policy.allowInvalidCertificates {
            return .trusted(validatedChain: nil)
        }
        if ChainEvaluation.offersTooManyPaths(leaf: leaf, intermediates: intermediates) {
            return .refused(
                self.failure(
                    .untrustedRoot, host: host,
                    "the certificates presented make more than \(ChainEvaluation.maximumPartialChains) paths to try; Courier tries no more"))
        }
        var system: ChainEvaluation?
        if !self.policy.allowInvalidCertificates {
            let evaluation = await ChainEvaluation(leaf: leaf, intermediates: intermediates, anchors: self.systemAnchors, serverName: serverName)
            guard evaluation.isValid else {
                return .refused(self.failure(evaluation.reason, host: host, evaluation.detail))
            }
            if self.policy.pinningMode == .none { return .trusted(validatedChain: evaluation.chain) }
            system = evaluation
        }

        switch self.policy.pinningMode.base {
        case .none:
            return .trusted(validatedChain: system?.chain)
        case .certificate:
            let pinned = await ChainEvaluation(leaf: leaf, intermediates: intermediates, anchors: self.pinnedAnchors, serverName: serverName)
            guard pinned.isValid else {
                // No path reaches a pin at all: the chain is not pinned. A path that does but
                // fails (dates, name, constraints) keeps its own reason.
                let reason = pinned.reachedAnchor ? pinned.reason : .pinMismatch
                let detail = pinned.reachedAnchor ? pinned.detail : "no chain from \(leaf.subject) reaches a pinned certificate"
                return .refused(self.failure(reason, host: host, detail))
            }
            guard pinned.chain.contains(where: self.pinnedCertificates.contains) else {
                return .refused(self.failure(.pinMismatch, host: host, "no certificate of the chain from \(leaf.subject) is pinned"))
            }
            return .trusted(validatedChain: pinned.chain)
        case .publicKey:
            let evaluation: ChainEvaluation
            if let system {
                evaluation = system
            } else {
                evaluation = await ChainEvaluation(leaf: leaf, intermediates: intermediates, anchors: self.systemAnchors, serverName: serverName)
            }
            guard evaluation.chain.contains(where: { self.pinnedPublicKeys.contains($0.publicKey) }) else {
                return .refused(
                    self.failure(.pinMismatch, host: host, "no public key of the chain \(evaluation.chain.map(\.subject.description)) is pinned")
                )
            }
            return .trusted(validatedChain: evaluation.isValid ? evaluation.chain : nil)
        }
    }

    private func failure(_ reason: ServerTrustFailure.Reason, host: String, _ detail: String) -> ServerTrustFailure {
        ServerTrustFailure(reason, host: host, policy: self.policy, detail: detail)
    }
}

/// One evaluation of a chain against a set of anchors (one `SecTrustEvaluate`): whether it is
/// valid, the chain path building found, and why it is not valid.
struct ChainEvaluation: Sendable {
    /// The chain, leaf first: the valid one; else the first candidate that reached an anchor and
    /// failed the policy; else the presented certificates as far as they chain by name and
    /// signature.
    let chain: [X509.Certificate]
    let isValid: Bool
    /// Whether ``chain`` ends at an anchor.
    let reachedAnchor: Bool
    /// Why the chain is not valid (meaningless when it is).
    let reason: ServerTrustFailure.Reason
    let detail: String

    /// The most partial chains path building may try (Go stops after 100 signature checks).
    static let maximumPartialChains = 100

    /// Whether building a path from `leaf` through `intermediates` could try more than
    /// ``maximumPartialChains`` partial chains. swift-certificates' verifier tries every one,
    /// checking a signature for each, with no bound: certificates of one name and one key that
    /// differ in their alternative names (so that none counts as another's repeat) each sign
    /// every other, and their orders number e·n! (10⁹ signature checks for 12 of them, on the
    /// connection's event loop, before any trust decision: a server could hang the client).
    /// Counted here as the verifier walks (by issuer name, with its repeat rule: same subject,
    /// key and alternative names), without checking signatures, so the count bounds its work;
    /// real chains make one to a few.
    static func offersTooManyPaths(leaf: X509.Certificate, intermediates: [X509.Certificate]) -> Bool {
        guard intermediates.count > 1 else { return false }
        let bySubject = Dictionary(grouping: intermediates, by: \.subject)
        func isRepeat(_ left: X509.Certificate, _ right: X509.Certificate) -> Bool {
            left.subject == right.subject && left.publicKey == right.publicKey
                && left.extensions[oid: .X509ExtensionID.subjectAlternativeName] == right.extensions[oid: .X509ExtensionID.subjectAlternativeName]
        }
        var partialChains: [[X509.Certificate]] = [[leaf]]
        var tried = 0
        while let chain = partialChains.popLast() {
            for parent in bySubject[chain[chain.count - 1].issuer] ?? [] where !chain.contains(where: { isRepeat($0, parent) }) {
                tried += 1
                if tried > Self.maximumPartialChains { return true }
                partialChains.append(chain + [parent])
            }
        }
        return false
    }

    init(leaf: X509.Certificate, intermediates: [X509.Certificate], anchors: CertificateStore, serverName: String?) async {
        var verifier = Verifier(rootCertificates: anchors) { SecTrustPolicy(serverName: serverName) }
        switch await verifier.validate(leaf: leaf, intermediates: CertificateStore(intermediates)) {
        case .validCertificate(let chain):
            self.chain = Array(chain)
            self.isValid = true
            self.reachedAnchor = true
            self.reason = .untrustedRoot
            self.detail = ""
        case .couldNotValidate(let failures):
            self.isValid = false
            if let first = failures.first {
                self.chain = Array(first.chain)
                self.reachedAnchor = true
                self.reason = Self.reason(for: self.chain, serverName: serverName)
                self.detail = first.policyFailureReason.description
            } else {
                self.chain = Self.presentedPath(from: leaf, through: intermediates)
                self.reachedAnchor = false
                // Out-of-date certificates are the likelier story than an unknown authority.
                self.reason = SecTrustPolicy.validityProblem(in: self.chain)?.reason ?? .untrustedRoot
                if let (certificate, oid) = SecTrustPolicy.unhandledCriticalExtension(in: self.chain) {
                    // The verifier builds no path through such a certificate, and says nothing.
                    self.detail = "\(certificate.subject) has a critical extension Courier does not process (\(oid)), so no chain through it is valid"
                } else {
                    let end = self.chain.last ?? leaf
                    self.detail = "no chain from \(leaf.subject) reaches a trusted certificate (the chain presented ends at \(end.subject), issued by \(end.issuer))"
                }
            }
        }
    }

    /// Why a chain that reached an anchor failed: dates first, then the host name, else its
    /// structure (constraints, an unknown critical extension, key usage).
    static func reason(for chain: [X509.Certificate], serverName: String?) -> ServerTrustFailure.Reason {
        if let (reason, _) = SecTrustPolicy.validityProblem(in: chain) { return reason }
        if let serverName, let leaf = chain.first,
            !HostnameMatcher.matches(host: serverName, names: HostnameMatcher.names(of: leaf))
        {
            return .nameMismatch
        }
        return .untrustedRoot
    }

    /// The leaf, then each presented certificate that issued the one before it (its subject is
    /// the issuer's name and its key verifies the signature), until none does.
    static func presentedPath(from leaf: X509.Certificate, through intermediates: [X509.Certificate]) -> [X509.Certificate] {
        var path = [leaf]
        var remaining = intermediates
        while let tip = path.last, tip.issuer != tip.subject,
            let next = remaining.firstIndex(where: { $0.subject == tip.issuer && $0.publicKey.isValidSignature(tip.signature, for: tip) })
        {
            path.append(remaining.remove(at: next))
        }
        return path
    }
}
