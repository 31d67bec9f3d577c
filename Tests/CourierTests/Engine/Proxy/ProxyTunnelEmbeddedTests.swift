@testable import Courier
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import NIOSOCKS
import Testing

/// The `CONNECT` and SOCKS5 tunnels on an `EmbeddedChannel`: the bytes that go out, the answers
/// that come in, the timeout on the embedded clock, and a typed error for each way a proxy can
/// fail, with the channel closed and the pipeline left clean on success.
@Suite("Proxy tunnels on an EmbeddedChannel")
struct ProxyTunnelEmbeddedTests {
    typealias Proxy = SessionConfiguration.Proxy

    struct Setup {
        let channel: EmbeddedChannel
        let outcome: NIOLockedValueBox<Result<Void, any Error>?>

        var succeeded: Bool {
            if case .success = self.outcome.withLockedValue({ $0 }) { return true }
            return false
        }
        var isPending: Bool { self.outcome.withLockedValue { $0 } == nil }
        var error: CourierError? {
            guard case .failure(let error) = self.outcome.withLockedValue({ $0 }) else { return nil }
            return error as? CourierError
        }

        /// Everything written so far, as one buffer.
        func written() throws -> [UInt8] {
            var bytes: [UInt8] = []
            while let buffer = try self.channel.readOutbound(as: ByteBuffer.self) {
                bytes += buffer.readableBytesView
            }
            return bytes
        }

        func send(_ text: String) throws { try self.channel.writeInbound(ByteBuffer(string: text)) }
        func send(_ bytes: [UInt8]) throws { try self.channel.writeInbound(ByteBuffer(bytes: bytes)) }
    }

    static let httpProxy = Proxy.http(host: "proxy.test", port: 3128)

