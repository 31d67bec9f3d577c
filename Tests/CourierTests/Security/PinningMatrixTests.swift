import Courier
import CourierTesting
import Foundation
import Testing

/// AFNetworking's AFSecurityPolicyTests over a real socket: each row is a policy, the certificate
/// the server presents, the pin, and whether a request must succeed.
///
/// The servers' chains: ``TestCertificates/rootCA`` → ``TestCertificates/intermediateCA`` → leaf
/// for `localhost`, `wrongHost` (another name) and `expired`; `selfSigned` stands alone. Made by
/// `openssl` (``GeneratedCertificates``), under a second CA that no policy trusts unless pinned:
/// `expiredIntermediate` (an expired intermediate → leaf), and `impostor` / `impostorWithoutKeyID`
/// (a leaf whose issuer has the generated intermediate's name but another key), and
/// `constrainedInside` / `constrainedOutside` (an intermediate whose name constraints permit only
/// `courier.test`, with a leaf for `api.courier.test` and one for `localhost`), and
/// `privateLeaf` / `privateExpired` / `privateOtherName` (leaves issued by the second CA itself:
/// for `localhost` and `127.0.0.1`, the same but expired, and for `*.courier.test`). The server sends
/// its leaf and the intermediate. Every policy trusts `rootCA` beside the system's roots (a
/// private authority): pinned anchors replace both.
///
/// Where NIOEngine differs from AFNetworking (AHC shows only the leaf; BoringSSL anchors only on
/// self-signed certificates): a pinned intermediate anchors through its twin (``AnchorTwin`` in
/// Courier); a pinned CA-issued leaf is its own anchor only when invalid certificates are allowed
/// (as in AFNetworking, certificate mode), else its chain must verify against the usual roots; a pinned
/// authority's key in public-key mode is its anchor, so the chain is checked even when invalid
/// certificates are allowed.
@Suite("Pinning matrix over HTTPS", .serialized)
struct PinningMatrixTests {
    enum Pin: String, Sendable, CustomStringConvertible {
        /// The server's leaf, its chain's root, its chain's intermediate (for the impostors: the
        /// genuine intermediate of that name), a self-signed or CA-issued leaf of another server,
        /// an intermediate of another chain, a CA-issued leaf for `localhost` of another server.
        case leaf, root, intermediate, other, otherIntermediate, otherIssued
        var description: String { self.rawValue }
    }

    enum Server: String, Sendable, CustomStringConvertible {
        case localhost, wrongHost, selfSigned, expired
        case expiredIntermediate, impostor, impostorWithoutKeyID
        case constrainedInside, constrainedOutside
        case privateLeaf, privateExpired, privateOtherName
        var description: String { self.rawValue }
    }

    struct Row: Sendable, CustomStringConvertible {
        let mode: SecurityPolicy.PinningMode
        let allowInvalid: Bool
        let validatesDomain: Bool
        let identity: Server
        let pin: Pin?
        let passes: Bool
        var description: String {
            "\(self.mode) invalid:\(self.allowInvalid) domain:\(self.validatesDomain) \(self.identity) pin:\(self.pin.map(\.description) ?? "-") → \(self.passes ? "pass" : "fail")"
        }
    }

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
        Row(mode: .certificate, allowInvalid: F, validatesDomain: T, identity: .localhost,  pin: .intermediate, passes: T),
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
        Row(mode: .publicKey, allowInvalid: F, validatesDomain: T, identity: .localhost,  pin: .intermediate, passes: T),
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

