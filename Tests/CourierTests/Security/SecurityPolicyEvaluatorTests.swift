@testable import Courier
import CourierTesting
import Foundation
import NIOConcurrencyHelpers
import NIOSSL
import SwiftASN1
import Crypto
import Testing
import X509

/// ``SecurityPolicyEvaluator`` without I/O: AFNetworking's answer on every row of ``PinningMatrix``,
/// with ``TestCertificates/rootCA`` standing for the system's roots (an injected ``TrustStore``),
/// and the reasons it gives.
@Suite("AFSecurityPolicy's evaluation of a presented chain")
struct SecurityPolicyEvaluatorTests {
    static let host = "127.0.0.1"

    /// What stands for the system's roots.
    static func systemStandIn() throws -> TrustStore {
        TrustStore(try Courier.Certificate.certificates(pemEncoded: TestCertificates.rootCA))
    }

    static func presented(_ pems: [String]) throws -> [NIOSSLCertificate] {
        try pems.flatMap { try NIOSSLCertificate.fromPEMBytes(Array($0.utf8)) }
    }

    static func evaluate(
        _ policy: SecurityPolicy,
        _ chain: [String],
        host: String = Self.host,
        trustStore: TrustStore? = nil
    ) async throws -> SecurityPolicyEvaluator.Verdict {
        let evaluator = SecurityPolicyEvaluator(policy: policy, trustStore: try trustStore ?? Self.systemStandIn())
        return await evaluator.evaluate(presented: try Self.presented(chain), host: host)
    }

    static func failure(_ verdict: SecurityPolicyEvaluator.Verdict) -> ServerTrustFailure? {
        if case .refused(let failure) = verdict { return failure }
        return nil
    }

    @Test(arguments: PinningMatrix.table)
    func matrixRowGivesAFNetworkingsAnswer(_ row: PinningMatrix.Row) async throws {
        try await GeneratedCertificates.prepared()
        let verdict = try await Self.evaluate(try PinningMatrix.policy(for: row), try PinningMatrix.presented(row.identity))
        switch verdict {
        case .trusted:
            #expect(row.passes, "\(row) was trusted")
        case .refused(let failure):
            #expect(!row.passes, "\(row) was refused: \(failure)")
            #expect(failure.host == Self.host)
        }
    }

    // MARK: Reasons

    static func policy(
        _ mode: SecurityPolicy.PinningMode = .none,
        pins: [String] = [],
        allowInvalid: Bool = false,
        validatesDomain: Bool = true
    ) throws -> SecurityPolicy {
        var policy = SecurityPolicy(pinningMode: mode, pinnedCertificates: Set(try pins.flatMap { try Courier.Certificate.certificates(pemEncoded: $0) }))
        policy.allowInvalidCertificates = allowInvalid
        policy.validatesDomainName = validatesDomain
        return policy
    }

    static let localhostChain = [TestCertificates.localhostLeaf, TestCertificates.intermediateCA]

    @Test func aValidChainIsTrustedWithThePathItTook() async throws {
        guard case .trusted(let chain) = try await Self.evaluate(try Self.policy(), Self.localhostChain) else {
            Issue.record("refused")
            return
        }
        #expect(chain?.count == 3, "leaf, intermediate, and the root the server did not send")
        #expect(chain?.last?.subject.description.contains("Courier Test Root CA") == true)
    }

    @Test func certificateModeValidatesUpToThePin() async throws {
        let policy = try Self.policy(.certificate, pins: [TestCertificates.intermediateCA])
        guard case .trusted(let chain) = try await Self.evaluate(policy, Self.localhostChain) else {
            Issue.record("refused")
            return
        }
        #expect(chain?.count == 2, "the pinned intermediate is the anchor")
    }

    @Test func invalidCertificatesAllowedTrustsWithoutAChain() async throws {
        let verdict = try await Self.evaluate(try Self.policy(allowInvalid: true, validatesDomain: false), [TestCertificates.selfSignedLeaf])
        guard case .trusted(let chain) = verdict else {
            Issue.record("refused")
            return
        }
        #expect(chain == nil)
    }

