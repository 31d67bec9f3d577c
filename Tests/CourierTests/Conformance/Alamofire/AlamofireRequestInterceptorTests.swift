import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import Testing

/// Twins of Alamofire's `Tests/RequestInterceptorTests.swift`. Courier's adapters and retriers are
/// `async` (no completion handlers), so "asynchronously" means an adapter or retrier that suspends;
/// Alamofire's `RetryResult` is Courier's `RetryDecision` (`isRetry`, `delay`, `error`), and its
/// `RequestAdapterState` is `AdaptationContext` (the task's identifier, its retry count, its logger).
@Suite("Conformance: Alamofire RequestInterceptorTests")
struct AlamofireRequestInterceptorConformanceTests {
    static let url = URL(string: "http://alamofire.courier.test/get")!
    static let request = Request(url: Self.url)
    static let context = AdaptationContext(taskIdentifier: 7)
    static let failed = FailedAttempt(request: Self.request, error: CourierError(.connectionClosed, "a failure"))
    static let mockError = CourierError(.invalidResponse, "a mock error")
    static let retryError = CourierError(.requestRetryFailed, "a retry error")

    /// Records what the interceptor it wraps was asked and answered (Alamofire's InspectorInterceptor).
    final class Inspector: RequestInterceptor {
        let inner: any RequestInterceptor
        let adaptations = NIOLockedValueBox<[(request: Request, context: AdaptationContext, result: Result<Request, any Error>)]>([])
        let decisions = NIOLockedValueBox<[RetryDecision]>([])

        init(_ inner: any RequestInterceptor) { self.inner = inner }

        func adapt(_ request: Request, using context: AdaptationContext) async throws -> Request {
            do {
                let adapted = try await self.inner.adapt(request, using: context)
                self.adaptations.withLockedValue { $0.append((request, context, .success(adapted))) }
                return adapted
            } catch {
                self.adaptations.withLockedValue { $0.append((request, context, .failure(error))) }
                throw error
            }
        }

        func retry(_ attempt: FailedAttempt) async throws -> RetryDecision {
            let decision = try await self.inner.retry(attempt)
            self.decisions.withLockedValue { $0.append(decision) }
            return decision
        }
    }

    // MARK: RetryResultTests

    @Test func retryRequiredProperty() {
        #expect(RetryDecision.retry().isRetry)
        #expect(RetryDecision.retry(after: .seconds(1)).isRetry)
        #expect(!RetryDecision.doNotRetry.isRetry)
        #expect(!RetryDecision.doNotRetry(failingWith: Self.mockError).isRetry)
    }

    /// Differs: a retry without a delay has a delay of zero (Alamofire's `.retry` has none, nil).
    @Test func delayProperty() {
        #expect(RetryDecision.retry().delay == .zero)
        #expect(RetryDecision.retry(after: .seconds(1)).delay == .seconds(1))
        #expect(RetryDecision.doNotRetry.delay == nil)
        #expect(RetryDecision.doNotRetry(failingWith: Self.mockError).delay == nil)
    }

    @Test func errorProperty() {
        #expect(RetryDecision.retry().error == nil)
        #expect(RetryDecision.retry(after: .seconds(1)).error == nil)
        #expect(RetryDecision.doNotRetry.error == nil)
        #expect(RetryDecision.doNotRetry(failingWith: Self.mockError).error?.code == .invalidResponse)
    }

    // MARK: AdapterTests

    @Test func thatAdapterCallsAdaptHandler() async throws {
        let adapted = NIOLockedValueBox(false)
        let adapter = Adapter { request, _ in
            adapted.withLockedValue { $0 = true }
            return request
        }
        let result = try await adapter.adapt(Self.request, using: Self.context)
        #expect(adapted.withLockedValue { $0 })
        #expect(result.url == Self.url)
    }

    @Test func thatAdapterCallsAdaptHandlerWithStateAPI() async throws {
        let inspector = Inspector(Adapter { request, _ in request })
        let context = AdaptationContext(taskIdentifier: 42, retryCount: 1)
        _ = try await inspector.adapt(Self.request, using: context)
        let adaptations = inspector.adaptations.withLockedValue { $0 }
        #expect(adaptations.count == 1)
        #expect((try? adaptations.first?.result.get())?.url == Self.url)
        #expect(adaptations.first?.request.url == Self.url)
        #expect(adaptations.first?.context.taskIdentifier == 42)
        #expect(adaptations.first?.context.retryCount == 1)
    }

    @Test func thatAdapterCallsRequestRetrierDefaultImplementationInProtocolExtension() async throws {
        let inspector = Inspector(Adapter { request, _ in request })
        _ = try await inspector.retry(Self.failed)
        #expect(inspector.decisions.withLockedValue { $0.map(\.isRetry) } == [false])
        #expect(inspector.decisions.withLockedValue { $0.first?.error } == nil)
    }

