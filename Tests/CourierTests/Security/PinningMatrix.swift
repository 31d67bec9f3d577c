import Courier
import CourierTesting
import Foundation

/// The policy × server matrix, with AFNetworking's answers: each row is a policy, the chain the
/// server presents, the pin, and whether `-[AFSecurityPolicy evaluateServerTrust:forDomain:]` of
/// AFNetworking's last release trusts the server for `127.0.0.1` (``Row/passes``).
///
/// The servers' chains: ``TestCertificates/rootCA`` → ``TestCertificates/intermediateCA`` → leaf
/// for `localhost`, `wrongHost` (another name) and `expired`; `selfSigned` stands alone. Made by
/// `openssl` (``GeneratedCertificates``), under a second CA that is no system root:
/// `expiredIntermediate` (an expired intermediate → leaf), and `impostor` / `impostorWithoutKeyID`
/// (a leaf whose issuer has the generated intermediate's name but another key), and
/// `constrainedInside` / `constrainedOutside` (an intermediate whose name constraints permit only
/// `courier.test`, with a leaf for `api.courier.test` and one for `localhost`), and
/// `privateLeaf` / `privateExpired` / `privateOtherName` (leaves issued by the second CA itself:
/// for `localhost` and `127.0.0.1`, the same but expired, and for `*.courier.test`). Every server
/// sends its leaf and its intermediate, if it has one (``presented(_:)``). ``TestCertificates/rootCA``
/// stands for a system root.
///
/// `PinningMatrixTests` runs each row over a socket through NIOEngine's https path;
/// `SecurityPolicyEvaluatorTests` and `TLSConnectorMatrixTests` run Courier's evaluation alone.
/// Every row must give AFNetworking's answer.
enum PinningMatrix {
    enum Pin: String, Sendable, CustomStringConvertible {
        /// The server's leaf, its chain's root, its chain's intermediate (for the impostors: the
        /// genuine intermediate of that name), a self-signed or CA-issued leaf of another server,
        /// an intermediate of another chain, a CA-issued leaf for `localhost` of another server;
        /// the root with that CA-issued leaf; the intermediate with that CA-issued leaf.
        case leaf, root, intermediate, other, otherIntermediate, otherIssued
        case rootAndOtherIssued, intermediateAndOtherIssued
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
        /// AFNetworking's answer.
        let passes: Bool

        init(mode: SecurityPolicy.PinningMode, allowInvalid: Bool, validatesDomain: Bool, identity: Server, pin: Pin?, passes: Bool) {
            self.mode = mode
            self.allowInvalid = allowInvalid
            self.validatesDomain = validatesDomain
            self.identity = identity
            self.pin = pin
            self.passes = passes
        }

        var description: String {
            "\(self.mode) invalid:\(self.allowInvalid) domain:\(self.validatesDomain) \(self.identity) pin:\(self.pin.map(\.description) ?? "-") → \(self.passes ? "pass" : "fail")"
        }
    }

    static let T = true, F = false

    // swift-format-ignore
    /// mode, allowInvalidCertificates, validatesDomainName, server certificate, pin, passes (AFNetworking).
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

        // Certificate pinning: unless invalid certificates are allowed, the chain must first be
        // valid against the system's roots; then the pins are the only anchors and the chain is
        // evaluated against them (also when invalid certificates are allowed).
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
        Row(mode: .certificate, allowInvalid: F, validatesDomain: T, identity: .selfSigned, pin: .leaf,         passes: F),
        Row(mode: .certificate, allowInvalid: F, validatesDomain: T, identity: .selfSigned, pin: .other,        passes: F),
        Row(mode: .certificate, allowInvalid: F, validatesDomain: T, identity: .expired,    pin: .root,         passes: F),
        Row(mode: .certificate, allowInvalid: T, validatesDomain: T, identity: .localhost,  pin: .root,         passes: T),
        Row(mode: .certificate, allowInvalid: T, validatesDomain: T, identity: .localhost,  pin: .other,        passes: F),
        Row(mode: .certificate, allowInvalid: T, validatesDomain: T, identity: .wrongHost,  pin: .root,         passes: F),
        Row(mode: .certificate, allowInvalid: T, validatesDomain: F, identity: .wrongHost,  pin: .root,         passes: T),
        Row(mode: .certificate, allowInvalid: T, validatesDomain: T, identity: .selfSigned, pin: .leaf,         passes: T),
        Row(mode: .certificate, allowInvalid: T, validatesDomain: T, identity: .expired,    pin: .root,         passes: F),

