import Foundation
import Testing

@testable import Courier

/// One origin rule for the whole library (RFC 6454): before, the cache's copy gave every scheme
/// but `https` port 80 and the redirects' copy knew only `http` and `https`, so they disagreed on
/// `ws`/`wss` URLs with and without their default port.
@Suite("URL origin")
struct URLOriginTests {
    static func url(_ string: String) -> URL { URL(string: string)! }

    @Test(arguments: [
        ("http://example.com/a", "http://example.com:80/b"),
        ("https://Example.COM/", "HTTPS://example.com:443/x?y"),
        ("ws://example.com/", "ws://example.com:80/"),
        ("wss://example.com/chat", "wss://example.com:443/"),
        ("http://127.0.0.1:8080/", "http://127.0.0.1:8080/other"),
    ])
    func sameOrigin(_ a: String, _ b: String) {
        #expect(Self.url(a).isSameOrigin(as: Self.url(b)))
        #expect(Self.url(b).isSameOrigin(as: Self.url(a)))
    }

    @Test(arguments: [
        ("http://example.com/", "https://example.com/"),
        ("http://example.com/", "http://example.com:8080/"),
        ("https://example.com/", "https://example.com:80/"),
        ("wss://example.com/", "wss://example.com:80/"),
        ("http://example.com/", "http://www.example.com/"),
        ("ws://example.com/", "http://example.com/"),
        // U+212A KELVIN SIGN, percent-encoded (Foundation keeps it in the host): Unicode lowering
        // made it `k`, the same origin as `k.test` it is not.
        ("http://k.test/", "http://%E2%84%AA.test/"),
        ("http://K.test/", "http://%E2%84%AA.test/"),
    ])
    func differentOrigin(_ a: String, _ b: String) {
        #expect(!Self.url(a).isSameOrigin(as: Self.url(b)))
        #expect(!Self.url(b).isSameOrigin(as: Self.url(a)))
    }

    @Test func aSchemeWithoutADefaultPortHasAnOriginOfItsOwn() {
        #expect(!Self.url("ftp://example.com/a").isSameOrigin(as: Self.url("ftp://example.com/b")))
        #expect(Self.url("ftp://example.com:21/a").isSameOrigin(as: Self.url("ftp://example.com:21/b")), "a named port is an origin")
        #expect(!Self.url("/relative").isSameOrigin(as: Self.url("/relative")), "no scheme, no host: no origin")
    }
}
