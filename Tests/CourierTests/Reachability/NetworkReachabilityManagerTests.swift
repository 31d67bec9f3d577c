import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import Courier

@Suite("NetworkReachabilityManager: API, observers, bad input")
struct NetworkReachabilityManagerTests {
    @Test func statusStringsAndFlags() {
        #expect(NetworkReachabilityStatus.unknown.localizedDescription == "Unknown")
        #expect(NetworkReachabilityStatus.notReachable.localizedDescription == "Not Reachable")
        #expect(NetworkReachabilityStatus.reachableViaWWAN.localizedDescription == "Reachable via WWAN")
        #expect(NetworkReachabilityStatus.reachableViaWiFi.localizedDescription == "Reachable via WiFi")
        #expect(NetworkReachabilityStatus.reachableViaEthernet.localizedDescription == "Reachable via Ethernet")
        #expect(NetworkReachabilityStatus.allCases.filter(\.isReachable).count == 3)
        #expect(NetworkReachabilityStatus.unknown.rawValue == -1)
    }

    @Test func changesReachTheHandlerTheNotificationAndTheStream() async throws {
        let monitor = ScriptedMonitor()
        let manager = monitor.manager()
        #expect(manager.networkReachabilityStatus == .unknown)
        let seen = NIOLockedValueBox<[NetworkReachabilityStatus]>([])
        let notified = NIOLockedValueBox<[NetworkReachabilityStatus]>([])
        manager.statusChangeHandler = { status in seen.withLockedValue { $0.append(status) } }
        let observer = NotificationCenter.default.addObserver(forName: .reachabilityDidChange, object: manager, queue: nil) {
            note in
            if let status = note.userInfo?[ReachabilityNotificationKey.status] as? NetworkReachabilityStatus {
                notified.withLockedValue { $0.append(status) }
            }
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        var iterator = manager.statuses.makeAsyncIterator()
        #expect(await iterator.next() == .unknown)

        manager.startMonitoring()
        #expect(manager.isMonitoring)
        monitor.send(.reachableViaWiFi)
        monitor.send(.reachableViaWiFi)  // a repeat is not a change
        monitor.send(.notReachable)
        #expect(await iterator.next() == .reachableViaWiFi)
        #expect(await iterator.next() == .notReachable)
        #expect(manager.isReachable == false)
        manager.callbackQueue.sync {}
        #expect(seen.withLockedValue { $0 } == [.reachableViaWiFi, .notReachable])
        #expect(notified.withLockedValue { $0 } == [.reachableViaWiFi, .notReachable])

        manager.stopMonitoring()
        #expect(!manager.isMonitoring)
        #expect(monitor.stops.withLockedValue { $0 } == 1)
        monitor.send(.reachableViaEthernet)  // after stop: dropped
        #expect(manager.networkReachabilityStatus == .notReachable)
        #expect(manager.localizedNetworkReachabilityStatusString == "Not Reachable")
    }

    /// Issue 17: AFNetworking calls its status block each time monitoring starts; a manager
    /// stopped and started again reports its (unchanged) status again, once, then only changes.
    @Test func aRestartReportsTheStatusAgain() async throws {
        let monitor = ScriptedMonitor()
        let manager = monitor.manager()
        let seen = NIOLockedValueBox<[NetworkReachabilityStatus]>([])
        manager.statusChangeHandler = { status in seen.withLockedValue { $0.append(status) } }
        var iterator = manager.statuses.makeAsyncIterator()
        #expect(await iterator.next() == .unknown)

        manager.startMonitoring()
        monitor.send(.reachableViaEthernet)
        #expect(await iterator.next() == .reachableViaEthernet)
        manager.callbackQueue.sync {}  // delivered before the stop, which drops what still waits
        manager.stopMonitoring()

        manager.startMonitoring()
        monitor.send(.reachableViaEthernet)  // unchanged, but the first report of this run
        monitor.send(.reachableViaEthernet)  // a repeat within the run: not reported
        monitor.send(.notReachable)
        #expect(await iterator.next() == .reachableViaEthernet)
        #expect(await iterator.next() == .notReachable)
        manager.callbackQueue.sync {}
        #expect(seen.withLockedValue { $0 } == [.reachableViaEthernet, .reachableViaEthernet, .notReachable])
        manager.stopMonitoring()
    }

    @Test func aLocalhostManagerIsReachableOverTheRealMonitor() async {
        for manager in [NetworkReachabilityManager(domain: "localhost"), NetworkReachabilityManager(address: "::1")] {
            let status: NetworkReachabilityStatus = await awaitCallback { finish in
                let once = NIOLockedValueBox(true)
                manager.statusChangeHandler = { status in
                    if once.withLockedValue({ first in defer { first = false }; return first }) { finish(status) }
                }
                manager.startMonitoring()
            }
            manager.stopMonitoring()
            #expect(status == .reachableViaEthernet)
            #expect(manager.failureReason == nil)
        }
    }

    @Test func anInvalidAddressStaysUnknownAndSaysWhy() {
        let (logger, messages) = CapturingLogHandler.logger()
        let manager = NetworkReachabilityManager(address: "999.1.2.3", logger: logger)
        manager.startMonitoring()
        #expect(manager.networkReachabilityStatus == .unknown)
        #expect(!manager.isMonitoring)
        #expect(manager.failureReason?.contains("999.1.2.3") == true)
        #expect(messages.withLockedValue { $0 }.contains { $0.hasPrefix("warning") && $0.contains("not an IPv4 or IPv6 address") })
        manager.stopMonitoring()
    }

    @Test func aSocketThatCannotBeOpenedGivesUnknownAndSaysWhy() async {
        let (logger, messages) = CapturingLogHandler.logger()
        var environment = ReachabilityEnvironment.system
        environment.openSocket = { _ in -EACCES }
        let manager = NetworkReachabilityManager(target: .defaultRoute, environment: environment, logger: logger)
        manager.startMonitoring()
        defer { manager.stopMonitoring() }
        #expect(await eventually { manager.failureReason != nil })
        #expect(manager.networkReachabilityStatus == .unknown)
        #expect(manager.failureReason?.contains("errno \(EACCES)") == true)
        #expect(messages.withLockedValue { $0 }.contains { $0.contains("routing netlink socket") })
    }

    @Test func theProcessNetworkGivesAnAnswer() async {
        let manager = NetworkReachabilityManager()
        manager.startMonitoring()
        defer { manager.stopMonitoring() }
        _ = await eventually { manager.networkReachabilityStatus != .unknown || manager.failureReason != nil }
        // A sandbox that forbids netlink gives .unknown with a reason; either way, an answer.
        #expect(manager.networkReachabilityStatus != .unknown || manager.failureReason != nil)
    }

    /// AFNetworking's `startMonitoring` stops a previous monitoring first, then reports the
    /// current status again: a second start (with a new status block, say) hears the status even
    /// when nothing changed.
    @Test func startingAgainStopsTheRunningMonitorAndReportsTheStatusAgain() async {
        let monitor = ScriptedMonitor()
        let manager = monitor.manager()
        let seen = NIOLockedValueBox<[NetworkReachabilityStatus]>([])
        manager.statusChangeHandler = { status in seen.withLockedValue { $0.append(status) } }
        manager.startMonitoring()
        monitor.send(.reachableViaWiFi)
        manager.callbackQueue.sync {}  // delivered before the restart, which drops what still waits
        manager.startMonitoring()
        #expect(manager.isMonitoring)
        #expect(monitor.stops.withLockedValue { $0 } == 1, "the running monitor was not stopped")
        monitor.send(.reachableViaWiFi)  // the new monitoring's first answer, unchanged
        monitor.send(.reachableViaWiFi)  // a repeat: not reported
        manager.callbackQueue.sync {}
        #expect(seen.withLockedValue { $0 } == [.reachableViaWiFi, .reachableViaWiFi])
        manager.stopMonitoring()
        manager.stopMonitoring()
        #expect(monitor.stops.withLockedValue { $0 } == 2)
    }

    /// The same over the real monitor: a second `startMonitoring()` without a stop reaches the
    /// handler again with the (unchanged) status.
    @Test func aSecondStartReportsTheStatusAgainOverTheRealMonitor() async {
        let manager = NetworkReachabilityManager(domain: "localhost")
        defer { manager.stopMonitoring() }
        let reports = NIOLockedValueBox<[NetworkReachabilityStatus]>([])
        let waiters = NIOLockedValueBox<[Int: NotificationWaiter]>([:])
        manager.statusChangeHandler = { status in
            let count = reports.withLockedValue { $0.append(status); return $0.count }
            waiters.withLockedValue { $0[count] }?.deliver(nil)
        }
        let first = NotificationWaiter()
        let second = NotificationWaiter()
        waiters.withLockedValue { $0 = [1: first, 2: second] }
        manager.startMonitoring()
        _ = await first.wait()
        manager.startMonitoring()
        _ = await second.wait()
        #expect(reports.withLockedValue { $0 } == [.reachableViaEthernet, .reachableViaEthernet])
    }

    /// AFNetworkReachabilityStatus's values, which users keep and compare as integers.
    @Test func statusRawValuesAreAFNetworkings() {
        #expect(NetworkReachabilityStatus.unknown.rawValue == -1)
        #expect(NetworkReachabilityStatus.notReachable.rawValue == 0)
        #expect(NetworkReachabilityStatus.reachableViaWWAN.rawValue == 1)
        #expect(NetworkReachabilityStatus.reachableViaWiFi.rawValue == 2)
        #expect(NetworkReachabilityStatus(rawValue: 1) == .reachableViaWWAN)
    }

    /// `isReachable`, `isReachableViaWWAN` and `isReachableViaWiFi` follow the status, as
    /// AFNetworking's (Ethernet, which AFNetworking has not, is reachable and neither of the two).
    @Test func theReachableFlagsFollowTheStatus() async {
        let monitor = ScriptedMonitor()
        let manager = monitor.manager()
        var iterator = manager.statuses.makeAsyncIterator()
        #expect(await iterator.next() == .unknown)
        #expect(!manager.isReachable && !manager.isReachableViaWWAN && !manager.isReachableViaWiFi)
        manager.startMonitoring()
        for status in [NetworkReachabilityStatus.reachableViaWWAN, .reachableViaWiFi, .notReachable, .reachableViaEthernet, .unknown] {
            monitor.send(status)
            #expect(await iterator.next() == status)
            let reachable = [.reachableViaWWAN, .reachableViaWiFi, .reachableViaEthernet].contains(status)
            #expect(manager.isReachable == reachable, "\(status)")
            #expect(manager.isReachableViaWWAN == (status == .reachableViaWWAN), "\(status)")
            #expect(manager.isReachableViaWiFi == (status == .reachableViaWiFi), "\(status)")
        }
        manager.stopMonitoring()
    }

    /// AFNetworking calls the status block, then posts the notification (the manager as its
    /// object, the status in its user info), in one block on the main queue; Courier does both on
    /// `callbackQueue`, the handler first.
    @Test func theHandlerRunsBeforeTheNotificationBothOnTheCallbackQueue() {
        let monitor = ScriptedMonitor()
        let manager = monitor.manager()
        let queue = DispatchQueue(label: "courier.tests.reachability")
        queue.setSpecific(key: TestQueues.key, value: "callbacks")
        manager.callbackQueue = queue
        let events = NIOLockedValueBox<[String]>([])
        manager.statusChangeHandler = { status in
            let on = DispatchQueue.getSpecific(key: TestQueues.key) ?? "elsewhere"
            events.withLockedValue { $0.append("handler \(status.rawValue) on \(on)") }
        }
        let observer = NotificationCenter.default.addObserver(forName: .reachabilityDidChange, object: manager, queue: nil) {
            note in
            let on = DispatchQueue.getSpecific(key: TestQueues.key) ?? "elsewhere"
            let status = (note.userInfo?[ReachabilityNotificationKey.status] as? NetworkReachabilityStatus).map { "\($0.rawValue)" } ?? "none"
            let object = note.object as? NetworkReachabilityManager === manager ? "" : " from another object"
            events.withLockedValue { $0.append("notification \(status) on \(on)\(object)") }
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        manager.startMonitoring()
        monitor.send(.reachableViaWiFi)
        monitor.send(.notReachable)
        queue.sync {}
        manager.stopMonitoring()
        #expect(events.withLockedValue { $0 } == [
            "handler 2 on callbacks", "notification 2 on callbacks",
            "handler 0 on callbacks", "notification 0 on callbacks",
        ])
    }

