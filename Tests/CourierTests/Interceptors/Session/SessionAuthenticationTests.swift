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

    /// A URL's user and password name that request's credential, also once the session answered
    /// the space for another user: `bob:…@` goes as bob (in the scheme the space was answered
    /// with, up front), a wrong password in the URL is tried and refused, and a URL without
    /// credentials gets the one that answered the space's challenge. Before, every later request went as the first
    /// user (found against nginx's auth_basic and Apache's mod_auth_digest).
    @Test func aURLsCredentialsWinOverTheSpacesRememberedOnes() async throws {
        try await withTestServer { server in
            let users = ["ann": "s3cret", "bob": "bobpw"]
            server.route("/area/secret") { request in
                let given = request.value(forHTTPHeaderField: "Authorization").flatMap { value -> (String, String)? in
                    guard value.hasPrefix("Basic "), let data = Data(base64Encoded: String(value.dropFirst(6))) else { return nil }
                    let pair = String(decoding: data, as: UTF8.self).split(separator: ":", maxSplits: 1).map(String.init)
                    return pair.count == 2 ? (pair[0], pair[1]) : nil
                }
                guard let (user, password) = given, users[user] == password else {
                    return TestServer.Response(status: .unauthorized, headerFields: [.wwwAuthenticate: #"Basic realm="area""#])
                }
                return .text(user)
            }
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            func url(_ userinfo: String) -> URL {
                URL(string: server.url("/area/secret").absoluteString.replacingOccurrences(of: "://", with: "://\(userinfo)"))!
            }
            func body(_ url: URL) async throws -> (String, HTTPResponse.Status) {
                let response = try await manager.response(for: Request(url: url), serializer: StringResponseSerializer())
                return (response.value, response.response.status)
            }
            let ann = try await body(url("ann:s3cret@"))
            #expect(ann.0 == "ann")
            let bob = try await body(url("bob:bobpw@"))
            #expect(bob.0 == "bob")
            do {
                _ = try await body(url("ann:WRONG@"))
                Issue.record("a wrong password in the URL was not refused")
            } catch {
                #expect((error as? CourierError)?.response?.status == .unauthorized)
            }
            let remembered = try await body(url(""))
            #expect(remembered.0 == "ann", "a URL without credentials takes the credential that answered the space's challenge")
        }
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
                #expect(await eventually { counts.withLockedValue { $0.refused } == 100 })
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

/// RFC 7616 3.3 over a socket: a Digest nonce the server calls stale.
@Suite("Session: a stale Digest nonce")
struct SessionDigestStaleNonceTests {
    /// `/digest/a`, `/b`, `/c`: answers 200 to a Digest `Authorization` from `ann` with the current nonce, 401
    /// with `stale=true` and the current nonce to one with an older nonce, and a plain challenge to
    /// a request without one. `/digest/always` calls every nonce stale and makes a new one each time.
    final class DigestRoute: Sendable {
        let nonce = NIOLockedValueBox(1)
        let requests = NIOLockedValueBox<[String?]>([])

        init(_ server: TestServer) {
            for path in ["/digest/a", "/digest/b", "/digest/c", "/digest/always"] {
                server.route(path) { request in self.answer(request) }
            }
        }

        func answer(_ request: TestServer.Request) -> TestServer.Response {
            let authorization = request.value(forHTTPHeaderField: "Authorization")
            self.requests.withLockedValue { $0.append(authorization) }
            let always = request.path.hasSuffix("/always")
            let current = self.nonce.withLockedValue { nonce in
                if always, authorization != nil { nonce += 1 }
                return "n\(nonce)"
            }
            func challenge(stale: Bool) -> TestServer.Response {
                let value = #"Digest realm="r", qop="auth", algorithm=SHA-256, nonce="\#(current)""# + (stale ? ", stale=true" : "")
                return TestServer.Response(status: .unauthorized, headerFields: [.wwwAuthenticate: value])
            }
            guard let authorization else { return challenge(stale: false) }
            guard authorization.hasPrefix("Digest "), authorization.contains(#"username="ann""#) else { return challenge(stale: false) }
            guard !always, authorization.contains(#"nonce="\#(current)""#) else { return challenge(stale: true) }
            return .json(#"{"ok":true}"#)
        }
    }

    @Test("A stale nonce on the session's own up-front Authorization is renewed once, without asking the hook")
    func theSessionsOwnStaleNonceIsRenewed() async throws {
        try await withTestServer { server in
            let route = DigestRoute(server)
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            let asked = NIOLockedValueBox(0)
            var hooks = SessionManager.Hooks()
            hooks.taskDidReceiveAuthenticationChallenge = { _, _, _ in
                asked.withLockedValue { $0 += 1 }
                return .useCredential(HTTPCredential(user: "ann", password: "pw"))
            }
            manager.hooks = hooks
            let first = try await manager.data(for: Request(url: server.url("/digest/a")))
            #expect(first.response.status == .ok)
            #expect(asked.withLockedValue { $0 } == 1)
            // The server moves on to a new nonce: the next request's up-front answer is stale.
            route.nonce.withLockedValue { $0 = 2 }
            let second = try await manager.data(for: Request(url: server.url("/digest/b")))
            #expect(second.response.status == .ok)
            #expect(asked.withLockedValue { $0 } == 1, "the hook is not asked for a stale nonce")
            let sent = route.requests.withLockedValue { $0 }
            #expect(sent.count == 4)
            #expect(sent[2]?.contains(#"nonce="n1""#) == true, "up front, with the nonce it had")
            #expect(sent[3]?.contains(#"nonce="n2""#) == true && sent[3]?.contains("nc=00000001") == true, "again, with the new nonce, counted afresh")
            // The next request uses the new nonce at once.
            _ = try await manager.data(for: Request(url: server.url("/digest/c")))
            #expect(route.requests.withLockedValue { $0.count } == 5)
        }
    }

    @Test("An Authorization the caller set stays the caller's: its stale nonce is the caller's 401")
    func theCallersAuthorizationIsTheCallers() async throws {
        try await withTestServer { server in
            let route = DigestRoute(server)
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            manager.credentials.set(HTTPCredential(user: "ann", password: "pw"), for: try #require(ProtectionSpace(url: server.baseURL)))
            var request = Request(url: server.url("/digest/a"))
            request.headerFields[.authorization] = #"Digest username="ann", realm="r", nonce="n0", uri="/digest/a", response="00""#
            do throws(CourierError) {
                _ = try await manager.data(for: request)
                Issue.record("the caller's stale Authorization was answered")
            } catch {
                #expect(error.code == .unacceptableStatusCode)
                #expect(error.response?.status == .unauthorized)
            }
            #expect(route.requests.withLockedValue { $0.count } == 1)
        }
    }

    @Test("A server that calls every nonce stale ends the task after a bounded number of answers, with an error naming the challenge")
    func aServerThatCallsEveryNonceStaleEndsTheTask() async throws {
        try await withTestServer { server in
            let route = DigestRoute(server)
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            manager.credentials.set(HTTPCredential(user: "ann", password: "pw"), for: try #require(ProtectionSpace(url: server.baseURL)))
            do throws(CourierError) {
                _ = try await manager.data(for: Request(url: server.url("/digest/always")))
                Issue.record("succeeded")
            } catch {
                #expect(error.code == .authenticationFailed)
                #expect(error.message.contains(#"realm "r""#) && error.message.contains("stale"), "\(error.message)")
                #expect(error.response?.status == .unauthorized)
            }
            let count = route.requests.withLockedValue { $0.count }
            #expect(count == HTTPAuthenticationResponder.maximumRounds + 1)
        }
    }
}
