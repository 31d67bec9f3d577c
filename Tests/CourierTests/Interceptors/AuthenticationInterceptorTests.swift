import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import Testing

@testable import Courier

/// A bearer token whose refresh is counted and can be held until released.
struct TestToken: AuthenticationCredential, Hashable {
    var access: String
    var expired = false
    var requiresRefresh: Bool { self.expired }
}

final class TestAuthenticator: Authenticator {
    struct State {
        var refreshes = 0
        var failWith: CourierError?
        var gate: CheckedContinuation<Void, Never>?
        var holds = false
        var waitingForGate: [CheckedContinuation<Void, Never>] = []
    }

    let state = NIOLockedValueBox(State())

    init(holdingRefreshes: Bool = false, failWith: CourierError? = nil) {
        self.state.withLockedValue {
            $0.holds = holdingRefreshes
            $0.failWith = failWith
        }
    }

    var refreshes: Int { self.state.withLockedValue { $0.refreshes } }

    func apply(_ credential: TestToken, to request: inout Request) {
        request.headerFields[.authorization] = "Bearer \(credential.access)"
    }

    func refresh(_ credential: TestToken) async throws -> TestToken {
        let (count, holds, failure) = self.state.withLockedValue { state in
            state.refreshes += 1
            return (state.refreshes, state.holds, state.failWith)
        }
        if holds {
            await withCheckedContinuation { continuation in
                let waiters = self.state.withLockedValue { state in
                    state.gate = continuation
                    defer { state.waitingForGate = [] }
                    return state.waitingForGate
                }
                for waiter in waiters { waiter.resume() }
            }
        }
        if let failure { throw failure }
        return TestToken(access: "token-\(count)")
    }

    func isRequest(_ request: Request, authenticatedWith credential: TestToken) -> Bool {
        request.headerFields[.authorization] == "Bearer \(credential.access)"
    }

    /// Waits until a refresh is held at the gate.
    func waitForHeldRefresh() async {
        await withCheckedContinuation { continuation in
            let held = self.state.withLockedValue { state -> Bool in
                if state.gate != nil { return true }
                state.waitingForGate.append(continuation)
                return false
            }
            if held { continuation.resume() }
        }
    }

    /// Lets the held refresh finish.
    func release() {
        let gate = self.state.withLockedValue { state in
            state.holds = false
            defer { state.gate = nil }
            return state.gate
        }
        gate?.resume()
    }
}

@Suite("Interceptors: AuthenticationInterceptor (single-flight refresh)")
struct AuthenticationInterceptorTests {
    static let url = URL(string: "http://api.courier.test/me")!

    static func refused(_ token: String) -> FailedAttempt {
        var request = Request(url: Self.url)
        request.headerFields[.authorization] = "Bearer \(token)"
        return FailedAttempt(request: request, response: HTTPResponse(status: .unauthorized))
    }

    @Test("100 requests refused at once: one refresh, and all 100 are told to retry")
    func singleFlight() async throws {
        let authenticator = TestAuthenticator(holdingRefreshes: true)
        let interceptor = AuthenticationInterceptor(authenticator: authenticator, credential: TestToken(access: "old"))
        try await withThrowingTaskGroup(of: RetryDecision.self) { group in
            for _ in 0..<100 { group.addTask { try await interceptor.retry(Self.refused("old")) } }
            await authenticator.waitForHeldRefresh()
            authenticator.release()
            var decisions: [RetryDecision] = []
            for try await decision in group { decisions.append(decision) }
            #expect(decisions.count == 100)
            #expect(decisions.allSatisfy { $0.isRetry && $0.reason == .authentication })
        }
        #expect(authenticator.refreshes == 1)
        #expect(interceptor.credential == TestToken(access: "token-1"))
        // The retries carry the new credential.
        let adapted = try await interceptor.adapt(Request(url: Self.url), using: AdaptationContext(taskIdentifier: 1))
        #expect(adapted.headerFields[.authorization] == "Bearer token-1")
    }

