import Courier
import CourierTesting
import Foundation
import Testing

/// AFNetworking's AFSecurityPolicyTests over a real socket: each row is a policy, the certificate
/// the server presents, the pin, and whether a request must succeed.
///
/// The servers' chains: ``TestCertificates/rootCA`` → ``TestCertificates/intermediateCA`` → leaf
/// for `localhost`, `wrongHost` (another name) and `expired`; `selfSigned` stands alone. The
/// server sends its leaf and the intermediate. Every policy trusts `rootCA` beside the system's
/// roots (a private authority): pinned anchors replace both.
///
/// Where NIOEngine differs from AFNetworking (AHC shows only the leaf; BoringSSL anchors only on
/// self-issued certificates): an intermediate pin is refused; a pinned CA-issued leaf needs its
/// chain to verify against the usual roots; a pinned root's key in public-key mode is its anchor.
@Suite("Pinning matrix over HTTPS", .serialized)
struct PinningMatrixTests {
    enum Pin: String, Sendable, CustomStringConvertible {
        case leaf, root, intermediate, other
        var description: String { self.rawValue }
    }

    struct Row: Sendable, CustomStringConvertible {
        let mode: SecurityPolicy.PinningMode
        let allowInvalid: Bool
        let validatesDomain: Bool
        let identity: TestServer.Identity
        let pin: Pin?
        let passes: Bool
        var description: String {
            "\(self.mode) invalid:\(self.allowInvalid) domain:\(self.validatesDomain) \(self.identity) pin:\(self.pin.map(\.description) ?? "-") → \(self.passes ? "pass" : "fail")"
        }
    }

    typealias I = TestServer.Identity
    static let T = true, F = false

    // swift-format-ignore
    /// mode, allowInvalidCertificates, validatesDomainName, server certificate, pin, passes.
    static let table: [Row] = [
        // No pinning: the chain against the roots (rootCA added), the name if validated.
        Row(mode: .none, allowInvalid: F, validatesDomain: T, identity: .localhost,  pin: nil, passes: T),
        Row(mode: .none, allowInvalid: F, validatesDomain: T, identity: .wrongHost,  pin: nil, passes: F),
        Row(mode: .none, allowInvalid: F, validatesDomain: T, identity: .selfSigned, pin: nil, passes: F),
        Row(mode: .none, allowInvalid: F, validatesDomain: T, identity: .expired,    pin: nil, passes: F),
        Row(mode: .none, allowInvalid: F, validatesDomain: F, identity: .localhost,  pin: nil, passes: T),
        Row(mode: .none, allowInvalid: F, validatesDomain: F, identity: .wrongHost,  pin: nil, passes: T),
        Row(mode: .none, allowInvalid: F, validatesDomain: F, identity: .selfSigned, pin: nil, passes: F),
        Row(mode: .none, allowInvalid: F, validatesDomain: F, identity: .expired,    pin: nil, passes: F),
        // Invalid certificates allowed with the domain validated but no pin: AFNetworking refuses.
        Row(mode: .none, allowInvalid: T, validatesDomain: T, identity: .localhost,  pin: nil, passes: F),
        Row(mode: .none, allowInvalid: T, validatesDomain: F, identity: .localhost,  pin: nil, passes: T),
        Row(mode: .none, allowInvalid: T, validatesDomain: F, identity: .wrongHost,  pin: nil, passes: T),
        Row(mode: .none, allowInvalid: T, validatesDomain: F, identity: .selfSigned, pin: nil, passes: T),
        Row(mode: .none, allowInvalid: T, validatesDomain: F, identity: .expired,    pin: nil, passes: T),

        // Certificate pinning: the pins are the only anchors; one must be in the chain. The chain
        // is evaluated even when invalid certificates are allowed (AFNetworking sets the anchors
        // and evaluates).
        Row(mode: .certificate, allowInvalid: F, validatesDomain: T, identity: .localhost,  pin: .root,         passes: T),
        // An intermediate can be neither an anchor (BoringSSL) nor seen (AHC): refused.
        Row(mode: .certificate, allowInvalid: F, validatesDomain: T, identity: .localhost,  pin: .intermediate, passes: F),
        Row(mode: .certificate, allowInvalid: F, validatesDomain: T, identity: .localhost,  pin: .leaf,         passes: T),
        Row(mode: .certificate, allowInvalid: F, validatesDomain: T, identity: .localhost,  pin: .other,        passes: F),
        Row(mode: .certificate, allowInvalid: F, validatesDomain: T, identity: .wrongHost,  pin: .root,         passes: F),
        Row(mode: .certificate, allowInvalid: F, validatesDomain: F, identity: .wrongHost,  pin: .root,         passes: T),
        Row(mode: .certificate, allowInvalid: F, validatesDomain: F, identity: .wrongHost,  pin: .other,        passes: F),
        Row(mode: .certificate, allowInvalid: F, validatesDomain: T, identity: .wrongHost,  pin: .leaf,         passes: F),
        Row(mode: .certificate, allowInvalid: F, validatesDomain: F, identity: .wrongHost,  pin: .leaf,         passes: T),
        Row(mode: .certificate, allowInvalid: F, validatesDomain: T, identity: .expired,    pin: .leaf,         passes: F),
        Row(mode: .certificate, allowInvalid: F, validatesDomain: T, identity: .selfSigned, pin: .leaf,         passes: T),
        Row(mode: .certificate, allowInvalid: F, validatesDomain: T, identity: .selfSigned, pin: .other,        passes: F),
        Row(mode: .certificate, allowInvalid: F, validatesDomain: T, identity: .expired,    pin: .root,         passes: F),
        Row(mode: .certificate, allowInvalid: T, validatesDomain: T, identity: .localhost,  pin: .root,         passes: T),
        Row(mode: .certificate, allowInvalid: T, validatesDomain: T, identity: .localhost,  pin: .other,        passes: F),
        Row(mode: .certificate, allowInvalid: T, validatesDomain: T, identity: .wrongHost,  pin: .root,         passes: F),
        Row(mode: .certificate, allowInvalid: T, validatesDomain: F, identity: .wrongHost,  pin: .root,         passes: T),
        Row(mode: .certificate, allowInvalid: T, validatesDomain: T, identity: .selfSigned, pin: .leaf,         passes: T),
        Row(mode: .certificate, allowInvalid: T, validatesDomain: T, identity: .expired,    pin: .root,         passes: F),

        // Public-key pinning: the chain must be valid unless invalid certificates are allowed,
        // and the leaf's key must be pinned (only the leaf is visible on NIOEngine).
        Row(mode: .publicKey, allowInvalid: F, validatesDomain: T, identity: .localhost,  pin: .leaf,  passes: T),
        Row(mode: .publicKey, allowInvalid: F, validatesDomain: T, identity: .localhost,  pin: .other, passes: F),
        Row(mode: .publicKey, allowInvalid: F, validatesDomain: T, identity: .localhost,  pin: .root,  passes: T),
        Row(mode: .publicKey, allowInvalid: F, validatesDomain: T, identity: .expired,    pin: .root,  passes: F),
        Row(mode: .publicKey, allowInvalid: F, validatesDomain: T, identity: .selfSigned, pin: .root,  passes: F),
        Row(mode: .publicKey, allowInvalid: F, validatesDomain: T, identity: .localhost,  pin: .intermediate, passes: F),
        Row(mode: .publicKey, allowInvalid: F, validatesDomain: T, identity: .wrongHost,  pin: .leaf,  passes: F),
        Row(mode: .publicKey, allowInvalid: F, validatesDomain: F, identity: .wrongHost,  pin: .leaf,  passes: T),
        Row(mode: .publicKey, allowInvalid: F, validatesDomain: T, identity: .selfSigned, pin: .leaf,  passes: F),
        Row(mode: .publicKey, allowInvalid: F, validatesDomain: T, identity: .expired,    pin: .leaf,  passes: F),
        Row(mode: .publicKey, allowInvalid: T, validatesDomain: T, identity: .localhost,  pin: .leaf,  passes: T),
        Row(mode: .publicKey, allowInvalid: T, validatesDomain: T, identity: .localhost,  pin: .other, passes: F),
        Row(mode: .publicKey, allowInvalid: T, validatesDomain: T, identity: .wrongHost,  pin: .leaf,  passes: T),
        Row(mode: .publicKey, allowInvalid: T, validatesDomain: F, identity: .selfSigned, pin: .leaf,  passes: T),
        Row(mode: .publicKey, allowInvalid: T, validatesDomain: T, identity: .selfSigned, pin: .other, passes: F),
        Row(mode: .publicKey, allowInvalid: T, validatesDomain: T, identity: .expired,    pin: .leaf,  passes: T),
        Row(mode: .publicKey, allowInvalid: T, validatesDomain: F, identity: .wrongHost,  pin: .root,  passes: T),
        Row(mode: .publicKey, allowInvalid: T, validatesDomain: T, identity: .wrongHost,  pin: .root,  passes: T),
        Row(mode: .publicKey, allowInvalid: T, validatesDomain: T, identity: .expired,    pin: .root,  passes: F),
    ]

