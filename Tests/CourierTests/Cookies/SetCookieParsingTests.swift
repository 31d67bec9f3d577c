import Foundation
import Testing

@testable import Courier

@Suite("Set-Cookie parsing (RFC 6265bis 5.6)")
struct SetCookieParsingTests {
    @Test func nameValueAndAttributes() throws {
        let parsed = try #require(SetCookieParser.parse(
            " sid = a b c ; Path=/x; Domain=.Example.COM; Secure; HttpOnly; Max-Age=60; SameSite=lax; Unknown=1"))
        #expect(parsed.name == "sid")
        #expect(parsed.value == "a b c")
        #expect(parsed.path == "/x")
        #expect(parsed.domain == "example.com")
        #expect(parsed.isSecure && parsed.isHTTPOnly)
        #expect(parsed.maxAge == 60)
        #expect(parsed.sameSite == .some(.lax))
    }

    @Test func aFieldWithoutEqualsIsANamelessValue() throws {
        let parsed = try #require(SetCookieParser.parse("token"))
        #expect(parsed.name == "")
        #expect(parsed.value == "token")
        #expect(SetCookieParser.parse("=") == nil, "no name and no value")
        #expect(SetCookieParser.parse(" ; Path=/") == nil)
    }

    @Test func theValueKeepsQuotesAndEqualsSigns() throws {
        let parsed = try #require(SetCookieParser.parse("a=\"x=y\"; Path=/"))
        #expect(parsed.value == "\"x=y\"")
    }

    /// The field is split at the bytes `;` and `=`, not at characters: a value ending in a
    /// prepended mark (U+0600, which joins the character after it) or a `;` a combining mark
    /// follows kept the `;` in the value and lost the attribute (here `Secure`), and the `Cookie`
    /// header carried the `;` on to the server.
    @Test func theFieldIsSplitAtBytesNotCharacters() throws {
        let prepended = try #require(SetCookieParser.parse("lang=x\u{600}; Secure; Path=/a"))
        #expect(prepended.value == "x\u{600}")
        #expect(prepended.isSecure)
        #expect(prepended.path == "/a")
        let combined = try #require(SetCookieParser.parse("sid=abc;\u{301} Secure; HttpOnly"))
        #expect(combined.value == "abc")
        #expect(!combined.isSecure, "the attribute's name is U+0301 and Secure, which is no attribute")
        #expect(combined.isHTTPOnly)
        let equals = try #require(SetCookieParser.parse("a=\u{301}b; Path=/\u{301}x"))
        #expect(equals.name == "a" && equals.value == "\u{301}b")
        #expect(equals.path == "/\u{301}x", "a Path starting with the byte /")
        let trimmed = try #require(SetCookieParser.parse(" \tn\u{e9} = v\u{e9} \t; Domain= .\u{e9}x.com "))
        #expect(trimmed.name == "n\u{e9}" && trimmed.value == "v\u{e9}")
        #expect(trimmed.domain == "\u{e9}x.com")
    }

    @Test func controlCharactersInvalidateTheField() {
        #expect(SetCookieParser.parse("a=b\u{1}") == nil)
        #expect(SetCookieParser.parse("a=b\u{7F}") == nil)
        #expect(SetCookieParser.parse("a=b\tc") != nil, "a tab is allowed")
    }

    @Test func oversizedCookiesAndAttributesAreDropped() throws {
        #expect(SetCookieParser.parse("a=" + String(repeating: "x", count: 4096)) == nil)
        #expect(SetCookieParser.parse("a=" + String(repeating: "x", count: 4095)) != nil, "name and value: 4096 bytes")
        let parsed = try #require(SetCookieParser.parse("a=b; Path=/" + String(repeating: "p", count: 1024)))
        #expect(parsed.path == nil, "an attribute value over 1024 bytes is ignored")
    }

    @Test func theLastValidAttributeWins() throws {
        let parsed = try #require(SetCookieParser.parse("a=b; Max-Age=10; Max-Age=oops; Max-Age=20; Domain=a.com; Domain=; Path=/p; Path=q"))
        #expect(parsed.maxAge == 20, "an invalid Max-Age is ignored")
        #expect(parsed.domain == "a.com", "an empty Domain is ignored")
        #expect(parsed.path == nil, "a Path not starting with / resets to the default")
    }

    @Test func maxAgeValues() {
        #expect(SetCookieParser.deltaSeconds("0") == 0)
        #expect(SetCookieParser.deltaSeconds("-5") == 0)
        #expect(SetCookieParser.deltaSeconds("99999999999999999999999") == Int64.max)
        #expect(SetCookieParser.deltaSeconds("1e3") == nil)
        #expect(SetCookieParser.deltaSeconds("+5") == nil)
        #expect(SetCookieParser.deltaSeconds("") == nil)
    }

    @Test func unknownSameSiteIsKeptAsNotUnderstood() throws {
        let parsed = try #require(SetCookieParser.parse("a=b; SameSite=Sideways"))
        #expect(parsed.sameSite == .some(nil))
        #expect(try #require(SetCookieParser.parse("a=b")).sameSite == nil)
    }
}