        // Intermediate pins: the intermediate's twin is the only anchor, so the leaf must be
        // signed by the pinned intermediate's key, and the names and dates are checked as for a
        // pinned root (in public-key mode with invalid certificates allowed: the dates, not the name).
        Row(mode: .certificate, allowInvalid: F, validatesDomain: F, identity: .localhost,  pin: .intermediate, passes: T),
        Row(mode: .certificate, allowInvalid: F, validatesDomain: T, identity: .wrongHost,  pin: .intermediate, passes: F),
        Row(mode: .certificate, allowInvalid: F, validatesDomain: F, identity: .wrongHost,  pin: .intermediate, passes: T),
        Row(mode: .certificate, allowInvalid: T, validatesDomain: T, identity: .wrongHost,  pin: .intermediate, passes: F),
        Row(mode: .certificate, allowInvalid: T, validatesDomain: F, identity: .wrongHost,  pin: .intermediate, passes: T),
        Row(mode: .certificate, allowInvalid: F, validatesDomain: T, identity: .expired,    pin: .intermediate, passes: F),
        Row(mode: .certificate, allowInvalid: T, validatesDomain: T, identity: .expired,    pin: .intermediate, passes: F),
        Row(mode: .certificate, allowInvalid: F, validatesDomain: T, identity: .selfSigned, pin: .intermediate, passes: F),
        Row(mode: .certificate, allowInvalid: F, validatesDomain: T, identity: .localhost,  pin: .otherIntermediate, passes: F),
        Row(mode: .certificate, allowInvalid: T, validatesDomain: F, identity: .localhost,  pin: .otherIntermediate, passes: F),
        Row(mode: .publicKey,   allowInvalid: F, validatesDomain: F, identity: .localhost,  pin: .intermediate, passes: T),
        Row(mode: .publicKey,   allowInvalid: F, validatesDomain: T, identity: .wrongHost,  pin: .intermediate, passes: F),
        Row(mode: .publicKey,   allowInvalid: F, validatesDomain: F, identity: .wrongHost,  pin: .intermediate, passes: T),
        Row(mode: .publicKey,   allowInvalid: T, validatesDomain: T, identity: .wrongHost,  pin: .intermediate, passes: T),
        Row(mode: .publicKey,   allowInvalid: F, validatesDomain: T, identity: .expired,    pin: .intermediate, passes: F),
        Row(mode: .publicKey,   allowInvalid: T, validatesDomain: T, identity: .expired,    pin: .intermediate, passes: F),
        Row(mode: .publicKey,   allowInvalid: F, validatesDomain: T, identity: .selfSigned, pin: .intermediate, passes: F),
        Row(mode: .publicKey,   allowInvalid: F, validatesDomain: T, identity: .localhost,  pin: .otherIntermediate, passes: F),
        Row(mode: .publicKey,   allowInvalid: T, validatesDomain: F, identity: .localhost,  pin: .otherIntermediate, passes: F),
        // An expired intermediate fails whatever is pinned, invalid certificates allowed or not.
        Row(mode: .none,        allowInvalid: F, validatesDomain: T, identity: .expiredIntermediate, pin: nil,           passes: F),
        Row(mode: .certificate, allowInvalid: F, validatesDomain: T, identity: .expiredIntermediate, pin: .intermediate, passes: F),
        Row(mode: .certificate, allowInvalid: T, validatesDomain: F, identity: .expiredIntermediate, pin: .intermediate, passes: F),
        Row(mode: .certificate, allowInvalid: F, validatesDomain: T, identity: .expiredIntermediate, pin: .root,         passes: F),
        Row(mode: .publicKey,   allowInvalid: F, validatesDomain: T, identity: .expiredIntermediate, pin: .intermediate, passes: F),
        Row(mode: .publicKey,   allowInvalid: T, validatesDomain: F, identity: .expiredIntermediate, pin: .intermediate, passes: F),
        // The impostors' chains are sound up to their root: pinning it passes (the generated root
        // is trusted only when pinned).
        Row(mode: .certificate, allowInvalid: F, validatesDomain: T, identity: .impostor,             pin: .root, passes: T),
        Row(mode: .certificate, allowInvalid: F, validatesDomain: T, identity: .impostorWithoutKeyID, pin: .root, passes: T),
        // A leaf whose issuer has the pinned intermediate's name but another key: refused, whether
        // its authority key identifier tells the keys apart or only the signature does.
        Row(mode: .certificate, allowInvalid: F, validatesDomain: T, identity: .impostor,             pin: .intermediate, passes: F),
        Row(mode: .certificate, allowInvalid: T, validatesDomain: F, identity: .impostor,             pin: .intermediate, passes: F),
        Row(mode: .publicKey,   allowInvalid: T, validatesDomain: F, identity: .impostor,             pin: .intermediate, passes: F),
        Row(mode: .certificate, allowInvalid: F, validatesDomain: T, identity: .impostorWithoutKeyID, pin: .intermediate, passes: F),
        Row(mode: .certificate, allowInvalid: T, validatesDomain: F, identity: .impostorWithoutKeyID, pin: .intermediate, passes: F),
        Row(mode: .publicKey,   allowInvalid: T, validatesDomain: F, identity: .impostorWithoutKeyID, pin: .intermediate, passes: F),
        // The twin keeps the intermediate's name constraints (BoringSSL applies an anchor's too).
        Row(mode: .certificate, allowInvalid: F, validatesDomain: F, identity: .constrainedInside,  pin: .intermediate, passes: T),
        Row(mode: .certificate, allowInvalid: F, validatesDomain: F, identity: .constrainedOutside, pin: .intermediate, passes: F),
        Row(mode: .publicKey,   allowInvalid: T, validatesDomain: F, identity: .constrainedOutside, pin: .intermediate, passes: F),
        // A pinned CA-issued leaf whose CA nobody trusts: with invalid certificates allowed it is
        // its own anchor (certificate mode): the exact leaf, its dates, its name if validated.
        // Without, its chain must verify against the system's roots and fails.
        Row(mode: .certificate, allowInvalid: F, validatesDomain: T, identity: .privateLeaf,      pin: .leaf,        passes: F),
        Row(mode: .certificate, allowInvalid: F, validatesDomain: F, identity: .privateLeaf,      pin: .leaf,        passes: F),
        Row(mode: .certificate, allowInvalid: T, validatesDomain: T, identity: .privateLeaf,      pin: .leaf,        passes: T),
        Row(mode: .certificate, allowInvalid: T, validatesDomain: F, identity: .privateLeaf,      pin: .leaf,        passes: T),
        Row(mode: .certificate, allowInvalid: T, validatesDomain: T, identity: .privateLeaf,      pin: .otherIssued, passes: F),
        Row(mode: .certificate, allowInvalid: T, validatesDomain: F, identity: .privateLeaf,      pin: .otherIssued, passes: F),
        Row(mode: .certificate, allowInvalid: T, validatesDomain: T, identity: .privateExpired,   pin: .leaf,        passes: F),
        Row(mode: .certificate, allowInvalid: T, validatesDomain: F, identity: .privateExpired,   pin: .leaf,        passes: F),
        Row(mode: .certificate, allowInvalid: T, validatesDomain: T, identity: .privateOtherName, pin: .leaf,        passes: F),
        Row(mode: .certificate, allowInvalid: T, validatesDomain: F, identity: .privateOtherName, pin: .leaf,        passes: T),
        // The same anchoring for a leaf of a trusted chain (rootCA added).
        Row(mode: .certificate, allowInvalid: T, validatesDomain: T, identity: .localhost,        pin: .leaf,        passes: T),
        Row(mode: .certificate, allowInvalid: T, validatesDomain: T, identity: .wrongHost,        pin: .leaf,        passes: F),
        Row(mode: .certificate, allowInvalid: T, validatesDomain: F, identity: .wrongHost,        pin: .leaf,        passes: T),
        Row(mode: .certificate, allowInvalid: T, validatesDomain: T, identity: .expired,          pin: .leaf,        passes: F),
    ]

    /// The chain a server presents (leaf first), its key, its root and its intermediate.
    struct Chain {
        let certificates: [String], key: String, root: String, intermediate: String
    }

    static func chain(_ server: Server) throws -> Chain {
        let root = TestCertificates.rootCA, intermediate = TestCertificates.intermediateCA
        switch server {
        case .localhost: return Chain(certificates: [TestCertificates.localhostLeaf], key: "", root: root, intermediate: intermediate)
        case .wrongHost: return Chain(certificates: [TestCertificates.wrongHostLeaf], key: "", root: root, intermediate: intermediate)
        case .selfSigned: return Chain(certificates: [TestCertificates.selfSignedLeaf], key: "", root: root, intermediate: intermediate)
        case .expired: return Chain(certificates: [TestCertificates.expiredLeaf], key: "", root: root, intermediate: intermediate)
        case .constrainedInside, .constrainedOutside:
            let generated = try GeneratedCertificates.shared.get()
            let (leaf, key) =
                server == .constrainedInside
                ? (generated.constrainedInsideLeaf, generated.constrainedInsideKey)
                : (generated.constrainedOutsideLeaf, generated.constrainedOutsideKey)
            return Chain(certificates: [leaf, generated.constrainedIntermediate], key: key, root: generated.secondCA, intermediate: generated.constrainedIntermediate)
        case .privateLeaf, .privateExpired, .privateOtherName:
            let generated = try GeneratedCertificates.shared.get()
            let (leaf, key) =
                switch server {
                case .privateLeaf: (generated.localhostLeaf, generated.localhostKey)
                case .privateExpired: (generated.expiredLeaf, generated.expiredKey)
                default: (generated.wildcardLeaf, generated.wildcardKey)
                }
            return Chain(certificates: [leaf], key: key, root: generated.secondCA, intermediate: generated.intermediate)
        case .expiredIntermediate, .impostor, .impostorWithoutKeyID:
            let generated = try GeneratedCertificates.shared.get()
            let (leaf, key, issuer) =
                switch server {
                case .expiredIntermediate: (generated.expiredIntermediateLeaf, generated.expiredIntermediateLeafKey, generated.expiredIntermediate)
                case .impostor: (generated.impostorLeaf, generated.impostorLeafKey, generated.impostorIntermediate)
                default: (generated.impostorLeafWithoutKeyID, generated.impostorLeafWithoutKeyIDKey, generated.impostorIntermediate)
                }
            // The impostors present their own issuer; the pinned intermediate is the genuine one.
            let pinned = server == .expiredIntermediate ? generated.expiredIntermediate : generated.intermediate
            return Chain(certificates: [leaf, issuer], key: key, root: generated.secondCA, intermediate: pinned)
        }
    }

    static func identity(_ server: Server) throws -> TestServer.Identity {
        switch server {
        case .localhost: return .localhost
        case .wrongHost: return .wrongHost
        case .selfSigned: return .selfSigned
        case .expired: return .expired
        default:
            let chain = try Self.chain(server)
            return .custom(server.rawValue, chainPEM: chain.certificates, keyPEM: chain.key)
        }
    }

    static func policy(for row: Row) throws -> SecurityPolicy {
        var policy = SecurityPolicy(pinningMode: row.mode)
        if let pin = row.pin {
            let chain = try Self.chain(row.identity)
            let pem: String
            switch pin {
            case .leaf: pem = chain.certificates[0]
            case .root: pem = chain.root
            case .intermediate: pem = chain.intermediate
            case .other: pem = row.identity == .selfSigned ? TestCertificates.localhostLeaf : TestCertificates.selfSignedLeaf
            case .otherIntermediate: pem = try GeneratedCertificates.shared.get().intermediate
            case .otherIssued: pem = try GeneratedCertificates.shared.get().intermediateLeaf
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
        try await GeneratedCertificates.prepared()
        let server = TestServer.Configuration.https(try Self.identity(row.identity))
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
