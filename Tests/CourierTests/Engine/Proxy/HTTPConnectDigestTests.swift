import Crypto
import Foundation
import HTTPTypes
import NIOCore
import Testing

@testable import Courier

/// ``HTTPConnectStateMachine`` answering a proxy's Digest challenge, without I/O, event by event:
/// on the same connection when the 407 leaves it open, on a new one when it does not, once (and
/// once more for a stale nonce), and never without credentials or for a scheme Courier does not
/// answer.
@Suite("CONNECT with Digest, without I/O")
struct HTTPConnectDigestTests {
    typealias Action = ProxyHandshakeAction

    static let credential = HTTPCredential(user: "ann", password: "s3cret")
    static let nonce = "dcd98b7102dd2f0e8b11d0f600bfb0c093"
    static let page = "<html>denied</html>"

    static func machine(
        credential: HTTPCredential? = Self.credential, authorization: String? = "Basic YW5uOnMzY3JldA==", digestAnswers: Int = 0
    ) -> HTTPConnectStateMachine {
        HTTPConnectStateMachine(
            host: "api.example.com", port: 443, authorization: authorization, credential: credential, digestAnswers: digestAnswers,
            makeClientNonce: { "0a4f113b" })
    }

    static func challenge(_ parameters: String = "", version: String = "HTTP/1.1", fields: String = "", body: String = Self.page) -> String {
        "\(version) 407 Proxy Authentication Required\r\n"
            + "Proxy-Authenticate: Digest realm=\"corp\", nonce=\"\(Self.nonce)\", qop=\"auth\"\(parameters)\r\n"
            + fields + "Content-Length: \(body.utf8.count)\r\n\r\n" + body
    }

    static func feed(_ machine: inout HTTPConnectStateMachine, _ text: String) -> Action {
        machine.received(ByteBuffer(string: text))
    }

    /// RFC 7616's computation, written out here: MD5, `qop=auth`, `nc` 1, the fixed cnonce.
    static func expectedResponse(realm: String = "corp", nonce: String = Self.nonce, uri: String = "api.example.com:443") -> String {
        func md5(_ text: String) -> String { Insecure.MD5.hash(data: Array(text.utf8)).map { String(format: "%02x", $0) }.joined() }
        let ha1 = md5("ann:\(realm):s3cret")
        let ha2 = md5("CONNECT:\(uri)")
        return md5("\(ha1):\(nonce):00000001:0a4f113b:auth:\(ha2)")
    }