@Suite("Cookie storage rules (RFC 6265bis 5.7)")
struct CookieStorageRuleTests {
    let now = Date(timeIntervalSince1970: 1_700_000_000)
    let suffixes = PublicSuffixList(rules: "com\nuk\nco.uk\n*.ck\n!www.ck\ngithub.io\n")

    func cookie(_ field: String, _ url: String) -> Cookie? {
        Cookie(setCookie: field, for: URL(string: url)!, now: self.now, publicSuffixes: self.suffixes)
    }

    @Test func noDomainMakesAHostOnlyCookie() throws {
        let cookie = try #require(self.cookie("a=1", "http://WWW.Example.com/a/b"))
        #expect(cookie.domain == "www.example.com")
        #expect(cookie.isHostOnly)
        #expect(cookie.path == "/a", "the default path: up to the last slash")
        #expect(cookie.isSessionOnly)
        #expect(cookie.creationDate == self.now)
    }

    @Test(arguments: [
        ("http://h/", "/"), ("http://h", "/"), ("http://h/a", "/"), ("http://h/a/", "/a"), ("http://h/a/b/c?q=/x", "/a/b"),
    ])
    func defaultPath(_ url: String, _ path: String) throws {
        #expect(try #require(self.cookie("a=1", url)).path == path)
    }

    @Test func aDomainAttributeCoversSubdomains() throws {
        let cookie = try #require(self.cookie("a=1; Domain=.example.com", "http://www.example.com/"))
        #expect(cookie.domain == "example.com")
        #expect(!cookie.isHostOnly)
        #expect(cookie.matches(URL(string: "http://deep.sub.example.com/x")!))
        #expect(!cookie.matches(URL(string: "http://notexample.com/")!))
    }

    /// The last Domain counts, and `Domain=.` leaves nothing once its dot is dropped: the cookie
    /// is host-only (RFC 6265bis 5.6.3, 5.7; Chrome and Go refuse it outright). Before, the empty
    /// value was skipped and the earlier Domain made it go to every subdomain. An empty Domain
    /// is still ignored.
    @Test func anEmptyDomainAfterTheDotResetsAnEarlierOne() throws {
        let cookie = try #require(self.cookie("a=b; Domain=home.example.org; Domain=.", "http://home.example.org/"))
        #expect(cookie.isHostOnly)
        #expect(!cookie.matches(URL(string: "http://sub.home.example.org/")!))
        let kept = try #require(self.cookie("a=b; Domain=home.example.org; Domain=", "http://home.example.org/"))
        #expect(!kept.isHostOnly)
    }

    /// An address names itself only: a Domain that is the request's IP address makes a host-only
    /// cookie, which a name ending in the address does not get (Go and browsers agree).
    @Test func aDomainThatIsTheHostsAddressIsHostOnly() throws {
        let cookie = try #require(self.cookie("a=1; Domain=192.168.0.10", "http://192.168.0.10/"))
        #expect(cookie.isHostOnly)
        #expect(cookie.matches(URL(string: "http://192.168.0.10/x")!))
        #expect(!cookie.matches(URL(string: "http://www.fancy.192.168.0.10/")!))
        #expect(!CookieMatching.domainMatches("www.192.168.0.10", "192.168.0.10"))
        #expect(self.cookie("a=1; Domain=192.168.0.1", "http://192.168.0.10/") == nil)
    }

