import Courier
import CourierTesting
import Foundation
import Testing

/// Twins of AFNetworking's `Tests/Tests/AFSecurityPolicyTests.m`.
///
/// The source evaluates `SecTrust` objects built from bundled certificates (httpbin.org's and
/// app.net's chains, self-signed `foobar.com` certificates). Courier has no trust object to hand
/// around: a policy is evaluated by `NIOEngine` on a real TLS handshake. So each twin is a request
/// to TestServer presenting one of CourierTesting's chains — `localhost` (leaf → intermediate →
/// root), `wrongHost` (the same chain for another name), `selfSigned` (for `localhost`) — with the
/// policy under test, and the twin checks whether the request passes. httpbin.org's chain is
/// TestServer's `localhost` chain, app.net's is `selfSigned`, "invalid.org" is `wrongHost`.
/// Every policy trusts the test root as a private authority (the system's roots do not know it).
@Suite("Conformance: AFNetworking AFSecurityPolicyTests", .serialized)
struct AFSecurityPolicyConformanceTests {
    enum Pin { case leaf, intermediate, root, selfSigned, wrongHostLeaf, client, commonNameOnly, noName }

    static func pem(_ pin: Pin) -> String {
        switch pin {
        case .leaf: TestCertificates.localhostLeaf
        case .intermediate: TestCertificates.intermediateCA
        case .root: TestCertificates.rootCA
        case .selfSigned: TestCertificates.selfSignedLeaf
        case .wrongHostLeaf: TestCertificates.wrongHostLeaf
        case .client: TestCertificates.clientCertificate
        case .commonNameOnly: TestCertificates.selfSignedCommonNameLeaf
        case .noName: TestCertificates.selfSignedNoNameLeaf
        }
    }

    static func policy(_ mode: SecurityPolicy.PinningMode, pins: [Pin] = [], allowInvalid: Bool = false, validatesDomain: Bool = true) throws -> SecurityPolicy {
        var policy = SecurityPolicy(pinningMode: mode)
        policy.pinnedCertificates = Set(try pins.flatMap { try Certificate.certificates(pemEncoded: Self.pem($0)) })
        policy.allowInvalidCertificates = allowInvalid
        policy.validatesDomainName = validatesDomain
        policy.additionalTrustedCertificates = try Certificate.certificates(pemEncoded: TestCertificates.rootCA)
        return policy
    }

    /// AFNetworking's `foobar.com.cer`: self-signed, named only by its common name (`localhost`).
    static let commonNameOnly = TestServer.Identity.custom(
        "selfSignedCommonName", chainPEM: [TestCertificates.selfSignedCommonNameLeaf], keyPEM: TestCertificates.selfSignedCommonNameKey)
    /// AFNetworking's `NoDomains.cer`: self-signed, with no name at all.
    static let noName = TestServer.Identity.custom(
        "selfSignedNoName", chainPEM: [TestCertificates.selfSignedNoNameLeaf], keyPEM: TestCertificates.selfSignedNoNameKey)

    /// Whether a GET to a TestServer presenting `identity` passes `policy`, asked for by `host`
    /// (the server's address when nil). A refusal must be a trust or TLS error and no request may
    /// reach the server.
    static func passes(_ policy: SecurityPolicy, _ identity: TestServer.Identity, host: String? = nil) async throws -> Bool {
        try await withTestServer(.https(identity)) { server in
            let baseURL = host.map { URL(string: "https://\($0):\(server.port)/")! } ?? server.baseURL
            return try await withManager(baseURL: baseURL, securityPolicy: policy) { manager in
                do {
                    _ = try await manager.get("get")
                    return true
                } catch let error as CourierError {
                    #expect(error.code == .serverTrustEvaluationFailed || error.code == .tlsFailure, "\(error)")
                    #expect(server.requestCount == 0)
                    return false
                }
            }
        }
    }

    // MARK: Default policy

