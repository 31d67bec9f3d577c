import Courier
import Foundation
import NIOConcurrencyHelpers
import Testing

/// Twins of Alamofire's `Tests/NetworkReachabilityManagerTests.swift`. Alamofire's `host:` is
/// Courier's `domain:`, its `startListening` is `statusChangeHandler` plus `startMonitoring()`, and
/// its `.reachable(.ethernetOrWiFi)` is `.reachableViaEthernet` or `.reachableViaWiFi` on Linux.
/// The `SCNetworkReachabilityFlags` tests have no twin (Apple-only).
@Suite("Conformance: Alamofire NetworkReachabilityManagerTests", .serialized)
struct AlamofireNetworkReachabilityManagerConformanceTests {
    /// What the general manager must say on this host.
    static var expectedGeneralReachable: Bool { Conformance.hostHasDefaultRoute }

    /// Starts `manager` with a handler and returns the first status it reports.
    static func firstStatus(of manager: NetworkReachabilityManager) async -> NetworkReachabilityStatus {
        await awaitCallback { finish in
            let once = NIOLockedValueBox(true)
            manager.statusChangeHandler = { status in
                guard once.withLockedValue({ first in defer { first = false }; return first }) else { return }
                finish(status)
            }
            manager.startMonitoring()
        }
    }

    static func isEthernetOrWiFi(_ status: NetworkReachabilityStatus) -> Bool {
        status == .reachableViaEthernet || status == .reachableViaWiFi
    }

    @Test func testThatManagerCanBeInitializedFromHost() {
        let manager = NetworkReachabilityManager(domain: "localhost")
        #expect(manager.networkReachabilityStatus == .unknown)
        #expect(manager.failureReason == nil)
    }

    @Test func testThatManagerCanBeInitializedFromAddress() {
        let manager = NetworkReachabilityManager()
        #expect(manager.networkReachabilityStatus == .unknown)
        #expect(!manager.isMonitoring)
    }

    /// Alamofire reads the flags synchronously; Courier's status comes from its monitor thread,
    /// so the twin waits for the first answer.
    @Test func testThatHostManagerIsReachableOnWiFi() async {
        let manager = NetworkReachabilityManager(domain: "localhost")
        let status = await Self.firstStatus(of: manager)
        manager.stopMonitoring()
        #expect(Self.isEthernetOrWiFi(status))
        #expect(manager.isReachable)
        #expect(!manager.isReachableViaWWAN)
    }

    /// Differs: Alamofire's manager has a status as soon as it is made; Courier's (as
    /// AFNetworking's) is unknown until monitoring answers. After the first answer it is reachable.
    @Test func testThatHostManagerStartsWithReachableStatus() async {
        let manager = NetworkReachabilityManager(domain: "localhost")
        #expect(manager.networkReachabilityStatus == .unknown)
        _ = await Self.firstStatus(of: manager)
        manager.stopMonitoring()
        #expect(Self.isEthernetOrWiFi(manager.networkReachabilityStatus))
    }

    /// Differs as ``testThatHostManagerStartsWithReachableStatus()``; the general manager is
    /// reachable when this host has a default route.
    @Test func testThatAddressManagerStartsWithReachableStatus() async {
        let manager = NetworkReachabilityManager()
        #expect(manager.networkReachabilityStatus == .unknown)
        let status = await Self.firstStatus(of: manager)
        manager.stopMonitoring()
        #expect(status.isReachable == Self.expectedGeneralReachable)
    }

    /// Issue 17: a manager stopped and started again reports its status again.
    static func restart(_ manager: NetworkReachabilityManager) async -> (NetworkReachabilityStatus, NetworkReachabilityStatus) {
        let first = await Self.firstStatus(of: manager)
        manager.stopMonitoring()
        let second = await Self.firstStatus(of: manager)
        manager.stopMonitoring()
        return (first, second)
    }

    @Test func testThatZeroManagerCanBeProperlyRestarted() async {
        let manager = NetworkReachabilityManager()
        let (first, second) = await Self.restart(manager)
        #expect(first == second)
        #expect(second.isReachable == Self.expectedGeneralReachable)
    }

    @Test func testThatHostManagerCanBeProperlyRestarted() async {
        let manager = NetworkReachabilityManager(domain: "localhost")
        let (first, second) = await Self.restart(manager)
        #expect(first == second)
        #expect(Self.isEthernetOrWiFi(second))
    }

    static func deinitialized(_ make: () -> NetworkReachabilityManager) {
        var manager: NetworkReachabilityManager? = make()
        weak let weakManager = manager
        manager?.statusChangeHandler = { _ in }
        manager?.startMonitoring()
        manager?.stopMonitoring()
        manager?.callbackQueue.sync {}
        manager = nil
        #expect(weakManager == nil)
    }

    @Test func testThatHostManagerCanBeDeinitialized() { Self.deinitialized { NetworkReachabilityManager(domain: "localhost") } }
    @Test func testThatAddressManagerCanBeDeinitialized() { Self.deinitialized { NetworkReachabilityManager() } }

    /// The source asks for store.apple.com; this sandbox has no Internet, so `localhost`.
    @Test func testThatHostManagerIsNotifiedWhenStartListeningIsCalled() async {
        let manager = NetworkReachabilityManager(domain: "localhost")
        let status = await Self.firstStatus(of: manager)
        manager.stopMonitoring()
        #expect(Self.isEthernetOrWiFi(status))
    }

    @Test func testThatAddressManagerIsNotifiedWhenStartListeningIsCalled() async {
        let manager = NetworkReachabilityManager()
        let status = await Self.firstStatus(of: manager)
        manager.stopMonitoring()
        #expect(status.isReachable == Self.expectedGeneralReachable)
    }
}
