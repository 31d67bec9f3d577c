import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import Testing

/// Twins of the retry and event-monitor tests of Alamofire's `Tests/UploadTests.swift` (the rest
/// of that file is issue 17's). Courier's events are its `EventMonitor`'s (see
/// `RecordingEventMonitor`): created, resumed, response head, body progress, metrics, completed,
/// serialized; Alamofire's URLRequest-creation events have no counterpart (a task is made from
/// its request), and adaptation is reported only when an adapter ran.
@Suite("Conformance: Alamofire UploadTests (retry, events)")
struct AlamofireUploadInterceptorConformanceTests {
    /// Differs: the first attempt fails with a 503 (Alamofire's times out); the retried upload
    /// sends its body again.
    @Test func testThatDataUploadRetriesCorrectly() async throws {
        try await withTestServer { server in
            let hits = NIOLockedValueBox(0)
            server.route("/upload-once-refused") { request in
                let hit = hits.withLockedValue { $0 += 1; return $0 }
                if hit == 1 { return TestServer.Response(status: .serviceUnavailable) }
                return TestServer.Response(headerFields: [.contentType: "text/plain"], body: request.body)
            }
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            manager.responseSerializer = HTTPResponseSerializer()
            let questions = NIOLockedValueBox(0)
            manager.interceptor = Retrier { attempt in
                questions.withLockedValue { $0 += 1 }
                return attempt.retryCount == 0 ? .retry() : .doNotRetry
            }
            var request = Request(method: .post, url: server.url("/upload-once-refused"))
            request.headerFields[.contentType] = "text/plain"
            let (object, error): ((any Sendable)?, CourierError?) = await awaitCallback { finish in
                manager.uploadTask(with: request, fromData: Data("body".utf8)) { _, object, error in finish((object, error)) }.resume()
            }
            #expect(error == nil)
            #expect(questions.withLockedValue { $0 } == 1)
            #expect((object as? Data).map { String(decoding: $0, as: UTF8.self) } == "body")
        }
    }

    /// The events of one upload, body progress left out.
    static func events(cancelling: Bool) async throws -> [String] {
        try await withTestServer { server in
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            manager.responseSerializer = HTTPResponseSerializer()
            let monitor = RecordingEventMonitor()
            manager.eventMonitors = [monitor]
            let _: CourierError? = await awaitCallback { finish in
                // A cancelled upload asks for an answer that comes late, so the cancel wins even
                // when the thread stalls between `resume()` and `cancel()`.
                let path = cancelling ? "/delay/10" : "/post"
                let task = manager.uploadTask(with: Request(method: .post, url: server.url(path)), fromData: Data("data".utf8)) { _, _, error in
                    finish(error)
                }
                task.resume()
                if cancelling { task.cancel() }
            }
            await monitor.wait(for: "serialized")
            return monitor.lines().filter { !$0.hasPrefix("sent") && !$0.hasPrefix("received") }
        }
    }

    @Test func testThatUploadRequestTriggersAllAppropriateLifetimeEvents() async throws {
        #expect(try await Self.events(cancelling: false) == ["created", "resumed", "response 200", "metrics", "completed ok", "serialized ok"])
    }

    @Test func testThatCancelledUploadRequestTriggersAllAppropriateLifetimeEvents() async throws {
        let events = try await Self.events(cancelling: true)
        #expect(events.first == "created")
        #expect(events.contains("cancelled"))
        #expect(Array(events.suffix(3)) == ["metrics", "completed cancelled", "serialized cancelled"])
    }
}
