import Courier
import CourierTesting
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing

@Suite("Server-sent events over a real socket")
struct EventStreamTests {

    @Test func somethingElseThanAnEventStreamIsATypedError() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let error = await #expect(throws: CourierError.self) {
                    for try await _ in manager.eventStream(Request(url: server.url("/get"))) {}
                }
                #expect(error?.code == .invalidResponse)
                #expect(error?.message.contains("application/json") == true)
            }
        }
    }

    // A generous limit: the whole suite, run in parallel on two cores, takes tests a minute.
    @Test(.timeLimit(.minutes(5)))
    func aStreamWhoseSessionIsInvalidatedEndsWithoutReconnecting() async throws {
        // Each reconnection of an invalidated session failed at once, and the iteration went on
        // for ever, a retry delay apart (the time limit turns that into a failure).
        try await withTestServer { server in
            server.route("/one-event") { _ in
                TestServer.Response(headerFields: [.contentType: "text/event-stream"], body: Data("data: one\n\n".utf8))
            }
            let manager = SessionManager()
            // The callback form, which does not wait for the stream's task.
            let invalidate: () -> Void = { manager.invalidate(cancelingTasks: false) }
            var events: [String] = []
            let error = await #expect(throws: CourierError.self) {
                for try await event in manager.eventStream(Request(url: server.url("/one-event")), options: .init(retryDelay: .seconds(3600))) {
                    events.append(event.data)
                    invalidate()
                }
            }
            #expect(events == ["one"])
            #expect(error?.code == .sessionInvalidated)
            #expect(server.requestCount == 1)
            await manager.invalidate(cancelingTasks: true)
        }
    }

    @Test func reconnectionsWithoutEventsAreBounded() async throws {
        try await withManager(baseURL: nil) { manager in
            let stream = manager.eventStream(
                Request(url: URL(string: "http://127.0.0.1:\(closedPort())/events")!),
                options: .init(retryDelay: .milliseconds(10), maximumReconnectionsWithoutEvent: 2))
            let error = await #expect(throws: CourierError.self) {
                for try await _ in stream {}
            }
            #expect(error?.code == .connectionFailed)
        }
    }
}
