import Foundation
import NIOConcurrencyHelpers

/// When a request that failed because the network was down is sent again
/// (``SessionManager/connectivityRetry``).
public struct ConnectivityRetryPolicy: Sendable, Hashable {
    /// How long to wait for the network to come back before giving up and returning the failure.
    public var maximumWait: Duration

    /// Waits up to `maximumWait` (30 seconds by default) for the network, then retries once.
    public init(maximumWait: Duration = .seconds(30)) {
        self.maximumWait = maximumWait
    }
}

extension SessionManager {
    /// The reachability manager the session consults (AFNetworking's `reachabilityManager`):
    /// ``NetworkReachabilityManager/shared`` by default. Advisory only: no request ever waits for
    /// it, unless ``connectivityRetry`` is set and a request has failed for want of a network.
    public var reachabilityManager: NetworkReachabilityManager {
        get { self.settings.withLockedValue { $0.reachabilityManager } }
        set { self.settings.withLockedValue { $0.reachabilityManager = newValue } }
    }

    /// Opt-in: a task that fails to connect because the network is down waits for it to come
    /// back, then sends its request once more. `nil` (the default): no retry.
    ///
    /// Every kind of task is retried alike: data and upload tasks with completion handlers (and
    /// so ``HTTPSessionManager``'s verbs), their `async` forms, downloads (callback and `async`;
    /// the retry writes a new file, and a download continuing resume data asks for the same range
    /// again), and ``stream(_:downloadProgress:gatheringBodiesUpTo:)`` and ``eventStream(_:options:)`` connections.
    ///
    /// A task is retried when all of these hold:
    /// - the failure is ``CourierError/Code/connectionFailed`` for want of a network: the socket
    ///   said `ENETUNREACH`, `ENETDOWN` or `EHOSTUNREACH`, or it said nothing (a failed name
    ///   lookup) and ``reachabilityManager`` reports ``NetworkReachabilityStatus/notReachable``.
    ///   A refused or reset connection is not retried: something answered;
    /// - no response head had arrived, so no byte of the response was delivered, and no redirect
    ///   turned a request that is not idempotent into another method (a `POST` answered `303`: the
    ///   server did its work; ``FailedAttempt/retryWouldRepeatAProcessedRequest``);
    /// - the request's body can be sent again (``RequestBody/isReplayable``);
    /// - the task was not retried before (at most one retry), and the manager is not invalidated.
    ///
    /// The task then waits, without an exchange, up to the policy's
    /// ``ConnectivityRetryPolicy/maximumWait`` for ``reachabilityManager`` to report a reachable
    /// status after the failure (waiting starts its monitoring if it was off), and sends the
    /// request again; if the network does not come back it completes with the first failure. A
    /// status reported before the failure does not count, as URLSession's `waitsForConnectivity`
    /// looks at the path afresh: the monitor reports once the network has gone quiet, so right
    /// after a route went away it may still say reachable, and a status kept from an earlier run
    /// of the monitor (``NetworkReachabilityManager/stopMonitoring()``) is older still.
    ///
    /// Throughout the wait and the retry the task stays the same ``SessionTask`` (same
    /// identifier, still listed, progress never going backwards) and it completes once: one
    /// completion handler call, one
    /// ``Foundation/NSNotification/Name/taskDidComplete``. While it waits, ``SessionTask/cancel()``
    /// and ``invalidate(cancelingTasks:)-7w13y`` with `true` end it at once with
    /// ``CourierError/Code/cancelled``; ``invalidate(cancelingTasks:)-7w13y`` with `false` ends it at
    /// once with the first failure; ``SessionTask/suspend()`` holds the retry until
    /// ``SessionTask/resume()``.
    public var connectivityRetry: ConnectivityRetryPolicy? {
        get { self.settings.withLockedValue { $0.connectivityRetry } }
        set { self.settings.withLockedValue { $0.connectivityRetry = newValue } }
    }
}
