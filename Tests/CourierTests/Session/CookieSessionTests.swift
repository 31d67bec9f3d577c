import Courier
import CourierTesting
import Foundation
import HTTPTypes
import Testing

/// Cookies through a session, against TestServer and a real httpbin (`/cookies/set` answers with a
/// 302 that sets the cookie: the redirect hop must store it and the next hop send it).
@Suite("Cookies in a session")
struct CookieSessionTests {
    /// The `cookies` object of an httpbin `/cookies` answer.
    static func cookies(_ data: Data) throws -> [String: String] {
        let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        return try #require(object?["cookies"] as? [String: String])
    }

    /// Runs `body` with a manager whose cookie store holds `cookies`, against a recording TestServer.
    static func withStore(
        _ cookies: [Cookie], _ body: (HTTPSessionManager, TestServer) async throws -> Void
    ) async throws {
        try await withTestServer(.recording) { server in
            let store = MemoryCookieStorage()
            for cookie in cookies { store.setCookie(cookie) }
            var configuration = SessionConfiguration.default
            configuration.httpCookieStorage = store
            try await withManager(baseURL: server.baseURL, configuration: configuration) { (manager: HTTPSessionManager) async throws in
                try await body(manager, server)
            }
        }
    }

    /// TestServer's `/redirect-to` URL for `target`.
    static func redirect(_ server: TestServer, to target: String) -> URL {
        URL(string: server.url("/redirect-to").absoluteString + "?url=" + target.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)!
    }

    static func get(_ manager: SessionManager, _ url: URL, options: RequestOptions = RequestOptions(), cookie: String? = nil) async throws -> [String: String] {
        var request = Request(url: url, options: options)
        if let cookie { request.headerFields[values: .cookie] = [cookie] }
        return try self.cookies(try await manager.data(for: request).value)
    }

    @Test(arguments: Peer.all)
    func aCookieSetOnARedirectGoesWithTheNextHop(_ peer: Peer) async throws {
        try await peer.run { base in
            let store = MemoryCookieStorage()
            var configuration = SessionConfiguration.default
            configuration.httpCookieStorage = store
            try await withManager(baseURL: base, configuration: configuration) { (manager: HTTPSessionManager) async throws in
                let url = base.appendingPathComponent("cookies/set")
                let afterSet = try await Self.get(manager, URL(string: url.absoluteString + "?session=abc&theme=dark")!)
                #expect(afterSet == ["session": "abc", "theme": "dark"], "the 302 stored them; the hop to /cookies sent them")
                #expect(Set(store.allCookies.map(\.name)) == ["session", "theme"])
                #expect(try await Self.get(manager, base.appendingPathComponent("cookies")) == ["session": "abc", "theme": "dark"])
                let afterDelete = try await Self.get(manager, URL(string: base.appendingPathComponent("cookies/delete").absoluteString + "?theme")!)
                #expect(afterDelete == ["session": "abc"], "the 302 expired it before the next hop")
                #expect(store.allCookies.map(\.name) == ["session"])
            }
        }
    }

