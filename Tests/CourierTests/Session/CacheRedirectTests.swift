import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import Testing

/// Redirects through the cache, on every transport: a redirect the engine follows is stored, and
/// a later request follows it from the cache; a redirect's target is looked up in the cache like
/// a first request (served, revalidated, or fetched). OkHttp's `CacheTest` redirect cases are the
/// same rules against its MockWebServer (`Conformance/OkHttp/OkHttpCacheTests.swift`).
@Suite("Redirects through the cache")
struct CacheRedirectTests {
    /// What a route saw: its hits, and the `If-None-Match` of each.
    final class Hits: Sendable {
        let box = NIOLockedValueBox<[String?]>([])
        var count: Int { self.box.withLockedValue { $0.count } }
        var validators: [String?] { self.box.withLockedValue { $0 } }
        /// Records a hit; returns its number, from 1.
        func record(_ request: TestServer.Request) -> Int {
            self.box.withLockedValue {
                $0.append(request.headerFields[.ifNoneMatch])
                return $0.count
            }
        }
    }

    /// A redirect at `path` to `location`, with `fields`.
    static func redirect(_ server: TestServer, _ path: String, to location: String, status: HTTPResponse.Status = .movedPermanently,
                         fields: [(String, String)] = [("Cache-Control", "max-age=600")]) -> Hits {
        let hits = Hits()
        server.route(path) { request in
            _ = hits.record(request)
            var response = TestServer.Response(status: status)
            response.headerFields[.location] = location
            for (name, value) in fields { response.headerFields[HTTPField.Name(name)!] = value }
            response.body = Data("moved".utf8)
            return response
        }
        return hits
    }

    /// A document at `path` saying which hit it is ("hit N"), with `fields`; answers a matching
    /// `If-None-Match` with 304 when it has an `ETag`.
    static func document(_ server: TestServer, _ path: String, fields: [(String, String)]) -> Hits {
        let hits = Hits()
        server.route(path) { request in
            let count = hits.record(request)
            let etag = fields.first { $0.0 == "ETag" }?.1
            var response = etag != nil && request.headerFields[.ifNoneMatch] == etag
                ? TestServer.Response(status: .notModified) : TestServer.Response.text("hit \(count)")
            for (name, value) in fields { response.headerFields[HTTPField.Name(name)!] = value }
            return response
        }
        return hits
    }

    static func withCache(_ configuration: inout SessionConfiguration) {
        configuration.responseCache = ResponseCache()
    }

    static func text(_ data: Data) -> String { String(decoding: data, as: UTF8.self) }

    @Test("A followed 301 is stored, and the next request follows it from the cache", arguments: Transport.allCases)
    func aFollowedRedirectIsFollowedFromTheCache(_ transport: Transport) async throws {
        try await transport.run(configure: Self.withCache) { server, manager in
            let moves = Self.redirect(server, "/moved", to: "/target")
            let targets = Self.document(server, "/target", fields: [("Cache-Control", "max-age=600")])
            let hooked = NIOLockedValueBox(0)
            var hooks = SessionManager.Hooks()
            hooks.taskWillPerformHTTPRedirection = { _, _, _, proposed in
                hooked.withLockedValue { $0 += 1 }
                return proposed
            }
            manager.hooks = hooks
            let first = try await manager.data(for: Request(url: server.url("/moved")))
            #expect(first.source == .network && Self.text(first.value) == "hit 1")
            let second = try await manager.data(for: Request(url: server.url("/moved")))
            #expect(second.source == .cache && Self.text(second.value) == "hit 1")
            #expect(second.request.url.path == "/target", "the task's request is the redirect's target")
            #expect(moves.count == 1 && targets.count == 1, "the second request reached no server")
            #expect(hooked.withLockedValue { $0 } == 2, "the redirect hook is asked for the stored redirect too")
        }
    }

    @Test("A stored redirect leads to the network when its target is not stored", arguments: Transport.allCases)
    func aStoredRedirectLeadsToTheNetwork(_ transport: Transport) async throws {
        try await transport.run(configure: Self.withCache) { server, manager in
            let moves = Self.redirect(server, "/moved", to: "/target")
            let targets = Self.document(server, "/target", fields: [("Cache-Control", "no-store")])
            _ = try await manager.data(for: Request(url: server.url("/moved")))
            let second = try await manager.data(for: Request(url: server.url("/moved")))
            #expect(second.source == .network && Self.text(second.value) == "hit 2")
            #expect(second.request.url.path == "/target")
            #expect(moves.count == 1 && targets.count == 2)
            #expect(server.receivedRequests.last?.target == "/target")
        }
    }