    @Test func thatAdapterCanBeImplementedAsynchronously() async throws {
        let inspector = Inspector(Adapter { request, _ in
            try await Task.sleep(for: .milliseconds(1))
            return request
        })
        _ = try await inspector.adapt(Self.request, using: Self.context)
        #expect(inspector.adaptations.withLockedValue { $0.count } == 1)
    }

    // MARK: RetrierTests

    @Test func thatRetrierCallsRetryHandler() async throws {
        let inspector = Inspector(Retrier { _ in .retry() })
        _ = try await inspector.retry(Self.failed)
        #expect(inspector.decisions.withLockedValue { $0.map(\.isRetry) } == [true])
    }

    @Test func thatRetrierCallsRequestAdapterDefaultImplementationInProtocolExtension() async throws {
        let inspector = Inspector(Retrier { _ in .retry() })
        let adapted = try await inspector.adapt(Self.request, using: Self.context)
        #expect(adapted.url == Self.url)
        #expect(inspector.adaptations.withLockedValue { $0.count } == 1)
    }

    @Test func thatRetrierCanBeImplementedAsynchronously() async throws {
        let inspector = Inspector(Retrier { _ in
            try await Task.sleep(for: .milliseconds(1))
            return .retry()
        })
        _ = try await inspector.retry(Self.failed)
        #expect(inspector.decisions.withLockedValue { $0.map(\.isRetry) } == [true])
    }

    // MARK: InterceptorTests

    /// Differs: there are no handler-closure initializers; `Adapter { }` and `Retrier { }` are the closures.
    @Test func adaptHandlerAndRetryHandlerDefaultInitializer() {
        let interceptor = Interceptor(adapters: [Adapter { request, _ in request }], retriers: [Retrier { _ in .doNotRetry }])
        #expect(interceptor.adapters.count == 1)
        #expect(interceptor.retriers.count == 1)
    }

    /// Differs: one initializer takes arrays (`Interceptor(adapters:retriers:interceptors:)`).
    @Test func adapterAndRetrierDefaultInitializer() {
        let interceptor = Interceptor(adapters: [Adapter { request, _ in request }], retriers: [Retrier { _ in .doNotRetry }])
        #expect(interceptor.adapters.count == 1)
        #expect(interceptor.retriers.count == 1)
    }

    @Test func adaptersAndRetriersDefaultInitializer() {
        let adapter = Adapter { request, _ in request }
        let retrier = Retrier { _ in .doNotRetry }
        let interceptor = Interceptor(adapters: [adapter, adapter], retriers: [retrier, retrier])
        #expect(interceptor.adapters.count == 2)
        #expect(interceptor.retriers.count == 2)
    }

    @Test func thatInterceptorCanBeComposedOfMultipleRequestInterceptors() {
        let inner = Interceptor(adapters: [Adapter { request, _ in request }], retriers: [Retrier { _ in .doNotRetry }])
        let interceptor = Interceptor(interceptors: [inner])
        #expect(interceptor.adapters.count == 1)
        #expect(interceptor.retriers.count == 1)
    }

    @Test func thatInterceptorCanAdaptRequestWithNoAdapters() async throws {
        var request = Self.request
        request.headerFields[.accept] = "application/json"
        let adapted = try await Interceptor().adapt(request, using: Self.context)
        #expect(adapted.url == request.url)
        #expect(adapted.headerFields == request.headerFields)
    }

    @Test func thatInterceptorCanAdaptRequestWithOneAdapter() async throws {
        let interceptor = Interceptor(adapters: [Adapter { _, _ in throw Self.mockError }])
        await #expect(throws: CourierError.self) { try await interceptor.adapt(Self.request, using: Self.context) }
    }

    @Test func thatInterceptorCanAdaptRequestWithMultipleAdapters() async throws {
        let interceptor = Interceptor(adapters: [Adapter { request, _ in request }, Adapter { _, _ in throw Self.mockError }])
        do {
            _ = try await interceptor.adapt(Self.request, using: Self.context)
            Issue.record("the second adapter's error was not thrown")
        } catch {
            #expect((error as? CourierError)?.message == Self.mockError.message)
        }
    }

    @Test func thatInterceptorCanAdaptRequestWithMultipleAdaptersUsingStateAPI() async throws {
        let seen = NIOLockedValueBox<[Int]>([])
        let interceptor = Interceptor(adapters: [
            Adapter { request, context in
                seen.withLockedValue { $0.append(context.taskIdentifier) }
                return request
            },
            Adapter { _, context in
                seen.withLockedValue { $0.append(context.taskIdentifier) }
                throw Self.mockError
            },
        ])
        await #expect(throws: CourierError.self) { try await interceptor.adapt(Self.request, using: AdaptationContext(taskIdentifier: 9)) }
        #expect(seen.withLockedValue { $0 } == [9, 9])
    }

