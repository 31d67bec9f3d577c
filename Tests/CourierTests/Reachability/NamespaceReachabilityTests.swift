import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import Courier

/// Reachability against a real kernel: each test makes a network namespace with a veth pair,
/// points a manager's monitor thread into it and changes links and routes with `ip`.
@Suite(
    "Reachability in a network namespace of the test's own",
    .serialized,
    .enabled(if: TestNamespace.available, TestNamespace.skipReason))
struct NamespaceReachabilityTests {
    /// How soon a change in the namespace must show in the status. The monitor coalesces events
    /// for 50 ms (500 ms at most) and waits for nothing else, so a change it missed never shows:
    /// the bound catches that, not a slow machine. (A second was once the bound: one stall of
    /// the monitor thread, the callback queue or the polling test on two loaded cores breaks it;
    /// then 10 s, which a full CI run, holding every test for about 36 s, could outlast.)
    static let prompt: Duration = .seconds(60)

    @Test func linkDownIsNotReachablePromptlyAndLinkUpWithADefaultRouteIsEthernet() async throws {
        let namespace = try await TestNamespace.make()
        defer { namespace.delete() }
        try await namespace.addVethPair(defaultRoute: true)
        let manager = NetworkReachabilityManager.inNamespace(namespace, target: .defaultRoute)
        manager.startMonitoring()
        defer { manager.stopMonitoring() }
        #expect(await manager.wait(for: .reachableViaEthernet) != nil, "\(manager.failureReason ?? "")")

        try await namespace.ip("link", "set", "v0", "down")
        let down = await manager.wait(for: .notReachable, within: Self.prompt)
        #expect(down != nil, "still \(manager.networkReachabilityStatus) \(Self.prompt) after the link went down")

        try await namespace.ip("link", "set", "v0", "up")
        try await namespace.ip("route", "add", "default", "via", "10.77.0.1")
        #expect(await manager.wait(for: .reachableViaEthernet, within: Self.prompt) != nil)
        #expect(manager.isReachable)
    }

    /// A multipath default route whose first next hop's link is down leaves through the other:
    /// the kernel marks the hop dead and keeps the route. The first hop's interface stood for the
    /// route, and the manager said not reachable.
    @Test func aMultipathDefaultRouteWithItsFirstHopDownIsReachableThroughTheOther() async throws {
        let namespace = try await TestNamespace.make()
        defer { namespace.delete() }
        try await namespace.addVethPair(defaultRoute: false)
        try await namespace.ip("link", "add", "w0", "type", "veth", "peer", "name", "w1")
        try await namespace.ip("addr", "add", "10.78.0.2/24", "dev", "w0")
        try await namespace.ip("link", "set", "w1", "up")
        try await namespace.ip("link", "set", "w0", "up")
        try await namespace.ip(
            "route", "add", "default", "nexthop", "via", "10.77.0.1", "dev", "v0", "nexthop", "via", "10.78.0.1", "dev", "w0")
        try await namespace.ip("link", "set", "v0", "down")
        let manager = NetworkReachabilityManager.inNamespace(namespace, target: .defaultRoute)
        manager.startMonitoring()
        defer { manager.stopMonitoring() }
        let reachable = await manager.wait(for: .reachableViaEthernet)
        #expect(reachable != nil, "\(manager.networkReachabilityStatus) \(manager.failureReason ?? "")")
    }

    @Test func noDefaultRouteUntilOneIsAdded() async throws {
        let namespace = try await TestNamespace.make()
        defer { namespace.delete() }
        try await namespace.addVethPair(defaultRoute: false)
        let manager = NetworkReachabilityManager.inNamespace(namespace, target: .defaultRoute)
        manager.startMonitoring()
        defer { manager.stopMonitoring() }
        #expect(await manager.wait(for: .notReachable) != nil)
        try await namespace.ip("route", "add", "default", "via", "10.77.0.1")
        #expect(await manager.wait(for: .reachableViaEthernet, within: Self.prompt) != nil)
    }

