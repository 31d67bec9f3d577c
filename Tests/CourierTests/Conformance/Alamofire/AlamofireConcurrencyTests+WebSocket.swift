import Courier
import CourierTesting
import Foundation
import Testing

/// Twins of the WebSocket tests of Alamofire's `Tests/ConcurrencyTests.swift`
/// (`WebSocketConcurrencyTests`), against TestServer's `payloads` route (Alamofire's `/websocket`:
/// one message, then a close frame with 1000).
@Suite("Conformance: Alamofire ConcurrencyTests (WebSocket)")
struct AlamofireWebSocketConcurrencyConformanceTests {
    typealias WebSocketTwins = AlamofireWebSocketConformanceTests

    /// Differs: there is no `AsyncSequence` of events: `messages` yields the messages alone, and
    /// the opening and the close are the task's (`waitUntilOpen()`, then `closeCode` and `error`
    /// once the messages ended). The twin counts Alamofire's four events through them: connected,
    /// the message, disconnected, completed.
    @Test func testThatMessageEventsCanBeStreamed() async throws {
        let events = try await WebSocketTwins.events("payloads")
        #expect(events.count == 4)
        #expect(events.map(\.kind) == ["connected nil", "message", "disconnected 1000 \"\"", "completed nil"])
    }

    /// Alamofire's `streamingMessages()` is `messages`, an `AsyncSequence` that ends after the
    /// closing handshake.
    @Test func testThatMessagesCanBeStreamed() async throws {
        try await WebSocketTwins.withManager { manager, server in
            let task = manager.webSocketTask(with: Request(url: WebSocketTwins.url(server, "payloads")))
            task.resume()
            let watchdog = WebSocketTwins.watchdog(task)
            defer { watchdog.cancel() }
            var messages: [WebSocketMessage] = []
            for try await message in task.messages { messages.append(message) }
            #expect(messages.count == 1)
            #expect(task.error == nil)
        }
    }
}
