import Foundation
import NIOConcurrencyHelpers

/// The connectivity retry (``SessionManager/connectivityRetry``), at the one place every task kind
/// passes through: the end of its exchange. A task whose exchange failed to connect for want of a
/// network does not complete; it waits for the network, then its delegate starts a new exchange
/// for the same request. The task keeps its object, identifier, registry entry and progress, and
/// completes once, after the second exchange (or the wait) ends.
extension TaskDelegate {
    /// Called with the exchange's failure, before the task completes. Returns true when the retry
    /// applies and the task now waits for the network; false when the task should complete.
    ///
    /// It applies when a policy is set, the retry was not spent, the failure is
    /// ``CourierError/Code/connectionFailed`` for want of a network, no response head arrived
    /// (so no byte of the body was delivered, and a download has no file yet), Courier did not
    /// fail the task itself, the request's body can be sent again, and the manager is not invalidated.
    func waitForConnectivity(after error: CourierError) -> Bool {
        guard error.code == .connectionFailed, let manager = self.manager, let policy = manager.connectivityRetry, !manager.isInvalidated
        else {
            return false
        }
        let reachability = manager.reachabilityManager
        guard ConnectionFailureCause(error).meansNetworkIsDown(status: reachability.networkReachabilityStatus) else { return false }
        let began = self.state.withLockedValue { state -> Bool in
            guard case .unused = state.connectivityRetry,
                state.lifecycle == .running || state.lifecycle == .suspended,
                state.response == nil, state.bodyFailure == nil, state.currentRequest.body.isReplayable
            else { return false }
            state.connectivityRetry = .waiting(failure: error, waiter: nil)
            state.exchange = nil
            return true
        }
        guard began else { return false }
        if manager.isInvalidated {
            // `invalidate(cancelingTasks: false)` may have looked at this task before the wait
            // began: the wait ends here (once, whoever gets to it).
            self.abandonConnectivityWait()
            return true
        }
        let waiter = _Concurrency.Task {
            let networkIsBack = await reachability.waitUntilReachable(within: policy.maximumWait)
            self.connectivityWaitEnded(networkIsBack: networkIsBack)
        }
        let stored = self.state.withLockedValue { state -> Bool in
            guard case .waiting(let failure, nil) = state.connectivityRetry else { return false }
            state.connectivityRetry = .waiting(failure: failure, waiter: waiter)
            return true
        }
        // The task was cancelled (or the wait ended) meanwhile: nobody needs the waiter any more.
        if !stored { waiter.cancel() }
        return true
    }

    /// The wait ended: send the request again, end the task with its failure, or, when the task is
    /// suspended, keep the verdict for ``resume()``.
    private func connectivityWaitEnded(networkIsBack: Bool) {
        enum Next { case restart, fail(CourierError), hold }
        let next = self.state.withLockedValue { state -> Next in
            guard case .waiting(let failure, _) = state.connectivityRetry else { return .hold }
            if state.lifecycle == .suspended {
                state.connectivityRetry = .decided(networkIsBack: networkIsBack, failure: failure)
                return .hold
            }
            state.connectivityRetry = .spent
            return networkIsBack ? .restart : .fail(failure)
        }
        switch next {
        case .restart: self.restartAfterConnectivityReturns()
        case .fail(let failure): self.complete(with: failure)
        case .hold: break
        }
    }

    /// Acts on a verdict kept while the task was suspended; called by ``resume()``.
    func actOnConnectivityDecision(_ decision: (networkIsBack: Bool, failure: CourierError)) {
        if decision.networkIsBack {
            self.restartAfterConnectivityReturns()
        } else {
            self.complete(with: decision.failure)
        }
    }

    /// Starts the second exchange, for the request the first one was sending.
    private func restartAfterConnectivityReturns() {
        let manager = self.state.withLockedValue { state -> SessionManager? in
            state.attempt += 1
            return state.owner
        }
        manager?.start(self)
    }

    /// Ends a wait for the network at once, with the failure that began it (the manager was
    /// invalidated without cancelling its tasks: nothing new may start). Does nothing otherwise.
    func abandonConnectivityWait() {
        guard let abandoned = self.state.withLockedValue({ $0.connectivityRetry.abandon() }) else { return }
        abandoned.waiter?.cancel()
        self.complete(with: abandoned.failure)
    }
}
