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
final class NetlinkReachabilityMonitor: ReachabilityMonitor {
    /// What the monitor holds while it runs; tests read it to check nothing outlives `stop()`.
    struct Resources: Sendable, Hashable {
        /// The kernel thread id of the monitor thread.
        var threadID: Int32 = 0
        /// The inode numbers of its two netlink sockets.
        var socketInodes: [UInt64] = []
    }

    private struct Control {
        /// The pipe `stop()` writes to to end the thread; both ends are closed by `stop()`, after
        /// the thread has finished, so the write never meets a closed reader (SIGPIPE).
        var wakeReader: Int32 = -1
        var wakeWriter: Int32 = -1
        var finished: DispatchSemaphore?
        /// Set when `stop()` ran on the monitor thread itself: the thread closes the pipe as it ends.
        var closeOnExit: (reader: Int32, writer: Int32)?
    }

    let target: ReachabilityTarget
    let environment: ReachabilityEnvironment
    private let control = NIOLockedValueBox(Control())
    let resources = NIOLockedValueBox(Resources())

    init(target: ReachabilityTarget, environment: ReachabilityEnvironment) {
        self.target = target
        self.environment = environment
    }

    func start(_ report: @escaping @Sendable (ReachabilityReport) -> Void) {
        var pipeEnds: [Int32] = [-1, -1]
        let piped = courier_wake_pipe(&pipeEnds)
        guard piped == 0 else {
            report(ReachabilityReport(status: .unknown, failure: .socketFailed("pipe2", errno: -piped)))
            return
        }
        let wakeReader = pipeEnds[0]
        let finished = DispatchSemaphore(value: 0)
        self.control.withLockedValue { $0 = Control(wakeReader: wakeReader, wakeWriter: pipeEnds[1], finished: finished) }
        let thread = Thread { [self] in
            self.run(wakeReader: wakeReader, report: report)
            if let ends = self.control.withLockedValue({ $0.closeOnExit }) {
                close(ends.reader)
                close(ends.writer)
            }
            finished.signal()
        }
        thread.name = "courier.reachability"
        thread.start()
    }

    func stop() {
        let control = self.control.withLockedValue { control in
            defer { control = Control() }
            return control
        }
        guard let finished = control.finished else { return }
        var byte: UInt8 = 1
        _ = write(control.wakeWriter, &byte, 1)
        if courier_gettid() == self.resources.withLockedValue({ $0.threadID }) {
            // The manager's last reference went away during a report, on this very thread: it
            // cannot wait for itself; it ends once the report returns and closes the pipe then.
            self.control.withLockedValue { $0.closeOnExit = (control.wakeReader, control.wakeWriter) }
            return
        }
        finished.wait()
        close(control.wakeWriter)
        close(control.wakeReader)
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
        repeat {
            report(self.evaluate(&dumper))
        } while self.waitForChanges(events: events, wakeReader: wakeReader)
    }

    private func evaluate(_ dumper: inout NetlinkDumper) -> ReachabilityReport {
        let snapshot: RoutingSnapshot
        do {
            snapshot = try dumper.snapshot()
        } catch {
            return ReachabilityReport(status: .unknown, failure: error)
        }
        let kind = { (link: RoutingSnapshot.Link) in InterfaceKind.status(of: link) }
        switch self.target {
        case .defaultRoute:
            return ReachabilityReport(status: snapshot.status(toward: nil, kind: kind))
        case .address(let address):
            return ReachabilityReport(status: snapshot.status(toward: [address], kind: kind))
        case .domain(let name):
            switch self.environment.resolver.resolve(name) {
            case .success(let addresses):
                return ReachabilityReport(status: snapshot.status(toward: addresses, kind: kind))
            case .failure(let failure):
                return ReachabilityReport(status: .notReachable, failure: failure)
            }
        case .invalidAddress(let text):
            return ReachabilityReport(status: .unknown, failure: .invalidAddress(text))
        }
    }

    /// Waits for a change, then for the network to go quiet (``ReachabilityEnvironment/quietPeriod``,
    /// at most ``ReachabilityEnvironment/maximumDelay`` in all). False once `stop()` asks the
    /// thread to end.
    private func waitForChanges(events: Int32, wakeReader: Int32) -> Bool {
        switch self.poll(events: events, wakeReader: wakeReader, timeout: -1) {
        case .wake: return false
        case .timeout, .events: break
        }
        self.drain(events)
        let deadline = ContinuousClock.now + self.environment.maximumDelay
        while true {
            let left = min(self.environment.quietPeriod, deadline - ContinuousClock.now)
            guard left > .zero else { return true }
            switch self.poll(events: events, wakeReader: wakeReader, timeout: Self.milliseconds(left)) {
            case .wake: return false
            case .timeout: return true
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
