import HTTPTypes
import Logging
import NIOConcurrencyHelpers

/// Authenticates requests with a credential and refreshes it once, however many requests need
/// it at the same time (Alamofire's `AuthenticationInterceptor`).
///
/// As an adapter it applies the credential to every attempt; when the credential
/// ``AuthenticationCredential/requiresRefresh``, or a refresh is under way, the request waits for
/// the refresh first (and a refreshed credential that still requires refresh is refreshed again,
/// within the ``RefreshWindow``). As a retrier it looks at refusals (``Authenticator/didRequest(_:with:failDueToAuthenticationError:)``):
/// a request refused with an older credential is retried with the current one; a request refused
/// with the current one starts a refresh, or waits for the one under way, and is retried with the
/// new credential. A refusal from a redirect's target that the credential, sent first, did not
/// reach (a redirect to another origin drops it) is the answer: it is not retried; so is a
/// refusal of a `GET` that a redirect made of a `POST` (``FailedAttempt/retryWouldRepeatAProcessedRequest``):
/// a retry would send the `POST` again. **One
/// refresh** serves every request waiting for it; if it fails, they all fail
/// with its error, and so does any later refusal of the same credential (a new request starts
/// afresh). A ``RefreshWindow`` stops refresh storms: past its limit, a refresh fails at once with
/// ``CourierError/Code/excessiveRefresh``.
///
/// ```swift
/// let auth = AuthenticationInterceptor(authenticator: OAuth(), credential: token)
/// manager.interceptor = Interceptor(interceptors: [auth])
/// ```
///
/// A refresh runs in a task of its own, not in the task of the request that started it, so that
/// cancelling one request does not fail the others; ``cancelRefresh()`` cancels it.
public final class AuthenticationInterceptor<AuthenticatorType: Authenticator>: RequestInterceptor, Sendable {
    /// The authenticator's credential type.
    public typealias Credential = AuthenticatorType.Credential

    /// At most ``maximumAttempts`` refreshes within any ``interval``.
    public struct RefreshWindow: Sendable, Hashable {
        /// The window's length. 30 s by default.
        public var interval: Duration
        /// Refreshes allowed in the window. 5 by default.
        public var maximumAttempts: Int

        /// A window.
        public init(interval: Duration = .seconds(30), maximumAttempts: Int = 5) {
            self.interval = interval
            self.maximumAttempts = maximumAttempts
        }
    }

    private typealias Waiter = CheckedContinuation<Result<Credential, CourierError>, Never>

    /// What `adapt` does once it has looked at the state.
    private enum AdaptStep {
        case apply(Credential)
        case refresh(Credential, version: Int)
    }

    /// The credential and its version as one transaction read them, and whether a refresh was
    /// under way.
    private struct Current {
        let credential: Credential
        let version: Int
        let refreshing: Bool
    }

    /// What a request waiting for a refresh does once it has looked at the state.
    private enum WaitStep {
        case resume(Result<Credential, CourierError>)
        case wait
        case start(generation: Int)
    }

    private enum Refresh {
        case idle
        /// `generation` names the run; `version` is the credential version it refreshes.
        case running(generation: Int, version: Int, task: Task<Void, Never>?)
        /// The refresh of credential `version` failed: later refusals of it fail with `error`.
        case failed(version: Int, error: CourierError)
    }

    private struct State {
        var credential: Credential?
        var version = 0
        var refresh = Refresh.idle
        var generation = 0
        var refreshTimes: [Duration] = []
        var waiters: [Int: Waiter] = [:]
        /// Waiters that asked but have not registered their continuation yet.
        var pending: Set<Int> = []
        /// Pending waiters whose task was cancelled before they registered.
        var cancelled: Set<Int> = []
        var nextWaiter = 0
    }

    /// The authenticator.
    public let authenticator: AuthenticatorType
    /// The refresh-storm guard; `nil` allows any number of refreshes (then a refresh that keeps
    /// returning a credential that requires refresh is asked again and again).
    public let refreshWindow: RefreshWindow?
    private let clock: any RetryClock
    private let state: NIOLockedValueBox<State>

    /// An interceptor.
    /// - Parameters:
    ///   - authenticator: Applies and refreshes the credential.
    ///   - credential: The credential, if there is one yet; requests fail with
    ///     ``CourierError/Code/missingCredential`` while there is none.
    ///   - refreshWindow: The refresh-storm guard.
    ///   - clock: Time, for the refresh window (injected by tests).
    public init(
        authenticator: AuthenticatorType,
        credential: Credential? = nil,
        refreshWindow: RefreshWindow? = RefreshWindow(),
        clock: any RetryClock = .system
    ) {
        self.authenticator = authenticator
        self.refreshWindow = refreshWindow
        self.clock = clock
        self.state = NIOLockedValueBox(State(credential: credential))
    }

