import Foundation
import SwiftASN1
import X509

/// The two policies AFNetworking hands to Apple's `SecTrust`, as a swift-certificates verifier
/// policy: `SecPolicyCreateSSL(true, host)` when the domain name is validated, else
/// `SecPolicyCreateBasicX509()`.
///
/// Both apply RFC 5280 to every chain of two or more certificates (signatures are checked by the
/// verifier's path building; validity dates of every certificate, the anchor's included, as
/// `SecTrust`'s temporal-validity check does; basic constraints, path lengths and `keyCertSign`
/// of every issuer, ``issuerProblem(in:)``; name constraints; unknown critical extensions
/// refuse). A chain of one certificate is a leaf that is itself an anchor (a pinned
/// certificate in certificate mode): `SecTrust` trusts it as it is, so only its dates (and, for
/// SSL, its name and extended key usage) are checked, not whether it may issue certificates.
///
/// The SSL policy adds, on the leaf: it names ``serverName`` (``HostnameMatcher``: subject
/// alternative names only, RFC 6125 wildcards), and an extended key usage, when present,
/// allows server authentication; and on every intermediate certificate (not the anchor): an
/// extended key usage, when present, allows server authentication or any purpose
/// (``intermediateUsageProblem(in:)``).
struct SecTrustPolicy: VerifierPolicy, Sendable {
    /// The host the SSL policy checks the leaf's names against; nil for basic X.509.
    let serverName: String?

    private var rfc5280 = RFC5280Policy()

    init(serverName: String?) {
        self.serverName = serverName
    }

    var verifyingCriticalExtensions: [ASN1ObjectIdentifier] { Self.handledCriticalExtensions }

    /// The critical extensions the policy processes; a certificate with another is refused.
    static let handledCriticalExtensions: [ASN1ObjectIdentifier] = [
        .X509ExtensionID.basicConstraints,
        .X509ExtensionID.nameConstraints,
        .X509ExtensionID.keyUsage,
        .X509ExtensionID.subjectAlternativeName,
        .X509ExtensionID.extendedKeyUsage,
    ]

