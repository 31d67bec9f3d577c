import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import Testing

/// The HTTP cache through a session: TestServer routes that count what reaches the server, and
/// httpbin's caching routes (`/cache`, `/cache/{n}`, `/etag/{etag}`, `/response-headers`).
@Suite("HTTP cache in a session")
struct CacheSessionTests {
    /// A configuration with a cache of its own.
    static func configuration(cache: ResponseCache = ResponseCache()) -> SessionConfiguration {
        var configuration = SessionConfiguration.default
        configuration.responseCache = cache
        return configuration
    }

    static func text(_ data: Data) -> String { String(decoding: data, as: UTF8.self) }

    /// A route that counts its hits and answers with the count and the given fields.
    static func countingRoute(_ server: TestServer, _ path: String, fields: [(String, String)]) -> NIOLockedValueBox<Int> {
        let hits = NIOLockedValueBox(0)
        server.route(path) { request in
            let count = hits.withLockedValue { value -> Int in
                value += 1
                return value
            }
            var response = TestServer.Response.text("hit \(count)")
            for (name, value) in fields { response.headerFields[HTTPField.Name(name)!] = value }
            return response
        }
        return hits
    }

    /// `/moved`: a 301 to `/target`, fresh for 10 minutes; counts its hits.
    static func movedRoute(_ server: TestServer) -> NIOLockedValueBox<Int> {
        let hits = NIOLockedValueBox(0)
        server.route("/moved") { _ in
            hits.withLockedValue { $0 += 1 }
            var response = TestServer.Response(status: .movedPermanently)
            response.headerFields[.location] = "/target"
            response.headerFields[.cacheControl] = "max-age=600"
            return response
        }
        return hits
    }

    /// A gzip body is decoded or not by the request (the session's decompression, the request's
    /// own `Accept-Encoding`), after the cache lookup, so `Vary` cannot tell the two forms apart:
    /// the cache keeps such a body decoded only, and serves it only to requests that get bodies
    /// decoded. Two sessions share one cache, one with decompression off, and the server sends no
    /// `Vary` (nginx's default). The coded bytes went to the decoding session from the cache, and
    /// the decoded text to the one that asked for the body as it came.
    @Test func aCodedBodyIsStoredAndServedOnlyInTheFormTheRequestGets() async throws {
        let text = "the decoded text, the decoded text"
        let gzipped = Data(try GoReadResponseTests.gzip(Array(text.utf8)))
        try await withTestServer { server in
            let hits = NIOLockedValueBox(0)
            server.route("/coded") { _ in
                hits.withLockedValue { $0 += 1 }
                return TestServer.Response(headerFields: [.contentEncoding: "gzip", .cacheControl: "max-age=600"], body: gzipped)
            }
            let cache = ResponseCache()
            var raw = Self.configuration(cache: cache)
            raw.decompression = .disabled
            let url = server.url("/coded")
            // As it came: not stored.
            try await withManager(baseURL: nil, configuration: raw) { manager in
                let response = try await manager.data(for: Request(url: url))
                #expect(response.value == gzipped)
            }
            #expect(cache.currentMemoryUsage == 0, "a coded body is not stored as it came")
            try await withManager(baseURL: nil, configuration: Self.configuration(cache: cache)) { manager in
                let first = try await manager.data(for: Request(url: url))
                #expect(first.source == .network && Self.text(first.value) == text)
                let second = try await manager.data(for: Request(url: url))
                #expect(second.source == .cache && Self.text(second.value) == text)
                // The same session, a request that refuses the codings the engine decodes.
                var identity = Request(url: url)
                identity.headerFields[.acceptEncoding] = "identity"
                let asItCame = try await manager.data(for: identity)
                #expect(asItCame.source == .network && asItCame.value == gzipped)
            }
            // The other session: the stored (decoded) body is not its form.
            try await withManager(baseURL: nil, configuration: raw) { manager in
                let response = try await manager.data(for: Request(url: url))
                #expect(response.source == .network && response.value == gzipped)
            }
            #expect(hits.withLockedValue { $0 } == 4)
            #expect(cache.currentMemoryUsage > 0, "the decoded body stays stored")
        }
    }

