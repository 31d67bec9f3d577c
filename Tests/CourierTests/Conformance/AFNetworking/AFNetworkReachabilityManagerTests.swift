import Courier
import Foundation
import NIOConcurrencyHelpers
import Testing

/// Twins of AFNetworking's `Tests/Tests/AFNetworkReachabilityManagerTests.m`.
///
/// The source's two managers "should always be reachable when the tests are run": one for the
/// domain `localhost`, one general. Here the second is a manager for the address `127.0.0.1`,
/// which Courier always counts reachable (loopback); AFNetworking expects WiFi or WWAN, and a
/// Linux loopback is reported as Ethernet.
@Suite("Conformance: AFNetworking AFNetworkReachabilityManagerTests", .serialized)
struct AFNetworkReachabilityManagerConformanceTests {
    static func addressReachability() -> NetworkReachabilityManager { NetworkReachabilityManager(address: "127.0.0.1") }
    static func domainReachability() -> NetworkReachabilityManager { NetworkReachabilityManager(domain: "localhost") }

    @Test func testAddressReachabilityStartsInUnknownState() {
        #expect(Self.addressReachability().networkReachabilityStatus == .unknown)
    }

    @Test func testDomainReachabilityStartsInUnknownState() {
        #expect(Self.domainReachability().networkReachabilityStatus == .unknown)
    }

    /// Starts `manager` and waits for a `.reachabilityDidChange` notification from it whose
    /// status is reachable.
    static func verifyNotification(_ manager: NetworkReachabilityManager) async {
        let note = await Conformance.notification(.reachabilityDidChange, object: manager) { manager.startMonitoring() }
        defer { manager.stopMonitoring() }
        let status = note?.userInfo?[ReachabilityNotificationKey.status] as? NetworkReachabilityStatus
        #expect(status == .reachableViaEthernet)
        #expect(note?.object as? NetworkReachabilityManager === manager)
    }

    /// Sets a status handler, starts `manager` and waits for a reachable status.
    static func verifyStatusHandler(_ manager: NetworkReachabilityManager) async {
        let status: NetworkReachabilityStatus = await awaitCallback { finish in
            let once = NIOLockedValueBox(true)
            manager.statusChangeHandler = { status in
                guard status.isReachable, once.withLockedValue({ first in defer { first = false }; return first }) else { return }
                finish(status)
            }
            manager.startMonitoring()
        }
        manager.stopMonitoring()
        manager.statusChangeHandler = nil
        #expect(status == .reachableViaEthernet)
    }

    @Test func testAddressReachabilityNotification() async { await Self.verifyNotification(Self.addressReachability()) }
    @Test func testDomainReachabilityNotification() async { await Self.verifyNotification(Self.domainReachability()) }
    @Test func testAddressReachabilityBlock() async { await Self.verifyStatusHandler(Self.addressReachability()) }
    @Test func testDomainReachabilityBlock() async { await Self.verifyStatusHandler(Self.domainReachability()) }

    @Test func testObjectPostingReachabilityManagerNotification() async {
        let manager = Self.domainReachability()
        let other = Self.domainReachability()
        let note = await Conformance.notification(.reachabilityDidChange, object: manager) {
            other.startMonitoring()
            manager.startMonitoring()
        }
        manager.stopMonitoring()
        other.stopMonitoring()
        #expect(note?.object as? NetworkReachabilityManager === manager)
    }
}
