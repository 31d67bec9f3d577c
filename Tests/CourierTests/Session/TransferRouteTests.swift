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
