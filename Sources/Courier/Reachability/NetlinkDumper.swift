#if os(Linux)
import CCourierNetlink
import Glibc

/// Reads the links and routes of the current network namespace from a routing netlink socket
/// opened for dumps (not subscribed to changes).
struct NetlinkDumper {
    let fd: Int32
    private var sequence: UInt32 = 0
    private var buffer = [UInt8](repeating: 0, count: 64 * 1024)

    init(fd: Int32) { self.fd = fd }

    /// A fresh snapshot: every link, then every route. A dump the kernel says a change
    /// interrupted (its links and routes may not agree) is taken again, up to three times in all.
    mutating func snapshot() throws(ReachabilityFailure) -> RoutingSnapshot {
        var attempts = 0
        while true {
            attempts += 1
            do {
                return try self.snapshotOnce()
            } catch .socketFailed(_, let errno) where errno == EINTR && attempts < 3 {
                continue
            }
        }
    }

    private mutating func snapshotOnce() throws(ReachabilityFailure) -> RoutingSnapshot {
        var snapshot = RoutingSnapshot()
        try self.dump(links: true) { item in
            let name = withUnsafeBytes(of: item.name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            snapshot.links[item.index] = RoutingSnapshot.Link(
                index: item.index, name: name, flags: item.flags, hardwareType: item.arphrd)
        }
        try self.dump(links: false) { item in
            let isIPv6 = item.family == AF_INET6
            guard isIPv6 || item.family == AF_INET else { return }
            let destination = withUnsafeBytes(of: item.dst) { Array($0.prefix(isIPv6 ? 16 : 4)) }
            snapshot.routes.append(
                RoutingSnapshot.Route(
                    isIPv6: isIPv6, table: item.table, type: item.type, prefixLength: Int(item.dst_len),
                    destination: destination, outputInterface: item.oif, metric: item.priority))
        }
        return snapshot
    }

    private mutating func dump(links: Bool, _ each: (courier_nl_item) -> Void) throws(ReachabilityFailure) {
        self.sequence &+= 1
        let sent = courier_nl_request_dump(self.fd, links ? 1 : 0, self.sequence)
        guard sent == 0 else { throw .socketFailed("sending a dump request", errno: -sent) }
        while true {
            let count = self.buffer.withUnsafeMutableBytes { recv(self.fd, $0.baseAddress, $0.count, 0) }
            if count < 0 {
                if errno == EINTR { continue }
                throw .socketFailed("reading a dump", errno: errno)
            }
            var offset = 0
            var item = courier_nl_item()
            var finished = false
            let sequence = self.sequence
            self.buffer.withUnsafeBytes { raw in
                while !finished {
                    let kind = courier_nl_next(raw.baseAddress, count, &offset, &item)
                    // Replies to an earlier dump that ended in an error are left over: skip them.
                    if kind != Int32(COURIER_NL_END.rawValue), item.seq != sequence { continue }
                    switch UInt32(kind) {
                    case COURIER_NL_END.rawValue: return
                    case COURIER_NL_DONE.rawValue: finished = true  // with the dump's result in `error`
                    case COURIER_NL_ERROR.rawValue where item.error != 0: finished = true
                    case COURIER_NL_LINK.rawValue where links: each(item)
                    case COURIER_NL_ROUTE.rawValue where !links: each(item)
                    default: continue
                    }
                }
            }
            if finished, item.error != 0 {
                throw .socketFailed(item.error == -EINTR ? "a dump a change interrupted" : "a dump", errno: -item.error)
            }
            if finished { return }
        }
    }
}
#endif
