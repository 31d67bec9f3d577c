import Courier
import Foundation
import HTTPTypes
import Testing

/// Twins of Alamofire's `StaticAccessorTests` (`Tests/RequestInterceptorTests.swift`): adapters,
/// retriers, interceptors and retry policies as static members where one is expected.
@Suite("Conformance: Alamofire RequestInterceptorTests, static members")
struct AlamofireStaticAccessorConformanceTests {
    func consumeRequestAdapter(_ adapter: any RequestAdapter) -> any RequestAdapter { adapter }
    func consumeRequestRetrier(_ retrier: any RequestRetrier) -> any RequestRetrier { retrier }
    func consumeRequestInterceptor(_ interceptor: any RequestInterceptor) -> any RequestInterceptor { interceptor }

    static let request = Request(url: URL(string: "https://example.com/")!)

    @Test func thatAdapterCanBeCreatedStaticallyFromProtocol() async throws {
        let adapter = consumeRequestAdapter(.adapter { request, _ in
            var request = request
            request.headerFields[.userAgent] = "adapted"
            return request
        })
        let adapted = try await adapter.adapt(Self.request, using: AdaptationContext(taskIdentifier: 1))
        #expect(adapted.headerFields[.userAgent] == "adapted")
    }

    @Test func thatRetrierCanBeCreatedStaticallyFromProtocol() async throws {
        let retrier = consumeRequestRetrier(.retrier { _ in .doNotRetry })
        let decision = try await retrier.retry(FailedAttempt(request: Self.request, error: CourierError(.timedOut, "timed out")))
        #expect("\(decision)" == "\(RetryDecision.doNotRetry)")
    }

    @Test func thatInterceptorCanBeCreatedStaticallyFromProtocol() throws {
        let interceptor = try #require(consumeRequestInterceptor(.interceptor()) as? Interceptor)
        #expect(interceptor.adapters.isEmpty && interceptor.retriers.isEmpty)
    }

    @Test func thatRetryPolicyCanBeCreatedStaticallyFromProtocol() throws {
        let policy = try #require(consumeRequestInterceptor(.retryPolicy) as? RetryPolicy)
        #expect(policy.retryLimit == RetryPolicy().retryLimit)
        #expect(RetryPolicy.retryPolicy(retryLimit: 5).retryLimit == 5)
        let interceptor = Interceptor(retriers: [.retryPolicy(retryLimit: 3)])
        #expect((interceptor.retriers.first as? RetryPolicy)?.retryLimit == 3)
    }

    /// Alamofire's `ConnectionLostRetryPolicy` is a ``RetryPolicy`` that retries lost
    /// connections only: a lost connection is retried, a 503 and a timeout are not.
    @Test func thatConnectionLostRetryPolicyCanBeCreatedStaticallyFromProtocol() async throws {
        let policy = try #require(consumeRequestInterceptor(.connectionLostRetryPolicy()) as? RetryPolicy)
        #expect(policy.retryLimit == 2)
        let lost = try await policy.retry(FailedAttempt(request: Self.request, error: CourierError(.connectionClosed, "lost")))
        #expect("\(lost)".hasPrefix("retry"), "\(lost)")
        let timedOut = try await policy.retry(FailedAttempt(request: Self.request, error: CourierError(.timedOut, "timed out")))
        #expect("\(timedOut)" == "\(RetryDecision.doNotRetry)")
        let unavailable = try await policy.retry(FailedAttempt(request: Self.request, response: HTTPResponse(status: .serviceUnavailable)))
        #expect("\(unavailable)" == "\(RetryDecision.doNotRetry)")
    }
}