    @Test func removingTheRouteToADomainsAddressLeavesTheGeneralManagerReachable() async throws {
        let namespace = try await TestNamespace.make()
        defer { namespace.delete() }
        try await namespace.addVethPair(defaultRoute: true)
        try await namespace.ip("-6", "route", "add", "fd77:1::/64", "via", "fd77::1", "dev", "v0")
        // No DNS here: the domain resolves through a fixed table to an address only that route reaches.
        let resolver = HostResolver.fixed(["api.courier.test": [IPAddress("fd77:1::5")!]])
        let domain = NetworkReachabilityManager.inNamespace(
            namespace, target: .domain("api.courier.test"), resolver: resolver)
        let general = NetworkReachabilityManager.inNamespace(namespace, target: .defaultRoute)
        domain.startMonitoring()
        general.startMonitoring()
        defer {
            domain.stopMonitoring()
            general.stopMonitoring()
        }
        #expect(await domain.wait(for: .reachableViaEthernet) != nil, "\(domain.failureReason ?? "")")
        #expect(await general.wait(for: .reachableViaEthernet) != nil)

        let generalMonitor = try #require(general.currentMonitor as? NetlinkReachabilityMonitor)
        let before = generalMonitor.resources.withLockedValue { $0.evaluations }
        try await namespace.ip("-6", "route", "del", "fd77:1::/64")
        #expect(await domain.wait(for: .notReachable, within: Self.prompt) != nil)
        // The general manager saw the same change (it computed its status again) and stayed reachable.
        #expect(await eventually { generalMonitor.resources.withLockedValue { $0.evaluations } > before })
        general.callbackQueue.sync {}
        #expect(general.networkReachabilityStatus == .reachableViaEthernet)
    }

    @Test func anAddressManagerFollowsItsRoute() async throws {
        let namespace = try await TestNamespace.make()
        defer { namespace.delete() }
        try await namespace.addVethPair(defaultRoute: false)
        let manager = NetworkReachabilityManager.inNamespace(namespace, target: .address(IPAddress("10.77.0.9")!))
        manager.startMonitoring()
        defer { manager.stopMonitoring() }
        #expect(await manager.wait(for: .reachableViaEthernet) != nil)
        try await namespace.ip("addr", "del", "10.77.0.2/24", "dev", "v0")
        #expect(await manager.wait(for: .notReachable, within: Self.prompt) != nil)
    }

    @Test func anUnresolvableDomainIsNotReachableAndSaysWhy() async throws {
        let namespace = try await TestNamespace.make()
        defer { namespace.delete() }
        try await namespace.addVethPair(defaultRoute: true)
        let (logger, messages) = CapturingLogHandler.logger()
        let manager = NetworkReachabilityManager.inNamespace(
            namespace, target: .domain("nowhere.courier.test"), resolver: .fixed([:]), logger: logger)
        manager.startMonitoring()
        defer { manager.stopMonitoring() }
        #expect(await manager.wait(for: .notReachable) != nil)
        #expect(manager.failureReason?.contains("nowhere.courier.test did not resolve") == true)
        #expect(messages.withLockedValue { $0 }.contains { $0.contains("did not resolve") })
    }

    @Test func aMissingNamespaceGivesUnknownAndSaysWhy() async throws {
        var environment = ReachabilityEnvironment.system
        environment.namespacePath = "/var/run/netns/courier-test-does-not-exist"
        let manager = NetworkReachabilityManager(target: .defaultRoute, environment: environment)
        manager.startMonitoring()
        defer { manager.stopMonitoring() }
        #expect(await eventually { manager.failureReason != nil })
        #expect(manager.networkReachabilityStatus == .unknown)
        #expect(manager.failureReason?.contains("network namespace") == true)
    }

    @Test func aFlappingLinkIsCoalesced() async throws {
        let namespace = try await TestNamespace.make()
        defer { namespace.delete() }
        try await namespace.addVethPair(defaultRoute: true)
        // A quiet period longer than one `ip` takes on a loaded machine (the default 50 ms was
        // shorter than the gap between two flaps in a full CI run: 13 evaluations): the test is
        // of the coalescing, not of how fast this machine spawns `ip`.
        let manager = NetworkReachabilityManager.inNamespace(namespace, target: .defaultRoute) { environment in
            environment.quietPeriod = .seconds(1)
            environment.maximumDelay = .seconds(20)
        }
        manager.startMonitoring()
        defer { manager.stopMonitoring() }
        #expect(await manager.wait(for: .reachableViaEthernet) != nil)
        let changes = NIOLockedValueBox(0)
        manager.statusChangeHandler = { _ in changes.withLockedValue { $0 += 1 } }
        let monitor = try #require(manager.currentMonitor as? NetlinkReachabilityMonitor)
        let evaluations = { monitor.resources.withLockedValue { $0.evaluations } }
        let before = evaluations()
        // 20 flaps, each a few ms apart: the monitor computes the status far fewer times. (Without
        // coalescing it would compute it for each event, as fast as they come: 20 or more by now.)
        for _ in 0..<10 {
            try await namespace.ip("link", "set", "v0", "down")
            try await namespace.ip("link", "set", "v0", "up")
        }
        try await namespace.ip("route", "replace", "default", "via", "10.77.0.1")
        #expect(await eventually { evaluations() > before && manager.networkReachabilityStatus == .reachableViaEthernet })
        let computed = evaluations() - before
        #expect(computed < 10, "\(computed) evaluations for 20 flaps")
        manager.callbackQueue.sync {}
        let count = changes.withLockedValue { $0 }
        #expect(count < 10, "\(count) changes for 20 flaps")
    }

