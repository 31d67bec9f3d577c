import Courier
import CourierTesting
import Foundation
import HTTPTypes
import Testing

/// Twins of the per-session tests of Alamofire's `Tests/CachedResponseHandlerTests.swift`. A
/// session's cached-response handler is AFNetworking's will-cache block, Courier's
/// ``SessionManager/Hooks/dataTaskWillCacheResponse``: return the response to store it, nil to
/// store nothing, or a changed one.
@Suite("Conformance: Alamofire CachedResponseHandlerTests")
struct AlamofireCachedResponseHandlerConformanceTests {
    static func run(
        _ peer: Peer,
        hook: @escaping @Sendable (SessionManager, DataTask, CachedResponse) -> CachedResponse?,
        check: (ResponseCache, Request, DataResponse<Data>) throws -> Void
    ) async throws {
        try await peer.run { base in
            let cache = ResponseCache(memoryCapacity: 100_000_000)
            var configuration = SessionConfiguration.default
            configuration.responseCache = cache
            try await withManager(baseURL: base, configuration: configuration) { manager in
                manager.hooks.dataTaskWillCacheResponse = hook
                let request = Request(url: base.appendingPathComponent("get"))
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
}
