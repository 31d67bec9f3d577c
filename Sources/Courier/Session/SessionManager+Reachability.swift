import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

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

    /// Opt-in: when an `async` data or upload request fails to connect because the network is down
    /// (``reachabilityManager`` says not reachable, or the socket said `ENETUNREACH`/`ENETDOWN`),
    /// wait up to the policy's ``ConnectivityRetryPolicy/maximumWait`` for the reachability manager
    /// to report a reachable status, then send the request once more. `nil` (the default): no
    /// retry. Waiting starts the reachability manager's monitoring if it was off. Completion-handler
    /// tasks, downloads, streamed responses and requests whose body cannot be read twice
    /// (``RequestBody/isReplayable`` false) are not retried.
    public var connectivityRetry: ConnectivityRetryPolicy? {
        get { self.settings.withLockedValue { $0.connectivityRetry } }
        set { self.settings.withLockedValue { $0.connectivityRetry = newValue } }
    }

    /// Whether `error` is a failure to connect for want of a network, and the network came back
    /// within the policy's wait.
    func shouldRetryAfterConnectivityReturns(_ error: CourierError?) async -> Bool {
        guard let error, error.code == .connectionFailed else { return false }
        let (policy, reachability) = self.settings.withLockedValue { ($0.connectivityRetry, $0.reachabilityManager) }
        guard let policy else { return false }
        let networkDown =
            reachability.networkReachabilityStatus == .notReachable || Self.saysNetworkIsDown(error.underlyingError)
        guard networkDown else { return false }
        return await reachability.waitUntilReachable(within: policy.maximumWait)
    }

    private static func saysNetworkIsDown(_ error: (any Error)?) -> Bool {
        if let error = error as? IOError {
            return [ENETUNREACH, ENETDOWN, EHOSTUNREACH].contains(error.errnoCode)
        }
        if let error = error as? NIOConnectionError {
            return !error.connectionErrors.isEmpty && error.connectionErrors.allSatisfy { Self.saysNetworkIsDown($0.error) }
        }
        return false
    }
}

extension NetworkReachabilityManager {
    /// Waits until the status is reachable (true) or `limit` has passed (false), starting
    /// monitoring if it was off.
    func waitUntilReachable(within limit: Duration) async -> Bool {
        if !self.isMonitoring { self.startMonitoring() }
        let statuses = self.statuses
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await status in statuses where status.isReachable { return true }
                return false
            }
            group.addTask {
                try? await Task.sleep(for: limit)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }
}
