@testable import Courier
import CourierTesting
import Foundation
import NIOCore
import NIOEmbedded
import NIOPosix
import NIOSSL
import Testing

/// Courier's TLS over real sockets: against ``TestServer``, against `openssl s_server` presenting
/// generated chains, and against peers that answer badly. ``TestCertificates/rootCA`` stands for
/// the system's roots.
@Suite("TLS on Courier's own connections")
struct TLSConnectorTests {
    /// A connector trusting the test root. Its handshake timeout is 60 s by default, not 10 s:
    /// the handshakes here must finish (or be refused) before it, and a full CI run held every
    /// test for about 36 s.
    static func connector(
        _ policy: SecurityPolicy = .default,
        protocols: [TLSConnector.ApplicationProtocol] = [.http2, .http1_1],
        handshakeTimeout: TimeAmount = .seconds(60)
    ) throws -> TLSConnector {
        TLSConnector(
            serverTrust: ServerTrustPolicies(default: policy),
            applicationProtocols: protocols,
            handshakeTimeout: handshakeTimeout,
            trustStore: TrustStore(try Certificate.certificates(pemEncoded: TestCertificates.rootCA))
        )
    }

    static func failure(_ error: any Error) -> ServerTrustFailure? {
        (error as? CourierError)?.underlyingError as? ServerTrustFailure
    }

    // MARK: TestServer

    @Test func alpnNegotiatesHTTP2WhenOfferedAndHTTP11Otherwise() async throws {
        try await withTestServer(.https()) { server in
            let h2 = try await TLSProbe.handshake(try Self.connector(), port: server.port)
            #expect(h2.result.applicationProtocol == .http2)
            #expect(h2.result.tlsVersion == .v1_3)
            #expect(h2.result.validatedChain?.count == 3, "leaf, intermediate, root")
            try await h2.channel.close()
            let h1 = try await TLSProbe.handshake(try Self.connector(protocols: [.http1_1]), port: server.port)
            #expect(h1.result.applicationProtocol == .http1_1)
            try await h1.channel.close()
        }
    }

    @Test func aRequestGoesThroughOnceTheHandshakeIsDone() async throws {
        try await withTestServer(.https()) { server in
            let response = try await TLSProbe.get("/get", connector: try Self.connector(protocols: [.http1_1]), port: server.port)
            #expect(response.hasPrefix("HTTP/1.1 200"), "\(response.prefix(200))")
            #expect(server.requestCount == 1)
        }
    }

    @Test func theServersFirstHTTP2FramesReachTheHandlersAddedAfterTheHandshake() async throws {
        try await withTestServer(.https()) { server in
            let firstRead = TLSProbe.FirstRead(on: MultiThreadedEventLoopGroup.singleton.next())
            let connection = try await TLSProbe.handshake(try Self.connector(), port: server.port) { result, channel in
                #expect(result.applicationProtocol == .http2)
                try channel.pipeline.syncOperations.addHandler(firstRead)
            }
            // An HTTP/2 server speaks first: its SETTINGS frame (type 4) follows the handshake at once.
            let bytes = try await firstRead.bytes.futureResult.get()
            #expect(bytes.getInteger(at: bytes.readerIndex + 3, as: UInt8.self) == 0x04, "a SETTINGS frame")
            try await connection.channel.close()
        }
    }

