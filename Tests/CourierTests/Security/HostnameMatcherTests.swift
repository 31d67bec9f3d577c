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

    @Test func anIPAddressMatchesOnlyAnIPAddressName() {
        #expect(!HostnameMatcher.matches(host: "127.0.0.1", names: [.dns("*.0.0.1")]))
        #expect(!HostnameMatcher.matches(host: "127.0.0.1.", names: [.dns("*.0.0.1")]))
        #expect(!HostnameMatcher.matches(host: "127.0.0.1", names: [.dns("127.0.0.1")]))
        #expect(!HostnameMatcher.matches(host: "::1", names: [.dns("::1")]))
        #expect(!HostnameMatcher.matches(host: "127.0.0.1", names: [.ip(Self.loopback6)]))
        #expect(!HostnameMatcher.matches(host: "localhost", names: [.ip([127, 0, 0, 1])]))
        #expect(!HostnameMatcher.matches(host: "localhost", names: []))
    }

    @Test func namesAreReadFromTheCertificate() async throws {
        let generated = try await GeneratedCertificates.prepared()
        let leaf = try NIOSSLCertificate(bytes: Array(generated.localhostLeaf.utf8), format: .pem)
        #expect(HostnameMatcher.names(of: leaf) == [.dns("localhost"), .ip([127, 0, 0, 1])])
        let ipOnly = try NIOSSLCertificate(bytes: Array(generated.ipOnlyLeaf.utf8), format: .pem)
        #expect(HostnameMatcher.names(of: ipOnly) == [.ip([127, 0, 0, 1])])
    }
}
