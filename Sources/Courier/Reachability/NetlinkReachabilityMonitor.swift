#if os(Linux)
import CCourierNetlink
import Dispatch
import Foundation
import Glibc
import NIOConcurrencyHelpers

/// Watches a routing netlink socket on a thread of its own and reports the target's status after
/// every batch of link, address and route changes.
///
/// The kernel does not announce every route it drops (taking a link down flushes its IPv4 routes
/// silently), so events only say "something changed": each batch is followed by a fresh dump of
/// links and routes on a second socket, and the status is computed from that. A lost event
/// (`ENOBUFS`) needs nothing more than the next dump.
///
/// A domain that did not resolve is looked up again after a back-off
/// (``ReachabilityEnvironment/lookupRetryDelay``, doubling up to
/// ``ReachabilityEnvironment/maximumLookupRetryDelay``) as well as after every change: DHCP often
/// sets the address and the route before it writes `resolv.conf`, and a lookup in between fails
/// with no change to follow. The back-off is the thread's own wait for events, so it ends with
/// the thread; a change starts it again from the first delay.
final class NetlinkReachabilityMonitor: ReachabilityMonitor {
    /// What the monitor holds while it runs; tests read it to check nothing outlives `stop()`.
    struct Resources: Sendable, Hashable {
        /// The kernel thread id of the monitor thread.
        var threadID: Int32 = 0
        /// The inode numbers of its two netlink sockets.
        var socketInodes: [UInt64] = []
        /// How many times the status was computed (once at start, then once per coalesced batch of
        /// changes): tests wait for it to grow to know that a change was seen, instead of sleeping.
        var evaluations = 0
    }

    private struct Control {
        /// The pipe `stop()` writes to to end the thread. Closed by `stop()` once the thread has
        /// finished (so the write never meets a closed reader: SIGPIPE), or by the thread itself
        /// when `stop()` could not wait for it (`closeOnExit`).
        var wakeReader: Int32 = -1
        var wakeWriter: Int32 = -1
        var finished: DispatchSemaphore?
        var stopping = false
        /// The thread is inside the resolver, which may take as long as DNS does.
        var resolving = false
        var closeOnExit = false
    }

    let target: ReachabilityTarget
    let environment: ReachabilityEnvironment
    private let control = NIOLockedValueBox(Control())
    let resources = NIOLockedValueBox(Resources())

    init(target: ReachabilityTarget, environment: ReachabilityEnvironment) {
        self.target = target
        self.environment = environment
    }

    /// Whether the thread was started and not told to stop (for tests).
    var isRunning: Bool { self.control.withLockedValue { $0.finished != nil && !$0.stopping } }

    /// Starts the thread, unless ``stop()`` came first: a monitor runs once, from one start to
    /// one stop.
    func start(_ report: @escaping @Sendable (ReachabilityReport) -> Void) {
        var pipeEnds: [Int32] = [-1, -1]
        let piped = courier_wake_pipe(&pipeEnds)
        guard piped == 0 else {
            report(ReachabilityReport(status: .unknown, failure: .socketFailed("pipe2", errno: -piped)))
            return
        }
        let (wakeReader, wakeWriter) = (pipeEnds[0], pipeEnds[1])
        let finished = DispatchSemaphore(value: 0)
        let stoppedFirst = self.control.withLockedValue { control -> Bool in
            if control.stopping { return true }
            control = Control(wakeReader: wakeReader, wakeWriter: wakeWriter, finished: finished)
            return false
        }
        if stoppedFirst {
            // `stop()` came first (the manager starts a monitor after its lock is released, and a
            // stop may come in between): starting now would leave a thread nobody stops.
            close(wakeReader)
            close(wakeWriter)
            return
        }
        let thread = Thread { [self] in
            self.run(wakeReader: wakeReader, report: report)
            if self.control.withLockedValue({ $0.closeOnExit }) {
                close(wakeReader)
                close(wakeWriter)
            }
            finished.signal()
        }
        thread.name = "courier.reachability"
        thread.start()
    }

    /// Ends the thread and closes its sockets before returning, except in two cases where waiting
    /// would block: the thread is resolving a domain (DNS may take seconds), or `stop()` runs on
    /// the thread itself (the manager's last reference went away during a report). Then the thread
    /// ends, and closes everything, as soon as it returns; its reports are dropped meanwhile.
    func stop() {
        let threadID = self.resources.withLockedValue { $0.threadID }
        let plan = self.control.withLockedValue { control -> (Control, detach: Bool)? in
            guard control.finished != nil else {
                // Not started yet: it never will be (``start(_:)`` checks).
                control.stopping = true
                return nil
            }
            guard !control.stopping else { return nil }
            control.stopping = true
            control.closeOnExit = control.resolving || courier_gettid() == threadID
            return (control, control.closeOnExit)
        }
        guard let (control, detach) = plan, let finished = control.finished else { return }
        var byte: UInt8 = 1
        _ = write(control.wakeWriter, &byte, 1)
        if detach { return }
        finished.wait()
        close(control.wakeWriter)
        close(control.wakeReader)
    }

    /// Runs the resolver unless `stop()` has begun; `stop()` does not wait for a thread in here.
    private func resolve(_ name: String) -> Result<[IPAddress], ReachabilityFailure>? {
        let go = self.control.withLockedValue { control -> Bool in
            guard !control.stopping else { return false }
            control.resolving = true
            return true
        }
        guard go else { return nil }
        defer { self.control.withLockedValue { $0.resolving = false } }
        return self.environment.resolver.resolve(name)
    }

    // MARK: The monitor thread