    /// RFC 9111 and a request that does not follow redirects (``RequestOptions/redirectPolicy``):
    /// its 301 is stored and served like any response with explicit freshness; a request that
    /// follows redirects follows it from the cache.
    @Test func aRedirectNotFollowedIsStoredAndServedToRequestsThatDoNotFollowEither() async throws {
        try await withTestServer { server in
            let moves = Self.movedRoute(server)
            let targets = Self.countingRoute(server, "/target", fields: [("Cache-Control", "no-store")])
            try await withManager(baseURL: server.baseURL, configuration: Self.configuration()) { manager in
                var serializer = DataResponseSerializer()
                serializer.http.acceptableStatusCodes = IndexSet(200..<400)
                var notFollowing = Request(url: server.url("/moved"))
                notFollowing.options.redirectPolicy = .disallow
                let first = try await manager.response(for: notFollowing, serializer: serializer)
                #expect(first.response.status.code == 301 && first.source == .network)
                let second = try await manager.response(for: notFollowing, serializer: serializer)
                #expect(second.response.status.code == 301 && second.source == .cache)
                #expect(second.response.headerFields[.location] == "/target")
                #expect(moves.withLockedValue { $0 } == 1)
                // Following: the session follows the stored 301, and the target (no-store) comes
                // from the network.
                let followed = try await manager.data(for: Request(url: server.url("/moved")))
                #expect(followed.response.status == .ok && followed.source == .network)
                #expect(Self.text(followed.value) == "hit 1")
                #expect(moves.withLockedValue { $0 } == 1 && targets.withLockedValue { $0 } == 1)
            }
        }
    }

    @Test func aRedirectTheHookDeclinedIsStoredAndTheHookAskedAgain() async throws {
        try await withTestServer { server in
            // A session that refuses the redirect in its hook: the 301 ends the task, and is
            // stored; the next task's hook declines the stored one, which is then its answer.
            let moves = Self.movedRoute(server)
            try await withManager(baseURL: server.baseURL, configuration: Self.configuration()) { manager in
                var hooks = SessionManager.Hooks()
                hooks.taskWillPerformHTTPRedirection = { _, _, _, _ in nil }
                manager.hooks = hooks
                var serializer = DataResponseSerializer()
                serializer.http.acceptableStatusCodes = IndexSet(200..<400)
                for source in [ResponseSource.network, .cache] {
                    let response = try await manager.response(for: Request(url: server.url("/moved")), serializer: serializer)
                    #expect(response.response.status.code == 301 && response.source == source)
                }
                #expect(moves.withLockedValue { $0 } == 1)
            }
        }
    }

    @Test func aFreshHitTouchesNoConnection() async throws {
        try await withTestServer(.recording) { server in
            let hits = Self.countingRoute(server, "/fresh", fields: [("Cache-Control", "max-age=600")])
            try await withManager(baseURL: server.baseURL, configuration: Self.configuration()) { manager in
                let first = try await manager.data(for: Request(url: server.url("/fresh")))
                #expect(first.source == .network)
                let connections = server.connectionCount
                let second = try await manager.data(for: Request(url: server.url("/fresh")))
                #expect(second.source == .cache)
                #expect(Self.text(second.value) == "hit 1")
                #expect(second.response.headerFields[.age] != nil, "a served response says how old it is")
                #expect(hits.withLockedValue { $0 } == 1)
                #expect(server.connectionCount == connections)
            }
        }
    }

    /// A task the cache answers, without an exchange, lets go of everything as one the network
    /// answers does (LifetimeTests' rule): task, delegate, manager and engine.
    @Test(arguments: [LifetimeTests.API.callbackVerb, .asyncVerb, .dataTaskHandler, .operation])
    func aTaskAnsweredFromTheCacheGoes(_ api: LifetimeTests.API) async throws {
        try await withTestServer { server in
            let hits = Self.countingRoute(server, "/fresh", fields: [("Cache-Control", "max-age=600")])
            let bag = WeakBag()
            try await LifetimeTests.runAndDrop(bag: bag) { manager in
                for _ in 0..<3 { try await LifetimeTests.run(api, url: server.url("/fresh"), manager: manager, gate: nil) }
            }
            #expect(hits.withLockedValue { $0 } == 1, "two of the three were answered by the cache")
            #expect(await eventually { bag.allReleased }, "still alive: \(bag.survivors)")
        }
    }

    /// A manager whose cache holds a fresh answer ("stored") for its URL, and whose engine refuses
    /// everything: only the cache can answer.
    static func managerWithAStoredAnswer() -> (SessionManager, URL) {
        let cache = ResponseCache()
        let url = URL(string: "http://nowhere.invalid/doc")!
        var fields = HTTPFields()
        fields[.cacheControl] = "max-age=600"
        cache.storeCachedResponse(
            CachedResponse(response: HTTPResponse(status: .ok, headerFields: fields), data: Data("stored".utf8), url: url),
            for: Request(url: url))
        let manager = SessionManager(engine: RefusingEngine(), configuration: Self.configuration(cache: cache))
        manager.completionQueue = TestQueues.completion
        return (manager, url)
    }