    @Test(arguments: Peer.all)
    func httpShouldHandleCookiesPerRequestAndPerSession(_ peer: Peer) async throws {
        try await peer.run { base in
            let set = URL(string: base.appendingPathComponent("cookies/set").absoluteString + "?k=v")!
            let list = base.appendingPathComponent("cookies")
            var configuration = SessionConfiguration.default
            let store = MemoryCookieStorage()
            configuration.httpCookieStorage = store
            try await withManager(baseURL: base, configuration: configuration) { (manager: HTTPSessionManager) async throws in
                let off = RequestOptions(httpShouldHandleCookies: false)
                #expect(try await Self.get(manager, set, options: off).isEmpty, "nothing stored, nothing sent")
                #expect(store.allCookies.isEmpty)
                #expect(try await Self.get(manager, set) == ["k": "v"])
                #expect(try await Self.get(manager, list, options: off).isEmpty, "stored, but not sent with this request")
                #expect(try await Self.get(manager, list, options: off, cookie: "own=1") == ["own": "1"], "the caller's own field still goes")
                #expect(try await Self.get(manager, list, cookie: "own=1") == ["own": "1", "k": "v"], "the caller's field first, then the store's")
            }
            configuration.httpShouldHandleCookies = false
            try await withManager(baseURL: base, configuration: configuration) { (manager: HTTPSessionManager) async throws in
                #expect(try await Self.get(manager, list).isEmpty, "the session handles no cookies")
                #expect(try await Self.get(manager, list, options: RequestOptions(httpShouldHandleCookies: true)) == ["k": "v"],
                        "a request may ask for them")
            }
            configuration.httpCookieStorage = nil
            configuration.httpShouldHandleCookies = true
            try await withManager(baseURL: base, configuration: configuration) { (manager: HTTPSessionManager) async throws in
                #expect(try await Self.get(manager, set).isEmpty, "no store: nothing is kept")
            }
        }
    }

    /// A login bounce with the default settings: `/protected` without the cookie sends to `/sso`,
    /// which sets it and sends back to `/protected`, which answers. The second visit to
    /// `/protected` is a new request (it carries the cookie); the default redirect policy treated
    /// it as a cycle and failed with `tooManyRedirects` (a Flask `login_required` app).
    @Test func aLoginBounceBackToTheFirstURLWithANewCookieIsFollowed() async throws {
        try await withTestServer { server in
            server.route("/protected") { request in
                guard request.value(forHTTPHeaderField: "Cookie")?.contains("auth=ok") == true else {
                    return TestServer.Response(status: .found, headerFields: [.location: "/sso?next=/protected"])
                }
                return .text("welcome")
            }
            server.route("/sso") { _ in
                TestServer.Response(status: .found, headerFields: [.location: "/protected", .setCookie: "auth=ok; Path=/"])
            }
            var configuration = SessionConfiguration.default
            configuration.httpCookieStorage = MemoryCookieStorage()
            try await withManager(baseURL: server.baseURL, configuration: configuration) { (manager: HTTPSessionManager) async throws in
                let response = try await manager.response(for: Request(url: server.url("/protected")), serializer: StringResponseSerializer())
                #expect(response.value == "welcome")
            }
        }
    }

    /// A redirect to another origin carries only that origin's cookies: neither the caller's own
    /// `Cookie` field nor the first origin's stored cookies.
    @Test func aCrossOriginHopGetsOnlyItsOwnCookies() async throws {
        let cookies = [Cookie(name: "first", value: "1", domain: "127.0.0.1"), Cookie(name: "second", value: "2", domain: "localhost")]
        try await Self.withStore(cookies) { manager, server in
            var request = Request(url: Self.redirect(server, to: "http://localhost:\(server.port)/cookies"))
            request.headerFields[values: .cookie] = ["mine=0"]
            let response = try await manager.data(for: request)
            #expect(try Self.cookies(response.value) == ["second": "2"])
            let hops = server.receivedRequests
            #expect(hops.count == 2)
            #expect(hops.first?.headerFields[values: .cookie] == ["mine=0; first=1"], "one Cookie field: the caller's, then the store's")
            #expect(hops.last?.headerFields[values: .cookie] == ["second=2"])
        }
    }

    /// A redirect within the first hop's origin carries the caller's own `Cookie` field again,
    /// with the store's cookies for the new URL; a request with no field of its own gets only the
    /// store's.
    @Test(arguments: [true, false])
    func aSameOriginHopKeepsTheCallersCookie(_ callerSetsOne: Bool) async throws {
        try await Self.withStore([Cookie(name: "stored", value: "1", domain: "127.0.0.1")]) { manager, server in
            var request = Request(url: Self.redirect(server, to: server.url("/cookies").absoluteString))
            if callerSetsOne { request.headerFields[values: .cookie] = ["mine=0"] }
            _ = try await manager.data(for: request)
            let hops = server.receivedRequests
            #expect(hops.count == 2)
            let expected = callerSetsOne ? ["mine=0; stored=1"] : ["stored=1"]
            #expect(hops.first?.headerFields[values: .cookie] == expected)
            #expect(hops.last?.headerFields[values: .cookie] == expected)
        }
    }

    /// A `Cookie` field of the caller's that is empty adds nothing to the store's cookies, on the
    /// first hop and on a redirect within its origin. Before, the field went out as `; stored=1`.
    @Test func anEmptyCookieFieldOfTheCallersAddsNothing() async throws {
        try await Self.withStore([Cookie(name: "stored", value: "1", domain: "127.0.0.1")]) { manager, server in
            var request = Request(url: Self.redirect(server, to: server.url("/cookies").absoluteString))
            request.headerFields[values: .cookie] = [""]
            _ = try await manager.data(for: request)
            #expect(server.receivedRequests.map { $0.headerFields[values: .cookie] } == [["stored=1"], ["stored=1"]])
        }
    }

    /// Each attempt sends the `Cookie` field its adapters made, before the store's cookies: a
    /// retry whose adapter put a refreshed token in the field sends that token. The first
    /// attempt's field was sent again on every retry, so the refreshed token never went out and
    /// the retry failed as the first attempt had.
    @Test func eachAttemptSendsTheCookieFieldItsAdaptersMade() async throws {
        try await Self.withStore([Cookie(name: "stored", value: "1", domain: "127.0.0.1")]) { manager, server in
            server.route("/account") { request in
                request.value(forHTTPHeaderField: "Cookie")?.contains("token=fresh") == true
                    ? .text("welcome") : TestServer.Response(status: .unauthorized)
            }
            manager.interceptor = Interceptor(
                adapters: [
                    Adapter { request, context in
                        var request = request
                        request.headerFields[.cookie] = context.retryCount == 0 ? "token=stale" : "token=fresh"
                        return request
                    }
                ],
                retriers: [Retrier { attempt in attempt.retryCount == 0 && attempt.response?.status == .unauthorized ? .retry() : .doNotRetry }])
            let response = try await manager.data(for: Request(url: server.url("/account")))
            #expect(String(decoding: response.value, as: UTF8.self) == "welcome")
            #expect(server.receivedRequests.map { $0.headerFields[values: .cookie] } == [["token=stale; stored=1"], ["token=fresh; stored=1"]])
        }
    }

    @Test func aRedirectHookThatSetsCookiesHasTheLastWord() async throws {
        try await Self.withStore([Cookie(name: "stored", value: "1", domain: "127.0.0.1")]) { manager, server in
            manager.hooks.taskWillPerformHTTPRedirection = { _, _, _, request in
                var changed = request
                changed.headerFields[values: .cookie] = ["chosen=by-hook"]
                return changed
            }
            let response = try await manager.data(for: Request(url: server.url("/redirect/1")))
            #expect(response.response.status == .ok)
            #expect(server.receivedRequests.last?.headerFields[values: .cookie] == ["chosen=by-hook"])
        }
    }

    @Test(arguments: Peer.all)
    func aFileStoreLogsInOnceAcrossSessions(_ peer: Peer) async throws {
        try await peer.run { base in
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-jar-\(UUID())")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let file = folder.appendingPathComponent("cookies.txt")
            var configuration = SessionConfiguration.default
            configuration.httpCookieStorage = try FileCookieStorage(fileURL: file)
            try await withManager(baseURL: base, configuration: configuration) { (manager: HTTPSessionManager) async throws in
                let set = URL(string: base.appendingPathComponent("cookies/set").absoluteString + "?login=ann")!
                #expect(try await Self.get(manager, set) == ["login": "ann"])
            }
            (configuration.httpCookieStorage as? FileCookieStorage)?.flush()
            let text = try String(contentsOf: file, encoding: .utf8)
            #expect(text.hasPrefix("# Netscape HTTP Cookie File"))
            #expect(text.contains("\tlogin\tann\n"))

            var next = SessionConfiguration.default
            next.httpCookieStorage = try FileCookieStorage(fileURL: file)
            try await withManager(baseURL: base, configuration: next) { (manager: HTTPSessionManager) async throws in
                #expect(try await Self.get(manager, base.appendingPathComponent("cookies")) == ["login": "ann"], "read back from the file")
            }
        }
    }

    @Test func secureAndPrefixedCookiesOverHTTPS() async throws {
        try await withTestServer(.https()) { server in
            server.route("/login") { _ in
                var response = TestServer.Response.text("ok")
                response.headerFields[values: .setCookie] = [
                    "__Host-sid=1; Secure; Path=/; HttpOnly", "__Secure-pref=2; Secure", "plain=3", "__Host-bad=4; Secure",
                ]
                return response
            }
            let store = MemoryCookieStorage()
            var configuration = SessionConfiguration.default
            configuration.httpCookieStorage = store
            var policy = SecurityPolicy.default
            policy.additionalTrustedCertificates = try Certificate.certificates(pemEncoded: TestCertificates.rootCA)
            try await withManager(baseURL: server.baseURL, configuration: configuration, securityPolicy: policy) {
                (manager: HTTPSessionManager) async throws in
                _ = try await manager.data(for: Request(url: server.url("/login")))
                let listed = try Self.cookies(try await manager.data(for: Request(url: server.url("/cookies"))).value)
                #expect(listed == ["__Host-sid": "1", "__Secure-pref": "2", "plain": "3"], "__Host- without Path=/ is refused")
                #expect(store.allCookies.filter(\.isSecure).count == 2)
                var plain = URLComponents(url: server.baseURL, resolvingAgainstBaseURL: false)!
                plain.scheme = "http"
                #expect(store.cookieHeader(for: plain.url!) == "plain=3", "Secure cookies never go over http")
            }
        }
    }

    @Test func anEphemeralSessionRefusesAStoreOnDisk() async throws {
        try await withTestServer(.recording) { server in
            var configuration = SessionConfiguration.ephemeral
            #expect(configuration.httpCookieStorage != nil && configuration.httpCookieStorage?.isPersistent == false)
            #expect(configuration.responseCache != nil && configuration.responseCache?.isPersistent == false)
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("courier-jar-\(UUID()).txt")
            defer { try? FileManager.default.removeItem(at: file) }
            configuration.httpCookieStorage = try FileCookieStorage(fileURL: file)
            try await withManager(baseURL: server.baseURL, configuration: configuration) { (manager: HTTPSessionManager) async throws in
                await #expect(throws: CourierError(.unsupportedOption, "")) {
                    _ = try await manager.data(for: Request(url: server.url("/get")))
                }
            }
            #expect(server.requestCount == 0, "refused before any connection")
        }
    }

    @Test func eachConfigurationHasItsOwnStores() {
        let a = SessionConfiguration.default
        let b = SessionConfiguration.default
        #expect(a.httpCookieStorage !== b.httpCookieStorage)
        #expect(a.responseCache !== b.responseCache)
        let copy = a
        #expect(copy.httpCookieStorage === a.httpCookieStorage, "copies share the store, as URLSession's configurations do")
    }
}
