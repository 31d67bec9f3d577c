import Courier
import CourierTesting
import Foundation
import HTTPTypes
import Testing

/// Twins of the event-monitor tests of Alamofire's `Tests/DownloadTests.swift` (the rest of that
/// file is issue 17's). See `AlamofireUploadTests+Interceptors.swift` for how Courier's events
/// map to Alamofire's; a download has no serializer, so no serialized event.
@Suite("Conformance: Alamofire DownloadTests (events)")
struct AlamofireDownloadEventsConformanceTests {
    /// The events of one download, body progress left out.
    static func events(cancelling: Bool) async throws -> [String] {
        try await withTestServer { server in
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            let monitor = RecordingEventMonitor()
            manager.eventMonitors = [monitor]
            let _: CourierError? = await awaitCallback { finish in
                // A cancelled download asks for an answer that comes late, so the cancel wins.
                let task = manager.downloadTask(with: Request(url: server.url(cancelling ? "/delay/5" : "/bytes/1000"))) { _, file, error in
                    if let file { try? FileManager.default.removeItem(at: file) }
                    finish(error)
                }
                task.resume()
                if cancelling { task.cancel() }
            }
            await monitor.wait(for: "completed")
            return monitor.lines().filter { !$0.hasPrefix("sent") && !$0.hasPrefix("received") }
        }
    }

    @Test func testThatDownloadRequestTriggersAllAppropriateLifetimeEvents() async throws {
        // Alamofire's `didFinishDownloadingToURL` is Courier's "downloaded" (the file's name is new each time).
        let events = try await Self.events(cancelling: false).map { $0.hasPrefix("downloaded ") ? "downloaded" : $0 }
        #expect(events == ["created", "resumed", "response 200", "downloaded", "metrics", "completed ok"])
    }

    @Test func testThatCancelledDownloadRequestTriggersAllAppropriateLifetimeEvents() async throws {
        let events = try await Self.events(cancelling: true)
        #expect(events.first == "created")
        #expect(events.contains("cancelled"))
        #expect(Array(events.suffix(2)) == ["metrics", "completed cancelled"])
    }
}
