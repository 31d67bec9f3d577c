#if os(Linux)
import CCourierNetlink
#endif

/// One answer from a monitor: a status, and the failure behind it when there is one.
struct ReachabilityReport: Sendable, Hashable {
    var status: NetworkReachabilityStatus
    var failure: ReachabilityFailure?
}

/// Watches the system for one target and reports statuses (the same status may repeat; the
/// manager keeps only changes). `start` is called once; `stop` returns once no further report can
/// arrive and every socket and thread of the monitor is gone.
protocol ReachabilityMonitor: AnyObject, Sendable {
    func start(_ report: @escaping @Sendable (ReachabilityReport) -> Void)
    func stop()
}

/// Where and how a manager watches: the system by default; tests point it at a network
/// namespace of their own, a fixed resolver, or a socket that fails.
struct ReachabilityEnvironment: Sendable {
    /// A network namespace to watch (`/var/run/netns/NAME`); `nil` watches the process's own.
    /// Test-only: the monitor thread `setns()`s into it before opening its sockets.
    var namespacePath: String?
    /// Where the monitor reads links' sysfs entries to tell WiFi and WWAN from Ethernet
    /// (``InterfaceKind``); tests point it at a directory of their own.
    var sysfsRoot: String = InterfaceKind.defaultSysfsRoot
    /// Resolves domains, on the monitor's thread.
    var resolver: HostResolver = .system
    /// Opens a routing netlink socket (subscribed to changes, or for dumps): a descriptor or -errno.
    var openSocket: @Sendable (_ subscribed: Bool) -> Int32 = ReachabilityEnvironment.openNetlinkSocket
    /// After a change, how long the network must stay quiet before the status is computed again…
    var quietPeriod: Duration = .milliseconds(50)
    /// …and the longest a burst of changes (a flapping link) may delay it.
    var maximumDelay: Duration = .milliseconds(500)
    /// After a domain did not resolve, how long the monitor waits before looking it up again when
    /// the network does not change meanwhile; the wait doubles after each lookup that fails again…
    var lookupRetryDelay: Duration = .seconds(1)
    /// …up to this.
    var maximumLookupRetryDelay: Duration = .seconds(30)
    /// Makes the monitor for a target; the platform's by default.
    var makeMonitor: @Sendable (ReachabilityTarget, ReachabilityEnvironment) -> (any ReachabilityMonitor)? =
        ReachabilityEnvironment.platformMonitor

    static let system = ReachabilityEnvironment()

    static func openNetlinkSocket(_ subscribed: Bool) -> Int32 {
        #if os(Linux)
        courier_nl_open(subscribed ? 1 : 0)
        #else
        -38  // ENOSYS
        #endif
    }

    static func platformMonitor(_ target: ReachabilityTarget, _ environment: ReachabilityEnvironment) -> (any ReachabilityMonitor)? {
        #if os(Linux)
        NetlinkReachabilityMonitor(target: target, environment: environment)
        #elseif canImport(Network)
        PathReachabilityMonitor(target: target)
        #else
        nil
        #endif
    }
}
