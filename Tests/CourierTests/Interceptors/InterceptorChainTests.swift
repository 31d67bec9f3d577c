import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import Testing

@testable import Courier

@Suite("Interceptors: composition order, typed failures, the budget's say")
struct InterceptorChainTests {
    static let request = Request(url: URL(string: "http://api.courier.test/")!)

    static func tagging(_ tag: String, into log: NIOLockedValueBox<[String]>) -> Adapter {
        Adapter { request, _ in
            log.withLockedValue { $0.append(tag) }
            var request = request
            request.headerFields.append(HTTPField(name: HTTPField.Name("X-Tag")!, value: tag))
            return request
        }
    }

    @Test("Adapters run in order, each on the previous one's output; Interceptor nests")
    func adapterOrder() async throws {
        let log = NIOLockedValueBox<[String]>([])
        let inner = Interceptor(adapters: [Self.tagging("b", into: log)], interceptors: [Self.tagging("c", into: log)])
        let chain = InterceptorChain(adapters: [Self.tagging("a", into: log), inner, Self.tagging("d", into: log)])
        let adapted = try await chain.adapt(Self.request, using: AdaptationContext(taskIdentifier: 1))
        #expect(adapted.headerFields[values: HTTPField.Name("X-Tag")!] == ["a", "b", "c", "d"])
        #expect(log.withLockedValue { $0 } == ["a", "b", "c", "d"])
    }