    mutating func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) async -> PolicyEvaluationResult {
        let certificates = Array(chain)
        // Dates first, in words (swift-certificates' own reason dumps the whole certificate).
        if let (reason, certificate) = Self.validityProblem(in: certificates) {
            return .failsToMeetPolicy(reason: Self.describe(reason, of: certificate))
        }
        if certificates.count > 1 {
            // The issuers' own rules in words; then the rest of RFC 5280 (name constraints).
            if let problem = Self.issuerProblem(in: certificates) {
                return .failsToMeetPolicy(reason: problem)
            }
            if case .failsToMeetPolicy(let reason) = self.rfc5280.chainMeetsPolicyRequirements(chain: chain) {
                return .failsToMeetPolicy(reason: reason)
            }
        }
        if let serverName = self.serverName {
            if let problem = Self.serverProblem(chain.leaf, serverName: serverName) {
                return .failsToMeetPolicy(reason: problem)
            }
            if let problem = Self.intermediateUsageProblem(in: certificates) {
                return .failsToMeetPolicy(reason: problem)
            }
        }
        return .meetsPolicy
    }

    /// Why a certificate of `chain` (leaf first, anchor last) may not issue the one before it, or
    /// nil (RFC 5280 4.2.1.3, 4.2.1.9 and 6.1.4, as `SecTrust`, OpenSSL and Go apply them):
    /// - it is not a certificate authority (basic constraints);
    /// - more intermediate certificates that are not self-issued follow it than its path-length
    ///   constraint allows;
    /// - its key usage, when it has one, lacks `keyCertSign`.
    ///
    /// An anchor without basic constraints (an X.509 v1 root) is left to swift-certificates'
    /// RFC 5280 policy, as before. Said in words: swift-certificates' own reasons print the whole
    /// certificate, and before this check a key usage without `keyCertSign` was not refused at all.
    static func issuerProblem(in chain: [X509.Certificate]) -> String? {
        var intermediatesBelow = 0
        for index in chain.indices.dropFirst() {
            let issuer = chain[index], issued = chain[index - 1]
            let isAnchor = index == chain.count - 1
            do {
                switch try issuer.extensions.basicConstraints {
                case .isCertificateAuthority(let maxPathLength?) where intermediatesBelow > maxPathLength:
                    return "\(issuer.subject) allows \(maxPathLength) intermediate certificate\(maxPathLength == 1 ? "" : "s") below it (its path length constraint), and the chain has \(intermediatesBelow)"
                case .isCertificateAuthority:
                    break
                case .notCertificateAuthority:
                    return "\(issuer.subject) is not a certificate authority (basic constraints), so it cannot issue \(issued.subject)"
                case nil:
                    if !isAnchor {
                        return "\(issuer.subject) is not a certificate authority (it has no basic constraints), so it cannot issue \(issued.subject)"
                    }
                }
                if let usage = try issuer.extensions.keyUsage, !usage.keyCertSign {
                    return "\(issuer.subject) may not sign certificates (its key usage lacks keyCertSign), so it cannot issue \(issued.subject)"
                }
            } catch {
                return "\(issuer.subject) has a basic constraints or key usage extension that does not parse (\(error))"
            }
            if issuer.subject != issuer.issuer { intermediatesBelow += 1 }
        }
        return nil
    }

    /// The first certificate of `chain` with a critical extension the policy does not process,
    /// and the extension's identifier: swift-certificates builds no path through it.
    static func unhandledCriticalExtension(in chain: [X509.Certificate]) -> (X509.Certificate, ASN1ObjectIdentifier)? {
        for certificate in chain {
            if let unknown = certificate.extensions.first(where: { $0.critical && !Self.handledCriticalExtensions.contains($0.oid) }) {
                return (certificate, unknown.oid)
            }
        }
        return nil
    }

    /// Why the SSL policy refuses `leaf` for `serverName`, or nil.
    static func serverProblem(_ leaf: X509.Certificate, serverName: String) -> String? {
        let names = HostnameMatcher.names(of: leaf)
        if !HostnameMatcher.matches(host: serverName, names: names) {
            guard !names.isEmpty else {
                // A common name alone names no host (RFC 6125 6.4.4, the CA/Browser Forum's rules).
                return "\(leaf.subject) does not name \(serverName): it has no subject alternative name, and a common name is not used"
            }
            let listed = names.prefix(8).map(\.description).joined(separator: ", ") + (names.count > 8 ? ", …" : "")
            return "\(leaf.subject) does not name \(serverName): its names are \(listed)"
        }
        if !Self.allowsServerAuthentication(leaf) {
            return "\(leaf.subject) is not for server authentication (extended key usage)"
        }
        return nil
    }

    /// Why the SSL policy refuses an intermediate certificate of `chain` (leaf first, anchor
    /// last), or nil: its extended key usage, when it has one, allows neither server
    /// authentication nor any purpose, so it may not issue for a server. `SecTrust`'s SSL policy
    /// checks the certificates between the leaf and the anchor so (`SecPolicyCheckServerAuthEKU`,
    /// for chains to the system's roots), and Go checks every certificate of the chain; OpenSSL
    /// refuses such an intermediate too (and one for any purpose only). The anchor's is not
    /// looked at, as `SecTrust` does not look at it.
    static func intermediateUsageProblem(in chain: [X509.Certificate]) -> String? {
        guard chain.count > 2 else { return nil }
        for index in 1..<(chain.count - 1) where !Self.allowsServerAuthentication(chain[index]) {
            return "\(chain[index].subject) is not for server authentication (its extended key usage), so it cannot issue \(chain[index - 1].subject)"
        }
        return nil
    }

    /// Whether a certificate's extended key usage, if it has one, allows server authentication
    /// (`serverAuth`, or `anyExtendedKeyUsage`). One that does not parse does not.
    static func allowsServerAuthentication(_ certificate: X509.Certificate) -> Bool {
        do {
            guard let usages = try certificate.extensions.extendedKeyUsage else { return true }
            return usages.contains(.serverAuth) || usages.contains(.any)
        } catch {
            return false
        }
    }

    /// "CN=…: not valid after 2026-11-29T06:22:22Z" (the failure's reason says which way).
    static func describe(_ reason: ServerTrustFailure.Reason, of certificate: X509.Certificate) -> String {
        let formatter = ISO8601DateFormatter()
        let date = reason == .expired
            ? "not valid after \(formatter.string(from: certificate.notValidAfter))"
            : "not valid before \(formatter.string(from: certificate.notValidBefore))"
        return "\(certificate.subject): \(date)"
    }

    /// The first certificate of `chain` outside its validity dates at `now`, and which way.
    static func validityProblem(
        in chain: [X509.Certificate],
        now: Date = Date()
    ) -> (reason: ServerTrustFailure.Reason, certificate: X509.Certificate)? {
        for certificate in chain {
            if now > certificate.notValidAfter { return (.expired, certificate) }
            if now < certificate.notValidBefore { return (.notYetValid, certificate) }
        }
        return nil
    }
}