    @Test("A redirect to a stored document is answered from the cache", arguments: Transport.allCases)
    func aRedirectToAStoredDocumentIsAnsweredFromTheCache(_ transport: Transport) async throws {
        try await transport.run(configure: Self.withCache) { server, manager in
            let hops = Self.redirect(server, "/hop", to: "/target", status: .found, fields: [])
            let targets = Self.document(server, "/target", fields: [("Cache-Control", "max-age=600")])
            _ = try await manager.data(for: Request(url: server.url("/target")))
            let redirected = try await manager.data(for: Request(url: server.url("/hop")))
            #expect(redirected.source == .cache && Self.text(redirected.value) == "hit 1")
            #expect(redirected.request.url.path == "/target")
            #expect(hops.count == 1 && targets.count == 1)
            // The connection the declined redirect was on is no hindrance to the next request.
            let again = try await manager.data(for: Request(url: server.url("/hop")))
            #expect(again.source == .cache && hops.count == 2 && targets.count == 1)
        }
    }

    @Test("A stream whose redirect's target is stored reads it from the cache")
    func aStreamWhoseRedirectsTargetIsStored() async throws {
        try await Transport.http1.run(configure: Self.withCache) { server, manager in
            let hops = Self.redirect(server, "/hop", to: "/target", status: .found, fields: [])
            let targets = Self.document(server, "/target", fields: [("Cache-Control", "max-age=600")])
            _ = try await manager.data(for: Request(url: server.url("/target")))
            let stream = try await manager.stream(Request(url: server.url("/hop")))
            #expect(stream.response.status == .ok)
            var body = Data()
            for try await chunk in stream.body { body.append(contentsOf: chunk.readableBytesView) }
            #expect(Self.text(body) == "hit 1")
            #expect(stream.task.responseSource == .cache)
            #expect(hops.count == 1 && targets.count == 1)
        }
    }

    @Test("A stale target is revalidated on the redirect's hop", arguments: Transport.allCases)
    func aStaleTargetIsRevalidatedOnTheRedirectsHop(_ transport: Transport) async throws {
        try await transport.run(configure: Self.withCache) { server, manager in
            _ = Self.redirect(server, "/hop", to: "/target", status: .found, fields: [])
            let targets = Self.document(server, "/target", fields: [("Cache-Control", "max-age=0"), ("ETag", "\"v1\"")])
            _ = try await manager.data(for: Request(url: server.url("/target")))
            let redirected = try await manager.data(for: Request(url: server.url("/hop")))
            #expect(redirected.source == .revalidatedCache)
            #expect(redirected.response.status == .ok && Self.text(redirected.value) == "hit 1")
            #expect(targets.validators == [nil, "\"v1\""], "the redirect's hop carried the stored validator")
        }
    }

    @Test("A request that does not follow redirects gets a stored redirect, without its body")
    func aRequestThatDoesNotFollowGetsTheStoredRedirect() async throws {
        try await Transport.http1.run(configure: Self.withCache) { server, manager in
            let moves = Self.redirect(server, "/moved", to: "/target")
            _ = Self.document(server, "/target", fields: [])
            _ = try await manager.data(for: Request(url: server.url("/moved")))
            var notFollowing = Request(url: server.url("/moved"))
            notFollowing.options.redirectPolicy = .disallow
            var serializer = DataResponseSerializer()
            serializer.http.acceptableStatusCodes = IndexSet(200..<400)
            let response = try await manager.response(for: notFollowing, serializer: serializer)
            #expect(response.response.status == .movedPermanently && response.source == .cache)
            #expect(response.response.headerFields[.location] == "/target")
            #expect(response.value.isEmpty && response.response.headerFields[.contentLength] == "0")
            #expect(moves.count == 1)
        }
    }

