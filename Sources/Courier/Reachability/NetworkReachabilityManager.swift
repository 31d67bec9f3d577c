import Dispatch
import Foundation
import Logging
import NIOConcurrencyHelpers

/// Tells whether the network, or a given host, can be reached, and when that changes
/// (AFNetworking's `AFNetworkReachabilityManager`).
///
/// On Linux the manager listens to the kernel's routing netlink socket: the target is reachable
/// when a route to it (the domain's resolved addresses, the given address, or a default route for
/// the general manager) leaves through an interface that is up and running. The interface's kind
/// gives the status: wireless → ``NetworkReachabilityStatus/reachableViaWiFi``, cellular modems
/// and PPP → ``NetworkReachabilityStatus/reachableViaWWAN``, anything else (wired, veth, bridges,
/// tunnels) → ``NetworkReachabilityStatus/reachableViaEthernet``. On Apple platforms the Network
/// framework's path monitor answers.
///
/// ```swift
/// let reachability = NetworkReachabilityManager.shared
/// reachability.statusChangeHandler = { status in print("network:", status) }
/// reachability.startMonitoring()
/// ```
///
/// Reachability is advisory: a reachable status does not promise that a request will succeed, and
/// a request should never wait for one. Use it to tell the user why requests fail, or to retry
/// once the network is back (``SessionManager/connectivityRetry``).
///
/// What bad input gives, each with its reason logged at `.warning` and kept in ``failureReason``:
/// - an address that is not an IPv4 or IPv6 literal: ``NetworkReachabilityStatus/unknown``, and
///   monitoring does not start;
/// - a domain that does not resolve: ``NetworkReachabilityStatus/notReachable`` until it does
///   (resolution is tried again after every change of the network, and on Linux after a back-off
///   of 1 second, doubling up to 30, while the network does not change);
/// - a routing socket that cannot be opened or read: ``NetworkReachabilityStatus/unknown``.
public final class NetworkReachabilityManager: Sendable {
    /// The general manager, for any route out. Monitoring is off until ``startMonitoring()``.
    public static let shared = NetworkReachabilityManager()

    private enum Phase {
        case idle
        case monitoring(any ReachabilityMonitor, generation: Int)
    }

    private struct State {
        var phase = Phase.idle
        var generation = 0
        var status = NetworkReachabilityStatus.unknown
        /// Set by ``startMonitoring()``: the new monitor's first report reaches observers even when
        /// the status is the one kept from an earlier run (AFNetworking reports on every start).
        var announcesNextReport = false
        var failure: ReachabilityFailure?
        var statusChangeHandler: (@Sendable (NetworkReachabilityStatus) -> Void)?
        var callbackQueue: DispatchQueue
        var streams: [Int: AsyncStream<NetworkReachabilityStatus>.Continuation] = [:]
        /// When the running monitor last reported, a change or not; `nil` until it has, and again
        /// from each start and stop: a status kept from an earlier run is not a fresh one.
        var lastReport: ContinuousClock.Instant?
        /// The streams of ``reports(after:)``, which hear every report of the running monitor.
        var reportStreams: [Int: AsyncStream<NetworkReachabilityStatus>.Continuation] = [:]
        var nextStreamID = 0
    }

    let target: ReachabilityTarget
    let environment: ReachabilityEnvironment
    private let logger: Logger
    private let state: NIOLockedValueBox<State>

    /// A manager for any route out: reachable while a default route leaves through a working
    /// interface.
    /// - Parameter logger: Where failures (`.warning`) and changes (`.debug`) are logged; none by default.
    public convenience init(logger: Logger? = nil) {
        self.init(target: .defaultRoute, logger: logger)
    }

