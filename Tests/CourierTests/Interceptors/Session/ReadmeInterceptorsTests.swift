import Courier
import CourierTesting
import Foundation
import Logging
import Testing
import Tracing

/// The samples of the DocC articles Interceptors, retries and authentication
/// (Courier.docc/Interceptors.md) and Events, logs, metrics, traces (Courier.docc/Monitoring.md),
/// as written there (printing aside), so that they keep running.
@Suite("README: interceptors and monitors, as written")
struct ReadmeInterceptorsTests {
    struct Token: AuthenticationCredential {
        var access: String
        var requiresRefresh: Bool { false }
    }

    struct OAuth: Authenticator {
        func apply(_ token: Token, to request: inout Request) { request.headerFields[.authorization] = "Bearer \(token.access)" }
        func refresh(_ token: Token) async throws -> Token { Token(access: "fresh") }
        func isRequest(_ request: Request, authenticatedWith token: Token) -> Bool {
            request.headerFields[.authorization] == "Bearer \(token.access)"
        }
    }

    @Test func interceptorsAsWritten() async throws {
        let server = try await TestServer.start()
        let token = Token(access: "t")

        let manager = SessionManager()
        var policy = RetryPolicy()                       // 2 retries, backoff 0.5 s × 2ⁿ with full jitter
        policy.retryableStatusCodes.insert(429)          // 408, 500, 502, 503, 504 by default
        manager.interceptor = Interceptor(
            adapters: [RequestCompressor(encoding: .gzip)],                  // only for servers that take it
            retriers: [policy],
            interceptors: [AuthenticationInterceptor(authenticator: OAuth(), credential: token)])
        manager.retryBudget = RetryBudget(ratio: 0.1)    // retries at most 10 % of requests (+10/s)

        var request = Request(url: server.url("/anything"))
        request.interceptor = Adapter { request, _ in     // this request's own, after the session's
            var request = request
            request.headerFields[HTTPField.Name("X-Request-ID")!] = UUID().uuidString
            return request
        }
        let response = try await manager.data(for: request)

        // WWW-Authenticate Basic and Digest: credentials per protection space, or answer yourself
        manager.credentials.set(HTTPCredential(user: "ann", password: "secret"),
                                for: ProtectionSpace(url: server.baseURL, realm: "Fake Realm")!)
        manager.hooks.taskDidReceiveAuthenticationChallenge = { manager, task, challenge in
            challenge.previousFailureCount == 0 ? .performDefaultHandling : .cancelAuthenticationChallenge
        }
        #expect(response.response.status == .ok)
        let echoed = String(decoding: response.data ?? Data(), as: UTF8.self)
        #expect(echoed.contains("X-Request-Id") && echoed.contains("Bearer t"))
        // The sample's AuthenticationInterceptor puts a bearer token on every request, and a request
        // that carries an Authorization field is left to the retriers (the Interceptors article):
        // without it, the stored Basic credential answers the challenge.
        manager.interceptor = nil
        let authenticated = try await manager.data(for: Request(url: server.url("/basic-auth/ann/secret")))
        #expect(authenticated.response.status == .ok)

        manager.eventMonitors = [MetricsMonitor()]        // swift-metrics, through MetricsSystem's backend
        var monitor = ClosureEventMonitor()
        monitor.taskWillRetry = { task, attempt, delay, reason in print(task.taskIdentifier, reason, delay) }
        manager.eventMonitors.append(monitor)
        manager.logger = Logger(label: "api")             // or request.logger, per request
        manager.tracer = InstrumentationSystem.tracer     // else each task takes the one bootstrapped then
        let description = manager.dataTask(with: Request(url: server.url("/get")), completionHandler: nil).cURLDescription()
        #expect(description == "curl \(server.url("/get").absoluteString) \\\n  --header 'Accept-Encoding: deflate, gzip'")
        #expect(manager.eventMonitors.count == 2)

        await manager.invalidate(cancelingTasks: true)
        try await server.shutdown()
    }
}