    /// The credential. Setting it ends a failed state; requests waiting for a refresh under way
    /// get the credential set here when the refresh ends.
    /// How many requests wait for the refresh under way (its own among them), for tests that
    /// must know every request arrived before the refresh ends.
    var requestsWaitingForRefresh: Int { self.state.withLockedValue { $0.waiters.count } }

    public var credential: Credential? {
        get { self.state.withLockedValue { $0.credential } }
        set {
            self.state.withLockedValue { state in
                state.credential = newValue
                state.version += 1
                if case .failed = state.refresh { state.refresh = .idle }
            }
        }
    }

    /// Cancels the refresh under way, if any: the requests waiting for it fail with
    /// ``CourierError/Code/cancelled`` unless the refresh finishes first.
    public func cancelRefresh() {
        let task = self.state.withLockedValue { state -> Task<Void, Never>? in
            if case .running(_, _, let task) = state.refresh { return task }
            return nil
        }
        task?.cancel()
    }

    // MARK: RequestAdapter

    public func adapt(_ request: Request, using context: AdaptationContext) async throws -> Request {
        // `requiresRefresh` is the caller's code, asked outside the lock (it may read this
        // interceptor); the version read with the credential keeps a refresh from running twice.
        let current = try self.state.withLockedValue { state throws(CourierError) -> Current in
            guard let credential = state.credential else { throw self.missingCredential(request) }
            // A new request starts afresh after a failed refresh.
            if case .failed = state.refresh { state.refresh = .idle }
            if case .running = state.refresh { return Current(credential: credential, version: state.version, refreshing: true) }
            return Current(credential: credential, version: state.version, refreshing: false)
        }
        var next: AdaptStep =
            current.refreshing || current.credential.requiresRefresh
            ? .refresh(current.credential, version: current.version) : .apply(current.credential)
        while true {
            switch next {
            case .apply(let credential):
                var request = request
                self.authenticator.apply(credential, to: &request)
                return request
            case .refresh(let stale, let version):
                context.logger.debug("waiting for the credential's refresh before sending")
                _ = try await self.refreshed(stale, version: version).get()
                // The current credential (the refreshed one, or one set meanwhile); one that still
                // requires refresh is refreshed again, as far as the refresh window allows.
                let now = try self.state.withLockedValue { state throws(CourierError) -> Current in
                    guard let credential = state.credential else { throw self.missingCredential(request) }
                    return Current(credential: credential, version: state.version, refreshing: false)
                }
                next = now.credential.requiresRefresh ? .refresh(now.credential, version: now.version) : .apply(now.credential)
            }
        }
    }

    // MARK: RequestRetrier

    /// The authenticator's ``Authenticator/refreshesOnSerializationFailures``: false by default,
    /// so that tasks retried by this interceptor alone skip the serializer's check.
    public var retriesSerializationFailures: Bool { self.authenticator.refreshesOnSerializationFailures }

    public func retry(_ attempt: FailedAttempt) async throws -> RetryDecision {
        // A `POST` that a redirect made a `GET` is not sent again for the `GET`'s refusal: the
        // server did the `POST`'s work (the 401 is the answer, as for HTTP authentication).
        guard let response = attempt.response, !attempt.retryWouldRepeatAProcessedRequest,
            self.authenticator.didRequest(attempt.request, with: response, failDueToAuthenticationError: attempt.error)
        else { return .doNotRetry }
        let (credential, version) = self.state.withLockedValue { ($0.credential, $0.version) }
        guard let credential else {
            return .doNotRetry(failingWith: self.missingCredential(attempt.request).adding(response: response, data: attempt.data))
        }
        guard self.authenticator.isRequest(attempt.request, authenticatedWith: credential) else {
            // (Asked only after a redirect, so that the authenticator is asked once otherwise,
            // as Alamofire asks it.)
            if attempt.initialRequest.url != attempt.request.url || attempt.initialRequest.headerFields != attempt.request.headerFields,
                self.authenticator.isRequest(attempt.initialRequest, authenticatedWith: credential)
            {
                // Sent with the current credential, which a redirect to another origin dropped
                // (as it must): the server refused a request without it, and sending it again
                // would meet the same redirect. The refusal is the answer. Decided on the first
                // hop's credential, not on its URL: a redirect chain that comes back to the first
                // URL (a login bounce through another origin) arrives there without the
                // credential too, and was sent again for ever. (Without a redirect the first hop
                // is the refused request, which does not carry it.)
                return .doNotRetry
            }
            // Refused with an older credential: the current one is already there.
            return .retry(reason: .authentication)
        }
        switch await self.refreshed(credential, version: version) {
        case .success:
            return .retry(reason: .authentication)
        case .failure(let error):
            return .doNotRetry(failingWith: error.adding(request: attempt.request, response: response, data: attempt.data))
        }
    }

    // MARK: Refreshing

