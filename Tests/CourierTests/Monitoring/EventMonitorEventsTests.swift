import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import Testing

@testable import Courier

/// The events Alamofire users expect from a monitor beyond a task's transfer: a retry the budget
/// refused, the cache answering and storing, a challenge and its answer, a download's file,
/// waiting for the network, the session's invalidation.
@Suite("Monitoring: budget, cache, challenge, download, connectivity and invalidation events")
struct EventMonitorEventsTests {
    @Test func aRetryTheBudgetRefusesIsAnEvent() async throws {
        try await withTestServer { server in
            _ = failingRoute(server, "/down", failures: .max)
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            let monitor = RecordingEventMonitor()
            manager.eventMonitors = [monitor]
            manager.interceptor = RetryPolicy(retryLimit: 3)
            // No retry to spend: the first request deposits a tenth of one.
            manager.retryBudget = RetryBudget(ratio: 0.1, minimumPerSecond: 0)
            await #expect(throws: CourierError.self) { try await manager.data(for: Request(url: server.url("/down"))) }
            await monitor.wait(for: "serialized")
            let lines = monitor.lines()
            #expect(lines.contains("budget refused transient-failure"), "\(lines)")
            #expect(!lines.contains { $0.hasPrefix("retry ") })
            #expect(lines.firstIndex(of: "budget refused transient-failure")! < lines.firstIndex(of: "completed ok")!)
        }
    }

    @Test func theCacheAnsweringAndStoringAreEvents() async throws {
        try await withTestServer { server in
            let hits = NIOLockedValueBox(0)
            server.route("/doc") { request in
                hits.withLockedValue { $0 += 1 }
                if request.value(forHTTPHeaderField: "If-None-Match") == "\"v1\"" {
                    return TestServer.Response(status: .notModified, headerFields: [.eTag: "\"v1\"", .cacheControl: "max-age=600"])
                }
                return TestServer.Response(status: .ok, headerFields: [.eTag: "\"v1\"", .cacheControl: "max-age=0"], body: Data("doc".utf8))
            }
            var configuration = SessionConfiguration.default
            configuration.responseCache = ResponseCache()
            let manager = SessionManager(configuration: configuration)
            defer { manager.invalidate(cancelingTasks: true) }
            let monitor = RecordingEventMonitor()
            manager.eventMonitors = [monitor]
            // Stored stale; revalidated by a 304 that makes it fresh for 10 minutes; then served.
            let sources = try await (0..<3).asyncMap { _ in try await manager.data(for: Request(url: server.url("/doc"))).source }
            #expect(sources == [.network, .revalidatedCache, .cache])
            await monitor.wait(for: "serialized", count: 3)
            let lines = monitor.lines().filter { $0.hasPrefix("stored") || $0.hasPrefix("from cache") }
            #expect(lines == ["stored 200", "stored 200", "from cache revalidatedCache 200", "from cache cache 200"])
            #expect(hits.withLockedValue { $0 } == 2)
        }
    }

    @Test func aChallengeAndItsAnswerAreAnEvent() async throws {
        try await withTestServer { server in
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            let monitor = RecordingEventMonitor()
            manager.eventMonitors = [monitor]
            var hooks = SessionManager.Hooks()
            hooks.taskDidReceiveAuthenticationChallenge = { _, _, challenge in
                .useCredential(HTTPCredential(user: "ann", password: challenge.previousFailureCount == 0 ? "bad" : "secret"))
            }
            manager.hooks = hooks
            let response = try await manager.data(for: Request(url: server.url("/basic-auth/ann/secret")))
            #expect(response.response.status == .ok)
            await monitor.wait(for: "serialized")
            let challenges = monitor.lines().filter { $0.hasPrefix("challenge") }
            #expect(challenges == ["challenge Fake Realm 0 use ann", "challenge Fake Realm 1 use ann"])
        }
    }

    @Test func aDownloadsFileIsAnEvent() async throws {
        try await withTestServer { server in
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            let monitor = RecordingEventMonitor()
            manager.eventMonitors = [monitor]
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-events-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let target = folder.appendingPathComponent("bytes.bin")
            let response = try await manager.download(Request(url: server.url("/bytes/1000")), to: DownloadDestination { _, _ in target })
            #expect(response.fileURL == target)
            await monitor.wait(for: "completed")
            let lines = monitor.lines()
            #expect(lines.contains("downloaded bytes.bin"), "\(lines)")
            #expect(lines.firstIndex(of: "downloaded bytes.bin")! < lines.firstIndex(of: "completed ok")!)
        }
    }

    @Test func waitingForTheNetworkIsAnEvent() async throws {
        let engine = ConnectivityRetryTests.engine()
        let manager = SessionManager(engine: engine)
        defer { manager.invalidate(cancelingTasks: true) }
        let monitor = RecordingEventMonitor()
        manager.eventMonitors = [monitor]
        let network = ScriptedMonitor()
        manager.reachabilityManager = network.manager()
        manager.connectivityRetry = ConnectivityRetryPolicy(maximumWait: connectivityWait)
        async let driver: Void = {
            await monitor.wait(for: "waiting for connectivity")
            network.send(.notReachable)
            network.send(.reachableViaEthernet)
        }()
        let response = try await manager.data(for: Request(url: ConnectivityRetryTests.url))
        await driver
        #expect(response.response.status == .ok)
        await monitor.wait(for: "serialized")
        let lines = monitor.lines()
        #expect(lines.firstIndex(of: "waiting for connectivity")! < lines.firstIndex(of: "retry connectivity 0.0 seconds")!, "\(lines)")
    }

    @Test func theSessionsInvalidationIsItsLastEvent() async throws {
        try await withTestServer { server in
            let manager = SessionManager()
            let monitor = RecordingEventMonitor()
            manager.eventMonitors = [monitor]
            _ = try await manager.data(for: Request(url: server.url("/get")))
            await manager.invalidate(cancelingTasks: false)
            await monitor.wait(for: "invalidated")
            #expect(monitor.lines().last == "invalidated")
            #expect(monitor.lines().filter { $0 == "invalidated" }.count == 1)
        }
    }
}

extension Range<Int> {
    /// The results of `body` for each element, in order, one after another.
    fileprivate func asyncMap<T>(_ body: (Int) async throws -> T) async rethrows -> [T] {
        var results: [T] = []
        for element in self { results.append(try await body(element)) }
        return results
    }
}
