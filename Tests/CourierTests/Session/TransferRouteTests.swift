import Courier
import CourierTesting
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing

@Suite("Server-sent events over a real socket")
struct EventStreamTests {
    @Test func eventsArriveParsed() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                var events: [ServerSentEvent] = []
                for try await event in manager.eventStream(Request(url: server.url("/courier/sse?count=3&retry=40"))) {
                    events.append(event)
                    if events.count == 3 { break }
                }
                #expect(events == (1...3).map { ServerSentEvent(event: "tick", data: "event \($0)\nof 3", id: String($0), retry: .milliseconds(40)) })
            }
        }
    }

    @Test(arguments: ["close-after", "drop-after"])
    func aLostConnectionIsResumedWithLastEventID(_ ending: String) async throws {
        try await withTestServer(TestServer.Configuration.recording) { server in
            try await withManager(baseURL: server.baseURL) { manager in
                var ids: [String] = []
                let stream = manager.eventStream(
                    Request(url: server.url("/courier/sse?count=5&retry=20&\(ending)=2")),
                    options: .init(retryDelay: .seconds(30)))
                for try await event in stream { ids.append(event.id ?? "?") }
                #expect(ids == ["1", "2", "3", "4", "5"], "no event lost or repeated")
                let sent = server.receivedRequests.map { $0.value(forHTTPHeaderField: "Last-Event-ID") }
                #expect(sent == [nil, "2", "4", "5"], "each reconnection names the last event; the server's 204 ends the stream")
                #expect(server.receivedRequests.allSatisfy { $0.value(forHTTPHeaderField: "Accept") == "text/event-stream" })
            }
        }
    }

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