    /// The credential after the refresh of credential `version`: at once when it was refreshed
    /// already (or its refresh failed), else after the refresh under way, or one started now.
    private func refreshed(_ credential: Credential, version: Int) async -> Result<Credential, CourierError> {
        let id = self.state.withLockedValue { state -> Int in
            state.nextWaiter += 1
            state.pending.insert(state.nextWaiter)
            return state.nextWaiter
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: Waiter) in
                let next = self.state.withLockedValue { state -> WaitStep in
                    state.pending.remove(id)
                    if state.cancelled.remove(id) != nil { return .resume(.failure(Self.cancelled)) }
                    if state.version != version {
                        return .resume(state.credential.map { .success($0) } ?? .failure(self.missingCredential(nil)))
                    }
                    switch state.refresh {
                    case .failed(let failedVersion, let error) where failedVersion == version:
                        return .resume(.failure(error))
                    case .running:
                        state.waiters[id] = continuation
                        return .wait
                    case .idle, .failed:
                        if let excessive = self.excessiveRefresh(in: &state) {
                            state.refresh = .failed(version: version, error: excessive)
                            return .resume(.failure(excessive))
                        }
                        state.generation += 1
                        // Kept only for the refresh-storm guard, which prunes them; without it
                        // they would pile up for the interceptor's life.
                        if self.refreshWindow != nil { state.refreshTimes.append(self.clock.now) }
                        state.refresh = .running(generation: state.generation, version: version, task: nil)
                        state.waiters[id] = continuation
                        return .start(generation: state.generation)
                    }
                }
                switch next {
                case .resume(let result): continuation.resume(returning: result)
                case .wait: break
                case .start(let generation): self.startRefresh(of: credential, generation: generation)
                }
            }
        } onCancel: {
            let waiter = self.state.withLockedValue { state -> Waiter? in
                if let waiter = state.waiters.removeValue(forKey: id) { return waiter }
                if state.pending.remove(id) != nil { state.cancelled.insert(id) }
                return nil
            }
            // The refresh goes on for the others, and its credential is kept (a server may have
            // rotated the refresh token): only this request stops waiting.
            waiter?.resume(returning: .failure(Self.cancelled))
        }
    }

    /// Runs the authenticator's refresh in a task of its own; `finishRefresh` hands its result to
    /// every waiter. The task is kept in the state so that ``cancelRefresh()`` can cancel it.
    private func startRefresh(of credential: Credential, generation: Int) {
        let authenticator = self.authenticator
        let task = Task {
            let result: Result<Credential, CourierError>
            do {
                result = .success(try await authenticator.refresh(credential))
            } catch let error as CourierError {
                result = .failure(error)
            } catch is CancellationError {
                result = .failure(Self.cancelled)
            } catch {
                result = .failure(CourierError(.requestRetryFailed, "refreshing the credential failed", underlyingError: error))
            }
            self.finishRefresh(generation: generation, with: result)
        }
        self.state.withLockedValue { state in
            // The run may have finished already (a refresh that returned at once): nothing to keep then.
            guard case .running(generation, let version, .none) = state.refresh else { return }
            state.refresh = .running(generation: generation, version: version, task: task)
        }
    }

    private func finishRefresh(generation: Int, with result: Result<Credential, CourierError>) {
        let (waiters, outcome) = self.state.withLockedValue { state -> ([Waiter], Result<Credential, CourierError>) in
            guard case .running(generation, let version, _) = state.refresh else { return ([], result) }
            var outcome = result
            if state.version != version {
                // The credential was set while the refresh ran: that one wins.
                outcome = state.credential.map { .success($0) } ?? .failure(self.missingCredential(nil))
                state.refresh = .idle
            } else {
                switch result {
                case .success(let credential):
                    state.credential = credential
                    state.version += 1
                    state.refresh = .idle
                case .failure(let error):
                    state.refresh = .failed(version: version, error: error)
                }
            }
            defer { state.waiters = [:] }
            return (Array(state.waiters.values), outcome)
        }
        for waiter in waiters { waiter.resume(returning: outcome) }
    }

    /// How many refreshes the refresh-storm guard remembers (none without a ``refreshWindow``).
    var refreshTimesKept: Int { self.state.withLockedValue { $0.refreshTimes.count } }

    private func excessiveRefresh(in state: inout State) -> CourierError? {
        guard let window = self.refreshWindow else { return nil }
        let now = self.clock.now
        state.refreshTimes.removeAll { $0 <= now - window.interval }
        guard state.refreshTimes.count >= window.maximumAttempts else { return nil }
        return CourierError(
            .excessiveRefresh, "the credential was refreshed \(state.refreshTimes.count) times within \(window.interval): not again")
    }

    private func missingCredential(_ request: Request?) -> CourierError {
        CourierError(
            .missingCredential, "\(request.map { $0.summary + ": " } ?? "")there is no credential to authenticate with", request: request)
    }

    private static var cancelled: CourierError { CourierError(.cancelled, "cancelled while waiting for the credential's refresh") }
}
