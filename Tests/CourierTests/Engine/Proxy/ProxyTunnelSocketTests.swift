@testable import Courier
import CourierTesting
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization
import NIOSSL
import Testing

/// `ProxyTunnel.establish` over real sockets: a TCP connection to ``TestProxy`` or
/// ``TestSOCKSServer``, the tunnel, then a request through it to a ``TestServer`` (the proxies send
/// every tunnel there, so the made-up target host proves the proxy carried it); and each way a
/// proxy refuses, as a typed error naming the proxy, the channel closed.
@Suite("Proxy tunnels over sockets")
struct ProxyTunnelSocketTests {
    static let target = "courier-target.invalid"

    /// The timeout of a tunnel (or of a TLS handshake inside one) that must open, or be refused,
    /// before it: 60 s, as a full CI run held every test for about 36 s (30 s left too little
    /// margin). Only a failing test waits for it.
    static let longTimeout: TimeAmount = .seconds(60)

    /// Collects what arrives on a channel until it closes.
    final class Collector: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let received: EventLoopPromise<String>
        private let bytes = NIOLockedValueBox<[UInt8]>([])

        init(eventLoop: any EventLoop) {
            self.received = eventLoop.makePromise()
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let buffer = self.unwrapInboundIn(data)
            self.bytes.withLockedValue { $0 += buffer.readableBytesView }
        }

