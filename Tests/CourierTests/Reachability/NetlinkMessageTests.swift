#if os(Linux)
import CCourierNetlink
import Glibc
import Testing

/// The routing netlink walker on messages made by hand: what a dump's end says.
@Suite("Reachability: netlink messages")
struct NetlinkMessageTests {
    /// One message: the 16-byte header (length, type, flags, sequence, port) and a 4-byte payload.
    static func message(type: UInt16, flags: UInt16 = 0x2, payload: Int32) -> [UInt8] {
        var bytes: [UInt8] = []
        withUnsafeBytes(of: UInt32(20).littleEndian) { bytes += $0 }
        withUnsafeBytes(of: type.littleEndian) { bytes += $0 }
        withUnsafeBytes(of: flags.littleEndian) { bytes += $0 }
        withUnsafeBytes(of: UInt32(7).littleEndian) { bytes += $0 }
        withUnsafeBytes(of: UInt32(0).littleEndian) { bytes += $0 }
        withUnsafeBytes(of: payload.littleEndian) { bytes += $0 }
        return bytes
    }

    static func read(_ bytes: [UInt8]) -> courier_nl_item {
        var item = courier_nl_item()
        var offset = 0
        bytes.withUnsafeBytes { _ = courier_nl_next($0.baseAddress, $0.count, &offset, &item) }
        return item
    }

    /// An IPv4 default route of the main table (RTM_NEWROUTE) over several next hops
    /// (RTA_MULTIPATH), each given as its `rtnh_flags` and interface index, with a gateway.
    static func multipathRoute(_ hops: [(flags: UInt8, interface: Int32)]) -> [UInt8] {
        var attributes: [UInt8] = []
        func attribute(_ type: UInt16, _ payload: [UInt8]) -> [UInt8] {
            var bytes: [UInt8] = []
            withUnsafeBytes(of: UInt16(4 + payload.count).littleEndian) { bytes += $0 }
            withUnsafeBytes(of: type.littleEndian) { bytes += $0 }
            return bytes + payload  // every payload here is a multiple of 4 bytes
        }
        withUnsafeBytes(of: UInt32(254).littleEndian) { attributes += attribute(15, Array($0)) }  // RTA_TABLE: main
        var nextHops: [UInt8] = []
        for hop in hops {
            // struct rtnexthop (length, flags, hops, interface), then its RTA_GATEWAY.
            withUnsafeBytes(of: UInt16(16).littleEndian) { nextHops += $0 }
            nextHops += [hop.flags, 0]
            withUnsafeBytes(of: hop.interface.littleEndian) { nextHops += $0 }
            nextHops += attribute(5, [10, 0, 0, 1])
        }
        attributes += attribute(9, nextHops)  // RTA_MULTIPATH
        // struct rtmsg: family AF_INET, /0, no source, tos 0, table main, protocol boot, scope
        // universe, RTN_UNICAST, no flags.
        let route: [UInt8] = [2, 0, 0, 0, 254, 3, 0, 1, 0, 0, 0, 0]
        var bytes: [UInt8] = []
        withUnsafeBytes(of: UInt32(16 + route.count + attributes.count).littleEndian) { bytes += $0 }
        withUnsafeBytes(of: UInt16(24).littleEndian) { bytes += $0 }  // RTM_NEWROUTE
        withUnsafeBytes(of: UInt16(0x2).littleEndian) { bytes += $0 }  // NLM_F_MULTI
        withUnsafeBytes(of: UInt32(7).littleEndian) { bytes += $0 }
        withUnsafeBytes(of: UInt32(0).littleEndian) { bytes += $0 }
        return bytes + route + attributes
    }

    /// A multipath route goes out through the first next hop the kernel has not marked dead (its
    /// link is down: the kernel keeps the route and uses the other hops) or link-down; through
    /// the first when all are. The first hop alone stood for the route: its link down, the route
    /// (a multipath default) read as not reachable.
    @Test func aMultipathRouteIsReadThroughItsFirstLiveHop() {
        let dead: UInt8 = 1  // RTNH_F_DEAD
        let linkDown: UInt8 = 16  // RTNH_F_LINKDOWN
        let firstDown = Self.read(Self.multipathRoute([(dead | linkDown, 2), (0, 3), (0, 4)]))
        #expect(firstDown.kind == Int32(COURIER_NL_ROUTE.rawValue))
        #expect(firstDown.table == 254)
        #expect(firstDown.oif == 3)
        #expect(Self.read(Self.multipathRoute([(linkDown, 2), (0, 3)])).oif == 3)
        #expect(Self.read(Self.multipathRoute([(0, 2), (0, 3)])).oif == 2)
        #expect(Self.read(Self.multipathRoute([(dead, 2), (linkDown, 3)])).oif == 2)
    }

    /// A dump's `NLMSG_DONE` carries its result (the kernel's `netlink_dump_done`): a dump that
    /// failed part way, or that a change interrupted (`NLM_F_DUMP_INTR`), is not a complete one.
    /// (Both read as complete: the monitor reported a status from half a routing table.)
    @Test func aDumpsEndSaysWhetherItFailedOrWasInterrupted() {
        let done: UInt16 = 3  // NLMSG_DONE (linux/netlink.h; not exported to Swift)
        #expect(Self.read(Self.message(type: done, payload: 0)).kind == Int32(COURIER_NL_DONE.rawValue))
        #expect(Self.read(Self.message(type: done, payload: 0)).error == 0)
        #expect(Self.read(Self.message(type: done, payload: -EMSGSIZE)).error == -EMSGSIZE)
        #expect(Self.read(Self.message(type: done, flags: 0x2 | 0x10, payload: 0)).error == -EINTR)
    }
}
#endif
