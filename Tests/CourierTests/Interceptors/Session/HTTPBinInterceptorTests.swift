import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import Testing

@testable import Courier

/// The real httpbin `.ci/run` starts, when `COURIER_HTTPBIN_URL` names it.
let httpbinURL = ProcessInfo.processInfo.environment["COURIER_HTTPBIN_URL"].flatMap(URL.init(string:))

@Suite(
    "Interceptors against a real httpbin: status retries, Retry-After, Basic, Digest (MD5, SHA-256), Bearer",
    .enabled(if: httpbinURL != nil, "COURIER_HTTPBIN_URL is not set: .ci/run starts httpbin and sets it"))
struct HTTPBinInterceptorTests {
    static var base: URL { httpbinURL! }

    static func manager() -> (SessionManager, RecordingEventMonitor, ManualRetryClock) {
        let manager = SessionManager()
        let clock = ManualRetryClock()
        manager.retryClock = clock
        var policy = RetryPolicy(retryLimit: 2)
        policy.clock = clock
        manager.interceptor = policy
        let monitor = RecordingEventMonitor()
        manager.eventMonitors = [monitor]
        return (manager, monitor, clock)
    }

    @Test("/status/{408,500,502,503,504} are retried up to the limit; /status/404 and a POST are not")
    func statuses() async throws {
        let (manager, monitor, clock) = Self.manager()
        defer { manager.invalidate(cancelingTasks: true) }
        for code in [408, 500, 502, 503, 504] {
            let task = manager.dataTask(with: Request(url: Self.base.appendingPathComponent("status/\(code)")), completionHandler: nil)
            task.resume()
            await monitor.wait(for: "completed", count: [408, 500, 502, 503, 504].firstIndex(of: code)! + 1)
            #expect(monitor.lines(for: task).filter { $0.hasPrefix("retry transient-failure") }.count == 2, "status \(code)")
            #expect(task.response?.status.code == code)
        }
        #expect(clock.sleeps.count == 10)
        _ = try? await manager.data(for: Request(url: Self.base.appendingPathComponent("status/404")))
        _ = try? await manager.data(for: Request(method: .post, url: Self.base.appendingPathComponent("status/503")))
        #expect(clock.sleeps.count == 10)
    }

    @Test("Retry-After as httpbin sends it (seconds and an HTTP date) is what the policy waits")
    func retryAfter() async throws {
        let manager = SessionManager()
        defer { manager.invalidate(cancelingTasks: true) }
        let clock = ManualRetryClock()
        var policy = RetryPolicy()
        policy.clock = clock
        let date = HTTPDate.format(clock.date.addingTimeInterval(30))
        var components = URLComponents(url: Self.base.appendingPathComponent("response-headers"), resolvingAgainstBaseURL: false)!
        for (value, expected) in [("7", Duration.seconds(7)), (date, .seconds(30))] {
            components.queryItems = [URLQueryItem(name: "Retry-After", value: value)]
            let response = try await manager.data(for: Request(url: components.url!)).response
            #expect(response.headerFields[.retryAfter] == value)
            // httpbin answers these with 200; the same head with a 503 is what the policy retries.
            var refused = response
            refused.status = .serviceUnavailable
            let decision = try await policy.retry(FailedAttempt(request: Request(url: components.url!), response: refused))
            #expect(decision.delay == expected)
        }
    }

    @Test("/basic-auth: the stored credential answers httpbin's challenge")
    func basic() async throws {
        let manager = SessionManager()
        defer { manager.invalidate(cancelingTasks: true) }
        manager.credentials.set(HTTPCredential(user: "user", password: "passwd"), for: try #require(ProtectionSpace(url: Self.base)))
        let response = try await manager.response(
            for: Request(url: Self.base.appendingPathComponent("basic-auth/user/passwd")), serializer: JSONResponseSerializer())
        #expect((response.value as? [String: Any])?["authenticated"] as? Bool == true)
    }

    @Test("/digest-auth/auth/user/passwd/{MD5,SHA-256}: RFC 7616 Digest answered from the credential store", arguments: ["MD5", "SHA-256"])
    func digest(algorithm: String) async throws {
        let manager = SessionManager()
        defer { manager.invalidate(cancelingTasks: true) }
        let monitor = RecordingEventMonitor()
        manager.eventMonitors = [monitor]
        manager.credentials.set(HTTPCredential(user: "user", password: "passwd"), for: try #require(ProtectionSpace(url: Self.base)))
        let url = Self.base.appendingPathComponent("digest-auth/auth/user/passwd/\(algorithm)")
        let response = try await manager.response(for: Request(url: url), serializer: JSONResponseSerializer())
        #expect((response.value as? [String: Any])?["authenticated"] as? Bool == true)
        #expect(response.request.headerFields[.authorization]?.contains("algorithm=\(algorithm)") == true)
        await monitor.wait(for: "completed")
        #expect(monitor.lines().filter { $0.hasPrefix("retry") } == ["retry challenge 0.0 seconds"])
    }

    @Test("/bearer with an AuthenticationInterceptor: an expired credential is refreshed first, then applied")
    func bearer() async throws {
        let manager = SessionManager()
        defer { manager.invalidate(cancelingTasks: true) }
        let authenticator = TestAuthenticator()
        manager.interceptor = AuthenticationInterceptor(authenticator: authenticator, credential: TestToken(access: "stale", expired: true))
        let response = try await manager.response(for: Request(url: Self.base.appendingPathComponent("bearer")), serializer: JSONResponseSerializer())
        #expect((response.value as? [String: Any])?["token"] as? String == "token-1")
        #expect(authenticator.refreshes == 1)
    }
}
