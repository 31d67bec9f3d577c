import Testing

@testable import Courier

@Suite("Routing snapshot: links and routes to a status")
struct RoutingSnapshotTests {
    typealias Link = RoutingSnapshot.Link
    typealias Route = RoutingSnapshot.Route

    static let upRunning: UInt32 = Link.up | Link.running
    static let eth = Link(index: 2, name: "eth0", flags: upRunning, hardwareType: 1)
    static let wlan = Link(index: 3, name: "wlan0", flags: upRunning, hardwareType: 1)

    static func route(_ destination: [UInt8], _ prefix: Int, via link: Int32, metric: UInt32 = 0, type: UInt32 = Route.unicast) -> Route {
        Route(
            isIPv6: destination.count == 16, table: Route.mainTable, type: type, prefixLength: prefix,
            destination: destination, outputInterface: link, metric: metric)
    }

    static func kind(_ link: Link) -> NetworkReachabilityStatus {
        link.name.hasPrefix("wlan") ? .reachableViaWiFi : .reachableViaEthernet
    }

    @Test func aDefaultRouteOnAWorkingLinkIsReachable() {
        let snapshot = RoutingSnapshot(links: [2: Self.eth], routes: [Self.route([0, 0, 0, 0], 0, via: 2)])
        #expect(snapshot.status(toward: nil, kind: Self.kind) == .reachableViaEthernet)
    }

    /// Issue 17: loopback is always reachable, even with no route at all (the kernel routes it
    /// through its `local` table, which is not read).
    @Test func loopbackAddressesAreAlwaysReachable() throws {
        let empty = RoutingSnapshot(links: [:], routes: [])
        for text in ["127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1"] {
            let address = try #require(IPAddress(text))
            #expect(address.isLoopback, "\(text)")
            #expect(empty.status(toward: [address], kind: Self.kind) == .reachableViaEthernet, "\(text)")
        }
        for text in ["128.0.0.1", "10.0.0.1", "::2", "::ffff:10.0.0.1", "fe80::1"] {
            #expect(IPAddress(text)?.isLoopback == false, "\(text)")
            #expect(empty.status(toward: [try #require(IPAddress(text))], kind: Self.kind) == .notReachable, "\(text)")
        }
    }

    @Test func loopbackTargetsAreNamedAsSuch() {
        #expect(ReachabilityTarget.domain("localhost").isLoopback)
        #expect(ReachabilityTarget.domain("LocalHost.").isLoopback)
        #expect(ReachabilityTarget.domain("api.localhost").isLoopback)
        #expect(ReachabilityTarget.domain("127.0.0.1").isLoopback)
        #expect(!ReachabilityTarget.domain("localhost.example.com").isLoopback)
        #expect(!ReachabilityTarget.defaultRoute.isLoopback)
        #expect(!ReachabilityTarget.invalidAddress("localhost").isLoopback)
    }

    @Test func noDefaultRouteIsNotReachable() {
        let snapshot = RoutingSnapshot(links: [2: Self.eth], routes: [Self.route([10, 0, 0, 0], 8, via: 2)])
        #expect(snapshot.status(toward: nil, kind: Self.kind) == .notReachable)
    }

    @Test func aLinkWithoutCarrierOrLoopbackDoesNotCount() {
        var down = Self.eth
        down.flags = Link.up
        var loopback = Self.eth
        loopback.flags = Self.upRunning | Link.loopback
        for link in [down, loopback] {
            let snapshot = RoutingSnapshot(links: [2: link], routes: [Self.route([0, 0, 0, 0], 0, via: 2)])
            #expect(snapshot.status(toward: nil, kind: Self.kind) == .notReachable)
        }
    }

    @Test func theLowestMetricDefaultRouteDecidesTheKind() {
        let snapshot = RoutingSnapshot(
            links: [2: Self.eth, 3: Self.wlan],
            routes: [Self.route([0, 0, 0, 0], 0, via: 2, metric: 600), Self.route([0, 0, 0, 0], 0, via: 3, metric: 100)])
        #expect(snapshot.status(toward: nil, kind: Self.kind) == .reachableViaWiFi)
    }

    /// `ip route add unreachable default metric 10` beside a unicast default at metric 100: the
    /// kernel takes the unreachable one, and so does the general manager, as an address manager
    /// does on the same snapshot. Only unicast defaults were read, and it said Ethernet.
    @Test func anUnreachableDefaultRouteOfLowerMetricWins() throws {
        let snapshot = RoutingSnapshot(
            links: [2: Self.eth],
            routes: [
                Self.route([0, 0, 0, 0], 0, via: 0, metric: 10, type: 7),
                Self.route([0, 0, 0, 0], 0, via: 2, metric: 100),
            ])
        #expect(snapshot.status(toward: nil, kind: Self.kind) == .notReachable)
        #expect(snapshot.status(toward: [try #require(IPAddress("8.8.8.8"))], kind: Self.kind) == .notReachable)
    }