    /// The `Proxy-Authorization` of a written `CONNECT`, or nil.
    static func authorization(in action: Action) -> String? {
        guard case .write(let bytes) = action else { return nil }
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.hasPrefix("CONNECT api.example.com:443 HTTP/1.1\r\nHost: api.example.com:443\r\n"))
        #expect(text.hasSuffix("\r\n\r\n"))
        return text.split(separator: "\r\n").first { $0.hasPrefix("Proxy-Authorization: ") }
            .map { String($0.dropFirst("Proxy-Authorization: ".count)) }
    }

    @Test func aKeptOpen407IsAnsweredOnTheSameConnectionAfterItsBody() throws {
        var machine = Self.machine()
        #expect(Self.authorization(in: machine.start()) == "Basic YW5uOnMzY3JldA==")
        // The head and part of the page, then the rest of the page a byte at a time.
        let answer = Self.challenge()
        let split = answer.utf8.count - Self.page.utf8.count + 5
        #expect(Self.feed(&machine, String(answer.utf8.prefix(split))!) == .wait)
        let rest = Array(answer.utf8.dropFirst(split))
        for byte in rest.dropLast() { #expect(machine.received(ByteBuffer(bytes: [byte])) == .wait) }
        let written = machine.received(ByteBuffer(bytes: [rest.last!]))
        let authorization = try #require(Self.authorization(in: written))
        #expect(authorization.hasPrefix("Digest "))
        #expect(authorization.contains("username=\"ann\""))
        #expect(authorization.contains("realm=\"corp\""))
        #expect(authorization.contains("uri=\"api.example.com:443\""))
        #expect(authorization.contains("nonce=\"\(Self.nonce)\""))
        #expect(authorization.contains("nc=00000001"))
        #expect(authorization.contains("cnonce=\"0a4f113b\""))
        #expect(authorization.contains("qop=auth"))
        #expect(authorization.contains("response=\"\(Self.expectedResponse())\""))
        #expect(Self.feed(&machine, "HTTP/1.1 200 Connection established\r\n\r\n") == .established)
    }

    @Test func theWholeAnswerInOneReadAndAnEmptyBody() throws {
        var machine = Self.machine()
        _ = machine.start()
        let written = Self.feed(&machine, Self.challenge(body: ""))
        #expect(try #require(Self.authorization(in: written)).hasPrefix("Digest "))
        #expect(Self.feed(&machine, "HTTP/1.1 200 OK\r\n\r\n") == .established)
    }

    @Test(arguments: [
        ("HTTP/1.1", "Connection: close\r\n", Self.page),
        ("HTTP/1.0", "", Self.page),
        ("HTTP/1.1", "Transfer-Encoding: chunked\r\n", Self.page),
    ])
    func a407ThatEndsTheConnectionIsAnsweredOnANewOne(_ version: String, _ fields: String, _ body: String) throws {
        var machine = Self.machine()
        _ = machine.start()
        let action = Self.feed(&machine, Self.challenge(version: version, fields: fields, body: body))
        guard case .fail(.answerOnNewConnection(let authorization, let answers, let response)) = action else {
            Issue.record("expected a new connection's answer, got \(action)")
            return
        }
        #expect(authorization.contains("response=\"\(Self.expectedResponse())\""))
        #expect(answers == 1)
        #expect(response.status.code == 407)
        // The failure, told to a caller, is the 407, and carries the answer and the challenge it
        // answers for the pool.
        let error = ProxyTunnelFailure.answerOnNewConnection(authorization: authorization, answers: 1, after: response)
            .courierError(proxy: .http(host: "proxy.test", port: 3128, username: "ann", password: "s3cret"), target: "api.example.com:443")
        #expect(error.code == .proxyAuthenticationRequired)
        let answer = try #require(error.underlyingError as? ProxyTunnel.DigestAnswer)
        #expect(answer.authorization == authorization && answer.answers == 1)
        #expect(answer.challenge?.nonce == Self.nonce && answer.challenge?.realm == "corp")
    }

    @Test func aBodyOfUnknownLengthEndsTheConnection() {
        var machine = Self.machine()
        _ = machine.start()
        let answer = "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Digest realm=\"corp\", nonce=\"n\"\r\n\r\n"
        guard case .fail(.answerOnNewConnection) = Self.feed(&machine, answer) else {
            Issue.record("a 407 without Content-Length ends with the close")
            return
        }
    }

    @Test func anHTTP10ProxyThatKeepsAliveIsAnsweredOnTheSameConnection() throws {
        var machine = Self.machine()
        _ = machine.start()
        let written = Self.feed(&machine, Self.challenge(version: "HTTP/1.0", fields: "Connection: keep-alive\r\n"))
        #expect(try #require(Self.authorization(in: written)).hasPrefix("Digest "))
    }

    @Test func aProxyThatClosesWhileItsPageIsReadIsAnsweredOnANewConnection() {
        var machine = Self.machine()
        _ = machine.start()
        #expect(Self.feed(&machine, String(Self.challenge().dropLast(3))) == .wait)
        guard case .fail(.answerOnNewConnection(_, 1, _)) = machine.closed() else {
            Issue.record("a close during the page gives the answer to a new connection")
            return
        }
    }

    @Test func aProxyThatClosesWithoutSayingSoGetsTheAnswerOnANewConnection() throws {
        var machine = Self.machine()
        _ = machine.start()
        let written = try #require(Self.authorization(in: Self.feed(&machine, Self.challenge(body: ""))))
        guard case .fail(.answerOnNewConnection(let authorization, 1, _)) = machine.closed() else {
            Issue.record("a close before any answer to the answer gives it to a new connection")
            return
        }
        #expect(authorization == written)
        // The answer met the closed socket: the reset says the same.
        var reset = Self.machine()
        _ = reset.start()
        _ = Self.feed(&reset, Self.challenge(body: ""))
        guard case .fail(.answerOnNewConnection(authorization, 1, _)) = reset.errorCaught("Connection reset by peer (errno: 104)") else {
            Issue.record("a reset before any answer to the answer gives it to a new connection")
            return
        }
        // Once a byte of the next answer came, a close is a close.
        var other = Self.machine()
        _ = other.start()
        _ = Self.feed(&other, Self.challenge(body: ""))
        #expect(Self.feed(&other, "HTTP/1.1 ") == .wait)
        #expect(other.closed() == .fail(.closed(received: 9)))
        var failing = Self.machine()
        _ = failing.start()
        _ = Self.feed(&failing, Self.challenge(body: ""))
        #expect(Self.feed(&failing, "HTTP/1.1 ") == .wait)
        #expect(failing.errorCaught("reset") == .fail(.connectionError("reset")))
    }

    @Test func bytesAfterThePageAreRefused() {
        var machine = Self.machine()
        _ = machine.start()
        #expect(Self.feed(&machine, Self.challenge() + "HTTP/1.1 200 OK\r\n\r\n") == .fail(.unsolicitedBytes(19)))
        var other = Self.machine()
        _ = other.start()
        #expect(Self.feed(&other, String(Self.challenge().dropLast(2))) == .wait)
        #expect(Self.feed(&other, "l>XY") == .fail(.unsolicitedBytes(2)))
    }

    @Test func aRefusedAnswerIsAuthenticationRequired() throws {
        var machine = Self.machine()
        _ = machine.start()
        #expect(Self.authorization(in: Self.feed(&machine, Self.challenge())) != nil)
        let again = Self.challenge()
        guard case .fail(.authenticationRequired(let response)) = Self.feed(&machine, again) else {
            Issue.record("a second challenge that is not stale refuses the credentials")
            return
        }
        #expect(response.status.code == 407)
    }

    @Test func aStaleNonceIsAnsweredOnceMore() throws {
        var machine = Self.machine()
        _ = machine.start()
        _ = Self.feed(&machine, Self.challenge())
        let stale = Self.challenge(", stale=true").replacingOccurrences(of: Self.nonce, with: "fresh")
        let renewed = try #require(Self.authorization(in: Self.feed(&machine, stale)))
        #expect(renewed.contains("nonce=\"fresh\""))
        #expect(renewed.contains("response=\"\(Self.expectedResponse(nonce: "fresh"))\""))
        // A third challenge, stale or not, ends it: the answers are spent.
        guard case .fail(.authenticationRequired) = Self.feed(&machine, stale) else {
            Issue.record("at most two answers")
            return
        }
    }

    @Test func aMachineMadeWithAnEarlierAnswerSendsItAndCountsIt() throws {
        var machine = Self.machine(authorization: "Digest username=\"ann\"", digestAnswers: 1)
        #expect(Self.authorization(in: machine.start()) == "Digest username=\"ann\"")
        guard case .fail(.authenticationRequired) = Self.feed(&machine, Self.challenge()) else {
            Issue.record("the earlier answer counts: a fresh challenge refuses the credentials")
            return
        }
        var stale = Self.machine(authorization: "Digest username=\"ann\"", digestAnswers: 1)
        _ = stale.start()
        #expect(Self.authorization(in: Self.feed(&stale, Self.challenge(", stale=true"))) != nil)
    }

    /// The challenge a tunnel answered is what it learned once open, whether it answered on the
    /// same connection or a closed one's answer was carried over; Basic or a failure teaches
    /// nothing.
    @Test func theAnsweredChallengeIsLearnedOnceTheTunnelOpens() throws {
        var machine = Self.machine()
        _ = machine.start()
        _ = Self.feed(&machine, Self.challenge())
        #expect(machine.learnedChallenge == nil, "not open yet")
        #expect(Self.feed(&machine, "HTTP/1.1 200 Connection established\r\n\r\n") == .established)
        #expect(machine.learnedChallenge?.nonce == Self.nonce)

        var basic = Self.machine()
        _ = basic.start()
        #expect(Self.feed(&basic, "HTTP/1.1 200 OK\r\n\r\n") == .established)
        #expect(basic.learnedChallenge == nil)

        var refused = Self.machine()
        _ = refused.start()
        _ = Self.feed(&refused, Self.challenge())
        _ = Self.feed(&refused, Self.challenge())
        #expect(refused.learnedChallenge == nil)

        // A closed connection's answer, carried to the next: its challenge is learned there.
        var closing = Self.machine()
        _ = closing.start()
        let closed = Self.feed(&closing, Self.challenge(fields: "Connection: close\r\n"))
        guard case .fail(let failure) = closed, case .answerOnNewConnection = failure,
            let carried = failure.courierError(proxy: .http(host: "p", port: 1), target: "t").underlyingError as? ProxyTunnel.DigestAnswer,
            let challenge = carried.challenge
        else {
            Issue.record("a 407 with Connection: close is answered on a new connection")
            return
        }
        let (authorization, answers) = (carried.authorization, carried.answers)
        var next = HTTPConnectStateMachine(
            host: "api.example.com", port: 443, authorization: authorization, credential: Self.credential, digestAnswers: answers,
            answered: challenge, makeClientNonce: { "0a4f113b" })
        #expect(Self.authorization(in: next.start()) == authorization)
        #expect(Self.feed(&next, "HTTP/1.1 200 OK\r\n\r\n") == .established)
        #expect(next.learnedChallenge == challenge)
    }

    /// The first `CONNECT` may answer a challenge remembered from an earlier tunnel (counted as no
    /// answer of this one): a 407 to it, stale or not, is answered afresh, and that challenge is
    /// the one learned; a refusal of the fresh answer ends it.
    @Test func aRememberedAnswerThatIsRefusedIsAnsweredAfresh() throws {
        let remembered = "Digest username=\"ann\", nonce=\"old\", nc=00000005"
        var accepted = Self.machine(authorization: remembered)
        #expect(Self.authorization(in: accepted.start()) == remembered)
        #expect(Self.feed(&accepted, "HTTP/1.1 200 OK\r\n\r\n") == .established)
        #expect(accepted.learnedChallenge == nil, "the remembered challenge is already kept")

        for parameters in ["", ", stale=true"] {
            var machine = Self.machine(authorization: remembered)
            _ = machine.start()
            let fresh = try #require(Self.authorization(in: Self.feed(&machine, Self.challenge(parameters))))
            #expect(fresh.contains("response=\"\(Self.expectedResponse())\""))
            #expect(Self.feed(&machine, "HTTP/1.1 200 OK\r\n\r\n") == .established)
            #expect(machine.learnedChallenge?.nonce == Self.nonce)

            var refused = Self.machine(authorization: remembered)
            _ = refused.start()
            _ = Self.feed(&refused, Self.challenge(parameters))
            guard case .fail(.authenticationRequired) = Self.feed(&refused, Self.challenge()) else {
                Issue.record("a fresh answer refused refuses the credentials")
                continue
            }
        }
    }

    @Test func noCredentialsOrNoDigestMeansNoAnswer() {
        var anonymous = Self.machine(credential: nil, authorization: nil)
        _ = anonymous.start()
        guard case .fail(.authenticationRequired) = Self.feed(&anonymous, Self.challenge()) else {
            Issue.record("nothing to answer with")
            return
        }
        for offered in ["Basic realm=\"corp\"", "NTLM", "Negotiate", "Digest realm=\"corp\", nonce=\"n\", algorithm=SHA-512-256",
            "Digest realm=\"corp\", nonce=\"n\", qop=\"auth-int\""]
        {
            var machine = Self.machine()
            _ = machine.start()
            let answer = "HTTP/1.1 407 No\r\nProxy-Authenticate: \(offered)\r\nContent-Length: 0\r\n\r\n"
            guard case .fail(.authenticationRequired) = Self.feed(&machine, answer) else {
                Issue.record("\(offered) is not answered")
                continue
            }
        }
    }

    @Test func theStrongestDigestIsChosenAndTinyproxys401IsAnsweredToo() throws {
        var machine = Self.machine()
        _ = machine.start()
        let answer = "HTTP/1.1 407 No\r\nProxy-Authenticate: Digest realm=\"corp\", nonce=\"n\", algorithm=MD5\r\n"
            + "Proxy-Authenticate: Digest realm=\"corp\", nonce=\"n\", algorithm=SHA-256\r\nProxy-Authenticate: Basic\r\nContent-Length: 0\r\n\r\n"
        #expect(try #require(Self.authorization(in: Self.feed(&machine, answer))).contains("algorithm=SHA-256"))
        var tiny = Self.machine()
        _ = tiny.start()
        let unauthorized = "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Digest realm=\"corp\", nonce=\"n\"\r\nContent-Length: 0\r\n\r\n"
        #expect(try #require(Self.authorization(in: Self.feed(&tiny, unauthorized))).hasPrefix("Digest "))
    }

    @Test func theVerdictNamesSchemesCourierDoesNotAnswer() {
        let proxy = NIOEngine.Proxy.http(host: "p", port: 1, username: "ann", password: "x")
        func verdict(_ offered: String) -> String {
            var fields = HTTPFields()
            fields[.proxyAuthenticate] = offered
            return ProxyTunnelFailure.credentialsVerdict(proxy: proxy, response: HTTPResponse(status: 407, headerFields: fields))
        }
        #expect(verdict("NTLM") == "it asks for NTLM, and Courier answers a proxy's Basic and Digest only (user 'ann')")
        #expect(verdict("Digest realm=\"r\", nonce=\"n\"") == "the credentials for user 'ann' were refused")
        #expect(verdict("Basic") == "the credentials for user 'ann' were refused")
    }

    @Test func forwardingProxiesChallengesAreAnsweredWithAGrowingNonceCount() throws {
        let challenges = ProxyDigestChallenges(makeClientNonce: { "0a4f113b" })
        let proxy = NIOEngine.Proxy.http(host: "proxy.test", port: 3128, username: "ann", password: "s3cret")
        #expect(challenges.authorization(for: proxy, method: "GET", uri: "http://a.test/") == nil, "no challenge yet")
        var fields = HTTPFields()
        fields[.proxyAuthenticate] = "Digest realm=\"corp\", nonce=\"\(Self.nonce)\", qop=\"auth\""
        let challenge = try #require(ProxyDigestChallenges.answerable(in: HTTPResponse(status: 407, headerFields: fields)))
        challenges.record(challenge, for: proxy)
        let first = try #require(challenges.authorization(for: proxy, method: "GET", uri: "http://a.test/"))
        let second = try #require(challenges.authorization(for: proxy, method: "GET", uri: "http://a.test/"))
        #expect(first.contains("nc=00000001") && second.contains("nc=00000002"))
        #expect(first.contains("uri=\"http://a.test/\""))
        // Another proxy (or the same one without credentials) answers nothing.
        #expect(challenges.authorization(for: .http(host: "proxy.test", port: 3128), method: "GET", uri: "http://a.test/") == nil)
        fields[.proxyAuthenticate] = "NTLM"
        #expect(ProxyDigestChallenges.answerable(in: HTTPResponse(status: 407, headerFields: fields)) == nil)
    }

    /// A tunnel's challenge is recorded with the count its `CONNECT` used; the same nonce recorded
    /// again never takes the count back (a proxy that checks counts would refuse it), a new one
    /// starts over.
    @Test func aRecordedNonceCountNeverGoesBack() throws {
        let challenges = ProxyDigestChallenges(makeClientNonce: { "0a4f113b" })
        let proxy = NIOEngine.Proxy.http(host: "proxy.test", port: 3128, username: "ann", password: "s3cret")
        func challenge(_ nonce: String) throws -> HTTPAuthorization.DigestChallenge {
            var fields = HTTPFields()
            fields[.proxyAuthenticate] = "Digest realm=\"corp\", nonce=\"\(nonce)\", qop=\"auth\""
            return try #require(ProxyDigestChallenges.answerable(in: HTTPResponse(status: 407, headerFields: fields)))
        }
        challenges.record(try challenge("one"), for: proxy, nonceCount: 1)
        #expect(try #require(challenges.authorization(for: proxy, method: "CONNECT", uri: "a.test:443")).contains("nc=00000002"))
        #expect(try #require(challenges.authorization(for: proxy, method: "CONNECT", uri: "b.test:443")).contains("nc=00000003"))
        challenges.record(try challenge("one"), for: proxy, nonceCount: 1)
        #expect(try #require(challenges.authorization(for: proxy, method: "GET", uri: "http://a.test/")).contains("nc=00000004"))
        challenges.record(try challenge("two"), for: proxy, nonceCount: 1)
        let renewed = try #require(challenges.authorization(for: proxy, method: "GET", uri: "http://a.test/"))
        #expect(renewed.contains("nc=00000002") && renewed.contains("nonce=\"two\""))
    }
}
