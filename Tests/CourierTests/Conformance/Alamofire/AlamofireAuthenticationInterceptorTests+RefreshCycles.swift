import Courier
import CourierTesting
import Foundation
import HTTPTypes
import Logging
import NIOConcurrencyHelpers
import Testing

/// Twins of Alamofire's AuthenticationInterceptorTests that follow the refresh through several
/// attempts and requests: a server whose `/401` always refuses and `/200` always accepts, and which
/// records the path and `Authorization` of every request it gets (Alamofire reads them from the
/// response's request and `retryCount`); a `PathAdapter` that sends the attempts of one request to
/// the paths it is given, in order.
extension AlamofireAuthenticationInterceptorConformanceTests {
    struct Hit: Equatable, CustomStringConvertible {
        var path: String
        var authorization: String?
        var description: String { "\(self.path) \(self.authorization ?? "-")" }
    }

    /// Alamofire's PathAdapter: attempt n of a request goes to `paths[n]`.
    struct PathAdapter: RequestAdapter {
        let server: TestServer
        let paths: NIOLockedValueBox<[String]>

        init(server: TestServer, paths: [String]) {
            self.server = server
            self.paths = NIOLockedValueBox(paths)
        }

        func adapt(_ request: Request, using context: AdaptationContext) async throws -> Request {
            var request = request
            // Past its paths (more attempts than the twin expects) it asks for a path the server
            // does not have: the test fails on the 404 instead of trapping.
            request.url = self.server.url(self.paths.withLockedValue { $0.isEmpty ? "/no-more-paths" : $0.removeFirst() })
            return request
        }
    }

    /// A server answering `/401` and `/200`, a manager, and the requests the server got.
    static func withStatusServer<T: Sendable>(
        onHit: @escaping @Sendable (Int) -> Void = { _ in },
        _ body: (SessionManager, TestServer, NIOLockedValueBox<[Hit]>) async throws -> T
    ) async throws -> T {
        try await withTestServer { server in
            let hits = NIOLockedValueBox<[Hit]>([])
            for status in [HTTPResponse.Status.unauthorized, .ok] {
                let path = "/\(status.code)"
                server.route(path) { request in
                    let count = hits.withLockedValue {
                        $0.append(Hit(path: path, authorization: request.headerFields[.authorization]))
                        return $0.count
                    }
                    onHit(count)
                    return TestServer.Response(status: status)
                }
            }
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            manager.responseSerializer = HTTPResponseSerializer()
            return try await body(manager, server, hits)
        }
    }

    /// Sends one GET of `path` with `interceptor` (a `PathAdapter` in it chooses the path of each
    /// attempt); its error.
    static func send(
        _ path: String = "/200", on server: TestServer, _ manager: SessionManager, with interceptor: any RequestInterceptor,
        logger: Logger? = nil
    ) async -> CourierError? {
        var request = Request(url: server.url(path))
        request.interceptor = interceptor
        request.logger = logger
        return await awaitCallback { finish in manager.dataTask(with: request) { _, _, error in finish(error) }.resume() }
    }

    static func hits(_ list: String...) -> [Hit] {
        list.map { item in
            let parts = item.split(separator: " ").map(String.init)
            return Hit(path: parts[0], authorization: parts.count > 1 ? parts[1] : nil)
        }
    }

    // MARK: Adapt

    @Test func testThatInterceptorThrowsMissingCredentialErrorWhenCredentialIsNilAndRequestShouldBeRetried() async throws {
        try await Self.withStatusServer { manager, server, hits in
            let authenticator = TestAuthenticator()
            let interceptor = AuthenticationInterceptor(authenticator: authenticator, credential: TestCredential())
            // The credential goes once the response came (Alamofire removes it in a validator).
            var hooks = manager.hooks
            hooks.dataTaskDidReceiveResponse = { _, _, _ in
                interceptor.credential = nil
                return .allow
            }
            manager.hooks = hooks
            let error = await Self.send("/401", on: server, manager, with: interceptor)
            #expect(error?.code == .missingCredential)
            #expect(error?.response?.status == .unauthorized)
            #expect(hits.withLockedValue { $0 } == Self.hits("/401 a0"))
            #expect(authenticator.snapshot == TestAuthenticator.Counts(apply: 1, refresh: 0, didRequestFail: 1, isRequestAuthenticated: 0))
        }
    }