    @Test func reasonsNameWhatFailed() async throws {
        let cases: [(SecurityPolicy, [String], ServerTrustFailure.Reason)] = [
            (try Self.policy(), [TestCertificates.wrongHostLeaf, TestCertificates.intermediateCA], .nameMismatch),
            (try Self.policy(), [TestCertificates.selfSignedLeaf], .untrustedRoot),
            (try Self.policy(), [TestCertificates.expiredLeaf, TestCertificates.intermediateCA], .expired),
            (try Self.policy(allowInvalid: true), Self.localhostChain, .invalidPolicy),
            (try Self.policy(.certificate), Self.localhostChain, .noPinsConfigured),
            (try Self.policy(.publicKey), Self.localhostChain, .noPinsConfigured),
            (try Self.policy(.certificate, pins: [TestCertificates.selfSignedLeaf]), Self.localhostChain, .pinMismatch),
            (try Self.policy(.publicKey, pins: [TestCertificates.selfSignedLeaf]), Self.localhostChain, .pinMismatch),
            (try Self.policy(.certificate, pins: [TestCertificates.rootCA], allowInvalid: true), [TestCertificates.expiredLeaf, TestCertificates.intermediateCA], .expired),
            (try Self.policy(.certificate, pins: [TestCertificates.rootCA], allowInvalid: true), [TestCertificates.wrongHostLeaf, TestCertificates.intermediateCA], .nameMismatch),
        ]
        for (policy, chain, reason) in cases {
            let failure = Self.failure(try await Self.evaluate(policy, chain))
            #expect(failure?.reason == reason, "\(policy): \(failure.map(String.init(describing:)) ?? "trusted")")
            #expect(failure?.host == Self.host)
            #expect(failure?.policy == policy)
        }
    }

    @Test func datesAreReportedForChainsThatReachNoAnchor() async throws {
        let generated = try await GeneratedCertificates.prepared()
        let expired = try await Self.evaluate(try Self.policy(), [generated.expiredIntermediateLeaf, generated.expiredIntermediate])
        #expect(Self.failure(expired)?.reason == .expired)
        let future = try await Self.evaluate(try Self.policy(validatesDomain: false), [generated.notYetValidLeaf])
        #expect(Self.failure(future)?.reason == .notYetValid)
        // Under a trusted second CA the same leaf reaches an anchor and fails on its dates.
        let secondCA = TrustStore(try Courier.Certificate.certificates(pemEncoded: generated.secondCA))
        let anchored = try await Self.evaluate(try Self.policy(validatesDomain: false), [generated.notYetValidLeaf], trustStore: secondCA)
        #expect(Self.failure(anchored)?.reason == .notYetValid)
    }

    @Test func nameConstraintsOfAnAuthorityApply() async throws {
        let generated = try await GeneratedCertificates.prepared()
        let secondCA = TrustStore(try Courier.Certificate.certificates(pemEncoded: generated.secondCA))
        let policy = try Self.policy(validatesDomain: false)
        let inside = try await Self.evaluate(policy, [generated.constrainedInsideLeaf, generated.constrainedIntermediate], trustStore: secondCA)
        #expect(Self.failure(inside) == nil)
        let outside = try await Self.evaluate(policy, [generated.constrainedOutsideLeaf, generated.constrainedIntermediate], trustStore: secondCA)
        #expect(Self.failure(outside)?.reason == .untrustedRoot)
    }

    /// An issuer that may not issue is refused, and the reason says which and why in words (an
    /// interop probe found the first trusted, where curl, OpenSSL and Go refuse it, and the next
    /// two told as a dump of the certificate): a key usage without keyCertSign, an issuer that is
    /// not an authority, a path-length constraint broken. A leaf with a critical extension Courier
    /// does not process is named (it was told as a chain that reaches no trusted certificate).
    @Test func issuersThatMayNotIssueAreRefusedInWords() async throws {
        let generated = try await GeneratedCertificates.prepared()
        let secondCA = TrustStore(try Courier.Certificate.certificates(pemEncoded: generated.secondCA))
        let cases: [(chain: [String], says: String)] = [
            (
                [generated.noCertSignLeaf, generated.noCertSignIntermediate],
                "CN=Courier No-Certificate-Signing Intermediate may not sign certificates (its key usage lacks keyCertSign), so it cannot issue CN=localhost"
            ),
            ([generated.leafIssuedByLeaf, generated.localhostLeaf], "CN=localhost is not a certificate authority (basic constraints), so it cannot issue CN=localhost"),
            (
                [generated.pathLengthLeaf, generated.pathLengthIntermediate, generated.intermediate],
                "CN=Courier Generated Intermediate allows 0 intermediate certificates below it (its path length constraint), and the chain has 1"
            ),
            (
                [generated.unknownCriticalLeaf, generated.intermediate],
                "CN=localhost has a critical extension Courier does not process (1.3.6.1.4.1.55555.1), so no chain through it is valid"
            ),
        ]
        for (chain, says) in cases {
            let failure = Self.failure(try await Self.evaluate(try Self.policy(), chain, trustStore: secondCA))
            #expect(failure?.reason == .untrustedRoot, "\(says): \(failure.map(String.init(describing:)) ?? "trusted")")
            #expect(failure?.detail == says, "\(failure?.detail ?? "trusted")")
        }
        // The well-formed chain through the same intermediate is trusted.
        let trusted = try await Self.evaluate(try Self.policy(), [generated.intermediateLeaf, generated.intermediate], trustStore: secondCA)
        #expect(Self.failure(trusted) == nil)
    }