        // Public-key pinning: the chain must be valid unless invalid certificates are allowed,
        // and a key of the chain path building found must be pinned: with invalid certificates
        // allowed that chain still reaches a system root the server did not send.
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
        Row(mode: .publicKey, allowInvalid: T, validatesDomain: T, identity: .expired,    pin: .root,  passes: T),

        // Intermediate pins: in certificate mode the pinned intermediate is an anchor, so the leaf
        // must be signed by its key, and the names and dates are checked as for a pinned root; in
        // public-key mode its key must be in the chain (with invalid certificates allowed, nothing
        // else is checked).
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
        Row(mode: .publicKey,   allowInvalid: T, validatesDomain: T, identity: .expired,    pin: .intermediate, passes: T),
        Row(mode: .publicKey,   allowInvalid: F, validatesDomain: T, identity: .selfSigned, pin: .intermediate, passes: F),
        Row(mode: .publicKey,   allowInvalid: F, validatesDomain: T, identity: .localhost,  pin: .otherIntermediate, passes: F),
        Row(mode: .publicKey,   allowInvalid: T, validatesDomain: F, identity: .localhost,  pin: .otherIntermediate, passes: F),
        // An expired intermediate under a root nobody trusts: refused unless invalid certificates
        // are allowed in public-key mode, where AFNetworking looks only for the key.
        Row(mode: .none,        allowInvalid: F, validatesDomain: T, identity: .expiredIntermediate, pin: nil,           passes: F),
        Row(mode: .certificate, allowInvalid: F, validatesDomain: T, identity: .expiredIntermediate, pin: .intermediate, passes: F),
        Row(mode: .certificate, allowInvalid: T, validatesDomain: F, identity: .expiredIntermediate, pin: .intermediate, passes: F),
        Row(mode: .certificate, allowInvalid: F, validatesDomain: T, identity: .expiredIntermediate, pin: .root,         passes: F),
        Row(mode: .publicKey,   allowInvalid: F, validatesDomain: T, identity: .expiredIntermediate, pin: .intermediate, passes: F),
        Row(mode: .publicKey,   allowInvalid: T, validatesDomain: F, identity: .expiredIntermediate, pin: .intermediate, passes: T),
        // The impostors' chains are sound up to their root, but that root is no system root:
        // pinning it does not help without invalid certificates allowed.
        Row(mode: .certificate, allowInvalid: F, validatesDomain: T, identity: .impostor,             pin: .root, passes: F),
        Row(mode: .certificate, allowInvalid: F, validatesDomain: T, identity: .impostorWithoutKeyID, pin: .root, passes: F),
        // A leaf whose issuer has the pinned intermediate's name but another key: refused, whether
        // its authority key identifier tells the keys apart or only the signature does.
        Row(mode: .certificate, allowInvalid: F, validatesDomain: T, identity: .impostor,             pin: .intermediate, passes: F),
        Row(mode: .certificate, allowInvalid: T, validatesDomain: F, identity: .impostor,             pin: .intermediate, passes: F),
        Row(mode: .publicKey,   allowInvalid: T, validatesDomain: F, identity: .impostor,             pin: .intermediate, passes: F),
        Row(mode: .certificate, allowInvalid: F, validatesDomain: T, identity: .impostorWithoutKeyID, pin: .intermediate, passes: F),
        Row(mode: .certificate, allowInvalid: T, validatesDomain: F, identity: .impostorWithoutKeyID, pin: .intermediate, passes: F),
        Row(mode: .publicKey,   allowInvalid: T, validatesDomain: F, identity: .impostorWithoutKeyID, pin: .intermediate, passes: F),
        // An intermediate's name constraints: its chain is under the second CA, no system root, so
        // certificate pinning refuses either way; public-key mode with invalid certificates
        // allowed looks only for the key, constraints or not.
        Row(mode: .certificate, allowInvalid: F, validatesDomain: F, identity: .constrainedInside,  pin: .intermediate, passes: F),
        Row(mode: .certificate, allowInvalid: F, validatesDomain: F, identity: .constrainedOutside, pin: .intermediate, passes: F),
        Row(mode: .publicKey,   allowInvalid: T, validatesDomain: F, identity: .constrainedOutside, pin: .intermediate, passes: T),
        // A pinned CA-issued leaf whose CA nobody trusts: with invalid certificates allowed it is
        // its own anchor (certificate mode): the exact leaf, its dates, its name if validated.
        // Without, its chain must first be valid against the system's roots and fails.
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
        // Pins of both kinds: any pinned anchor (certificate mode) or any pinned key in the chain
        // (public-key mode) is enough; the server's own leaf need not be pinned.
        Row(mode: .certificate, allowInvalid: F, validatesDomain: T, identity: .localhost,        pin: .rootAndOtherIssued,         passes: T),
        Row(mode: .publicKey,   allowInvalid: F, validatesDomain: T, identity: .localhost,        pin: .rootAndOtherIssued,         passes: T),
        Row(mode: .publicKey,   allowInvalid: T, validatesDomain: F, identity: .wrongHost,        pin: .rootAndOtherIssued,         passes: T),
        Row(mode: .certificate, allowInvalid: T, validatesDomain: T, identity: .localhost,        pin: .intermediateAndOtherIssued, passes: T),
    ]

    /// The chain a server presents (leaf first), its key, its root and its intermediate.
    struct Chain {
        let certificates: [String], key: String, root: String, intermediate: String
    }

    static func chain(_ server: Server) throws -> Chain {
        let root = TestCertificates.rootCA, intermediate = TestCertificates.intermediateCA
        switch server {
        case .localhost: return Chain(certificates: [TestCertificates.localhostLeaf, intermediate], key: TestCertificates.localhostKey, root: root, intermediate: intermediate)
        case .wrongHost: return Chain(certificates: [TestCertificates.wrongHostLeaf, intermediate], key: TestCertificates.wrongHostKey, root: root, intermediate: intermediate)
        case .selfSigned: return Chain(certificates: [TestCertificates.selfSignedLeaf], key: TestCertificates.selfSignedKey, root: root, intermediate: intermediate)
        case .expired: return Chain(certificates: [TestCertificates.expiredLeaf, intermediate], key: TestCertificates.expiredKey, root: root, intermediate: intermediate)
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

    /// The chain `server` presents, leaf first, as PEM.
    static func presented(_ server: Server) throws -> [String] { try Self.chain(server).certificates }

    /// The test server's identity for `server`.
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

    /// The row's policy; no additional trusted certificate (the caller adds ``TestCertificates/rootCA``
    /// where it stands for a system root).
    static func policy(for row: Row) throws -> SecurityPolicy {
        var policy = SecurityPolicy(pinningMode: row.mode)
        if let pin = row.pin {
            let chain = try Self.chain(row.identity)
            let generated = try GeneratedCertificates.shared.get()
            let pems: [String]
            switch pin {
            case .leaf: pems = [chain.certificates[0]]
            case .root: pems = [chain.root]
            case .intermediate: pems = [chain.intermediate]
            case .other: pems = [row.identity == .selfSigned ? TestCertificates.localhostLeaf : TestCertificates.selfSignedLeaf]
            case .otherIntermediate: pems = [generated.intermediate]
            case .otherIssued: pems = [generated.intermediateLeaf]
            case .rootAndOtherIssued: pems = [chain.root, generated.intermediateLeaf]
            case .intermediateAndOtherIssued: pems = [chain.intermediate, generated.intermediateLeaf]
            }
            policy.pinnedCertificates = Set(try pems.flatMap { try Certificate.certificates(pemEncoded: $0) })
        }
        policy.allowInvalidCertificates = row.allowInvalid
        policy.validatesDomainName = row.validatesDomain
        return policy
    }
}