    @Test func aRefusedServerFailsInTheHandshakeBeforeAnyRequestByte() async throws {
        try await withTestServer(.https(.wrongHost)) { server in
            let error = try await #require(throws: CourierError.self) {
                _ = try await TLSProbe.get("/get", connector: try Self.connector(protocols: [.http1_1], handshakeTimeout: .seconds(60)), port: server.port)
            }
            // Refused in the handshake: its 60 s timeout would have said `timedOut`.
            #expect(error.code == .serverTrustEvaluationFailed)
            let failure = try #require(Self.failure(error))
            #expect(failure.reason == .nameMismatch)
            #expect(failure.host == "127.0.0.1")
            #expect(error.message.contains("127.0.0.1"))
            #expect(error.message.contains("pinning none"), "names the policy")
            #expect(server.requestCount == 0)
        }
    }

    @Test func aPinMismatchNamesThePolicyAndTheReason() async throws {
        let policy = SecurityPolicy(pinningMode: .publicKey, pinnedCertificates: Set(try Certificate.certificates(pemEncoded: TestCertificates.wrongHostLeaf)))
        try await withTestServer(.https()) { server in
            let error = try await #require(throws: CourierError.self) {
                _ = try await TLSProbe.handshake(try Self.connector(policy), port: server.port)
            }
            #expect(Self.failure(error)?.reason == .pinMismatch)
            #expect(error.message.contains("pinning publicKey"))
        }
    }

    @Test func eachHostGetsItsOwnPolicyFromOneConnector() async throws {
        var trust = ServerTrustPolicies(default: .default)
        trust["localhost"] = SecurityPolicy(pinningMode: .certificate, pinnedCertificates: Set(try Certificate.certificates(pemEncoded: TestCertificates.selfSignedLeaf)))
        let connector = TLSConnector(
            serverTrust: trust,
            trustStore: TrustStore(try Certificate.certificates(pemEncoded: TestCertificates.rootCA))
        )
        try await withTestServer(.https()) { server in
            let byAddress = try await TLSProbe.handshake(connector, host: "127.0.0.1", port: server.port)
            try await byAddress.channel.close()
            let error = try await #require(throws: CourierError.self) {
                _ = try await TLSProbe.handshake(connector, host: "localhost", port: server.port)
            }
            #expect(Self.failure(error)?.reason == .pinMismatch)
            #expect(Self.failure(error)?.host == "localhost")
        }
    }

    @Test func mutualTLSPresentsThePolicysIdentity() async throws {
        var configuration = TestServer.Configuration.https()
        configuration.requiresClientCertificate = true
        // TLS 1.2, so that the server's refusal comes within the handshake (in TLS 1.3 the client
        // is done before the server has looked at its certificate).
        configuration.maximumTLSVersion = .tlsv12
        var policy = SecurityPolicy.default
        try await withTestServer(configuration) { server in
            let refused = try await #require(throws: CourierError.self) {
                _ = try await TLSProbe.get("/get", connector: try Self.connector(policy, protocols: [.http1_1]), port: server.port)
            }
            #expect(refused.code == .tlsFailure, "\(refused)")
            #expect(Self.failure(refused)?.reason == .handshakeFailure)
            policy.clientIdentity = try ClientIdentity(certificatePEM: TestCertificates.clientCertificate, privateKeyPEM: TestCertificates.clientKey)
            let response = try await TLSProbe.get("/get", connector: try Self.connector(policy, protocols: [.http1_1]), port: server.port)
            #expect(response.hasPrefix("HTTP/1.1 200"))
        }
    }

    @Test func theMinimumVersionRefusesAnOlderServer() async throws {
        var configuration = TestServer.Configuration.https()
        configuration.maximumTLSVersion = .tlsv12
        var policy = SecurityPolicy.default
        policy.minimumTLSVersion = .v1_3
        try await withTestServer(configuration) { server in
            let error = try await #require(throws: CourierError.self) {
                _ = try await TLSProbe.handshake(try Self.connector(policy), port: server.port)
            }
            #expect(error.code == .tlsFailure)
            #expect(Self.failure(error)?.reason == .handshakeFailure)
            #expect(Self.failure(error)?.host == "127.0.0.1")
            // The policy refused TLS 1.2, not Courier: the message said "Courier speaks TLS 1.2 and 1.3".
            #expect(error.message.contains("TLS 1.3 only") && !error.message.contains("1.2 and 1.3"), "\(error.message)")
            let older = try await TLSProbe.handshake(try Self.connector(), port: server.port)
            #expect(older.result.tlsVersion == .v1_2)
            try await older.channel.close()
        }
    }

    // MARK: Bad peers

    @Test func garbageInsteadOfTLSIsATypedErrorNamingHostAndPhase() async throws {
        let peer = try await BadTLSPeer.start(.garbage)
        let error = try await #require(throws: CourierError.self) {
            _ = try await TLSProbe.handshake(try Self.connector(handshakeTimeout: .seconds(60)), port: peer.port)
        }
        // Failed on the garbage: the 60 s timeout would have said `timedOut`.
        #expect(error.code == .tlsFailure)
        #expect(Self.failure(error)?.reason == .handshakeFailure)
        #expect(error.message.contains("127.0.0.1"))
        #expect(error.message.contains("TLS handshake"))
        try await peer.shutdown()
    }

    @Test func aHandshakeThatNeverFinishesIsBoundedByTheTimeout() async throws {
        let peer = try await BadTLSPeer.start(.silent)
        let started = ContinuousClock.now
        let error = await #expect(throws: CourierError.self) {
            _ = try await TLSProbe.handshake(try Self.connector(handshakeTimeout: .milliseconds(300)), port: peer.port)
        }
        let elapsed = ContinuousClock.now - started
        #expect(elapsed >= .milliseconds(300), "not before the timeout")
        #expect(error?.code == .timedOut, "bounded by it")
        #expect(error?.message.contains("127.0.0.1:\(peer.port)") == true)
        #expect(error?.message.contains("TLS handshake") == true)
        try await peer.shutdown()
    }

    @Test func aPeerThatClosesDuringTheHandshake() async throws {
        let peer = try await BadTLSPeer.start(.close)
        let error = try await #require(throws: CourierError.self) {
            _ = try await TLSProbe.handshake(try Self.connector(), port: peer.port)
        }
        #expect(error.code == .tlsFailure)
        #expect(Self.failure(error)?.reason == .handshakeFailure)
        #expect(Self.failure(error)?.host == "127.0.0.1")
        try await peer.shutdown()
    }

    /// A connection that closed before TLS started on it (a peer that accepts and closes, a
    /// proxy that answered CONNECT and then lost its tunnel) fails its handshake saying so. Before,
    /// the handshake handler's promise was dropped with the handler, and debug builds trapped
    /// ("leaking promise"); found against Apache Traffic Server.
    @Test func aConnectionClosedBeforeTLSStartsFailsItsHandshake() async throws {
        let channel = EmbeddedChannel()
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).get()
        try await channel.close().get()
        let handshake = try Self.connector().startTLS(on: channel, host: "127.0.0.1", port: 443) { _, _ in }
        // The embedded loop runs what was submitted to it when told to.
        channel.embeddedEventLoop.run()
        let error = try #require(throws: CourierError.self) { _ = try handshake.wait() }
        #expect(error.code == .tlsFailure, "\(String(describing: error))")
        #expect(error.message.contains("the connection closed before the handshake began"), "\(String(describing: error))")
        #expect(Self.failure(error)?.host == "127.0.0.1")
    }

    // MARK: openssl s_server

    @Test(.enabled(if: OpenSSLServer.isAvailable, "openssl is not installed"))
    func opensslServerPresentingTheWholeChain() async throws {
        try await withOpenSSLServer(
            chain: [TestCertificates.localhostLeaf, TestCertificates.intermediateCA],
            key: TestCertificates.localhostKey,
            arguments: ["-alpn", "http/1.1"]
        ) { server in
            let connection = try await TLSProbe.handshake(try Self.connector(), host: "localhost", port: server.port)
            #expect(connection.result.applicationProtocol == .http1_1, "s_server offers only HTTP/1.1")
            #expect(connection.result.validatedChain?.count == 3)
            try await connection.channel.close()
            let page = try await TLSProbe.get("/", host: "localhost", connector: try Self.connector(protocols: [.http1_1]), port: server.port)
            #expect(page.contains("200"), "\(page.prefix(200))")
        }
    }

    /// The cipher suite in the handshake's result (and so in the task metrics) is the one the
    /// server was told to choose, read from its ServerHello: TLS 1.3 and TLS 1.2.
    @Test(.enabled(if: OpenSSLServer.isAvailable, "openssl is not installed"), arguments: [
        (["-tls1_3", "-ciphersuites", "TLS_CHACHA20_POLY1305_SHA256"], TLSCipherSuite.TLS_CHACHA20_POLY1305_SHA256, SecurityPolicy.TLSVersion.v1_3),
        (["-tls1_3", "-ciphersuites", "TLS_AES_256_GCM_SHA384"], .TLS_AES_256_GCM_SHA384, .v1_3),
        (["-tls1_2", "-cipher", "ECDHE-ECDSA-AES256-GCM-SHA384"], .TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, .v1_2),
        (["-tls1_2", "-cipher", "ECDHE-ECDSA-CHACHA20-POLY1305"], .TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, .v1_2),
    ])
    func theCipherSuiteIsTheOneTheServerChose(arguments: [String], suite: TLSCipherSuite, version: SecurityPolicy.TLSVersion) async throws {
        try await withOpenSSLServer(
            chain: [TestCertificates.localhostLeaf, TestCertificates.intermediateCA],
            key: TestCertificates.localhostKey,
            arguments: ["-alpn", "http/1.1"] + arguments
        ) { server in
            let connection = try await TLSProbe.handshake(try Self.connector(), host: "localhost", port: server.port)
            #expect(connection.result.cipherSuite == suite)
            #expect(connection.result.tlsVersion == version)
            try await connection.channel.close()
        }
    }

    @Test(.enabled(if: OpenSSLServer.isAvailable, "openssl is not installed"))
    func opensslServerWithTheIntermediatePinnedAndASecondCAsChain() async throws {
        let generated = try await GeneratedCertificates.prepared()
        try await withOpenSSLServer(chain: [generated.intermediateLeaf, generated.intermediate], key: generated.intermediateLeafKey) { server in
            // The second CA is no system root: certificate pinning needs invalid certificates
            // allowed; public-key pinning of the intermediate then passes on the presented chain.
            let pins = Set(try Certificate.certificates(pemEncoded: generated.intermediate))
            var certificate = SecurityPolicy(pinningMode: .certificate, pinnedCertificates: pins)
            let refused = try await #require(throws: CourierError.self) {
                _ = try await TLSProbe.handshake(try Self.connector(certificate), port: server.port)
            }
            #expect(Self.failure(refused)?.reason == .untrustedRoot)
            certificate.allowInvalidCertificates = true
            let pinned = try await TLSProbe.handshake(try Self.connector(certificate), port: server.port)
            #expect(pinned.result.validatedChain?.count == 2, "the pinned intermediate is the anchor")
            try await pinned.channel.close()
            var publicKey = SecurityPolicy(pinningMode: .publicKey, pinnedCertificates: pins)
            publicKey.allowInvalidCertificates = true
            publicKey.validatesDomainName = false
            let keyPinned = try await TLSProbe.handshake(try Self.connector(publicKey), port: server.port)
            #expect(keyPinned.result.validatedChain == nil, "trusted on the key, no chain validated")
            try await keyPinned.channel.close()
        }
    }

    @Test(.enabled(if: OpenSSLServer.isAvailable, "openssl is not installed"))
    func opensslServerThatOmitsItsIntermediate() async throws {
        try await withOpenSSLServer(chain: [TestCertificates.localhostLeaf], key: TestCertificates.localhostKey) { server in
            // Apple's SecTrust may fetch a missing intermediate (AIA); Courier does not fetch.
            let error = try await #require(throws: CourierError.self) {
                _ = try await TLSProbe.handshake(try Self.connector(), port: server.port)
            }
            #expect(Self.failure(error)?.reason == .untrustedRoot)
            // Pinning the intermediate as an anchor still works, as in AFNetworking.
            var policy = SecurityPolicy(pinningMode: .certificate, pinnedCertificates: Set(try Certificate.certificates(pemEncoded: TestCertificates.intermediateCA)))
            policy.allowInvalidCertificates = true
            let connection = try await TLSProbe.handshake(try Self.connector(policy), port: server.port)
            try await connection.channel.close()
        }
    }

    @Test(.enabled(if: OpenSSLServer.isAvailable, "openssl is not installed"))
    func opensslServerAskingForAClientCertificate() async throws {
        try await withOpenSSLServer(
            chain: [TestCertificates.localhostLeaf, TestCertificates.intermediateCA],
            key: TestCertificates.localhostKey,
            clientCA: TestCertificates.rootCA,
            arguments: ["-Verify", "1", "-CAfile", "{root}", "-tls1_2"]
        ) { server in
            var policy = SecurityPolicy.default
            policy.clientIdentity = try ClientIdentity(certificatePEM: TestCertificates.clientCertificate, privateKeyPEM: TestCertificates.clientKey)
            let page = try await TLSProbe.get("/", connector: try Self.connector(policy, protocols: [.http1_1]), port: server.port)
            #expect(page.contains("200"), "\(page.prefix(200))")
            let error = await #expect(throws: CourierError.self) {
                _ = try await TLSProbe.get("/", connector: try Self.connector(protocols: [.http1_1]), port: server.port)
            }
            #expect(error?.code == .tlsFailure, "\(error.map(String.init(describing:)) ?? "")")
        }
    }
}
