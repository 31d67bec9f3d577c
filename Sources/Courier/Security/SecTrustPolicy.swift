import Foundation
import SwiftASN1
import X509

/// The two policies AFNetworking hands to Apple's `SecTrust`, as a swift-certificates verifier
/// policy: `SecPolicyCreateSSL(true, host)` when the domain name is validated, else
/// `SecPolicyCreateBasicX509()`.
///
/// Both apply RFC 5280 to every chain of two or more certificates (signatures are checked by the
/// verifier's path building; validity dates of every certificate, the anchor's included, as
/// `SecTrust`'s temporal-validity check does; basic and name constraints; unknown critical
/// extensions refuse). A chain of one certificate is a leaf that is itself an anchor (a pinned
/// certificate in certificate mode): `SecTrust` trusts it as it is, so only its dates (and, for
/// SSL, its name and key usage) are checked, not whether it may issue certificates.
///
/// The SSL policy adds, on the leaf: it names ``serverName`` (``HostnameMatcher``: subject
/// alternative names only, RFC 6125 wildcards), and an extended key usage, when present,
/// allows server authentication.
struct SecTrustPolicy: VerifierPolicy, Sendable {
    /// The host the SSL policy checks the leaf's names against; nil for basic X.509.
    let serverName: String?

    private var rfc5280 = RFC5280Policy()

    init(serverName: String?) {
        self.serverName = serverName
    }

    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = [
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
            if case .failsToMeetPolicy(let reason) = self.rfc5280.chainMeetsPolicyRequirements(chain: chain) {
                return .failsToMeetPolicy(reason: reason)
            }
        }
        if let serverName = self.serverName {
            if let problem = Self.serverProblem(chain.leaf, serverName: serverName) {
                return .failsToMeetPolicy(reason: problem)
            }
        }
        return .meetsPolicy
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

    /// Whether the leaf's extended key usage, if it has one, allows server authentication.
    static func allowsServerAuthentication(_ leaf: X509.Certificate) -> Bool {
        do {
            guard let usages = try leaf.extensions.extendedKeyUsage else { return true }
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
