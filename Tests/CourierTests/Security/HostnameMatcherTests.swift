@testable import Courier
import Foundation
import NIOSSL
import Testing

@Suite("Host name matching for a pinned leaf that anchors trust")
struct HostnameMatcherTests {
    static let loopback6: [UInt8] = Array(repeating: 0, count: 15) + [1]
    static let names: [HostnameMatcher.Name] = [
        .dns("*.Courier.test"), .dns("localhost"), .ip([127, 0, 0, 1]), .ip(Self.loopback6),
    ]

    @Test(arguments: [
        ("api.courier.test", true), ("API.COURIER.TEST.", true), ("courier.test", false),
        ("a.b.courier.test", false), (".courier.test", false), ("LocalHost", true), ("localhost.", true),
        ("localhost..", false), ("", false), ("127.0.0.1", true), ("127.0.0.2", false), ("127.0.0.1.", true), ("::1", true),
        ("[::1]", true), ("0:0:0:0:0:0:0:1", true), ("::2", false), ("other.test", false),
    ])
    func matches(_ host: String, _ expected: Bool) {
        #expect(HostnameMatcher.matches(host: host, names: Self.names) == expected, "\(host)")
    }

    @Test func wildcardsOnlyAsTheWholeLeftMostLabelOfThreeOrMore() {
        #expect(!HostnameMatcher.matches(host: "api1.courier.test", names: [.dns("api*.courier.test")]))
        #expect(!HostnameMatcher.matches(host: "api.x.test", names: [.dns("api.*.test")]))
        #expect(!HostnameMatcher.matches(host: "courier.test", names: [.dns("*.test")]))
        #expect(!HostnameMatcher.matches(host: "x", names: [.dns("*")]))
        #expect(HostnameMatcher.matches(host: "x.courier.test", names: [.dns("*.courier.test")]))
    }

    /// A presented name that ends in a dot names no host, as in `SecTrust`'s SSL policy (which
    /// ignores a trailing dot on the host only: the name's labels end in an empty one), OpenSSL's
    /// and Go's. It matched as if the dot were not there.
    @Test func aPresentedNameEndingInADotNamesNoHost() {
        #expect(!HostnameMatcher.matches(host: "localhost", names: [.dns("localhost.")]))
        #expect(!HostnameMatcher.matches(host: "localhost.", names: [.dns("localhost.")]))
        #expect(!HostnameMatcher.matches(host: "api.courier.test", names: [.dns("*.courier.test.")]))
        #expect(HostnameMatcher.matches(host: "localhost.", names: [.dns("localhost")]))
    }

    /// Labels compare byte for byte, letters case-insensitively in ASCII only (RFC 6125 6.4.1), and
    /// split at every dot. They compared as Swift strings: lowercased in Unicode (U+212A KELVIN
    /// SIGN became `k`), equal when canonically equivalent (`é` and `e` with U+0301), and split
    /// at a dot only when no combining mark followed it (one label, `evil.\u{301}x`, for a `*`).
    @Test func labelsCompareAsBytesCaseInsensitiveInASCIIOnly() {
        #expect(!HostnameMatcher.matches(host: "\u{212A}.courier.test", names: [.dns("k.courier.test")]))
        #expect(!HostnameMatcher.matches(host: "k.courier.test", names: [.dns("\u{212A}.courier.test")]))
        #expect(!HostnameMatcher.matches(host: "caf\u{E9}.courier.test", names: [.dns("cafe\u{301}.courier.test")]))
        #expect(HostnameMatcher.matches(host: "caf\u{E9}.courier.test", names: [.dns("caf\u{E9}.courier.test")]))
        #expect(HostnameMatcher.matches(host: "CAF\u{E9}.Courier.TEST", names: [.dns("caf\u{E9}.courier.test")]))
        #expect(!HostnameMatcher.matches(host: "evil.\u{301}x.courier.test", names: [.dns("*.courier.test")]))
        #expect(HostnameMatcher.matches(host: "\u{301}x.courier.test", names: [.dns("*.courier.test")]))
    }

    @Test func anIPAddressMatchesOnlyAnIPAddressName() {
        #expect(!HostnameMatcher.matches(host: "127.0.0.1", names: [.dns("*.0.0.1")]))
        #expect(!HostnameMatcher.matches(host: "127.0.0.1.", names: [.dns("*.0.0.1")]))
        #expect(!HostnameMatcher.matches(host: "127.0.0.1", names: [.dns("127.0.0.1")]))
        #expect(!HostnameMatcher.matches(host: "::1", names: [.dns("::1")]))
        #expect(!HostnameMatcher.matches(host: "127.0.0.1", names: [.ip(Self.loopback6)]))
        #expect(!HostnameMatcher.matches(host: "localhost", names: [.ip([127, 0, 0, 1])]))
        #expect(!HostnameMatcher.matches(host: "localhost", names: []))
    }

    /// An IPv6 address with a zone (`https://[fe80::1%25eth0]/` reaches the engine as
    /// `fe80::1%eth0`) is the address: it matches the address's iPAddress name, and no DNS name,
    /// as SNI and ``ServerTrustPolicies`` already treat it (curl matches it so). It was matched
    /// as a DNS name: a certificate for `fe80::1` was refused, one that named the text accepted.
    @Test func anIPv6AddressWithAZoneIsTheAddress() {
        let linkLocal: [UInt8] = [0xFE, 0x80] + Array(repeating: 0, count: 13) + [1]
        #expect(HostnameMatcher.matches(host: "fe80::1%eth0", names: [.ip(linkLocal)]))
        #expect(HostnameMatcher.matches(host: "[fe80::1%eth0]", names: [.ip(linkLocal)]))
        #expect(HostnameMatcher.matches(host: "FE80:0:0:0:0:0:0:1%2", names: [.ip(linkLocal)]))
        #expect(!HostnameMatcher.matches(host: "fe80::2%eth0", names: [.ip(linkLocal)]))
        #expect(!HostnameMatcher.matches(host: "fe80::1%eth0", names: [.dns("fe80::1%eth0")]))
        #expect(!HostnameMatcher.matches(host: "fe80::1%eth0", names: [.dns("*.example.com"), .ip([127, 0, 0, 1])]))
    }

    @Test func namesAreReadFromTheCertificate() async throws {
        let generated = try await GeneratedCertificates.prepared()
        let leaf = try NIOSSLCertificate(bytes: Array(generated.localhostLeaf.utf8), format: .pem)
        #expect(HostnameMatcher.names(of: leaf) == [.dns("localhost"), .ip([127, 0, 0, 1])])
        let ipOnly = try NIOSSLCertificate(bytes: Array(generated.ipOnlyLeaf.utf8), format: .pem)
        #expect(HostnameMatcher.names(of: ipOnly) == [.ip([127, 0, 0, 1])])
    }
}