    /// Alamofire's twin explains its result by its replaying a deferred request through the
    /// interceptor alone; Courier's adapter waits for the refresh within the adapter chain, and
    /// the attempts come out the same: the first (refreshed in advance to `a1`) is refused, the
    /// retry refreshes to `a2` and goes to the adapter's second path.
    @Test func testThatInterceptorTriggersRetryRefreshAfterProactiveRefreshUsesStaleURL() async throws {
        try await Self.withStatusServer { manager, server, hits in
            let authenticator = TestAuthenticator()
            let interceptor = AuthenticationInterceptor(authenticator: authenticator, credential: TestCredential(requiresRefresh: true))
            let paths = PathAdapter(server: server, paths: ["/401", "/200"])
            let error = await Self.send(on: server, manager, with: Interceptor(adapters: [paths, interceptor], retriers: [interceptor]))
            #expect(error == nil)
            #expect(hits.withLockedValue { $0 } == Self.hits("/401 a1", "/200 a2"))
            #expect(authenticator.snapshot == TestAuthenticator.Counts(apply: 2, refresh: 2, didRequestFail: 1, isRequestAuthenticated: 1))
        }
    }

    @Test func testThatInterceptorThrowsExcessiveRefreshErrorFromAdaptPath() async throws {
        try await Self.withStatusServer { manager, server, hits in
            let authenticator = TestAuthenticator(refreshed: TestCredential(accessToken: "a1", requiresRefresh: true))
            let interceptor = AuthenticationInterceptor(
                authenticator: authenticator, credential: TestCredential(requiresRefresh: true),
                refreshWindow: .init(interval: .seconds(30), maximumAttempts: 1))
            let error = await Self.send(on: server, manager, with: interceptor)
            #expect(error?.code == .excessiveRefresh)
            #expect(hits.withLockedValue { $0 } == [])
            #expect(authenticator.snapshot == TestAuthenticator.Counts(apply: 0, refresh: 1, didRequestFail: 0, isRequestAuthenticated: 0))
        }
    }

