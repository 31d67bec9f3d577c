import Testing

@testable import Courier

/// curl's `no_proxy` unit test (`tests/unit/unit1614.c`, curl 7.86, curl licence): its three
/// tables, `Curl_cidr4_match`, `Curl_cidr6_match` and `Curl_check_noproxy`, through
/// ``ProxyConfiguration/BypassList``.
///
/// Courier reads `no_proxy` as curl does but for two rules, asserted in their rows:
/// - An entry without a leading dot covers the names under it too (`example.com` covers
///   `www.example.com`), as Go, wget and Courier's documentation say; curl 7.86 matches it only
///   exactly.
/// - A prefix length past the address's bits (`/33`, `/129`) is a typed error
///   (``CourierError/Code/invalidProxyConfiguration``) when the list is read; curl matches
///   nothing with it.
@Suite("curl's no_proxy tests")
struct CurlNoProxyTests {
    struct Check: Sendable, CustomTestStringConvertible {
        let host: String
        let list: String
        let curl: Bool
        /// Courier's answer where it differs from curl's, with the rule above that decides it.
        var courier: Bool?
        var testDescription: String { "\(self.host) in \(self.list.prefix(40))" }
    }

    /// `Curl_check_noproxy`'s table.
    static let noProxy: [Check] = [
        Check(host: "www.example.com", list: "localhost,.example.com,.example.de", curl: true),
        Check(host: "www.example.com.", list: "localhost,.example.com,.example.de", curl: true),
        Check(host: "example.com", list: "localhost,.example.com,.example.de", curl: true),
        Check(host: "example.com.", list: "localhost,.example.com,.example.de", curl: true),
        Check(host: "www.example.com", list: "localhost,.example.com.,.example.de", curl: true),
        Check(host: "www.example.com", list: "localhost,www.example.com.,.example.de", curl: true),
        Check(host: "example.com", list: "localhost,example.com,.example.de", curl: true),
        Check(host: "example.com.", list: "localhost,example.com,.example.de", curl: true),
        // An entry without a leading dot covers the names under it (Go, wget).
        Check(host: "www.example.com", list: "localhost,example.com,.example.de", curl: false, courier: true),
        Check(host: "127.0.0.1", list: "127.0.0.1,localhost", curl: true),
        Check(host: "127.0.0.1", list: "127.0.0.1,localhost,", curl: true),
        Check(host: "127.0.0.1", list: "127.0.0.1/8,localhost,", curl: true),
        Check(host: "127.0.0.1", list: "127.0.0.1/28,localhost,", curl: true),
        Check(host: "127.0.0.1", list: "127.0.0.1/31,localhost,", curl: true),
        Check(host: "127.0.0.1", list: "localhost,127.0.0.1", curl: true),
        // A 128-byte and a 127-byte "address": names, which never match an address.
        Check(host: "127.0.0.1", list: "localhost," + String(repeating: "127.0.0.1.", count: 12) + "127.0.0.", curl: false),
        Check(host: "127.0.0.1", list: "localhost," + String(repeating: "127.0.0.1.", count: 12) + "127.0.0", curl: false),
        Check(host: "localhost", list: "localhost,127.0.0.1", curl: true),
        Check(host: "localhost", list: "127.0.0.1,localhost", curl: true),
        Check(host: "foobar", list: "barfoo", curl: false),
        Check(host: "foobar", list: "foobar", curl: true),
        Check(host: "192.168.0.1", list: "foobar", curl: false),
        Check(host: "192.168.0.1", list: "192.168.0.0/16", curl: true),
        Check(host: "192.168.0.1", list: "192.168.0.0/24", curl: true),
        Check(host: "192.168.0.1", list: "192.168.0.0/32", curl: false),
        Check(host: "192.168.0.1", list: "192.168.0.0", curl: false),
        Check(host: "192.168.1.1", list: "192.168.0.0/24", curl: false),
        Check(host: "192.168.1.1", list: "foo, bar, 192.168.0.0/24", curl: false),
        Check(host: "192.168.1.1", list: "foo, bar, 192.168.0.0/16", curl: true),
        Check(host: "[::1]", list: "foo, bar, 192.168.0.0/16", curl: false),
        Check(host: "[::1]", list: "foo, bar, ::1/64", curl: true),
        Check(host: "bar", list: "foo, bar, ::1/64", curl: true),
        Check(host: "BAr", list: "foo, bar, ::1/64", curl: true),
        Check(host: "BAr", list: "foo,,,,,              bar, ::1/64", curl: true),
        Check(host: "www.example.com", list: "foo, .example.com", curl: true),
        Check(host: "www.example.com", list: "www2.example.com, .example.net", curl: false),
        Check(host: "example.com", list: ".example.com, .example.net", curl: true),
        Check(host: "nonexample.com", list: ".example.com, .example.net", curl: false),
    ]

    @Test(arguments: Self.noProxy)
    func checkNoProxy(_ check: Check) throws {
        let list = try ProxyConfiguration.BypassList(check.list)
        #expect(list.contains(host: check.host, port: 80) == (check.courier ?? check.curl), "curl: \(check.curl)")
    }

    @Test func theTableIsWhole() {
        #expect(Self.noProxy.count == 38)
        #expect(Self.cidr4.count + Self.cidr6.count == 17)
    }

    /// `Curl_cidr4_match(address, network, bits)` and `Curl_cidr6_match`: bits 0 is the whole
    /// address (an entry without a prefix length); nil is a prefix length past the address's bits.
    static let cidr4: [(address: String, network: String, bits: Int, curl: Bool)] = [
        ("192.160.0.1", "192.160.0.1", 33, false),
        ("192.160.0.1", "192.160.0.1", 32, true),
        ("192.160.0.1", "192.160.0.1", 0, true),
        ("192.160.0.1", "192.160.0.1", 24, true),
        ("192.160.0.1", "192.160.0.1", 26, true),
        ("192.160.0.1", "192.160.0.1", 20, true),
        ("192.160.0.1", "192.160.0.1", 18, true),
        ("192.160.0.1", "192.160.0.1", 12, true),
        ("192.160.0.1", "192.160.0.1", 8, true),
        ("192.160.0.1", "10.0.0.1", 8, false),
        ("192.160.0.1", "10.0.0.1", 32, false),
        ("192.160.0.1", "10.0.0.1", 0, false),
    ]
    static let cidr6: [(address: String, network: String, bits: Int, curl: Bool)] = [
        ("::1", "::1", 0, true),
        ("::1", "::1", 128, true),
        ("::1", "0:0::1", 128, true),
        ("::1", "0:0::1", 129, false),
        ("fe80::ab47:4396:55c9:8474", "fe80::ab47:4396:55c9:8474", 64, true),
    ]

    @Test func cidrMatch() throws {
        for row in Self.cidr4 + Self.cidr6 {
            let entry = row.bits == 0 ? row.network : "\(row.network)/\(row.bits)"
            let maximum = row.network.contains(":") ? 128 : 32
            guard row.bits <= maximum else {
                // curl: no match. Courier: the list does not read.
                #expect(throws: CourierError.self, "\(entry)") { try ProxyConfiguration.BypassList(entry) }
                #expect(!row.curl)
                continue
            }
            let list = try ProxyConfiguration.BypassList(entry)
            #expect(list.contains(host: row.address, port: 443) == row.curl, "\(row.address) in \(entry)")
        }
    }
}