    @Test func aLeafSignedByAnotherKeyUnderAPinnedName() async throws {
        let generated = try await GeneratedCertificates.prepared()
        let policy = try Self.policy(.certificate, pins: [generated.intermediate], allowInvalid: true, validatesDomain: false)
        for leaf in [generated.impostorLeaf, generated.impostorLeafWithoutKeyID] {
            let verdict = try await Self.evaluate(policy, [leaf, generated.impostorIntermediate])
            #expect(Self.failure(verdict)?.reason == .pinMismatch)
        }
        let genuine = try await Self.evaluate(policy, [generated.intermediateLeaf, generated.intermediate])
        #expect(Self.failure(genuine) == nil)
    }

    @Test func additionalTrustedCertificatesJoinTheSystemRoots() async throws {
        var policy = try Self.policy()
        let empty = TrustStore([Courier.Certificate]())
        #expect(Self.failure(try await Self.evaluate(policy, Self.localhostChain, trustStore: empty))?.reason == .untrustedRoot)
        policy.additionalTrustedCertificates = try Courier.Certificate.certificates(pemEncoded: TestCertificates.rootCA)
        #expect(Self.failure(try await Self.evaluate(policy, Self.localhostChain, trustStore: empty)) == nil)
    }

    @Test func anEmptyOrUnreadableChainIsRefused() async throws {
        let evaluator = SecurityPolicyEvaluator(policy: .default, trustStore: try Self.systemStandIn())
        let verdict = await evaluator.evaluate(presented: [], host: Self.host)
        #expect(Self.failure(verdict)?.reason == .untrustedRoot)
        let many = try Self.presented(Array(repeating: TestCertificates.intermediateCA, count: SecurityPolicyEvaluator.maximumPresentedCount))
        let tooLong = await evaluator.evaluate(presented: try Self.presented([TestCertificates.localhostLeaf]) + many, host: Self.host)
        #expect(Self.failure(tooLong)?.reason == .untrustedRoot)
        let longest = await evaluator.evaluate(presented: try Self.presented([TestCertificates.localhostLeaf]) + many.dropLast(), host: Self.host)
        #expect(Self.failure(longest) == nil, "duplicates are harmless up to the limit")
    }

    /// A self-signed certificate for localhost with an RSA key of 1024 bits: BoringSSL reads it,
    /// swift-certificates does not (its RSA keys are 2048 bits or more), as an old router's.
    static let weakKeySelfSigned = """
-----BEGIN CERTIFICATE-----
MIICHDCCAYWgAwIBAgIUHyn8uEN3pTjP/3v5LFtuDaIGKOowDQYJKoZIhvcNAQEL
BQAwFDESMBAGA1UEAwwJbG9jYWxob3N0MCAXDTI2MTIwNzA2MDUzOVoYDzIxMjYx
MTEzMDYwNTM5WjAUMRIwEAYDVQQDDAlsb2NhbGhvc3QwgZ8wDQYJKoZIhvcNAQEB
BQADgY0AMIGJAoGBALZ9Wet67k0wCpM3ka17Pl3IoM72Pt8YZB5+CvdmvhtT9/tf
YkupvtMTMU+vSCATEHUIvM1ydK0w5q6OiTEFhITtRHhdCrxzF1W6TtrBj46Io/45
oxgDARiEl71nj7m2Q2yrK29pwLLRSP3XH81V7oTbb7jkMcNgEq2r8DhkIc2nAgMB
AAGjaTBnMB0GA1UdDgQWBBSCI7fnqhC9UOefK4T6ecb3p2hXGTAfBgNVHSMEGDAW
gBSCI7fnqhC9UOefK4T6ecb3p2hXGTAPBgNVHRMBAf8EBTADAQH/MBQGA1UdEQQN
MAuCCWxvY2FsaG9zdDANBgkqhkiG9w0BAQsFAAOBgQBg0fwKZg5WWsurxTFVQ9zB
ofi45Gp2zbg5nU/3b87RT3Oa6E0LHViAK5QDAiUTLRhVOyTFld+J5NSv990vOBiY
26rkjB2yEqt3rCzRP2rqd4w/QPL7xrH/vx99fafUACJ4TgKlFq+a487Mu/NzW8TV
VaecIFN9XliXa9/lnWK4qA==
-----END CERTIFICATE-----
"""