    static func leafPEM(_ identity: I) -> String {
        switch identity {
        case .localhost: TestCertificates.localhostLeaf
        case .wrongHost: TestCertificates.wrongHostLeaf
        case .selfSigned: TestCertificates.selfSignedLeaf
        default: TestCertificates.expiredLeaf
        }
    }

    static func policy(for row: Row) throws -> SecurityPolicy {
        var policy = SecurityPolicy(pinningMode: row.mode)
        if let pin = row.pin {
            let pem: String
            switch pin {
            case .leaf: pem = Self.leafPEM(row.identity)
            case .root: pem = TestCertificates.rootCA
            case .intermediate: pem = TestCertificates.intermediateCA
            case .other: pem = row.identity == .selfSigned ? TestCertificates.localhostLeaf : TestCertificates.selfSignedLeaf
            }
            policy.pinnedCertificates = Set(try Certificate.certificates(pemEncoded: pem))
        }
        policy.allowInvalidCertificates = row.allowInvalid
        policy.validatesDomainName = row.validatesDomain
        policy.additionalTrustedCertificates = try Certificate.certificates(pemEncoded: TestCertificates.rootCA)
        return policy
    }

    @Test(arguments: Self.table)
    func row(_ row: Row) async throws {
        let server = TestServer.Configuration.https(row.identity)
        try await withTestServer(server) { server in
            try await withManager(baseURL: server.baseURL, securityPolicy: try Self.policy(for: row)) { manager in
                let started = ContinuousClock.now
                do {
                    let response = try await manager.get("get")
                    #expect(row.passes, "\(row) passed")
                    #expect(response.response.status == .ok)
                } catch let error as CourierError {
                    #expect(!row.passes, "\(row) failed: \(error)")
                    #expect(error.code == .serverTrustEvaluationFailed || error.code == .tlsFailure, "\(row): \(error)")
                    #expect(server.requestCount == 0, "no request reaches an untrusted server")
                    #expect(ContinuousClock.now - started < .seconds(8), "fails well before the 10 s connect timeout")
                }
            }
        }
    }
}
