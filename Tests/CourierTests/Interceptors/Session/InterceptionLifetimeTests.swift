import CourierTesting
import Foundation
import HTTPTypes
import InMemoryTracing
import Testing

@testable import Courier

@Suite("Session: retried, monitored, authenticated and traced tasks go like any other")
struct InterceptionLifetimeTests {
    @Test("A task retried by a policy (and its adapters, monitors, span, refresh) holds nothing once done", arguments: [false, true])
    func everythingGoes(downloading: Bool) async throws {
        try await withTestServer { server in
            _ = failingRoute(server, "/flaky", failures: 2)
            let bag = WeakBag()
            let monitor = RecordingEventMonitor()
            do {
                let manager = SessionManager()
                manager.completionQueue = TestQueues.completion
                bag.add(manager)
                bag.add(manager.engine as AnyObject)
                bag.track(manager)
                let clock = ManualRetryClock()
                var policy = RetryPolicy(retryLimit: 3)
                policy.clock = clock
                manager.retryClock = clock
                let authenticator = TestAuthenticator()
                let authentication = AuthenticationInterceptor(authenticator: authenticator, credential: TestToken(access: "t", expired: true))
                bag.add(authentication)
                manager.interceptor = Interceptor(adapters: [RequestCompressor()], retriers: [policy], interceptors: [authentication])
                manager.eventMonitors = [monitor]
                manager.tracer = InMemoryTracer()
                manager.credentials.set(HTTPCredential(user: "u", password: "p"), for: ProtectionSpace(url: server.baseURL)!)
                if downloading {
                    let downloaded = try await manager.download(Request(url: server.url("/flaky")))
                    try? FileManager.default.removeItem(at: downloaded.fileURL)
                } else {
                    _ = try await manager.data(for: Request(method: .put, url: server.url("/flaky"), body: .data(Data(count: 4096))))
                }
                await monitor.wait(for: "completed")
                #expect(monitor.lines().filter { $0.hasPrefix("retry") }.count == 2)
                await manager.invalidate(cancelingTasks: false)
            }
            #expect(await eventually { bag.allReleased }, "still alive: \(bag.survivors)")
        }
    }
}
