import Courier
import CourierTesting
import Foundation
import Testing

/// Certificates made by `openssl` at test time (see ``GeneratedCertificates``), served over HTTPS.
@Suite("Pinning with openssl-generated certificates", .serialized)
struct GeneratedCertificateTests {
    enum Kind: String, Sendable, CaseIterable, CustomStringConvertible {
        case secondCALeaf, wildcard, ipOnly, notYetValid
        var description: String { self.rawValue }
    }

    enum Pin: String, Sendable, CustomStringConvertible {
        case none, leaf, secondCA, testRoot
        var description: String { self.rawValue }
    }

    struct Row: Sendable, CustomStringConvertible {
        let kind: Kind
        let mode: SecurityPolicy.PinningMode
        var allowInvalid = false
        let validatesDomain: Bool
        let pin: Pin
        let passes: Bool
        let reason: ServerTrustFailure.Reason?
        var description: String {
            "\(self.kind) \(self.mode) invalid:\(self.allowInvalid) domain:\(self.validatesDomain) pin:\(self.pin) → \(self.passes ? "pass" : "fail")"
        }
    }

    static let T = true, F = false

    // swift-format-ignore
    /// Certificate kind, pinning mode, allowInvalidCertificates, validatesDomainName, pin, passes,
    /// reason when it fails. The second CA is not trusted unless pinned; the server is reached as
    /// 127.0.0.1. As in AFNetworking, a pin does not make an untrusted chain valid unless invalid
    /// certificates are allowed (the chain must first be valid against the system's roots); with
    /// them allowed, certificate mode makes the pins the only anchors and still checks the chain
    /// (dates, and the name when asked). Public-key mode looks for a pinned key in the chain the
    /// roots give: these servers send their leaf alone, so a pinned CA key is not in it.
    static let table: [Row] = [
        Row(kind: .secondCALeaf, mode: .none,                           validatesDomain: T, pin: .none,     passes: F, reason: .untrustedRoot),
        Row(kind: .secondCALeaf, mode: .certificate,                    validatesDomain: T, pin: .secondCA, passes: F, reason: .untrustedRoot),
        Row(kind: .secondCALeaf, mode: .certificate, allowInvalid: T,   validatesDomain: T, pin: .secondCA, passes: T, reason: nil),
        Row(kind: .secondCALeaf, mode: .certificate, allowInvalid: T,   validatesDomain: T, pin: .testRoot, passes: F, reason: .pinMismatch),
        Row(kind: .secondCALeaf, mode: .publicKey,                      validatesDomain: T, pin: .secondCA, passes: F, reason: .untrustedRoot),
        Row(kind: .secondCALeaf, mode: .publicKey,   allowInvalid: T,   validatesDomain: T, pin: .secondCA, passes: F, reason: .pinMismatch),
        Row(kind: .secondCALeaf, mode: .publicKey,                      validatesDomain: T, pin: .testRoot, passes: F, reason: .untrustedRoot),
        Row(kind: .wildcard,     mode: .certificate, allowInvalid: T,   validatesDomain: T, pin: .secondCA, passes: F, reason: .nameMismatch),
        Row(kind: .wildcard,     mode: .certificate, allowInvalid: T,   validatesDomain: F, pin: .secondCA, passes: T, reason: nil),
        Row(kind: .wildcard,     mode: .certificate,                    validatesDomain: F, pin: .secondCA, passes: F, reason: .untrustedRoot),
        Row(kind: .ipOnly,       mode: .certificate, allowInvalid: T,   validatesDomain: T, pin: .secondCA, passes: T, reason: nil),
        Row(kind: .ipOnly,       mode: .publicKey,   allowInvalid: T,   validatesDomain: T, pin: .secondCA, passes: F, reason: .pinMismatch),
        Row(kind: .ipOnly,       mode: .certificate,                    validatesDomain: T, pin: .secondCA, passes: F, reason: .untrustedRoot),
        Row(kind: .notYetValid,  mode: .certificate,                    validatesDomain: T, pin: .secondCA, passes: F, reason: .notYetValid),
        Row(kind: .notYetValid,  mode: .certificate, allowInvalid: T,   validatesDomain: F, pin: .secondCA, passes: F, reason: .notYetValid),
        Row(kind: .notYetValid,  mode: .none,                           validatesDomain: T, pin: .none,     passes: F, reason: .notYetValid),
    ]

    static func identity(_ kind: Kind, _ certificates: GeneratedCertificates) -> TestServer.Identity {
        switch kind {
        case .secondCALeaf: .custom("secondCALeaf", chainPEM: [certificates.localhostLeaf], keyPEM: certificates.localhostKey)
        case .wildcard: .custom("wildcard", chainPEM: [certificates.wildcardLeaf], keyPEM: certificates.wildcardKey)
        case .ipOnly: .custom("ipOnly", chainPEM: [certificates.ipOnlyLeaf], keyPEM: certificates.ipOnlyKey)
        case .notYetValid: .custom("notYetValid", chainPEM: [certificates.notYetValidLeaf], keyPEM: certificates.notYetValidKey)
        }
    }

    @Test(arguments: Self.table)
    func row(_ row: Row) async throws {
        try await GeneratedCertificates.prepared()
        let certificates = try GeneratedCertificates.shared.get()
        var policy = SecurityPolicy(pinningMode: row.mode)
        switch row.pin {
        case .none: break
        case .leaf: policy.pinnedCertificates = Set(try Certificate.certificates(pemEncoded: certificates.localhostLeaf))
        case .secondCA: policy.pinnedCertificates = Set(try Certificate.certificates(pemEncoded: certificates.secondCA))
        case .testRoot: policy.pinnedCertificates = Set(try Certificate.certificates(pemEncoded: TestCertificates.rootCA))
        }
        policy.validatesDomainName = row.validatesDomain
        policy.allowInvalidCertificates = row.allowInvalid
        try await withTestServer(.https(Self.identity(row.kind, certificates))) { server in
            try await withManager(baseURL: server.baseURL, securityPolicy: policy) { manager in
                do {
                    let response = try await manager.get("get")
                    #expect(row.passes, "\(row) passed")
                    #expect(response.response.status == .ok)
                } catch let error as CourierError {
                    #expect(!row.passes, "\(row) failed: \(error)")
                    #expect((error.underlyingError as? ServerTrustFailure)?.reason == row.reason, "\(row): \(error)")
                    #expect(server.requestCount == 0)
                }
            }
        }
    }
}
