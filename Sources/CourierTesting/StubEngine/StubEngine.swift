import Courier
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers

/// A Courier `Engine` that answers from registered stubs, without sockets.
///
/// Register a ``StubResponse`` for a ``StubMatcher``; the most recent registration that matches
/// wins. A request no stub matches fails with `CourierError.Code.connectionFailed`. Redirect
/// stubs (3xx with `Location`) are followed after asking the delegate, by `NIOEngine`'s rule
/// (`RedirectPlanner`: the method and body a redirect keeps, credentials and cookies only to the
/// same origin, `http` and `https` targets only) and within the request's
/// `RequestOptions.redirectPolicy`, which a session manager sets to its own.
///
/// ```swift
/// let engine = StubEngine()
/// engine.stub(.path("/user", method: .get), .json(#"{"id": 1}"#))
/// engine.stub(.path("/slow"), StubResponse(delay: .seconds(1)))
/// ```
///
/// Each exchange runs on its own task: the delegate gets the upload progress (for bodies of known
/// length), the head, the body in chunks (pausing while receiving is suspended), then exactly one
/// completion.
public final class StubEngine: Engine {
    private struct Registration: Sendable {
        var matcher: StubMatcher
        var response: StubResponse
    }

    private struct State {
        var stubs: [Registration] = []
        var requests: [Request] = []
        var isShutDown = false
        var running: [ObjectIdentifier: StubExchange] = [:]
    }

    private let state = NIOLockedValueBox(State())

    /// Makes an engine with no stubs.
    public init() {}

    /// Answers requests that `matcher` accepts with `response`; later stubs are tried first.
    /// - Parameters:
    ///   - matcher: Which requests to answer.
    ///   - response: What to answer.
    public func stub(_ matcher: StubMatcher, _ response: StubResponse) {
        self.state.withLockedValue { $0.stubs.insert(Registration(matcher: matcher, response: response), at: 0) }
    }

    /// Forgets every stub.
    public func removeAllStubs() {
        self.state.withLockedValue { $0.stubs.removeAll() }
    }

    /// Every request the engine was asked to execute (redirected requests included), oldest first.
    public var requests: [Request] {
        self.state.withLockedValue { $0.requests }
    }

    /// Starts an exchange answered by the matching stub.
    public func execute(_ request: Request, delegate: any ExchangeDelegate) -> any Exchange {
        let exchange = StubExchange(request: request, delegate: delegate, engine: self)
        let accepted = self.state.withLockedValue { state -> Bool in
            guard !state.isShutDown else { return false }
            state.running[ObjectIdentifier(exchange)] = exchange
            return true
        }
        exchange.start(failure: accepted ? nil : CourierError(.sessionInvalidated, "the stub engine was shut down", request: request))
        return exchange
    }

    /// Cancels running exchanges with `CourierError.Code.sessionInvalidated` and fails new ones.
    public func shutdown() async throws {
        let running = self.state.withLockedValue { state in
            state.isShutDown = true
            return Array(state.running.values)
        }
        for exchange in running {
            exchange.cancel(with: CourierError(.sessionInvalidated, "the stub engine was shut down"))
        }
        for exchange in running { await exchange.finished() }
    }

    // MARK: For exchanges

    func record(_ request: Request) -> StubResponse? {
        self.state.withLockedValue { state in
            state.requests.append(request)
            return state.stubs.first { $0.matcher.matches(request) }?.response
        }
    }

    func exchangeDidFinish(_ exchange: StubExchange) {
        self.state.withLockedValue { _ = $0.running.removeValue(forKey: ObjectIdentifier(exchange)) }
    }
}