    /// A policy that trusts any certificate trusts one Courier cannot read (AFNetworking's
    /// `allowInvalidCertificates || valid`); under any policy, a certificate other than the leaf
    /// that cannot be read is left out, not a reason to refuse: it can be on no path and match
    /// no pin. Before, both were refused ("cannot be parsed"); a leaf that cannot be read still is.
    @Test func aCertificateThatCannotBeReadIsLeftOutOrIgnored() async throws {
        let trustAll = try Self.policy(allowInvalid: true, validatesDomain: false)
        #expect(Self.failure(try await Self.evaluate(trustAll, [Self.weakKeySelfSigned])) == nil)
        #expect(Self.failure(try await Self.evaluate(trustAll, [Self.weakKeySelfSigned], host: "elsewhere.example")) == nil)
        #expect(Self.failure(try await Self.evaluate(.default, Self.localhostChain + [Self.weakKeySelfSigned])) == nil)
        #expect(Self.failure(try await Self.evaluate(.default, [Self.weakKeySelfSigned]))?.reason == .untrustedRoot)
    }

    /// Certificates of one name and one key, each with an alternative name of its own (so that
    /// path building does not take one for another's repeat): each signs every other, and every
    /// order of them is a path to try, e·n! of them. The evaluation is refused at once. Before,
    /// twelve of them made swift-certificates' verifier check about 10⁹ signatures, on the
    /// connection's event loop, for every policy but one that builds no chain.
    @Test func certificatesThatMakeTooManyPathsAreRefusedAtOnce() async throws {
        let key = P256.Signing.PrivateKey()
        let loopName = try DistinguishedName { CommonName("Courier Loop") }
        func certificate(_ alternativeName: String, subject: DistinguishedName) throws -> X509.Certificate {
            try X509.Certificate(
                version: .v3, serialNumber: .init(), publicKey: .init(key.publicKey),
                notValidBefore: Date() - 3600, notValidAfter: Date() + 3600, issuer: loopName, subject: subject,
                signatureAlgorithm: .ecdsaWithSHA256,
                extensions: try X509.Certificate.Extensions {
                    Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                    SubjectAlternativeNames([.dnsName(alternativeName)])
                },
                issuerPrivateKey: .init(key))
        }
        let leaf = try certificate("localhost", subject: DistinguishedName { CommonName("localhost") })
        let loop = try (0..<12).map { try certificate("n\($0).invalid", subject: loopName) }
        for policy in [SecurityPolicy.default, try Self.policy(.publicKey, pins: [TestCertificates.rootCA], allowInvalid: true, validatesDomain: false)] {
            let evaluator = SecurityPolicyEvaluator(policy: policy, trustStore: try Self.systemStandIn())
            let failure = Self.failure(await evaluator.evaluate(serverChain: [leaf] + loop, host: "localhost"))
            #expect(failure?.reason == .untrustedRoot)
            #expect(failure?.detail?.contains("paths to try") == true, "\(String(describing: failure))")
        }
        // Three of them make few enough paths to try (and none reaches a root).
        let few = Self.failure(await SecurityPolicyEvaluator(policy: .default, trustStore: try Self.systemStandIn()).evaluate(serverChain: [leaf] + loop.prefix(3), host: "localhost"))
        #expect(few?.reason == .untrustedRoot)
        #expect(few?.detail?.contains("paths to try") == false)
        #expect(!ChainEvaluation.offersTooManyPaths(leaf: leaf, intermediates: Array(loop.prefix(4))), "64 partial chains")
        #expect(ChainEvaluation.offersTooManyPaths(leaf: leaf, intermediates: Array(loop.prefix(5))), "325 partial chains")
    }

    /// A `.cer` file with a line break after its DER (BoringSSL reads past it, swift-certificates
    /// does not): the pin is the certificate. It was dropped from the evaluation, and the server
    /// it pins refused as not pinned. A pin the evaluation cannot read at all makes the policy
    /// invalid, named so, instead of refusing every server as not pinned.
    @Test func aPinFromADERFileWithATrailingLineBreakMatches() async throws {
        let der = Data(TestCertificates.der(TestCertificates.localhostLeaf))
        let pin = try Courier.Certificate(derEncoded: der + [0x0A])
        #expect(pin.derBytes == der)
        let policy = SecurityPolicy(pinningMode: .certificate, pinnedCertificates: [pin])
        #expect(Self.failure(try await Self.evaluate(policy, Self.localhostChain)) == nil)
        let unreadable = SecurityPolicy(pinningMode: .publicKey, pinnedCertificates: [Courier.Certificate(trustedDER: der + [0x0A])])
        let error = #expect(throws: CourierError.self) { try unreadable.validate() }
        let failure = error?.underlyingError as? ServerTrustFailure
        #expect(failure?.reason == .invalidPolicy)
        #expect(failure?.detail?.contains("cannot be checked") == true, "\(String(describing: failure))")
        #expect(Self.failure(try await Self.evaluate(unreadable, Self.localhostChain))?.reason == .invalidPolicy)
    }

