@testable import Courier
import CourierTesting
import Foundation
import NIOSSL
import Testing

@Suite("How a policy becomes swift-nio-ssl's TLS configuration")
struct ServerTrustEvaluatorTests {
    static func pins(_ pem: String) throws -> Set<Certificate> {
        Set(try Certificate.certificates(pemEncoded: pem))
    }

    @Test func defaultVerifiesFullyAgainstTheSystemRoots() {
        let tls = ServerTrustEvaluator(policy: .default).tlsConfiguration()
        #expect(tls.certificateVerification == .fullVerification)
        #expect(tls.trustRoots == nil || tls.trustRoots == .default)
        #expect(tls.minimumTLSVersion == .tlsv12)
    }

    @Test func rootPinsAreTheOnlyAnchors() throws {
        let policy = SecurityPolicy(pinningMode: .certificate, pinnedCertificates: try Self.pins(TestCertificates.rootCA))
        let tls = ServerTrustEvaluator(policy: policy).tlsConfiguration()
        #expect(tls.trustRoots == .certificates([try NIOSSLCertificate(bytes: Array(TestCertificates.rootCA.utf8), format: .pem)]))
        #expect(tls.additionalTrustRoots.isEmpty)
    }

    @Test(arguments: [SecurityPolicy.PinningMode.certificate, .publicKey])
    func intermediatePinsAreAnchoredThroughTheirTwin(_ mode: SecurityPolicy.PinningMode) throws {
        let intermediate = try Self.pins(TestCertificates.intermediateCA)
        let evaluator = ServerTrustEvaluator(policy: SecurityPolicy(pinningMode: mode, pinnedCertificates: intermediate))
        #expect(evaluator.policyError == nil)
        let pinned = try #require(intermediate.first)
        let twin = try #require(AnchorTwin.make(for: pinned))
        let tls = evaluator.tlsConfiguration()
        #expect(tls.trustRoots == .certificates([try twin.nioCertificate()]))
        #expect(tls.additionalTrustRoots.isEmpty)
        let other = try NIOSSLCertificate(bytes: Array(TestCertificates.wrongHostLeaf.utf8), format: .pem)
        #expect(evaluator.evaluate(leaf: other) == nil, "BoringSSL verified the chain to the twin: nothing left to compare")
    }

    @Test func leafPinsKeepTheUsualRootsAndAreCheckedOnTheLeaf() throws {
        let policy = SecurityPolicy(pinningMode: .certificate, pinnedCertificates: try Self.pins(TestCertificates.localhostLeaf))
        let evaluator = ServerTrustEvaluator(policy: policy)
        #expect(evaluator.tlsConfiguration().trustRoots == nil || evaluator.tlsConfiguration().trustRoots == .default)
        let leaf = try NIOSSLCertificate(bytes: Array(TestCertificates.localhostLeaf.utf8), format: .pem)
        let other = try NIOSSLCertificate(bytes: Array(TestCertificates.wrongHostLeaf.utf8), format: .pem)
        #expect(evaluator.evaluate(leaf: leaf) == nil)
        #expect(evaluator.evaluate(leaf: other)?.reason == .pinMismatch)
        #expect(evaluator.evaluate(leaf: nil)?.reason == .pinMismatch)
    }

    @Test func invalidCertificatesAllowedTurnVerificationOffButNotInCertificateMode() throws {
        var none = SecurityPolicy.default
        none.allowInvalidCertificates = true
        none.validatesDomainName = false
        #expect(ServerTrustEvaluator(policy: none).tlsConfiguration().certificateVerification == .none)
        var certificate = SecurityPolicy(pinningMode: .certificate, pinnedCertificates: try Self.pins(TestCertificates.rootCA))
        certificate.allowInvalidCertificates = true
        #expect(ServerTrustEvaluator(policy: certificate).tlsConfiguration().certificateVerification == .fullVerification)
        var key = SecurityPolicy(pinningMode: .publicKey, pinnedCertificates: try Self.pins(TestCertificates.localhostLeaf))
        key.allowInvalidCertificates = true
        #expect(ServerTrustEvaluator(policy: key).tlsConfiguration().certificateVerification == .none)
    }

    @Test func clientIdentityAndMinimumVersionReachTheConfiguration() throws {
        var policy = SecurityPolicy.default
        policy.clientIdentity = try ClientIdentity(certificatePEM: TestCertificates.clientCertificate, privateKeyPEM: TestCertificates.clientKey)
        policy.minimumTLSVersion = .v1_3
        let tls = ServerTrustEvaluator(policy: policy).tlsConfiguration()
        #expect(tls.certificateChain.count == 1)
        #expect(tls.privateKey != nil)
        #expect(tls.minimumTLSVersion == .tlsv13)
    }

    @Test func datesOfAPresentedChainNameTheReason() throws {
        let expired = try NIOSSLCertificate(bytes: Array(TestCertificates.expiredLeaf.utf8), format: .pem)
        let valid = try NIOSSLCertificate(bytes: Array(TestCertificates.localhostLeaf.utf8), format: .pem)
        #expect(ServerTrustDiagnosis.reason(for: [expired]) == .expired)
        #expect(ServerTrustDiagnosis.reason(for: [valid]) == nil)
        #expect(ServerTrustDiagnosis.reason(for: [valid], now: valid.notValidBefore - 10) == .notYetValid)
    }
}