    @Test func testDefaultPolicyPinningModeIsSetToNone() { #expect(SecurityPolicy.default.pinningMode == .none) }
    @Test func testDefaultPolicyHasInvalidCertificatesAreDisabledByDefault() { #expect(!SecurityPolicy.default.allowInvalidCertificates) }
    @Test func testDefaultPolicyHasDomainNamesAreValidatedByDefault() { #expect(SecurityPolicy.default.validatesDomainName) }
    @Test func testDefaultPolicyHasNoPinnedCertificates() { #expect(SecurityPolicy.default.pinnedCertificates.isEmpty) }

    @Test func testDefaultPolicyDoesAllowHTTPBinOrgCertificate() async throws {
        #expect(try await Self.passes(Self.policy(.none), .localhost))
    }

    @Test func testDefaultPolicyDoesAllowHTTPBinOrgCertificateForValidDomainName() async throws {
        #expect(try await Self.passes(Self.policy(.none, validatesDomain: true), .localhost))
    }

    @Test func testDefaultPolicyDoesNotAllowInvalidCertificate() async throws {
        #expect(try await !Self.passes(Self.policy(.none), .selfSigned))
    }

    @Test func testDefaultPolicyDoesNotAllowCertificateWithInvalidDomainName() async throws {
        #expect(try await !Self.passes(Self.policy(.none), .wrongHost))
    }

    // MARK: Public key pinning

    /// AFNetworking pins every certificate of the main bundle by default; Courier pins what it is
    /// given, here the certificates of a folder (`SecurityPolicy.certificates(in:)`).
    static func pinsFromAFolder() throws -> Set<Certificate> {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-pins-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try TestCertificates.localhostLeaf.write(to: folder.appendingPathComponent("leaf.pem"), atomically: true, encoding: .utf8)
        try TestCertificates.rootCA.write(to: folder.appendingPathComponent("root.pem"), atomically: true, encoding: .utf8)
        return try SecurityPolicy.certificates(in: folder)
    }

    @Test func testPolicyWithPublicKeyPinningModeHasPinnedCertificates() throws {
        let policy = SecurityPolicy(pinningMode: .publicKey, pinnedCertificates: try Self.pinsFromAFolder())
        #expect(policy.pinnedCertificates.count == 2)
    }

    @Test func testPolicyWithPublicKeyPinningModeHasHTTPBinOrgPinnedCertificate() throws {
        let policy = SecurityPolicy(pinningMode: .publicKey, pinnedCertificates: try Self.pinsFromAFolder())
        let leaf = try #require(try Certificate.certificates(pemEncoded: TestCertificates.localhostLeaf).first)
        #expect(policy.pinnedCertificates.contains(leaf))
    }

    @Test func testPolicyWithPublicKeyPinningAllowsHTTPBinOrgServerTrustWithHTTPBinOrgLeafCertificatePinned() async throws {
        #expect(try await Self.passes(Self.policy(.publicKey, pins: [.leaf]), .localhost))
    }

    @Test func testPolicyWithPublicKeyPinningAllowsHTTPBinOrgServerTrustWithHTTPBinOrgIntermediateCertificatePinned() async throws {
        #expect(try await Self.passes(Self.policy(.publicKey, pins: [.intermediate]), .localhost))
    }

    @Test func testPolicyWithPublicKeyPinningAllowsHTTPBinOrgServerTrustWithHTTPBinOrgRootCertificatePinned() async throws {
        #expect(try await Self.passes(Self.policy(.publicKey, pins: [.root]), .localhost))
    }

    @Test func testPolicyWithPublicKeyPinningAllowsHTTPBinOrgServerTrustWithEntireCertificateChainPinned() async throws {
        #expect(try await Self.passes(Self.policy(.publicKey, pins: [.leaf, .intermediate, .root]), .localhost))
    }

    @Test func testPolicyWithPublicKeyPinningAllowsHTTPBirnOrgServerTrustWithHTTPbinOrgPinnedCertificateAndAdditionalPinnedCertificates() async throws {
        #expect(try await Self.passes(Self.policy(.publicKey, pins: [.leaf, .selfSigned, .client]), .localhost))
    }

    @Test func testPolicyWithPublicKeyPinningAllowsHTTPBinOrgServerTrustWithHTTPBinOrgLeafCertificatePinnedAndValidDomainName() async throws {
        #expect(try await Self.passes(Self.policy(.publicKey, pins: [.leaf], validatesDomain: true), .localhost))
    }

    /// AFNetworking's policy with no pins fails every evaluation; Courier's fails the request with
    /// `.noPinsConfigured` before connecting.
    @Test func testPolicyWithPublicKeyPinningAndNoPinnedCertificatesDoesNotAllowHTTPBinOrgServerTrust() async throws {
        #expect(try await !Self.passes(Self.policy(.publicKey), .localhost))
    }

    @Test func testPolicyWithPublicKeyPinningDoesNotAllowADNServerTrustWithHTTPBinOrgPinnedCertificate() async throws {
        #expect(try await !Self.passes(Self.policy(.publicKey, pins: [.leaf]), .selfSigned))
    }

    @Test func testPolicyWithPublicKeyPinningDoesNotAllowHTTPBinOrgServerTrustWithHTTPBinOrgLeafCertificatePinnedAndInvalidDomainName() async throws {
        #expect(try await !Self.passes(Self.policy(.publicKey, pins: [.wrongHostLeaf]), .wrongHost))
    }

    @Test func testPolicyWithPublicKeyPinningDoesNotAllowADNServerTrustWithMultipleInvalidPinnedCertificates() async throws {
        #expect(try await !Self.passes(Self.policy(.publicKey, pins: [.leaf, .client, .wrongHostLeaf]), .selfSigned))
    }

    // MARK: Certificate pinning

    @Test func testPolicyWithCertificatePinningModeHasPinnedCertificates() throws {
        let policy = SecurityPolicy(pinningMode: .certificate, pinnedCertificates: try Self.pinsFromAFolder())
        #expect(policy.pinnedCertificates.count == 2)
    }

    @Test func testPolicyWithCertificatePinningModeHasHTTPBinOrgPinnedCertificate() throws {
        let policy = SecurityPolicy(pinningMode: .certificate, pinnedCertificates: try Self.pinsFromAFolder())
        let leaf = try #require(try Certificate.certificates(pemEncoded: TestCertificates.localhostLeaf).first)
        #expect(policy.pinnedCertificates.contains(leaf))
    }

    @Test func testPolicyWithCertificatePinningAllowsHTTPBinOrgServerTrustWithHTTPBinOrgLeafCertificatePinned() async throws {
        #expect(try await Self.passes(Self.policy(.certificate, pins: [.leaf]), .localhost))
    }

    @Test func testPolicyWithCertificatePinningAllowsHTTPBinOrgServerTrustWithHTTPBinOrgIntermediateCertificatePinned() async throws {
        #expect(try await Self.passes(Self.policy(.certificate, pins: [.intermediate]), .localhost))
    }

    @Test func testPolicyWithCertificatePinningAllowsHTTPBinOrgServerTrustWithHTTPBinOrgRootCertificatePinned() async throws {
        #expect(try await Self.passes(Self.policy(.certificate, pins: [.root]), .localhost))
    }

    @Test func testPolicyWithCertificatePinningAllowsHTTPBinOrgServerTrustWithEntireCertificateChainPinned() async throws {
        #expect(try await Self.passes(Self.policy(.certificate, pins: [.leaf, .intermediate, .root]), .localhost))
    }

    @Test func testPolicyWithCertificatePinningAllowsHTTPBirnOrgServerTrustWithHTTPbinOrgPinnedCertificateAndAdditionalPinnedCertificates() async throws {
        #expect(try await Self.passes(Self.policy(.certificate, pins: [.leaf, .selfSigned, .client]), .localhost))
    }

    @Test func testPolicyWithCertificatePinningAllowsHTTPBinOrgServerTrustWithHTTPBinOrgLeafCertificatePinnedAndValidDomainName() async throws {
        #expect(try await Self.passes(Self.policy(.certificate, pins: [.leaf], validatesDomain: true), .localhost))
    }

    @Test func testPolicyWithCertificatePinningAndNoPinnedCertificatesDoesNotAllowHTTPBinOrgServerTrust() async throws {
        #expect(try await !Self.passes(Self.policy(.certificate), .localhost))
    }

    @Test func testPolicyWithCertificatePinningDoesNotAllowADNServerTrustWithHTTPBinOrgPinnedCertificate() async throws {
        #expect(try await !Self.passes(Self.policy(.certificate, pins: [.leaf]), .selfSigned))
    }

    @Test func testPolicyWithCertificatePinningDoesNotAllowHTTPBinOrgServerTrustWithHTTPBinOrgLeafCertificatePinnedAndInvalidDomainName() async throws {
        #expect(try await !Self.passes(Self.policy(.certificate, pins: [.wrongHostLeaf]), .wrongHost))
    }

    @Test func testPolicyWithCertificatePinningDoesNotAllowADNServerTrustWithMultipleInvalidPinnedCertificates() async throws {
        #expect(try await !Self.passes(Self.policy(.certificate, pins: [.leaf, .client, .wrongHostLeaf]), .selfSigned))
    }

    // MARK: Domain name validation

    @Test func testThatPolicyWithoutDomainNameValidationAllowsServerTrustWithInvalidDomainName() async throws {
        #expect(try await Self.passes(Self.policy(.none, validatesDomain: false), .wrongHost))
    }

    /// The source's certificate names its host in a DNS name (`selfSigned` names `localhost` so).
    @Test func testThatPolicyWithDomainNameValidationAndSelfSignedDNSCertificateAllowsServerTrust() async throws {
        #expect(try await Self.passes(Self.policy(.publicKey, pins: [.selfSigned], allowInvalid: true), .selfSigned))
    }

    /// The source's `foobar.com` certificate names its host only in the subject's common name;
    /// CourierTesting's `selfSignedCommonNameLeaf` names `localhost` so, and the request asks for
    /// `localhost`. Public-key pinning with invalid certificates allowed checks no name (nor does
    /// AFNetworking's: the SSL policy applies only to the evaluation whose failure is allowed), so
    /// the pin alone lets it through; no common name is read.
    @Test func testThatPolicyWithDomainNameValidationAndSelfSignedCommonNameCertificateAllowsServerTrust() async throws {
        let policy = try Self.policy(.publicKey, pins: [.commonNameOnly], allowInvalid: true)
        #expect(try await Self.passes(policy, Self.commonNameOnly, host: "localhost"))
    }

    /// A certificate with no name at all matches no host, even pinned and with invalid
    /// certificates allowed: the domain is still checked.
    @Test func testThatPolicyWithDomainNameValidationAndSelfSignedNoDomainCertificateDoesNotAllowServerTrust() async throws {
        let policy = try Self.policy(.certificate, pins: [.noName], allowInvalid: true)
        #expect(try await !Self.passes(policy, Self.noName, host: "localhost"))
        // The same policy without the name check lets it through: the name is what refused it.
        let unnamed = try Self.policy(.certificate, pins: [.noName], allowInvalid: true, validatesDomain: false)
        #expect(try await Self.passes(unnamed, Self.noName, host: "localhost"))
    }

    @Test func testThatPolicyWithDomainNameValidationDoesNotAllowServerTrustWithInvalidDomainName() async throws {
        #expect(try await !Self.passes(Self.policy(.none), .wrongHost))
    }

    // MARK: Self-signed certificates

    @Test func testThatPolicyWithInvalidCertificatesAllowedAllowsSelfSignedServerTrust() async throws {
        // AFNetworking evaluates this for a nil domain, which skips the name; Courier always has
        // the host, so the twin turns domain validation off as the nil domain does.
        #expect(try await Self.passes(Self.policy(.none, allowInvalid: true, validatesDomain: false), .selfSigned))
    }

    @Test func testThatPolicyWithInvalidCertificatesAllowedAndValidPinnedCertificatesDoesAllowSelfSignedServerTrustForValidDomainName() async throws {
        #expect(try await Self.passes(Self.policy(.publicKey, pins: [.selfSigned], allowInvalid: true), .selfSigned))
    }

    @Test func testThatPolicyWithInvalidCertificatesAllowedAndNoSSLPinningAndDomainNameValidationDisabledDoesAllowSelfSignedServerTrustForValidDomainName() async throws {
        #expect(try await Self.passes(Self.policy(.none, allowInvalid: true, validatesDomain: false), .selfSigned))
    }

    @Test func testThatPolicyWithInvalidCertificatesDisabledDoesNotAllowSelfSignedServerTrust() async throws {
        #expect(try await !Self.passes(Self.policy(.none, validatesDomain: false), .selfSigned))
    }

    @Test func testThatPolicyWithInvalidCertificatesAllowedAndNoPinnedCertificatesAndPublicKeyPinningModeDoesNotAllowSelfSignedServerTrustForValidDomainName() async throws {
        #expect(try await !Self.passes(Self.policy(.publicKey, allowInvalid: true), .selfSigned))
    }

    /// Pins without a pinning mode are ignored; invalid certificates with domain validation and no
    /// pinning is refused as a policy (AFNetworking: "you MUST use pinning").
    @Test func testThatPolicyWithInvalidCertificatesAllowedAndValidPinnedCertificatesAndNoPinningModeDoesNotAllowSelfSignedServerTrustForValidDomainName() async throws {
        #expect(try await !Self.passes(Self.policy(.none, pins: [.selfSigned], allowInvalid: true), .selfSigned))
    }

    @Test func testThatPolicyWithInvalidCertificatesAllowedAndNoValidPinnedCertificatesAndNoPinningModeAndDomainValidationDoesNotAllowSelfSignedServerTrustForValidDomainName() async throws {
        #expect(try await !Self.passes(Self.policy(.none, allowInvalid: true), .selfSigned))
    }

    /// A value copy: equal, and independent afterwards.
    @Test func testThatPolicyCanBeCopied() throws {
        var original = try Self.policy(.certificate, pins: [.leaf], allowInvalid: true, validatesDomain: false)
        let copy = original
        #expect(copy == original)
        #expect(copy.pinnedCertificates == original.pinnedCertificates)
        original.pinnedCertificates = []
        #expect(copy.pinnedCertificates.count == 1)
    }
}