    /// An additional trusted certificate the evaluation cannot read makes the policy invalid,
    /// named so, as an unreadable pin does. Before, it was left out without a word, and every
    /// server under it refused as untrusted ("issued by" the very certificate the caller added).
    @Test func anAdditionalTrustedCertificateThatCannotBeReadIsAnInvalidPolicy() async throws {
        var policy = SecurityPolicy.default
        policy.additionalTrustedCertificates = try Courier.Certificate.certificates(pemEncoded: Self.weakKeySelfSigned)
        let error = #expect(throws: CourierError.self) { try policy.validate() }
        let failure = error?.underlyingError as? ServerTrustFailure
        #expect(failure?.reason == .invalidPolicy)
        #expect(failure?.detail?.contains("additional trusted certificate") == true, "\(String(describing: failure))")
        #expect(Self.failure(try await Self.evaluate(policy, Self.localhostChain))?.reason == .invalidPolicy)
    }

    @Test func hostNamesFollowTheSSLPolicy() async throws {
        let chain = Self.localhostChain
        for host in ["localhost", "LOCALHOST", "localhost.", "127.0.0.1", "::1", "[::1]"] {
            #expect(Self.failure(try await Self.evaluate(try Self.policy(), chain, host: host)) == nil, "\(host)")
        }
        for host in ["example.com", "127.0.0.2", "local"] {
            #expect(Self.failure(try await Self.evaluate(try Self.policy(), chain, host: host))?.reason == .nameMismatch, "\(host)")
        }
    }

    // MARK: AFNetworking's decisions, one rule at a time

    /// A pinning mode with no pin refuses every server, whatever else the policy allows:
    /// AFNetworking refuses at once when invalid certificates are allowed with the domain validated
    /// ("you MUST use pinning"), and otherwise has no anchor (certificate mode) or no key (public-key
    /// mode) to match.
    @Test(arguments: [SecurityPolicy.PinningMode.certificate, .publicKey])
    func noPinRefusesWhateverElseIsAllowed(_ mode: SecurityPolicy.PinningMode) async throws {
        for allowInvalid in [false, true] {
            for validatesDomain in [false, true] {
                let policy = try Self.policy(mode, allowInvalid: allowInvalid, validatesDomain: validatesDomain)
                let failure = Self.failure(try await Self.evaluate(policy, Self.localhostChain))
                #expect(failure?.reason == .noPinsConfigured, "\(policy): \(failure.map(String.init(describing:)) ?? "trusted")")
            }
        }
    }

    /// Invalid certificates allowed with the domain validated need a pinning mode, not only pinned
    /// certificates (AFNetworking's test is `SSLPinningMode == AFSSLPinningModeNone || pinnedCertificates.count == 0`);
    /// without domain validation the same policy trusts any server (`allowInvalidCertificates || valid`).
    @Test func invalidCertificatesWithTheDomainValidatedNeedAPinningMode() async throws {
        var policy = try Self.policy(.none, pins: [TestCertificates.rootCA], allowInvalid: true)
        let failure = Self.failure(try await Self.evaluate(policy, Self.localhostChain))
        #expect(failure?.reason == .invalidPolicy, "\(failure.map(String.init(describing:)) ?? "trusted")")
        #expect(failure?.detail == "allowing invalid certificates while validating the domain name needs pinning")
        policy.validatesDomainName = false
        #expect(Self.failure(try await Self.evaluate(policy, [TestCertificates.selfSignedLeaf])) == nil)
    }

