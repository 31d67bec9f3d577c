@testable import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import Testing

/// A WebSocket task's metrics (``WebSocketTask/metrics``: the opening handshake as its one
/// attempt) and what the session's event monitors hear of it, over real sockets.
@Suite("WebSocket metrics and events")
struct WebSocketMonitoringTests {
    /// The events a monitor heard, as lines, and the metrics it was given.
    final class Heard: Sendable {
        let lines = NIOLockedValueBox<[String]>([])
        let metrics = NIOLockedValueBox<TaskMetrics?>(nil)

        var monitor: ClosureEventMonitor {
            var monitor = ClosureEventMonitor()
            monitor.webSocketTaskDidCreate = { _ in self.add("create") }
            monitor.webSocketTaskDidResume = { _ in self.add("resume") }
            monitor.webSocketTaskDidOpen = { _, response in self.add("open \(response.status.code)") }
            monitor.webSocketTaskDidFinishCollectingMetrics = { _, metrics in
                self.metrics.withLockedValue { $0 = metrics }
                self.add("metrics")
            }
            monitor.webSocketTaskDidComplete = { _, error, code in self.add("complete \(error?.code.description ?? "-") \(code)") }
            // A SessionTask's events are not a WebSocket task's.
            monitor.taskDidCreate = { _ in self.add("session task") }
            return monitor
        }

        private func add(_ line: String) { self.lines.withLockedValue { $0.append(line) } }
    }

    private func url(_ server: TestServer, _ mode: String) -> URL {
        URL(string: server.baseURL.absoluteString.replacingOccurrences(of: "http://", with: "ws://") + "courier/websocket/\(mode)")!
    }

    @Test func anOpenedAndClosedTaskIsHeardAndHasTheHandshakeAsItsAttempt() async throws {
        try await withTestServer { server in
            let manager = SessionManager()
            let heard = Heard()
            manager.eventMonitors = [heard.monitor]
            let task = manager.webSocketTask(with: Request(url: self.url(server, "echo")))
            #expect(task.metrics == nil)
            try await task.send(.text("hi"))
            var messages = task.messages.makeAsyncIterator()
            #expect(try await messages.next() == .text("hi"))
            #expect(task.metrics == nil, "metrics come at the end")
            await task.close(code: .normalClosure, reason: "")
            #expect(await eventually { heard.lines.withLockedValue { $0.count } == 5 })
            #expect(heard.lines.withLockedValue { $0 } == ["create", "resume", "open 101", "metrics", "complete - 1000"])

            let metrics = try #require(task.metrics)
            #expect(metrics.response?.status.code == 101)
            #expect(metrics.error == nil)
            #expect(metrics.originalRequest.url == task.request.url)
            let attempt = try #require(metrics.attempts.first)
            #expect(metrics.attempts.count == 1)
            #expect(attempt.response?.status.code == 101)
            let exchangeStart = try #require(attempt.exchangeStart)
            let responseStart = try #require(attempt.responseStart)
            #expect(exchangeStart <= responseStart)
            #expect(responseStart <= attempt.end)
            #expect(attempt.end <= metrics.duration, "the task lasts past its handshake")
            #expect(attempt.transactions.count == 1)
            let handshake = try #require(attempt.transactions.first)
            #expect(handshake.connectStart != nil)
            #expect(handshake.responseStart == task.handshakeMetrics?.responseStart)
            #expect(heard.metrics.withLockedValue { $0?.duration } == metrics.duration)
            await manager.invalidate(cancelingTasks: true)
        }
    }

    @Test func aFailedHandshakeIsHeardWithItsErrorAndNoOpen() async throws {
        try await withTestServer { server in
            let manager = SessionManager()
            let heard = Heard()
            manager.eventMonitors = [heard.monitor]
            let task = manager.webSocketTask(with: Request(url: self.url(server, "bad-accept")))
            await #expect(throws: CourierError.self) { try await task.waitUntilOpen() }
            await task.waitUntilFinished()
            #expect(await eventually { heard.lines.withLockedValue { $0.count } == 4 })
            #expect(heard.lines.withLockedValue { $0 } == ["create", "resume", "metrics", "complete invalidResponse 1006"])
            let metrics = try #require(task.metrics)
            #expect(metrics.error?.code == .invalidResponse)
            let attempt = try #require(metrics.attempts.first)
            #expect(attempt.error?.code == .invalidResponse)
            #expect(attempt.transactions.first?.connectStart != nil, "the connection was made")
            await manager.invalidate(cancelingTasks: true)
        }
    }
}
