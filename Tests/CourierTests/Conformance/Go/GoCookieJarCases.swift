import Testing

// The cases of Go's cookie jar tests (go1.19, `net/http/cookiejar/jar_test.go`: basicsTests,
// updateAndDeleteTests, TestExpiration, chromiumBasicsTests, chromiumDomainTests,
// chromiumDeletionTests and domainHandlingTests; the chromium ones derived by Go's authors from
// Chromium's cookie_store_unittest.h). Go's licence is BSD-style; the table is transcribed as data
// (Go's `expiresIn(n)` written out as the `expires=` attribute it makes, n seconds from the tests'
// `now`, 2013-01-01 12:00:00 UTC). GoCookieJarTests.swift runs them.

/// One of Go's `jarTest`s: `setting` arrives from `fromURL` at the tests' `now`; one second later
/// the jar holds `content` (its unexpired cookies as `name=value`, sorted, joined by spaces); each
/// query a second after the one before asks for the cookies of its URL (in the order they are
/// sent, joined by spaces).
struct GoJarCase: Sendable, CustomTestStringConvertible {
    let description: String
    let fromURL: String
    let setCookies: [String]
    let content: String
    let queries: [(url: String, want: String)]

    init(_ description: String, from fromURL: String, setting setCookies: [String], content: String, queries: [(String, String)]) {
        self.description = description
        self.fromURL = fromURL
        self.setCookies = setCookies
        self.content = content
        self.queries = queries.map { (url: $0.0, want: $0.1) }
    }

    var testDescription: String { self.description }
}