    @Test func aDomainTheHostDoesNotMatchIsRefused() {
        #expect(self.cookie("a=1; Domain=other.com", "http://www.example.com/") == nil)
        #expect(self.cookie("a=1; Domain=www.example.com", "http://example.com/") == nil, "a subdomain of the host")
        #expect(self.cookie("a=1; Domain=ample.com", "http://example.com/") == nil, "a suffix without a dot")
    }

    @Test func publicSuffixDomainsAreRefused() throws {
        #expect(self.cookie("a=1; Domain=co.uk", "http://www.example.co.uk/") == nil)
        #expect(self.cookie("a=1; Domain=com", "http://example.com/") == nil)
        #expect(self.cookie("a=1; Domain=github.io", "http://me.github.io/") == nil, "the private section counts")
        #expect(self.cookie("a=1; Domain=example.ck", "http://www.example.ck/") == nil, "a wildcard rule")
        #expect(self.cookie("a=1; Domain=www.ck", "http://a.www.ck/") != nil, "an exception rule")
        let own = try #require(self.cookie("a=1; Domain=github.io", "http://github.io/"))
        #expect(own.isHostOnly, "a public suffix that is the host itself makes a host-only cookie")
    }

    @Test func withoutAListOnlySingleLabelsAreRefused() {
        let none = PublicSuffixList.implicitRuleOnly
        #expect(none.isImplicitRuleOnly)
        #expect(Cookie(setCookie: "a=1; Domain=com", for: URL(string: "http://example.com/")!, publicSuffixes: none) == nil)
        #expect(Cookie(setCookie: "a=1; Domain=co.uk", for: URL(string: "http://example.co.uk/")!, publicSuffixes: none) != nil)
    }

    @Test func ipAddressesMatchOnlyThemselves() throws {
        let cookie = try #require(self.cookie("a=1; Domain=127.0.0.1", "http://127.0.0.1:8080/"))
        #expect(cookie.domain == "127.0.0.1")
        #expect(cookie.matches(URL(string: "http://127.0.0.1/")!))
        #expect(self.cookie("a=1; Domain=0.0.1", "http://127.0.0.1/") == nil, "no suffix matching for an IP address")
        let v6 = try #require(self.cookie("a=1", "http://[::1]:8080/"))
        #expect(v6.domain == "::1")
        #expect(v6.matches(URL(string: "http://[::1]/")!))
    }

    @Test func maxAgeWinsOverExpires() throws {
        let cookie = try #require(self.cookie("a=1; Expires=Wed, 01 Jan 2025 00:00:00 GMT; Max-Age=60", "http://h/"))
        #expect(cookie.expiresDate == self.now.addingTimeInterval(60))
        let expires = try #require(self.cookie("a=1; Expires=Thu, 16 Nov 2023 00:00:00 GMT", "http://h/"))
        #expect(expires.expiresDate == HTTPDate.parse("Thu, 16 Nov 2023 00:00:00 GMT"))
        let zero = try #require(self.cookie("a=1; Max-Age=0; Expires=Wed, 01 Jan 2099 00:00:00 GMT", "http://h/"))
        #expect(zero.isExpired(at: self.now))
        let past = try #require(self.cookie("a=1; Expires=Thu, 01 Jan 1970 00:00:01 GMT", "http://h/"))
        #expect(past.isExpired(at: self.now))
    }

    @Test func lifetimesAreCappedAt400Days() throws {
        let long = try #require(self.cookie("a=1; Max-Age=999999999", "http://h/"))
        #expect(long.expiresDate == self.now.addingTimeInterval(400 * 86_400))
        let far = try #require(self.cookie("a=1; Expires=Fri, 01 Jan 2100 00:00:00 GMT", "http://h/"))
        #expect(far.expiresDate == self.now.addingTimeInterval(400 * 86_400))
    }

