import Foundation
import Testing

@testable import Courier

/// Go's tests of two cookie rules (go1.19, `net/http/cookiejar/jar_test.go`, BSD-style licence):
/// the default path (`defaultPathTests`) and the domain and host-only flag a `Domain` attribute
/// gives (`domainAndTypeTests`), run through ``Cookie/init(setCookie:for:now:publicSuffixes:)``
/// with Go's test suffixes (`co.uk`, and otherwise the last label).
@Suite("Go's cookie rule tests")
struct GoCookieRulesTests {
    static let suffixes = PublicSuffixList(rules: "co.uk\n")

    /// Go's `defaultPathTests` whose input is a URL path (Go's two others, `""` and `strange`, are
    /// not paths a URL has).
    @Test(arguments: [
        ("/", "/"), ("/abc", "/"), ("/abc/", "/abc"), ("/abc/xyz", "/abc"), ("/abc/xyz/", "/abc/xyz"),
        ("/a/b/c.html", "/a/b"), ("//", "/"), ("/a//b", "/a/"), ("/a/./b", "/a/."), ("/a/../b", "/a/.."),
    ])
    func theDefaultPath(_ path: String, _ want: String) throws {
        let url = try #require(URL(string: "http://www.example.com" + path))
        let cookie = try #require(Cookie(setCookie: "a=1", for: url, publicSuffixes: Self.suffixes))
        #expect(cookie.path == want, "\(path)")
    }

    /// One of Go's `domainAndTypeTests`: a cookie with `Domain=domain` (none when empty) from
    /// `host`; nil `wantDomain` when the cookie is refused.
    struct DomainCase: Sendable, CustomTestStringConvertible {
        let host: String
        let domain: String
        let wantDomain: String?
        let wantHostOnly: Bool
        var testDescription: String { "\(self.host) Domain=\(self.domain)" }
    }

    /// Go's table. Where Courier answers differently (RFC 6265's rules, noted), the row says what
    /// Courier gives, and Go's answer is in the comment.
    static let domainCases: [DomainCase] = [
        DomainCase(host: "www.example.com", domain: "", wantDomain: "www.example.com", wantHostOnly: true),
        DomainCase(host: "127.0.0.1", domain: "", wantDomain: "127.0.0.1", wantHostOnly: true),
        DomainCase(host: "2001:4860:0:2001::68", domain: "", wantDomain: "2001:4860:0:2001::68", wantHostOnly: true),
        DomainCase(host: "www.example.com", domain: "example.com", wantDomain: "example.com", wantHostOnly: false),
        DomainCase(host: "www.example.com", domain: ".example.com", wantDomain: "example.com", wantHostOnly: false),
        DomainCase(host: "www.example.com", domain: "www.example.com", wantDomain: "www.example.com", wantHostOnly: false),
        DomainCase(host: "www.example.com", domain: ".www.example.com", wantDomain: "www.example.com", wantHostOnly: false),
        DomainCase(host: "foo.sso.example.com", domain: "sso.example.com", wantDomain: "sso.example.com", wantHostOnly: false),
        DomainCase(host: "bar.co.uk", domain: "bar.co.uk", wantDomain: "bar.co.uk", wantHostOnly: false),
        DomainCase(host: "foo.bar.co.uk", domain: ".bar.co.uk", wantDomain: "bar.co.uk", wantHostOnly: false),
        DomainCase(host: "127.0.0.1", domain: "127.0.0.1", wantDomain: "127.0.0.1", wantHostOnly: true),
        DomainCase(host: "2001:4860:0:2001::68", domain: "2001:4860:0:2001::68", wantDomain: "2001:4860:0:2001::68", wantHostOnly: true),
        // Go refuses `Domain=.` as malformed; RFC 6265 5.2.3 leaves an empty domain, which 5.3
        // step 6 makes a host-only cookie.
        DomainCase(host: "www.example.com", domain: ".", wantDomain: "www.example.com", wantHostOnly: true),
        DomainCase(host: "www.example.com", domain: "..", wantDomain: nil, wantHostOnly: false),
        DomainCase(host: "www.example.com", domain: "other.com", wantDomain: nil, wantHostOnly: false),
        DomainCase(host: "www.example.com", domain: "com", wantDomain: nil, wantHostOnly: false),
        DomainCase(host: "www.example.com", domain: ".com", wantDomain: nil, wantHostOnly: false),
        DomainCase(host: "foo.bar.co.uk", domain: ".co.uk", wantDomain: nil, wantHostOnly: false),
        DomainCase(host: "127.www.0.0.1", domain: "127.0.0.1", wantDomain: nil, wantHostOnly: false),
        DomainCase(host: "com", domain: "", wantDomain: "com", wantHostOnly: true),
        DomainCase(host: "com", domain: "com", wantDomain: "com", wantHostOnly: true),
        DomainCase(host: "com", domain: ".com", wantDomain: "com", wantHostOnly: true),
        DomainCase(host: "co.uk", domain: "", wantDomain: "co.uk", wantHostOnly: true),
        DomainCase(host: "co.uk", domain: "co.uk", wantDomain: "co.uk", wantHostOnly: true),
        DomainCase(host: "co.uk", domain: ".co.uk", wantDomain: "co.uk", wantHostOnly: true),
    ]

    @Test(arguments: Self.domainCases)
    func theDomainAndHostOnlyFlag(_ test: DomainCase) throws {
        let host = test.host.contains(":") ? "[\(test.host)]" : test.host
        let url = try #require(URL(string: "http://\(host)/"))
        let field = test.domain.isEmpty ? "a=1" : "a=1; Domain=\(test.domain)"
        let cookie = Cookie(setCookie: field, for: url, publicSuffixes: Self.suffixes)
        #expect(cookie?.domain == test.wantDomain)
        if let cookie { #expect(cookie.isHostOnly == test.wantHostOnly) }
    }
}
