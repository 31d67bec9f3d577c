@testable import Courier
import CourierTesting
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing

/// Proxies nobody here wrote: Debian's tinyproxy (HTTP: `CONNECT` and absolute-form forwarding,
/// Basic credentials), the same behind stunnel (an `https://` proxy), squid (HTTP, Digest
/// credentials) and Dante's danted (SOCKS5, without authentication and with a user name and
/// password), which `.ci/run` starts (`.ci/proxies.sh`) and names in `COURIER_HTTP_PROXY_URL`,
/// `COURIER_HTTPS_PROXY_URL`, `COURIER_DIGEST_PROXY_URL`, `COURIER_SOCKS_PROXY_URL` and
/// `COURIER_SOCKS_AUTH_PROXY_URL`. Each test is skipped, saying why, when its proxy is missing.
enum RealProxies {
    static func proxy(_ variable: String) -> NIOEngine.Proxy? {
        ProcessInfo.processInfo.environment[variable].flatMap { try? NIOEngine.Proxy(url: $0) }
    }
    static var http: NIOEngine.Proxy? { Self.proxy("COURIER_HTTP_PROXY_URL") }
    static var socks: NIOEngine.Proxy? { Self.proxy("COURIER_SOCKS_PROXY_URL") }
    static var https: NIOEngine.Proxy? { Self.proxy("COURIER_HTTPS_PROXY_URL") }
    /// The URL of a danted that wants a user name and password, carrying them. Read by the
    /// tests themselves (not through `try?`), so that a URL Courier cannot read fails them
    /// rather than skipping them.
    static var authenticatingSOCKSURL: String? { ProcessInfo.processInfo.environment["COURIER_SOCKS_AUTH_PROXY_URL"] }
    /// The URL of a squid that wants Digest credentials, carrying them, and its access log.
    static var digestURL: String? { ProcessInfo.processInfo.environment["COURIER_DIGEST_PROXY_URL"] }
    static var digestLog: String? { ProcessInfo.processInfo.environment["COURIER_DIGEST_PROXY_LOG"] }
    /// The URL of stunnel in front of tinyproxy (an `https://` proxy), and the file of the CA
    /// that issued its certificate.
    static var httpsURL: String? { ProcessInfo.processInfo.environment["COURIER_HTTPS_PROXY_URL"] }
    static var httpsCA: String? { ProcessInfo.processInfo.environment["COURIER_HTTPS_PROXY_CA"] }
}

@Suite("Proxies: tinyproxy, squid and danted")
struct RealProxyTests {
    typealias Collector = ProxyTunnelSocketTests.Collector

    /// Connects to `route`'s proxy, opens its tunnel to `server`, writes `head` (a request
    /// ending in `Connection: close`) and returns the whole answer.
    static func exchange(_ route: ProxyRoute, to server: TestServer, head: (ProxyRoute) -> String) async throws -> String {
        let address = route.connectionAddress(host: "127.0.0.1", port: server.port)
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connect(host: address.host, port: address.port).get()
        try await ProxyTunnel.establish(on: channel, target: "127.0.0.1", port: server.port, route: route, timeout: ProxyTunnelSocketTests.longTimeout).get()
        let collector = Collector(eventLoop: channel.eventLoop)
        try await channel.pipeline.addHandler(collector).get()
        try await channel.writeAndFlush(ByteBuffer(string: head(route))).get()
        return try await collector.received.futureResult.get()
    }

    /// `GET /get?via=…` for `server`, as the pool writes it on `route`.
    static func get(_ server: TestServer, via: String) -> (ProxyRoute) -> String {
        { route in
            let url = URL(string: "http://127.0.0.1:\(server.port)/get?via=\(via)")!
            var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/get?via=\(via)")
            head.headers.add(name: "Host", value: "127.0.0.1:\(server.port)")
            head.headers.add(name: "Connection", value: "close")
            route.adjust(&head, for: url)
            var text = "GET \(head.uri) HTTP/1.1\r\n"
            for (name, value) in head.headers { text += "\(name): \(value)\r\n" }
            return text + "\r\n"
        }
    }

