import Foundation
import NIOCore
import Testing

@testable import Courier

@Suite("Redirect planning")
struct RedirectPlannerTests {
    let follow = SessionConfiguration.RedirectPolicy.follow(max: 3, allowCycles: false)

    func response(_ status: Int, location: String?) -> HTTPResponse {
        var fields = HTTPFields()
        if let location { fields[.location] = location }
        return HTTPResponse(status: .init(code: status), headerFields: fields)
    }

    func request(_ method: HTTPRequest.Method = .get, _ url: String = "http://h/a/b", body: RequestBody = .empty) -> Request {
        var request = Request(method: method, url: URL(string: url)!, body: body)
        request.headerFields[.authorization] = "Basic eA=="
        request.headerFields[.contentType] = "text/plain"
        return request
    }

    func step(_ response: HTTPResponse, _ request: Request, count: Int = 0, visited: Set<String> = []) -> RedirectStep {
        RedirectPlanner.step(for: response, request: request, policy: self.follow, redirectCount: count, visitedURLs: visited)
    }

    @Test func relativeLocationResolvesAgainstTheRequest() throws {
        guard case .follow(let next) = self.step(self.response(302, location: "../c?x=1"), self.request()) else {
            Issue.record("expected a redirect to follow")
            return
        }
        #expect(next.url.absoluteString == "http://h/c?x=1")
        #expect(next.method == .get)
        #expect(next.headerFields[.authorization] == "Basic eA==", "same origin keeps credentials")
    }

    /// A cycle's error names the URL it came back to without the password the URL carries (a
    /// relative `Location` keeps the request's user information), as a request's summary does.
    @Test func aCyclesErrorDoesNotCarryThePassword() throws {
        let request = self.request(.get, "https://ann:secret@h/b")
        guard case .fail(let message) = self.step(self.response(302, location: "/a"), request, visited: ["https://ann:secret@h/a"]) else {
            Issue.record("expected the cycle to fail")
            return
        }
        #expect(message.contains("cycle") && message.contains("https://ann:***@h/a"), "\(message)")
        #expect(!message.contains("secret"), "\(message)")
    }

    /// Two `Location` fields: the first is followed, as curl does (joined, they named
    /// `/one,%20/two`, a URL neither field named; found by an interop probe).
    @Test func theFirstOfTwoLocationsIsFollowed() throws {
        var response = self.response(302, location: nil)
        response.headerFields.append(HTTPField(name: .location, value: "/one"))
        response.headerFields.append(HTTPField(name: .location, value: "/two"))
        guard case .follow(let next) = self.step(response, self.request()) else {
            Issue.record("expected a redirect to follow")
            return
        }
        #expect(next.url.absoluteString == "http://h/one")
    }

    @Test(arguments: [
        (301, HTTPRequest.Method.post, HTTPRequest.Method.get),
        (302, .post, .get),
        (303, .post, .get),
        (303, .put, .get),
        (303, .head, .head),
        (307, .post, .post),
        (308, .put, .put),
        (301, .put, .put),
    ])
    func methodRules(status: Int, method: HTTPRequest.Method, expected: HTTPRequest.Method) {
        let original = self.request(method, body: .data(Data("x".utf8)))
        guard case .follow(let next) = self.step(self.response(status, location: "/next"), original) else {
            Issue.record("expected a redirect to follow")
            return
        }
        #expect(next.method == expected)
        if expected == .get, method != .get {
            #expect(next.body.isEmpty)
            #expect(next.headerFields[.contentType] == nil)
        } else {
            #expect(next.body.data == Data("x".utf8))
        }
    }

    /// The fields that describe a body go with it when a redirect makes a `GET` of the request
    /// (Fetch's request-body-header names), and so does a caller's `Expect: 100-continue` (RFC 9110
    /// 10.1.1: not sent without a body); a `307` keeps body and fields. Before, a compressed
    /// `POST`'s `GET` said `Content-Encoding: gzip` of no body, and one that expected `100
    /// Continue` still did.
    @Test func aGetMadeByARedirectCarriesNoFieldThatDescribesABody() {
        var original = self.request(.post, body: .data(Data("x".utf8)))
        original.headerFields[.contentEncoding] = "gzip"
        original.headerFields[.contentLanguage] = "en"
        original.headerFields[.contentLocation] = "/drafts/1"
        original.headerFields[.accept] = "text/html"
        original.headerFields[.expect] = "100-continue"
        guard case .follow(let seeOther) = self.step(self.response(303, location: "/done"), original),
            case .follow(let temporary) = self.step(self.response(307, location: "/again"), original)
        else {
            Issue.record("expected redirects to follow")
            return
        }
        for name in [HTTPField.Name.contentType, .contentEncoding, .contentLanguage, .contentLocation, .expect] {
            #expect(seeOther.headerFields[name] == nil, "\(name)")
            #expect(temporary.headerFields[name] != nil, "\(name)")
        }
        #expect(seeOther.headerFields[.accept] == "text/html", "what is asked of the answer stays")
    }

