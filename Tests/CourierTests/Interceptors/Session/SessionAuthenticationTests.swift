import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import Testing

@testable import Courier

@Suite("Session: authentication, one refresh for many refusals, and WWW-Authenticate challenges")
struct SessionAuthenticationTests {
    /// `/protected`: 200 for `Bearer token-1`, 401 otherwise; counts both.
    static func protectedRoute(_ server: TestServer) -> NIOLockedValueBox<(refused: Int, served: Int)> {
        let counts = NIOLockedValueBox((refused: 0, served: 0))
        server.route("/protected") { request in
            guard request.value(forHTTPHeaderField: "Authorization") == "Bearer token-1" else {
                counts.withLockedValue { $0.refused += 1 }
                return TestServer.Response(status: .unauthorized, headerFields: [.wwwAuthenticate: "Bearer"])
            }
            counts.withLockedValue { $0.served += 1 }
            return .json(#"{"ok":true}"#)
        }
        return counts
    }

    @Test("100 concurrent requests all refused with 401 first: exactly one refresh, 100 successes")
    func singleFlight() async throws {
        try await withTestServer { server in
            let counts = Self.protectedRoute(server)
            let authenticator = TestAuthenticator(holdingRefreshes: true)
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            manager.interceptor = AuthenticationInterceptor(authenticator: authenticator, credential: TestToken(access: "old"))
            try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for _ in 0..<100 {
                    group.addTask { try await manager.data(for: Request(url: server.url("/protected"))).response.status }
                }
                // The refresh is held until every request has been refused once.
                await authenticator.waitForHeldRefresh()
                #expect(await eventually(within: 30) { counts.withLockedValue { $0.refused } == 100 })
                authenticator.release()
                var statuses: [HTTPResponse.Status] = []
                for try await status in group { statuses.append(status) }
                #expect(statuses == Array(repeating: .ok, count: 100))
            }
            #expect(authenticator.refreshes == 1)
            #expect(counts.withLockedValue { $0 } == (refused: 100, served: 100))
        }
    }

    @Test("A failed refresh fails every waiting request with the refresh's error")
    func failedRefresh() async throws {
        try await withTestServer { server in
            _ = Self.protectedRoute(server)
            let authenticator = TestAuthenticator(holdingRefreshes: true, failWith: CourierError(.invalidResponse, "the token endpoint said no"))
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            manager.interceptor = AuthenticationInterceptor(authenticator: authenticator, credential: TestToken(access: "old"))
            await withTaskGroup(of: CourierError?.self) { group in
                for _ in 0..<20 {
                    group.addTask {
                        do throws(CourierError) {
                            _ = try await manager.data(for: Request(url: server.url("/protected")))
                            return nil
                        } catch {
                            return error
                        }
                    }
                }
                await authenticator.waitForHeldRefresh()
                authenticator.release()
                for await error in group {
                    #expect(error?.code == .invalidResponse)
                    #expect(error?.message == "the token endpoint said no")
                }
            }
            #expect(authenticator.refreshes == 1)
        }
    }

    @Test("Basic: a stored credential answers the challenge; the next request is authenticated at once")
    func basicChallenge() async throws {
        try await withTestServer { server in
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            let monitor = RecordingEventMonitor()
            manager.eventMonitors = [monitor]
            manager.credentials.set(HTTPCredential(user: "ann", password: "secret"), for: try #require(ProtectionSpace(url: server.baseURL)))
            let first = try await manager.data(for: Request(url: server.url("/basic-auth/ann/secret")))
            #expect(first.response.status == .ok)
            let second = try await manager.data(for: Request(url: server.url("/basic-auth/ann/secret")))
            #expect(second.response.status == .ok)
            await monitor.wait(for: "completed", count: 2)
            #expect(monitor.lines().filter { $0.hasPrefix("retry") } == ["retry challenge 0.0 seconds"])
            // A wrong credential: one answer, then the 401 stands.
            manager.credentials.removeAll()
            manager.credentials.set(HTTPCredential(user: "ann", password: "wrong"), for: try #require(ProtectionSpace(url: server.baseURL, realm: "Fake Realm")))
            await #expect(throws: CourierError(.unacceptableStatusCode, "")) {
                try await manager.data(for: Request(url: server.url("/basic-auth/bob/secret")))
            }
        }
    }

    @Test("The challenge hook (setTaskDidReceiveAuthenticationChallengeBlock:) answers, sees the space and the failure count, or cancels")
    func challengeHook() async throws {
        try await withTestServer { server in
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            let seen = NIOLockedValueBox<[(Int, String?, Int)]>([])
            var hooks = SessionManager.Hooks()
            hooks.taskDidReceiveAuthenticationChallenge = { _, task, challenge in
                seen.withLockedValue { $0.append((task.taskIdentifier, challenge.protectionSpace.realm, challenge.previousFailureCount)) }
                if task.currentRequest.url.path.hasPrefix("/basic-auth/cancel") { return .cancelAuthenticationChallenge }
                return .useCredential(HTTPCredential(user: "hook", password: challenge.previousFailureCount == 0 ? "bad" : "pw"))
            }
            manager.hooks = hooks
            let task = manager.dataTask(with: Request(url: server.url("/basic-auth/hook/pw")), completionHandler: nil)
            let done = AsyncStream<Void>.makeStream()
            let observer = NotificationCenter.default.addObserver(forName: .taskDidComplete, object: task, queue: nil) { _ in
                done.continuation.yield()
            }
            defer { NotificationCenter.default.removeObserver(observer) }
            task.resume()
            var iterator = done.stream.makeAsyncIterator()
            await iterator.next()
            #expect(task.response?.status == .ok)
            #expect(seen.withLockedValue { $0.map(\.2) } == [0, 1])
            #expect(seen.withLockedValue { $0.map(\.1) } == ["Fake Realm", "Fake Realm"])
            do throws(CourierError) {
                _ = try await manager.data(for: Request(url: server.url("/basic-auth/cancel/x")))
                Issue.record("not cancelled")
            } catch {
                #expect(error.code == .cancelled)
                #expect(error.response?.status == .unauthorized)
            }
        }
    }
}