    /// A task cancelled while the cache answers it (from the head's hook, from the body's, or
    /// before the answer) ends cancelled, as one the network answers does. No exchange is
    /// attached on that path, so the cancel reached nothing and the task ended in success with
    /// the cached body, after its caller had heard `didCancel`.
    @Test(arguments: ["head", "body"])
    func aTaskCancelledWhileTheCacheAnswersEndsCancelled(_ step: String) async throws {
        let (manager, url) = Self.managerWithAStoredAnswer()
        var hooks = SessionManager.Hooks()
        if step == "head" {
            hooks.dataTaskDidReceiveResponse = { _, task, _ in
                task.cancel()
                return .allow
            }
        } else {
            hooks.dataTaskDidReceiveData = { _, task, _ in task.cancel() }
        }
        manager.hooks = hooks
        let ended = Recorder<CourierError?>()
        let task = manager.dataTask(with: Request(url: url)) { _, _, error in ended.append(error) }
        task.resume()
        #expect(await ended.wait { $0.count == 1 })
        #expect(ended.all.first??.code == .cancelled, "\(String(describing: ended.all.first))")
        #expect(task.error?.code == .cancelled)
        await manager.invalidate(cancelingTasks: true)
    }

    @Test func aFreshHitNeedsNoEngineAtAll() async throws {
        let (manager, url) = Self.managerWithAStoredAnswer()
        let response = try await manager.data(for: Request(url: url))
        #expect(Self.text(response.value) == "stored")
        #expect(response.source == .cache)
        // The callback API and the notification say so too.
        let done = NIOLockedValueBox<CheckedContinuation<Void, Never>?>(nil)
        let task = manager.dataTask(with: Request(url: url)) { _, _, _ in done.withLockedValue { $0 }?.resume() }
        let log = NotificationLog(names: [.taskDidComplete], object: task)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            done.withLockedValue { $0 = continuation }
            task.resume()
        }
        #expect(await eventually { log.names == [.taskDidComplete] })
        let posted = log.userInfo(of: .taskDidComplete)?[TaskDidCompleteKey.responseSource] as? ResponseSource
        #expect(posted == .cache)
        #expect(task.responseSource == .cache)
        await manager.invalidate(cancelingTasks: true)
    }

    @Test(arguments: Peer.all)
    func cacheNRoutesAreServedFromTheCache(_ peer: Peer) async throws {
        try await peer.run { base in
            try await withManager(baseURL: base, configuration: Self.configuration()) { manager in
                let url = base.appendingPathComponent("cache/60")
                let first = try await manager.data(for: Request(url: url))
                let second = try await manager.data(for: Request(url: url))
                #expect(first.source == .network)
                #expect(second.source == .cache)
                #expect(second.value == first.value)
            }
        }
    }

    @Test(arguments: Peer.all)
    func anETagIsRevalidatedWithA304(_ peer: Peer) async throws {
        try await peer.run { base in
            let cache = ResponseCache()
            try await withManager(baseURL: base, configuration: Self.configuration(cache: cache)) { manager in
                let url = base.appendingPathComponent("etag/abc")
                let first = try await manager.data(for: Request(url: url))
                #expect(first.source == .network)
                #expect(cache.cachedResponse(for: Request(url: url)) != nil, "an ETag makes it revalidatable")
                let second = try await manager.data(for: Request(url: url))
                #expect(second.source == .revalidatedCache, "no lifetime: asked with If-None-Match, and the 304 confirmed it")
                #expect(second.response.status == .ok)
                #expect(second.value == first.value)
            }
        }
    }

    @Test(arguments: Peer.all)
    func lastModifiedIsRevalidatedWithIfModifiedSince(_ peer: Peer) async throws {
        try await peer.run { base in
            try await withManager(baseURL: base, configuration: Self.configuration()) { manager in
                let url = base.appendingPathComponent("cache")
                _ = try await manager.data(for: Request(url: url))
                let second = try await manager.data(for: Request(url: url))
                #expect(second.source == .revalidatedCache)
            }
        }
    }

    @Test(arguments: Peer.all)
    func noStoreIsNeverStored(_ peer: Peer) async throws {
        try await peer.run { base in
            let cache = ResponseCache()
            try await withManager(baseURL: base, configuration: Self.configuration(cache: cache)) { manager in
                let url = URL(string: base.appendingPathComponent("response-headers").absoluteString + "?Cache-Control=no-store,max-age=60")!
                _ = try await manager.data(for: Request(url: url))
                #expect(cache.cachedResponse(for: Request(url: url)) == nil)
                #expect(try await manager.data(for: Request(url: url)).source == .network)
                let stored = URL(string: base.appendingPathComponent("response-headers").absoluteString + "?Cache-Control=max-age=60")!
                _ = try await manager.data(for: Request(url: stored))
                #expect(try await manager.data(for: Request(url: stored)).source == .cache)
            }
        }
    }

    @Test func a304UpdatesTheStoredHeaders() async throws {
        try await withTestServer(.recording) { server in
            let version = NIOLockedValueBox(1)
            server.route("/doc") { request in
                let current = version.withLockedValue { $0 }
                if request.value(forHTTPHeaderField: "If-None-Match") == "\"v1\"" {
                    var response = TestServer.Response(status: .notModified)
                    response.headerFields[.eTag] = "\"v1\""
                    response.headerFields[.cacheControl] = current == 1 ? "no-cache" : "max-age=600"
                    response.headerFields[HTTPField.Name("X-Revision")!] = "\(current)"
                    return response
                }
                var response = TestServer.Response.text("document")
                response.headerFields[.eTag] = "\"v1\""
                response.headerFields[.cacheControl] = "no-cache"
                response.headerFields[HTTPField.Name("X-Revision")!] = "0"
                return response
            }
            try await withManager(baseURL: server.baseURL, configuration: Self.configuration()) { manager in
                _ = try await manager.data(for: Request(url: server.url("/doc")))
                version.withLockedValue { $0 = 2 }
                let revalidated = try await manager.data(for: Request(url: server.url("/doc")))
                #expect(revalidated.source == .revalidatedCache)
                #expect(revalidated.response.headerFields[HTTPField.Name("X-Revision")!] == "2", "the 304's fields replace the stored ones")
                #expect(Self.text(revalidated.value) == "document")
                let count = server.requestCount
                let hit = try await manager.data(for: Request(url: server.url("/doc")))
                #expect(hit.source == .cache, "the 304 made it fresh for 600 s")
                #expect(server.requestCount == count)
                #expect(server.receivedRequests.last?.headerFields[.ifNoneMatch] == "\"v1\"")
            }
        }
    }

    /// A 304 that says `no-store` (RFC 9111 5.2.2.5: no part of it is stored): the stored response
    /// is answered with the 304's fields this once, then forgotten. (Updated in place, it lost its
    /// `no-cache` and its `Last-Modified` gave it a heuristic lifetime: the next request was
    /// answered from the cache without asking the server.)
    @Test func a304ThatSaysNoStoreRemovesTheStoredResponse() async throws {
        try await withTestServer(.recording) { server in
            let lastModified = "Mon, 01 Jan 2024 00:00:00 GMT"
            server.route("/doc") { request in
                if request.value(forHTTPHeaderField: "If-None-Match") == "\"a\"" {
                    var response = TestServer.Response(status: .notModified)
                    response.headerFields[.eTag] = "\"a\""
                    response.headerFields[.cacheControl] = "no-store"
                    return response
                }
                var response = TestServer.Response.text("document")
                response.headerFields[.eTag] = "\"a\""
                response.headerFields[.cacheControl] = "no-cache"
                response.headerFields[.lastModified] = lastModified
                return response
            }
            let cache = ResponseCache()
            try await withManager(baseURL: server.baseURL, configuration: Self.configuration(cache: cache)) { manager in
                _ = try await manager.data(for: Request(url: server.url("/doc")))
                let revalidated = try await manager.data(for: Request(url: server.url("/doc")))
                #expect(revalidated.source == .revalidatedCache)
                #expect(Self.text(revalidated.value) == "document")
                #expect(cache.cachedResponse(for: Request(url: server.url("/doc"))) == nil)
                let third = try await manager.data(for: Request(url: server.url("/doc")))
                #expect(third.source == .network)
                #expect(server.requestCount == 3)
            }
        }
    }

    @Test func requestDirectives() async throws {
        try await withTestServer(.recording) { server in
            let hits = Self.countingRoute(server, "/page", fields: [("Cache-Control", "max-age=600"), ("ETag", "\"p\"")])
            try await withManager(baseURL: server.baseURL, configuration: Self.configuration()) { manager in
                var onlyCached = Request(url: server.url("/page"))
                onlyCached.headerFields[.cacheControl] = "only-if-cached"
                var anyStatus = HTTPResponseSerializer()
                anyStatus.acceptableStatusCodes = IndexSet(integersIn: 100..<600)
                let empty = try await manager.response(for: onlyCached, serializer: anyStatus)
                #expect(empty.response.status == .gatewayTimeout, "only-if-cached and nothing stored: the cache answers 504")
                #expect(hits.withLockedValue { $0 } == 0)

                _ = try await manager.data(for: Request(url: server.url("/page")))
                var maxAgeZero = Request(url: server.url("/page"))
                maxAgeZero.headerFields[.cacheControl] = "max-age=0"
                _ = try await manager.data(for: maxAgeZero)
                #expect(server.receivedRequests.last?.headerFields[.ifNoneMatch] == "\"p\"", "max-age=0 revalidates")
                var noCache = Request(url: server.url("/page"))
                noCache.headerFields[.cacheControl] = "no-cache"
                _ = try await manager.data(for: noCache)
                #expect(hits.withLockedValue { $0 } == 3)
                #expect(try await manager.data(for: onlyCached).source == .cache)
                #expect(hits.withLockedValue { $0 } == 3)
            }
        }
    }

    @Test func theFourCachePolicies() async throws {
        try await withTestServer(.recording) { server in
            let hits = Self.countingRoute(server, "/stale", fields: [("Cache-Control", "max-age=0"), ("ETag", "\"s\"")])
            let cache = ResponseCache()
            try await withManager(baseURL: server.baseURL, configuration: Self.configuration(cache: cache)) { manager in
                let url = server.url("/stale")
                func request(_ policy: RequestOptions.CachePolicy) -> Request {
                    Request(url: url, options: RequestOptions(cachePolicy: policy))
                }
                await #expect(throws: CourierError(.resourceUnavailable, "")) {
                    _ = try await manager.data(for: request(.returnCacheDataDontLoad))
                }
                #expect(hits.withLockedValue { $0 } == 0, "never loads")
                #expect(try await manager.data(for: request(.returnCacheDataElseLoad)).source == .network, "nothing stored: loads")
                #expect(try await manager.data(for: request(.returnCacheDataElseLoad)).source == .cache, "stale, served anyway")
                #expect(try await manager.data(for: request(.returnCacheDataDontLoad)).source == .cache)
                #expect(hits.withLockedValue { $0 } == 1)
                let reloaded = try await manager.data(for: request(.reloadIgnoringLocalCacheData))
                #expect(reloaded.source == .network)
                #expect(Self.text(reloaded.value) == "hit 2")
                #expect(server.receivedRequests.last?.headerFields[.ifNoneMatch] == nil, "no validators: an unconditional load")
                #expect(try await manager.data(for: request(.returnCacheDataDontLoad)).value == reloaded.value, "the reload was stored")
                let protocolRules = try await manager.data(for: request(.useProtocolCachePolicy))
                #expect(protocolRules.source == .network, "stale: revalidated, and this route answers 200 again")
                #expect(server.receivedRequests.last?.headerFields[.ifNoneMatch] == "\"s\"")
            }
            // The session's policy applies to requests that set none.
            var configuration = Self.configuration(cache: cache)
            configuration.requestCachePolicy = .returnCacheDataDontLoad
            try await withManager(baseURL: server.baseURL, configuration: configuration) { (manager: HTTPSessionManager) async throws in
                #expect(try await manager.data(for: Request(url: server.url("/stale"))).source == .cache)
                await #expect(throws: CourierError(.resourceUnavailable, "")) {
                    _ = try await manager.data(for: Request(url: server.url("/other")))
                }
            }
            #expect(hits.withLockedValue { $0 } == 3)
        }
    }

    @Test func unsafeMethodsInvalidateTargetAndLocation() async throws {
        try await withTestServer(.recording) { server in
            let item = Self.countingRoute(server, "/items/1", fields: [("Cache-Control", "max-age=600")])
            let list = Self.countingRoute(server, "/items", fields: [("Cache-Control", "max-age=600")])
            server.route("/items/1/edit", methods: [.post]) { _ in
                var response = TestServer.Response(status: .created)
                response.headerFields[.location] = "/items/1"
                return response
            }
            try await withManager(baseURL: server.baseURL, configuration: Self.configuration()) { manager in
                for path in ["/items/1", "/items", "/items/1", "/items"] { _ = try await manager.data(for: Request(url: server.url(path))) }
                #expect(item.withLockedValue { $0 } == 1 && list.withLockedValue { $0 } == 1)
                _ = try await manager.data(for: Request(method: .post, url: server.url("/items/1/edit")))
                #expect(try await manager.data(for: Request(url: server.url("/items/1"))).source == .network, "named by Location")
                #expect(try await manager.data(for: Request(url: server.url("/items"))).source == .cache, "not named")
                #expect(item.withLockedValue { $0 } == 2)
            }
        }
    }

    @Test func aRedirectTheSessionDoesNotFollowIsStoredAndServed() async throws {
        try await withTestServer { server in
            let moves = Self.movedRoute(server)
            let cache = ResponseCache()
            var configuration = Self.configuration(cache: cache)
            configuration.redirectPolicy = .disallow
            try await withManager(baseURL: server.baseURL, configuration: configuration) { manager in
                var anyStatus = HTTPResponseSerializer()
                anyStatus.acceptableStatusCodes = IndexSet(integersIn: 100..<600)
                let moved = try await manager.response(for: Request(url: server.url("/moved")), serializer: anyStatus)
                #expect(moved.response.status == .movedPermanently && moved.source == .network)
                #expect(cache.cachedResponse(for: Request(url: server.url("/moved")))?.response.status == .movedPermanently)
                let again = try await manager.response(for: Request(url: server.url("/moved")), serializer: anyStatus)
                #expect(again.response.status == .movedPermanently && again.source == .cache)
                #expect(moves.withLockedValue { $0 } == 1)
            }
        }
    }

    @Test func theWillCacheHookChangesOrRefuses() async throws {
        try await withTestServer(.recording) { server in
            _ = Self.countingRoute(server, "/a", fields: [("Cache-Control", "max-age=600")])
            _ = Self.countingRoute(server, "/b", fields: [("Cache-Control", "max-age=600")])
            let cache = ResponseCache()
            try await withManager(baseURL: server.baseURL, configuration: Self.configuration(cache: cache)) { manager in
                manager.hooks.dataTaskWillCacheResponse = { _, task, cached in
                    if task.originalRequest.url.path == "/b" { return nil }
                    var changed = cached
                    changed.data = Data("changed".utf8)
                    return changed
                }
                #expect(Self.text(try await manager.data(for: Request(url: server.url("/a"))).value) == "hit 1", "the task gets what came")
                #expect(Self.text(try await manager.data(for: Request(url: server.url("/a"))).value) == "changed", "the cache what the hook made")
                _ = try await manager.data(for: Request(url: server.url("/b")))
                #expect(cache.cachedResponse(for: Request(url: server.url("/b"))) == nil)
            }
        }
    }

    /// A response that says nothing about caching (no `Cache-Control`, `Expires`, `ETag` or
    /// `Last-Modified`) is stale when it arrives and cannot be revalidated: a session whose policy
    /// follows RFC 9111 does no cache work for it. It is stored when something could use it: a
    /// session policy that serves stale responses (an offline fallback), the request's own such
    /// policy, or the will-cache hook.
    /// A new version that says nothing about caching (so it is not stored) replaces the stored one
    /// all the same: the older one goes, and a policy that serves stale responses does not get it.
    @Test func aNewerResponseNotWorthStoringStillRemovesTheOlderOne() async throws {
        try await withTestServer { server in
            let version = NIOLockedValueBox(1)
            server.route("/doc") { _ in
                if version.withLockedValue({ $0 }) == 1 {
                    var response = TestServer.Response.text("v1")
                    response.headerFields[.cacheControl] = "max-age=0"
                    response.headerFields[.eTag] = "\"1\""
                    return response
                }
                return TestServer.Response.text("v2")
            }
            let cache = ResponseCache()
            try await withManager(baseURL: server.baseURL, configuration: Self.configuration(cache: cache)) { manager in
                _ = try await manager.data(for: Request(url: server.url("/doc")))
                #expect(cache.cachedResponse(for: Request(url: server.url("/doc"))) != nil)
                version.withLockedValue { $0 = 2 }
                let second = try await manager.data(for: Request(url: server.url("/doc")))
                #expect(Self.text(second.value) == "v2")
                #expect(cache.cachedResponse(for: Request(url: server.url("/doc"))) == nil)
                let stale = try await manager.data(for: Request(url: server.url("/doc"), options: RequestOptions(cachePolicy: .returnCacheDataElseLoad)))
                #expect(Self.text(stale.value) == "v2")
            }
        }
    }

    /// A bare 206 (no caching fields) to a range request replaces nothing: no cache stores a part,
    /// so the whole response stored for the URL stays. Before, it was removed.
    @Test func aPartialAnswerLeavesTheStoredWholeResponse() async throws {
        try await withTestServer { server in
            server.route("/file") { request in
                if request.value(forHTTPHeaderField: "Range") != nil {
                    return TestServer.Response(status: .partialContent, headerFields: [.contentRange: "bytes 0-1/10"], body: Data("ab".utf8))
                }
                var response = TestServer.Response.text("abcdefghij")
                response.headerFields[.cacheControl] = "max-age=600"
                response.headerFields[.eTag] = "\"f\""
                return response
            }
            let cache = ResponseCache()
            try await withManager(baseURL: server.baseURL, configuration: Self.configuration(cache: cache)) { manager in
                _ = try await manager.data(for: Request(url: server.url("/file")))
                #expect(cache.cachedResponse(for: Request(url: server.url("/file"))) != nil)
                var ranged = Request(url: server.url("/file"))
                ranged.headerFields[.range] = "bytes=0-1"
                let part = try await manager.data(for: ranged)
                #expect(part.response.status == .partialContent)
                #expect(cache.cachedResponse(for: Request(url: server.url("/file"))) != nil, "the whole response is still stored")
            }
        }
    }

    @Test func aResponseNoRuleCouldServeAgainIsStoredOnlyWhenSomethingCouldUseIt() async throws {
        try await withTestServer { server in
            _ = Self.countingRoute(server, "/plain", fields: [])
            _ = Self.countingRoute(server, "/validated", fields: [("ETag", "\"v\"")])
            let url = server.url("/plain")
            let cache = ResponseCache()
            try await withManager(baseURL: server.baseURL, configuration: Self.configuration(cache: cache)) { manager in
                _ = try await manager.data(for: Request(url: url))
                #expect(cache.cachedResponse(for: Request(url: url)) == nil, "no rule could serve it: not stored")
                _ = try await manager.data(for: Request(url: server.url("/validated")))
                #expect(cache.cachedResponse(for: Request(url: server.url("/validated"))) != nil, "a validator: stored")
                _ = try await manager.data(for: Request(url: url, options: RequestOptions(cachePolicy: .returnCacheDataElseLoad)))
                #expect(cache.cachedResponse(for: Request(url: url)) != nil, "the request's policy serves stale responses: stored")
            }
            let fallback = ResponseCache()
            var configuration = Self.configuration(cache: fallback)
            configuration.requestCachePolicy = .returnCacheDataElseLoad
            try await withManager(baseURL: server.baseURL, configuration: configuration) { manager in
                let first = try await manager.data(for: Request(url: url))
                let second = try await manager.data(for: Request(url: url))
                #expect(first.source == .network)
                #expect(second.source == .cache, "the offline fallback serves it")
                #expect(second.value == first.value)
            }
            let hooked = ResponseCache()
            try await withManager(baseURL: server.baseURL, configuration: Self.configuration(cache: hooked)) { manager in
                let offered = NIOLockedValueBox(0)
                manager.hooks.dataTaskWillCacheResponse = { _, _, cached in
                    offered.withLockedValue { $0 += 1 }
                    return cached
                }
                _ = try await manager.data(for: Request(url: url))
                #expect(offered.withLockedValue { $0 } == 1, "the will-cache hook still sees it")
                #expect(hooked.cachedResponse(for: Request(url: url)) != nil)
            }
        }
    }

    @Test func twoHundredConcurrentTasksOnOneURL() async throws {
        try await withTestServer(.recording) { server in
            let hits = Self.countingRoute(server, "/shared", fields: [("Cache-Control", "max-age=600"), ("ETag", "\"x\"")])
            try await withManager(baseURL: server.baseURL, configuration: Self.configuration()) { manager in
                // Cold: every task goes to the server, each stores; all succeed.
                let cold = try await withThrowingTaskGroup(of: ResponseSource.self) { group in
                    for _ in 0..<200 { group.addTask { try await manager.data(for: Request(url: server.url("/shared"))).source } }
                    return try await group.reduce(into: [ResponseSource]()) { $0.append($1) }
                }
                #expect(cold.count == 200)
                let coldHits = hits.withLockedValue { $0 }
                #expect(coldHits >= 1 && coldHits <= 200)
                // Warm: none reaches the server.
                let warm = try await withThrowingTaskGroup(of: (ResponseSource, String).self) { group in
                    for _ in 0..<200 {
                        group.addTask {
                            let response = try await manager.data(for: Request(url: server.url("/shared")))
                            return (response.source, Self.text(response.value))
                        }
                    }
                    return try await group.reduce(into: [(ResponseSource, String)]()) { $0.append($1) }
                }
                #expect(warm.allSatisfy { $0.0 == .cache })
                #expect(Set(warm.map(\.1)).count == 1, "one stored response for all")
                #expect(hits.withLockedValue { $0 } == coldHits)
            }
        }
    }

    @Test func aDiskCacheServesAcrossSessions() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-session-cache-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        try await withTestServer(.recording) { server in
            let hits = Self.countingRoute(server, "/kept", fields: [("Cache-Control", "max-age=600")])
            let first = try ResponseCache(memoryCapacity: 1 << 20, diskCapacity: 1 << 20, directory: folder)
            try await withManager(baseURL: server.baseURL, configuration: Self.configuration(cache: first)) { manager in
                _ = try await manager.data(for: Request(url: server.url("/kept")))
            }
            first.flush()
            let second = try ResponseCache(memoryCapacity: 1 << 20, diskCapacity: 1 << 20, directory: folder)
            try await withManager(baseURL: server.baseURL, configuration: Self.configuration(cache: second)) { manager in
                let response = try await manager.data(for: Request(url: server.url("/kept")))
                #expect(response.source == .cache)
                #expect(Self.text(response.value) == "hit 1")
            }
            #expect(hits.withLockedValue { $0 } == 1)
        }
    }

    @Test func optionsThatCannotBeHonouredAreRefused() async throws {
        try await withTestServer(.recording) { server in
            try await withManager(baseURL: server.baseURL) { (manager: HTTPSessionManager) async throws in
                await #expect(throws: CourierError(.unsupportedOption, "")) {
                    _ = try await manager.data(for: Request(url: server.url("/get"), options: RequestOptions(httpShouldUsePipelining: true)))
                }
                #expect(try await manager.data(for: Request(url: server.url("/get"), options: RequestOptions(httpShouldUsePipelining: false)))
                    .response.status == .ok)
                let reachability = NetworkReachabilityManager()
                manager.reachabilityManager = reachability
                await #expect(throws: CourierError(.unsupportedOption, ""), "not monitoring: the interface is unknown") {
                    _ = try await manager.data(for: Request(url: server.url("/get"), options: RequestOptions(allowsCellularAccess: false)))
                }
                #expect(server.requestCount == 1)
            }
        }
    }

    @Test func downloadsAreNotAnsweredFromTheCache() async throws {
        try await withTestServer(.recording) { server in
            try await withManager(baseURL: server.baseURL) { manager in
                await #expect(throws: CourierError(.resourceUnavailable, "")) {
                    _ = try await manager.download(Request(url: server.url("/get"), options: RequestOptions(cachePolicy: .returnCacheDataDontLoad)))
                }
            }
        }
    }
}

