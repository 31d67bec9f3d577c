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
