import AsyncHTTPClient
import CourierTesting
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL
import Testing

@Suite struct TLSTests {
    @Test func httpsNegotiatesHTTP2ByDefault() async throws {
        try await withServer(.https()) { server, client in
            #expect(server.baseURL.absoluteString == "https://127.0.0.1:\(server.port)/")
            let fetched = try await client.fetch(server.url("/get?a=1"))
            #expect(fetched.status == 200)
            #expect(fetched.response.version == .http2)
            #expect(try fetched.json()["url"] as? String == "https://127.0.0.1:\(server.port)/get?a=1")
            let posted = try await client.fetch(server.url("/post"), method: .POST, body: Array("h2 body".utf8))
            #expect(try posted.json()["data"] as? String == "h2 body")
        }
    }

    @Test func httpsServesHTTP1WhenAskedOrWhenHTTP2IsOff() async throws {
        try await withServer(.https(), client: ClientOptions(http1Only: true)) { server, client in
            let fetched = try await client.fetch(server.url("/get"))
            #expect(fetched.response.version == .http1_1)
        }
        var configuration = TestServer.Configuration.https()
        configuration.http2 = false
        try await withServer(configuration) { server, client in
            let fetched = try await client.fetch(server.url("/stream/3"))
            #expect(fetched.response.version == .http1_1)
            #expect(fetched.text.split(separator: "\n").count == 3)
        }
    }

    @Test func localhostNameIsAccepted() async throws {
        try await withServer(.https()) { server, client in
            let fetched = try await client.fetch(URL(string: "https://localhost:\(server.port)/ip")!)
            #expect(fetched.status == 200)
        }
    }

    @Test(arguments: [TestServer.Identity.wrongHost, .selfSigned, .expired])
    func untrustedIdentitiesAreRejected(identity: TestServer.Identity) async throws {
        try await withServer(.https(identity)) { server, client in
            let error = await #expect(throws: (any Error).self) {
                _ = try await client.fetch(server.url("/get"))
            }
            // The handshake itself fails: chain verification, or the host name check for the
            // wrong-host leaf (whose chain is trusted).
            if identity == .wrongHost {
                #expect(error is NIOSSLExtraError, "\(String(describing: error))")
            } else {
                #expect(String(describing: error).contains("CERTIFICATE_VERIFY_FAILED"), "\(String(describing: error))")
            }
            #expect(server.requestCount == 0)
        }
    }

    @Test func wrongHostPassesWithoutHostnameVerification() async throws {
        try await withServer(.https(.wrongHost), client: ClientOptions(verifyHostname: false)) { server, client in
            let fetched = try await client.fetch(server.url("/get"))
            #expect(fetched.status == 200)
        }
    }

    @Test func mutualTLSAcceptsOnlyClientsWithACertificate() async throws {
        var configuration = TestServer.Configuration.https()
        configuration.requiresClientCertificate = true
        try await withServer(configuration) { server, anonymous in
            await #expect(throws: (any Error).self) {
                _ = try await anonymous.fetch(server.url("/get"))
            }
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .certificates([try NIOSSLCertificate(bytes: Array(TestCertificates.rootCA.utf8), format: .pem)])
            tls.certificateChain = [.certificate(try NIOSSLCertificate(bytes: Array(TestCertificates.clientCertificate.utf8), format: .pem))]
            tls.privateKey = .privateKey(try NIOSSLPrivateKey(bytes: Array(TestCertificates.clientKey.utf8), format: .pem))
            // The timeouts of `makeClient`'s clients (AHC's own connect timeout, 10 s, ran out once
            // in a full CI run on two loaded cores: the handshake is what is tested, not its pace).
            var clientConfiguration = HTTPClient.Configuration(
                tlsConfiguration: tls, redirectConfiguration: .disallow, timeout: .init(connect: .seconds(120), read: .seconds(120)))
            clientConfiguration.connectionPool.retryConnectionEstablishment = false
            let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: clientConfiguration)
            do {
                let fetched = try await client.fetch(server.url("/get"))
                #expect(fetched.status == 200)
                try await client.shutdown()
            } catch {
                try? await client.shutdown()
                throw error
            }
            #expect(server.requestCount == 1)
        }
    }

    @Test func certificateHelpers() throws {
        #expect(TestCertificates.derBlocks(TestCertificates.rootCA).count == 1)
        #expect(TestCertificates.der(TestCertificates.localhostLeaf).first == 0x30)
        #expect(TestCertificates.der(TestCertificates.localhostKey).first == 0x30)
        let url = try TestCertificates.writeToTemporaryFile(TestCertificates.clientCertificate)
        defer { try? FileManager.default.removeItem(at: url) }
        #expect(try String(contentsOf: url, encoding: .utf8) == TestCertificates.clientCertificate)
    }
}