    private func run(wakeReader: Int32, report: @Sendable (ReachabilityReport) -> Void) {
        self.resources.withLockedValue { $0.threadID = courier_gettid() }
        if let path = self.environment.namespacePath {
            let entered = courier_enter_netns(path)
            guard entered == 0 else {
                report(ReachabilityReport(status: .unknown, failure: .namespaceFailed(path, errno: -entered)))
                return
            }
        }
        let events = self.environment.openSocket(true)
        guard events >= 0 else {
            report(ReachabilityReport(status: .unknown, failure: .socketFailed("opening the event socket", errno: -events)))
            return
        }
        defer { close(events) }
        let dumps = self.environment.openSocket(false)
        guard dumps >= 0 else {
            report(ReachabilityReport(status: .unknown, failure: .socketFailed("opening the dump socket", errno: -dumps)))
            return
        }
        defer { close(dumps) }
        self.resources.withLockedValue { $0.socketInodes = [Self.inode(events), Self.inode(dumps)] }

        var dumper = NetlinkDumper(fd: dumps)
        // How long to wait before looking the domain up again the next time it does not resolve.
        var lookupRetryDelay = self.environment.lookupRetryDelay
        while true {
            let outcome = self.evaluate(&dumper)
            self.resources.withLockedValue { $0.evaluations += 1 }
            report(outcome)
            // A lookup that failed (not one whose addresses have no route) is tried again after
            // the delay, unless a change comes first.
            let lookupFailed = if case .resolutionFailed? = outcome.failure { true } else { false }
            switch self.waitForChanges(events: events, wakeReader: wakeReader, limit: lookupFailed ? lookupRetryDelay : nil) {
            case .stop:
                return
            case .changes:
                lookupRetryDelay = self.environment.lookupRetryDelay
            case .timeout:
                lookupRetryDelay = min(lookupRetryDelay * 2, self.environment.maximumLookupRetryDelay)
            }
        }
    }

    private func evaluate(_ dumper: inout NetlinkDumper) -> ReachabilityReport {
        // This host itself (`localhost`, 127.0.0.1, ::1) is reachable whatever the routes say, and
        // needs no resolver.
        if self.target.isLoopback { return ReachabilityReport(status: .reachableViaEthernet) }
        let snapshot: RoutingSnapshot
        do {
            snapshot = try dumper.snapshot()
        } catch {
            return ReachabilityReport(status: .unknown, failure: error)
        }
        let sysfs = self.environment.sysfsRoot
        let kind = { (link: RoutingSnapshot.Link) in InterfaceKind.status(of: link, sysfs: sysfs) }
        switch self.target {
        case .defaultRoute:
            return ReachabilityReport(status: snapshot.status(toward: nil, kind: kind))
        case .address(let address):
            return ReachabilityReport(status: snapshot.status(toward: [address], kind: kind))
        case .domain(let name):
            switch self.resolve(name) {
            case .none:
                return ReachabilityReport(status: .unknown)  // stopping: dropped by the manager
            case .success(let addresses):
                return ReachabilityReport(status: snapshot.status(toward: addresses, kind: kind))
            case .failure(let failure):
                return ReachabilityReport(status: .notReachable, failure: failure)
            }
        case .invalidAddress(let text):
            return ReachabilityReport(status: .unknown, failure: .invalidAddress(text))
        }
    }

    /// What ended a wait for changes.
    private enum WaitOutcome {
        /// `stop()` asks the thread to end.
        case stop
        /// The network changed, and has gone quiet since.
        case changes
        /// The limit passed with no change.
        case timeout
    }

    /// Waits for a change (no longer than `limit`, when given), then for the network to go quiet
    /// (``ReachabilityEnvironment/quietPeriod``, at most ``ReachabilityEnvironment/maximumDelay``
    /// in all).
    private func waitForChanges(events: Int32, wakeReader: Int32, limit: Duration?) -> WaitOutcome {
        switch self.poll(events: events, wakeReader: wakeReader, timeout: limit.map { Self.milliseconds($0) } ?? -1) {
        case .wake: return .stop
        case .timeout where limit != nil: return .timeout
        case .timeout, .events: break
        }
        self.drain(events)
        let deadline = ContinuousClock.now + self.environment.maximumDelay
        while true {
            let left = min(self.environment.quietPeriod, deadline - ContinuousClock.now)
            guard left > .zero else { return .changes }
            switch self.poll(events: events, wakeReader: wakeReader, timeout: Self.milliseconds(left)) {
            case .wake: return .stop
            case .timeout: return .changes
            case .events: self.drain(events)
            }
        }
    }

    private enum Wakeup { case events, wake, timeout }

    private func poll(events: Int32, wakeReader: Int32, timeout: Int32) -> Wakeup {
        var fds = [
            pollfd(fd: wakeReader, events: Int16(POLLIN), revents: 0),
            pollfd(fd: events, events: Int16(POLLIN), revents: 0),
        ]
        while true {
            let ready = Glibc.poll(&fds, 2, timeout)
            if ready < 0, errno == EINTR { continue }
            if ready <= 0 { return .timeout }
            if fds[0].revents != 0 { return .wake }
            return .events
        }
    }

    /// Reads every pending event; their content does not matter, the next dump does.
    private func drain(_ events: Int32) {
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(events, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count > 0 { continue }
            // ENOBUFS: events were lost; the dump that follows resynchronises fully.
            if count < 0, errno == EINTR || errno == ENOBUFS { continue }
            return
        }
    }

    private static func milliseconds(_ duration: Duration) -> Int32 {
        let (seconds, attoseconds) = duration.components
        return Int32(clamping: seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
    }

    private static func inode(_ fd: Int32) -> UInt64 {
        UInt64(courier_inode(fd))
    }
}
#endif
