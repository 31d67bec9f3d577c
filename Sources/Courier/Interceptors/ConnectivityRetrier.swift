import Logging
import Foundation
import NIOCore
import NIOPosix

/// The connectivity retry (``SessionManager/connectivityRetry``) as a retrier: a task that failed
/// to connect for want of a network waits for it, then is sent once more.
///
/// It applies when the failure is ``CourierError/Code/connectionFailed`` for want of a network
/// (the socket said so, or said nothing while the reachability manager says not reachable), no
/// response head arrived, and the task was not retried for this reason before. It then waits up
/// to the policy's ``ConnectivityRetryPolicy/maximumWait`` for the reachability manager to report
/// a reachable status after the failure: retry when it does, the first failure when it does not.
/// The status the manager had before is not trusted: the monitor reports a change only once the
/// network has gone quiet (50–500 ms on Linux), so right after a route went away it may still say
/// reachable, and a status kept from an earlier run of the monitor is older still. The wait is
/// timed on the session's ``RetryClock`` (``SessionManager/retryClock``).
struct ConnectivityRetrier: RequestRetrier {
    let policy: ConnectivityRetryPolicy
    let reachability: NetworkReachabilityManager
    var clock: any RetryClock = .system
    /// Told when a task starts waiting for the network (the task's event monitors), if set: once
    /// the wait listens, so that a status reported from then on is heard.
    var willWait: (@Sendable () -> Void)?

    func retry(_ attempt: FailedAttempt) async throws -> RetryDecision {
        // No response head: none for the attempt's last request. A redirect before it means an
        // earlier server answered, and a `POST` it turned into a `GET` is not sent again.
        guard let error = attempt.error, error.code == .connectionFailed, attempt.response == nil,
            !attempt.retryWouldRepeatAProcessedRequest, attempt.retryCount(for: .connectivity) == 0,
            ConnectionFailureCause(error).meansNetworkIsDown(status: self.reachability.networkReachabilityStatus)
        else { return .doNotRetry }
        attempt.logger.debug("waiting for the network to retry", metadata: ["courier.maximum-wait": "\(self.policy.maximumWait)"])
        let networkIsBack = await self.reachability.waitUntilReachable(
            reportedAfter: attempt.failedAt, within: self.policy.maximumWait, clock: self.clock, listening: self.willWait)
        try Task.checkCancellation()
        return networkIsBack ? .retry(reason: .connectivity) : .doNotRetry
    }
}

extension NetworkReachabilityManager {
    /// Waits until the running monitor reports a reachable status (true) or `limit` has passed on
    /// `clock` (false), starting monitoring if it was off. With `instant`, only a report after it
    /// counts; without, the status the running monitor last reported counts too. A status kept
    /// from an earlier run of the monitor never does (``reports(after:)``). `listening` is called
    /// once the wait hears every report (monitoring on, the stream made), before it waits.
    func waitUntilReachable(
        reportedAfter instant: ContinuousClock.Instant? = nil, within limit: Duration, clock: any RetryClock = .system,
        listening: (@Sendable () -> Void)? = nil
    ) async -> Bool {
        self.startMonitoringIfIdle()
        let reports = self.reports(after: instant)
        listening?()
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await status in reports where status.isReachable { return true }
                return false
            }
            group.addTask {
                try? await clock.sleep(for: limit)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
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
