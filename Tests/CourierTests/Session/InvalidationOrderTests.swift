import CourierTesting
import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import Courier

/// `sessionDidInvalidate` comes last: after every task's serialization event, completion hook and
/// `.taskDidComplete`, for `async` calls as for callbacks. An `async` call's task leaves the
/// registry as it settles, on the caller's task, before the caller serializes, runs the hook and
/// posts; until then its end is a delivery the invalidated manager waits for.
@Suite("Invalidation waits for async calls' ends")
struct InvalidationOrderTests {
    enum Call: CaseIterable, Sendable { case data, download }

    @Test(arguments: Call.allCases)
    func theEngineStopsOnlyAfterAnAsyncCallsHookAndNotification(_ call: Call) async throws {
        try await withTestServer { server in
            let manager = SessionManager()
            let monitor = RecordingEventMonitor()
            manager.eventMonitors = [monitor]
            // The hook runs after the task settled (it left the registry) and before the
            // notification: invalidating there must leave the engine running until the call is done.
            let shutDownDuringHook = Recorder<Bool>()
            manager.hooks.taskDidComplete = { manager, _, _ in
                manager.invalidate(cancelingTasks: false)
                shutDownDuringHook.append(manager.registry.withLockedValue { $0.engineShutDown })
            }
            let invalidated = NotificationLog(names: [.sessionDidInvalidate], object: manager)
            let request = Request(url: server.url("/bytes/100"))
            switch call {
            case .data:
                let response = try await manager.response(for: request, serializer: DataResponseSerializer())
                #expect(response.value.count == 100)
            case .download:
                let response = try await manager.download(request)
                try? FileManager.default.removeItem(at: response.fileURL)
            }
            #expect(shutDownDuringHook.all == [false])
            await monitor.wait(for: "invalidated")
            #expect(await eventually { invalidated.names == [.sessionDidInvalidate] })
            let lines = monitor.lines().filter { !$0.hasPrefix("sent") && !$0.hasPrefix("received") }
            #expect(lines.last == "invalidated", "\(lines)")
            if call == .data { #expect(lines.contains("serialized ok"), "\(lines)") }
        }
    }
}
