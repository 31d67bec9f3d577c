@testable import Courier
import NIOCore
import Testing

/// ``HostAddressTable`` without I/O: which entry answers a name, and what a bad one says.
@Suite("Engine: the host address table")
struct HostAddressTableTests {
    @Test func anEntryAnswersItsNameInAnyCaseWithItsPortEntryFirst() throws {
        let table = HostAddressTable(["API.example.com.": ["10.0.0.7", "[2001:db8::7]"], "api.example.com:8443": ["127.0.0.1"]])
        let answer = try #require(table.addresses(of: "api.EXAMPLE.com", port: 443)).get()
        #expect(answer == [try SocketAddress(ipAddress: "10.0.0.7", port: 443), try SocketAddress(ipAddress: "2001:db8::7", port: 443)])
        #expect(try #require(table.addresses(of: "api.example.com.", port: 8443)).get() == [try SocketAddress(ipAddress: "127.0.0.1", port: 8443)])
        #expect(table.addresses(of: "example.com", port: 443) == nil, "a name not in the table is looked up as usual")
        #expect(HostAddressTable([:]).addresses(of: "api.example.com", port: 443) == nil)
    }

    /// A Unicode name and its IDNA form are one entry: the engine looks names up in IDNA (a
    /// request's host, a proxy's), and an entry written in Unicode was never found.
    @Test func aUnicodeNameAndItsIDNAFormAreOneEntry() throws {
        let unicode = HostAddressTable(["Bücher.example": ["10.0.0.7"]])
        #expect(try #require(unicode.addresses(of: "xn--bcher-kva.example", port: 80)).get() == [try SocketAddress(ipAddress: "10.0.0.7", port: 80)])
        let ascii = HostAddressTable(["xn--bcher-kva.example:8443": ["10.0.0.8"]])
        #expect(try #require(ascii.addresses(of: "bücher.example.", port: 8443)).get() == [try SocketAddress(ipAddress: "10.0.0.8", port: 8443)])
    }

    @Test func aBadEntryFailsNamingIt() {
        let table = HostAddressTable(["bad": ["10.0.0.1", "ten.zero"], "none": []])
        guard case .failure(let failure) = table.addresses(of: "bad", port: 80) else { Issue.record("an entry that is no address fails"); return }
        #expect(failure.description == "the host name bad could not be resolved (hostAddresses gives it 'ten.zero', which is not an IP address)")
        guard case .failure(let empty) = table.addresses(of: "none", port: 80) else { Issue.record("an empty entry fails"); return }
        #expect(empty.reason == "hostAddresses gives it no address")
    }
}
