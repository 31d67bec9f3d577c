import Courier
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import NIOFoundationCompat

/// One exchange of a ``StubEngine``: a task that drives the delegate step by step, checking for
/// cancellation between steps and waiting while receiving is suspended.
///
/// Only the task calls the delegate, so calls never overlap and the completion comes once, last.
/// `cancel`, `suspendReceiving` and `resumeReceiving` only change the locked state and wake the task.
final class StubExchange: Exchange {
    private struct State {
        var cancelError: CourierError?
        var suspended = false
        /// The task waiting for `resumeReceiving()` (or a cancel).
        var resumeWaiter: CheckedContinuation<Void, Never>?
        /// Callers of ``waitUntilParked()`` waiting for the task to wait.
        var parkWaiters: [CheckedContinuation<Void, Never>] = []
        var isFinished = false
        var task: Task<Void, Never>?
    }

    private let request: Request
    private let delegate: any ExchangeDelegate
    private let engine: StubEngine
    private let state = NIOLockedValueBox(State())

    init(request: Request, delegate: any ExchangeDelegate, engine: StubEngine) {
        self.request = request
        self.delegate = delegate
        self.engine = engine
    }

    /// Starts the task; with `failure`, the exchange just completes with it.
    func start(failure: CourierError?) {
        // The task is stored under the lock so that a `cancel` from another thread finds it.
        self.state.withLockedValue { state in
            state.task = Task {
                let error: CourierError?
                if let failure {
                    error = failure
                } else {
                    error = await self.run()
                }
                self.delegate.exchange(didCompleteWith: error)
                self.engine.exchangeDidFinish(self)
                let waiters = self.state.withLockedValue { state in
                    state.isFinished = true
                    defer { state.parkWaiters = [] }
                    return state.parkWaiters
                }
                for waiter in waiters { waiter.resume() }
            }
        }
    }

    /// Returns once the task is done.
    func finished() async {
        await self.state.withLockedValue { $0.task }?.value
    }

    func cancel(with error: CourierError) {
        let (waiter, task) = self.state.withLockedValue { state in
            if state.cancelError == nil { state.cancelError = error.adding(request: self.request) }
            defer { state.resumeWaiter = nil }
            return (state.resumeWaiter, state.task)
        }
        waiter?.resume()
        task?.cancel()
    }

    func suspendReceiving() {
        self.state.withLockedValue { $0.suspended = true }
    }

    func resumeReceiving() {
        let waiter = self.state.withLockedValue { state in
            state.suspended = false
            defer { state.resumeWaiter = nil }
            return state.resumeWaiter
        }
        waiter?.resume()
    }

    // MARK: The task

    private var cancelError: CourierError? { self.state.withLockedValue { $0.cancelError } }

    /// Drives the delegate and returns the completion error (nil for success).
    private func run() async -> CourierError? {
        var request = self.request
        var redirects = 0
        // The URLs redirected from (the cycle check of a policy that allows none).
        var visited: Set<String> = []
        // The request's policy, which a session manager sets to its own; NIOEngine's default for
        // an exchange started otherwise.
        let policy = self.request.options.redirectPolicy ?? NIOEngine.Configuration().redirectPolicy
        while true {
            if let error = self.cancelError { return error }
            guard let stub = self.engine.record(request) else {
                return CourierError(.connectionFailed, "no stub matches \(request.summary)", request: request)
            }
            if stub.delay > .zero {
                try? await Task.sleep(for: stub.delay)
                if let error = self.cancelError { return error }
            }
            if let error = stub.error { return error.adding(request: request) }

            if let length = request.body.knownLength, length > 0 {
                self.delegate.exchange(didSendBodyData: length, totalBytesSent: length, totalBytesExpectedToSend: length)
            }
            let response = HTTPResponse(status: stub.status, headerFields: stub.headerFields)

            // NIOEngine's rule (what is followed, with which method, body and fields, within the
            // request's redirect policy), so that a test on stubs sees what the network would.
            switch RedirectPlanner.step(for: response, request: request, policy: policy, redirectCount: redirects, visitedURLs: visited) {
            case .none:
                break
            case .fail(let message):
                return CourierError(.tooManyRedirects, "\(request.summary): \(message)", request: request, response: response)
            case .follow(let next):
                if let followed = self.delegate.exchange(willPerformRedirection: response, newRequest: next) {
                    redirects += 1
                    visited.insert(request.url.absoluteString)
                    request = followed
                    continue
                }
            }

            if let error = self.cancelError { return error }
            if self.delegate.exchange(didReceive: response, url: request.url) == .cancel {
                return CourierError(.cancelled, "the delegate cancelled \(request.summary)", request: request, response: response)
            }
            let chunkSize = max(1, stub.chunkSize)
            var offset = stub.body.startIndex
            while offset < stub.body.endIndex {
                await self.waitWhileSuspended()
                if let error = self.cancelError { return error.adding(response: response) }
                let end = stub.body.index(offset, offsetBy: chunkSize, limitedBy: stub.body.endIndex) ?? stub.body.endIndex
                self.delegate.exchange(didReceive: ByteBuffer(data: stub.body[offset..<end]))
                offset = end
            }
            return self.cancelError
        }
    }

    private func waitWhileSuspended() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let (resumeNow, parked) = self.state.withLockedValue { state -> (Bool, [CheckedContinuation<Void, Never>]) in
                guard state.suspended, state.cancelError == nil else { return (true, []) }
                state.resumeWaiter = continuation
                defer { state.parkWaiters = [] }
                return (false, state.parkWaiters)
            }
            if resumeNow { continuation.resume() }
            for waiter in parked { waiter.resume() }
        }
    }

    /// Returns once the exchange waits for ``resumeReceiving()`` (at once if it does), or once it
    /// has finished: the event a test of suspension waits for, instead of watching for a while
    /// that nothing more is delivered. For CourierTesting's own tests.
    func waitUntilParked() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = self.state.withLockedValue { state -> Bool in
                if state.resumeWaiter != nil || state.isFinished { return true }
                state.parkWaiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }
}
