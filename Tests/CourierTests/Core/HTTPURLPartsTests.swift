import Foundation
import Testing

@testable import Courier

/// The one-pass reading of a plain URL (``HTTPURLParts``) against Foundation's accessors, which the
/// pool's key and the request target used for every URL before: both ways must agree wherever
/// the one pass answers, and it must decline every URL it cannot read exactly.
@Suite("HTTPURLParts")
struct HTTPURLPartsTests {
    /// Plain URLs, read in one pass: key and target as Foundation reads them.
    @Test(arguments: [
        "http://127.0.0.1:8080/small",
        "https://example.com",
        "https://example.com/",
        "http://example.com?q=1",
        "http://example.com/?q=1",
        "https://api.example.com/v1/items?id=3&sort=name#top",
        "https://api.example.com/v1/items#frag?not-a-query",
        "http://localhost:0/zero",
        "http://localhost:080/leading-zero",
        "http://localhost:65535/highest",
        "http://my_host.internal/a_b",
        "http://a.b-c.d/%E2%82%AC/x%20y?k=%C3%A9",
        "http://h//double//slash",
        "http://h/a/../b/./c",
        "http://h/p?",
        "http://h/p?#f",
        "http://h/p;params?x",
        "https://xn--bcher-kva.example/",
        "http://h:80/explicit-default",
        "https://h:443",
    ])
    func plainURLsAgreeWithFoundation(_ string: String) throws {
        let url = try #require(URL(string: string))
        let origin = try #require(HTTPURLParts.origin(of: url), "\(string) is plain: read in one pass")
        let key = try #require(ConnectionPool.keyReadByFoundation(for: url))
        #expect(ConnectionPool.key(for: url) == key)
        #expect(origin.host == key.host && origin.port == key.port && origin.isHTTPS == key.tls)
        #expect(HTTPURLParts.target(of: url) == HopHandler.targetReadByFoundation(of: url), "\(string)")
    }

    /// URLs the one pass declines: Foundation reads them, as before.
    @Test(arguments: [
        "HTTP://example.com/upper-scheme",
        "http://Example.com/capital-host",
        "http://user:secret@example.com/userinfo",
        "http://[::1]:8080/ipv6",
        "http://ex%61mple.com/percent-host",
        "http://example.com:/empty-port",
        "http://example.com:123456/long-port",
        "http://example.com:99999/port-too-high",
        "ftp://example.com/other-scheme",
        "ws://example.com/websocket",
        "http:/no-authority",
        "https://",
        "httpx://example.com/",
        "https:/example.com/one-slash",
    ])
    func otherURLsAreLeftToFoundation(_ string: String) throws {
        let url = try #require(URL(string: string))
        #expect(HTTPURLParts.origin(of: url) == nil && HTTPURLParts.target(of: url) == nil, "\(string)")
        #expect(ConnectionPool.key(for: url) == ConnectionPool.keyReadByFoundation(for: url))
    }

    /// A URL relative to a base is left to Foundation, which resolves it against the base.
    @Test func relativeURLsAreLeftToFoundation() throws {
        let base = try #require(URL(string: "http://example.com/api/"))
        let url = try #require(URL(string: "items?id=1", relativeTo: base))
        #expect(HTTPURLParts.origin(of: url) == nil && HTTPURLParts.target(of: url) == nil)
        #expect(ConnectionPool.key(for: url) == ConnectionPool.keyReadByFoundation(for: url))
        #expect(HopHandler.target(of: Request(url: url)) == "/api/items?id=1")
    }

    /// A URL made from a string with non-ASCII characters (Foundation percent-encodes them, or
    /// keeps them and the one pass declines): the target reads the same either way.
    @Test func nonASCIIPathsReadTheSame() throws {
        let url = try #require(URL(string: "http://example.com/caf\u{E9}?q=\u{E9}t\u{E9}"))
        #expect(HopHandler.target(of: Request(url: url)) == HopHandler.targetReadByFoundation(of: url))
        if url.relativeString.utf8.contains(where: { $0 >= 0x80 }) {
            #expect(HTTPURLParts.target(of: url) == nil)
        }
    }

    /// A host that percent-decodes to a line break, a space or a delimiter names no host: no key,
    /// so no connection, no `Host` field and no proxy `CONNECT` line is made of it (such a host
    /// once ended the `CONNECT` line and let a server's redirect write requests to the proxy).
    @Test(arguments: [
        "https://x%20HTTP%2F1.1%0D%0A%0D%0AGET%20http%3A%2F%2Finternal%2F%20HTTP%2F1.1%0D%0AX%3A%20y/",
        "http://a%0Ab/",
        "http://a%0Db/",
        "http://a%00b/",
        "http://a%09b/",
        "http://a%7Fb/",
        "http://a%20b/",
        "http://a%2Fb/",
        "http://a%3Ab/",
        "http://a%40b/",
        "http://a%25b/",
        "http://a%5Bb%5D/",
        "http://a%3Fb/",
        "http://a%23b/",
    ])
    func aHostThatDecodesToWhatNoHostHoldsHasNoKey(_ string: String) throws {
        let url = try #require(URL(string: string))
        #expect(url.requestHost == nil, "\(String(reflecting: url.host))")
        #expect(url.hasUnacceptableHost)
        #expect(ConnectionPool.key(for: url) == nil)
    }

    /// Percent-encoded hosts that decode to a host still reach it: letters (IDNA for Unicode ones)
    /// and an IPv6 literal's zone.
    @Test(arguments: [
        ("http://ex%61mple.com/", "example.com"),
        ("http://b%C3%BCcher.example/", "xn--bcher-kva.example"),
        ("http://a%2Db_c.example/", "a-b_c.example"),
        ("http://[fe80::1%25eth0]/", "fe80::1%eth0"),
        ("http://[::1]/", "::1"),
    ])
    func aPercentEncodedHostThatDecodesToAHostIsKept(_ string: String, _ host: String) throws {
        let url = try #require(URL(string: string))
        #expect(url.requestHost == host)
        #expect(!url.hasUnacceptableHost)
        #expect(ConnectionPool.key(for: url)?.host == host)
    }
}