    /// A leaf out of its dates (expired, or not valid yet) under a CA that stands for a system root.
    /// Only invalid certificates allowed trusts it, with no pinning (domain not validated) or with
    /// public-key pinning: certificate pinning evaluates the chain against the pins, dates
    /// included, whether invalid certificates are allowed or not.
    @Test func leavesOutOfTheirDates() async throws {
        let generated = try await GeneratedCertificates.prepared()
        let secondCA = TrustStore(try Courier.Certificate.certificates(pemEncoded: generated.secondCA))
        let leaves: [(pem: String, reason: ServerTrustFailure.Reason)] = [(generated.expiredLeaf, .expired), (generated.notYetValidLeaf, .notYetValid)]
        for (leaf, reason) in leaves {
            let cases: [(SecurityPolicy, refused: Bool)] = [
                (try Self.policy(), true),
                (try Self.policy(validatesDomain: false), true),
                (try Self.policy(allowInvalid: true, validatesDomain: false), false),
                (try Self.policy(.certificate, pins: [generated.secondCA]), true),
                (try Self.policy(.certificate, pins: [generated.secondCA], allowInvalid: true), true),
                (try Self.policy(.certificate, pins: [leaf], allowInvalid: true), true),
                (try Self.policy(.certificate, pins: [leaf], allowInvalid: true, validatesDomain: false), true),
                (try Self.policy(.publicKey, pins: [leaf]), true),
                (try Self.policy(.publicKey, pins: [leaf], allowInvalid: true), false),
                (try Self.policy(.publicKey, pins: [generated.secondCA], allowInvalid: true), false),
            ]
            for (policy, refused) in cases {
                let failure = Self.failure(try await Self.evaluate(policy, [leaf], trustStore: secondCA))
                #expect(failure?.reason == (refused ? reason : nil), "\(reason) leaf, \(policy): \(failure.map(String.init(describing:)) ?? "trusted")")
            }
        }
    }

    /// Public-key pinning pins the keys of the pinned certificates (AFNetworking derives its pinned
    /// keys from them, into a set): a certificate that is not the server's but holds its key (a
    /// re-issued certificate) matches. Certificate pinning needs that very certificate.
    @Test func aKeyPinHoldsThroughAReissuedCertificate() async throws {
        let generated = try await GeneratedCertificates.prepared()
        let secondCA = TrustStore(try Courier.Certificate.certificates(pemEncoded: generated.secondCA))
        let reissued = generated.localhostReissuedLeaf
        for allowInvalid in [false, true] {
            let keyPin = try Self.policy(.publicKey, pins: [reissued], allowInvalid: allowInvalid)
            let keyFailure = Self.failure(try await Self.evaluate(keyPin, [generated.localhostLeaf], trustStore: secondCA))
            #expect(keyFailure == nil, "\(keyPin): \(keyFailure.map(String.init(describing:)) ?? "trusted")")
            let certificatePin = try Self.policy(.certificate, pins: [reissued], allowInvalid: allowInvalid)
            let certificateFailure = Self.failure(try await Self.evaluate(certificatePin, [generated.localhostLeaf], trustStore: secondCA))
            #expect(certificateFailure?.reason == .pinMismatch, "\(certificatePin): \(certificateFailure.map(String.init(describing:)) ?? "trusted")")
        }
        let both = try Self.policy(.publicKey, pins: [reissued, generated.localhostLeaf])
        #expect(SecurityPolicyEvaluator(policy: both, trustStore: secondCA).pinnedPublicKeys.count == 1, "one key, pinned twice")
    }

    /// The SSL policy on a wildcard leaf and an IP-address-only leaf through the whole evaluation
    /// (``HostnameMatcher`` has its own tests), as `SecTrust`'s SSL policy decides: `*.courier.test`
    /// names one label more, not `courier.test` nor two labels more; an IP address only an IP name.
    /// The same holds for a pinned leaf that anchors trust; basic X.509 (the domain not validated)
    /// checks no name.
    @Test func wildcardAndIPAddressNamesAsSecTrustsSSLPolicy() async throws {
        let generated = try await GeneratedCertificates.prepared()
        let secondCA = TrustStore(try Courier.Certificate.certificates(pemEncoded: generated.secondCA))
        let cases: [(leaf: String, host: String, named: Bool)] = [
            (generated.wildcardLeaf, "api.courier.test", true),
            (generated.wildcardLeaf, "API.Courier.Test.", true),
            (generated.wildcardLeaf, "courier.test", false),
            (generated.wildcardLeaf, "a.b.courier.test", false),
            (generated.wildcardLeaf, "127.0.0.1", false),
            (generated.ipOnlyLeaf, "127.0.0.1", true),
            (generated.ipOnlyLeaf, "::1", false),
            (generated.ipOnlyLeaf, "localhost", false),
        ]
        for (leaf, host, named) in cases {
            let expected: ServerTrustFailure.Reason? = named ? nil : .nameMismatch
            let validated = Self.failure(try await Self.evaluate(try Self.policy(), [leaf], host: host, trustStore: secondCA))
            #expect(validated?.reason == expected, "\(host): \(validated.map(String.init(describing:)) ?? "trusted")")
            let anchored = Self.failure(try await Self.evaluate(try Self.policy(.certificate, pins: [leaf], allowInvalid: true), [leaf], host: host))
            #expect(anchored?.reason == expected, "\(host), pinned leaf: \(anchored.map(String.init(describing:)) ?? "trusted")")
            let basic = Self.failure(try await Self.evaluate(try Self.policy(validatesDomain: false), [leaf], host: host, trustStore: secondCA))
            #expect(basic == nil, "\(host), domain not validated: \(basic.map(String.init(describing:)) ?? "trusted")")
        }
    }