/// nginx's own caching headers: `expires`, `ETag` revalidation, the `Last-Modified` heuristic and
/// `Vary` (locations set up by `.ci/nginx.sh`).
@Suite(
    "HTTP cache against nginx",
    .enabled(if: Nginx.isAvailable, "COURIER_NGINX_URL and COURIER_NGINX_ROOT are not set: .ci/run starts nginx and sets them"))
struct NginxCacheTests {
    var base: URL { Nginx.url! }

    @Test func expiresIsFreshAnHour() async throws {
        try await withManager(baseURL: self.base, configuration: CacheSessionTests.configuration()) { manager in
            let url = self.base.appendingPathComponent("cache/expires/small.txt")
            #expect(try await manager.data(for: Request(url: url)).source == .network)
            let hit = try await manager.data(for: Request(url: url))
            #expect(hit.source == .cache)
            #expect(CacheSessionTests.text(hit.value) == "a small file for the cache tests\n")
        }
    }

    @Test func noCacheIsRevalidatedByETag() async throws {
        try await withManager(baseURL: self.base, configuration: CacheSessionTests.configuration()) { manager in
            let url = self.base.appendingPathComponent("cache/no-cache/small.txt")
            _ = try await manager.data(for: Request(url: url))
            let again = try await manager.data(for: Request(url: url))
            #expect(again.source == .revalidatedCache)
            #expect(again.response.headerFields[.contentLength] == "33")
            #expect(CacheSessionTests.text(again.value) == "a small file for the cache tests\n")
        }
    }

