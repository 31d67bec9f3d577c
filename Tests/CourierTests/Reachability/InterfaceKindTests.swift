import Foundation
import Testing

@testable import Courier

/// A directory shaped like `/sys/class/net`, made for one test and removed afterwards.
struct FakeSysfs {
    let root: URL

    init() throws {
        self.root = FileManager.default.temporaryDirectory.appendingPathComponent("courier-sysfs-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: self.root, withIntermediateDirectories: true)
    }

    func remove() { try? FileManager.default.removeItem(at: self.root) }

    /// Adds `<name>/` with `ifindex`, and, when given, `type`, `uevent` (with `INTERFACE=` and
    /// `IFINDEX=` as the kernel writes them, then `DEVTYPE=`), a `wireless/` directory and a
    /// `phy80211` link to a radio directory.
    func add(
        _ name: String, index: Int32, type: UInt32? = 1, devtype: String? = nil, wireless: Bool = false, phy80211: Bool = false
    ) throws {
        let directory = self.root.appendingPathComponent(name)
        let files = FileManager.default
        try files.createDirectory(at: directory, withIntermediateDirectories: true)
        try "\(index)\n".write(to: directory.appendingPathComponent("ifindex"), atomically: true, encoding: .utf8)
        if let type { try "\(type)\n".write(to: directory.appendingPathComponent("type"), atomically: true, encoding: .utf8) }
        var uevent = "INTERFACE=\(name)\nIFINDEX=\(index)\n"
        if let devtype { uevent = "DEVTYPE=\(devtype)\n" + uevent }
        try uevent.write(to: directory.appendingPathComponent("uevent"), atomically: true, encoding: .utf8)
        if wireless { try files.createDirectory(at: directory.appendingPathComponent("wireless"), withIntermediateDirectories: true) }
        if phy80211 {
            // Real sysfs: phy80211 -> ../../../../ieee80211/phy0, a directory of the radio's.
            let radio = self.root.appendingPathComponent("ieee80211-\(name)")
            try files.createDirectory(at: radio, withIntermediateDirectories: true)
            try files.createSymbolicLink(atPath: directory.appendingPathComponent("phy80211").path, withDestinationPath: radio.path)
        }
    }
}

@Suite("Interface kind: WiFi, WWAN or Ethernet from sysfs and the hardware type")
struct InterfaceKindTests {
    typealias Link = RoutingSnapshot.Link

    static func link(_ name: String, index: Int32, type: UInt32 = 1) -> Link {
        Link(index: index, name: name, flags: Link.up | Link.running, hardwareType: type)
    }

    static func withSysfs(_ body: (FakeSysfs) throws -> Void) throws {
        let sysfs = try FakeSysfs()
        defer { sysfs.remove() }
        try body(sysfs)
    }

    @Test func aWirelessDirectoryIsWiFi() throws {
        try Self.withSysfs { sysfs in
            try sysfs.add("wlp2s0", index: 3, wireless: true)
            #expect(InterfaceKind.status(of: Self.link("wlp2s0", index: 3), sysfs: sysfs.root.path) == .reachableViaWiFi)
        }
    }

    @Test func aPhy80211LinkWithoutWirelessExtensionsIsWiFi() throws {
        try Self.withSysfs { sysfs in
            try sysfs.add("wlan0", index: 4, phy80211: true)
            #expect(InterfaceKind.status(of: Self.link("wlan0", index: 4), sysfs: sysfs.root.path) == .reachableViaWiFi)
        }
    }

    @Test func devtypeWlanIsWiFiWhateverTheName() throws {
        try Self.withSysfs { sysfs in
            try sysfs.add("office", index: 5, devtype: "wlan")
            #expect(InterfaceKind.status(of: Self.link("office", index: 5), sysfs: sysfs.root.path) == .reachableViaWiFi)
        }
    }

    @Test func aRaw80211TypeIsWiFi() throws {
        try Self.withSysfs { sysfs in
            try sysfs.add("mon0", index: 6, type: 803)  // ARPHRD_IEEE80211_RADIOTAP
            #expect(InterfaceKind.status(of: Self.link("mon0", index: 6, type: 803), sysfs: sysfs.root.path) == .reachableViaWiFi)
        }
    }

    @Test func devtypeWwanIsWWANWhateverTheName() throws {
        try Self.withSysfs { sysfs in
            try sysfs.add("modem", index: 7, devtype: "wwan")
            #expect(InterfaceKind.status(of: Self.link("modem", index: 7), sysfs: sysfs.root.path) == .reachableViaWWAN)
        }
    }

    @Test func pppAndRawIPTypesAreWWAN() throws {
        try Self.withSysfs { sysfs in
            try sysfs.add("dialup", index: 8, type: 512)  // ARPHRD_PPP
            try sysfs.add("data", index: 9, type: 519)  // ARPHRD_RAWIP
            #expect(InterfaceKind.status(of: Self.link("dialup", index: 8), sysfs: sysfs.root.path) == .reachableViaWWAN)
            #expect(InterfaceKind.status(of: Self.link("data", index: 9), sysfs: sysfs.root.path) == .reachableViaWWAN)
        }
        // Without a sysfs entry, netlink's hardware type decides alike.
        #expect(InterfaceKind.status(of: Self.link("dialup", index: 8, type: 512), sysfs: "/nonexistent") == .reachableViaWWAN)
    }