    @Test("A failed refresh fails every waiting request with its error, and later refusals of that credential too")
    func failedRefresh() async throws {
        let failure = CourierError(.invalidResponse, "the token endpoint said no")
        let authenticator = TestAuthenticator(holdingRefreshes: true, failWith: failure)
        let interceptor = AuthenticationInterceptor(authenticator: authenticator, credential: TestToken(access: "old"))
        try await withThrowingTaskGroup(of: RetryDecision.self) { group in
            for _ in 0..<20 { group.addTask { try await interceptor.retry(Self.refused("old")) } }
            await authenticator.waitForHeldRefresh()
            authenticator.release()
            for try await decision in group {
                #expect(!decision.isRetry)
                #expect(decision.error?.code == .invalidResponse)
                #expect(decision.error?.response?.status == .unauthorized)
            }
        }
        let late = try await interceptor.retry(Self.refused("old"))
        #expect(late.error?.code == .invalidResponse)
        #expect(authenticator.refreshes == 1)
        // An error that is not a CourierError is wrapped.
        struct Opaque: Error {}
        let wrapped = AuthenticationInterceptor(authenticator: ThrowingAuthenticator(error: Opaque()), credential: TestToken(access: "old"))
        let decision = try await wrapped.retry(Self.refused("old"))
        #expect(decision.error?.code == .requestRetryFailed)
        #expect(decision.error?.underlyingError is Opaque)
    }

    @Test("A request refused with an older credential is retried at once, without a refresh")
    func staleCredential() async throws {
        let authenticator = TestAuthenticator()
        let interceptor = AuthenticationInterceptor(authenticator: authenticator, credential: TestToken(access: "new"))
        let decision = try await interceptor.retry(Self.refused("old"))
        #expect(decision.isRetry)
        #expect(authenticator.refreshes == 0)
        // Not an authentication failure: not this interceptor's business.
        let notFound = FailedAttempt(request: Request(url: Self.url), response: HTTPResponse(status: .notFound))
        #expect(try await !interceptor.retry(notFound).isRetry)
    }

    @Test("An expired credential is refreshed before the request is sent; concurrent requests share the refresh")
    func proactiveRefresh() async throws {
        let authenticator = TestAuthenticator(holdingRefreshes: true)
        let interceptor = AuthenticationInterceptor(authenticator: authenticator, credential: TestToken(access: "old", expired: true))
        try await withThrowingTaskGroup(of: Request.self) { group in
            for id in 0..<10 {
                group.addTask { try await interceptor.adapt(Request(url: Self.url), using: AdaptationContext(taskIdentifier: id)) }
            }
            await authenticator.waitForHeldRefresh()
            authenticator.release()
            for try await request in group { #expect(request.headerFields[.authorization] == "Bearer token-1") }
        }
        #expect(authenticator.refreshes == 1)
    }

    @Test("Without a credential: missingCredential, before anything is sent")
    func missing() async throws {
        let interceptor = AuthenticationInterceptor<TestAuthenticator>(authenticator: TestAuthenticator())
        await #expect(throws: CourierError(.missingCredential, "")) {
            try await interceptor.adapt(Request(url: Self.url), using: AdaptationContext(taskIdentifier: 1))
        }
        #expect(try await interceptor.retry(Self.refused("x")).error?.code == .missingCredential)
    }

    @Test("The refresh-storm guard: past N refreshes in the window, excessiveRefresh")
    func storm() async throws {
        let clock = ManualRetryClock()
        let authenticator = TestAuthenticator()
        let interceptor = AuthenticationInterceptor(
            authenticator: authenticator, credential: TestToken(access: "token-0"),
            refreshWindow: .init(interval: .seconds(30), maximumAttempts: 3), clock: clock)
        for round in 0..<3 {
            #expect(try await interceptor.retry(Self.refused("token-\(round)")).isRetry)
            clock.advance(by: .seconds(1))
        }
        let refused = try await interceptor.retry(Self.refused("token-3"))
        #expect(refused.error?.code == .excessiveRefresh)
        #expect(authenticator.refreshes == 3)
        // The window slides: later, refreshing works again (a new request starts afresh).
        clock.advance(by: .seconds(30))
        _ = try await interceptor.adapt(Request(url: Self.url), using: AdaptationContext(taskIdentifier: 9))
        #expect(try await interceptor.retry(Self.refused("token-3")).isRetry)
        #expect(authenticator.refreshes == 4)
    }

