@testable import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOCore
import NIOFoundationCompat
import Testing

/// Streams and the session's cache (the transports' part is `TransportStreamCacheTests`): what a
/// stream keeps for the cache is bounded by the largest entry the cache keeps; a stream is answered
/// from the cache, revalidated, and offered to the will-cache hook as a data task is.
@Suite("Streams and the cache")
struct StreamCacheTests {
    static func whole(_ body: ResponseBodyStream) async throws -> ByteBuffer {
        var whole = ByteBuffer()
        for try await chunk in body { whole.writeImmutableBuffer(chunk) }
        return whole
    }

    /// A manager with `cache` on a fresh server.
    static func run(cache: ResponseCache = ResponseCache(), _ body: (TestServer, HTTPSessionManager) async throws -> Void) async throws {
        try await withTestServer { server in
            var configuration = SessionConfiguration.default
            configuration.responseCache = cache
            try await withManager(baseURL: server.baseURL, configuration: configuration) { manager in
                try await body(server, manager)
            }
        }
    }

    static let storing = RequestOptions(cachePolicy: .returnCacheDataElseLoad)
    static let cacheOnly = RequestOptions(cachePolicy: .returnCacheDataDontLoad)

    @Test func aBodyLongerThanTheCacheKeepsStreamsWholeAndIsNotStored() async throws {
        // 40,000 bytes of memory: its largest entry is 2,000 bytes.
        try await Self.run(cache: ResponseCache(memoryCapacity: 40_000)) { server, manager in
            // Chunked, no length announced: the copy outgrows the limit on the way.
            let unannounced = try await manager.stream(Request(url: server.url("/stream-bytes/5000?seed=1&chunk_size=1000"), options: Self.storing))
            #expect(unannounced.response.expectedContentLength == nil)
            #expect(try await Self.whole(unannounced.body).readableBytes == 5000, "the consumer lost nothing")
            // Announced over the limit: nothing is copied.
            let announced = try await manager.stream(Request(url: server.url("/bytes/5000?seed=1"), options: Self.storing))
            #expect(try await Self.whole(announced.body).readableBytes == 5000)
            for path in ["/stream-bytes/5000?seed=1&chunk_size=1000", "/bytes/5000?seed=1"] {
                await #expect(throws: CourierError(.resourceUnavailable, ""), "\(path)") {
                    _ = try await manager.stream(Request(url: server.url(path), options: Self.cacheOnly))
                }
            }

            // Within it, chunked: stored, and served whole.
            let small = server.url("/stream-bytes/1000?seed=1&chunk_size=100")
            let first = try await Self.whole(manager.stream(Request(url: small, options: Self.storing)).body)
            let cached = try await manager.stream(Request(url: small, options: Self.cacheOnly))
            #expect(cached.task.responseSource == .cache)
            #expect(try await Self.whole(cached.body) == first)
            #expect(first.readableBytes == 1000)
        }
    }

    @Test func aBodyReadWholeBeforeTheCallReturnsIsStoredToo() async throws {
        try await Self.run { server, manager in
            let url = server.url("/cache/600")
            let gathered = try await manager.stream(Request(url: url), gatheringBodiesUpTo: 64 * 1024)
            let body = try await Self.whole(gathered.body)
            let cached = try await manager.stream(Request(url: url))
            #expect(cached.task.responseSource == .cache)
            #expect(try await Self.whole(cached.body) == body)
            #expect(server.requestCount == 1)
        }
    }

    /// A stored response without freshness is revalidated: the server's 304 confirms it, and the
    /// stream reads the stored body.
    @Test func aStaleStoredResponseIsRevalidatedForAStream() async throws {
        try await Self.run { server, manager in
            let url = server.url("/etag/courier")
            let first = try await manager.stream(Request(url: url))
            let body = try await Self.whole(first.body)
            #expect(first.response.headerFields[.eTag] == "\"courier\"")
            let second = try await manager.stream(Request(url: url))
            #expect(second.task.responseSource == .revalidatedCache)
            #expect(second.response.status == .ok)
            #expect(try await Self.whole(second.body) == body)
            #expect(server.requestCount == 2)
        }
    }

    /// The session's will-cache hook is offered a stream's response, body whole, as a data task's;
    /// what it returns is stored (nil: nothing).
    @Test func theWillCacheHookIsOfferedAStreamsResponse() async throws {
        try await Self.run { server, manager in
            let offered = Recorder<CachedResponse>()
            manager.hooks.dataTaskWillCacheResponse = { _, _, cached in
                offered.append(cached)
                return cached.url.path == "/bytes/300" ? cached : nil
            }
            for path in ["/bytes/300", "/bytes/200"] {
                let stream = try await manager.stream(Request(url: server.url("\(path)?seed=2")))
                let body = try await Self.whole(stream.body)
                #expect(offered.all.last?.data == Data(buffer: body), "\(path)")
            }
            #expect(offered.all.count == 2)
            #expect(try await manager.stream(Request(url: server.url("/bytes/300?seed=2"), options: Self.cacheOnly)).task.responseSource == .cache)
            await #expect(throws: CourierError(.resourceUnavailable, "")) {
                _ = try await manager.stream(Request(url: server.url("/bytes/200?seed=2"), options: Self.cacheOnly))
            }
        }
    }

    /// `/events`: one event naming the hit, fresh for ten minutes and with a validator that never
    /// changes (a 304 to `If-None-Match`): every way a cache could answer it.
    static func eventsRoute(_ server: TestServer) -> Recorder<String> {
        let conditionals = Recorder<String>()
        let hits = Recorder<Int>()
        server.route("/events") { request in
            if let tag = request.headerFields[.ifNoneMatch] {
                conditionals.append(tag)
                var notModified = TestServer.Response(status: .notModified)
                notModified.headerFields[.eTag] = "\"events\""
                return notModified
            }
            hits.append(hits.all.count + 1)
            var response = TestServer.Response(body: Data("id: \(hits.all.count)\ndata: hit \(hits.all.count)\n\n".utf8))
            response.headerFields[.contentType] = "text/event-stream"
            response.headerFields[.cacheControl] = "max-age=600"
            response.headerFields[.eTag] = "\"events\""
            return response
        }
        return conditionals
    }

    /// An event stream is a live feed: a stream of one is not stored, and an `eventStream` is never
    /// answered from the cache, even when a data task stored the URL's response.
    @Test func anEventStreamIsNeitherStoredNorAnsweredFromTheCache() async throws {
        try await Self.run { server, manager in
            let conditionals = Self.eventsRoute(server)
            let url = server.url("/events")
            for _ in 0..<2 {
                let stream = try await manager.stream(Request(url: url))
                _ = try await Self.whole(stream.body)
                #expect(stream.task.responseSource == .network)
            }
            #expect(server.requestCount == 2)

            // Stored by a data task (a document like any other to it).
            #expect(try await manager.data(for: Request(url: url)).source == .network)
            #expect(try await manager.data(for: Request(url: url)).source == .cache)
            var events: [String] = []
            for try await event in manager.eventStream(Request(url: url), options: .init(retryDelay: .milliseconds(10))) {
                events.append(event.data)
                if events.count == 2 { break }
            }
            #expect(events == ["hit 4", "hit 5"], "from the server, not the stored hit 3")
            #expect(conditionals.all.isEmpty, "not revalidated either")
        }
    }

    /// The copies of all streams together stay within the cache's budget (its memory capacity):
    /// a stream that would go over it keeps nothing and is not stored, and a copy's bytes are
    /// given back when it is taken or its sink goes. Without I/O: the sinks alone.
    @Test func theCopiesOfAllStreamsTogetherStayWithinTheCachesBudget() {
        // 4,000 bytes: entries of at most 200, and 4,000 for all copies at once.
        let cache = ResponseCache(memoryCapacity: 4_000)
        #expect(cache.largestEntrySize == 200 && cache.streamCopyBudget == 4_000)
        let chunk = ByteBuffer(repeating: 0x2A, count: 199)
        // Sinks that make no sequence until a chunk is handed on (a consumer's sequence holds
        // its sink until the consumer takes it): here no chunk goes further than the copy.
        func makeSink() -> ResponseStreamSink { ResponseStreamSink(gatheringUpTo: 1) }
        var sinks: [ResponseStreamSink] = (0..<20).map { _ in
            let sink = makeSink()
            sink.recordHead(HTTPResponse(status: .ok), copy: .init(cache: cache, limit: cache.largestEntrySize))
            _ = sink.hold(chunk)
            return sink
        }
        #expect(cache.bytesKeptForStreams == 20 * 199)
        // The 21st would go over: it keeps nothing.
        let over = makeSink()
        over.recordHead(HTTPResponse(status: .ok), copy: .init(cache: cache, limit: cache.largestEntrySize))
        _ = over.hold(chunk)
        #expect(over.takeCacheCopy() == nil)
        #expect(cache.bytesKeptForStreams == 20 * 199)
        // One taken, one dropped with its sink: their bytes are free again.
        #expect(sinks[0].takeCacheCopy() == chunk)
        sinks.removeLast()
        #expect(cache.bytesKeptForStreams == 18 * 199)
        let next = makeSink()
        next.recordHead(HTTPResponse(status: .ok), copy: .init(cache: cache, limit: cache.largestEntrySize))
        _ = next.hold(chunk)
        #expect(next.takeCacheCopy() == chunk)
        // A longer body than an entry: dropped at once, its bytes given back.
        let long = makeSink()
        long.recordHead(HTTPResponse(status: .ok), copy: .init(cache: cache, limit: cache.largestEntrySize))
        _ = long.hold(chunk)
        _ = long.hold(chunk)
        #expect(long.takeCacheCopy() == nil)
        #expect(cache.bytesKeptForStreams == 18 * 199)
        sinks.removeAll()
        #expect(cache.bytesKeptForStreams == 0)
    }

    @Test func aStreamAskingForTheCacheAloneFailsWhenItHoldsNothing() async throws {
        try await Self.run { server, manager in
            let error = await #expect(throws: CourierError.self) {
                _ = try await manager.stream(Request(url: server.url("/get"), options: Self.cacheOnly))
            }
            #expect(error?.code == .resourceUnavailable)
            #expect(server.requestCount == 0)
        }
    }
}
