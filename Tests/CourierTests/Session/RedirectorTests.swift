import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import Testing

/// A request's own ``Redirector``: asked at every redirect of its task (it travels with the
/// request from hop to hop), through the async and callback APIs, never when the session does not
/// follow redirects at all, and the hop limit still ends a chain it follows.
@Suite("Redirector")
struct RedirectorTests {
    @Test func itIsAskedAtEveryHopAndCanChangeEach() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let asked = NIOLockedValueBox<[String]>([])
                var request = Request(url: server.url("/redirect/3"))
                request.redirector = .modify { task, proposed, response in
                    asked.withLockedValue { $0.append("\(response.status.code) \(proposed.url.path)") }
                    #expect(task.originalRequest.url.path == "/redirect/3")
                    var next = proposed
                    next.headerFields[HTTPField.Name("X-Hop")!] = proposed.url.path
                    return next
                }
                let response = try await manager.response(for: request, serializer: JSONResponseSerializer())
                #expect(response.request.url.path == "/get")
                #expect(asked.withLockedValue { $0 } == ["302 /relative-redirect/2", "302 /relative-redirect/1", "302 /get"])
                let headers = (response.value as? [String: any Sendable])?["headers"] as? [String: any Sendable]
                #expect(headers?["X-Hop"] as? String == "/get")

                // The callback API, stopping at the second hop.
                var stopping = Request(url: server.url("/redirect/3"))
                let hops = NIOLockedValueBox(0)
                stopping.redirector = .modify { _, proposed, _ in
                    hops.withLockedValue { $0 += 1 }
                    return hops.withLockedValue { $0 } < 2 ? proposed : nil
                }
                let status: Int? = await withCheckedContinuation { continuation in
                    manager.dataTask(with: stopping) { response, _, _ in continuation.resume(returning: response?.status.code) }.resume()
                }
                #expect(status == 302)
                #expect(hops.withLockedValue { $0 } == 2)
            }
        }
    }

    /// A redirect the task declines is handled once: its `Set-Cookie` reached the store twice
    /// (before the redirector was asked, and again as the final response), so a store saw each
    /// cookie twice, and a file store wrote twice.
    @Test func aDeclinedRedirectsCookiesAreStoredOnce() async throws {
        final class CountingStorage: CookieStorage {
            let memory = MemoryCookieStorage()
            let stores = NIOLockedValueBox(0)
            func cookies(for url: URL) -> [Cookie] { self.memory.cookies(for: url) }
            func cookieHeader(for url: URL) -> String? { self.memory.cookieHeader(for: url) }
            func storeCookies(fromSetCookieFields fields: [String], for url: URL) {
                self.stores.withLockedValue { $0 += 1 }
                self.memory.storeCookies(fromSetCookieFields: fields, for: url)
            }
            func setCookie(_ cookie: Cookie) { self.memory.setCookie(cookie) }
            func deleteCookie(_ cookie: Cookie) { self.memory.deleteCookie(cookie) }
            var allCookies: [Cookie] { self.memory.allCookies }
            func removeCookies(since date: Date) { self.memory.removeCookies(since: date) }
            func removeAllCookies() { self.memory.removeAllCookies() }
            var isPersistent: Bool { false }
        }
        try await withTestServer { server in
            server.route("/r") { _ in
                TestServer.Response(status: .found, headerFields: [.location: "/x", .setCookie: "s=1; Max-Age=60"])
            }
            let storage = CountingStorage()
            var configuration = SessionConfiguration.default
            configuration.httpCookieStorage = storage
            try await withManager(baseURL: server.baseURL, configuration: configuration) { manager in
                var request = Request(url: server.url("/r"))
                request.redirector = .doNotFollow
                let error = await #expect(throws: CourierError.self) { try await manager.data(for: request) }
                #expect(error?.response?.status == .found)
                #expect(storage.stores.withLockedValue { $0 } == 1)
                #expect(storage.cookieHeader(for: server.url("/x")) == "s=1")
            }
        }
    }

    /// The task keeps the handlers of the request it was made with: a `.modify` that returns a
    /// request of its own (without them) is still asked at the next hops, and the final response
    /// still goes by the request's cacher.
    @Test func theHandlersStayTheTasksWhateverRequestARedirectMakes() async throws {
        let cache = ResponseCache(memoryCapacity: 10_000_000)
        var configuration = SessionConfiguration.default
        configuration.responseCache = cache
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL, configuration: configuration) { manager in
                let asked = NIOLockedValueBox(0)
                var request = Request(url: server.url("/redirect/3"))
                request.redirector = .modify { _, proposed, _ in
                    asked.withLockedValue { $0 += 1 }
                    return Request(url: proposed.url)
                }
                let response = try await manager.data(for: request)
                #expect(response.request.url.path == "/get")
                #expect(asked.withLockedValue { $0 } == 3)

                // A cacheable response after such a redirect: stored without a cacher, not with
                // the task's `.doNotCache`.
                let cached = Request(url: server.url("/cache/60"))
                for cacher in [ResponseCacher?.none, .doNotCache] {
                    cache.removeAllCachedResponses()
                    var redirected = Request(url: server.url("/redirect-to?url=/cache/60"))
                    redirected.redirector = .modify { _, proposed, _ in Request(url: proposed.url) }
                    redirected.responseCacher = cacher
                    let response = try await manager.data(for: redirected)
                    #expect(response.request.url.path == "/cache/60")
                    #expect((cache.cachedResponse(for: cached) != nil) == (cacher == nil))
                }
            }
        }
    }

    @Test func aSessionThatDoesNotFollowRedirectsNeverAsks() async throws {
        var configuration = SessionConfiguration.default
        configuration.redirectPolicy = .disallow
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL, configuration: configuration) { manager in
                let asked = NIOLockedValueBox(0)
                var request = Request(url: server.url("/redirect/1"))
                request.redirector = .modify { _, proposed, _ in
                    asked.withLockedValue { $0 += 1 }
                    return proposed
                }
                var serializer = DataResponseSerializer()
                serializer.http.acceptableStatusCodes = IndexSet(integersIn: 200..<400)
                let response = try await manager.response(for: request, serializer: serializer)
                #expect(response.response.status.code == 302)
                #expect(asked.withLockedValue { $0 } == 0)
            }
        }
    }

    @Test func theHopLimitEndsAChainItFollows() async throws {
        var configuration = SessionConfiguration.default
        configuration.redirectPolicy = .follow(max: 2, allowCycles: true)
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL, configuration: configuration) { manager in
                var request = Request(url: server.url("/redirect/3"))
                request.redirector = .follow
                let error = await #expect(throws: CourierError.self) { try await manager.data(for: request) }
                #expect(error?.code == .tooManyRedirects)
            }
        }
    }
}
