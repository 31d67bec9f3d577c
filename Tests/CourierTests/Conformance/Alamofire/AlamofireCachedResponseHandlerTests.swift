import Courier
import CourierTesting
import Foundation
import HTTPTypes
import Testing

/// Twins of Alamofire's `Tests/CachedResponseHandlerTests.swift`. A session's cached-response
/// handler is AFNetworking's will-cache block, Courier's
/// ``SessionManager/Hooks/dataTaskWillCacheResponse``: return the response to store it, nil to
/// store nothing, or a changed one. A request's own is its ``ResponseCacher``
/// (`Request.responseCacher`), which decides instead of the hook.
@Suite("Conformance: Alamofire CachedResponseHandlerTests")
struct AlamofireCachedResponseHandlerConformanceTests {
    static func run(
        _ peer: Peer,
        hook: (@Sendable (SessionManager, DataTask, CachedResponse) -> CachedResponse?)? = nil,
        cacher: ResponseCacher? = nil,
        check: (ResponseCache, Request, DataResponse<Data>) throws -> Void
    ) async throws {
        try await peer.run { base in
            let cache = ResponseCache(memoryCapacity: 100_000_000)
            var configuration = SessionConfiguration.default
            configuration.responseCache = cache
            try await withManager(baseURL: base, configuration: configuration) { manager in
                manager.hooks.dataTaskWillCacheResponse = hook
                var request = Request(url: base.appendingPathComponent("get"))
                request.responseCacher = cacher
                let response = try await manager.data(for: request)
                #expect(response.response.status == .ok)
                try check(cache, request, response)
            }
        }
    }

    @Test(arguments: Peer.all)
    func testThatSessionCachedResponseHandlerCanCacheResponse(_ peer: Peer) async throws {
        try await Self.run(peer, hook: { _, _, cached in cached }) { cache, request, _ in
            #expect(cache.cachedResponse(for: request) != nil)
        }
    }

    @Test(arguments: Peer.all)
    func testThatSessionCachedResponseHandlerCanNotCacheResponse(_ peer: Peer) async throws {
        try await Self.run(peer, hook: { _, _, _ in nil }) { cache, request, _ in
            #expect(cache.cachedResponse(for: request) == nil)
        }
    }

    /// Differs: `CachedResponse` has no `userInfo`; the change the hook makes is a header field.
    @Test(arguments: Peer.all)
    func testThatSessionCachedResponseHandlerCanModifyCacheResponse(_ peer: Peer) async throws {
        try await Self.run(peer, hook: { _, _, cached in
            var changed = cached
            changed.response.headerFields[HTTPField.Name("X-Key")!] = "value"
            return changed
        }) { cache, request, response in
            #expect(cache.cachedResponse(for: request)?.response.headerFields[HTTPField.Name("X-Key")!] == "value")
            #expect(response.response.headerFields[HTTPField.Name("X-Key")!] == nil, "the task got what came")
        }
    }

    @Test(arguments: Peer.all)
    func testThatRequestCachedResponseHandlerCanCacheResponse(_ peer: Peer) async throws {
        try await Self.run(peer, cacher: .cache) { cache, request, _ in
            #expect(cache.cachedResponse(for: request) != nil)
        }
    }

    @Test(arguments: Peer.all)
    func testThatRequestCachedResponseHandlerCanNotCacheResponse(_ peer: Peer) async throws {
        try await Self.run(peer, cacher: .doNotCache) { cache, request, _ in
            #expect(cache.cachedResponse(for: request) == nil)
        }
    }

    /// Differs: `CachedResponse` has no `userInfo`; the change the cacher makes is a header field.
    @Test(arguments: Peer.all)
    func testThatRequestCachedResponseHandlerCanModifyCacheResponse(_ peer: Peer) async throws {
        let cacher = ResponseCacher.modify { _, cached in
            var changed = cached
            changed.response.headerFields[HTTPField.Name("X-Key")!] = "value"
            return changed
        }
        try await Self.run(peer, cacher: cacher) { cache, request, response in
            #expect(cache.cachedResponse(for: request)?.response.headerFields[HTTPField.Name("X-Key")!] == "value")
            #expect(response.response.headerFields[HTTPField.Name("X-Key")!] == nil, "the task got what came")
        }
    }

    /// The session's hook would store nothing; the request's cacher stores, and wins.
    @Test(arguments: Peer.all)
    func testThatRequestCachedResponseHandlerIsPrioritizedOverSessionCachedResponseHandler(_ peer: Peer) async throws {
        try await Self.run(peer, hook: { _, _, _ in nil }, cacher: .cache) { cache, request, _ in
            #expect(cache.cachedResponse(for: request) != nil)
        }
    }

    @Test func testThatCacheResponseCacherCanBeCreatedStaticallyFromProtocol() {
        let cacher: ResponseCacher = .cache
        guard case .cache = cacher.behavior else {
            Issue.record("\(cacher.behavior)")
            return
        }
    }

    @Test func testThatDoNotCacheResponseCacherCanBeCreatedStaticallyFromProtocol() {
        let cacher: ResponseCacher = .doNotCache
        guard case .doNotCache = cacher.behavior else {
            Issue.record("\(cacher.behavior)")
            return
        }
    }

    @Test func testThatModifyResponseCacherCanBeCreatedStaticallyFromProtocol() {
        let cacher: ResponseCacher = .modify { _, cached in cached }
        guard case .modify = cacher.behavior else {
            Issue.record("\(cacher.behavior)")
            return
        }
    }
}
