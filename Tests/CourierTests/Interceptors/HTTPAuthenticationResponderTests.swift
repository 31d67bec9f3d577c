import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import Testing

@testable import Courier

@Suite("Interceptors: answering WWW-Authenticate challenges (Basic, Digest), credentials per protection space")
struct HTTPAuthenticationResponderTests {
    static let url = URL(string: "http://api.courier.test:8080/dir/index.html?x=1")!

    static func refusal(_ challenges: [String], request: Request = Request(url: url), previous: [RetryReason] = []) -> FailedAttempt {
        var response = HTTPResponse(status: .unauthorized)
        for challenge in challenges { response.headerFields.append(HTTPField(name: .wwwAuthenticate, value: challenge)) }
        return FailedAttempt(request: request, response: response, previousRetries: previous)
    }

    static func responder(_ store: CredentialStore = CredentialStore()) -> HTTPAuthenticationResponder {
        HTTPAuthenticationResponder(credentials: store, makeClientNonce: { "0a4f113b" })
    }

    @Test("Basic: the stored credential answers, and requests below the challenged directory are authenticated preemptively")
    func basic() throws {
        let store = CredentialStore()
        store.set(HTTPCredential(user: "ann", password: "secret"), for: try #require(ProtectionSpace(url: Self.url, realm: "staff")))
        let responder = Self.responder(store)
        #expect(responder.respond(to: Self.refusal([#"Basic realm="staff""#]), hook: nil).reason == .challenge)
        let again = responder.authenticate(Request(url: Self.url))
        #expect(again.headerFields[.authorization] == "Basic YW5uOnNlY3JldA==")
        #expect(responder.authenticate(Request(url: URL(string: "http://api.courier.test:8080/dir/sub/x")!)).headerFields[.authorization] != nil)
        // Outside the directory, another port or scheme: nothing is sent.
        for other in ["http://api.courier.test:8080/other", "http://api.courier.test:8081/dir/x", "https://api.courier.test:8080/dir/x"] {
            #expect(responder.authenticate(Request(url: URL(string: other)!)).headerFields[.authorization] == nil, "\(other)")
        }
        // A request with its own Authorization is left alone.
        var own = Request(url: Self.url)
        own.headerFields[.authorization] = "Bearer mine"
        #expect(responder.authenticate(own).headerFields[.authorization] == "Bearer mine")
    }

    /// RFC 7617 2.2: the challenged URI's directory, as the path goes out (percent-encoded, its
    /// trailing slash kept). Before, `URL.path` decoded it and dropped the slash: a challenge at
    /// `/~alice/` covered the whole origin (Alice's password went to `/~bob/`), and one at
    /// `/my%20docs/` matched no request.
    @Test func aBasicSpaceIsTheChallengedDirectoryAsItGoesOut() throws {
        func answered(at challenged: String) throws -> HTTPAuthenticationResponder {
            let url = try #require(URL(string: challenged))
            let store = CredentialStore()
            store.set(HTTPCredential(user: "alice", password: "pw"), for: try #require(ProtectionSpace(url: url, realm: "home")))
            let responder = Self.responder(store)
            #expect(responder.respond(to: Self.refusal([#"Basic realm="home""#], request: Request(url: url)), hook: nil).reason == .challenge)
            return responder
        }
        func sends(_ responder: HTTPAuthenticationResponder, to url: String) -> Bool {
            responder.authenticate(Request(url: URL(string: url)!)).headerFields[.authorization] != nil
        }
        let alice = try answered(at: "http://h.test/~alice/")
        #expect(sends(alice, to: "http://h.test/~alice/photos"))
        #expect(!sends(alice, to: "http://h.test/~bob/"), "another user's directory")
        #expect(!sends(alice, to: "http://h.test/"))
        let docs = try answered(at: "http://h.test/my%20docs/a.txt")
        #expect(sends(docs, to: "http://h.test/my%20docs/b.txt"))
    }

    /// RFC 7616 3.3: a Digest `domain` lists URIs: `/private/` covers what is below it, not
    /// `/privateer`, and another origin's URI is not this space's.
    @Test func aDigestDomainIsReadAsURIs() throws {
        let store = CredentialStore()
        store.set(HTTPCredential(user: "Mufasa", password: "Circle of Life"), for: try #require(ProtectionSpace(url: Self.url)))
        let responder = Self.responder(store)
        let challenge = #"Digest realm="r", qop="auth", nonce="abc", domain="/private/ http://elsewhere.test/open/""#
        #expect(responder.respond(to: Self.refusal([challenge]), hook: nil).isRetry)
        func sends(_ path: String) -> Bool {
            responder.authenticate(Request(url: URL(string: "http://api.courier.test:8080" + path)!)).headerFields[.authorization] != nil
        }
        #expect(sends("/private/x"))
        #expect(!sends("/privateer"))
        #expect(!sends("/open/x"), "elsewhere.test's path is not this origin's")
    }

    @Test("Digest: the strongest algorithm offered is answered; the nonce count grows with each request")
    func digest() throws {
        let store = CredentialStore()
        // A credential for the origin, any realm and method.
        store.set(HTTPCredential(user: "Mufasa", password: "Circle of Life"), for: try #require(ProtectionSpace(url: Self.url)))
        let responder = Self.responder(store)
        let offered = [
            #"Digest realm="http-auth@example.org", qop="auth", algorithm=MD5, nonce="abc", opaque="op""#,
            #"Digest realm="http-auth@example.org", qop="auth", algorithm=SHA-256, nonce="abc", opaque="op""#,
            #"Basic realm="http-auth@example.org""#,
        ]
        #expect(responder.respond(to: Self.refusal(offered), hook: nil).isRetry)
        let first = try #require(responder.authenticate(Request(url: Self.url)).headerFields[.authorization])
        #expect(first.hasPrefix("Digest username=\"Mufasa\""))
        #expect(first.contains("algorithm=SHA-256") && first.contains("nc=00000001") && first.contains("uri=\"/dir/index.html?x=1\""))
        let second = try #require(responder.authenticate(Request(url: URL(string: "http://api.courier.test:8080/elsewhere")!)).headerFields[.authorization])
        #expect(second.contains("nc=00000002") && second.contains("uri=\"/elsewhere\""))
    }

    @Test("No credential, or a refusal of the credential already sent: the 401 stands")
    func refusals() throws {
        let responder = Self.responder()
        #expect(!responder.respond(to: Self.refusal([#"Basic realm="r""#]), hook: nil).isRetry)
        let store = CredentialStore()
        store.set(HTTPCredential(user: "ann", password: "wrong"), for: try #require(ProtectionSpace(url: Self.url)))
        let withStore = Self.responder(store)
        // The answer went out (the retry carries the session's Authorization) and was refused.
        var answeredRequest = Request(url: Self.url)
        answeredRequest.headerFields[.authorization] = HTTPAuthorization.basic(HTTPCredential(user: "ann", password: "wrong"))
        #expect(!withStore.respond(to: Self.refusal([#"Basic realm="r""#], request: answeredRequest, previous: [.challenge]), hook: nil).isRetry)
        // Unless the server only said the nonce was stale.
        let stale = Self.refusal([#"Digest realm="r", nonce="n2", qop="auth", stale=true"#], previous: [.challenge])
        #expect(withStore.respond(to: stale, hook: nil).isRetry)
        // The caller's own Authorization was refused: not ours to answer.
        var own = Request(url: Self.url)
        own.headerFields[.authorization] = "Basic Zm9vOmJhcg=="
        #expect(!withStore.respond(to: Self.refusal([#"Basic realm="r""#], request: own), hook: nil).isRetry)
        // A URL's user information is a credential too.
        let inURL = Request(url: URL(string: "http://ann:s%20cret@api.courier.test/dir/")!)
        #expect(responder.respond(to: Self.refusal([#"Basic realm="r""#], request: inURL), hook: nil).isRetry)
        #expect(responder.authenticate(Request(url: URL(string: "http://api.courier.test/dir/x")!)).headerFields[.authorization]
            == HTTPAuthorization.basic(HTTPCredential(user: "ann", password: "s cret")))
    }

    /// Failures are counted per protection space: a second space met in one task (a redirect's
    /// target, another realm of the origin), challenged on a request that carried no
    /// `Authorization`, has had nothing refused. Before, the task's earlier round counted, and
    /// the second space was never answered (a hook saw `previousFailureCount == 1`).
    @Test func aSecondSpaceInOneTaskIsAnsweredAsAFirst() throws {
        let store = CredentialStore()
        store.set(HTTPCredential(user: "bob", password: "pw"), for: try #require(ProtectionSpace(url: Self.url, realm: "b")))
        let responder = Self.responder(store)
        let second = Self.refusal([#"Basic realm="b""#], previous: [.challenge])
        #expect(responder.respond(to: second, hook: nil).reason == .challenge)
        let counts = NIOLockedValueBox<[Int]>([])
        let hooked = Self.responder(store)
        _ = hooked.respond(to: second, hook: { challenge in
            counts.withLockedValue { $0.append(challenge.previousFailureCount) }
            return .performDefaultHandling
        })
        #expect(counts.withLockedValue { $0 } == [0])
    }

    /// A space answered with the store's credential follows the store: a credential replaced
    /// there goes out from the next request (and answers a refusal of the old one), and after
    /// `removeAll()` none goes out. Before, the old password went out for the manager's life.
    @Test func aSpaceAnsweredFromTheStoreFollowsTheStore() throws {
        let store = CredentialStore()
        let space = try #require(ProtectionSpace(url: Self.url, realm: "staff"))
        let old = HTTPCredential(user: "ann", password: "old")
        let new = HTTPCredential(user: "ann", password: "new")
        store.set(old, for: space)
        let responder = Self.responder(store)
        #expect(responder.respond(to: Self.refusal([#"Basic realm="staff""#]), hook: nil).reason == .challenge)
        #expect(responder.authenticate(Request(url: Self.url)).headerFields[.authorization] == HTTPAuthorization.basic(old))
        store.set(new, for: space)
        #expect(responder.authenticate(Request(url: Self.url)).headerFields[.authorization] == HTTPAuthorization.basic(new))
        store.removeAll()
        #expect(responder.authenticate(Request(url: Self.url)).headerFields[.authorization] == nil)

        // A request that went out with the old credential before the store changed, refused:
        // the new one was never tried, and answers.
        store.set(old, for: space)
        let refused = Self.responder(store)
        #expect(refused.respond(to: Self.refusal([#"Basic realm="staff""#]), hook: nil).reason == .challenge)
        var sent = Request(url: Self.url)
        sent.headerFields[.authorization] = HTTPAuthorization.basic(old)
        var attempt = Self.refusal([#"Basic realm="staff""#], request: sent)
        attempt.carriesSessionAuthorization = true
        #expect(!refused.respond(to: attempt, hook: nil).isRetry, "the same credential, refused: the 401 stands")
        store.set(new, for: space)
        #expect(refused.respond(to: attempt, hook: nil).reason == .challenge)
        #expect(refused.authenticate(Request(url: Self.url)).headerFields[.authorization] == HTTPAuthorization.basic(new))
        // A credential the hook gave is the hook's: the store does not change it.
        let hooked = Self.responder(store)
        let given = HTTPCredential(user: "hook", password: "h")
        _ = hooked.respond(to: Self.refusal([#"Basic realm="staff""#]), hook: { _ in .useCredential(given) })
        store.removeAll()
        #expect(hooked.authenticate(Request(url: Self.url)).headerFields[.authorization] == HTTPAuthorization.basic(given))
    }

    @Test("At most `AnsweredSpaces.limit` spaces are kept: the one used least recently goes first")
    func answeredSpacesAreBounded() throws {
        typealias Spaces = HTTPAuthenticationResponder.AnsweredSpaces
        func answer(_ host: Int) -> HTTPAuthenticationResponder.Answer {
            HTTPAuthenticationResponder.Answer(
                space: ProtectionSpace(urlScheme: "https", host: "h\(host).courier.test", port: 443, realm: "r", authenticationMethod: .httpBasic),
                credential: HTTPCredential(user: "u", password: "p"), digest: nil, pathPrefixes: ["/"])
        }
        var spaces = Spaces()
        spaces.record(answer(0))
        spaces.record(answer(1))
        // Host 0 is used: host 1 is now the least recently used.
        #expect(spaces.use(origin: ProtectionSpace(urlScheme: "https", host: "h0.courier.test", port: 443), path: "/x")?.nonceCount == 1)
        for host in 2...Spaces.limit { spaces.record(answer(host)) }
        #expect(spaces.count == Spaces.limit)
        #expect(spaces[answer(1).space] == nil, "the least recently used space was forgotten")
        #expect(spaces[answer(0).space] != nil)
        #expect(spaces[answer(Spaces.limit).space] != nil)
        // Recording a space again replaces it; forgetting takes it away.
        spaces.record(answer(0))
        #expect(spaces.count == Spaces.limit)
        spaces.forget(answer(0).space)
        #expect(spaces.count == Spaces.limit - 1)
        #expect(spaces[answer(0).space] == nil)
    }

    @Test("The hook answers: with a credential, by default, cancelling, or rejecting the space for the next challenge")
    func hook() throws {
        let responder = Self.responder()
        let asked = NIOLockedValueBox<[AuthenticationChallenge]>([])
        let decision = responder.respond(to: Self.refusal([#"Digest realm="d", nonce="n", qop="auth""#, #"Basic realm="b""#])) { challenge in
            asked.withLockedValue { $0.append(challenge) }
            return challenge.challenge.hasScheme("Digest") ? .rejectProtectionSpace : .useCredential(HTTPCredential(user: "u", password: "p"))
        }
        #expect(decision.isRetry)
        #expect(asked.withLockedValue { $0.map(\.protectionSpace.authenticationMethod) } == [.httpDigest, .httpBasic])
        #expect(asked.withLockedValue { $0.first?.protectionSpace.realm } == "d")
        #expect(asked.withLockedValue { $0.first?.previousFailureCount } == 0)
        #expect(responder.authenticate(Request(url: Self.url)).headerFields[.authorization] == "Basic dTpw")
        let cancelled = Self.responder().respond(to: Self.refusal([#"Basic realm="b""#])) { _ in .cancelAuthenticationChallenge }
        #expect(cancelled.error?.code == .cancelled)
        #expect(cancelled.error?.response?.status == .unauthorized)
        #expect(!Self.responder().respond(to: Self.refusal([#"Basic realm="b""#])) { _ in .performDefaultHandling }.isRetry)
        // A hook that keeps answering is stopped after a few rounds.
        let rounds = Array(repeating: RetryReason.challenge, count: HTTPAuthenticationResponder.maximumRounds)
        #expect(!Self.responder().respond(to: Self.refusal([#"Basic realm="b""#], previous: rounds)) { _ in .useCredential(HTTPCredential(user: "u", password: "p")) }.isRetry)
    }

    @Test("CredentialStore: the most specific space that covers the challenge's")
    func store() throws {
        let store = CredentialStore()
        let origin = try #require(ProtectionSpace(url: Self.url))
        let realm = try #require(ProtectionSpace(url: Self.url, realm: "staff"))
        let digest = try #require(ProtectionSpace(url: Self.url, realm: "staff", authenticationMethod: .httpDigest))
        store.set(HTTPCredential(user: "origin", password: ""), for: origin)
        store.set(HTTPCredential(user: "realm", password: ""), for: realm)
        store.set(HTTPCredential(user: "digest", password: ""), for: digest)
        #expect(store.credential(for: digest)?.user == "digest")
        #expect(store.credential(for: ProtectionSpace(url: Self.url, realm: "staff", authenticationMethod: .httpBasic)!)?.user == "realm")
        #expect(store.credential(for: ProtectionSpace(url: Self.url, realm: "other", authenticationMethod: .httpBasic)!)?.user == "origin")
        #expect(store.credential(for: ProtectionSpace(url: URL(string: "http://elsewhere.test")!, realm: "staff")!) == nil)
        #expect(!HTTPCredential(user: "ann", password: "secret").description.contains("secret"))
    }

    @Test("RFC 7616 3.3: the session's own Digest answer with a stale nonce is renewed without the hook; a refused one counts as a failure")
    func aStaleNonceOnTheSessionsOwnAnswer() throws {
        let store = CredentialStore()
        store.set(HTTPCredential(user: "ann", password: "pw"), for: try #require(ProtectionSpace(url: Self.url)))
        let responder = Self.responder(store)
        #expect(responder.respond(to: Self.refusal([#"Digest realm="r", nonce="n1", qop="auth""#]), hook: nil).isRetry)
        let upFront = responder.authenticate(Request(url: Self.url))
        #expect(upFront.headerFields[.authorization]?.contains(#"nonce="n1""#) == true)

        // The server calls n1 stale: renewed at once, the hook never asked.
        var stale = Self.refusal([#"Digest realm="r", nonce="n2", qop="auth", stale=true"#], request: upFront)
        stale.carriesSessionAuthorization = true
        let asked = NIOLockedValueBox(0)
        let hook: @Sendable (AuthenticationChallenge) -> ChallengeDisposition = { _ in
            asked.withLockedValue { $0 += 1 }
            return .performDefaultHandling
        }
        #expect(responder.respond(to: stale, hook: hook).isRetry)
        #expect(asked.withLockedValue { $0 } == 0)
        let renewed = try #require(responder.authenticate(Request(url: Self.url)).headerFields[.authorization])
        #expect(renewed.contains(#"nonce="n2""#) && renewed.contains("nc=00000001"))

        // The same field set by the caller: the caller's to answer.
        stale.carriesSessionAuthorization = false
        #expect(!responder.respond(to: stale, hook: hook).isRetry)

        // Not stale: the credential itself was refused. The hook hears of one failure; without a
        // hook the credential is not sent again.
        var refused = Self.refusal([#"Digest realm="r", nonce="n3", qop="auth""#], request: upFront)
        refused.carriesSessionAuthorization = true
        #expect(!responder.respond(to: refused, hook: nil).isRetry)
        let failures = NIOLockedValueBox<[Int]>([])
        _ = responder.respond(to: refused, hook: { challenge in
            failures.withLockedValue { $0.append(challenge.previousFailureCount) }
            return .performDefaultHandling
        })
        #expect(failures.withLockedValue { $0 } == [1])
    }

    @Test("A nonce stale answer after answer: after the bound, an error that names the challenge")
    func aNonceStaleEveryTime() {
        let store = CredentialStore()
        store.set(HTTPCredential(user: "ann", password: "pw"), for: ProtectionSpace(url: Self.url)!)
        let responder = Self.responder(store)
        let previous = Array(repeating: RetryReason.challenge, count: HTTPAuthenticationResponder.maximumRounds)
        let decision = responder.respond(
            to: Self.refusal([#"Digest realm="r", nonce="n9", qop="auth", stale=true"#], previous: previous), hook: nil)
        #expect(!decision.isRetry)
        #expect(decision.error?.code == .authenticationFailed)
        #expect(decision.error?.message.contains(#"realm "r""#) == true)
        // Not stale: the 401 stands, as before.
        let plain = responder.respond(to: Self.refusal([#"Digest realm="r", nonce="n9", qop="auth""#], previous: previous), hook: nil)
        #expect(!plain.isRetry && plain.error == nil)
    }
}