    /// A manager for a host name: reachable while a route to one of its addresses leaves through a
    /// working interface. The name is resolved on the monitor's thread, never the caller's, and
    /// again after each change of the network; while it does not resolve the status is
    /// ``NetworkReachabilityStatus/notReachable``, and it is looked up again after 1 second, then
    /// 2, 4… up to every 30 seconds, even when the network does not change (DHCP often writes the
    /// resolver's configuration after it set the address and the route: a lookup in between fails).
    /// - Parameters:
    ///   - domain: A host name (`api.example.com`) or an address literal.
    ///   - logger: Where failures and changes are logged; none by default.
    public convenience init(domain: String, logger: Logger? = nil) {
        self.init(target: .domain(domain), logger: logger)
    }

    /// A manager for one address.
    /// - Parameters:
    ///   - address: An IPv4 (`192.0.2.1`) or IPv6 (`2001:db8::1`) literal. Anything else leaves the
    ///     status ``NetworkReachabilityStatus/unknown`` and logs why.
    ///   - logger: Where failures and changes are logged; none by default.
    public convenience init(address: String, logger: Logger? = nil) {
        let target: ReachabilityTarget = IPAddress(address).map { .address($0) } ?? .invalidAddress(address)
        self.init(target: target, logger: logger)
    }

    init(target: ReachabilityTarget, environment: ReachabilityEnvironment = .system, logger: Logger? = nil) {
        self.target = target
        self.environment = environment
        self.logger = logger ?? Logger(label: "courier.reachability", factory: { _ in SwiftLogNoOpLogHandler() })
        self.state = NIOLockedValueBox(State(callbackQueue: DispatchQueue(label: "courier.reachability.callbacks")))
    }

    deinit {
        if case .monitoring(let monitor, _) = self.state.withLockedValue({ $0.phase }) {
            monitor.stop()
        }
        for continuation in self.state.withLockedValue({ Array($0.streams.values) + Array($0.reportStreams.values) }) {
            continuation.finish()
        }
    }

    // MARK: Status

    /// The last status the monitor reported; ``NetworkReachabilityStatus/unknown`` until it has
    /// answered. Kept as it was when monitoring stops.
    public var networkReachabilityStatus: NetworkReachabilityStatus { self.state.withLockedValue { $0.status } }
    /// Whether the status is reachable through any interface.
    public var isReachable: Bool { self.networkReachabilityStatus.isReachable }
    /// Whether the status is ``NetworkReachabilityStatus/reachableViaWWAN``.
    public var isReachableViaWWAN: Bool { self.networkReachabilityStatus == .reachableViaWWAN }
    /// Whether the status is ``NetworkReachabilityStatus/reachableViaWiFi``.
    public var isReachableViaWiFi: Bool { self.networkReachabilityStatus == .reachableViaWiFi }
    /// Whether the status is ``NetworkReachabilityStatus/reachableViaEthernet``.
    public var isReachableViaEthernet: Bool { self.networkReachabilityStatus == .reachableViaEthernet }
    /// The status in words (``NetworkReachabilityStatus/localizedDescription``).
    public var localizedNetworkReachabilityStatusString: String { self.networkReachabilityStatus.localizedDescription }
    /// Why the status is not a reachable one, when a failure (an invalid address, an unresolvable
    /// domain, a routing socket that failed) is the cause; `nil` otherwise.
    public var failureReason: String? { self.state.withLockedValue { $0.failure?.description } }
    /// Whether ``startMonitoring()`` was called and ``stopMonitoring()`` not since.
    public var isMonitoring: Bool {
        self.state.withLockedValue { if case .monitoring = $0.phase { true } else { false } }
    }

    // MARK: Observing

    /// Called with each new status (AFNetworking's `setReachabilityStatusChangeBlock:`), on
    /// ``callbackQueue``, before the notification is posted. The handler set when a status is
    /// delivered is the one called: one replaced, or set to `nil`, before then is not.
    public var statusChangeHandler: (@Sendable (NetworkReachabilityStatus) -> Void)? {
        get { self.state.withLockedValue { $0.statusChangeHandler } }
        set { self.state.withLockedValue { $0.statusChangeHandler = newValue } }
    }

