import CourierTesting
import Foundation
import Logging
import Testing

@testable import Courier

/// Tasks that bring nothing of their own share their session's interception (one object for all
/// of them), and a change to the session's settings is seen by the tasks made after it.
@Suite("Task interception, shared")
struct TaskInterceptionSharingTests {
    static func interception(of task: SessionTask) -> TaskInterception { task.delegate.interception }

    @Test func plainTasksShareOneUntilASettingChanges() async throws {
        let manager = SessionManager(engine: StubEngine())
        let url = URL(string: "http://example.com/")!
        let first = manager.dataTask(with: Request(url: url), completionHandler: nil)
        let second = manager.dataTask(with: Request(url: url), completionHandler: nil)
        #expect(Self.interception(of: first) === Self.interception(of: second))

        manager.interceptor = Adapter { request, _ in request }
        let afterInterceptor = manager.dataTask(with: Request(url: url), completionHandler: nil)
        #expect(Self.interception(of: afterInterceptor) !== Self.interception(of: first), "a new interceptor: made again")
        #expect(Self.interception(of: afterInterceptor).chain.adapts)

        manager.connectivityRetry = ConnectivityRetryPolicy(maximumWait: .seconds(1))
        let afterRetry = manager.dataTask(with: Request(url: url), completionHandler: nil)
        #expect(Self.interception(of: afterRetry) !== Self.interception(of: afterInterceptor))
        #expect(Self.interception(of: afterRetry).connectivity != nil)

        manager.eventMonitors = [ClosureEventMonitor()]
        let afterMonitor = manager.dataTask(with: Request(url: url), completionHandler: nil)
        #expect(Self.interception(of: afterMonitor).monitors != nil, "a new monitor: made again")
        await manager.invalidate(cancelingTasks: true)
    }

    @Test func aTaskWithItsOwnLoggerOrInterceptorGetsItsOwn() async throws {
        let manager = SessionManager(engine: StubEngine())
        let url = URL(string: "http://example.com/")!
        let plain = manager.dataTask(with: Request(url: url), completionHandler: nil)
        var logged = Request(url: url)
        logged.logger = Logger(label: "test")
        let withLogger = manager.dataTask(with: logged, completionHandler: nil)
        var intercepted = Request(url: url)
        intercepted.interceptor = Adapter { request, _ in request }
        let withInterceptor = manager.dataTask(with: intercepted, completionHandler: nil)
        #expect(Self.interception(of: withLogger) !== Self.interception(of: plain))
        #expect(Self.interception(of: withLogger).logger[metadataKey: "courier-task-id"] == "\(withLogger.taskIdentifier)")
        #expect(Self.interception(of: withInterceptor) !== Self.interception(of: plain))
        #expect(Self.interception(of: withInterceptor).chain.adapts)
        #expect(!Self.interception(of: plain).chain.adapts, "the shared one took nothing of the others")
        await manager.invalidate(cancelingTasks: true)
    }

    @Test func aTaskWithItsOwnMonitorsGetsItsOwnAfterTheSessions() async throws {
        let manager = SessionManager(engine: StubEngine())
        let url = URL(string: "http://example.com/")!
        let plain = manager.dataTask(with: Request(url: url), completionHandler: nil)
        var monitored = Request(url: url)
        #expect(monitored.eventMonitors.isEmpty)
        monitored.eventMonitors.append(ClosureEventMonitor())
        let copy = monitored
        monitored.eventMonitors = []
        #expect(copy.eventMonitors.count == 1, "copy-on-write")
        #expect(monitored.eventMonitors.isEmpty)
        let withMonitor = manager.dataTask(with: copy, completionHandler: nil)
        #expect(Self.interception(of: plain).monitors == nil, "the session has none")
        #expect(Self.interception(of: withMonitor) !== Self.interception(of: plain))
        #expect(Self.interception(of: withMonitor).monitors?.isEmpty == false)
        // A request whose monitors were all removed is plain again.
        let emptied = manager.dataTask(with: monitored, completionHandler: nil)
        #expect(Self.interception(of: emptied) === Self.interception(of: plain))
        await manager.invalidate(cancelingTasks: true)
    }
}