    @Test("Without the refresh-storm guard no refresh time is kept; with it, those in the window")
    func refreshTimesAreKeptOnlyForTheGuard() async throws {
        for window in [AuthenticationInterceptor<TestAuthenticator>.RefreshWindow?.none, .init(interval: .seconds(30), maximumAttempts: 10)] {
            let interceptor = AuthenticationInterceptor(
                authenticator: TestAuthenticator(), credential: TestToken(access: "token-0"), refreshWindow: window, clock: ManualRetryClock())
            for round in 0..<5 { #expect(try await interceptor.retry(Self.refused("token-\(round)")).isRetry) }
            #expect(interceptor.refreshTimesKept == (window == nil ? 0 : 5))
        }
    }

    @Test("A waiting request that is cancelled stops waiting; the refresh goes on for the others")
    func cancelledWaiter() async throws {
        let authenticator = TestAuthenticator(holdingRefreshes: true)
        let interceptor = AuthenticationInterceptor(authenticator: authenticator, credential: TestToken(access: "old"))
        let first = Task { try await interceptor.retry(Self.refused("old")) }
        await authenticator.waitForHeldRefresh()
        let second = Task { try await interceptor.retry(Self.refused("old")) }
        first.cancel()
        let cancelled = try await first.value
        #expect(cancelled.error?.code == .cancelled)
        authenticator.release()
        #expect(try await second.value.isRetry)
        #expect(authenticator.refreshes == 1)
        #expect(interceptor.credential == TestToken(access: "token-1"))
    }
}

/// Refreshes by throwing.
struct ThrowingAuthenticator: Authenticator {
    let error: any Error & Sendable
    func apply(_ credential: TestToken, to request: inout Request) {
        request.headerFields[.authorization] = "Bearer \(credential.access)"
    }
    func refresh(_ credential: TestToken) async throws -> TestToken { throw self.error }
    func isRequest(_ request: Request, authenticatedWith credential: TestToken) -> Bool {
        request.headerFields[.authorization] == "Bearer \(credential.access)"
    }
}

/// A credential's `requiresRefresh` is the caller's code: the interceptor asked it under its own
/// lock, so one that reads the interceptor (its current credential, say, to compare expiries)
/// stopped the process (a debug build's lock check) or hung the request.
@Suite("Interceptors: AuthenticationInterceptor asks the credential outside its lock")
struct AuthenticationCredentialCalloutTests {
    /// Where the credential finds its interceptor (made after the credential).
    final class InterceptorReference: Sendable {
        let interceptor = NIOLockedValueBox<AuthenticationInterceptor<ReadingAuthenticator>?>(nil)
    }

    struct ReadingCredential: AuthenticationCredential {
        let access: String
        let reference: InterceptorReference
        var requiresRefresh: Bool {
            // Reads the interceptor's credential: its lock.
            let current = self.reference.interceptor.withLockedValue { $0 }?.credential
            return current?.access != self.access
        }
    }

    struct ReadingAuthenticator: Authenticator {
        func apply(_ credential: ReadingCredential, to request: inout Request) {
            request.headerFields[.authorization] = "Bearer \(credential.access)"
        }
        func refresh(_ credential: ReadingCredential) async throws -> ReadingCredential { credential }
        func isRequest(_ request: Request, authenticatedWith credential: ReadingCredential) -> Bool {
            request.headerFields[.authorization] == "Bearer \(credential.access)"
        }
    }

    @Test func aCredentialThatReadsTheInterceptorIsApplied() async throws {
        let reference = InterceptorReference()
        let interceptor = AuthenticationInterceptor(
            authenticator: ReadingAuthenticator(), credential: ReadingCredential(access: "t0", reference: reference))
        reference.interceptor.withLockedValue { $0 = interceptor }
        let adapted = try await interceptor.adapt(Request(url: URL(string: "http://x.test/")!), using: AdaptationContext(taskIdentifier: 1))
        #expect(adapted.headerFields[.authorization] == "Bearer t0")
    }
}