    @Test func testThatInterceptorThrowsExcessiveRefreshErrorToAllDeferredAdaptOperationsOnReplay() async throws {
        try await Self.withStatusServer { manager, server, hits in
            let authenticator = TestAuthenticator(refreshed: TestCredential(accessToken: "a1", requiresRefresh: true))
            let interceptor = AuthenticationInterceptor(
                authenticator: authenticator, credential: TestCredential(requiresRefresh: true),
                refreshWindow: .init(interval: .seconds(30), maximumAttempts: 1))
            let errors = await withTaskGroup(of: CourierError?.self) { group in
                for _ in 0..<3 { group.addTask { await Self.send(on: server, manager, with: interceptor) } }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(errors.map { $0?.code } == Array(repeating: .excessiveRefresh, count: 3))
            #expect(hits.withLockedValue { $0 } == [])
            #expect(authenticator.snapshot == TestAuthenticator.Counts(apply: 0, refresh: 1, didRequestFail: 0, isRequestAuthenticated: 0))
        }
    }

    // MARK: Additional coverage

    @Test func testThatInterceptorHandlesMultipleSuccessiveRefreshCyclesCorrectly() async throws {
        try await Self.withStatusServer { manager, server, hits in
            let authenticator = TestAuthenticator()
            let interceptor = AuthenticationInterceptor(authenticator: authenticator, credential: TestCredential())
            let first = PathAdapter(server: server, paths: ["/401", "/200"])
            #expect(await Self.send(on: server, manager, with: Interceptor(adapters: [first, interceptor], retriers: [interceptor])) == nil)
            #expect(hits.withLockedValue { $0 } == Self.hits("/401 a0", "/200 a1"))
            #expect(authenticator.snapshot.refresh == 1)

            let second = PathAdapter(server: server, paths: ["/401", "/200"])
            #expect(await Self.send(on: server, manager, with: Interceptor(adapters: [second, interceptor], retriers: [interceptor])) == nil)
            #expect(hits.withLockedValue { $0 } == Self.hits("/401 a0", "/200 a1", "/401 a1", "/200 a2"))
            #expect(authenticator.snapshot == TestAuthenticator.Counts(apply: 4, refresh: 2, didRequestFail: 2, isRequestAuthenticated: 2))
        }
    }

    /// Differs: a request adapted while a refresh started by a refusal is under way waits for
    /// that refresh and is sent with the new credential (Courier's adapter waits for any refresh
    /// under way: the credential being refreshed was just refused); Alamofire sends it at once
    /// with the old one. As in Alamofire, both requests succeed with one refresh.
    @Test func testThatInterceptorAdaptsNewRequestWithoutDeferringWhileRetryPathRefreshIsInProgress() async throws {
        try await Self.withStatusServer { manager, server, hits in
            let started = OneShotGate()
            let release = OneShotGate()
            let authenticator = TestAuthenticator(onRefresh: {
                started.open()
                _ = await release.wait()
            })
            let interceptor = AuthenticationInterceptor(authenticator: authenticator, credential: TestCredential())
            let paths = PathAdapter(server: server, paths: ["/401", "/200"])
            async let first = Self.send(on: server, manager, with: Interceptor(adapters: [paths, interceptor], retriers: [interceptor]))
            try #require(await started.wait(), "the first request's refresh never started")

            // The refresh is held until the second request says it waits for it (or, were it
            // not to wait, until it is done).
            let logger = Logger(label: "second") { _ in
                CallbackLogHandler { message in
                    if message.contains("waiting for the credential's refresh") { release.open() }
                }
            }
            let second = await Self.send("/200", on: server, manager, with: interceptor, logger: logger)
            release.open()
            #expect(second == nil)
            #expect(await first == nil)
            #expect(hits.withLockedValue { $0 } == Self.hits("/401 a0", "/200 a1", "/200 a1"))
            #expect(authenticator.snapshot == TestAuthenticator.Counts(apply: 3, refresh: 1, didRequestFail: 1, isRequestAuthenticated: 1))
        }
    }

    @Test func testThatInterceptorAllowsNewRefreshAfterExternalCredentialUpdateFollowingRetryPathFailure() async throws {
        try await Self.withStatusServer { manager, server, hits in
            let authenticator = TestAuthenticator(fails: true)
            let interceptor = AuthenticationInterceptor(authenticator: authenticator, credential: TestCredential())
            let first = await Self.send("/401", on: server, manager, with: interceptor)
            #expect(first?.message == Self.refreshFailure.message)
            #expect(authenticator.snapshot.refresh == 1)

            interceptor.credential = TestCredential(accessToken: "ext")
            let second = await Self.send("/401", on: server, manager, with: interceptor)
            #expect(second?.message == Self.refreshFailure.message)
            #expect(hits.withLockedValue { $0 } == Self.hits("/401 a0", "/401 ext"))
            #expect(authenticator.snapshot == TestAuthenticator.Counts(apply: 2, refresh: 2, didRequestFail: 2, isRequestAuthenticated: 2))
        }
    }

    @Test func testThatInterceptorAdaptsDirectlyAfterExternalCredentialUpdateFollowingProactiveRefreshFailure() async throws {
        try await Self.withStatusServer { manager, server, hits in
            let authenticator = TestAuthenticator(fails: true)
            let interceptor = AuthenticationInterceptor(authenticator: authenticator, credential: TestCredential(requiresRefresh: true))
            let first = await Self.send(on: server, manager, with: interceptor)
            #expect(first?.message == Self.refreshFailure.message)
            #expect(authenticator.snapshot.refresh == 1)

            interceptor.credential = TestCredential(accessToken: "ext", requiresRefresh: false)
            #expect(await Self.send(on: server, manager, with: interceptor) == nil)
            #expect(hits.withLockedValue { $0 } == Self.hits("/200 ext"))
            #expect(authenticator.snapshot == TestAuthenticator.Counts(apply: 1, refresh: 1, didRequestFail: 0, isRequestAuthenticated: 0))
        }
    }

    @Test func testThatExcessiveRefreshTimestampsArePreservedAfterFailedStateIsClearedByAdapt() async throws {
        try await Self.withStatusServer { manager, server, hits in
            let authenticator = TestAuthenticator()
            let interceptor = AuthenticationInterceptor(
                authenticator: authenticator, credential: TestCredential(),
                refreshWindow: .init(interval: .seconds(30), maximumAttempts: 1))
            let paths = PathAdapter(server: server, paths: ["/401", "/200"])
            #expect(await Self.send(on: server, manager, with: Interceptor(adapters: [paths, interceptor], retriers: [interceptor])) == nil)
            #expect(authenticator.snapshot.refresh == 1)

            // The window is spent: a refusal fails the request and the interceptor.
            #expect(await Self.send("/401", on: server, manager, with: interceptor)?.code == .excessiveRefresh)
            // A new request clears the failed state when it adapts; its refusal meets the same window.
            #expect(await Self.send("/401", on: server, manager, with: interceptor)?.code == .excessiveRefresh)
            #expect(hits.withLockedValue { $0 } == Self.hits("/401 a0", "/200 a1", "/401 a1", "/401 a1"))
            #expect(authenticator.snapshot.refresh == 1)
        }
    }

    @Test func testThatInterceptorThrowsExcessiveRefreshErrorToAllParallelRequestsAfterExceedingRefreshWindow() async throws {
        // The one refresh allowed waits until the three first attempts reached the server, so
        // that all three are refused with `a0` (as in Alamofire's run).
        let firstAttempts = OneShotGate()
        try await Self.withStatusServer(onHit: { if $0 == 3 { firstAttempts.open() } }) { manager, server, hits in
            let authenticator = TestAuthenticator(onRefresh: {
                // Bounded: should the three attempts not all arrive, the refresh goes on and the test fails.
                _ = await firstAttempts.wait()
            })
            let interceptor = AuthenticationInterceptor(
                authenticator: authenticator, credential: TestCredential(),
                refreshWindow: .init(interval: .seconds(30), maximumAttempts: 1))
            let errors = await withTaskGroup(of: CourierError?.self) { group in
                for _ in 0..<3 {
                    let paths = PathAdapter(server: server, paths: ["/401", "/401"])
                    group.addTask { await Self.send(on: server, manager, with: Interceptor(adapters: [paths, interceptor], retriers: [interceptor])) }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(errors.map { $0?.code } == Array(repeating: .excessiveRefresh, count: 3))
            #expect(hits.withLockedValue { $0 }.map(\.description).sorted() == ["/401 a0", "/401 a0", "/401 a0", "/401 a1", "/401 a1", "/401 a1"])
            #expect(authenticator.snapshot == TestAuthenticator.Counts(apply: 6, refresh: 1, didRequestFail: 6, isRequestAuthenticated: 6))
        }
    }

    @Test func testThatInterceptorAllowsProactiveRefreshFromFailedStateUnlikeRetryPath() async throws {
        try await Self.withStatusServer { manager, server, hits in
            let authenticator = TestAuthenticator(fails: true)
            let interceptor = AuthenticationInterceptor(authenticator: authenticator, credential: TestCredential(requiresRefresh: true))
            #expect(await Self.send(on: server, manager, with: interceptor)?.message == Self.refreshFailure.message)
            #expect(authenticator.snapshot.refresh == 1)
            #expect(await Self.send(on: server, manager, with: interceptor)?.message == Self.refreshFailure.message)
            #expect(hits.withLockedValue { $0 } == [])
            #expect(authenticator.snapshot == TestAuthenticator.Counts(apply: 0, refresh: 2, didRequestFail: 0, isRequestAuthenticated: 0))
        }
    }
}