    @Test("A stored redirect the hook declines is the answer")
    func aStoredRedirectTheHookDeclinesIsTheAnswer() async throws {
        try await Transport.http1.run(configure: Self.withCache) { server, manager in
            let moves = Self.redirect(server, "/moved", to: "/target")
            let targets = Self.document(server, "/target", fields: [])
            _ = try await manager.data(for: Request(url: server.url("/moved")))
            var hooks = SessionManager.Hooks()
            hooks.taskWillPerformHTTPRedirection = { _, _, _, _ in nil }
            manager.hooks = hooks
            var serializer = DataResponseSerializer()
            serializer.http.acceptableStatusCodes = IndexSet(200..<400)
            let response = try await manager.response(for: Request(url: server.url("/moved")), serializer: serializer)
            #expect(response.response.status == .movedPermanently && response.source == .cache)
            #expect(response.request.url.path == "/moved")
            #expect(moves.count == 1 && targets.count == 1)
        }
    }

    @Test("A policy that forbids loading follows a stored redirect, and fails where the cache has no answer")
    func aPolicyThatForbidsLoadingFollowsStoredRedirects() async throws {
        try await Transport.http1.run(configure: Self.withCache) { server, manager in
            let moves = Self.redirect(server, "/moved", to: "/target")
            let targets = Self.document(server, "/target", fields: [("Cache-Control", "no-store")])
            _ = try await manager.data(for: Request(url: server.url("/moved")))
            var offline = Request(url: server.url("/moved"))
            offline.options.cachePolicy = .returnCacheDataDontLoad
            await #expect(throws: CourierError.self) {
                do throws(CourierError) {
                    _ = try await manager.data(for: offline)
                } catch {
                    #expect(error.code == .resourceUnavailable, "\(error)")
                    #expect(error.request?.url.path == "/target", "the hop the cache could not answer")
                    throw error
                }
            }
            #expect(moves.count == 1 && targets.count == 1, "nothing reached the server")
        }
    }

    @Test("A loop of stored redirects ends at the policy's limit")
    func aLoopOfStoredRedirectsEndsAtThePolicysLimit() async throws {
        try await Transport.http1.run(configure: {
            Self.withCache(&$0)
            $0.redirectPolicy = .follow(max: 5, allowCycles: true)
        }) { server, manager in
            let a = Self.redirect(server, "/a", to: "/b")
            let b = Self.redirect(server, "/b", to: "/a")
            for _ in 0..<2 {
                await #expect(throws: CourierError.self) {
                    do throws(CourierError) {
                        _ = try await manager.data(for: Request(url: server.url("/a")))
                    } catch {
                        #expect(error.code == .tooManyRedirects)
                        throw error
                    }
                }
            }
            #expect(a.count + b.count <= 7, "the second task followed the stored loop without the server: \(a.count), \(b.count)")
        }
    }

    /// The policy's limit is the attempt's, over every redirect it follows, the cache's and the
    /// network's together (URLSession's count; OkHttp's 20 follow-ups in all): the engine counted
    /// only its own exchange's, so a chain that stored redirects began, or that met them between
    /// the network's, followed more redirects than the limit.
    @Test("The redirect limit counts the stored redirects and the network's together", arguments: Transport.allCases)
    func theRedirectLimitCountsStoredAndNetworkRedirectsTogether(_ transport: Transport) async throws {
        try await transport.run(configure: {
            Self.withCache(&$0)
            $0.redirectPolicy = .follow(max: 3, allowCycles: false)
        }) { server, manager in
            // /s1 and /s2 are stored; /m0, /n1 and /n2 are asked of the network each time.
            _ = Self.redirect(server, "/s1", to: "/s2")
            _ = Self.redirect(server, "/s2", to: "/n1")
            let m0 = Self.redirect(server, "/m0", to: "/s1", status: .found, fields: [])
            let n1 = Self.redirect(server, "/n1", to: "/n2", status: .found, fields: [])
            let n2 = Self.redirect(server, "/n2", to: "/end", status: .found, fields: [])
            let ends = Self.document(server, "/end", fields: [])
            var unlimited = Request(url: server.url("/s1"))
            unlimited.options.redirectPolicy = .follow(max: 16, allowCycles: false)
            let first = try await manager.data(for: unlimited)
            #expect(Self.text(first.value) == "hit 1" && n2.count == 1)
            // Two stored redirects, then the network's: the third is /n1's, the fourth (/n2's) one
            // too many. Then the network's /m0 first, the two stored ones, /n1's one too many.
            for (path, last) in [("/s1", "/n2"), ("/m0", "/n1")] {
                await #expect(throws: CourierError.self, "\(path)") {
                    do throws(CourierError) {
                        _ = try await manager.data(for: Request(url: server.url(path)))
                    } catch {
                        #expect(error.code == .tooManyRedirects, "\(path): \(error)")
                        #expect(error.message.contains("more than 3 redirects"), "\(path): \(error.message)")
                        #expect(error.request?.url.path == last, "\(path): the hop whose redirect was one too many")
                        throw error
                    }
                }
            }
            #expect(ends.count == 1, "a task followed more than 3 redirects")
            #expect(m0.count == 1 && n1.count == 3 && n2.count == 2)
        }
    }

    @Test("A task cancelled in the redirect hook ends cancelled, once, when the cache answers the target")
    func aTaskCancelledInTheHookEndsCancelled() async throws {
        try await Transport.http1.run(configure: Self.withCache) { server, manager in
            _ = Self.redirect(server, "/hop", to: "/target", status: .found, fields: [])
            _ = Self.document(server, "/target", fields: [("Cache-Control", "max-age=600")])
            _ = try await manager.data(for: Request(url: server.url("/target")))
            var hooks = SessionManager.Hooks()
            hooks.taskWillPerformHTTPRedirection = { _, task, _, proposed in
                task.cancel()
                return proposed
            }
            manager.hooks = hooks
            let completions = NIOLockedValueBox(0)
            let error: CourierError? = await withCheckedContinuation { continuation in
                let task = manager.dataTask(with: Request(url: server.url("/hop"))) { _, _, error in
                    completions.withLockedValue { $0 += 1 }
                    continuation.resume(returning: error)
                }
                task.resume()
            }
            #expect(error?.code == .cancelled)
            #expect(completions.withLockedValue { $0 } == 1)
        }
    }

    /// A redirect's target is looked up on the engine's event loop, which must not wait for a
    /// file: only in the memory tier. A cache that keeps nothing in memory then fetches the target
    /// of a redirect from the network, while a task's first hop (on the caller's thread) reads the
    /// disk tier: a stored redirect and its stored target both answer from there.
    @Test func onTheEventLoopOnlyTheMemoryTierIsRead() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-cache-redirects-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        let cache = try ResponseCache(memoryCapacity: 0, diskCapacity: 1 << 20, directory: folder)
        try await Transport.http1.run(configure: { $0.responseCache = cache }) { server, manager in
            let hops = Self.redirect(server, "/hop", to: "/target", status: .found, fields: [])
            let moves = Self.redirect(server, "/moved", to: "/target")
            let targets = Self.document(server, "/target", fields: [("Cache-Control", "max-age=600")])
            _ = try await manager.data(for: Request(url: server.url("/target")))
            cache.flush()
            let viaHop = try await manager.data(for: Request(url: server.url("/hop")))
            #expect(viaHop.source == .network && Self.text(viaHop.value) == "hit 2", "the disk tier is not read on the loop")
            _ = try await manager.data(for: Request(url: server.url("/moved")))
            cache.flush()
            let viaStored = try await manager.data(for: Request(url: server.url("/moved")))
            #expect(viaStored.source == .cache, "the first hop reads the disk: the stored 301, then its stored target")
            #expect(hops.count == 1 && moves.count == 1 && targets.count == 3)
        }
    }

    /// A task whose redirect the cache answers lets go of everything, as any other does
    /// (LifetimeTests' rule).
    @Test(arguments: [LifetimeTests.API.callbackVerb, .asyncVerb, .dataTaskHandler])
    func aTaskWhoseRedirectTheCacheAnswersGoes(_ api: LifetimeTests.API) async throws {
        try await withTestServer { server in
            _ = Self.redirect(server, "/hop", to: "/target", status: .found, fields: [])
            let targets = Self.document(server, "/target", fields: [("Cache-Control", "max-age=600")])
            let bag = WeakBag()
            try await LifetimeTests.runAndDrop(bag: bag) { manager in
                try await LifetimeTests.run(api, url: server.url("/target"), manager: manager, gate: nil)
                for _ in 0..<2 { try await LifetimeTests.run(api, url: server.url("/hop"), manager: manager, gate: nil) }
            }
            #expect(targets.count == 1, "the redirects' target came from the cache")
            #expect(await eventually { bag.allReleased }, "still alive: \(bag.survivors)")
        }
    }
}