    @Test func thatInterceptorCanAdaptRequestAsynchronously() async throws {
        let inspector = Inspector(Interceptor(adapters: [Adapter { _, _ in
            try await Task.sleep(for: .milliseconds(1))
            throw Self.mockError
        }]))
        _ = try? await inspector.adapt(Self.request, using: Self.context)
        let result = inspector.adaptations.withLockedValue { $0.first?.result }
        guard case .failure(let error)? = result else {
            Issue.record("no failed adaptation: \(String(describing: result))")
            return
        }
        #expect((error as? CourierError)?.code == .invalidResponse)
    }

    @Test func thatInterceptorCanRetryRequestWithNoRetriers() async throws {
        #expect(try await !Interceptor().retry(Self.failed).isRetry)
    }

    @Test func thatInterceptorCanRetryRequestWithOneRetrier() async throws {
        #expect(try await Interceptor(retriers: [Retrier { _ in .retry() }]).retry(Self.failed).isRetry)
    }

    @Test func thatInterceptorCanRetryRequestWithMultipleRetriers() async throws {
        let interceptor = Interceptor(retriers: [Retrier { _ in .doNotRetry }, Retrier { _ in .retry() }])
        #expect(try await interceptor.retry(Self.failed).isRetry)
    }

    @Test func thatInterceptorCanRetryRequestAsynchronously() async throws {
        let inspector = Inspector(Interceptor(retriers: [Retrier { _ in
            try await Task.sleep(for: .milliseconds(1))
            return .retry()
        }]))
        _ = try await inspector.retry(Self.failed)
        #expect(inspector.decisions.withLockedValue { $0.map(\.isRetry) } == [true])
    }

    @Test func thatInterceptorStopsIteratingThroughPendingRetriersWithRetryResult() async throws {
        let called = NIOLockedValueBox(false)
        let interceptor = Interceptor(retriers: [
            Retrier { _ in .retry() },
            Retrier { _ in
                called.withLockedValue { $0 = true }
                return .doNotRetry
            },
        ])
        #expect(try await interceptor.retry(Self.failed).isRetry)
        #expect(!called.withLockedValue { $0 })
    }

    @Test func thatInterceptorStopsIteratingThroughPendingRetriersWithRetryWithDelayResult() async throws {
        let called = NIOLockedValueBox(false)
        let interceptor = Interceptor(retriers: [
            Retrier { _ in .retry(after: .seconds(1)) },
            Retrier { _ in
                called.withLockedValue { $0 = true }
                return .doNotRetry
            },
        ])
        let decision = try await interceptor.retry(Self.failed)
        #expect(decision.isRetry)
        #expect(decision.delay == .seconds(1))
        #expect(!called.withLockedValue { $0 })
    }

    @Test func thatInterceptorStopsIteratingThroughPendingRetriersWithDoNotRetryResult() async throws {
        let called = NIOLockedValueBox(false)
        let interceptor = Interceptor(retriers: [
            Retrier { _ in .doNotRetry(failingWith: Self.retryError) },
            Retrier { _ in
                called.withLockedValue { $0 = true }
                return .doNotRetry
            },
        ])
        let decision = try await interceptor.retry(Self.failed)
        #expect(!decision.isRetry)
        #expect(decision.error?.code == .requestRetryFailed)
        #expect(!called.withLockedValue { $0 })
    }

    // MARK: InterceptorRequestTests

    @Test func thatRetryPolicyRetriesRequestTimeout() async throws {
        try await withTestServer { server in
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            var policy = RetryPolicy(retryLimit: 1)
            policy.initialBackoff = .milliseconds(100)
            policy.random = { 1 }
            let inspector = Inspector(policy)
            // Answered after 10 s (Alamofire's after 1 s): both 50 ms attempts time out however
            // late a loaded machine's timers fire.
            var request = Request(url: server.url("/delay/10"))
            request.options.timeoutInterval = 0.05
            request.interceptor = inspector
            let error: CourierError? = await awaitCallback { finish in
                manager.dataTask(with: request) { _, _, error in finish(error) }.resume()
            }
            #expect(error?.code == .timedOut)
            let decisions = inspector.decisions.withLockedValue { $0 }
            #expect(decisions.count == 2, "retry should be asked twice")
            #expect(decisions.map(\.delay) == [.milliseconds(100), nil])
        }
    }
}
