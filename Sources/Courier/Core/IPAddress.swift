#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An IPv4 or IPv6 address as its network-order bytes.
struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    /// 4 bytes (IPv4) or 16 (IPv6).
    let bytes: [UInt8]

    var isIPv6: Bool { self.bytes.count == 16 }

    init?(bytes: [UInt8]) {
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// Parses a dotted IPv4 or an IPv6 literal (brackets and a zone are not accepted).
    init?(_ text: String) {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            self.bytes = withUnsafeBytes(of: &v4) { Array($0) }
            return
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            self.bytes = withUnsafeBytes(of: &v6) { Array($0) }
            return
        }
        return nil
    }

    /// Parses an address as a URL's host writes it: in brackets or not, an IPv6 address's zone
    /// (`fe80::1%eth0`) left out (it names an interface, not another address).
    init?(host: some StringProtocol) {
        var text = Substring(host)
        if text.hasPrefix("["), text.hasSuffix("]") { text = text.dropFirst().dropLast() }
        if text.contains(":"), let zone = text.firstIndex(of: "%") { text = text[..<zone] }
        self.init(String(text))
    }

    var description: String {
        var buffer = [CChar](repeating: 0, count: 64)
        let family = self.isIPv6 ? AF_INET6 : AF_INET
        let ok = self.bytes.withUnsafeBytes { raw in
            inet_ntop(family, raw.baseAddress, &buffer, socklen_t(buffer.count)) != nil
        }
        return ok ? String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "?"
    }

    /// Whether this is a loopback address: `127.0.0.0/8`, `::1`, or `::ffff:127.x.y.z`.
    var isLoopback: Bool {
        if let v4 = self.mappedIPv4 { return v4.bytes[0] == 127 }
        if self.bytes.count == 4 { return self.bytes[0] == 127 }
        return self.bytes[0..<15].allSatisfy({ $0 == 0 }) && self.bytes[15] == 1
    }

    /// The IPv4 address an IPv4-mapped IPv6 address (`::ffff:192.0.2.1`) stands for, which the
    /// kernel reaches over IPv4; nil for any other address.
    var mappedIPv4: IPAddress? {
        guard self.isIPv6, self.bytes[0..<10].allSatisfy({ $0 == 0 }), self.bytes[10] == 0xFF, self.bytes[11] == 0xFF else { return nil }
        return IPAddress(bytes: Array(self.bytes[12...]))
    }

    /// Whether the first `prefixLength` bits equal those of `network`.
    func matches(network: [UInt8], prefixLength: Int) -> Bool {
        guard network.count >= self.bytes.count, prefixLength <= self.bytes.count * 8 else { return false }
        let whole = prefixLength / 8
        if whole > 0, self.bytes[0..<whole] != network[0..<whole] { return false }
        let rest = prefixLength % 8
        if rest == 0 { return true }
        let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - rest))
        return self.bytes[whole] & mask == network[whole] & mask
    }
}