    @Test func startAndStopLeakNoSocketOrThread() async throws {
        let namespace = try await TestNamespace.make()
        defer { namespace.delete() }
        try await namespace.addVethPair(defaultRoute: true)
        for _ in 0..<5 {
            let manager = NetworkReachabilityManager.inNamespace(namespace, target: .defaultRoute)
            manager.startMonitoring()
            #expect(await manager.wait(for: .reachableViaEthernet) != nil)
            let monitor = try #require(manager.currentMonitor as? NetlinkReachabilityMonitor)
            let resources = monitor.resources.withLockedValue { $0 }
            #expect(resources.threadID > 0)
            #expect(resources.socketInodes.count == 2)
            #expect(FileManager.default.fileExists(atPath: "/proc/self/task/\(resources.threadID)"))
            #expect(!Self.openSockets(resources.socketInodes).isEmpty)
            manager.stopMonitoring()
            #expect(Self.openSockets(resources.socketInodes).isEmpty, "sockets left open")
            // The thread has signalled its end; give the kernel a moment to reap it.
            #expect(await eventually { !FileManager.default.fileExists(atPath: "/proc/self/task/\(resources.threadID)") }, "thread left running")
        }
    }

    @Test func stoppingDuringASlowResolutionDoesNotWaitForIt() async throws {
        let namespace = try await TestNamespace.make()
        defer { namespace.delete() }
        try await namespace.addVethPair(defaultRoute: true)
        // The resolver is held until the test lets it go, after stopMonitoring() returned: a stop
        // that waits for it returns only once the hold's bound has passed, and finds it returned.
        // No clock decides the outcome (a stop timed against a 1 s resolver once had to take
        // under 500 ms); the bound only keeps a wrong stop from hanging the test, and must outlast
        // the steps before the check (20 s left too little margin for a full CI run, which held
        // every test for about 36 s).
        let release = DispatchSemaphore(value: 0)
        let resolver = NIOLockedValueBox((entered: 0, returned: false))
        let slow = HostResolver { _ in
            resolver.withLockedValue { $0.entered += 1 }
            _ = release.wait(timeout: .now() + 120)
            resolver.withLockedValue { $0.returned = true }
            return .success([IPAddress("10.77.0.9")!])
        }
        let manager = NetworkReachabilityManager.inNamespace(namespace, target: .domain("slow.courier.test"), resolver: slow)
        manager.startMonitoring()
        let monitor = try #require(manager.currentMonitor as? NetlinkReachabilityMonitor)
        #expect(await eventually { resolver.withLockedValue { $0.entered } > 0 }, "the resolver was never called")
        let resources = monitor.resources.withLockedValue { $0 }
        manager.stopMonitoring()
        #expect(!resolver.withLockedValue { $0.returned }, "stopMonitoring waited for the resolver")
        #expect(manager.networkReachabilityStatus == .unknown)
        release.signal()
        // The thread ends and closes its sockets once the resolver returns.
        #expect(await eventually { !FileManager.default.fileExists(atPath: "/proc/self/task/\(resources.threadID)") }, "thread left running")
        #expect(Self.openSockets(resources.socketInodes).isEmpty)
        manager.callbackQueue.sync {}
        #expect(manager.networkReachabilityStatus == .unknown, "a report after stop reached the manager")
    }

    @Test func releasingAMonitoringManagerEndsItsThread() async throws {
        let namespace = try await TestNamespace.make()
        defer { namespace.delete() }
        try await namespace.addVethPair(defaultRoute: true)
        var manager: NetworkReachabilityManager? = NetworkReachabilityManager.inNamespace(namespace, target: .defaultRoute)
        manager?.startMonitoring()
        #expect(await manager?.wait(for: .reachableViaEthernet) != nil)
        let monitor = try #require(manager?.currentMonitor as? NetlinkReachabilityMonitor)
        let resources = monitor.resources.withLockedValue { $0 }
        manager = nil
        // When the last reference goes away during a report (the monitor thread holds the manager
        // while it delivers one), `stop()` runs on the monitor thread and the thread closes its
        // sockets as it ends, not before `manager = nil` returns: check once the thread is gone.
        #expect(await eventually { !FileManager.default.fileExists(atPath: "/proc/self/task/\(resources.threadID)") }, "thread left running")
        #expect(Self.openSockets(resources.socketInodes).isEmpty, "sockets left open")
    }

    /// Which of `inodes` are sockets this process still has open.
    static func openSockets(_ inodes: [UInt64]) -> [UInt64] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        let links = Set(names.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)") })
        return inodes.filter { links.contains("socket:[\($0)]") }
    }
}
