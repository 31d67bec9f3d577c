import Courier
import CourierTesting
import Foundation
import HTTPTypes
import Testing

/// Twins of Alamofire's `Tests/CacheTests.swift`: every cache policy against the `Cache-Control`
/// values `public`, `private`, `max-age=3600`, `max-age=0`, `no-cache` and `no-store` served by
/// httpbin's `/response-headers`. The source primes a `URLCache`, waits a second and tells a
/// cached response by its unchanged `Date`; the twins read ``DataResponse/source`` instead (no
/// pause), and, on TestServer, count the requests that reached the server. They run against
/// TestServer and, when `COURIER_HTTPBIN_URL` is set, httpbin.
@Suite("Conformance: Alamofire CacheTests")
struct AlamofireCacheConformanceTests {
    static let controls = ["public", "private", "max-age=3600", "max-age=0", "no-cache", "no-store"]

    /// A manager with a cache of its own, primed with one response per `Cache-Control` value.
    struct Primed {
        let manager: HTTPSessionManager
        let cache: ResponseCache
        let base: URL
        /// How many requests reached the server so far (TestServer only).
        let serverCount: @Sendable () -> Int?

        func url(_ control: String) -> URL {
            var components = URLComponents(url: self.base.appendingPathComponent("response-headers"), resolvingAgainstBaseURL: false)!
            components.queryItems = [URLQueryItem(name: "Cache-Control", value: control)]
            return components.url!
        }

        /// Sends the request for `control` with `policy`; nil when it failed.
        func fetch(_ control: String, _ policy: RequestOptions.CachePolicy) async -> DataResponse<Data>? {
            try? await self.manager.data(for: Request(url: self.url(control), options: RequestOptions(cachePolicy: policy)))
        }

        /// Whether the response for `control` under `policy` came from the cache; on TestServer,
        /// checked against whether the server saw the request.
        func servedFromCache(_ control: String, _ policy: RequestOptions.CachePolicy) async throws -> Bool {
            let before = self.serverCount()
            let response = try #require(await self.fetch(control, policy), "\(control)")
            if let before, let after = self.serverCount() {
                #expect((after == before) == (response.source == .cache), "\(control): the source and the server agree")
            }
            return response.source == .cache
        }
    }

    static func withPrimedCache(_ peer: Peer, _ body: (Primed) async throws -> Void) async throws {
        let cache = ResponseCache(memoryCapacity: 50 << 20)
        var configuration = SessionConfiguration.default
        configuration.responseCache = cache
        func prime(_ base: URL, count: @escaping @Sendable () -> Int?) async throws {
            try await withManager(baseURL: base, configuration: configuration) { manager in
                let primed = Primed(manager: manager, cache: cache, base: base, serverCount: count)
                for control in Self.controls {
                    _ = try await manager.data(for: Request(url: primed.url(control)))
                }
                try await body(primed)
            }
        }
        switch peer {
        case .testServer:
            try await withTestServer { server in try await prime(server.baseURL) { server.requestCount } }
        case .httpbin(let url):
            try await prime(url) { nil }
        }
    }

    @Test(arguments: Peer.all)
    func testURLCacheContainsCachedResponsesForAllRequests(_ peer: Peer) async throws {
        try await Self.withPrimedCache(peer) { (primed: Primed) async throws in
            for control in Self.controls {
                let stored = primed.cache.cachedResponse(for: Request(url: primed.url(control)))
                #expect((stored != nil) == (control != "no-store"), "\(control)")
            }
        }
    }

    @Test(arguments: Peer.all)
    func testDefaultCachePolicy(_ peer: Peer) async throws {
        try await Self.withPrimedCache(peer) { (primed: Primed) async throws in
            for control in Self.controls {
                #expect(try await primed.servedFromCache(control, .useProtocolCachePolicy) == (control == "max-age=3600"), "\(control)")
            }
        }
    }

    @Test(arguments: Peer.all)
    func testIgnoreLocalCacheDataPolicy(_ peer: Peer) async throws {
        try await Self.withPrimedCache(peer) { (primed: Primed) async throws in
            for control in Self.controls {
                #expect(try await primed.servedFromCache(control, .reloadIgnoringLocalCacheData) == false, "\(control)")
            }
        }
    }

    @Test(arguments: Peer.all)
    func testUseLocalCacheDataIfExistsOtherwiseLoadFromNetworkPolicy(_ peer: Peer) async throws {
        try await Self.withPrimedCache(peer) { (primed: Primed) async throws in
            for control in Self.controls {
                #expect(try await primed.servedFromCache(control, .returnCacheDataElseLoad) == (control != "no-store"), "\(control)")
            }
        }
    }

    @Test(arguments: Peer.all)
    func testUseLocalCacheDataAndDontLoadFromNetworkPolicy(_ peer: Peer) async throws {
        try await Self.withPrimedCache(peer) { (primed: Primed) async throws in
            for control in Self.controls where control != "no-store" {
                #expect(try await primed.servedFromCache(control, .returnCacheDataDontLoad), "\(control)")
            }
            await #expect(throws: CourierError(.resourceUnavailable, "")) {
                _ = try await primed.manager.data(
                    for: Request(url: primed.url("no-store"), options: RequestOptions(cachePolicy: .returnCacheDataDontLoad)))
            }
        }
    }
}