    /// Holds `queue` until the returned function is called: deliveries queued meanwhile wait.
    static func hold(_ queue: DispatchQueue) -> @Sendable () -> Void {
        let gate = DispatchSemaphore(value: 0)
        queue.async { gate.wait() }
        return { gate.signal() }
    }

    /// Once `stopMonitoring()` returns, no handler call or notification follows, even for a
    /// status reported before it and still waiting on `callbackQueue`.
    @Test func nothingIsDeliveredOnceStopMonitoringReturns() {
        let monitor = ScriptedMonitor()
        let manager = monitor.manager()
        let delivered = NIOLockedValueBox<[String]>([])
        manager.statusChangeHandler = { status in delivered.withLockedValue { $0.append("handler \(status)") } }
        let observer = NotificationCenter.default.addObserver(forName: .reachabilityDidChange, object: manager, queue: nil) {
            _ in delivered.withLockedValue { $0.append("notification") }
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        manager.startMonitoring()
        let release = Self.hold(manager.callbackQueue)
        monitor.send(.reachableViaWiFi)  // queued behind the hold
        manager.stopMonitoring()
        release()
        manager.callbackQueue.sync {}
        #expect(delivered.withLockedValue { $0 } == [], "delivered after stopMonitoring() returned")
        #expect(manager.networkReachabilityStatus == .reachableViaWiFi, "the status keeps the last report")
    }

    /// AFNetworking reads the status block when it delivers: a block replaced, or set to nil,
    /// before a queued status is delivered is not called with it; the block set then is.
    @Test func aHandlerReplacedOrClearedBeforeDeliveryIsNotCalled() {
        let monitor = ScriptedMonitor()
        let manager = monitor.manager()
        let calls = NIOLockedValueBox<[String]>([])
        manager.statusChangeHandler = { status in calls.withLockedValue { $0.append("old \(status.rawValue)") } }
        manager.startMonitoring()
        defer { manager.stopMonitoring() }

        var release = Self.hold(manager.callbackQueue)
        monitor.send(.reachableViaWiFi)
        manager.statusChangeHandler = { status in calls.withLockedValue { $0.append("new \(status.rawValue)") } }
        release()
        manager.callbackQueue.sync {}
        #expect(calls.withLockedValue { $0 } == ["new 2"])

        release = Self.hold(manager.callbackQueue)
        monitor.send(.notReachable)
        manager.statusChangeHandler = nil
        release()
        manager.callbackQueue.sync {}
        #expect(calls.withLockedValue { $0 } == ["new 2"])
    }

    /// A manager released while it monitors goes away (AFNetworking's callback holds it weakly)
    /// and stops its monitor: over a scripted monitor at once, over the real one once the
    /// monitor thread lets go of it.
    @Test func aManagerReleasedWhileMonitoringIsDeallocatedAndStops() async {
        let monitor = ScriptedMonitor()
        var scripted: NetworkReachabilityManager? = monitor.manager()
        weak let weakScripted = scripted
        scripted?.statusChangeHandler = { _ in }
        scripted?.startMonitoring()
        monitor.send(.reachableViaWiFi)
        scripted?.callbackQueue.sync {}
        scripted = nil
        #expect(weakScripted == nil, "a scripted manager outlived its last reference")
        #expect(monitor.stops.withLockedValue { $0 } == 1)

        var real: NetworkReachabilityManager? = NetworkReachabilityManager(domain: "localhost")
        weak let weakReal = real
        let answered = NotificationWaiter()
        real?.statusChangeHandler = { _ in answered.deliver(nil) }
        real?.startMonitoring()
        _ = await answered.wait()
        let thread = (real?.currentMonitor as? NetlinkReachabilityMonitor)?.resources.withLockedValue { $0.threadID } ?? 0
        real = nil
        #expect(await eventually { weakReal == nil }, "a monitoring manager outlived its last reference")
        #expect(await eventually { !FileManager.default.fileExists(atPath: "/proc/self/task/\(thread)") }, "thread left running")
    }

    /// A manager released while a status waits on `callbackQueue` goes away at once and its
    /// monitor stops; the waiting status reaches no handler. The delivery held the manager
    /// strongly: it outlived its last reference until the queue ran (for good on a queue that
    /// never runs, with its monitor thread and sockets), then called the handler.
    @Test func aManagerReleasedWithAStatusWaitingGoesAwayAtOnceAndDeliversNothing() {
        let monitor = ScriptedMonitor()
        var manager: NetworkReachabilityManager? = monitor.manager()
        weak let weakManager = manager
        let queue = DispatchQueue(label: "courier.tests.reachability.released")
        manager?.callbackQueue = queue
        let delivered = NIOLockedValueBox<[NetworkReachabilityStatus]>([])
        manager?.statusChangeHandler = { status in delivered.withLockedValue { $0.append(status) } }
        manager?.startMonitoring()
        let release = Self.hold(queue)
        monitor.send(.reachableViaWiFi)  // queued behind the hold
        manager = nil
        #expect(weakManager == nil, "the waiting delivery kept the released manager alive")
        #expect(monitor.stops.withLockedValue { $0 } == 1, "the released manager's monitor still runs")
        release()
        queue.sync {}
        #expect(delivered.withLockedValue { $0 } == [], "a status was delivered after the manager was released")
    }

    #if os(Linux)
    /// A monitor stopped before it started never starts: the manager starts its monitor after its
    /// lock is released, so a `stopMonitoring()` can come in between, and the thread started then
    /// was nobody's to stop (its netlink sockets and thread ran for the process's life).
    @Test func aMonitorStoppedBeforeItStartsNeverRuns() {
        let monitor = NetlinkReachabilityMonitor(target: .defaultRoute, environment: .system)
        monitor.stop()
        monitor.start { _ in }
        #expect(monitor.isRunning == false)
        monitor.stop()

        let running = NetlinkReachabilityMonitor(target: .defaultRoute, environment: .system)
        running.start { _ in }
        #expect(running.isRunning)
        running.stop()
        #expect(running.isRunning == false)
    }

    /// A name that did not resolve is looked up again after a back-off, not only after the next
    /// change of the network: DHCP often sets the address and the route before it writes
    /// `resolv.conf`, and a lookup in between left the status not reachable until some later
    /// netlink event (hours, on a quiet network). Over the process's own network, with nothing
    /// changed: the second answer, 127.0.0.1, is reachable whatever its routes say.
    @Test func aNameThatDidNotResolveIsLookedUpAgainWithoutAChange() async {
        let lookups = NIOLockedValueBox(0)
        var environment = ReachabilityEnvironment.system
        environment.resolver = HostResolver { name in
            let first = lookups.withLockedValue { $0 += 1; return $0 == 1 }
            return first ? .failure(.resolutionFailed(name, "no resolv.conf yet")) : .success([IPAddress("127.0.0.1")!])
        }
        environment.lookupRetryDelay = .milliseconds(10)
        let manager = NetworkReachabilityManager(target: .domain("api.courier.test"), environment: environment)
        let seen = NIOLockedValueBox<[NetworkReachabilityStatus]>([])
        let reachable = NotificationWaiter()
        manager.statusChangeHandler = { status in
            seen.withLockedValue { $0.append(status) }
            if status.isReachable { reachable.deliver(nil) }
        }
        manager.startMonitoring()
        defer { manager.stopMonitoring() }
        _ = await reachable.wait()
        #expect(manager.networkReachabilityStatus == .reachableViaEthernet, "\(manager.failureReason ?? "")")
        #expect(seen.withLockedValue { $0 } == [.notReachable, .reachableViaEthernet])
        #expect(manager.failureReason == nil)
    }

    /// The lookups again are the monitor thread's own: they end with it.
    @Test func lookingANameUpAgainEndsWithTheMonitor() async {
        let lookups = NIOLockedValueBox(0)
        var environment = ReachabilityEnvironment.system
        environment.resolver = HostResolver { name in
            lookups.withLockedValue { $0 += 1 }
            return .failure(.resolutionFailed(name, "never"))
        }
        environment.lookupRetryDelay = .milliseconds(1)
        environment.maximumLookupRetryDelay = .milliseconds(1)
        let manager = NetworkReachabilityManager(target: .domain("nowhere.courier.test"), environment: environment)
        manager.startMonitoring()
        #expect(await eventually { lookups.withLockedValue { $0 } >= 3 }, "the name was not looked up again")
        let thread = (manager.currentMonitor as? NetlinkReachabilityMonitor)?.resources.withLockedValue { $0.threadID } ?? 0
        manager.stopMonitoring()
        #expect(await eventually { !FileManager.default.fileExists(atPath: "/proc/self/task/\(thread)") }, "thread left running")
        #expect(manager.networkReachabilityStatus == .notReachable)
    }
    #endif
}
