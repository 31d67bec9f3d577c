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

    /// A retry clock whose sleeps end only when their task is cancelled, recording each as it
    /// begins: the test knows when the stream waits to reconnect, and time never ends the wait.
    final class HeldRetryClock: RetryClock {
        let sleeps = Recorder<Duration>()
        var now: Duration { .zero }
        var date: Date { Date(timeIntervalSince1970: 1_700_000_000) }

        func sleep(for duration: Duration) async throws {
            self.sleeps.append(duration)
            try await untilCancelled()
        }
    }

    /// The server asks for 30 s between connections and ends its answer; the session is
    /// invalidated while the iterator waits to reconnect: the iteration fails with
    /// `sessionInvalidated` then. (It was checked once before the wait, and the wait ran its 30 s,
    /// the iterator holding the manager meanwhile; here the clock's wait would never end.)
    @Test(arguments: [true, false])
    func invalidatingTheSessionEndsTheWaitToReconnect(cancelingTasks: Bool) async throws {
        try await withTestServer { server in
            server.route("/retry-later") { _ in
                TestServer.Response(headerFields: [.contentType: "text/event-stream"], body: Data("retry: 30000\ndata: a\n\n".utf8))
            }
            try await withManager(baseURL: nil) { manager in
                let clock = HeldRetryClock()
                manager.retryClock = clock
                // The callback form, which returns at once.
                let invalidate: () -> Void = { manager.invalidate(cancelingTasks: cancelingTasks) }
                let ended = Recorder<(events: [String], error: CourierError?)>()
                await withTaskGroup(of: Void.self) { group in
                    group.addTask {
                        var events: [String] = []
                        do {
                            for try await event in manager.eventStream(Request(url: server.url("/retry-later"))) { events.append(event.data) }
                            ended.append((events: events, error: nil))
                        } catch {
                            ended.append((events: events, error: error as? CourierError))
                        }
                    }
                    #expect(await clock.sleeps.wait { !$0.isEmpty }, "the stream waits to reconnect")
                    invalidate()
                    #expect(await ended.wait { !$0.isEmpty }, "the invalidation ended the wait")
                    // A wait the invalidation left running ends here, so that a failure does not hang.
                    group.cancelAll()
                }
                #expect(clock.sleeps.all == [.seconds(30)])
                #expect(ended.all.first?.events == ["a"])
                #expect(ended.all.first?.error?.code == .sessionInvalidated)
                #expect(server.requestCount == 1)
            }
        }
    }

    /// A server that answers `retry: 0` each time and ends its answer: each reconnection still
    /// waits `minimumRetryDelay` (500 ms) on the session's clock, instead of none at all (a loop
    /// of connections as fast as the server ended them).
    @Test func aRetryOfZeroWaitsTheMinimum() async throws {
        try await withTestServer { server in
            server.route("/no-wait") { _ in
                TestServer.Response(headerFields: [.contentType: "text/event-stream"], body: Data("retry: 0\ndata: x\n\n".utf8))
            }
            try await withManager(baseURL: nil) { manager in
                let clock = ManualRetryClock()
                manager.retryClock = clock
                var events = 0
                for try await _ in manager.eventStream(Request(url: server.url("/no-wait")), options: .init(retryDelay: .milliseconds(1))) {
                    events += 1
                    if events == 4 { break }
                }
                #expect(clock.sleeps == [Duration](repeating: .milliseconds(500), count: 3), "one wait before each reconnection")
                #expect(server.requestCount == 4)
            }
        }
    }

    /// The connection breaks after an event's `id:` and before its blank line: the reconnection
    /// names the last event delivered, so the server sends the cut-off one again. (It named the
    /// cut-off one, and that event was never delivered.)
    @Test func aReconnectionNamesTheLastEventDeliveredNotOneCutOff() async throws {
        try await withTestServer { server in
            let lastEventIDs = NIOLockedValueBox<[String?]>([])
            server.route("/cut") { request in
                let seen = request.headerFields[HTTPField.Name("Last-Event-ID")!]
                let count = lastEventIDs.withLockedValue { $0.append(seen); return $0.count }
                let body = count == 1 ? "id: 1\ndata: a\n\nid: 2\ndata: b\n" : "id: 2\ndata: b\n\n"
                return TestServer.Response(headerFields: [.contentType: "text/event-stream"], body: Data(body.utf8))
            }
            try await withManager(baseURL: nil) { manager in
                var received: [String] = []
                for try await event in manager.eventStream(Request(url: server.url("/cut")), options: .init(retryDelay: .milliseconds(1))) {
                    received.append(event.data)
                    if received.count == 2 { break }
                }
                #expect(received == ["a", "b"])
                #expect(lastEventIDs.withLockedValue { $0 } == [nil, "1"])
            }
        }
    }

    /// A `Last-Event-ID` the caller set goes with the first request; once the server clears the
    /// last event ID (a bare `id` line), a reconnection sends none. (The caller's was sent again.)
    @Test func aLastEventIDTheServerClearedIsNotSent() async throws {
        try await withTestServer { server in
            let lastEventIDs = NIOLockedValueBox<[String?]>([])
            server.route("/cleared") { request in
                let seen = request.headerFields[HTTPField.Name("Last-Event-ID")!]
                let count = lastEventIDs.withLockedValue { $0.append(seen); return $0.count }
                let body = count == 1 ? "id\ndata: a\n\n" : "data: b\n\n"
                return TestServer.Response(headerFields: [.contentType: "text/event-stream"], body: Data(body.utf8))
            }
            try await withManager(baseURL: nil) { manager in
                var request = Request(url: server.url("/cleared"))
                request.headerFields[HTTPField.Name("Last-Event-ID")!] = "from the caller"
                var received: [ServerSentEvent] = []
                for try await event in manager.eventStream(request, options: .init(retryDelay: .milliseconds(1))) {
                    received.append(event)
                    if received.count == 2 { break }
                }
                #expect(received.map(\.data) == ["a", "b"])
                #expect(received.map(\.id) == [nil, nil])
                #expect(lastEventIDs.withLockedValue { $0 } == ["from the caller", nil])
            }
        }
    }

    /// A connection that brought an event and then ended is not one "without event": with no
    /// such connection allowed, the stream still reconnects after it. An iterator that threw
    /// returns nil afterwards, without asking the server again.
    @Test func aConnectionThatBroughtEventsIsNotCountedAndAFailureEndsTheIteration() async throws {
        try await withTestServer { server in
            let served = NIOLockedValueBox(0)
            server.route("/each") { _ in
                let count = served.withLockedValue { $0 += 1; return $0 }
                if count == 3 { return TestServer.Response(status: .notFound) }
                return TestServer.Response(headerFields: [.contentType: "text/event-stream"], body: Data("data: \(count)\n\n".utf8))
            }
            try await withManager(baseURL: nil) { manager in
                var iterator = manager.eventStream(
                    Request(url: server.url("/each")), options: .init(retryDelay: .milliseconds(1), maximumReconnectionsWithoutEvent: 0)
                ).makeAsyncIterator()
                let first = try await iterator.next()
                let second = try await iterator.next()
                #expect(first?.data == "1")
                #expect(second?.data == "2")
                var thrown: CourierError?
                do { _ = try await iterator.next() } catch { thrown = error as? CourierError }
                #expect(thrown?.code == .invalidResponse)
                let afterThrowing = try await iterator.next()
                #expect(afterThrowing == nil)
                #expect(server.requestCount == 3)
            }
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
