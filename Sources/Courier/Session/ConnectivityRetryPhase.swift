import Foundation
import NIOCore
import NIOPosix

/// Where a task stands with its one connectivity retry (``SessionManager/connectivityRetry``).
/// Guarded by the task delegate's lock, with the task's ``TaskLifecycle``.
enum ConnectivityRetryPhase {
    /// The task has not failed for want of a network.
    case unused
    /// The exchange failed for want of a network; the task waits for it to come back. `failure`
    /// ends the task if it does not; `waiter` is the task that waits (nil until stored).
    case waiting(failure: CourierError, waiter: Task<Void, Never>?)
    /// The wait ended while the task was suspended: ``SessionTask/resume()`` acts on the verdict.
    case decided(networkIsBack: Bool, failure: CourierError)
    /// The retry was spent: the request went out again, or the task ended while waiting.
    case spent

    /// Whether the task is between a failed exchange and its retry (no exchange runs).
    var isWaiting: Bool {
        switch self {
        case .waiting, .decided: true
        case .unused, .spent: false
        }
    }

    /// Ends the wait, if any: returns the failure it held and the waiting task to cancel.
    mutating func abandon() -> (failure: CourierError, waiter: Task<Void, Never>?)? {
        switch self {
        case .waiting(let failure, let waiter):
            self = .spent
            return (failure, waiter)
        case .decided(_, let failure):
            self = .spent
            return (failure, nil)
        case .unused, .spent:
            return nil
        }
    }

    /// Takes the verdict of a wait that ended while the task was suspended.
    mutating func takeDecision() -> (networkIsBack: Bool, failure: CourierError)? {
        guard case .decided(let networkIsBack, let failure) = self else { return nil }
        self = .spent
        return (networkIsBack, failure)
    }
}

/// What the socket errors under a ``CourierError/Code/connectionFailed`` say about the network.
enum ConnectionFailureCause: Equatable {
    /// No route, or the interface is down (`ENETUNREACH`, `ENETDOWN`, `EHOSTUNREACH`).
    case networkDown
    /// The network carried the attempt and something answered or failed otherwise (a refused
    /// connection, a reset, …): waiting for the network would not help.
    case other
    /// Nothing says (a failed name lookup, an error without an errno).
    case unknown

    init(_ error: (any Error)?) {
        if let error = error as? CourierError {
            self.init(error.underlyingError)
        } else if let error = error as? IOError {
            self = [ENETUNREACH, ENETDOWN, EHOSTUNREACH].contains(error.errnoCode) ? .networkDown : .other
        } else if let error = error as? NIOConnectionError {
            let causes = error.connectionErrors.map { Self($0.error) }
            if causes.isEmpty {
                self = .unknown
            } else if causes.allSatisfy({ $0 == .networkDown }) {
                self = .networkDown
            } else if causes.contains(.other) {
                self = .other
            } else {
                self = .unknown
            }
        } else {
            self = .unknown
        }
    }

    /// Whether a connection failure with this cause is one for want of a network, given what the
    /// reachability manager says: the socket's word first, the manager's when the socket says nothing.
    func meansNetworkIsDown(status: NetworkReachabilityStatus) -> Bool {
        switch self {
        case .networkDown: true
        case .other: false
        case .unknown: status == .notReachable
        }
    }
}
