import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import Testing

@testable import Courier

/// `Request.cancelsWithCallingTask` (Alamofire's `automaticallyCancelling:`): with `false`, a
/// caller cancelled while its request is on the wire still gets the response.
@Suite("Session: a request that does not cancel with its calling task, on a real socket")
struct CallingTaskCancellationTests {
    /// A route that answers once `release` is opened, after telling `arrived`.
    static func heldRoute(_ server: TestServer, _ path: String) -> (arrived: AsyncStream<Void>, release: AsyncStream<Void>.Continuation) {
        let arrived = AsyncStream<Void>.makeStream()
        let release = AsyncStream<Void>.makeStream()
        let waiting = NIOLockedValueBox<AsyncStream<Void>?>(release.stream)
        server.route(path) { _ in
            arrived.continuation.yield()
            if let stream = waiting.withLockedValue({ $0.take() }) {
                for await _ in stream { break }
            }
            return TestServer.Response(headerFields: [.contentType: "application/json"], body: Data(#"{"ok":true}"#.utf8))
        }
        return (arrived.stream, release.continuation)
    }

    @Test("Cancelled while its request waits for the answer, the caller still gets the response; with the default, the call is cancelled")
    func theRequestGoesOn() async throws {
        try await withTestServer { server in
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            let held = Self.heldRoute(server, "/held")
            var request = Request(url: server.url("/held"))
            request.cancelsWithCallingTask = false
            #expect(Request(url: server.url("/held")).cancelsWithCallingTask)
            // The calling task, cancelled mid-request; its value is awaited below.
            let caller = Task { () async throws(CourierError) -> DataResponse<Data> in try await manager.data(for: request) }
            var arrivals = held.arrived.makeAsyncIterator()
            _ = await arrivals.next()
            caller.cancel()
            held.release.yield()
            let response = try await caller.value
            #expect(response.response.status == .ok)
            #expect(response.data == Data(#"{"ok":true}"#.utf8))
            #expect(manager.tasks.isEmpty)

            // The default: the same wait ends with the call cancelled.
            let cancelled = Self.heldRoute(server, "/held-default")
            // The same with the default setting; awaited below.
            let defaultCaller = Task { () async throws(CourierError) -> DataResponse<Data> in
                try await manager.data(for: Request(url: server.url("/held-default")))
            }
            var defaultArrivals = cancelled.arrived.makeAsyncIterator()
            _ = await defaultArrivals.next()
            defaultCaller.cancel()
            await #expect { try await defaultCaller.value } throws: { ($0 as? CourierError)?.code == .cancelled }
            cancelled.release.yield()
        }
    }

    @Test("A caller cancelled before its call begins gets the cancellation at once: the task ends before it is resumed, and the request never goes out")
    func aCallerCancelledBeforeTheCallEndsAtOnce() async throws {
        try await withTestServer { server in
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            let hits = NIOLockedValueBox(0)
            server.route("/never") { _ in
                hits.withLockedValue { $0 += 1 }
                return TestServer.Response(body: Data("reached".utf8))
            }
            // The calling task cancels itself first: the cancellation handler cancels the task
            // before it is resumed, and the resume finds the end there. Awaited below.
            let caller = Task { () async throws(CourierError) -> DataResponse<Data> in
                withUnsafeCurrentTask { $0?.cancel() }
                return try await manager.data(for: Request(url: server.url("/never")))
            }
            await #expect { try await caller.value } throws: { ($0 as? CourierError)?.code == .cancelled }
            #expect(manager.tasks.isEmpty)
            // Only the later call reached the server.
            let after = try await manager.data(for: Request(url: server.url("/never")))
            #expect(after.data == Data("reached".utf8))
            #expect(hits.withLockedValue { $0 } == 1)
        }
    }

    @Test("A stream's head reaches a caller cancelled while it waited for it")
    func aStreamsHeadArrives() async throws {
        try await withTestServer { server in
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            let held = Self.heldRoute(server, "/held-stream")
            var request = Request(url: server.url("/held-stream"))
            request.cancelsWithCallingTask = false
            // The calling task, cancelled while it waits for the head; awaited below.
            let caller = Task { () async throws(CourierError) -> DataStreamResponse in try await manager.stream(request) }
            var arrivals = held.arrived.makeAsyncIterator()
            _ = await arrivals.next()
            caller.cancel()
            held.release.yield()
            // The body is read here: the setting covers the wait for the head.
            let stream = try await caller.value
            #expect(stream.response.status == .ok)
            var body = Data()
            for try await chunk in stream.body { body.append(contentsOf: chunk.readableBytesView) }
            #expect(body == Data(#"{"ok":true}"#.utf8))
        }
    }

    @Test("The setting is the request's value: a copy keeps it, a change to the copy leaves the original")
    func itIsAValue() {
        var request = Request(url: URL(string: "http://example.com/")!)
        request.cancelsWithCallingTask = false
        var copy = request
        copy.headerFields[.accept] = "application/json"
        #expect(!copy.cancelsWithCallingTask)
        copy.cancelsWithCallingTask = true
        #expect(!request.cancelsWithCallingTask)
    }
}