    /// A caller's `Host` field (a virtual host behind an address) goes with a redirect on its
    /// origin, and not to another origin, which its URL names: it went on, and the other origin
    /// got the first one's internal name (curl replaces it; Go keeps it for a relative Location).
    @Test func aCallersHostStaysOnItsOrigin() {
        let host = HTTPField.Name("Host")!
        var original = self.request(.get)
        original.headerFields[host] = "api.internal"
        guard case .follow(let same) = self.step(self.response(302, location: "/next"), original),
            case .follow(let other) = self.step(self.response(302, location: "http://cdn.example/file"), original)
        else {
            Issue.record("expected redirects to follow")
            return
        }
        #expect(same.headerFields[host] == "api.internal")
        #expect(other.headerFields[host] == nil)
    }

    /// A Location that mixes characters RFC 3986 does not allow with `%XX` escapes: the escapes
    /// are kept and only the rest encoded. Foundation encoded the whole query again (`%25C3`),
    /// so Go read `J%C3%B6rg` where curl and Node sent `Jörg`.
    @Test(arguments: [
        ("/echo?filter[name]=J%C3%B6rg", "http://h/echo?filter%5Bname%5D=J%C3%B6rg"),
        ("/echo?q=a b&r=%26", "http://h/echo?q=a%20b&r=%26"),
        ("/d%C3%A9j%C3%A0 vu/ünï", "http://h/d%C3%A9j%C3%A0%20vu/%C3%BCn%C3%AF"),
        ("/p?x=100%", "http://h/p?x=100%25"),
        ("http://other:8080/a b#f#g", "http://other:8080/a%20b#f%23g"),
        ("/plain?a=1&b=%2F", "http://h/plain?a=1&b=%2F"),
    ])
    func aLocationsEscapesAreKeptAndOnlyWhatIsNotAllowedIsEncoded(location: String, expected: String) {
        guard case .follow(let next) = self.step(self.response(302, location: location), self.request()) else {
            Issue.record("expected a redirect to follow")
            return
        }
        #expect(next.url.absoluteString == expected)
    }

    /// RFC 3986 5.2.2 removes the dot segments of the path of every reference it resolves, one
    /// with a scheme or an authority too; Foundation removes them only from one with neither, and
    /// such a Location went out as `GET /a/../b` (curl, OkHttp, Go and browsers ask for `/b`).
    /// The query and the fragment keep theirs, and a path without one is left as it came.
    @Test(arguments: [
        ("http://other/a/../b", "http://other/b"),
        ("//other/a/./b/../../c?x=/../y#f/../g", "http://other/c?x=/../y#f/../g"),
        ("https://other:8443/a/b/..", "https://other:8443/a/"),
        ("http://other/a/.", "http://other/a/"),
        ("http://other/../../x", "http://other/x"),
        ("http://other/a//../b", "http://other/a/b"),
        ("http://other//a/../b", "http://other//b"),
        ("http://other/..a/b./.c", "http://other/..a/b./.c"),
        ("http://other//x", "http://other//x"),
    ])
    func aLocationsDotSegmentsAreRemoved(location: String, expected: String) {
        guard case .follow(let next) = self.step(self.response(302, location: location), self.request()) else {
            Issue.record("expected a redirect to follow")
            return
        }
        #expect(next.url.absoluteString == expected)
    }

    /// RFC 9110 10.2.2: a Location without a fragment keeps the request's; one with its own
    /// replaces it.
    @Test func theRequestsFragmentGoesOnUnlessTheLocationHasOne() {
        guard case .follow(let kept) = self.step(self.response(302, location: "/c?x=1"), self.request(.get, "http://h/a/b#part")),
            case .follow(let replaced) = self.step(self.response(302, location: "/c#other"), self.request(.get, "http://h/a/b#part"))
        else {
            Issue.record("expected redirects to follow")
            return
        }
        #expect(kept.url.absoluteString == "http://h/c?x=1#part")
        #expect(replaced.url.absoluteString == "http://h/c#other")
    }

    /// The default policies follow a redirect back to a URL visited before, as URLSession does (a
    /// login bounce comes back with a new cookie); the hop limit ends a real loop.
    @Test func theDefaultPoliciesFollowARedirectBackToAnEarlierURL() {
        #expect(SessionConfiguration().redirectPolicy == .follow(max: 16, allowCycles: true))
        #expect(NIOEngine.Configuration().redirectPolicy == .follow(max: 16, allowCycles: true))
        let step = RedirectPlanner.step(
            for: self.response(302, location: "/a/b"), request: self.request(), policy: SessionConfiguration().redirectPolicy,
            redirectCount: 1, visitedURLs: ["http://h/a/b"])
        guard case .follow = step else {
            Issue.record("expected the default policy to follow back to an earlier URL")
            return
        }
        let limit = RedirectPlanner.step(
            for: self.response(302, location: "/a/b"), request: self.request(), policy: SessionConfiguration().redirectPolicy,
            redirectCount: 16, visitedURLs: ["http://h/a/b"])
        guard case .fail = limit else {
            Issue.record("expected the hop limit to end a loop")
            return
        }
    }