    static let noHTTPProxy = "COURIER_HTTP_PROXY_URL is not set: .ci/run starts tinyproxy and sets it"
    static let noSOCKSProxy = "COURIER_SOCKS_PROXY_URL is not set: .ci/run starts danted and sets it"
    static let noAuthenticatingSOCKSProxy =
        "COURIER_SOCKS_AUTH_PROXY_URL is not set: .ci/run starts a danted that wants a password (as root) and sets it"
    static let noDigestProxy = "COURIER_DIGEST_PROXY_URL is not set: .ci/run starts a squid that wants Digest credentials and sets it"
    static let noHTTPSProxy = "COURIER_HTTPS_PROXY_URL is not set: .ci/run starts stunnel in front of tinyproxy and sets it"

    @Test(.enabled(if: RealProxies.http != nil, Comment(rawValue: Self.noHTTPProxy)))
    func tinyproxyOpensAConnectTunnel() async throws {
        let proxy = try #require(RealProxies.http)
        try await withTestServer { server in
            let answer = try await Self.exchange(.connectTunnel(proxy), to: server, head: Self.get(server, via: "tinyproxy-connect"))
            #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(answer.prefix(200))")
            #expect(answer.contains("tinyproxy-connect"))
        }
    }

    @Test(.enabled(if: RealProxies.http != nil, Comment(rawValue: Self.noHTTPProxy)))
    func tinyproxyForwardsAnAbsoluteFormRequest() async throws {
        let proxy = try #require(RealProxies.http)
        try await withTestServer { server in
            let answer = try await Self.exchange(.forward(proxy), to: server, head: Self.get(server, via: "tinyproxy-forward"))
            #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n") || answer.hasPrefix("HTTP/1.0 200 OK\r\n"), "\(answer.prefix(200))")
            #expect(answer.contains("tinyproxy-forward"))
        }
    }