    static func connect(
        proxy: Proxy = Self.httpProxy, host: String = "api.example.com", port: Int = 443, timeout: TimeAmount = .seconds(5)
    ) throws -> Setup {
        let channel = EmbeddedChannel()
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 3128)).wait()
        let future = ProxyTunnel.connect(on: channel, through: proxy, to: host, port: port, timeout: timeout)
        return Self.observe(future, channel: channel)
    }

    static func socks(
        proxy: Proxy = .socks(host: "socks.test", port: 1080), host: String = "api.example.com", port: Int = 443,
        timeout: TimeAmount = .seconds(5)
    ) throws -> Setup {
        let channel = EmbeddedChannel()
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1080)).wait()
        let future = ProxyTunnel.socks(on: channel, through: proxy, to: host, port: port, timeout: timeout)
        return Self.observe(future, channel: channel)
    }

    private static func observe(_ future: EventLoopFuture<Void>, channel: EmbeddedChannel) -> Setup {
        let outcome = NIOLockedValueBox<Result<Void, any Error>?>(nil)
        future.whenComplete { result in outcome.withLockedValue { $0 = result } }
        return Setup(channel: channel, outcome: outcome)
    }

    // MARK: CONNECT

    @Test func connectSendsTheRequestAndOpensOnA2xx() throws {
        let setup = try Self.connect()
        #expect(String(decoding: try setup.written(), as: UTF8.self)
            == "CONNECT api.example.com:443 HTTP/1.1\r\nHost: api.example.com:443\r\n\r\n")
        #expect(setup.isPending)
        try setup.send("HTTP/1.1 200 Connection established\r\n\r\n")
        #expect(setup.succeeded)
        #expect(throws: (any Error).self) { try setup.channel.pipeline.syncOperations.handler(type: HTTPConnectHandler.self) }
        // The tunnel is the channel's own now: bytes pass through untouched, both ways.
        try setup.send("\u{16}\u{03}\u{01}")
        #expect(try setup.channel.readInbound(as: ByteBuffer.self) == ByteBuffer(string: "\u{16}\u{03}\u{01}"))
        try setup.channel.writeAndFlush(ByteBuffer(string: "hello")).wait()
        #expect(try setup.written() == Array("hello".utf8))
        #expect(setup.channel.isActive)
    }

    @Test func connectCarriesBasicCredentialsAndBracketsIPv6() throws {
        let proxy = Proxy.http(host: "proxy.test", port: 3128, username: "Aladdin", password: "open sesame")
        let setup = try Self.connect(proxy: proxy, host: "2001:db8::1", port: 8443)
        #expect(String(decoding: try setup.written(), as: UTF8.self)
            == "CONNECT [2001:db8::1]:8443 HTTP/1.1\r\nHost: [2001:db8::1]:8443\r\nProxy-Authorization: Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==\r\n\r\n")
    }

    /// A `CONNECT` carries the engine's `User-Agent`, as curl's, Go's and OkHttp's do (a line
    /// break in it cannot end the field); none without one.
    @Test func connectCarriesTheUserAgent() {
        #expect(HTTPConnectStateMachine.request(host: "api.example.com", port: 443, authorization: nil, userAgent: "Courier/1 (test)")
            == "CONNECT api.example.com:443 HTTP/1.1\r\nHost: api.example.com:443\r\nUser-Agent: Courier/1 (test)\r\n\r\n")
        #expect(HTTPConnectStateMachine.request(host: "h", port: 1, authorization: "Basic x", userAgent: "a\r\nX-Injected: 1")
            == "CONNECT h:1 HTTP/1.1\r\nHost: h:1\r\nUser-Agent: a  X-Injected: 1\r\nProxy-Authorization: Basic x\r\n\r\n")
        #expect(HTTPConnectStateMachine.request(host: "h", port: 1, authorization: nil, userAgent: nil) == "CONNECT h:1 HTTP/1.1\r\nHost: h:1\r\n\r\n")
    }

    @Test func anAnswerInPiecesInterimAnswersAndBareLineFeeds() throws {
        let pieces = try Self.connect()
        for byte in "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.0 204 OK\r\nContent-Length: 12\r\n\r\n".utf8 {
            #expect(pieces.isPending)
            try pieces.send([byte])
        }
        #expect(pieces.succeeded)

        let bare = try Self.connect()
        try bare.send("HTTP/1.1 200 Connection established\nProxy-Agent: x\n\n")
        #expect(bare.succeeded)
    }

    @Test func aStatus407IsAuthenticationRequired() throws {
        let setup = try Self.connect(proxy: .http(host: "proxy.test", port: 3128, username: "ann", password: "wrong"))
        try setup.send("HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"corp\"\r\nContent-Length: 0\r\n\r\n")
        let error = try #require(setup.error)
        #expect(error.code == .proxyAuthenticationRequired)
        #expect(error.message.contains("HTTP proxy proxy.test:3128"))
        #expect(error.message.contains("CONNECT api.example.com:443"))
        #expect(error.message.contains("407 Proxy Authentication Required"))
        #expect(error.message.contains("user 'ann'"))
        #expect(error.response?.status.code == 407)
        #expect(error.response?.headerFields[.proxyAuthenticate] == "Basic realm=\"corp\"")
        #expect(!setup.channel.isActive)
    }

    @Test func tinyproxys401IsAuthenticationRequiredToo() throws {
        let setup = try Self.connect()
        try setup.send("HTTP/1.0 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"Tinyproxy\"\r\nConnection: close\r\n\r\n")
        let error = try #require(setup.error)
        #expect(error.code == .proxyAuthenticationRequired)
        #expect(error.message.contains("401 Unauthorized"))
        #expect(error.message.contains("none were configured"))
        #expect(error.response?.headerFields[.wwwAuthenticate] == "Basic realm=\"Tinyproxy\"")
        #expect(!setup.channel.isActive)
    }

    @Test(arguments: [
        ("HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n", "403 Forbidden"),
        ("HTTP/1.1 502 Bad Gateway\r\nContent-Length: 5\r\n\r\nnope!", "502 Bad Gateway"),
        ("HTTP/1.0 101 Switching Protocols\r\n\r\n", "101 Switching Protocols"),
        ("HTTP/1.1 302\r\nLocation: /elsewhere\r\n\r\n", "302"),
    ])
    func otherStatusesAreRefusals(_ answer: String, _ status: String) throws {
        let setup = try Self.connect()
        try setup.send(answer)
        let error = try #require(setup.error)
        #expect(error.code == .proxyRefused)
        #expect(error.message == "HTTP proxy proxy.test:3128 refused CONNECT api.example.com:443: \(status)")
        #expect(!setup.channel.isActive)
    }

    @Test(arguments: ["SSH-2.0-OpenSSH_9.2\r\n", "\u{16}\u{03}\u{01}\u{00}", "http/1.1 200 OK\r\n\r\n", "HTTP/2 200\r\n\r\n",
                      "HTTP/1.1 2000 OK\r\n\r\n", "HTTP/1.1 OK\r\n\r\n"])
    func garbageIsAnInvalidResponse(_ answer: String) throws {
        let setup = try Self.connect()
        try setup.send(answer)
        let error = try #require(setup.error, "failed at once, not at the timeout")
        #expect(error.code == .invalidResponse)
        #expect(error.message.hasPrefix("HTTP proxy proxy.test:3128 answered CONNECT api.example.com:443 with "))
        #expect(!setup.channel.isActive)
    }

    @Test func anEndlessHeadIsAnInvalidResponse() throws {
        let setup = try Self.connect()
        try setup.send("HTTP/1.1 200 OK\r\n")
        let line = "X-Filler: " + String(repeating: "a", count: 1000) + "\r\n"
        for _ in 0..<20 where setup.isPending {
            try setup.send(line)
        }
        let error = try #require(setup.error)
        #expect(error.code == .invalidResponse)
        #expect(error.message.contains("longer than 16384 bytes"))
        // The same bound however the head is cut: a head of 16,384 bytes (to the LF of its last
        // field line) is read, one byte longer is refused, in one read or in pieces that end
        // with its line breaks a byte at a time.
        for extra in [0, 1] {
            let head = "HTTP/1.1 200 OK\r\nX-Filler: " + String(repeating: "a", count: 16_384 - 28 + extra) + "\r\n\r\n"
            let body = Array(head.utf8.dropLast(4))
            let tail = Array(head.utf8.suffix(4))
            let pieces = stride(from: 0, to: body.count, by: 1000).map { Array(body[$0..<min($0 + 1000, body.count)]) } + tail.map { [$0] }
            for delivery in [[Array(head.utf8)], pieces] {
                let setup = try Self.connect()
                for piece in delivery where setup.isPending { try setup.send(piece) }
                if extra == 0 {
                    #expect(setup.error == nil, "\(delivery.count) pieces")
                    #expect(!setup.isPending, "established, \(delivery.count) pieces")
                } else {
                    #expect(setup.error?.message.contains("longer than 16384 bytes") == true, "\(delivery.count) pieces")
                }
            }
        }
    }

    /// An answer with an interim head, bare LFs and CRLFs opens the tunnel however it is cut, and
    /// a refusal is one at every cut too (the end of a head is looked for from where the last
    /// read left off).
    @Test func anAnswerCutAnywhereIsReadTheSame() throws {
        let answers = [
            ("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 Connection established\nProxy-Agent: p\r\n\n", true),
            ("HTTP/1.0 403 Forbidden\r\nX-A: b\n\r\n", false),
        ]
        for (answer, opens) in answers {
            let bytes = Array(answer.utf8)
            for pieces in (0...bytes.count).map({ [Array(bytes[..<$0]), Array(bytes[$0...])] }) + [bytes.map { [$0] }] {
                let setup = try Self.connect()
                for piece in pieces where setup.isPending { try setup.send(piece) }
                if opens {
                    #expect(setup.error == nil && !setup.isPending, "\(pieces.map(\.count))")
                } else {
                    #expect(setup.error?.message.contains("403") == true, "\(pieces.map(\.count)): \(String(describing: setup.error))")
                }
            }
        }
    }

    @Test func bytesAfterTheAnswerAreRefused() throws {
        let setup = try Self.connect()
        try setup.send("HTTP/1.1 200 Connection established\r\n\r\nsurprise")
        let error = try #require(setup.error)
        #expect(error.code == .invalidResponse)
        #expect(error.message.contains("8 unexpected bytes"))
    }

    @Test func aCloseBeforeOrDuringTheAnswer() throws {
        let before = try Self.connect()
        try before.channel.close().wait()
        let error = try #require(before.error)
        #expect(error.code == .connectionClosed)
        #expect(error.message == "HTTP proxy proxy.test:3128 closed the connection before answering CONNECT api.example.com:443")

        let during = try Self.connect()
        try during.send("HTTP/1.1 200 Conn")
        try during.channel.close().wait()
        #expect(during.error?.code == .connectionClosed)
        #expect(during.error?.message.contains("after 17 bytes of an incomplete answer") == true)
    }

    @Test func aResetIsConnectionClosedWithTheError() throws {
        let setup = try Self.connect()
        setup.channel.pipeline.fireErrorCaught(IOError(errnoCode: ECONNRESET, reason: "read"))
        let error = try #require(setup.error)
        #expect(error.code == .connectionClosed)
        #expect(error.underlyingError is IOError)
        #expect(!setup.channel.isActive)
    }

    @Test func theTimeoutBoundsTheAnswer() throws {
        let setup = try Self.connect(timeout: .seconds(2))
        try setup.send("HTTP/1.1 200")
        setup.channel.embeddedEventLoop.advanceTime(by: .milliseconds(1999))
        #expect(setup.isPending)
        setup.channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        let error = try #require(setup.error)
        #expect(error.code == .timedOut)
        #expect(error.message == "HTTP proxy proxy.test:3128 did not open CONNECT api.example.com:443 within 2 s")
        #expect(!setup.channel.isActive)
    }

    @Test func noTimerOutlivesTheTunnel() throws {
        let setup = try Self.connect(timeout: .seconds(2))
        try setup.send("HTTP/1.1 200 OK\r\n\r\n")
        setup.channel.embeddedEventLoop.advanceTime(by: .seconds(3))
        #expect(setup.succeeded)
        #expect(setup.channel.isActive)
    }

    @Test func anInactiveChannelFailsAtOnce() throws {
        let channel = EmbeddedChannel()
        let outcome = NIOLockedValueBox<Result<Void, any Error>?>(nil)
        ProxyTunnel.connect(on: channel, through: Self.httpProxy, to: "a.test", port: 443, timeout: .seconds(1))
            .whenComplete { result in outcome.withLockedValue { $0 = result } }
        let setup = Setup(channel: channel, outcome: outcome)
        #expect(setup.error?.code == .connectionClosed)
    }

    @Test func theStateMachineAloneParsesHeads() throws {
        let head = Array("HTTP/1.1 407 Who Are You\r\nProxy-Authenticate: Basic\r\nBad Line\r\nX-Y:  z \r\n".utf8)
        let response = try #require(HTTPConnectStateMachine.parseHead(head[...]))
        #expect(response.status.code == 407)
        #expect(response.status.reasonPhrase == "Who Are You")
        #expect(response.headerFields[.proxyAuthenticate] == "Basic")
        #expect(response.headerFields[HTTPField.Name("X-Y")!] == "z")
        #expect(HTTPConnectStateMachine.parseHead(Array("HTTP/1.1 20 OK".utf8)[...]) == nil)

        var machine = HTTPConnectStateMachine(host: "api.example.com", port: 443, authorization: nil)
        #expect(machine.start() == .write(Array("CONNECT api.example.com:443 HTTP/1.1\r\nHost: api.example.com:443\r\n\r\n".utf8)))
        #expect(machine.start() == .wait)
        #expect(machine.received(ByteBuffer(string: "HTT")) == .wait)
        #expect(machine.received(ByteBuffer(string: "P/1.1 200 OK\r\n\r")) == .wait)
        #expect(machine.received(ByteBuffer(string: "\n")) == .established)
        #expect(machine.closed() == .wait)
        #expect(machine.timedOut(after: .seconds(1)) == .wait)
    }

    // MARK: SOCKS5

    static let socksHello: [UInt8] = [0x05, 0x01, 0x00]
    static let socksNoAuth: [UInt8] = [0x05, 0x00]
    static let socksSucceeded: [UInt8] = [0x05, 0x00, 0x00, 0x01, 127, 0, 0, 1, 0x1F, 0x90]

    @Test func socksSendsTheGreetingThenTheNameAndOpens() throws {
        let setup = try Self.socks(host: "api.example.com", port: 443)
        #expect(try setup.written() == Self.socksHello)
        try setup.send(Self.socksNoAuth)
        #expect(try setup.written() == [0x05, 0x01, 0x00, 0x03, 15] + Array("api.example.com".utf8) + [0x01, 0xBB])
        #expect(setup.isPending)
        try setup.send(Self.socksSucceeded)
        #expect(setup.succeeded)
        #expect(throws: (any Error).self) { try setup.channel.pipeline.syncOperations.handler(type: SOCKSTunnelHandler.self) }
        try setup.send("after")
        #expect(try setup.channel.readInbound(as: ByteBuffer.self) == ByteBuffer(string: "after"))
        try setup.channel.writeAndFlush(ByteBuffer(string: "hello")).wait()
        #expect(try setup.written() == Array("hello".utf8))
    }

    @Test func socksSendsAddressesAsAddresses() throws {
        let v4 = try Self.socks(host: "192.0.2.7", port: 80)
        _ = try v4.written()
        try v4.send(Self.socksNoAuth)
        #expect(try v4.written() == [0x05, 0x01, 0x00, 0x01, 192, 0, 2, 7, 0x00, 0x50])

        let v6 = try Self.socks(host: "[::1]", port: 8080)
        _ = try v6.written()
        try v6.send(Self.socksNoAuth)
        #expect(try v6.written() == [0x05, 0x01, 0x00, 0x04] + Array(repeating: 0, count: 15) + [1, 0x1F, 0x90])
    }

    @Test(arguments: [(UInt8(1), "general SOCKS server failure"), (2, "connection not allowed by ruleset"), (4, "host unreachable"),
                      (5, "connection refused"), (0x2A, "an unassigned error")])
    func socksErrorRepliesAreRefusals(_ code: UInt8, _ words: String) throws {
        let setup = try Self.socks()
        try setup.send(Self.socksNoAuth)
        try setup.send([0x05, code, 0x00, 0x01, 0, 0, 0, 0, 0, 0])
        let error = try #require(setup.error)
        #expect(error.code == .proxyRefused)
        #expect(error.message == "SOCKS5 proxy socks.test:1080 could not open a SOCKS5 tunnel to api.example.com:443: \(words) (reply \(code))")
        #expect(!setup.channel.isActive)
    }

    @Test func socksProxiesThatWantAuthentication() throws {
        let none = try Self.socks()
        try none.send([0x05, 0xFF])
        #expect(none.error?.code == .proxyAuthenticationRequired)
        #expect(none.error?.message.contains("accepts none of the authentication methods offered") == true)

        let password = try Self.socks()
        try password.send([0x05, 0x02])
        #expect(password.error?.code == .proxyAuthenticationRequired)
        #expect(password.error?.message
            == "SOCKS5 proxy socks.test:1080 asks for a user name and password, and none were configured, for a SOCKS5 tunnel to api.example.com:443")
        #expect(!password.channel.isActive)
    }

    static let socksWithCredentials = Proxy.socks(host: "socks.test", port: 1080, username: "ann", password: "s3cret")

    @Test func socksSendsCredentialsWhenAskedThenTheRequest() throws {
        let setup = try Self.socks(proxy: Self.socksWithCredentials)
        #expect(try setup.written() == [0x05, 0x02, 0x00, 0x02])
        try setup.send([0x05, 0x02])
        #expect(try setup.written() == [0x01, 3] + Array("ann".utf8) + [6] + Array("s3cret".utf8))
        try setup.send([0x01, 0x00])
        #expect(try setup.written() == [0x05, 0x01, 0x00, 0x03, 15] + Array("api.example.com".utf8) + [0x01, 0xBB])
        #expect(setup.isPending)
        try setup.send(Self.socksSucceeded)
        #expect(setup.succeeded)
        #expect(throws: (any Error).self) { try setup.channel.pipeline.syncOperations.handler(type: SOCKSTunnelHandler.self) }
    }

    @Test func socksRefusedCredentialsNameTheUser() throws {
        let setup = try Self.socks(proxy: Self.socksWithCredentials)
        try setup.send([0x05, 0x02])
        try setup.send([0x01, 0x01])
        let error = try #require(setup.error)
        #expect(error.code == .proxyAuthenticationRequired)
        #expect(error.message
            == "SOCKS5 proxy socks.test:1080 refused the credentials for user 'ann' (status 1), for a SOCKS5 tunnel to api.example.com:443")
        #expect(!error.message.contains("s3cret"))
        #expect(!setup.channel.isActive)

        let none = try Self.socks(proxy: Self.socksWithCredentials)
        try none.send([0x05, 0xFF])
        #expect(none.error?.message
            == "SOCKS5 proxy socks.test:1080 accepts none of the authentication methods offered ('no authentication' and 'username/password'), for a SOCKS5 tunnel to api.example.com:443")
    }

    @Test func socksGarbageIsAnInvalidResponse() throws {
        let setup = try Self.socks()
        try setup.send(Array("HTTP/1.1 400 Bad Request\r\n\r\n".utf8))
        let error = try #require(setup.error)
        #expect(error.code == .invalidResponse)
        #expect(error.message.contains("not SOCKS5"))
        #expect(!setup.channel.isActive)
    }

    @Test func socksCloseDuringTheHandshakeFailsAtOnce() throws {
        let setup = try Self.socks()
        try setup.send(Self.socksNoAuth)
        try setup.channel.close().wait()
        let error = try #require(setup.error, "not left to the timeout")
        #expect(error.code == .connectionClosed)
        #expect(error.message == "SOCKS5 proxy socks.test:1080 closed the connection before answering a SOCKS5 tunnel to api.example.com:443")
    }

    @Test func socksTimeout() throws {
        let setup = try Self.socks(timeout: .milliseconds(250))
        try setup.send(Self.socksNoAuth)
        setup.channel.embeddedEventLoop.advanceTime(by: .milliseconds(249))
        #expect(setup.isPending)
        setup.channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(setup.error?.code == .timedOut)
        #expect(setup.error?.message.hasSuffix("within 250 ms") == true)
        #expect(!setup.channel.isActive)
    }

    @Test func socksBytesAfterTheReplyAreRefused() throws {
        let setup = try Self.socks()
        try setup.send(Self.socksNoAuth)
        try setup.send(Self.socksSucceeded + Array("early".utf8))
        #expect(setup.error?.code == .invalidResponse)
        #expect(setup.error?.message.contains("5 unexpected bytes") == true)
    }

    @Test func socksTunnelsThatCannotBeAskedFor() throws {
        var withCredentials = Proxy.socks(host: "socks.test", port: 1080)
        withCredentials.username = String(repeating: "u", count: 256)
        let credentials = try Self.socks(proxy: withCredentials)
        #expect(credentials.error?.code == .invalidProxyConfiguration)
        #expect(credentials.error?.message.contains("a user name of 1 to 255 bytes") == true)
        #expect(!credentials.channel.isActive)
        #expect(try credentials.written().isEmpty)

        let longName = try Self.socks(host: String(repeating: "a", count: 256))
        #expect(longName.error?.code == .invalidProxyConfiguration)
        #expect(longName.error?.message.contains("1 to 255 bytes") == true)
    }
}
