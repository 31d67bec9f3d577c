import Courier
import CourierTesting
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing

@Suite("Proxy")
struct ProxyTests {
    @Test func requestsGoThroughAnHTTPProxyWithCredentials() async throws {
        try await withTestServer { server in
            try await withShutdown(of: try await TestProxy.start(upstreamPort: server.port, credentials: ("courier", "secret"))) { proxy in
                var configuration = SessionConfiguration.default
                configuration.proxy = .http(host: "127.0.0.1", port: proxy.port, username: "courier", password: "secret")
                // The host does not exist: only the proxy can have answered.
                try await withManager(baseURL: URL(string: "http://courier-target.invalid/"), configuration: configuration) { manager in
                    let response = try await manager.get("get", parameters: ["via": "proxy"])
                    #expect((response.value.json?["args"] as? [String: any Sendable])?["via"] as? String == "proxy")
                }
                // Plain http is forwarded in absolute form, not tunnelled.
                #expect(proxy.forwardedTargets.first?.hasPrefix("http://courier-target.invalid/get") == true, "\(proxy.forwardedTargets)")
                #expect(proxy.connectTargets.isEmpty)
                #expect(proxy.proxyAuthorizations.first == "Basic " + Data("courier:secret".utf8).base64EncodedString())
            }
        }
    }