    @Test("An adapter's failure stops the chain: a CourierError as it is, another error wrapped")
    func adapterFailures() async throws {
        let log = NIOLockedValueBox<[String]>([])
        let refusing = Adapter { _, _ in throw CourierError(.invalidRequest, "no") }
        await #expect(throws: CourierError(.invalidRequest, "")) {
            try await InterceptorChain(adapters: [refusing, Self.tagging("never", into: log)]).adapt(Self.request, using: AdaptationContext(taskIdentifier: 1))
        }
        #expect(log.withLockedValue { $0 }.isEmpty)
        struct Opaque: Error {}
        do {
            _ = try await InterceptorChain(adapters: [Adapter { _, _ in throw Opaque() }]).adapt(Self.request, using: AdaptationContext(taskIdentifier: 1))
            Issue.record("no error")
        } catch {
            #expect(error.code == .requestAdaptationFailed)
            #expect(error.underlyingError is Opaque)
            #expect(error.request?.url == Self.request.url)
        }
    }

    @Test("Retriers: the first that does not pass decides; a throwing retrier fails the task; no retrier, no retry")
    func retrierOrder() async {
        let asked = NIOLockedValueBox<[String]>([])
        func retrier(_ name: String, _ decision: RetryDecision) -> Retrier {
            Retrier { _ in
                asked.withLockedValue { $0.append(name) }
                return decision
            }
        }
        let attempt = FailedAttempt(request: Self.request, response: HTTPResponse(status: .serviceUnavailable))
        let chain = InterceptorChain(retriers: [retrier("a", .doNotRetry), retrier("b", .retry(after: .seconds(2), reason: .custom)), retrier("c", .doNotRetry)])
        guard case .retry(let delay, let reason) = await chain.decide(attempt) else { Issue.record("no retry"); return }
        #expect(delay == .seconds(2) && reason == .custom)
        #expect(asked.withLockedValue { $0 } == ["a", "b"])
        guard case .finish(let error) = await InterceptorChain(retriers: [retrier("x", .doNotRetry(failingWith: CourierError(.missingCredential, "m")))]).decide(attempt) else {
            Issue.record("not finished"); return
        }
        #expect(error?.code == .missingCredential)
        #expect(error?.response?.status == .serviceUnavailable)
        struct Opaque: Error {}
        guard case .finish(let wrapped) = await InterceptorChain(retriers: [Retrier { _ in throw Opaque() }]).decide(attempt) else {
            Issue.record("not finished"); return
        }
        #expect(wrapped?.code == .requestRetryFailed)
        guard case .finish(nil) = await InterceptorChain().decide(attempt) else { Issue.record("retried without retriers"); return }
    }

    @Test("A task cancelled while a retrier decides is not shown to the retriers after it, nor to any when cancelled first")
    func cancelledTaskStopsTheRetriers() async {
        let asked = NIOLockedValueBox<[String]>([])
        let attempt = FailedAttempt(request: Self.request, response: HTTPResponse(status: .serviceUnavailable))
        let (deciding, entered) = AsyncStream<Void>.makeStream()
        let (proceed, release) = AsyncStream<Void>.makeStream()
        // The first retrier ignores cancellation (as user code may) and passes.
        let slow = Retrier { _ in
            asked.withLockedValue { $0.append("slow") }
            entered.yield()
            for await _ in proceed { break }
            return .doNotRetry
        }
        let later = Retrier { _ in
            asked.withLockedValue { $0.append("later") }
            return .retry(reason: .custom)
        }
        let chain = InterceptorChain(retriers: [slow, later])
        // The task whose retriers decide, cancelled (as `cancel()` cancels a retry's waiter) once
        // the first retrier is asked.
        let verdict = await withTaskGroup(of: InterceptorChain.Verdict.self) { group in
            group.addTask { await chain.decide(attempt) }
            for await _ in deciding { break }
            group.cancelAll()
            release.yield()
            return await group.next()!
        }
        guard case .finish(let error) = verdict else { Issue.record("retried a cancelled task"); return }
        #expect(error?.code == .cancelled)
        #expect(asked.withLockedValue { $0 } == ["slow"])
        // A task cancelled before the first retrier is asked.
        let cancelledFirst = await withTaskGroup(of: InterceptorChain.Verdict.self) { group in
            group.cancelAll()
            group.addTask { await chain.decide(attempt) }
            return await group.next()!
        }
        guard case .finish(let first) = cancelledFirst else { Issue.record("retried a cancelled task"); return }
        #expect(first?.code == .cancelled)
        #expect(asked.withLockedValue { $0 } == ["slow"])
    }

    @Test("A retrier's delay is at most 31 years, whichever task sleeps through it (a WebSocket handshake's too)")
    func delayIsCapped() async {
        // A server's `Retry-After: 99999999999999999999` taken without a cap. Only a task's retry
        // capped it; a WebSocket handshake's retry slept through it, past what a clock's deadline
        // holds (a trap).
        let attempt = FailedAttempt(request: Self.request, response: HTTPResponse(status: .serviceUnavailable))
        let chain = InterceptorChain(retriers: [Retrier { _ in .retry(after: .seconds(Int64.max), reason: .custom) }])
        guard case .retry(let delay, _) = await chain.decide(attempt) else { Issue.record("no retry"); return }
        #expect(delay == .seconds(1_000_000_000))
        #expect(RetryDecision.retry(after: .seconds(Int64.max)).delay == .seconds(1_000_000_000))
        #expect(RetryDecision.retry(after: .seconds(-5)).delay == .zero)
        #expect(RetryDecision.retry(after: .seconds(7)).delay == .seconds(7))
    }

    @Test("A spent budget refuses a retry; exempt reasons pass")
    func budget() async {
        let budget = RetryBudget(ratio: 0, minimumPerSecond: 0, clock: ManualRetryClock())
        let attempt = FailedAttempt(request: Self.request, response: HTTPResponse(status: .serviceUnavailable))
        let transient = InterceptorChain(retriers: [Retrier { _ in .retry(reason: .transientFailure) }], budget: budget)
        guard case .refusedByBudget(.transientFailure) = await transient.decide(attempt) else { Issue.record("not refused"); return }
        let auth = InterceptorChain(retriers: [Retrier { _ in .retry(reason: .authentication) }], budget: budget)
        guard case .retry = await auth.decide(attempt) else { Issue.record("refused"); return }
    }
}