    @Test func secureNeedsASecureOrigin() throws {
        #expect(self.cookie("a=1; Secure", "http://h/") == nil)
        let cookie = try #require(self.cookie("a=1; Secure", "https://h/"))
        #expect(cookie.isSecure)
        #expect(!cookie.matches(URL(string: "http://h/")!))
        #expect(cookie.matches(URL(string: "https://h/")!))
    }

    @Test func securePrefix() {
        #expect(self.cookie("__Secure-a=1", "https://h/") == nil, "no Secure attribute")
        #expect(self.cookie("__Secure-a=1; Secure", "http://h/") == nil, "not a secure origin")
        #expect(self.cookie("__Secure-a=1; Secure; Domain=h.com", "https://www.h.com/") != nil)
        #expect(self.cookie("__SECURE-a=1", "https://h/") == nil, "the prefix ignores case")
    }

    @Test func hostPrefix() {
        #expect(self.cookie("__Host-a=1; Secure; Path=/", "https://h.com/x/y") != nil)
        #expect(self.cookie("__Host-a=1; Secure", "https://h.com/x/y") == nil, "no Path attribute")
        #expect(self.cookie("__Host-a=1; Secure; Path=/x", "https://h.com/x/y") == nil, "a path other than /")
        #expect(self.cookie("__Host-a=1; Secure; Path=/; Domain=h.com", "https://h.com/") == nil, "a Domain attribute")
        #expect(self.cookie("__Host-a=1; Path=/", "https://h.com/") == nil, "no Secure")
        #expect(self.cookie("__host-a=1; Secure; Path=/", "http://h.com/") == nil, "not a secure origin")
    }

    /// A `Domain` that names the request's IP address makes a host-only cookie, but `__Host-`
    /// asks for no `Domain` at all (RFC 6265bis 5.7 step 21): refused. It was stored. A public
    /// suffix that is the host itself is cleared as the RFC clears it, and the cookie is kept.
    @Test func hostPrefixRefusesADomainThatIsTheHostsAddress() {
        #expect(self.cookie("__Host-a=1; Secure; Path=/; Domain=127.0.0.1", "https://127.0.0.1/") == nil)
        #expect(self.cookie("__Host-a=1; Secure; Path=/", "https://127.0.0.1/") != nil)
        #expect(self.cookie("__Host-a=1; Secure; Path=/; Domain=github.io", "https://github.io/") != nil)
    }

    @Test func namelessCookiesMayNotFakeAPrefix() {
        #expect(self.cookie("__Secure-x", "https://h/") == nil)
        #expect(self.cookie("__Host-x", "https://h/") == nil)
    }

    @Test func sameSiteIsKept() throws {
        #expect(try #require(self.cookie("a=1; SameSite=Strict", "http://h/")).sameSite == .strict)
        #expect(try #require(self.cookie("a=1; SameSite=none", "http://h/")).sameSite == Cookie.SameSite.none)
        #expect(try #require(self.cookie("a=1; SameSite=wat", "http://h/")).sameSite == nil)
    }

    @Test func pathMatching() {
        #expect(CookieMatching.pathMatches("/a/b", "/a"))
        #expect(CookieMatching.pathMatches("/a/", "/a"))
        #expect(CookieMatching.pathMatches("/a", "/a"))
        #expect(CookieMatching.pathMatches("/a/b", "/a/"))
        #expect(!CookieMatching.pathMatches("/ab", "/a"))
        #expect(!CookieMatching.pathMatches("/", "/a"))
    }

    @Test func nonASCIIDomainAttributesAreRefused() {
        #expect(self.cookie("a=1; Domain=exämple.com", "http://www.xn--exmple-cua.com/") == nil)
        // U+212A KELVIN SIGN, which Unicode lowering makes `k`: refused, not read as `kiosk.example`.
        #expect(self.cookie("a=1; Domain=\u{212A}iosk.example", "http://www.kiosk.example/") == nil)
        #expect(self.cookie("a=1; Domain=KIOSK.example", "http://www.kiosk.example/")?.domain == "kiosk.example")
    }
}