        func channelInactive(context: ChannelHandlerContext) {
            self.received.succeed(String(decoding: self.bytes.withLockedValue { $0 }, as: UTF8.self))
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            self.received.fail(error)
            context.close(promise: nil)
        }
    }

    /// A TCP connection to 127.0.0.1:`port`.
    static func connect(to port: Int) async throws -> any Channel {
        try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connect(host: "127.0.0.1", port: port).get()
    }

    /// Opens `route`'s tunnel to `target` (the made-up one by default) on a connection to `proxyPort`, sends
    /// `GET /get?via=…` through it with `Connection: close`, and returns the whole answer.
    static func get(through route: ProxyRoute, proxyPort: Int, via: String, target: String = Self.target) async throws -> String {
        let channel = try await Self.connect(to: proxyPort)
        try await ProxyTunnel.establish(on: channel, target: target, port: 80, route: route, timeout: Self.longTimeout).get()
        let collector = Collector(eventLoop: channel.eventLoop)
        // The tunnel's handlers are gone: the collector is the only one.
        let leftOver = try await channel.eventLoop.submit { () -> Bool in
            let pipeline = channel.pipeline.syncOperations
            return (try? pipeline.handler(type: HTTPConnectHandler.self)) != nil || (try? pipeline.handler(type: SOCKSTunnelHandler.self)) != nil
        }.get()
        #expect(!leftOver)
        try await channel.pipeline.addHandler(collector).get()
        let request = "GET /get?via=\(via) HTTP/1.1\r\nHost: \(Self.target)\r\nConnection: close\r\n\r\n"
        try await channel.writeAndFlush(ByteBuffer(string: request)).get()
        return try await collector.received.futureResult.get()
    }

    /// The error `establish` fails with, after checking that the channel was closed.
    static func failure(through route: ProxyRoute, proxyPort: Int, target: String = Self.target) async throws -> CourierError? {
        let channel = try await Self.connect(to: proxyPort)
        let error = await #expect(throws: CourierError.self) {
            try await ProxyTunnel.establish(on: channel, target: target, port: 80, route: route, timeout: Self.longTimeout).get()
        }
        try await channel.closeFuture.get()
        return error
    }

    // MARK: CONNECT

    @Test func aConnectTunnelCarriesBasicCredentialsAndTheRequest() async throws {
        try await withTestServer { server in
            let proxy = try await TestProxy.start(upstreamPort: server.port, credentials: ("courier", "secret"))
            let route = ProxyRoute.connectTunnel(.http(host: "127.0.0.1", port: proxy.port, username: "courier", password: "secret"))
            let answer = try await Self.get(through: route, proxyPort: proxy.port, via: "connect")
            try await proxy.shutdown()
            #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n"))
            #expect(answer.contains("\"via\""))
            #expect(answer.contains("connect"))
            #expect(proxy.connectTargets == ["\(Self.target):80"])
            #expect(proxy.proxyAuthorizations == ["Basic " + Data("courier:secret".utf8).base64EncodedString()])
        }
    }

    /// A proxy that asks only for a scheme Courier does not answer never checked the credentials
    /// Courier sent: the message says what it asked for, not that the password was refused.
    @Test func a407ForAnotherSchemeSaysSo() throws {
        let proxy = NIOEngine.Proxy.http(host: "127.0.0.1", port: 3128, username: "ann", password: "pw")
        let ntlm = HTTPResponse(status: .proxyAuthenticationRequired, headerFields: [.proxyAuthenticate: "NTLM"])
        #expect(
            ProxyTunnelFailure.credentialsVerdict(proxy: proxy, response: ntlm)
                == "it asks for NTLM, and Courier answers a proxy's Basic and Digest only (user 'ann')")
        let digest = HTTPResponse(status: .proxyAuthenticationRequired, headerFields: [.proxyAuthenticate: #"Digest realm="p", nonce="n""#])
        #expect(ProxyTunnelFailure.credentialsVerdict(proxy: proxy, response: digest) == "the credentials for user 'ann' were refused")
        let basic = HTTPResponse(status: .proxyAuthenticationRequired, headerFields: [.proxyAuthenticate: #"Digest realm="p", nonce="n", Basic realm="p""#])
        #expect(ProxyTunnelFailure.credentialsVerdict(proxy: proxy, response: basic) == "the credentials for user 'ann' were refused")
        let bare = HTTPResponse(status: .proxyAuthenticationRequired)
        #expect(ProxyTunnelFailure.credentialsVerdict(proxy: proxy, response: bare) == "the credentials for user 'ann' were refused")
        #expect(ProxyTunnelFailure.credentialsVerdict(proxy: .http(host: "127.0.0.1", port: 3128), response: ntlm) == "none were configured")
    }

    @Test func wrongOrMissingCredentialsAre407NamingTheProxy() async throws {
        try await withTestServer { server in
            let proxy = try await TestProxy.start(upstreamPort: server.port, credentials: ("courier", "secret"))
            let wrong = try await Self.failure(
                through: .connectTunnel(.http(host: "127.0.0.1", port: proxy.port, username: "courier", password: "wrong")),
                proxyPort: proxy.port)
            #expect(wrong?.code == .proxyAuthenticationRequired)
            #expect(wrong?.message.contains("HTTP proxy 127.0.0.1:\(proxy.port)") == true)
            #expect(wrong?.message.contains("CONNECT \(Self.target):80") == true)
            #expect(wrong?.message.contains("user 'courier' were refused") == true)
            #expect(wrong?.response?.status.code == 407)
            #expect(wrong?.response?.headerFields[.proxyAuthenticate] == "Basic")
            let none = try await Self.failure(through: .connectTunnel(.http(host: "127.0.0.1", port: proxy.port)), proxyPort: proxy.port)
            #expect(none?.code == .proxyAuthenticationRequired)
            #expect(none?.message.contains("none were configured") == true)
            try await proxy.shutdown()
        }
    }

    /// A Digest proxy that keeps the connection open after its 407 is answered on it; one that
    /// closes it fails `establish` with the answer for the pool's next connection, which opens
    /// the tunnel with it.
    @Test(arguments: [true, false])
    func aDigestChallengeIsAnswered(_ keepsConnectionOpen: Bool) async throws {
        try await withTestServer { server in
            let proxy = try await TestProxy.start(
                upstreamPort: server.port, credentials: ("courier", "secret"),
                authentication: .digest(realm: "corp", keepsConnectionOpen: keepsConnectionOpen))
            let route = ProxyRoute.connectTunnel(.http(host: "127.0.0.1", port: proxy.port, username: "courier", password: "secret"))
            if keepsConnectionOpen {
                let answer = try await Self.get(through: route, proxyPort: proxy.port, via: "digest")
                #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n"))
            } else {
                let error = try await Self.failure(through: route, proxyPort: proxy.port)
                #expect(error?.code == .proxyAuthenticationRequired)
                let next = try #require(error?.underlyingError as? ProxyTunnel.DigestAnswer)
                #expect(next.answers == 1)
                let channel = try await Self.connect(to: proxy.port)
                try await ProxyTunnel.establish(on: channel, target: Self.target, port: 80, route: route, timeout: Self.longTimeout, answering: next).get()
                try await channel.close()
            }
            try await proxy.shutdown()
            #expect(proxy.connectTargets == ["\(Self.target):80", "\(Self.target):80"])
            #expect(proxy.proxyAuthorizations.last??.hasPrefix("Digest ") == true)
        }
    }

    @Test func aProxyThatCannotReachTheServerIsRefused() async throws {
        // A port nothing listens on, kept bound (`closedPort()`): a port bound and then closed was
        // once taken by a parallel test's server, which answered the proxy's connection.
        let proxy = try await TestProxy.start(upstreamPort: closedPort())
        let error = try await Self.failure(through: .connectTunnel(.http(host: "127.0.0.1", port: proxy.port)), proxyPort: proxy.port)
        try await proxy.shutdown()
        #expect(error?.code == .proxyRefused)
        #expect(error?.message.contains("HTTP proxy 127.0.0.1:\(proxy.port) refused CONNECT \(Self.target):80: 502") == true)
        #expect(error?.response?.status.code == 502)
    }

    @Test(arguments: [
        (TestProxy.Behaviour.refuse(status: 403), CourierError.Code.proxyRefused, "refused CONNECT courier-target.invalid:80: 403"),
        (.closeOnConnect, .connectionClosed, "closed the connection before answering CONNECT courier-target.invalid:80"),
    ])
    func aProxyThatRefusesOrHangsUpDuringConnect(_ behaviour: TestProxy.Behaviour, _ code: CourierError.Code, _ words: String) async throws {
        let proxy = try await TestProxy.start(upstreamPort: 9, behaviour: behaviour)
        let error = try await Self.failure(through: .connectTunnel(.http(host: "127.0.0.1", port: proxy.port)), proxyPort: proxy.port)
        try await proxy.shutdown()
        #expect(error?.code == code)
        #expect(error?.message.contains("HTTP proxy 127.0.0.1:\(proxy.port)") == true)
        #expect(error?.message.contains(words) == true, "\(error?.message ?? "")")
    }

    // The time limit only catches a hang (two minutes: a full CI run held every test for about 36 s).
    @Test(.timeLimit(.minutes(2)))
    func aSilentProxyTimesOutNamingItself() async throws {
        let proxy = try await TestProxy.start(upstreamPort: 9, behaviour: .silentOnConnect)
        let channel = try await Self.connect(to: proxy.port)
        let error = await #expect(throws: CourierError.self) {
            try await ProxyTunnel.establish(
                on: channel, target: Self.target, port: 443, route: .connectTunnel(.http(host: "127.0.0.1", port: proxy.port)),
                timeout: .milliseconds(200)
            ).get()
        }
        try await channel.closeFuture.get()
        try await proxy.shutdown()
        #expect(error?.code == .timedOut)
        #expect(error?.message == "HTTP proxy 127.0.0.1:\(proxy.port) did not open CONNECT \(Self.target):443 within 200 ms")
        // Under load the 200 ms may pass before the proxy has read the CONNECT: at most that one.
        #expect(proxy.connectTargets.allSatisfy { $0 == "\(Self.target):443" } && proxy.connectTargets.count <= 1)
    }

    // MARK: SOCKS5

    @Test func aSOCKSTunnelSendsTheNameAndCarriesTheRequest() async throws {
        try await withTestServer { server in
            let socks = try await TestSOCKSServer.start(upstreamPort: server.port)
            let answer = try await Self.get(through: .socksTunnel(.socks(host: "127.0.0.1", port: socks.port)), proxyPort: socks.port, via: "socks")
            try await socks.shutdown()
            #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n"))
            #expect(answer.contains("socks"))
            #expect(socks.connectTargets == ["\(Self.target):80"])
        }
    }

    /// curl's rule: `socks5://` resolves the name here and sends the address; `socks5h://` (and
    /// `.socks(host:port:)`) sends the name.
    @Test func aSocks5URLProxyIsSentTheNamesAddressAndSocks5hTheName() async throws {
        try await withTestServer { server in
            let socks = try await TestSOCKSServer.start(upstreamPort: server.port)
            let local = try NIOEngine.Proxy(url: "socks5://127.0.0.1:\(socks.port)")
            let remote = try NIOEngine.Proxy(url: "socks5h://127.0.0.1:\(socks.port)")
            #expect(local.resolvesHostNamesLocally && !remote.resolvesHostNamesLocally)
            #expect(local.description == "socks5://127.0.0.1:\(socks.port)")
            let viaLocal = try await Self.get(through: .socksTunnel(local), proxyPort: socks.port, via: "local", target: "localhost")
            let viaRemote = try await Self.get(through: .socksTunnel(remote), proxyPort: socks.port, via: "remote", target: "localhost")
            try await socks.shutdown()
            #expect(viaLocal.hasPrefix("HTTP/1.1 200 OK\r\n") && viaRemote.hasPrefix("HTTP/1.1 200 OK\r\n"))
            // The first address the system gives for localhost (127.0.0.1 or ::1), then the name.
            let address = try #require(try systemAddresses(of: "localhost", port: 80).first?.ipAddress)
            #expect(socks.connectTargets == ["\(address):80", "localhost:80"])
        }
    }

    @Test func aSocks5URLProxysTargetWithoutAnAddressFailsBeforeTheProxyIsAsked() async throws {
        let socks = try await TestSOCKSServer.start(upstreamPort: 9)
        let proxy = try NIOEngine.Proxy(url: "socks5://127.0.0.1:\(socks.port)")
        let error = try await Self.failure(through: .socksTunnel(proxy), proxyPort: socks.port)
        try await socks.shutdown()
        #expect(error?.code == .connectionFailed)
        #expect(error?.message.contains("courier-target.invalid could not be resolved") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("SOCKS5 proxy 127.0.0.1:\(socks.port)") == true)
        #expect(socks.connectTargets.isEmpty)
    }

    /// The timeout bounds a `socks5://` proxy's lookup of the target's name too: a resolver that
    /// never answers ends the tunnel as timed out, naming the proxy, and is cancelled. Before, no
    /// timer ran until the lookup had answered: the request waited for the resource timeout.
    @Test func aSocks5URLProxysLookupThatHangsTimesOut() async throws {
        let socks = try await TestSOCKSServer.start(upstreamPort: 9)
        let proxy = try NIOEngine.Proxy(url: "socks5://127.0.0.1:\(socks.port)")
        let resolver = TimedResolverTests.ClosureResolver { _ in try await untilCancelled() }
        let channel = try await Self.connect(to: socks.port)
        let error = await #expect(throws: CourierError.self) {
            try await ProxyTunnel.establish(
                on: channel, target: "courier-target.example", port: 80, route: .socksTunnel(proxy), timeout: .milliseconds(200),
                lookup: HostLookup(table: .empty, resolver: resolver)
            ).get()
        }
        try await channel.closeFuture.get()
        try await socks.shutdown()
        #expect(error?.code == .timedOut, "\(error.map { "\($0)" } ?? "")")
        #expect(error?.message.contains("SOCKS5 proxy 127.0.0.1:\(socks.port)") == true, "\(error?.message ?? "")")
        #expect(await eventually { resolver.cancelled.load(ordering: .relaxed) }, "the resolver's task was cancelled")
        #expect(socks.connectTargets.isEmpty)
    }

    /// RFC 1929: the credentials go when the proxy asks for them, and open the tunnel; wrong
    /// ones, or none, are a typed error naming the proxy (and the user, never the password).
    @Test func aSOCKSTunnelWithAUserNameAndPassword() async throws {
        try await withTestServer { server in
            let socks = try await TestSOCKSServer.start(
                upstreamPort: server.port, behaviour: .requireCredentials(username: "ann", password: "s3cret"))
            let good = try NIOEngine.Proxy(url: "socks5h://ann:s3cret@127.0.0.1:\(socks.port)")
            let answer = try await Self.get(through: .socksTunnel(good), proxyPort: socks.port, via: "credentials")
            #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n"))
            #expect(socks.connectTargets == ["\(Self.target):80"])

            let wrong = NIOEngine.Proxy.socks(host: "127.0.0.1", port: socks.port, username: "ann", password: "guess")
            let refused = try await Self.failure(through: .socksTunnel(wrong), proxyPort: socks.port)
            #expect(refused?.code == .proxyAuthenticationRequired)
            #expect(refused?.message
                == "SOCKS5 proxy 127.0.0.1:\(socks.port) refused the credentials for user 'ann' (status 1), for a SOCKS5 tunnel to \(Self.target):80")

            let none = try await Self.failure(through: .socksTunnel(.socks(host: "127.0.0.1", port: socks.port)), proxyPort: socks.port)
            #expect(none?.code == .proxyAuthenticationRequired)
            #expect(none?.message.contains("Courier offers only 'no authentication' when no credentials are configured") == true)
            try await socks.shutdown()
            #expect(socks.usernames == ["ann", "ann"])
            #expect(socks.connectTargets.count == 1)
        }
    }

    @Test(arguments: [
        (TestSOCKSServer.Behaviour.refuse(replyCode: 2), CourierError.Code.proxyRefused, "connection not allowed by ruleset"),
        (.refuse(replyCode: 5), .proxyRefused, "connection refused"),
        (.requireAuthentication, .proxyAuthenticationRequired, "accepts none of the authentication methods offered"),
        (.closeAfterGreeting, .connectionClosed, "closed the connection before answering"),
    ])
    func aSOCKSProxyThatRefusesIsATypedError(
        _ behaviour: TestSOCKSServer.Behaviour, _ code: CourierError.Code, _ words: String
    ) async throws {
        let socks = try await TestSOCKSServer.start(upstreamPort: 9, behaviour: behaviour)
        let error = try await Self.failure(through: .socksTunnel(.socks(host: "127.0.0.1", port: socks.port)), proxyPort: socks.port)
        try await socks.shutdown()
        #expect(error?.code == code)
        #expect(error?.message.contains("SOCKS5 proxy 127.0.0.1:\(socks.port)") == true)
        #expect(error?.message.contains(words) == true, "\(error?.message ?? "")")
    }

    // MARK: Forwarding (absolute form)

    /// The bytes of a request head for `url` as the pool writes it on `route`.
    static func head(_ url: String, route: ProxyRoute, close: Bool) -> String {
        let url = URL(string: url)!
        // Origin form, as the pool writes it for a direct connection; `adjust` rewrites it.
        var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: url.path(percentEncoded: true))
        head.headers.add(name: "Host", value: url.host!)
        if close { head.headers.add(name: "Connection", value: "close") }
        route.adjust(&head, for: url)
        var text = "\(head.method.rawValue) \(head.uri) HTTP/1.1\r\n"
        for (name, value) in head.headers { text += "\(name): \(value)\r\n" }
        return text + "\r\n"
    }

    @Test func anHTTPProxyForwardsAbsoluteFormRequestsWithCredentialsOnOneConnection() async throws {
        try await withTestServer { server in
            let proxy = try await TestProxy.start(upstreamPort: server.port, credentials: ("courier", "secret"))
            let route = ProxyConfiguration.http(host: "127.0.0.1", port: proxy.port, username: "courier", password: "secret")
                .route(for: URL(string: "http://\(Self.target)/")!)
            #expect(route.usesAbsoluteForm && !route.tunnels)
            let address = route.connectionAddress(host: Self.target, port: 80)
            #expect(address.host == "127.0.0.1" && address.port == proxy.port)
            let channel = try await Self.connect(to: address.port)
            try await ProxyTunnel.establish(on: channel, target: Self.target, port: 80, route: route, timeout: Self.longTimeout).get()
            let collector = Collector(eventLoop: channel.eventLoop)
            try await channel.pipeline.addHandler(collector).get()
            let first = Self.head("http://\(Self.target)/get?n=one", route: route, close: false)
            let second = Self.head("http://\(Self.target)/get?n=two", route: route, close: true)
            try await channel.writeAndFlush(ByteBuffer(string: first + second)).get()
            let answer = try await collector.received.futureResult.get()
            try await proxy.shutdown()
            #expect(answer.components(separatedBy: "HTTP/1.1 200 OK\r\n").count == 3)
            #expect(answer.contains("one") && answer.contains("two"))
            #expect(proxy.forwardedTargets == ["http://\(Self.target)/get?n=one", "http://\(Self.target)/get?n=two"])
            let credentials = "Basic " + Data("courier:secret".utf8).base64EncodedString()
            #expect(proxy.proxyAuthorizations == [credentials, credentials])
            #expect(proxy.connectTargets.isEmpty)
        }
    }

    @Test func aForwardingProxyAnswers407WithoutCredentials() async throws {
        try await withTestServer { server in
            let proxy = try await TestProxy.start(upstreamPort: server.port, credentials: ("courier", "secret"))
            let route = ProxyRoute.forward(.http(host: "127.0.0.1", port: proxy.port))
            let channel = try await Self.connect(to: proxy.port)
            let collector = Collector(eventLoop: channel.eventLoop)
            try await channel.pipeline.addHandler(collector).get()
            try await channel.writeAndFlush(ByteBuffer(string: Self.head("http://\(Self.target)/get", route: route, close: false))).get()
            let answer = try await collector.received.futureResult.get()
            try await proxy.shutdown()
            #expect(answer.hasPrefix("HTTP/1.1 407 Proxy Authentication Required\r\n"))
            #expect(proxy.proxyAuthorizations == [nil])
        }
    }

    // MARK: TLS after the tunnel (the pool's sequence for https)

    /// TCP to `proxyPort`, `establish` to 127.0.0.1:`server.port`, Courier's TLS (trusting the
    /// test CA) for 127.0.0.1 on the tunnel, then `GET /get` over it; the whole answer.
    static func getOverTLS(through route: ProxyRoute, proxyPort: Int, server: TestServer) async throws -> String {
        let connector = TLSConnector(
            serverTrust: ServerTrustPolicies(default: .default),
            applicationProtocols: [.http1_1],
            handshakeTimeout: Self.longTimeout,
            trustStore: TrustStore(try Certificate.certificates(pemEncoded: TestCertificates.rootCA))
        )
        let channel = try await Self.connect(to: proxyPort)
        let collector = Collector(eventLoop: channel.eventLoop)
        let result = try await ProxyTunnel.establish(on: channel, target: "127.0.0.1", port: server.port, route: route, timeout: Self.longTimeout)
            .flatMap {
                connector.startTLS(on: channel, host: "127.0.0.1", port: server.port) { _, channel in
                    try channel.pipeline.syncOperations.addHandler(collector)
                }
            }.get()
        #expect(result.applicationProtocol == .http1_1)
        let request = "GET /get?via=tls HTTP/1.1\r\nHost: 127.0.0.1:\(server.port)\r\nConnection: close\r\n\r\n"
        try await channel.writeAndFlush(ByteBuffer(string: request)).get()
        return try await collector.received.futureResult.get()
    }

    @Test func httpsThroughAConnectTunnel() async throws {
        try await withTestServer(.https()) { server in
            let proxy = try await TestProxy.start(upstreamPort: server.port)
            let answer = try await Self.getOverTLS(through: .connectTunnel(.http(host: "127.0.0.1", port: proxy.port)), proxyPort: proxy.port, server: server)
            try await proxy.shutdown()
            #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(answer.prefix(200))")
            #expect(answer.contains("tls"))
            #expect(proxy.connectTargets == ["127.0.0.1:\(server.port)"])
        }
    }

    @Test func httpsThroughASOCKS5Tunnel() async throws {
        try await withTestServer(.https()) { server in
            let socks = try await TestSOCKSServer.start(upstreamPort: server.port)
            let answer = try await Self.getOverTLS(through: .socksTunnel(.socks(host: "127.0.0.1", port: socks.port)), proxyPort: socks.port, server: server)
            try await socks.shutdown()
            #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(answer.prefix(200))")
            #expect(socks.connectTargets == ["127.0.0.1:\(server.port)"])
        }
    }

    // MARK: No tunnel

    @Test func directAndForwardRoutesOpenNoTunnel() async throws {
        try await withTestServer { server in
            for route in [ProxyRoute.direct, .forward(.http(host: "127.0.0.1", port: server.port))] {
                #expect(!route.tunnels)
                let channel = try await Self.connect(to: server.port)
                try await ProxyTunnel.establish(on: channel, target: "127.0.0.1", port: server.port, route: route, timeout: .seconds(1)).get()
                #expect(channel.isActive)
                try await channel.close()
            }
        }
    }
}
