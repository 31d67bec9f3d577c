@testable import Courier
import CourierTesting
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import SwiftASN1
import Testing
import X509

/// When the system's roots are read: only when an evaluation consults them, once per process,
/// off the event loops; and what is read from a bundle.
@Suite("The system's trust roots, read when first needed")
struct TrustStoreLoadingTests {
    /// A store standing for the system's roots (``TestCertificates/rootCA``) that counts its loads
    /// and remembers whether one ran on an event loop.
    final class CountingStore: Sendable {
        private let state = NIOLockedValueBox((loads: 0, onEventLoop: false))
        var loads: Int { self.state.withLockedValue { $0.loads } }
        var loadedOnEventLoop: Bool { self.state.withLockedValue { $0.onEventLoop } }

        var store: TrustStore {
            .deferred {
                self.state.withLockedValue { state in
                    state.loads += 1
                    state.onEventLoop = state.onEventLoop || MultiThreadedEventLoopGroup.currentEventLoop != nil
                }
                return TrustStore(try! Certificate.certificates(pemEncoded: TestCertificates.rootCA))
            }
        }
    }

    // MARK: Through the engine, in a process of their own

    /// The system's roots are loaded once per process: a process of its own makes the count
    /// start at zero.
    @Test func plainHTTPNeverReadsTheSystemBundle() async {
        await #expect(processExitsWith: .success) {
            try await withTestServer { server in
                try await withManager(baseURL: server.baseURL) { manager in
                    guard try await manager.get("get").response.status == .ok else { exit(2) }
                }
            }
            exit(SystemTrustRoots.loads.withLockedValue { $0 } == 0 ? EXIT_SUCCESS : 3)
        }
    }

    /// The default policy with the test root added to the system's (as
    /// ``SecurityPolicy/additionalTrustedCertificates`` join them): the system's bundle is read for
    /// the first https connection and never again, and the chain still validates.
    @Test func anHTTPSRequestThatConsultsTheSystemRootsReadsThemOnceAndValidates() async {
        await #expect(processExitsWith: .success) {
            var policy = SecurityPolicy.default
            policy.additionalTrustedCertificates = try Certificate.certificates(pemEncoded: TestCertificates.rootCA)
            try await withTestServer(.https()) { server in
                for _ in 0..<2 {
                    try await withManager(baseURL: server.baseURL, securityPolicy: policy) { manager in
                        guard SystemTrustRoots.loads.withLockedValue({ $0 }) <= 1 else { exit(4) }
                        guard try await manager.get("get").response.status == .ok else { exit(2) }
                    }
                }
                guard server.requestCount == 2 else { exit(5) }
            }
            exit(SystemTrustRoots.loads.withLockedValue { $0 } == 1 ? EXIT_SUCCESS : 3)
        }
    }

    @Test func theSystemRootsAreLoadedOnceAndStayLoaded() {
        let first = TrustStore.system.roots
        let second = TrustStore.system.roots
        #expect(first === second)
        #expect(TrustStore.system.isLoaded)
        #expect(SystemTrustRoots.loads.withLockedValue { $0 } == 1)
    }

    // MARK: The connector

    @Test func theConnectorReadsTheRootsOffTheEventLoopBeforeTheFirstHandshakeThatNeedsThem() async throws {
        let roots = CountingStore()
        let connector = TLSConnector(serverTrust: ServerTrustPolicies(default: .default), trustStore: roots.store)
        #expect(roots.loads == 0, "making a connector reads nothing")
        try await withTestServer(.https()) { server in
            for _ in 0..<2 {
                let connection = try await TLSProbe.handshake(connector, port: server.port)
                #expect(connection.result.validatedChain?.count == 3, "leaf, intermediate, and the root from the store")
                try await connection.channel.close()
            }
        }
        #expect(roots.loads == 1)
        #expect(!roots.loadedOnEventLoop)
    }

    @Test func aConnectorWhosePoliciesDoNotConsultTheRootsNeverReadsThem() async throws {
        let roots = CountingStore()
        let pinned = SecurityPolicy(
            pinningMode: .certificate,
            pinnedCertificates: Set(try Certificate.certificates(pemEncoded: TestCertificates.intermediateCA))
        )
        var pinnedAllowingInvalid = pinned
        pinnedAllowingInvalid.allowInvalidCertificates = true
        var allowingInvalid = SecurityPolicy.default
        allowingInvalid.allowInvalidCertificates = true
        allowingInvalid.validatesDomainName = false
        for policy in [pinnedAllowingInvalid, allowingInvalid] {
            let connector = TLSConnector(serverTrust: ServerTrustPolicies(default: policy), trustStore: roots.store)
            try await withTestServer(.https()) { server in
                let connection = try await TLSProbe.handshake(connector, port: server.port)
                try await connection.channel.close()
            }
        }
        #expect(roots.loads == 0)
        // The same pin without invalid certificates allowed validates against the roots first.
        let connector = TLSConnector(serverTrust: ServerTrustPolicies(default: pinned), trustStore: roots.store)
        try await withTestServer(.https()) { server in
            let connection = try await TLSProbe.handshake(connector, port: server.port)
            try await connection.channel.close()
        }
        #expect(roots.loads == 1)
    }

    // MARK: The evaluator

    @Test(arguments: PinningMatrix.table)
    func anEvaluationLoadsTheRootsExactlyWhenItConsultsThem(_ row: PinningMatrix.Row) async throws {
        try await GeneratedCertificates.prepared()
        let roots = CountingStore()
        let evaluator = SecurityPolicyEvaluator(policy: try PinningMatrix.policy(for: row), trustStore: roots.store)
        let presented = try PinningMatrix.presented(row.identity).flatMap { try NIOSSLCertificate.fromPEMBytes(Array($0.utf8)) }
        let verdict = await evaluator.evaluate(presented: presented, host: SecurityPolicyEvaluatorTests.host)
        #expect(roots.loads == (evaluator.consultsSystemRoots ? 1 : 0), "\(row)")
        if case .trusted = verdict {
            #expect(row.passes, "\(row) was trusted")
        } else {
            #expect(!row.passes, "\(row) was refused")
        }
    }

    @Test func theAnchorsGiveWhatACertificateStoreOfTheSameCertificatesGives() async throws {
        let generated = try await GeneratedCertificates.prepared()
        // Two intermediates share a subject (the impostor's), in this order.
        let pems = [TestCertificates.rootCA, generated.intermediate, generated.impostorIntermediate, generated.secondCA]
        let certificates = try pems.flatMap { try Certificate.certificates(pemEncoded: $0) }
        let parsed = certificates.compactMap(\.x509)
        #expect(parsed.count == 4)
        let store = TrustStore(Array(certificates.prefix(3)))
        // The fourth joins as an additional trusted certificate.
        let anchors = TrustAnchors(store: store, additional: [parsed[3]])
        for certificate in parsed {
            let expected = parsed.filter { $0.subject == certificate.subject }
            #expect(await anchors[certificate.subject] == expected)
            #expect(await anchors.contains(certificate))
        }
        #expect(parsed[1].subject == parsed[2].subject, "the impostor has the intermediate's name")
        let leaf = try #require(try Certificate.certificates(pemEncoded: TestCertificates.localhostLeaf).first?.x509)
        #expect(await anchors[leaf.subject] == nil)
        #expect(await !anchors.contains(leaf))
    }

    // MARK: Reading a bundle

    /// A version 1 certificate (no `[0]` version field), made with `openssl x509 -req` and no
    /// extensions, as some old roots are.
    static let versionOne = """
        -----BEGIN CERTIFICATE-----
        MIIBSjCB8QIUSWc/nkdV0zV9h3CTa6usecGvFokwCgYIKoZIzj0EAwIwKDEUMBIG
        A1UEAwwLVmVyc2lvbiBPbmUxEDAOBgNVBAoMB0NvdXJpZXIwHhcNMjYxMjAxMDkw
        MDMxWhcNMzYxMTI4MDkwMDMxWjAoMRQwEgYDVQQDDAtWZXJzaW9uIE9uZTEQMA4G
        A1UECgwHQ291cmllcjBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABIWx2hZboy6s
        bPhETCJi6xKFA1aQvHAH8h4tKNOnY0g0QFM4Z9YJy/Jhpu+/1yWrVtv8ZAKJCv7d
        sy2GTUcXmz8wCgYIKoZIzj0EAwIDSAAwRQIgMT0Cv8rxbI6KolcRP2gYZ8Sx3tcv
        UyACZ5eIfaKnOQ8CIQCjCepLjm6+EeeTNv/ijk3qZupheN3jiJ0j8VWJm8I1mQ==
        -----END CERTIFICATE-----
        """

    /// The subject a store indexes a certificate by, read without parsing the rest, is the one
    /// swift-certificates parses: for every root of this machine's bundle, the test chain, and a
    /// version 1 certificate; and no subject for what is not a certificate.
    @Test func theSubjectReadAloneIsTheParsedOne() throws {
        var encodings: [[UInt8]] = []
        if let path = TrustStore.systemBundlePaths.first(where: { FileManager.default.fileExists(atPath: $0) }) {
            PEMCertificateBlocks.forEach(in: try Data(contentsOf: URL(fileURLWithPath: path))) { der in
                if let der { encodings.append(der) }
            }
        }
        #expect(encodings.count > 50)
        for pem in [TestCertificates.rootCA, TestCertificates.intermediateCA, TestCertificates.localhostLeaf, Self.versionOne] {
            encodings += try Courier.Certificate.certificates(pemEncoded: pem).map { Array($0.derBytes) }
        }
        for der in encodings {
            let parsed = try X509.Certificate(derEncoded: der)
            #expect(TrustRoots.subject(ofCertificate: der) == parsed.subject, "\(parsed.subject)")
        }
        let versionOne = try #require(encodings.last)
        #expect(try X509.Certificate(derEncoded: versionOne).version == .v1)
        #expect(TrustRoots.subject(ofCertificate: Array("hello".utf8)) == nil)
        #expect(TrustRoots.subject(ofCertificate: Array(versionOne.prefix(40))) == nil)
        #expect(TrustRoots.subject(ofCertificate: [0x30, 0x03, 0x02, 0x01, 0x01]) == nil, "a SEQUENCE that is not a certificate")
    }

    @Test func theBundleReaderFindsWhatSwiftNIOSSLFinds() throws {
        guard let path = TrustStore.systemBundlePaths.first(where: { FileManager.default.fileExists(atPath: $0) }) else {
            Issue.record("no system bundle at \(TrustStore.systemBundlePaths)")
            return
        }
        let nio = try NIOSSLCertificate.fromPEMFile(path).map { try $0.toDERBytes() }
        var ours: [[UInt8]] = []
        PEMCertificateBlocks.forEach(in: try Data(contentsOf: URL(fileURLWithPath: path))) { der in
            ours.append(der ?? [])
        }
        #expect(ours.count == nio.count)
        #expect(ours == nio, "the same DER bytes in the same order")
        let roots = try #require(TrustRoots.load(bundleAt: path))
        #expect(roots.count == nio.count)
        #expect(roots.skippedCount == 0)
    }

    @Test func oddBundlesAreReadBlockByBlock() throws {
        let root = TestCertificates.rootCA.trimmingCharacters(in: .whitespacesAndNewlines)
        let leaf = TestCertificates.localhostLeaf.trimmingCharacters(in: .whitespacesAndNewlines)
        let oldLabel = leaf.replacingOccurrences(of: "CERTIFICATE-----", with: "X509 CERTIFICATE-----")
        let trusted = root.replacingOccurrences(of: "CERTIFICATE-----", with: "TRUSTED CERTIFICATE-----")
        let badBase64 = "-----BEGIN CERTIFICATE-----\nnot*base64\n-----END CERTIFICATE-----"
        let notACertificate = "-----BEGIN CERTIFICATE-----\n\(Data("hello".utf8).base64EncodedString())\n-----END CERTIFICATE-----"
        let mismatched = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END X509 CERTIFICATE-----"
        let text = [
            "# a comment, then a key",
            TestCertificates.localhostKey,
            root.replacingOccurrences(of: "\n", with: "\r\n"),
            "  " + oldLabel.replacingOccurrences(of: "\n", with: "  \n"),
            trusted,
            badBase64,
            notACertificate,
            mismatched,
            TestCertificates.intermediateCA,
            "-----BEGIN CERTIFICATE-----\nMIIB",
        ].joined(separator: "\n")
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("courier-bundle-\(UUID().uuidString).pem")
        try Data(text.utf8).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }

        let roots = try #require(TrustRoots.load(bundleAt: url.path))
        let expected = try [TestCertificates.rootCA, TestCertificates.localhostLeaf, TestCertificates.intermediateCA]
            .flatMap { try Certificate.certificates(pemEncoded: $0) }.compactMap(\.x509)
        #expect(roots.certificates == expected, "CRLF, spaces and the old label read; the trusted form and the key passed over")
        #expect(roots.skippedCount == 4, "bad base64, not a certificate, a mismatched end, no end")

        try Data("no certificate here\n".utf8).write(to: url)
        #expect(TrustRoots.load(bundleAt: url.path) == nil)
        #expect(TrustRoots.load(bundleAt: url.path + ".missing") == nil)
    }
}