    @Test func modemNamesAreWWANWithoutSysfs() {
        for name in ["wwan0", "wwp0s20u4i6", "rmnet_data0", "ppp0", "ccmni1", "usb_wwan0"] {
            #expect(InterfaceKind.status(of: Self.link(name, index: 10), sysfs: "/nonexistent") == .reachableViaWWAN, "\(name)")
        }
    }

    @Test func everythingElseIsEthernet() throws {
        try Self.withSysfs { sysfs in
            try sysfs.add("eth0", index: 2)
            try sysfs.add("br0", index: 11, devtype: "bridge")
            try sysfs.add("tun0", index: 12, type: 65534)  // ARPHRD_NONE: a VPN, not decisive
            #expect(InterfaceKind.status(of: Self.link("eth0", index: 2), sysfs: sysfs.root.path) == .reachableViaEthernet)
            #expect(InterfaceKind.status(of: Self.link("br0", index: 11), sysfs: sysfs.root.path) == .reachableViaEthernet)
            #expect(InterfaceKind.status(of: Self.link("tun0", index: 12, type: 65534), sysfs: sysfs.root.path) == .reachableViaEthernet)
        }
    }

    @Test func aSysfsEntryForAnotherLinkOfTheSameNameIsIgnored() throws {
        try Self.withSysfs { sysfs in
            // /sys shows another namespace's wlan0 (index 3); ours is index 9.
            try sysfs.add("wlan0", index: 3, wireless: true)
            #expect(InterfaceKind.status(of: Self.link("wlan0", index: 9), sysfs: sysfs.root.path) == .reachableViaEthernet)
        }
    }

    @Test func theStatusOfADefaultRouteFollowsTheKindOfItsLink() throws {
        try Self.withSysfs { sysfs in
            try sysfs.add("wlan0", index: 3, devtype: "wlan", wireless: true, phy80211: true)
            try sysfs.add("wwan0", index: 4, type: 519, devtype: "wwan")
            let wifi = Self.link("wlan0", index: 3)
            let wwan = Self.link("wwan0", index: 4, type: 519)
            func defaultRoute(via link: Int32, metric: UInt32) -> RoutingSnapshot.Route {
                RoutingSnapshot.Route(
                    isIPv6: false, table: RoutingSnapshot.Route.mainTable, type: RoutingSnapshot.Route.unicast, prefixLength: 0,
                    destination: [0, 0, 0, 0], outputInterface: link, metric: metric)
            }
            let kind = { (link: Link) in InterfaceKind.status(of: link, sysfs: sysfs.root.path) }
            // The best (lowest metric) default route decides: WiFi while it is there, WWAN after.
            let both = RoutingSnapshot(links: [3: wifi, 4: wwan], routes: [defaultRoute(via: 3, metric: 600), defaultRoute(via: 4, metric: 700)])
            #expect(both.status(toward: nil, kind: kind) == .reachableViaWiFi)
            let cellularOnly = RoutingSnapshot(links: [3: wifi, 4: wwan], routes: [defaultRoute(via: 4, metric: 700)])
            #expect(cellularOnly.status(toward: nil, kind: kind) == .reachableViaWWAN)
        }
    }
}

/// The same rule end to end: a monitor thread in a namespace of the test's own reads a fake sysfs
/// that says the veth is a WiFi interface.
@Suite(
    "Interface kind in a network namespace",
    .serialized,
    .enabled(if: TestNamespace.available, TestNamespace.skipReason))
struct NamespaceInterfaceKindTests {
    @Test func aVethThatSysfsCallsWirelessIsReachableViaWiFi() async throws {
        let namespace = try await TestNamespace.make()
        defer { namespace.delete() }
        try await namespace.addVethPair(defaultRoute: true)
        let index = try #require(await namespace.linkIndex("v0"))
        let sysfs = try FakeSysfs()
        defer { sysfs.remove() }
        try sysfs.add("v0", index: index, devtype: "wlan", wireless: true)
        var environment = ReachabilityEnvironment.system
        environment.namespacePath = namespace.path
        environment.sysfsRoot = sysfs.root.path
        let manager = NetworkReachabilityManager(target: .defaultRoute, environment: environment)
        manager.startMonitoring()
        defer { manager.stopMonitoring() }
        #expect(await manager.wait(for: .reachableViaWiFi) != nil, "\(manager.networkReachabilityStatus)")
        #expect(manager.isReachableViaWiFi)
    }

    @Test func aVethNamedLikeAModemIsReachableViaWWAN() async throws {
        let namespace = try await TestNamespace.make()
        defer { namespace.delete() }
        try await namespace.ip("link", "add", "wwan0", "type", "veth", "peer", "name", "v1")
        try await namespace.ip("addr", "add", "10.78.0.2/24", "dev", "wwan0")
        try await namespace.ip("link", "set", "v1", "up")
        try await namespace.ip("link", "set", "wwan0", "up")
        try await namespace.ip("route", "add", "default", "via", "10.78.0.1")
        let manager = NetworkReachabilityManager.inNamespace(namespace, target: .defaultRoute)
        manager.startMonitoring()
        defer { manager.stopMonitoring() }
        #expect(await manager.wait(for: .reachableViaWWAN) != nil, "\(manager.networkReachabilityStatus)")
        #expect(manager.isReachableViaWWAN)
    }
}