    /// The SSL policy (domain validated) wants a leaf for server authentication; basic X.509
    /// (domain not validated) does not look at its extended key usage, as `SecPolicyCreateBasicX509`.
    @Test func aClientCertificatePassesBasicX509Only() async throws {
        let host = "courier-test-client"
        let ssl = Self.failure(try await Self.evaluate(try Self.policy(), [TestCertificates.clientCertificate], host: host))
        #expect(ssl?.reason == .untrustedRoot, "\(ssl.map(String.init(describing:)) ?? "trusted")")
        #expect(ssl?.detail?.contains("is not for server authentication") == true, "\(ssl?.detail ?? "trusted")")
        let basic = Self.failure(try await Self.evaluate(try Self.policy(validatesDomain: false), [TestCertificates.clientCertificate], host: host))
        #expect(basic == nil, "\(basic.map(String.init(describing:)) ?? "trusted")")
    }

    /// The SSL policy refuses an intermediate whose extended key usage allows neither server
    /// authentication nor any purpose (for clients only), in words, as `SecTrust`'s SSL policy and
    /// Go do; one for servers or for any purpose issues. Basic X.509 does not look at it, as
    /// it does not at the leaf's. Before, only the leaf's extended key usage was checked, and
    /// the chain through the intermediate for clients was trusted.
    @Test func anIntermediateNotForServerAuthenticationIsRefusedUnderTheSSLPolicy() async throws {
        let generated = try await GeneratedCertificates.prepared()
        let secondCA = TrustStore(try Courier.Certificate.certificates(pemEncoded: generated.secondCA))
        let clientOnly = [generated.clientOnlyIntermediateLeaf, generated.clientOnlyIntermediate]
        let ssl = Self.failure(try await Self.evaluate(try Self.policy(), clientOnly, trustStore: secondCA))
        #expect(ssl?.reason == .untrustedRoot, "\(ssl.map(String.init(describing:)) ?? "trusted")")
        let says = "CN=Courier Client-Only Intermediate is not for server authentication (its extended key usage), so it cannot issue CN=localhost"
        #expect(ssl?.detail == says, "\(ssl?.detail ?? "trusted")")
        let issuing = [
            [generated.serverAuthIntermediateLeaf, generated.serverAuthIntermediate],
            [generated.anyPurposeIntermediateLeaf, generated.anyPurposeIntermediate],
        ]
        for chain in issuing {
            let failure = Self.failure(try await Self.evaluate(try Self.policy(), chain, trustStore: secondCA))
            #expect(failure == nil, "\(failure.map(String.init(describing:)) ?? "trusted")")
        }
        for chain in [clientOnly] + issuing {
            let basic = Self.failure(try await Self.evaluate(try Self.policy(validatesDomain: false), chain, trustStore: secondCA))
            #expect(basic == nil, "domain not validated: \(basic.map(String.init(describing:)) ?? "trusted")")
        }
    }

    @Test func theEvaluationNeverSuspends() throws {
        // TLSHandshakeHandler starts it immediately on the event loop and relies on it ending there.
        let evaluator = SecurityPolicyEvaluator(policy: .default, trustStore: try Self.systemStandIn())
        let presented = try Self.presented(Self.localhostChain)
        let done = NIOLockedValueBox(false)
        Task.immediate {
            if case .trusted = await evaluator.evaluate(presented: presented, host: Self.host) {
                done.withLockedValue { $0 = true }
            }
        }
        #expect(done.withLockedValue { $0 }, "trusted before Task.immediate returned")
    }

    @Test func theSystemBundleIsRead() throws {
        guard let path = TrustStore.systemBundlePaths.first(where: { FileManager.default.fileExists(atPath: $0) }) else {
            Issue.record("no system bundle at \(TrustStore.systemBundlePaths)")
            return
        }
        let store = try #require(TrustStore.load(bundleAt: path))
        #expect(store.certificates.count > 50, "\(path)")
        #expect(store.skippedCount == 0, "every block of \(path) is a certificate")
        #expect(store.certificates.count == store.roots.count, "and swift-certificates parses every one")
        #expect(TrustStore.system.certificates.count == store.certificates.count)
    }
}