    @Test(.enabled(if: RealProxies.http != nil, Comment(rawValue: Self.noHTTPProxy)))
    func tinyproxyWantsCredentials() async throws {
        var proxy = try #require(RealProxies.http)
        proxy.password = "wrong"
        try await withTestServer { server in
            let error = await #expect(throws: CourierError.self) {
                try await Self.exchange(.connectTunnel(proxy), to: server, head: Self.get(server, via: "x"))
            }
            #expect(error?.code == .proxyAuthenticationRequired)
            // tinyproxy 1.11 answers CONNECT with 401 (and 407 to a forwarded request).
            #expect(error?.response?.status.code == 401 || error?.response?.status.code == 407)
            #expect(error?.message.contains("HTTP proxy \(proxy.host):\(proxy.port)") == true, "\(error?.message ?? "")")
        }
    }

    @Test(.enabled(if: RealProxies.http != nil, Comment(rawValue: Self.noHTTPProxy)))
    func aSessionGoesThroughTinyproxy() async throws {
        let proxy = try #require(RealProxies.http)
        try await withTestServer { server in
            var configuration = SessionConfiguration.default
            configuration.proxy = ProxyConfiguration(proxy: proxy)
            try await withManager(baseURL: server.baseURL, configuration: configuration) { manager in
                let response = try await manager.get("get", parameters: ["via": "session"])
                #expect((response.value.json?["args"] as? [String: any Sendable])?["via"] as? String == "session")
            }
        }
    }

    @Test(.enabled(if: RealProxies.socks != nil, Comment(rawValue: Self.noSOCKSProxy)))
    func dantedOpensASOCKS5Tunnel() async throws {
        let proxy = try #require(RealProxies.socks)
        try await withTestServer { server in
            let answer = try await Self.exchange(.socksTunnel(proxy), to: server, head: Self.get(server, via: "danted"))
            #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(answer.prefix(200))")
            #expect(answer.contains("danted"))
        }
    }

    @Test(.enabled(if: RealProxies.http != nil, Comment(rawValue: Self.noHTTPProxy)))
    func httpsThroughTinyproxy() async throws {
        let proxy = try #require(RealProxies.http)
        try await withTestServer(.https()) { server in
            let answer = try await ProxyTunnelSocketTests.getOverTLS(through: .connectTunnel(proxy), proxyPort: proxy.port, server: server)
            #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(answer.prefix(200))")
        }
    }

    @Test(.enabled(if: RealProxies.socks != nil, Comment(rawValue: Self.noSOCKSProxy)))
    func httpsThroughDanted() async throws {
        let proxy = try #require(RealProxies.socks)
        try await withTestServer(.https()) { server in
            let answer = try await ProxyTunnelSocketTests.getOverTLS(through: .socksTunnel(proxy), proxyPort: proxy.port, server: server)
            #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(answer.prefix(200))")
        }
    }

    @Test(.enabled(if: RealProxies.socks != nil, Comment(rawValue: Self.noSOCKSProxy)))
    func dantedRefusesAPortNobodyListensOn() async throws {
        let proxy = try #require(RealProxies.socks)
        // Bound and never listening for the rest of the process: no parallel test's server can
        // take it between here and the proxy's connect (a port closed again could be).
        let port = closedPort()
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connect(host: proxy.host, port: proxy.port).get()
        let error = await #expect(throws: CourierError.self) {
            try await ProxyTunnel.establish(on: channel, target: "127.0.0.1", port: port, route: .socksTunnel(proxy), timeout: ProxyTunnelSocketTests.longTimeout).get()
        }
        #expect(error?.code == .proxyRefused)
        #expect(error?.message.contains("SOCKS5 proxy \(proxy.host):\(proxy.port)") == true, "\(error?.message ?? "")")
        try await channel.closeFuture.get()
    }

    // MARK: danted with a user name and password (RFC 1929)

    @Test(.enabled(if: RealProxies.authenticatingSOCKSURL != nil, Comment(rawValue: Self.noAuthenticatingSOCKSProxy)))
    func dantedTakesAUserNameAndPassword() async throws {
        let proxy = try NIOEngine.Proxy(url: #require(RealProxies.authenticatingSOCKSURL))
        #expect(proxy.username != nil && proxy.password != nil)
        try await withTestServer { server in
            let answer = try await Self.exchange(.socksTunnel(proxy), to: server, head: Self.get(server, via: "danted-password"))
            #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(answer.prefix(200))")
            #expect(answer.contains("danted-password"))
        }
        try await withTestServer(.https()) { server in
            let answer = try await ProxyTunnelSocketTests.getOverTLS(through: .socksTunnel(proxy), proxyPort: proxy.port, server: server)
            #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(answer.prefix(200))")
        }
    }

    @Test(.enabled(if: RealProxies.authenticatingSOCKSURL != nil, Comment(rawValue: Self.noAuthenticatingSOCKSProxy)))
    func dantedRefusesAWrongPasswordAndNoCredentials() async throws {
        let proxy = try NIOEngine.Proxy(url: #require(RealProxies.authenticatingSOCKSURL))
        var wrong = proxy
        wrong.password = "not-the-password"
        let anonymous = NIOEngine.Proxy.socks(host: proxy.host, port: proxy.port)
        try await withTestServer { server in
            let refused = await #expect(throws: CourierError.self) {
                try await Self.exchange(.socksTunnel(wrong), to: server, head: Self.get(server, via: "x"))
            }
            #expect(refused?.code == .proxyAuthenticationRequired)
            #expect(refused?.message.contains("refused the credentials for user '\(proxy.username ?? "")'") == true, "\(refused?.message ?? "")")
            #expect(refused?.message.contains("not-the-password") == false)

            let none = await #expect(throws: CourierError.self) {
                try await Self.exchange(.socksTunnel(anonymous), to: server, head: Self.get(server, via: "x"))
            }
            #expect(none?.code == .proxyAuthenticationRequired)
            #expect(none?.message.contains("accepts none of the authentication methods offered") == true, "\(none?.message ?? "")")
        }
    }

    @Test(.enabled(if: RealProxies.authenticatingSOCKSURL != nil, Comment(rawValue: Self.noAuthenticatingSOCKSProxy)))
    func aSessionGoesThroughDantedWithAPassword() async throws {
        let proxy = try NIOEngine.Proxy(url: #require(RealProxies.authenticatingSOCKSURL))
        try await withTestServer { server in
            var configuration = SessionConfiguration.default
            configuration.proxy = try ProxyConfiguration(url: #require(RealProxies.authenticatingSOCKSURL))
            try await withManager(baseURL: server.baseURL, configuration: configuration) { manager in
                for via in ["first", "second"] {
                    let response = try await manager.get("get", parameters: ["via": via])
                    #expect((response.value.json?["args"] as? [String: any Sendable])?["via"] as? String == via)
                    #expect(response.metrics?.transactions.first?.isProxyConnection == true)
                    #expect(response.metrics?.transactions.first?.remoteSocketAddress?.port == proxy.port)
                }
            }
        }
    }

    // MARK: squid with Digest credentials (RFC 7616)

    @Test(.enabled(if: RealProxies.digestURL != nil, Comment(rawValue: Self.noDigestProxy)))
    func squidTakesADigestAnswerOnTheConnectionItsChallengeCameOn() async throws {
        let proxy = try NIOEngine.Proxy(url: #require(RealProxies.digestURL))
        try await withTestServer { server in
            let answer = try await Self.exchange(.connectTunnel(proxy), to: server, head: Self.get(server, via: "squid"))
            #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(answer.prefix(200))")
            #expect(answer.contains("squid"))
        }
        try await withTestServer(.https()) { server in
            let answer = try await ProxyTunnelSocketTests.getOverTLS(through: .connectTunnel(proxy), proxyPort: proxy.port, server: server)
            #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(answer.prefix(200))")
        }
    }

    @Test(.enabled(if: RealProxies.digestURL != nil, Comment(rawValue: Self.noDigestProxy)))
    func squidRefusesAWrongDigestPassword() async throws {
        var wrong = try NIOEngine.Proxy(url: #require(RealProxies.digestURL))
        // A user of its own (`.ci/proxies.sh` gives it another password): squid keeps credential
        // state per user, and the other tests authenticate theirs at the same moment.
        wrong.username = "refused"
        wrong.password = "not-the-password"
        try await withTestServer { server in
            let refused = await #expect(throws: CourierError.self) {
                try await Self.exchange(.connectTunnel(wrong), to: server, head: Self.get(server, via: "x"))
            }
            #expect(refused?.code == .proxyAuthenticationRequired)
            #expect(refused?.response?.status.code == 407)
            #expect(refused?.message.contains("the credentials for user '\(wrong.username ?? "")' were refused") == true, "\(refused?.message ?? "")")
        }
    }

    @Test(.enabled(if: RealProxies.digestURL != nil, Comment(rawValue: Self.noDigestProxy)))
    func aSessionGoesThroughSquidWithDigest() async throws {
        let proxy = try NIOEngine.Proxy(url: #require(RealProxies.digestURL))
        for version in [SessionConfiguration.HTTPVersionPolicy.http1Only, .automatic] {
            try await withTestServer(.https()) { server in
                var configuration = SessionConfiguration.default
                configuration.httpVersion = version
                configuration.proxy = try ProxyConfiguration(url: #require(RealProxies.digestURL))
                let manager = HTTPSessionManager(baseURL: server.baseURL, configuration: configuration, securityPolicy: try Transport.trustingTestRoot())
                manager.completionQueue = TestQueues.completion
                for via in ["first", "second"] {
                    let response = try await manager.get("get", parameters: ["via": via])
                    #expect((response.value.json?["args"] as? [String: any Sendable])?["via"] as? String == via)
                    #expect(response.metrics?.transactions.first?.remoteSocketAddress?.port == proxy.port)
                }
                // The server by name: another tunnel, whose CONNECT answers the nonce squid gave
                // the first one (its count checked by squid) without a 407 of its own.
                let named = try await manager.get("https://localhost:\(server.port)/get", parameters: ["via": "named"])
                #expect((named.value.json?["args"] as? [String: any Sendable])?["via"] as? String == "named")
                await manager.invalidate(cancelingTasks: true)
                if let log = RealProxies.digestLog {
                    let lines = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n")
                    func refusals(of target: String) -> Int {
                        lines.count { $0.contains("TCP_DENIED/407") && $0.contains("CONNECT \(target) ") }
                    }
                    #expect(refusals(of: "127.0.0.1:\(server.port)") == 1, "\(lines.suffix(6))")
                    #expect(refusals(of: "localhost:\(server.port)") == 0, "\(lines.suffix(6))")
                }
            }
        }
        // `http`, forwarded: the first request answers the 407's challenge, the next ones its nonce.
        try await withTestServer { server in
            var configuration = SessionConfiguration.default
            configuration.proxy = try ProxyConfiguration(url: #require(RealProxies.digestURL))
            try await withManager(baseURL: server.baseURL, configuration: configuration) { manager in
                for (via, transactions) in [("first", 2), ("second", 1), ("third", 1)] {
                    let response = try await manager.get("get", parameters: ["via": via])
                    #expect((response.value.json?["args"] as? [String: any Sendable])?["via"] as? String == via)
                    #expect(response.metrics?.transactions.count == transactions)
                }
            }
        }
    }

    // MARK: stunnel in front of tinyproxy: an https:// proxy

    @Test(.enabled(if: RealProxies.httpsURL != nil, Comment(rawValue: Self.noHTTPSProxy)))
    func aSessionGoesThroughAnHTTPSProxy() async throws {
        let url = try #require(RealProxies.httpsURL)
        let proxy = try NIOEngine.Proxy(url: url)
        #expect(proxy.usesTLS)
        // Trusting the proxy's CA too (`COURIER_HTTPS_PROXY_CA`).
        let policy = try Transport.trustingTestRoot()
        #expect(RealProxies.httpsCA != nil)
        // `http`, forwarded inside the proxy's TLS; `https`, a CONNECT tunnel and TLS inside it.
        for (secure, version) in [(false, SessionConfiguration.HTTPVersionPolicy.automatic), (true, .http1Only), (true, .automatic)] {
            try await withTestServer(secure ? .https() : TestServer.Configuration()) { server in
                var configuration = SessionConfiguration.default
                configuration.httpVersion = version
                configuration.proxy = try ProxyConfiguration(url: url)
                let manager = HTTPSessionManager(baseURL: server.baseURL, configuration: configuration, securityPolicy: policy)
                manager.completionQueue = TestQueues.completion
                for via in ["first", "second"] {
                    let response = try await manager.get("get", parameters: ["via": via])
                    #expect((response.value.json?["args"] as? [String: any Sendable])?["via"] as? String == via)
                    let transaction = try #require(response.metrics?.transactions.last)
                    #expect(transaction.isProxyConnection)
                    #expect(transaction.remoteSocketAddress?.port == proxy.port)
                    if secure { #expect(transaction.networkProtocolName == (version == .automatic ? "h2" : "http/1.1")) }
                }
                await manager.invalidate(cancelingTasks: true)
            }
        }
    }

    @Test(.enabled(if: RealProxies.httpsURL != nil, Comment(rawValue: Self.noHTTPSProxy)))
    func anHTTPSProxyMustBeTrusted() async throws {
        let url = try #require(RealProxies.httpsURL)
        try await withTestServer { server in
            var configuration = SessionConfiguration.default
            configuration.proxy = try ProxyConfiguration(url: url)
            // The proxy's CA is not trusted here.
            var policy = SecurityPolicy.default
            policy.additionalTrustedCertificates = try Certificate.certificates(pemEncoded: TestCertificates.rootCA)
            let manager = HTTPSessionManager(baseURL: server.baseURL, configuration: configuration, securityPolicy: policy)
            manager.completionQueue = TestQueues.completion
            await #expect {
                try await manager.get("get")
            } throws: { error in
                guard let error = error as? CourierError else { return false }
                return error.code == .serverTrustEvaluationFailed && error.message.hasPrefix("HTTPS proxy localhost:")
            }
            await manager.invalidate(cancelingTasks: true)
        }
    }
}