enum GoJarCases {
    static let basics: [GoJarCase] = [
        GoJarCase("Retrieval of a plain host cookie.", from: "http://www.host.test/", setting: ["A=a"], content: "A=a", queries: [("http://www.host.test", "A=a"), ("http://www.host.test/", "A=a"), ("http://www.host.test/some/path", "A=a"), ("https://www.host.test", "A=a"), ("https://www.host.test/", "A=a"), ("https://www.host.test/some/path", "A=a"), ("ftp://www.host.test", ""), ("ftp://www.host.test/", ""), ("ftp://www.host.test/some/path", ""), ("http://www.other.org", ""), ("http://sibling.host.test", ""), ("http://deep.www.host.test", "")]),
        GoJarCase("Secure cookies are not returned to http.", from: "http://www.host.test/", setting: ["A=a; secure"], content: "A=a", queries: [("http://www.host.test", ""), ("http://www.host.test/", ""), ("http://www.host.test/some/path", ""), ("https://www.host.test", "A=a"), ("https://www.host.test/", "A=a"), ("https://www.host.test/some/path", "A=a")]),
        GoJarCase("Explicit path.", from: "http://www.host.test/", setting: ["A=a; path=/some/path"], content: "A=a", queries: [("http://www.host.test", ""), ("http://www.host.test/", ""), ("http://www.host.test/some", ""), ("http://www.host.test/some/", ""), ("http://www.host.test/some/path", "A=a"), ("http://www.host.test/some/paths", ""), ("http://www.host.test/some/path/foo", "A=a"), ("http://www.host.test/some/path/foo/", "A=a")]),
        GoJarCase("Implicit path #1: path is a directory.", from: "http://www.host.test/some/path/", setting: ["A=a"], content: "A=a", queries: [("http://www.host.test", ""), ("http://www.host.test/", ""), ("http://www.host.test/some", ""), ("http://www.host.test/some/", ""), ("http://www.host.test/some/path", "A=a"), ("http://www.host.test/some/paths", ""), ("http://www.host.test/some/path/foo", "A=a"), ("http://www.host.test/some/path/foo/", "A=a")]),
        GoJarCase("Implicit path #2: path is not a directory.", from: "http://www.host.test/some/path/index.html", setting: ["A=a"], content: "A=a", queries: [("http://www.host.test", ""), ("http://www.host.test/", ""), ("http://www.host.test/some", ""), ("http://www.host.test/some/", ""), ("http://www.host.test/some/path", "A=a"), ("http://www.host.test/some/paths", ""), ("http://www.host.test/some/path/foo", "A=a"), ("http://www.host.test/some/path/foo/", "A=a")]),
        GoJarCase("Implicit path #3: no path in URL at all.", from: "http://www.host.test", setting: ["A=a"], content: "A=a", queries: [("http://www.host.test", "A=a"), ("http://www.host.test/", "A=a"), ("http://www.host.test/some/path", "A=a")]),
        GoJarCase("Cookies are sorted by path length.", from: "http://www.host.test/", setting: ["A=a; path=/foo/bar", "B=b; path=/foo/bar/baz/qux", "C=c; path=/foo/bar/baz", "D=d; path=/foo"], content: "A=a B=b C=c D=d", queries: [("http://www.host.test/foo/bar/baz/qux", "B=b C=c A=a D=d"), ("http://www.host.test/foo/bar/baz/", "C=c A=a D=d"), ("http://www.host.test/foo/bar", "A=a D=d")]),
        GoJarCase("Creation time determines sorting on same length paths.", from: "http://www.host.test/", setting: ["A=a; path=/foo/bar", "X=x; path=/foo/bar", "Y=y; path=/foo/bar/baz/qux", "B=b; path=/foo/bar/baz/qux", "C=c; path=/foo/bar/baz", "W=w; path=/foo/bar/baz", "Z=z; path=/foo", "D=d; path=/foo"], content: "A=a B=b C=c D=d W=w X=x Y=y Z=z", queries: [("http://www.host.test/foo/bar/baz/qux", "Y=y B=b C=c W=w A=a X=x Z=z D=d"), ("http://www.host.test/foo/bar/baz/", "C=c W=w A=a X=x Z=z D=d"), ("http://www.host.test/foo/bar", "A=a X=x Z=z D=d")]),
        GoJarCase("Sorting of same-name cookies.", from: "http://www.host.test/", setting: ["A=1; path=/", "A=2; path=/path", "A=3; path=/quux", "A=4; path=/path/foo", "A=5; domain=.host.test; path=/path", "A=6; domain=.host.test; path=/quux", "A=7; domain=.host.test; path=/path/foo"], content: "A=1 A=2 A=3 A=4 A=5 A=6 A=7", queries: [("http://www.host.test/path", "A=2 A=5 A=1"), ("http://www.host.test/path/foo", "A=4 A=7 A=2 A=5 A=1")]),
        GoJarCase("Disallow domain cookie on public suffix.", from: "http://www.bbc.co.uk", setting: ["a=1", "b=2; domain=co.uk"], content: "a=1", queries: [("http://www.bbc.co.uk", "a=1")]),
        GoJarCase("Host cookie on IP.", from: "http://192.168.0.10", setting: ["a=1"], content: "a=1", queries: [("http://192.168.0.10", "a=1")]),
        GoJarCase("Domain cookies on IP.", from: "http://192.168.0.10", setting: ["a=1; domain=192.168.0.10", "b=2; domain=172.31.9.9", "c=3; domain=.192.168.0.10"], content: "a=1", queries: [("http://192.168.0.10", "a=1"), ("http://172.31.9.9", ""), ("http://www.fancy.192.168.0.10", "")]),
        GoJarCase("Port is ignored #1.", from: "http://www.host.test/", setting: ["a=1"], content: "a=1", queries: [("http://www.host.test", "a=1"), ("http://www.host.test:8080/", "a=1")]),
        GoJarCase("Port is ignored #2.", from: "http://www.host.test:8080/", setting: ["a=1"], content: "a=1", queries: [("http://www.host.test", "a=1"), ("http://www.host.test:8080/", "a=1"), ("http://www.host.test:1234/", "a=1")]),
    ]
    static let updateAndDelete: [GoJarCase] = [
        GoJarCase("Set initial cookies.", from: "http://www.host.test", setting: ["a=1", "b=2; secure", "c=3; httponly", "d=4; secure; httponly"], content: "a=1 b=2 c=3 d=4", queries: [("http://www.host.test", "a=1 c=3"), ("https://www.host.test", "a=1 b=2 c=3 d=4")]),
        GoJarCase("Update value via http.", from: "http://www.host.test", setting: ["a=w", "b=x; secure", "c=y; httponly", "d=z; secure; httponly"], content: "a=w b=x c=y d=z", queries: [("http://www.host.test", "a=w c=y"), ("https://www.host.test", "a=w b=x c=y d=z")]),
        GoJarCase("Clear Secure flag from a http.", from: "http://www.host.test/", setting: ["b=xx", "d=zz; httponly"], content: "a=w b=xx c=y d=zz", queries: [("http://www.host.test", "a=w b=xx c=y d=zz")]),
        GoJarCase("Delete all.", from: "http://www.host.test/", setting: ["a=1; max-Age=-1", "b=2; expires=Tue, 01 Jan 2013 11:59:50 UTC", "c=2; max-age=-1; expires=Tue, 01 Jan 2013 11:59:50 UTC", "d=4; max-age=-1; expires=Tue, 01 Jan 2013 12:00:10 UTC"], content: "", queries: [("http://www.host.test", "")]),
        GoJarCase("Refill #1.", from: "http://www.host.test", setting: ["A=1", "A=2; path=/foo", "A=3; domain=.host.test", "A=4; path=/foo; domain=.host.test"], content: "A=1 A=2 A=3 A=4", queries: [("http://www.host.test/foo", "A=2 A=4 A=1 A=3")]),
        GoJarCase("Refill #2.", from: "http://www.google.com", setting: ["A=6", "A=7; path=/foo", "A=8; domain=.google.com", "A=9; path=/foo; domain=.google.com"], content: "A=1 A=2 A=3 A=4 A=6 A=7 A=8 A=9", queries: [("http://www.host.test/foo", "A=2 A=4 A=1 A=3"), ("http://www.google.com/foo", "A=7 A=9 A=6 A=8")]),
        GoJarCase("Delete A7.", from: "http://www.google.com", setting: ["A=; path=/foo; max-age=-1"], content: "A=1 A=2 A=3 A=4 A=6 A=8 A=9", queries: [("http://www.host.test/foo", "A=2 A=4 A=1 A=3"), ("http://www.google.com/foo", "A=9 A=6 A=8")]),
        GoJarCase("Delete A4.", from: "http://www.host.test", setting: ["A=; path=/foo; domain=host.test; max-age=-1"], content: "A=1 A=2 A=3 A=6 A=8 A=9", queries: [("http://www.host.test/foo", "A=2 A=1 A=3"), ("http://www.google.com/foo", "A=9 A=6 A=8")]),
        GoJarCase("Delete A6.", from: "http://www.google.com", setting: ["A=; max-age=-1"], content: "A=1 A=2 A=3 A=8 A=9", queries: [("http://www.host.test/foo", "A=2 A=1 A=3"), ("http://www.google.com/foo", "A=9 A=8")]),
        GoJarCase("Delete A3.", from: "http://www.host.test", setting: ["A=; domain=host.test; max-age=-1"], content: "A=1 A=2 A=8 A=9", queries: [("http://www.host.test/foo", "A=2 A=1"), ("http://www.google.com/foo", "A=9 A=8")]),
        GoJarCase("No cross-domain delete.", from: "http://www.host.test", setting: ["A=; domain=google.com; max-age=-1", "A=; path=/foo; domain=google.com; max-age=-1"], content: "A=1 A=2 A=8 A=9", queries: [("http://www.host.test/foo", "A=2 A=1"), ("http://www.google.com/foo", "A=9 A=8")]),
        GoJarCase("Delete A8 and A9.", from: "http://www.google.com", setting: ["A=; domain=google.com; max-age=-1", "A=; path=/foo; domain=google.com; max-age=-1"], content: "A=1 A=2", queries: [("http://www.host.test/foo", "A=2 A=1"), ("http://www.google.com/foo", "")]),
    ]
    static let expiration: [GoJarCase] = [
        GoJarCase("Expiration.", from: "http://www.host.test", setting: ["a=1", "b=2; max-age=3", "c=3; expires=Tue, 01 Jan 2013 12:00:03 UTC", "d=4; max-age=5", "e=5; expires=Tue, 01 Jan 2013 12:00:05 UTC", "f=6; max-age=100"], content: "a=1 b=2 c=3 d=4 e=5 f=6", queries: [("http://www.host.test", "a=1 b=2 c=3 d=4 e=5 f=6"), ("http://www.host.test", "a=1 d=4 e=5 f=6"), ("http://www.host.test", "a=1 d=4 e=5 f=6"), ("http://www.host.test", "a=1 f=6"), ("http://www.host.test", "a=1 f=6")]),
    ]
    static let chromiumBasics: [GoJarCase] = [
        GoJarCase("DomainWithTrailingDotTest.", from: "http://www.google.com/", setting: ["a=1; domain=.www.google.com.", "b=2; domain=.www.google.com.."], content: "", queries: [("http://www.google.com", "")]),
        GoJarCase("ValidSubdomainTest #1.", from: "http://a.b.c.d.com", setting: ["a=1; domain=.a.b.c.d.com", "b=2; domain=.b.c.d.com", "c=3; domain=.c.d.com", "d=4; domain=.d.com"], content: "a=1 b=2 c=3 d=4", queries: [("http://a.b.c.d.com", "a=1 b=2 c=3 d=4"), ("http://b.c.d.com", "b=2 c=3 d=4"), ("http://c.d.com", "c=3 d=4"), ("http://d.com", "d=4")]),
        GoJarCase("ValidSubdomainTest #2.", from: "http://a.b.c.d.com", setting: ["a=1; domain=.a.b.c.d.com", "b=2; domain=.b.c.d.com", "c=3; domain=.c.d.com", "d=4; domain=.d.com", "X=bcd; domain=.b.c.d.com", "X=cd; domain=.c.d.com"], content: "X=bcd X=cd a=1 b=2 c=3 d=4", queries: [("http://b.c.d.com", "b=2 c=3 d=4 X=bcd X=cd"), ("http://c.d.com", "c=3 d=4 X=cd")]),
        GoJarCase("InvalidDomainTest #1.", from: "http://foo.bar.com", setting: ["a=1; domain=.yo.foo.bar.com", "b=2; domain=.foo.com", "c=3; domain=.bar.foo.com", "d=4; domain=.foo.bar.com.net", "e=5; domain=ar.com", "f=6; domain=.", "g=7; domain=/", "h=8; domain=http://foo.bar.com", "i=9; domain=..foo.bar.com", "j=10; domain=..bar.com", "k=11; domain=.foo.bar.com?blah", "l=12; domain=.foo.bar.com/blah", "m=12; domain=.foo.bar.com:80", "n=14; domain=.foo.bar.com:", "o=15; domain=.foo.bar.com#sup"], content: "", queries: [("http://foo.bar.com", "")]),
        GoJarCase("InvalidDomainTest #2.", from: "http://foo.com.com", setting: ["a=1; domain=.foo.com.com.com"], content: "", queries: [("http://foo.bar.com", "")]),
        GoJarCase("DomainWithoutLeadingDotTest #1.", from: "http://manage.hosted.filefront.com", setting: ["a=1; domain=filefront.com"], content: "a=1", queries: [("http://www.filefront.com", "a=1")]),
        GoJarCase("DomainWithoutLeadingDotTest #2.", from: "http://www.google.com", setting: ["a=1; domain=www.google.com"], content: "a=1", queries: [("http://www.google.com", "a=1"), ("http://sub.www.google.com", "a=1"), ("http://something-else.com", "")]),
        GoJarCase("CaseInsensitiveDomainTest.", from: "http://www.google.com", setting: ["a=1; domain=.GOOGLE.COM", "b=2; domain=.www.gOOgLE.coM"], content: "a=1 b=2", queries: [("http://www.google.com", "a=1 b=2")]),
        GoJarCase("TestIpAddress #1.", from: "http://1.2.3.4/foo", setting: ["a=1; path=/"], content: "a=1", queries: [("http://1.2.3.4/foo", "a=1")]),
        GoJarCase("TestIpAddress #2.", from: "http://1.2.3.4/foo", setting: ["a=1; domain=.1.2.3.4", "b=2; domain=.3.4"], content: "", queries: [("http://1.2.3.4/foo", "")]),
        GoJarCase("TestIpAddress #3.", from: "http://1.2.3.4/foo", setting: ["a=1; domain=1.2.3.3"], content: "", queries: [("http://1.2.3.4/foo", "")]),
        GoJarCase("TestIpAddress #4.", from: "http://1.2.3.4/foo", setting: ["a=1; domain=1.2.3.4"], content: "a=1", queries: [("http://1.2.3.4/foo", "a=1")]),
        GoJarCase("TestNonDottedAndTLD #2.", from: "http://com./index.html", setting: ["a=1"], content: "a=1", queries: [("http://com./index.html", "a=1"), ("http://no-cookies.com./index.html", "")]),
        GoJarCase("TestNonDottedAndTLD #3.", from: "http://a.b", setting: ["a=1; domain=.b", "b=2; domain=b"], content: "", queries: [("http://bar.foo", "")]),
        GoJarCase("TestNonDottedAndTLD #4.", from: "http://google.com", setting: ["a=1; domain=.com", "b=2; domain=com"], content: "", queries: [("http://google.com", "")]),
        GoJarCase("TestNonDottedAndTLD #5.", from: "http://google.co.uk", setting: ["a=1; domain=.co.uk", "b=2; domain=.uk"], content: "", queries: [("http://google.co.uk", ""), ("http://else.co.com", ""), ("http://else.uk", "")]),
        GoJarCase("TestHostEndsWithDot.", from: "http://www.google.com", setting: ["a=1", "b=2; domain=.www.google.com."], content: "a=1", queries: [("http://www.google.com", "a=1")]),
        GoJarCase("PathTest", from: "http://www.google.izzle", setting: ["a=1; path=/wee"], content: "a=1", queries: [("http://www.google.izzle/wee", "a=1"), ("http://www.google.izzle/wee/", "a=1"), ("http://www.google.izzle/wee/war", "a=1"), ("http://www.google.izzle/wee/war/more/more", "a=1"), ("http://www.google.izzle/weehee", ""), ("http://www.google.izzle/", "")]),
    ]
    static let chromiumDomain: [GoJarCase] = [
        GoJarCase("Fill #1.", from: "http://www.google.izzle", setting: ["A=B"], content: "A=B", queries: [("http://www.google.izzle", "A=B")]),
        GoJarCase("Fill #2.", from: "http://www.google.izzle", setting: ["C=D; domain=.google.izzle"], content: "A=B C=D", queries: [("http://www.google.izzle", "A=B C=D")]),
        GoJarCase("Verify A is a host cookie and not accessible from subdomain.", from: "http://unused.nil", setting: [], content: "A=B C=D", queries: [("http://foo.www.google.izzle", "C=D")]),
        GoJarCase("Verify domain cookies are found on proper domain.", from: "http://www.google.izzle", setting: ["E=F; domain=.www.google.izzle"], content: "A=B C=D E=F", queries: [("http://www.google.izzle", "A=B C=D E=F")]),
        GoJarCase("Leading dots in domain attributes are optional.", from: "http://www.google.izzle", setting: ["G=H; domain=www.google.izzle"], content: "A=B C=D E=F G=H", queries: [("http://www.google.izzle", "A=B C=D E=F G=H")]),
        GoJarCase("Verify domain enforcement works #1.", from: "http://www.google.izzle", setting: ["K=L; domain=.bar.www.google.izzle"], content: "A=B C=D E=F G=H", queries: [("http://bar.www.google.izzle", "C=D E=F G=H")]),
        GoJarCase("Verify domain enforcement works #2.", from: "http://unused.nil", setting: [], content: "A=B C=D E=F G=H", queries: [("http://www.google.izzle", "A=B C=D E=F G=H")]),
    ]
    static let chromiumDeletion: [GoJarCase] = [
        GoJarCase("Create session cookie a1.", from: "http://www.google.com", setting: ["a=1"], content: "a=1", queries: [("http://www.google.com", "a=1")]),
        GoJarCase("Delete sc a1 via MaxAge.", from: "http://www.google.com", setting: ["a=1; max-age=-1"], content: "", queries: [("http://www.google.com", "")]),
        GoJarCase("Create session cookie b2.", from: "http://www.google.com", setting: ["b=2"], content: "b=2", queries: [("http://www.google.com", "b=2")]),
        GoJarCase("Delete sc b2 via Expires.", from: "http://www.google.com", setting: ["b=2; expires=Tue, 01 Jan 2013 11:59:50 UTC"], content: "", queries: [("http://www.google.com", "")]),
        GoJarCase("Create persistent cookie c3.", from: "http://www.google.com", setting: ["c=3; max-age=3600"], content: "c=3", queries: [("http://www.google.com", "c=3")]),
        GoJarCase("Delete pc c3 via MaxAge.", from: "http://www.google.com", setting: ["c=3; max-age=-1"], content: "", queries: [("http://www.google.com", "")]),
        GoJarCase("Create persistent cookie d4.", from: "http://www.google.com", setting: ["d=4; max-age=3600"], content: "d=4", queries: [("http://www.google.com", "d=4")]),
        GoJarCase("Delete pc d4 via Expires.", from: "http://www.google.com", setting: ["d=4; expires=Tue, 01 Jan 2013 11:59:50 UTC"], content: "", queries: [("http://www.google.com", "")]),
    ]
    static let domainHandling: [GoJarCase] = [
        GoJarCase("Host cookie", from: "http://www.host.test", setting: ["a=1"], content: "a=1", queries: [("http://www.host.test", "a=1"), ("http://host.test", ""), ("http://bar.host.test", ""), ("http://foo.www.host.test", ""), ("http://other.test", ""), ("http://test", "")]),
        GoJarCase("Domain cookie #1", from: "http://www.host.test", setting: ["a=1; domain=host.test"], content: "a=1", queries: [("http://www.host.test", "a=1"), ("http://host.test", "a=1"), ("http://bar.host.test", "a=1"), ("http://foo.www.host.test", "a=1"), ("http://other.test", ""), ("http://test", "")]),
        GoJarCase("Domain cookie #2", from: "http://www.host.test", setting: ["a=1; domain=.host.test"], content: "a=1", queries: [("http://www.host.test", "a=1"), ("http://host.test", "a=1"), ("http://bar.host.test", "a=1"), ("http://foo.www.host.test", "a=1"), ("http://other.test", ""), ("http://test", "")]),
        GoJarCase("Host cookie on IDNA domain #1", from: "http://www.bücher.test", setting: ["a=1"], content: "a=1", queries: [("http://www.bücher.test", "a=1"), ("http://www.xn--bcher-kva.test", "a=1"), ("http://bücher.test", ""), ("http://xn--bcher-kva.test", ""), ("http://bar.bücher.test", ""), ("http://bar.xn--bcher-kva.test", ""), ("http://foo.www.bücher.test", ""), ("http://foo.www.xn--bcher-kva.test", ""), ("http://other.test", ""), ("http://test", "")]),
        GoJarCase("Host cookie on IDNA domain #2", from: "http://www.xn--bcher-kva.test", setting: ["a=1"], content: "a=1", queries: [("http://www.bücher.test", "a=1"), ("http://www.xn--bcher-kva.test", "a=1"), ("http://bücher.test", ""), ("http://xn--bcher-kva.test", ""), ("http://bar.bücher.test", ""), ("http://bar.xn--bcher-kva.test", ""), ("http://foo.www.bücher.test", ""), ("http://foo.www.xn--bcher-kva.test", ""), ("http://other.test", ""), ("http://test", "")]),
        GoJarCase("Domain cookie on IDNA domain #1", from: "http://www.bücher.test", setting: ["a=1; domain=xn--bcher-kva.test"], content: "a=1", queries: [("http://www.bücher.test", "a=1"), ("http://www.xn--bcher-kva.test", "a=1"), ("http://bücher.test", "a=1"), ("http://xn--bcher-kva.test", "a=1"), ("http://bar.bücher.test", "a=1"), ("http://bar.xn--bcher-kva.test", "a=1"), ("http://foo.www.bücher.test", "a=1"), ("http://foo.www.xn--bcher-kva.test", "a=1"), ("http://other.test", ""), ("http://test", "")]),
        GoJarCase("Domain cookie on IDNA domain #2", from: "http://www.xn--bcher-kva.test", setting: ["a=1; domain=xn--bcher-kva.test"], content: "a=1", queries: [("http://www.bücher.test", "a=1"), ("http://www.xn--bcher-kva.test", "a=1"), ("http://bücher.test", "a=1"), ("http://xn--bcher-kva.test", "a=1"), ("http://bar.bücher.test", "a=1"), ("http://bar.xn--bcher-kva.test", "a=1"), ("http://foo.www.bücher.test", "a=1"), ("http://foo.www.xn--bcher-kva.test", "a=1"), ("http://other.test", ""), ("http://test", "")]),
        GoJarCase("Host cookie on TLD.", from: "http://com", setting: ["a=1"], content: "a=1", queries: [("http://com", "a=1"), ("http://any.com", ""), ("http://any.test", "")]),
        GoJarCase("Domain cookie on TLD becomes a host cookie.", from: "http://com", setting: ["a=1; domain=com"], content: "a=1", queries: [("http://com", "a=1"), ("http://any.com", ""), ("http://any.test", "")]),
        GoJarCase("Host cookie on public suffix.", from: "http://co.uk", setting: ["a=1"], content: "a=1", queries: [("http://co.uk", "a=1"), ("http://uk", ""), ("http://some.co.uk", ""), ("http://foo.some.co.uk", ""), ("http://any.uk", "")]),
        GoJarCase("Domain cookie on public suffix is ignored.", from: "http://some.co.uk", setting: ["a=1; domain=co.uk"], content: "", queries: [("http://co.uk", ""), ("http://uk", ""), ("http://some.co.uk", ""), ("http://foo.some.co.uk", ""), ("http://any.uk", "")]),
    ]

}