    @Test func lastModifiedGivesAHeuristicLifetime() async throws {
        try await withManager(baseURL: self.base, configuration: CacheSessionTests.configuration()) { manager in
            let url = self.base.appendingPathComponent("cache/last-modified/small.txt")
            let first = try await manager.data(for: Request(url: url))
            #expect(first.response.headerFields[.eTag] == nil && first.response.headerFields[.lastModified] != nil)
            #expect(try await manager.data(for: Request(url: url)).source == .cache, "modified a day ago: fresh for about 2.4 hours")
            var revalidate = Request(url: url)
            revalidate.headerFields[.cacheControl] = "max-age=0"
            #expect(try await manager.data(for: revalidate).source == .revalidatedCache, "If-Modified-Since, and nginx's 304")
        }
    }

    /// A stream of nginx's files: stored as it passes, then answered from the cache while fresh
    /// and revalidated by `ETag` when `no-cache` says so.
    @Test func streamsAreStoredAndRevalidated() async throws {
        try await withManager(baseURL: self.base, configuration: CacheSessionTests.configuration()) { manager in
            for (path, second) in [("cache/expires/small.txt", ResponseSource.cache), ("cache/no-cache/small.txt", .revalidatedCache)] {
                let url = self.base.appendingPathComponent(path)
                for expected in [ResponseSource.network, second] {
                    let stream = try await manager.stream(Request(url: url))
                    var body = ByteBuffer()
                    for try await chunk in stream.body { body.writeImmutableBuffer(chunk) }
                    #expect(stream.task.responseSource == expected, "\(path)")
                    #expect(String(buffer: body) == "a small file for the cache tests\n", "\(path)")
                }
            }
        }
    }

