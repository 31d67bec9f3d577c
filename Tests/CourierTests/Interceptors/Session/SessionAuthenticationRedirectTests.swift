import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import Testing

@testable import Courier

/// HTTP authentication across redirects, over sockets: the session's own `Authorization` is made
/// for each hop, a redirect's target is answered with the credential of its own space, a token
/// dropped by a redirect to another origin ends the task with its refusal, and nothing is
/// answered by sending a `POST` that a redirect answered again.
@Suite("Session: HTTP authentication across redirects")
struct SessionAuthenticationRedirectTests {
    static var anyStatus: DataResponseSerializer {
        var serializer = DataResponseSerializer()
        serializer.http.acceptableStatusCodes = IndexSet(integersIn: 100..<600)
        return serializer
    }

    static func basicChallenge(realm: String) -> TestServer.Response {
        TestServer.Response(status: .unauthorized, headerFields: [.wwwAuthenticate: #"Basic realm="\#(realm)""#])
    }

    /// `/dir` and `/dir/` want Digest; an answer whose `uri` is not the request's target is
    /// refused with 400, as Apache's `mod_auth_digest` does. `/dir` redirects to `/dir/`, as
    /// `mod_dir` does. Before, the session sent its first hop's answer (`uri="/dir"`) on to
    /// `/dir/`, and the request failed with that 400.
    @Test func theSessionsDigestAnswerIsMadeForEachHop() async throws {
        try await withTestServer { server in
            let sent = NIOLockedValueBox<[String]>([])
            for path in ["/dir", "/dir/"] {
                server.route(path) { request in
                    guard let authorization = request.value(forHTTPHeaderField: "Authorization") else {
                        return TestServer.Response(
                            status: .unauthorized, headerFields: [.wwwAuthenticate: #"Digest realm="r", qop="auth", algorithm=SHA-256, nonce="n1""#])
                    }
                    sent.withLockedValue { $0.append(authorization) }
                    guard authorization.contains(#"uri="\#(request.path)""#) else { return TestServer.Response(status: .badRequest) }
                    if request.path == "/dir" { return TestServer.Response(status: .movedPermanently, headerFields: [.location: "/dir/"]) }
                    return .text("listing")
                }
            }
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            manager.credentials.set(HTTPCredential(user: "ann", password: "pw"), for: try #require(ProtectionSpace(url: server.baseURL)))
            let response = try await manager.response(for: Request(url: server.url("/dir")), serializer: Self.anyStatus)
            #expect(response.response.status == .ok)
            let answers = sent.withLockedValue { $0 }
            #expect(answers.count == 2)
            #expect(answers.last?.contains("nc=00000002") == true, "the nonce is counted for each request: \(answers)")
        }
    }

    /// A redirect's target of another origin that challenges is answered with the credential the
    /// session has for that origin, as URLSession answers the hop that was challenged. Before, the
    /// credential was applied only to the first hop's request, and the 401 came back.
    @Test func aRedirectsTargetIsAnsweredWithItsOwnCredential() async throws {
        try await withTestServer { apex in
            try await withTestServer { www in
                let seen = NIOLockedValueBox<[String]>([])
                www.route("/data") { request in
                    let authorization = request.value(forHTTPHeaderField: "Authorization")
                    seen.withLockedValue { $0.append(authorization ?? "none") }
                    // "bob:pw"
                    guard authorization == "Basic Ym9iOnB3" else { return Self.basicChallenge(realm: "data") }
                    return .text("data")
                }
                apex.route("/start") { request in
                    seen.withLockedValue { $0.append("apex " + (request.value(forHTTPHeaderField: "Authorization") ?? "none")) }
                    return TestServer.Response(status: .found, headerFields: [.location: www.url("/data").absoluteString])
                }
                let manager = SessionManager()
                defer { manager.invalidate(cancelingTasks: true) }
                manager.credentials.set(HTTPCredential(user: "bob", password: "pw"), for: try #require(ProtectionSpace(url: www.baseURL)))
                let response = try await manager.response(for: Request(url: apex.url("/start")), serializer: StringResponseSerializer())
                #expect(response.value == "data")
                #expect(seen.withLockedValue { $0 } == ["apex none", "none", "apex none", "Basic Ym9iOnB3"], "the credential went to its origin only")
                // The space is answered now: the next redirect there carries it at once.
                _ = try await manager.response(for: Request(url: apex.url("/start")), serializer: StringResponseSerializer())
                #expect(seen.withLockedValue { $0.suffix(2) } == ["apex none", "Basic Ym9iOnB3"])
            }
        }
    }

    /// A `POST` answered `303`, whose `GET` is challenged: answering would mean sending the `POST`
    /// again (a retry sends the attempt's first request). The 401 is the answer. Before, the order
    /// was placed twice.
    @Test func aChallengeAfterAPostsRedirectIsNotAnsweredByPostingAgain() async throws {
        try await withTestServer { server in
            let posts = NIOLockedValueBox(0)
            server.route("/orders") { _ in
                posts.withLockedValue { $0 += 1 }
                return TestServer.Response(status: .seeOther, headerFields: [.location: "/account/orders/42"])
            }
            server.route("/account/orders/42") { request in
                request.value(forHTTPHeaderField: "Authorization") == nil ? Self.basicChallenge(realm: "account") : .text("order 42")
            }
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            manager.credentials.set(HTTPCredential(user: "bob", password: "pw"), for: try #require(ProtectionSpace(url: server.baseURL)))
            var request = Request(method: .post, url: server.url("/orders"))
            request.body = .data(Data("item=1".utf8))
            let response = try await manager.response(for: request, serializer: Self.anyStatus)
            #expect(response.response.status == .unauthorized)
            #expect(posts.withLockedValue { $0 } == 1, "the order was placed once")
            // A POST that a 307 sends on keeps its method (the first server did nothing): its
            // chain goes again, with the credential.
            server.route("/moved") { _ in TestServer.Response(status: .temporaryRedirect, headerFields: [.location: "/account/orders/42"]) }
            var moved = Request(method: .post, url: server.url("/moved"))
            moved.body = .data(Data("item=2".utf8))
            let answered = try await manager.response(for: moved, serializer: StringResponseSerializer())
            #expect(answered.value == "order 42")
            // A GET's chain is answered as usual.
            let get = try await manager.response(for: Request(url: server.url("/account/orders/42")), serializer: StringResponseSerializer())
            #expect(get.value == "order 42")
        }
    }

    /// The same for a token interceptor: a `POST` answered `303` whose `GET` is refused with the
    /// current token is not sent again with a refreshed one. Before, the interceptor refreshed
    /// and retried, and a `GET` refused for every token placed the order six times (one and five
    /// refreshes, until the refresh window said no).
    @Test func aTokenRefusedAfterAPostsRedirectIsNotAnsweredByPostingAgain() async throws {
        try await withTestServer { server in
            let posts = NIOLockedValueBox(0)
            server.route("/orders") { _ in
                posts.withLockedValue { $0 += 1 }
                return TestServer.Response(status: .seeOther, headerFields: [.location: "/account/orders/42"])
            }
            server.route("/account/orders/42") { _ in TestServer.Response(status: .unauthorized) }
            let authenticator = TestAuthenticator()
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            manager.interceptor = AuthenticationInterceptor(authenticator: authenticator, credential: TestToken(access: "t1"))
            var request = Request(method: .post, url: server.url("/orders"))
            request.body = .data(Data("item=1".utf8))
            let response = try await manager.response(for: request, serializer: Self.anyStatus)
            #expect(response.response.status == .unauthorized)
            #expect(posts.withLockedValue { $0 } == 1, "the order was placed once")
            #expect(authenticator.refreshes == 0)
        }
    }

    /// A request sent with the current token, redirected to another origin (which drops the
    /// token, as it must) and refused there, ends with the refusal. Before, the interceptor took
    /// the token-less redirected request for one sent with an older credential and retried at
    /// once, for ever: each retry met the same redirect.
    /// `url`'s response (any status) to a session whose `AuthenticationInterceptor` holds the
    /// token `current`, and its authenticator.
    static func sendWithToken(to url: URL) async throws -> (DataResponse<Data>, TestAuthenticator) {
        let authenticator = TestAuthenticator()
        let manager = SessionManager()
        defer { manager.invalidate(cancelingTasks: true) }
        manager.interceptor = AuthenticationInterceptor(authenticator: authenticator, credential: TestToken(access: "current"))
        return (try await manager.response(for: Request(url: url), serializer: Self.anyStatus), authenticator)
    }

    @Test func aRefusalBeyondACrossOriginRedirectIsTheAnswer() async throws {
        try await withTestServer { apex in
            try await withTestServer { www in
                let refusals = NIOLockedValueBox(0)
                www.route("/me") { request in
                    let count = refusals.withLockedValue { $0 += 1; return $0 }
                    // A way out of the loop the bug made, so that the test fails instead of hanging.
                    if count > 5 { return .text("let through") }
                    let carried = request.value(forHTTPHeaderField: "Authorization") ?? "none"
                    return TestServer.Response(status: .unauthorized, headerFields: [.wwwAuthenticate: "Bearer", HTTPField.Name("X-Carried")!: carried])
                }
                apex.route("/me") { _ in
                    TestServer.Response(status: .permanentRedirect, headerFields: [.location: www.url("/me").absoluteString])
                }
                let (response, authenticator) = try await Self.sendWithToken(to: apex.url("/me"))
                #expect(response.response.status == .unauthorized)
                #expect(response.response.headerFields[HTTPField.Name("X-Carried")!] == "none", "the token stayed with its origin")
                #expect(refusals.withLockedValue { $0 } == 1)
                #expect(authenticator.refreshes == 0)
            }
        }
    }

    @Test("A redirect chain that comes back to the first URL without the token is refused, not sent again for ever")
    func aRefusalAfterARedirectBackToTheFirstURLIsTheAnswer() async throws {
        try await withTestServer { apex in
            try await withTestServer { www in
                let hits = NIOLockedValueBox(0)
                apex.route("/me") { request in
                    let count = hits.withLockedValue { $0 += 1; return $0 }
                    // A way out of the loop the bug made, so that the test fails instead of hanging.
                    if count > 6 { return .text("let through") }
                    if request.value(forHTTPHeaderField: "Authorization") != nil {
                        return TestServer.Response(status: .found, headerFields: [.location: www.url("/login").absoluteString])
                    }
                    return TestServer.Response(status: .unauthorized, headerFields: [.wwwAuthenticate: "Bearer"])
                }
                www.route("/login") { _ in
                    TestServer.Response(status: .found, headerFields: [.location: apex.url("/me").absoluteString])
                }
                let (response, authenticator) = try await Self.sendWithToken(to: apex.url("/me"))
                #expect(response.response.status == .unauthorized)
                #expect(hits.withLockedValue { $0 } == 2, "the first request, and the one the bounce brought back")
                #expect(authenticator.refreshes == 0)
            }
        }
    }
}