    /// Where ``statusChangeHandler`` runs and ``Foundation/NSNotification/Name/reachabilityDidChange``
    /// is posted: a private serial queue by default. (AFNetworking uses the main queue; servers and
    /// command-line tools often never run it.) Set a serial queue to keep changes in order.
    public var callbackQueue: DispatchQueue {
        get { self.state.withLockedValue { $0.callbackQueue } }
        set { self.state.withLockedValue { $0.callbackQueue = newValue } }
    }

    /// The statuses, for `for await`: the current one first, then each change, and the status again
    /// each time monitoring starts (see ``startMonitoring()``). Each access makes a
    /// new stream; it ends when the manager is deallocated or the iterating task is cancelled.
    /// Monitoring must be started for changes to arrive.
    public var statuses: AsyncStream<NetworkReachabilityStatus> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: NetworkReachabilityStatus.self, bufferingPolicy: .bufferingNewest(16))
        let id = self.state.withLockedValue { state in
            state.nextStreamID += 1
            state.streams[state.nextStreamID] = continuation
            continuation.yield(state.status)
            return state.nextStreamID
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLockedValue { $0.streams.removeValue(forKey: id) }
        }
        return stream
    }

    /// Every status the running monitor reports from now on, a repeated one too (``statuses``
    /// has only changes), for a wait that must hear a fresh one: the connectivity retry, after a
    /// failure the status may not have caught up with yet. First the current status, when the
    /// running monitor reported it after `instant` (`nil`: at all); a status kept from an earlier
    /// run never comes first. The stream ends when the manager is deallocated or the iterating
    /// task is cancelled.
    func reports(after instant: ContinuousClock.Instant?) -> AsyncStream<NetworkReachabilityStatus> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: NetworkReachabilityStatus.self, bufferingPolicy: .bufferingNewest(16))
        let id = self.state.withLockedValue { state in
            state.nextStreamID += 1
            state.reportStreams[state.nextStreamID] = continuation
            if let last = state.lastReport, instant.map({ last > $0 }) ?? true { continuation.yield(state.status) }
            return state.nextStreamID
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLockedValue { $0.reportStreams.removeValue(forKey: id) }
        }
        return stream
    }

    // MARK: Monitoring

    /// Starts watching the network. When already monitoring, stops that first and starts again
    /// (as AFNetworking's `startMonitoring`), so that the status is reported again. Returns at once
    /// (after stopping, see ``stopMonitoring()``): the first status arrives shortly after, through
    /// the handler, the notification and the streams — on every start, even when it equals the
    /// status kept from an earlier run (as AFNetworking calls its status block each time monitoring
    /// starts). After that, only changes are reported.
    public func startMonitoring() {
        self.stopMonitoring()
        self.startMonitoringIfIdle()
    }

    /// Starts monitoring unless it is on: unlike ``startMonitoring()``, a monitor already running
    /// is left alone. Whether it is on is checked, and the monitor made, in one step under the
    /// lock, so tasks that wait for the network at once (the connectivity retry) start one
    /// monitor between them, and none restarts another's.
    func startMonitoringIfIdle() {
        if case .invalidAddress(let text) = self.target {
            self.receive(ReachabilityReport(status: .unknown, failure: .invalidAddress(text)), generation: nil)
            return
        }
        let started: (monitor: any ReachabilityMonitor, generation: Int)?? = self.state.withLockedValue { state in
            guard case .idle = state.phase else { return .some(nil) }
            guard let monitor = self.environment.makeMonitor(self.target, self.environment) else { return nil }
            state.generation += 1
            state.phase = .monitoring(monitor, generation: state.generation)
            state.announcesNextReport = true
            state.lastReport = nil
            return (monitor, state.generation)
        }
        switch started {
        case .none:
            self.receive(
                ReachabilityReport(status: .unknown, failure: .socketFailed("no monitor on this platform", errno: 38)),
                generation: nil)
        case .some(.none):
            return
        case .some(.some(let started)):
            self.logger.debug("reachability: monitoring \(self.target)")
            let generation = started.generation
            started.monitor.start { [weak self] report in
                self?.receive(report, generation: generation)
            }
        }
    }

    /// Stops watching; the status keeps its last value. Returns once the monitor's thread and
    /// sockets are gone — except while the thread is resolving a domain: then it returns at once,
    /// and the thread closes its sockets and ends as soon as the resolver returns (nothing it
    /// reports meanwhile reaches observers).
    ///
    /// A status reported before the stop and still waiting on ``callbackQueue`` is dropped: once
    /// this returns, the handler is not called and the notification not posted, except by a
    /// delivery already running on ``callbackQueue`` (none, when you stop on that queue).
    public func stopMonitoring() {
        let monitor: (any ReachabilityMonitor)? = self.state.withLockedValue { state in
            guard case .monitoring(let monitor, _) = state.phase else { return nil }
            state.phase = .idle
            state.generation += 1
            state.lastReport = nil
            return monitor
        }
        monitor?.stop()
        if monitor != nil { self.logger.debug("reachability: stopped monitoring \(self.target)") }
    }

    /// The running monitor, for tests.
    var currentMonitor: (any ReachabilityMonitor)? {
        self.state.withLockedValue { if case .monitoring(let monitor, _) = $0.phase { monitor } else { nil } }
    }

    /// Takes a report from the monitor of `generation` (`nil`: from the manager itself); stale
    /// generations are dropped. Only changes reach observers, and the first report after a start;
    /// every report of the running monitor reaches ``reports(after:)``'s streams. A delivery runs
    /// only if monitoring has not stopped or restarted since the report, and calls the handler set
    /// by then.
    private func receive(_ report: ReachabilityReport, generation: Int?) {
        let delivery: (NetworkReachabilityStatus, generation: Int, DispatchQueue)?
        let newFailure: ReachabilityFailure?
        let now = ContinuousClock.now
        (delivery, newFailure) = self.state.withLockedValue { state in
            if let generation, case .monitoring(_, let current) = state.phase, current != generation { return (nil, nil) }
            if generation != nil, case .idle = state.phase { return (nil, nil) }
            if generation != nil {
                state.lastReport = now
                for continuation in state.reportStreams.values { continuation.yield(report.status) }
            }
            let newFailure = report.failure != state.failure ? report.failure : nil
            state.failure = report.failure
            let announced = generation != nil && state.announcesNextReport
            if generation != nil { state.announcesNextReport = false }
            guard report.status != state.status || announced else { return (nil, newFailure) }
            state.status = report.status
            for continuation in state.streams.values { continuation.yield(report.status) }
            return ((report.status, state.generation, state.callbackQueue), newFailure)
        }
        if let newFailure {
            self.logger.warning("reachability of \(self.target): \(newFailure)")
        }
        guard let (status, reported, queue) = delivery else { return }
        self.logger.debug("reachability of \(self.target): \(status)")
        // Weakly, as AFNetworking's callback holds its manager: a manager released while a status
        // waits here goes away at once (its deinit stops the monitor) and the status is dropped.
        // Held strongly, each waiting delivery kept a released manager, its monitor thread and
        // sockets alive, for good on a queue that never runs, and called the handler after release.
        queue.async { [weak self] in
            guard let self else { return }
            let current: (@Sendable (NetworkReachabilityStatus) -> Void)?? = self.state.withLockedValue { state in
                state.generation == reported ? .some(state.statusChangeHandler) : .none
            }
            guard let handler = current else { return }  // stopped or restarted since
            handler?(status)
            NotificationCenter.default.post(
                name: .reachabilityDidChange, object: self, userInfo: [ReachabilityNotificationKey.status: status])
        }
    }
}