    @Test func wrongProxyCredentialsFail() async throws {
        try await withTestServer { server in
            try await withShutdown(of: try await TestProxy.start(upstreamPort: server.port, credentials: ("courier", "secret"))) { proxy in
                var configuration = SessionConfiguration.default
                configuration.proxy = .http(host: "127.0.0.1", port: proxy.port, username: "courier", password: "wrong")
                try await withManager(baseURL: URL(string: "http://courier-target.invalid/"), configuration: configuration) { manager in
                    await #expect {
                        try await manager.get("get")
                    } throws: { error in
                        guard let error = error as? CourierError else { return false }
                        return error.code == .proxyAuthenticationRequired && error.message.contains("127.0.0.1:\(proxy.port)")
                            && error.response?.status.code == 407
                    }
                }
            }
        }
    }

    /// A `Proxy-Authorization` the caller sets is the proxy's credential, not the origin's: a
    /// redirect to another origin that the same forwarding proxy carries keeps it (as OkHttp and
    /// curl do), followed from the network or from the cache. It was dropped with the origin's
    /// credentials, and the proxy refused the next hop with 407.
    @Test func aCallersProxyCredentialGoesOnToAnotherOriginThroughTheSameProxy() async throws {
        try await withTestServer { server in
            server.route("/moved") { _ in
                var response = TestServer.Response(status: .movedPermanently)
                response.headerFields[.location] = "http://other-target.invalid/after"
                response.headerFields[.cacheControl] = "max-age=600"
                return response
            }
            server.route("/after") { _ in
                var response = TestServer.Response.text("after")
                response.headerFields[.cacheControl] = "no-store"
                return response
            }
            try await withShutdown(of: try await TestProxy.start(upstreamPort: server.port, credentials: ("courier", "secret"))) { proxy in
                var configuration = SessionConfiguration.default
                // The session has no credentials for the proxy: only the caller's field answers it.
                configuration.proxy = .http(host: "127.0.0.1", port: proxy.port)
                configuration.responseCache = ResponseCache()
                let credential = "Basic " + Data("courier:secret".utf8).base64EncodedString()
                try await withManager(baseURL: URL(string: "http://courier-target.invalid/"), configuration: configuration) { manager in
                    // The second time, the stored 301 is followed from the cache.
                    for _ in 0..<2 {
                        var request = Request(url: URL(string: "http://courier-target.invalid/moved")!)
                        request.headerFields[.proxyAuthorization] = credential
                        let response = try await manager.data(for: request)
                        #expect(response.response.status == .ok && String(decoding: response.value, as: UTF8.self) == "after")
                        #expect(response.request.url.host == "other-target.invalid")
                    }
                }
                #expect(
                    proxy.forwardedTargets == [
                        "http://courier-target.invalid/moved", "http://other-target.invalid/after", "http://other-target.invalid/after",
                    ], "\(proxy.forwardedTargets)")
                #expect(proxy.proxyAuthorizations == [credential, credential, credential], "\(proxy.proxyAuthorizations)")
            }
        }
    }

    /// A server's redirect to an `https` URL whose host percent-decodes to line breaks, through
    /// a proxy that tunnels: the hop fails as an invalid URL and the proxy gets no `CONNECT`. The
    /// host once went into the `CONNECT` line as it decoded, so its line breaks wrote requests of
    /// the server's choosing to the proxy, the last one with the client's `Proxy-Authorization`.
    @Test func aRedirectToAHostWithLineBreaksSendsTheProxyNothing() async throws {
        let evil = "https://x%20HTTP%2F1.1%0D%0A%0D%0AGET%20http%3A%2F%2Finternal%2F%20HTTP%2F1.1%0D%0AX%3A%20y/"
        try await withTestServer { server in
            try await withShutdown(of: try await TestProxy.start(upstreamPort: server.port, credentials: ("courier", "secret"))) { proxy in
                let configuration = Self.configuration(proxyPort: proxy.port)
                try await withManager(baseURL: URL(string: "http://courier-target.invalid/"), configuration: configuration) { manager in
                    await #expect {
                        _ = try await manager.get("redirect-to", parameters: ["url": evil])
                    } throws: { error in
                        guard let error = error as? CourierError else { return false }
                        return error.code == .invalidURL && error.message.contains("percent-decoded")
                    }
                }
                #expect(proxy.connectTargets.isEmpty, "\(proxy.connectTargets)")
                #expect(proxy.forwardedTargets.count == 1, "\(proxy.forwardedTargets)")
            }
        }
    }

    /// A proxy named in Unicode (`prøxy.example`) is looked up in its IDNA form
    /// (`xn--prxy-hra.example`), the form DNS and a request's host take; a Unicode URL's host
    /// goes to it in that form too, in the absolute-form target and in `CONNECT`. The proxy's
    /// name was looked up as written: `getaddrinfo` got its UTF-8, which DNS does not resolve,
    /// and a resolver or ``SessionConfiguration/hostAddresses`` a name no request's host is.
    @Test func aProxyNamedInUnicodeIsLookedUpAndSentHostsInIDNA() async throws {
        let proxyName = "xn--prxy-hra.example"
        let resolver = TransportHostAddressTests.CountingResolver(answers: [proxyName: ["127.0.0.1"]])
        try await withTestServer { server in
            // It forwards `http` requests and refuses every `CONNECT`: what it was asked is the point.
            try await withShutdown(of: try await TestProxy.start(upstreamPort: server.port, behaviour: .refuse(status: 403))) { proxy in
                var configuration = SessionConfiguration.default
                configuration.proxy = .http(host: "prøxy.example", port: proxy.port)
                configuration.hostNameResolver = resolver
                // The resolver answers on a task of the cooperative pool, which a loaded run
                // once held past the default 10 s.
                configuration.timeoutIntervalForConnect = 120
                try await withManager(baseURL: nil, configuration: configuration) { manager in
                    let forwarded = try await manager.data(for: Request(url: URL(string: "http://bücher.example/get")!))
                    #expect(forwarded.response.status == .ok)
                    let error = try await #require(throws: CourierError.self) {
                        try await manager.data(for: Request(url: URL(string: "https://bücher.example/get")!))
                    }
                    #expect(error.code == .proxyRefused, "\(error)")
                }
                #expect(proxy.forwardedTargets == ["http://xn--bcher-kva.example/get"], "\(proxy.forwardedTargets)")
                #expect(proxy.connectTargets == ["xn--bcher-kva.example:443"], "\(proxy.connectTargets)")
            }
        }
        let asked = resolver.calls.withLockedValue { $0 }
        #expect(!asked.isEmpty && asked.allSatisfy { $0 == proxyName }, "\(asked)")
    }

    /// A test proxy to `server` that wants Digest credentials `courier`:`password`.
    static func digestProxy(to server: TestServer, password: String = "secret", keepsConnectionOpen: Bool = true) async throws -> TestProxy {
        try await TestProxy.start(
            upstreamPort: server.port, credentials: ("courier", password),
            authentication: .digest(realm: "courier-digest", keepsConnectionOpen: keepsConnectionOpen))
    }

    /// The default configuration through the HTTP proxy on 127.0.0.1:`proxyPort`, with user
    /// `courier` and `password`.
    static func configuration(
        proxyPort: Int, password: String = "secret", version: SessionConfiguration.HTTPVersionPolicy = .automatic
    ) -> SessionConfiguration {
        var configuration = SessionConfiguration.default
        configuration.httpVersion = version
        configuration.proxy = .http(host: "127.0.0.1", port: proxyPort, username: "courier", password: password)
        return configuration
    }

    /// Expects `GET get` to fail with the proxy's 407, its message saying the user `courier`'s
    /// credentials were refused.
    static func expectRefused(_ manager: HTTPSessionManager, sourceLocation: SourceLocation = #_sourceLocation) async {
        await #expect(sourceLocation: sourceLocation) {
            try await manager.get("get")
        } throws: { error in
            guard let error = error as? CourierError else { return false }
            return error.code == .proxyAuthenticationRequired && error.response?.status.code == 407
                && error.message.contains("the credentials for user 'courier' were refused")
        }
    }

    /// A manager for `https://localhost:port/` through the HTTP proxy on 127.0.0.1:`proxyPort`
    /// with user `courier` and `password`, trusting the test root.
    static func manager(
        serverPort: Int, proxyPort: Int, password: String, version: SessionConfiguration.HTTPVersionPolicy
    ) throws -> HTTPSessionManager {
        let configuration = Self.configuration(proxyPort: proxyPort, password: password, version: version)
        let manager = HTTPSessionManager(
            baseURL: URL(string: "https://localhost:\(serverPort)/"), configuration: configuration,
            securityPolicy: try Transport.trustingTestRoot())
        manager.completionQueue = TestQueues.completion
        return manager
    }

    /// `https` through a proxy that wants Digest (RFC 7616), both ways a proxy can send its
    /// challenge: squid's (a page, the connection kept for the answer) and one that closes the
    /// connection (the pool connects again with the answer). Over HTTP/1.1 and HTTP/2, through
    /// the tunnel; a second request opens no new tunnel; a tunnel to another host answers the
    /// challenge at once (nonce count 2, no 407); a wrong password is 407, once answered.
    @Test(arguments: [true, false], [SessionConfiguration.HTTPVersionPolicy.http1Only, .automatic])
    func httpsGoesThroughAProxyThatWantsDigest(_ keepsConnectionOpen: Bool, _ version: SessionConfiguration.HTTPVersionPolicy) async throws {
        try await withTestServer(.https(.localhost)) { server in
            for password in ["secret", "wrong"] {
                let proxy = try await Self.digestProxy(to: server, keepsConnectionOpen: keepsConnectionOpen)
                try await withShutdown(of: proxy) { proxy in
                    let manager = try Self.manager(serverPort: server.port, proxyPort: proxy.port, password: password, version: version)
                    if password == "wrong" {
                        await Self.expectRefused(manager)
                        await manager.invalidate(cancelingTasks: true)
                        // Basic, then one Digest answer: refused, not answered again.
                        #expect(proxy.proxyAuthorizations.count == 2, "\(proxy.proxyAuthorizations)")
                        return
                    }
                    let first = try await manager.get("get", parameters: ["via": "digest"])
                    let second = try await manager.get("get", parameters: ["via": "again"])
                    // Another host (the server's address), another tunnel.
                    let third = try await manager.get("https://127.0.0.1:\(server.port)/get", parameters: ["via": "remembered"])
                    await manager.invalidate(cancelingTasks: true)
                    #expect((first.value.json?["args"] as? [String: any Sendable])?["via"] as? String == "digest")
                    #expect((second.value.json?["args"] as? [String: any Sendable])?["via"] as? String == "again")
                    #expect((third.value.json?["args"] as? [String: any Sendable])?["via"] as? String == "remembered")
                    // Basic first (Courier's preemptive guess), then the answer to the challenge; the
                    // second request rode the same tunnel; the third's tunnel answered the remembered
                    // nonce up front.
                    let authorizations = proxy.proxyAuthorizations.map { $0 ?? "" }
                    #expect(authorizations.count == 3, "\(authorizations)")
                    #expect(authorizations.first?.hasPrefix("Basic ") == true)
                    #expect(authorizations[1].hasPrefix("Digest username=\"courier\", realm=\"courier-digest\""))
                    #expect(authorizations[1].contains("nc=00000001") && authorizations[1].contains("uri=\"localhost:\(server.port)\""))
                    #expect(authorizations[2].contains("nc=00000002") && authorizations[2].contains("uri=\"127.0.0.1:\(server.port)\""))
                    #expect(proxy.connectTargets == ["localhost:\(server.port)", "localhost:\(server.port)", "127.0.0.1:\(server.port)"])
                }
            }
        }
    }

    /// `http` forwarded by a proxy that wants Digest: the 407's challenge is answered by sending
    /// the request again; the next request answers the same nonce at once (nonce count 2); a
    /// refused answer is not sent again; a streamed body, which cannot go again, leaves the 407 to
    /// the caller.
    @Test func httpIsForwardedByAProxyThatWantsDigest() async throws {
        try await withTestServer { server in
            try await withShutdown(of: try await Self.digestProxy(to: server)) { proxy in
                let configuration = Self.configuration(proxyPort: proxy.port)
                try await withManager(baseURL: URL(string: "http://courier-target.invalid/"), configuration: configuration) { manager in
                    let first = try await manager.get("get", parameters: ["via": "digest"])
                    #expect((first.value.json?["args"] as? [String: any Sendable])?["via"] as? String == "digest")
                    // Two transactions: the 407, then the answer.
                    #expect(first.metrics?.transactions.map(\.response?.status.code) == [407, 200])
                    let second = try await manager.post("post", parameters: ["n": 2])
                    #expect(second.response.status.code == 200)
                    #expect(second.metrics?.transactions.count == 1)
                    let authorizations = proxy.proxyAuthorizations.map { $0 ?? "" }
                    #expect(authorizations.count == 3, "\(authorizations)")
                    #expect(authorizations[0].hasPrefix("Basic "))
                    #expect(authorizations[1].hasPrefix("Digest username=\"courier\"") && authorizations[1].contains("nc=00000001"))
                    #expect(authorizations[2].contains("nc=00000002") && authorizations[2].contains("uri=\"http://courier-target.invalid/post\""))

                    // A refused answer: the proxy's refusal stands.
                    try await withShutdown(of: try await Self.digestProxy(to: server, password: "other")) { wrong in
                        let refused = Self.configuration(proxyPort: wrong.port)
                        try await withManager(baseURL: URL(string: "http://courier-target.invalid/"), configuration: refused) { manager in
                            await Self.expectRefused(manager)
                        }
                        // Basic, then one Digest answer, refused.
                        #expect(wrong.proxyAuthorizations.count == 2, "\(wrong.proxyAuthorizations)")
                    }
                }
            }
            // A body read once cannot go again: the 407 is the caller's, after the one Basic try.
            try await withShutdown(of: try await Self.digestProxy(to: server)) { proxy in
                try await withManager(baseURL: nil, configuration: Self.configuration(proxyPort: proxy.port)) { manager in
                    let body = AsyncThrowingStream<ByteBuffer, any Error> { continuation in
                        continuation.yield(ByteBuffer(string: "once"))
                        continuation.finish()
                    }
                    let request = Request(method: .post, url: URL(string: "http://courier-target.invalid/post")!, body: .stream(body, length: .known(4)))
                    let error = await #expect(throws: CourierError.self) { try await manager.data(for: request) }
                    #expect(error?.code == .proxyAuthenticationRequired)
                    #expect(error?.response?.status.code == 407)
                }
                #expect(proxy.proxyAuthorizations.count == 1, "\(proxy.proxyAuthorizations)")
            }
        }
    }

    /// An `https://` proxy: TLS to the proxy (its certificate checked as any server's), then, inside
    /// it, an `http` request in absolute form, or a `CONNECT` tunnel and TLS to the server (TLS in
    /// TLS), over HTTP/1.1 and HTTP/2; the transaction reports the server's TLS, not the proxy's.
    @Test(arguments: [("http", SessionConfiguration.HTTPVersionPolicy.automatic), ("https", .http1Only), ("https", .automatic)])
    func requestsGoThroughAnHTTPSProxy(_ scheme: String, _ version: SessionConfiguration.HTTPVersionPolicy) async throws {
        try await withTestServer(scheme == "https" ? .https(.localhost) : TestServer.Configuration()) { server in
            let proxy = try await TestProxy.start(upstreamPort: server.port, credentials: ("courier", "secret"), tls: .localhost)
            try await withShutdown(of: proxy) { proxy in
                var configuration = SessionConfiguration.default
                configuration.httpVersion = version
                configuration.proxy = try ProxyConfiguration(url: "https://courier:secret@localhost:\(proxy.port)")
                let manager = HTTPSessionManager(baseURL: nil, configuration: configuration, securityPolicy: try Transport.trustingTestRoot())
                manager.completionQueue = TestQueues.completion
                // The certificate names localhost: the server's is checked against the URL's host.
                let target = scheme == "https" ? "https://localhost:\(server.port)/get?via=tls" : "http://courier-target.invalid/get?via=tls"
                let response = try await manager.get(target)
                await manager.invalidate(cancelingTasks: true)
                #expect(response.response.status.code == 200)
                let transaction = try #require(response.metrics?.transactions.last)
                #expect(transaction.isProxyConnection)
                #expect(transaction.remoteSocketAddress?.port == proxy.port)
                if scheme == "https" {
                    #expect(proxy.connectTargets == ["localhost:\(server.port)"])
                    // The `CONNECT` carries the session's `User-Agent`, as the forwarded requests do.
                    #expect(proxy.connectUserAgents == [configuration.userAgent])
                    #expect(transaction.networkProtocolName == (version == .automatic ? "h2" : "http/1.1"))
                    #expect(transaction.tlsProtocolVersion != nil)
                } else {
                    #expect(proxy.forwardedTargets == ["http://courier-target.invalid/get?via=tls"])
                    #expect(transaction.networkProtocolName == "http/1.1")
                }
                #expect(proxy.proxyAuthorizations == ["Basic " + Data("courier:secret".utf8).base64EncodedString()])
            }
        }
    }

    /// An `https://` proxy that asks for a client certificate: the policy for the proxy's host
    /// presents its identity, and the tunnel opens. Without one, the TLS 1.3 proxy's refusal (an
    /// alert after the client's side of the handshake, read while the `CONNECT` waits for its
    /// answer) is a TLS failure naming the proxy, in words; it was `connectionClosed`, "the
    /// connection to HTTPS proxy … failed during CONNECT …" with BoringSSL's error and its source
    /// path.
    @Test func anHTTPSProxyThatAsksForAClientCertificate() async throws {
        try await withTestServer(.https()) { server in
            let proxy = try await TestProxy.start(upstreamPort: server.port, tls: .localhost, requiresClientCertificate: true)
            try await withShutdown(of: proxy) { proxy in
                var configuration = SessionConfiguration.default
                configuration.proxy = .https(host: "localhost", port: proxy.port)
                let trusting = try Transport.trustingTestRoot()
                let target = "https://127.0.0.1:\(server.port)/get"
                try await withManager(baseURL: nil, configuration: configuration, securityPolicy: trusting) { manager in
                    let error = try await #require(throws: CourierError.self) { try await manager.get(target) }
                    #expect(error.code == .tlsFailure, "\(error)")
                    #expect(error.message.hasPrefix("HTTPS proxy localhost:\(proxy.port): the TLS handshake failed: "), "\(error.message)")
                    #expect(error.message.contains("requires a client certificate"), "\(error.message)")
                    #expect(error.message.contains("CONNECT 127.0.0.1:\(server.port)"), "\(error.message)")
                    #expect(!error.message.contains(".cc:"), "no BoringSSL source path: \(error.message)")
                }
                #expect(proxy.connectTargets.isEmpty, "nothing went through the refused TLS")
                #expect(server.requestCount == 0)
                // The proxy's host has a policy of its own, with the identity; the server's has none.
                var trust = ServerTrustPolicies(default: trusting)
                var proxyPolicy = trusting
                proxyPolicy.clientIdentity = try ClientIdentity(
                    certificatePEM: TestCertificates.clientCertificate, privateKeyPEM: TestCertificates.clientKey)
                trust["localhost"] = proxyPolicy
                try await withManagerThatEnds({
                    HTTPSessionManager(baseURL: nil, engine: NIOEngine(configuration: configuration, serverTrust: trust), configuration: configuration)
                }) { manager in
                    let response = try await manager.get(target)
                    #expect(response.response.status.code == 200)
                }
                #expect(proxy.connectTargets == ["127.0.0.1:\(server.port)"])
            }
        }
    }

    /// An `https://` proxy whose certificate the policy does not trust: a typed TLS error that
    /// names the proxy, and nothing reaches it in the clear.
    @Test func anHTTPSProxyWithAnUntrustedCertificateIsRefused() async throws {
        try await withTestServer { server in
            let proxy = try await TestProxy.start(upstreamPort: server.port, tls: .selfSigned)
            try await withShutdown(of: proxy) { proxy in
                var configuration = SessionConfiguration.default
                configuration.proxy = .https(host: "localhost", port: proxy.port)
                try await withManager(baseURL: URL(string: "http://courier-target.invalid/"), configuration: configuration) { manager in
                    await #expect {
                        try await manager.get("get")
                    } throws: { error in
                        guard let error = error as? CourierError else { return false }
                        return error.code == .serverTrustEvaluationFailed && error.message.hasPrefix("HTTPS proxy localhost:\(proxy.port): ")
                    }
                }
                #expect(proxy.forwardedTargets.isEmpty)
            }
        }
    }
}