@Suite("SecurityPolicy.evaluateServerTrust(_:forDomain:)")
struct EvaluateServerTrustTests {
    @Test func aChainUnderAnAdditionalTrustedRootIsTrustedForItsNames() async throws {
        var policy = SecurityPolicy.default
        policy.additionalTrustedCertificates = try Courier.Certificate.certificates(pemEncoded: TestCertificates.rootCA)
        let chain = try [TestCertificates.localhostLeaf, TestCertificates.intermediateCA].flatMap { try Courier.Certificate.certificates(pemEncoded: $0) }
        try await policy.evaluateServerTrust(chain, forDomain: "localhost")
        let error = await #expect(throws: CourierError.self) { try await policy.evaluateServerTrust(chain, forDomain: "example.com") }
        #expect(error?.code == .serverTrustEvaluationFailed)
        #expect((error?.underlyingError as? ServerTrustFailure)?.reason == .nameMismatch)
        #expect((error?.underlyingError as? ServerTrustFailure)?.host == "example.com")
    }

    /// The public evaluation decides as the handshake does (`aCertificateThatCannotBeReadIsLeftOutOrIgnored`):
    /// a policy that trusts any certificate (AFNetworking's `allowInvalidCertificates || valid`)
    /// trusts one Courier cannot read, and a certificate other than the leaf that cannot be read
    /// is left out. Both were refused here ("a certificate of the chain cannot be parsed"), where
    /// a connection with the same policy and chain was trusted; a leaf that cannot be read still is.
    @Test func aCertificateThatCannotBeReadIsTreatedAsInTheHandshake() async throws {
        let weak = try Courier.Certificate.certificates(pemEncoded: SecurityPolicyEvaluatorTests.weakKeySelfSigned)
        var trustAll = SecurityPolicy.default
        trustAll.allowInvalidCertificates = true
        trustAll.validatesDomainName = false
        try await trustAll.evaluateServerTrust(weak, forDomain: "localhost")
        var policy = SecurityPolicy.default
        policy.additionalTrustedCertificates = try Courier.Certificate.certificates(pemEncoded: TestCertificates.rootCA)
        let chain = try [TestCertificates.localhostLeaf, TestCertificates.intermediateCA].flatMap { try Courier.Certificate.certificates(pemEncoded: $0) }
        try await policy.evaluateServerTrust(chain + weak, forDomain: "localhost")
        let error = await #expect(throws: CourierError.self) { try await policy.evaluateServerTrust(weak + chain, forDomain: "localhost") }
        #expect((error?.underlyingError as? ServerTrustFailure)?.reason == .untrustedRoot)
    }

    /// A Unicode domain is checked in its ASCII form (RFC 6125 6.4.2: a client converts a
    /// reference identifier's U-labels to A-labels), the form certificates name hosts in: a leaf
    /// for `xn--bcher-kva.example` names `bücher.example`. It was compared as UTF-8, and refused
    /// with a name mismatch.
    @Test func aUnicodeDomainIsCheckedInItsASCIIForm() async throws {
        let key = P256.Signing.PrivateKey()
        let name = try DistinguishedName { CommonName("Courier IDN") }
        let leaf = try X509.Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(key.publicKey),
            notValidBefore: Date() - 3600, notValidAfter: Date() + 3600, issuer: name, subject: name,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try X509.Certificate.Extensions {
                SubjectAlternativeNames([.dnsName("xn--bcher-kva.example")])
            },
            issuerPrivateKey: .init(key))
        var serializer = DER.Serializer()
        try serializer.serialize(leaf)
        let chain = [try Courier.Certificate(derEncoded: Data(serializer.serializedBytes))]
        var policy = SecurityPolicy(pinningMode: .certificate, pinnedCertificates: Set(chain))
        policy.allowInvalidCertificates = true
        for domain in ["bücher.example", "Bücher.Example.", "xn--bcher-kva.example"] {
            try await policy.evaluateServerTrust(chain, forDomain: domain)
        }
        let error = await #expect(throws: CourierError.self) { try await policy.evaluateServerTrust(chain, forDomain: "bucher.example") }
        #expect((error?.underlyingError as? ServerTrustFailure)?.reason == .nameMismatch)
        #expect((error?.underlyingError as? ServerTrustFailure)?.host == "bucher.example")
    }

    @Test func aSelfSignedLeafIsTrustedOnlyPinnedWithInvalidCertificatesAllowed() async throws {
        let leaf = try Courier.Certificate.certificates(pemEncoded: TestCertificates.selfSignedLeaf)
        var policy = SecurityPolicy(pinningMode: .certificate, pinnedCertificates: Set(leaf))
        let error = await #expect(throws: CourierError.self) { try await policy.evaluateServerTrust(leaf, forDomain: "localhost") }
        #expect((error?.underlyingError as? ServerTrustFailure)?.reason == .untrustedRoot, "not valid against the system's roots")
        policy.allowInvalidCertificates = true
        try await policy.evaluateServerTrust(leaf, forDomain: "localhost")
    }
}