    /// Each family's default route is judged on its own: an unreachable IPv6 default does not hide
    /// a working IPv4 one.
    @Test func anUnreachableIPv6DefaultLeavesAWorkingIPv4DefaultReachable() {
        let v6Default = [UInt8](repeating: 0, count: 16)
        let snapshot = RoutingSnapshot(
            links: [2: Self.eth],
            routes: [
                Self.route(v6Default, 0, via: 0, metric: 0, type: 7),
                Self.route([0, 0, 0, 0], 0, via: 2, metric: 100),
            ])
        #expect(snapshot.status(toward: nil, kind: Self.kind) == .reachableViaEthernet)
    }

    @Test func otherTablesAreIgnored() {
        var route = Self.route([0, 0, 0, 0], 0, via: 2)
        route.table = 100
        let snapshot = RoutingSnapshot(links: [2: Self.eth], routes: [route])
        #expect(snapshot.status(toward: nil, kind: Self.kind) == .notReachable)
    }

    @Test func anAddressTakesItsLongestPrefixRoute() throws {
        let address = try #require(IPAddress("192.0.2.7"))
        let snapshot = RoutingSnapshot(
            links: [2: Self.eth, 3: Self.wlan],
            routes: [Self.route([0, 0, 0, 0], 0, via: 2), Self.route([192, 0, 2, 0], 24, via: 3)])
        #expect(snapshot.status(toward: [address], kind: Self.kind) == .reachableViaWiFi)
        let other = try #require(IPAddress("198.51.100.1"))
        #expect(snapshot.status(toward: [other], kind: Self.kind) == .reachableViaEthernet)
    }

    @Test func anUnreachableRouteWins() throws {
        let address = try #require(IPAddress("192.0.2.7"))
        let snapshot = RoutingSnapshot(
            links: [2: Self.eth],
            routes: [Self.route([0, 0, 0, 0], 0, via: 2), Self.route([192, 0, 2, 0], 24, via: 0, type: 7)])
        #expect(snapshot.status(toward: [address], kind: Self.kind) == .notReachable)
    }

    @Test func anIPv6AddressNeedsAnIPv6Route() throws {
        let address = try #require(IPAddress("2001:db8::1"))
        let v4Only = RoutingSnapshot(links: [2: Self.eth], routes: [Self.route([0, 0, 0, 0], 0, via: 2)])
        #expect(v4Only.status(toward: [address], kind: Self.kind) == .notReachable)
        var network = [UInt8](repeating: 0, count: 16)
        network[0] = 0x20
        network[1] = 0x01
        network[2] = 0x0d
        network[3] = 0xb8
        let v6 = RoutingSnapshot(links: [2: Self.eth], routes: [Self.route(network, 32, via: 2)])
        #expect(v6.status(toward: [address], kind: Self.kind) == .reachableViaEthernet)
    }

    /// An IPv4-mapped IPv6 address goes out over IPv4 (the kernel routes a connection to
    /// `::ffff:192.0.2.7` by its IPv4 routes): it was matched against IPv6 routes only, and was
    /// not reachable on a host whose only default route is IPv4's.
    @Test func anIPv4MappedAddressTakesTheIPv4Routes() throws {
        let mapped = try #require(IPAddress("::ffff:192.0.2.7"))
        let snapshot = RoutingSnapshot(
            links: [2: Self.eth, 3: Self.wlan],
            routes: [Self.route([0, 0, 0, 0], 0, via: 2), Self.route([192, 0, 2, 0], 24, via: 3)])
        #expect(snapshot.status(toward: [mapped], kind: Self.kind) == .reachableViaWiFi)
        let unrouted = RoutingSnapshot(links: [2: Self.eth], routes: [Self.route([10, 0, 0, 0], 8, via: 2)])
        #expect(unrouted.status(toward: [mapped], kind: Self.kind) == .notReachable)
    }

    @Test func addressesParseAndPrint() {
        #expect(IPAddress("10.1.2.3")?.bytes == [10, 1, 2, 3])
        #expect(IPAddress("::1")?.bytes.count == 16)
        #expect(IPAddress("2001:db8::1")?.description == "2001:db8::1")
        #expect(IPAddress("999.1.1.1") == nil)
        #expect(IPAddress("example.com") == nil)
        #expect(IPAddress("") == nil)
    }

    @Test func interfaceKindsFromNameAndHardwareType() {
        #expect(InterfaceKind.status(of: Link(index: 9, name: "ppp0", flags: 0, hardwareType: 512)) == .reachableViaWWAN)
        #expect(InterfaceKind.status(of: Link(index: 9, name: "wwan0", flags: 0, hardwareType: 65534)) == .reachableViaWWAN)
        #expect(InterfaceKind.status(of: Link(index: 9, name: "veth9", flags: 0, hardwareType: 1)) == .reachableViaEthernet)
    }
}
