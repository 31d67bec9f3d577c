@testable import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import NIOFoundationCompat
import Testing

/// Streams and the session's cache over every transport: a streamed response is stored as a data
/// task's is, from the copy of its body the session keeps as the chunks pass (whatever the wire
/// cut them into), and answers the next stream and data task; a stream that did not end whole is
/// not stored.
@Suite("Transport: streams and the cache")
struct TransportStreamCacheTests {
    /// A body of several reads on every wire, and within the default cache's largest entry.
    static let bodyLength = 150_000

    /// The whole body of a stream, read to its end.
    static func whole(_ body: ResponseBodyStream) async throws -> ByteBuffer {
        var whole = ByteBuffer()
        for try await chunk in body { whole.writeImmutableBuffer(chunk) }
        return whole
    }

    /// `/cacheable`: ``bodyLength`` bytes that differ on every hit, fresh for ten minutes.
    static func cacheableRoute(_ server: TestServer) {
        let hits = NIOLockedValueBox(0)
        server.route("/cacheable") { _ in
            let hit = hits.withLockedValue { value -> UInt8 in
                value += 1
                return UInt8(truncatingIfNeeded: value)
            }
            let body = Data((0..<Self.bodyLength).map { UInt8(truncatingIfNeeded: $0) &+ hit })
            var response = TestServer.Response(status: .ok, body: body)
            response.headerFields[.contentType] = "application/octet-stream"
            response.headerFields[.cacheControl] = "max-age=600"
            return response
        }
    }

    @Test(arguments: Transport.allCases)
    func aStreamedResponseIsStoredAndAnswersTheNextStreamAndDataTask(_ transport: Transport) async throws {
        try await transport.run(configure: { $0.responseCache = ResponseCache() }) { server, manager in
            Self.cacheableRoute(server)
            let request = Request(url: server.url("/cacheable"))
            let first = try await manager.stream(request)
            let body = try await Self.whole(first.body)
            #expect(body.readableBytes == Self.bodyLength)
            #expect(first.task.responseSource == .network)

            // The first stream's body ended after its task was settled: it is stored.
            let second = try await manager.stream(request)
            #expect(second.task.responseSource == .cache)
            #expect(second.response.status == .ok)
            #expect(try await Self.whole(second.body) == body, "the stored body is the one that came")
            #expect(manager.configuration.responseCache?.bytesKeptForStreams == 0, "taken when it was stored")
            let data = try await manager.data(for: request)
            #expect(data.source == .cache)
            #expect(data.value == Data(buffer: body))
            #expect(server.requestCount == 1)
        }
    }

    @Test(arguments: Transport.allCases)
    func aStreamThatDidNotEndWholeIsNotStored(_ transport: Transport) async throws {
        try await transport.run(configure: { $0.responseCache = ResponseCache() }) { server, manager in
            // A policy that serves stale responses makes any 200 worth storing: these routes say
            // nothing about caching.
            let storing = RequestOptions(cachePolicy: .returnCacheDataElseLoad)
            let cacheOnly = RequestOptions(cachePolicy: .returnCacheDataDontLoad)

            // Its consumer stopped: the task is cancelled after a chunk. The body cannot end
            // while the test looks (500 s; it is cancelled): with 5 s of it, a loaded CI machine
            // let it arrive whole before the consumer read its first chunk, and the cancel came
            // after the task's end.
            let slow = server.url("/courier/slow-body/10000?interval=0.05")
            let stopped = try await manager.stream(Request(url: slow, options: storing))
            var chunks = 0
            do {
                for try await _ in stopped.body {
                    chunks += 1
                    if chunks == 1 { stopped.task.cancel() }
                }
                Issue.record("the body ended though its task was cancelled")
            } catch {
                #expect((error as? CourierError)?.code == .cancelled)
            }
            #expect(chunks >= 1)

            // The server broke off: half of the announced length came.
            let truncated = server.url("/courier/truncated/1000")
            let broken = try await manager.stream(Request(url: truncated, options: storing))
            await #expect(throws: CourierError.self) { _ = try await Self.whole(broken.body) }

            for url in [slow, truncated] {
                await #expect(throws: CourierError(.resourceUnavailable, ""), "\(url.path)") {
                    _ = try await manager.stream(Request(url: url, options: cacheOnly))
                }
            }
            // Both copies were let go when their tasks failed, before the consumer saw the error.
            #expect(manager.configuration.responseCache?.bytesKeptForStreams == 0)
        }
    }
}