    @Test func crossOriginDropsCredentials() {
        guard case .follow(let next) = self.step(self.response(302, location: "http://other/x"), self.request()) else {
            Issue.record("expected a redirect to follow")
            return
        }
        #expect(next.headerFields[.authorization] == nil)
    }

    /// A `Proxy-Authorization` is the proxy's credential: it goes on to another origin only when
    /// one proxy carries both (as OkHttp and curl keep it); through another proxy, or none, or
    /// when the engine cannot tell which carries what, it is dropped. The same origin keeps it.
    @Test func aProxyCredentialGoesOnToAnotherOriginOnlyThroughTheSameProxy() {
        let near = NIOEngine.Proxy.http(host: "proxy.example", port: 3128)
        let far = NIOEngine.Proxy.http(host: "other-proxy.example", port: 3128)
        var original = self.request()
        original.headerFields[.proxyAuthorization] = "Basic cHJveHk="
        let request = original
        struct Routes: ProxyRoutes {
            let carrying: (URL) -> NIOEngine.Proxy?
            func proxy(carrying url: URL) -> NIOEngine.Proxy? { self.carrying(url) }
        }
        func carried(to location: String, _ proxy: ((URL) -> NIOEngine.Proxy?)?) -> String? {
            let step = RedirectPlanner.step(
                for: self.response(302, location: location), request: request, policy: self.follow, redirectCount: 0, visitedURLs: [],
                routes: proxy.map(Routes.init(carrying:)))
            guard case .follow(let next) = step else {
                Issue.record("expected a redirect to \(location) to be followed")
                return nil
            }
            return next.headerFields[.proxyAuthorization]
        }
        let everywhere: (URL) -> NIOEngine.Proxy? = { _ in near }
        let byHost: (URL) -> NIOEngine.Proxy? = { $0.host == "h" ? near : far }
        let onlyTheFirst: (URL) -> NIOEngine.Proxy? = { $0.host == "h" ? near : nil }
        let nowhere: (URL) -> NIOEngine.Proxy? = { _ in nil }
        #expect(carried(to: "http://other/x", everywhere) == "Basic cHJveHk=", "the same proxy")
        #expect(carried(to: "http://other/x", byHost) == nil, "another proxy")
        #expect(carried(to: "http://other/x", onlyTheFirst) == nil, "no proxy for the target")
        #expect(carried(to: "http://other/x", nowhere) == nil, "no proxy")
        #expect(carried(to: "http://other/x", nil) == nil, "an engine that cannot tell (the public step's case)")
        #expect(carried(to: "/next", nil) == "Basic cHJveHk=", "the same origin")
    }

    @Test func limitsAndCycles() {
        guard case .fail = self.step(self.response(302, location: "/x"), self.request(), count: 3) else {
            Issue.record("expected the redirect limit to fail")
            return
        }
        guard case .fail = self.step(self.response(302, location: "/a/b"), self.request(), visited: ["http://h/a/b"]) else {
            Issue.record("expected a cycle to fail")
            return
        }
    }

    /// The exchange keeps only the URLs it was redirected from (none until its first redirect, so
    /// that an exchange that is not redirected builds no set): the request's own URL is visited.
    @Test func aRedirectBackToTheRequestsOwnURLIsACycleWithNoEarlierURLs() {
        guard case .fail = self.step(self.response(302, location: "/a/b"), self.request()) else {
            Issue.record("expected a redirect to the request's own URL to fail")
            return
        }
        guard case .fail = self.step(self.response(302, location: "/a/c"), self.request(), count: 1, visited: ["http://h/a/c"]) else {
            Issue.record("expected a redirect to an earlier URL to fail")
            return
        }
        guard case .follow = self.step(self.response(302, location: "/a/d"), self.request(), count: 1, visited: ["http://h/a/c"]) else {
            Issue.record("expected a redirect to a new URL to be followed")
            return
        }
    }

    @Test func notFollowed() {
        let disallowed = RedirectPlanner.step(
            for: self.response(302, location: "/x"), request: self.request(), policy: .disallow, redirectCount: 0, visitedURLs: [])
        #expect({ if case .none = disallowed { true } else { false } }())
        for response in [self.response(200, location: "/x"), self.response(302, location: nil), self.response(302, location: "ftp://h/x"), self.response(304, location: "/x")] {
            #expect({ if case .none = self.step(response, self.request()) { true } else { false } }())
        }
        let stream = AsyncThrowingStream<ByteBuffer, any Error> { $0.finish() }
        let streamed = self.request(.post, body: .stream(stream, length: .unknown))
        #expect({ if case .none = self.step(self.response(307, location: "/x"), streamed) { true } else { false } }(), "a consumed stream cannot be resent")
    }
}
