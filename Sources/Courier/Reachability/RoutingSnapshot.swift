/// The links and routes of one network namespace at one moment, from a netlink dump, and the
/// rule that turns them into a status. Pure: tested without a socket.
struct RoutingSnapshot: Sendable, Hashable {
    struct Link: Sendable, Hashable {
        var index: Int32
        var name: String
        /// `IFF_*` flags.
        var flags: UInt32
        /// `ARPHRD_*` hardware type.
        var hardwareType: UInt32

        static let up: UInt32 = 0x1        // IFF_UP
        static let loopback: UInt32 = 0x8  // IFF_LOOPBACK
        static let running: UInt32 = 0x40  // IFF_RUNNING

        /// Up, running (carrier present) and not loopback.
        var carriesTraffic: Bool {
            self.flags & Self.up != 0 && self.flags & Self.running != 0 && self.flags & Self.loopback == 0
        }
    }

    struct Route: Sendable, Hashable {
        /// `AF_INET` or `AF_INET6`.
        var isIPv6: Bool
        var table: UInt32
        /// `RTN_*`.
        var type: UInt32
        var prefixLength: Int
        /// Network-order destination, zero-filled when the route has none (a default route).
        var destination: [UInt8]
        /// The output interface's index, 0 when none.
        var outputInterface: Int32
        var metric: UInt32

        static let mainTable: UInt32 = 254  // RT_TABLE_MAIN
        static let unicast: UInt32 = 1      // RTN_UNICAST
    }

    var links: [Int32: Link] = [:]
    var routes: [Route] = []

    /// The status for `target` (`nil` addresses: any default route), given how to tell an
    /// interface's kind.
    ///
    /// Only the main table is read. A destination is reachable when its longest-prefix route (the
    /// lowest metric among equals; an IPv4-mapped IPv6 address's among the IPv4 routes) is a
    /// unicast route whose interface carries traffic; the
    /// general manager wants the same of the default route of lowest metric of IPv4 or of IPv6
    /// (an `unreachable`, `blackhole` or `prohibit` default route below a unicast one makes that
    /// family not reachable, as the kernel takes it), the lowest metric deciding the kind. A
    /// loopback address (`127.0.0.0/8`, `::1`, or an IPv4-mapped loopback) is always reachable,
    /// whatever the routes say (the kernel routes it through its `local` table, never off the
    /// host), and counts as ``NetworkReachabilityStatus/reachableViaEthernet``.
    func status(
        toward addresses: [IPAddress]?,
        kind: (Link) -> NetworkReachabilityStatus
    ) -> NetworkReachabilityStatus {
        let main = self.routes.filter { $0.table == Route.mainTable }
        guard let addresses else {
            // Each family's default route is the one the kernel takes, whatever its type (an
            // `unreachable` default below a unicast one wins); judged after it is picked.
            let usable = [false, true].compactMap { isIPv6 in
                main.filter { $0.isIPv6 == isIPv6 && $0.prefixLength == 0 }.min { $0.metric < $1.metric }
            }.filter { $0.type == Route.unicast && self.usableLink($0) != nil }
            return usable.min { $0.metric < $1.metric }.flatMap(self.usableLink).map(kind) ?? .notReachable
        }
        if addresses.contains(where: \.isLoopback) { return .reachableViaEthernet }
        for address in addresses.map({ $0.mappedIPv4 ?? $0 }) {
            let candidates = main.filter {
                $0.isIPv6 == address.isIPv6 && address.matches(network: $0.destination, prefixLength: $0.prefixLength)
            }
            let best = candidates.min {
                $0.prefixLength != $1.prefixLength ? $0.prefixLength > $1.prefixLength : $0.metric < $1.metric
            }
            if let best, best.type == Route.unicast, let link = self.usableLink(best) {
                return kind(link)
            }
        }
        return .notReachable
    }

    private func usableLink(_ route: Route) -> Link? {
        guard let link = self.links[route.outputInterface], link.carriesTraffic else { return nil }
        return link
    }
}