    @Test func varyKeepsOneResponsePerLanguage() async throws {
        try await withManager(baseURL: self.base, configuration: CacheSessionTests.configuration()) { manager in
            func get(_ language: String) async throws -> DataResponse<Data> {
                var request = Request(url: self.base.appendingPathComponent("cache/vary"))
                request.headerFields[.acceptLanguage] = language
                return try await manager.data(for: request)
            }
            let english = try await get("en")
            let french = try await get("fr")
            #expect(english.source == .network && french.source == .network)
            #expect(CacheSessionTests.text(french.value).hasPrefix("lang=fr "))
            let englishAgain = try await get("en")
            #expect(englishAgain.source == .cache)
            #expect(englishAgain.value == english.value, "the same request id: not asked again")
            #expect(try await get("fr").value == french.value)
        }
    }

    @Test func twoHundredConcurrentTasksAgainstNginx() async throws {
        try await withManager(baseURL: self.base, configuration: CacheSessionTests.configuration()) { manager in
            let url = self.base.appendingPathComponent("cache/no-cache/small.txt")
            let sources = try await withThrowingTaskGroup(of: ResponseSource.self) { group in
                for _ in 0..<200 { group.addTask { try await manager.data(for: Request(url: url)).source } }
                return try await group.reduce(into: [ResponseSource]()) { $0.append($1) }
            }
            #expect(sources.count == 200)
            #expect(sources.contains(.revalidatedCache) || sources.allSatisfy { $0 == .network })
            #expect(try await manager.data(for: Request(url: url)).source == .revalidatedCache)
        }
    }
}
