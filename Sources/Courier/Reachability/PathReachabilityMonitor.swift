#if canImport(Network) && !os(Linux)
import Dispatch
import Network

/// Apple platforms: the Network framework's path monitor. It watches the system's path, not one
/// host, so domain and address managers report the general path there.
final class PathReachabilityMonitor: ReachabilityMonitor, @unchecked Sendable {
    // @unchecked: NWPathMonitor is thread safe; it is only started and cancelled.
    private let monitor = NWPathMonitor()
    private let queue = DispatchQueue(label: "courier.reachability.path")
    /// Set on ``queue`` only: tells `stop()` it runs there.
    private let onQueue = DispatchSpecificKey<Bool>()
    let target: ReachabilityTarget

    init(target: ReachabilityTarget) {
        self.target = target
        self.queue.setSpecific(key: self.onQueue, value: true)
    }

    func start(_ report: @escaping @Sendable (ReachabilityReport) -> Void) {
        let loopback = self.target.isLoopback
        self.monitor.pathUpdateHandler = { path in
            // This host is reachable whatever the path: loopback never leaves it.
            report(ReachabilityReport(status: loopback ? .reachableViaEthernet : Self.status(of: path)))
        }
        self.monitor.start(queue: self.queue)
    }

    func stop() {
        self.monitor.cancel()
        // Reports already queued are dropped by the manager (a stale generation). Not from the
        // queue itself (a report whose manager was freed inside it stops it there): `sync` on the
        // current queue is libdispatch's trap, and nothing queued can run before it anyway.
        if DispatchQueue.getSpecific(key: self.onQueue) == nil { self.queue.sync {} }
    }

    static func status(of path: NWPath) -> NetworkReachabilityStatus {
        guard path.status == .satisfied else { return .notReachable }
        if path.usesInterfaceType(.wifi) { return .reachableViaWiFi }
        if path.usesInterfaceType(.cellular) { return .reachableViaWWAN }
        return .reachableViaEthernet
    }
}
#endif
