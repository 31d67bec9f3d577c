import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import Courier

@Suite("Cookie store")
struct CookieJarTests {
    let suffixes = PublicSuffixList(rules: "com\norg\nco.uk\n")

    func store(limits: CookieLimits = CookieLimits(), clock: ManualClock = ManualClock()) -> MemoryCookieStorage {
        MemoryCookieStorage(limits: limits, publicSuffixes: self.suffixes, clock: clock.function)
    }

    @Test func storesAndSendsByDomainAndPath() {
        let store = self.store()
        store.storeCookies(fromSetCookieFields: ["a=1", "b=2; Path=/docs", "c=3; Domain=example.com"], for: URL(string: "http://www.example.com/")!)
        #expect(store.cookieHeader(for: URL(string: "http://www.example.com/")!) == "a=1; c=3")
        #expect(store.cookieHeader(for: URL(string: "http://www.example.com/docs/x")!) == "b=2; a=1; c=3")
        #expect(store.cookieHeader(for: URL(string: "http://api.example.com/docs")!) == "c=3", "host-only cookies stay on their host")
        #expect(store.cookieHeader(for: URL(string: "http://example.org/")!) == nil)
    }

    /// A jar with nothing in it costs nothing: asking it for a request's cookies reads neither the
    /// clock nor the jar (most sessions never store a cookie); once a cookie is in, it does again,
    /// and after the last one is gone it no longer does.
    @Test func anEmptyJarIsAskedWithoutTheClock() {
        let reads = NIOLockedValueBox(0)
        let store = MemoryCookieStorage(publicSuffixes: self.suffixes, clock: {
            reads.withLockedValue { $0 += 1 }
            return Date(timeIntervalSince1970: 1_700_000_000)
        })
        let url = URL(string: "http://www.example.com/")!
        #expect(store.cookieHeader(for: url) == nil)
        #expect(store.cookies(for: url).isEmpty)
        #expect(reads.withLockedValue { $0 } == 0, "an empty jar read the clock")
        store.storeCookies(fromSetCookieFields: ["a=1"], for: url)
        let afterStoring = reads.withLockedValue { $0 }
        #expect(store.cookieHeader(for: url) == "a=1")
        #expect(reads.withLockedValue { $0 } > afterStoring, "a jar with a cookie is asked")
        store.removeAllCookies()
        let afterRemoving = reads.withLockedValue { $0 }
        #expect(store.cookieHeader(for: url) == nil)
        #expect(reads.withLockedValue { $0 } == afterRemoving, "emptied again: the clock is left alone")
    }

    @Test func headerOrderIsPathLengthThenCreationTime() {
        let clock = ManualClock()
        let store = self.store(clock: clock)
        let url = URL(string: "http://h.com/a/b/c")!
        store.storeCookies(fromSetCookieFields: ["late=1; Path=/"], for: url)
        clock.advance(by: -10)
        store.storeCookies(fromSetCookieFields: ["early=1; Path=/"], for: url)
        store.storeCookies(fromSetCookieFields: ["deep=1; Path=/a/b", "mid=1; Path=/a"], for: url)
        #expect(store.cookieHeader(for: url) == "deep=1; mid=1; early=1; late=1")
        // Same instant: the order of arrival.
        let same = self.store()
        same.storeCookies(fromSetCookieFields: ["z=1", "y=1", "x=1"], for: URL(string: "http://h.com/")!)
        #expect(same.cookieHeader(for: URL(string: "http://h.com/")!) == "z=1; y=1; x=1")
    }

    @Test func theStoresHeaderIsItsCookiesJoined() {
        let clock = ManualClock()
        let store = self.store(clock: clock)
        let url = URL(string: "https://www.h.com/a/b")!
        store.storeCookies(fromSetCookieFields: ["s=1; Secure", "root=1; Path=/", "gone=1; Max-Age=5", "=nameless"], for: url)
        clock.advance(by: 1)
        store.storeCookies(fromSetCookieFields: ["ab=1; Path=/a/b", "dom=1; Domain=h.com; Path=/a", "other=1; Path=/c"], for: url)
        clock.advance(by: 10)
        // MemoryCookieStorage answers without making the cookies; the order and the set are those
        // of cookies(for:) (the protocol's default), expired ones left out.
        let expected = Cookie.headerValue(for: store.cookies(for: url))
        // s and the nameless one take the default path /a, as dom does, and are older.
        #expect(expected == "ab=1; s=1; nameless; dom=1; root=1")
        #expect(store.cookieHeader(for: url) == expected)
        #expect(store.cookieHeader(for: URL(string: "http://www.h.com/a/b")!) == "ab=1; nameless; dom=1; root=1", "no Secure cookie over http")
        // Asking for the header counts as a use: eviction by last access spares them.
        clock.advance(by: 5)
        _ = store.cookieHeader(for: url)
        #expect(store.allCookies.filter { $0.lastAccessDate == clock.now }.map(\.name).sorted() == ["", "ab", "dom", "root", "s"])
    }

    @Test func replacingKeepsTheCreationDate() throws {
        let clock = ManualClock()
        let store = self.store(clock: clock)
        let url = URL(string: "http://h.com/")!
        store.storeCookies(fromSetCookieFields: ["a=1"], for: url)
        let created = clock.now
        clock.advance(by: 5)
        store.storeCookies(fromSetCookieFields: ["b=1"], for: url)
        clock.advance(by: 5)
        store.storeCookies(fromSetCookieFields: ["a=2"], for: url)
        let cookie = try #require(store.allCookies.first { $0.name == "a" })
        #expect(cookie.value == "2")
        #expect(cookie.creationDate == created)
        #expect(store.cookieHeader(for: url) == "a=2; b=1", "a keeps its place")
        #expect(store.allCookies.count == 2)
    }

    @Test func differentPathsOrDomainsAreDifferentCookies() {
        let store = self.store()
        let url = URL(string: "http://www.h.com/a/")!
        store.storeCookies(fromSetCookieFields: ["a=1; Path=/", "a=2; Path=/a", "a=3; Domain=h.com"], for: url)
        #expect(store.allCookies.count == 3)
        #expect(store.cookieHeader(for: url) == "a=2; a=3; a=1", "a=3 has the default path /a too")
        store.storeCookies(fromSetCookieFields: ["a=4"], for: url)
        #expect(store.allCookies.count == 3, "host-only, path /a: the same cookie as a=2")
        #expect(store.cookieHeader(for: url) == "a=4; a=3; a=1", "and it keeps a=2's place")
        #expect(store.cookieHeader(for: URL(string: "http://h.com/")!) == nil)
        #expect(store.cookieHeader(for: URL(string: "http://h.com/a")!) == "a=3")
    }

    @Test func expiryDeletesAndExpiresWithTheClock() {
        let clock = ManualClock()
        let store = self.store(clock: clock)
        let url = URL(string: "http://h.com/")!
        store.storeCookies(fromSetCookieFields: ["a=1; Max-Age=60", "b=1; Expires=\(HTTPDate.format(clock.now.addingTimeInterval(120)))", "c=1"], for: url)
        #expect(store.cookieHeader(for: url) == "a=1; b=1; c=1")
        clock.advance(by: 60)
        #expect(store.cookieHeader(for: url) == "b=1; c=1", "a expired at 60 s")
        clock.advance(by: 60)
        #expect(store.cookieHeader(for: url) == "c=1")
        #expect(store.allCookies.map(\.name) == ["c"])
        // A server deletes a cookie by sending it expired.
        store.storeCookies(fromSetCookieFields: ["c=; Max-Age=0"], for: url)
        #expect(store.cookieHeader(for: url) == nil)
        #expect(store.allCookies.isEmpty)
    }

    @Test func anExpiredCookieForANewNameStoresNothing() {
        let store = self.store()
        store.storeCookies(fromSetCookieFields: ["gone=1; Expires=Thu, 01 Jan 1970 00:00:01 GMT"], for: URL(string: "http://h.com/")!)
        #expect(store.allCookies.isEmpty)
    }

    @Test func insecureOriginsCannotShadowSecureCookies() {
        let store = self.store()
        store.storeCookies(fromSetCookieFields: ["sid=secure; Secure; Domain=h.com"], for: URL(string: "https://www.h.com/")!)
        store.storeCookies(fromSetCookieFields: ["sid=evil; Domain=h.com"], for: URL(string: "http://www.h.com/")!)
        store.storeCookies(fromSetCookieFields: ["sid=evil"], for: URL(string: "http://api.h.com/x")!)
        #expect(store.allCookies.map(\.value) == ["secure"])
        store.storeCookies(fromSetCookieFields: ["other=fine"], for: URL(string: "http://www.h.com/")!)
        #expect(store.allCookies.count == 2)
        store.storeCookies(fromSetCookieFields: ["sid=updated; Secure; Domain=h.com"], for: URL(string: "https://www.h.com/")!)
        #expect(store.cookieHeader(for: URL(string: "https://h.com/")!) == "sid=updated")
        #expect(store.cookieHeader(for: URL(string: "http://www.h.com/")!) == "other=fine", "Secure cookies skip http")
    }

    @Test func perDomainLimitEvictsTheLeastRecentlyUsed() {
        let clock = ManualClock()
        let store = self.store(limits: CookieLimits(perDomain: 3, total: 100), clock: clock)
        let url = URL(string: "http://h.com/")!
        for name in ["a", "b", "c"] {
            store.storeCookies(fromSetCookieFields: ["\(name)=1; Path=/\(name)"], for: url)
            clock.advance(by: 1)
        }
        _ = store.cookies(for: URL(string: "http://h.com/a")!)  // a is used again
        clock.advance(by: 1)
        store.storeCookies(fromSetCookieFields: ["d=1"], for: url)
        #expect(Set(store.allCookies.map(\.name)) == ["a", "c", "d"], "b was the least recently used")
        // Other domains are untouched by this domain's limit.
        store.storeCookies(fromSetCookieFields: ["x=1"], for: URL(string: "http://other.com/")!)
        #expect(store.allCookies.count == 4)
    }

    /// A plain `http` host of the domain sends enough cookies to reach the domain's limit: its
    /// own go, not the `Secure` one an `https` origin set, so it cannot then set a namesake of
    /// it (RFC 6265bis 5.7's order). Before, the `Secure` cookie was the least recently used and
    /// went, and the flood's next `sid` was stored and sent to `https://h.com/`.
    @Test func aFloodFromPlainHTTPDoesNotEvictASecureCookie() {
        let clock = ManualClock()
        let store = self.store(limits: CookieLimits(perDomain: 3, total: 100), clock: clock)
        store.storeCookies(fromSetCookieFields: ["sid=good; Secure; Domain=h.com"], for: URL(string: "https://www.h.com/")!)
        clock.advance(by: 1)
        let evil = URL(string: "http://evil.h.com/")!
        store.storeCookies(fromSetCookieFields: ["x1=1; Domain=h.com", "x2=1; Domain=h.com", "x3=1; Domain=h.com"], for: evil)
        #expect(store.allCookies.contains { $0.name == "sid" && $0.value == "good" && $0.isSecure })
        #expect(Set(store.allCookies.map(\.name)) == ["sid", "x2", "x3"], "the least recently used cookie without Secure went")
        store.storeCookies(fromSetCookieFields: ["sid=evil; Domain=h.com"], for: evil)
        #expect(store.cookieHeader(for: URL(string: "https://h.com/")!)?.contains("sid=evil") == false)
        #expect(store.cookieHeader(for: URL(string: "https://h.com/")!)?.contains("sid=good") == true)
        // Only Secure cookies over the limit: the least recently used of them goes.
        let secure = self.store(limits: CookieLimits(perDomain: 2, total: 100), clock: clock)
        for name in ["a", "b", "c"] {
            secure.storeCookies(fromSetCookieFields: ["\(name)=1; Secure"], for: URL(string: "https://h.com/")!)
            clock.advance(by: 1)
        }
        #expect(Set(secure.allCookies.map(\.name)) == ["b", "c"])
    }

    @Test func totalLimitEvictsAcrossDomains() {
        let clock = ManualClock()
        let store = self.store(limits: CookieLimits(perDomain: 50, total: 4), clock: clock)
        for index in 0..<6 {
            store.storeCookies(fromSetCookieFields: ["c\(index)=1"], for: URL(string: "http://h\(index).com/")!)
            clock.advance(by: 1)
        }
        #expect(store.allCookies.map(\.name) == ["c2", "c3", "c4", "c5"])
        store.limits = CookieLimits(perDomain: 50, total: 1)
        #expect(store.allCookies.map(\.name) == ["c5"])
        store.limits = CookieLimits(perDomain: 50, total: 0)
        #expect(store.allCookies.isEmpty)
    }

    /// One response with thousands of `Set-Cookie` fields (a 256 KiB head holds some 14,000) is
    /// stored as a few would be: namesakes replaced in place, deleted and set again, a plain
    /// `http` origin refused a namesake of a `Secure` cookie, then the limits applied once, per
    /// domain (the `Secure` cookie kept) and in all, the least recently used first. Storing each
    /// field looked through every cookie stored before it (for its namesake, and for a `Secure`
    /// one it might shadow), with the lock held: 14,000 fields took 1.3 s. What this checks is
    /// the outcome at that scale, not the time.
    @Test func aResponseWithThousandsOfCookiesIsStoredAsAFewAre() {
        let clock = ManualClock()
        let store = self.store(limits: CookieLimits(perDomain: 50, total: 55), clock: clock)
        store.storeCookies(fromSetCookieFields: (0..<10).map { "o\($0)=1" }, for: URL(string: "http://other.com/")!)
        clock.advance(by: 1)
        store.storeCookies(fromSetCookieFields: ["sid=good; Secure"], for: URL(string: "https://www.h.com/")!)
        clock.advance(by: 1)
        // 2,500 names, each set twice (the second value replaces the first, which keeps its
        // place), odd ones under /a; c2400 is deleted between its two, so its second is a new
        // cookie, the last to arrive; c2499 is deleted at the end.
        var fields: [String] = []
        for index in 0..<5_000 {
            fields.append("c\(index % 2_500)=\(index); Path=\(index % 2 == 0 ? "/" : "/a")")
            if index % 1_000 == 0 { fields.append("sid=evil") }
            if index == 3_000 { fields.append("c2400=; Max-Age=0") }
        }
        fields.append("c2499=; Path=/a; Max-Age=0")
        store.storeCookies(fromSetCookieFields: fields, for: URL(string: "http://www.h.com/")!)

        // www.h.com keeps 50: sid, then the 49 most recently stored (c2400, c2498 down to c2451);
        // 60 in all is 5 over the total, and other.com's oldest five go.
        #expect(store.allCookies.count == 55)
        #expect(store.allCookies.filter { $0.name == "sid" }.map(\.value) == ["good"])
        #expect(Set(store.allCookies.filter { $0.domain == "other.com" }.map(\.name)) == Set((5..<10).map { "o\($0)" }))
        let underA = (2_451...2_498).filter { $0 % 2 == 1 }.map { "c\($0)=\(2_500 + $0)" }
        let underRoot = (2_451...2_498).filter { $0 % 2 == 0 }.map { "c\($0)=\(2_500 + $0)" }
        // Longer path first; then sid, created before the response; then the order of arrival.
        let header = (underA + ["sid=good"] + underRoot + ["c2400=4900"]).joined(separator: "; ")
        #expect(store.cookieHeader(for: URL(string: "https://www.h.com/a/x")!) == header)
        #expect(store.cookieHeader(for: URL(string: "http://www.h.com/")!) == (underRoot + ["c2400=4900"]).joined(separator: "; "))
        // The Secure cookie still guards its name.
        store.storeCookies(fromSetCookieFields: ["sid=evil"], for: URL(string: "http://www.h.com/")!)
        #expect(store.allCookies.filter { $0.name == "sid" }.map(\.value) == ["good"])
    }

    @Test func expiredCookiesGoFirstWhenEvicting() {
        let clock = ManualClock()
        let store = self.store(limits: CookieLimits(perDomain: 2, total: 100), clock: clock)
        let url = URL(string: "http://h.com/")!
        store.storeCookies(fromSetCookieFields: ["old=1"], for: url)
        clock.advance(by: 1)
        store.storeCookies(fromSetCookieFields: ["short=1; Max-Age=1"], for: url)
        clock.advance(by: 2)
        store.storeCookies(fromSetCookieFields: ["new=1"], for: url)
        #expect(Set(store.allCookies.map(\.name)) == ["old", "new"])
    }

    @Test func handMadeCookiesAndRemoval() throws {
        let clock = ManualClock()
        let store = self.store(clock: clock)
        store.setCookie(Cookie(name: "t", value: "1", domain: ".Example.com", isHostOnly: false, creationDate: clock.now))
        #expect(store.cookieHeader(for: URL(string: "http://a.example.com/")!) == "t=1")
        let cookie = try #require(store.allCookies.first)
        #expect(cookie.domain == "example.com")
        clock.advance(by: 10)
        store.setCookie(Cookie(name: "u", value: "2", domain: "example.com", creationDate: clock.now))
        store.removeCookies(since: clock.now)
        #expect(store.allCookies.map(\.name) == ["t"])
        store.deleteCookie(cookie)
        #expect(store.allCookies.isEmpty)
        store.setCookie(Cookie(name: "v", value: "3", domain: "example.com"))
        store.removeAllCookies()
        #expect(store.allCookies.isEmpty)
    }

    /// `Cookie.domain` is a `var`: set to `.Example.COM` after the cookie was made, it is stored
    /// canonical by `setCookie(_:)`, and now deleted by `deleteCookie(_:)` too, which compared
    /// it as it was and deleted nothing.
    @Test func deletingComparesTheDomainAsItIsStored() {
        let store = self.store()
        var cookie = Cookie(name: "m", value: "1", domain: "example.com", isHostOnly: false)
        cookie.domain = ".Example.COM"
        store.setCookie(cookie)
        #expect(store.allCookies.map(\.domain) == ["example.com"])
        store.deleteCookie(cookie)
        #expect(store.allCookies.isEmpty)
    }

    @Test func noCookiesForURLsWithoutAHost() {
        let store = self.store()
        store.storeCookies(fromSetCookieFields: ["a=1"], for: URL(string: "file:///tmp/x")!)
        #expect(store.allCookies.isEmpty)
    }

    /// The host of an `http+unix` URL is a socket's path, not a host name: its cookies stay with
    /// that socket, as an IP address's stay with it. Before, `/tmp/api.example.com` was read as
    /// a host under `example.com`: it got example.com's domain cookies, and a server on it could
    /// set cookies with `Domain=example.com`, which then went to the real site.
    @Test func aUnixSocketsCookiesStayWithIt() throws {
        let store = self.store()
        let site = URL(string: "http://www.example.com/")!
        let socket = URL(string: "http+unix://%2Ftmp%2Fapi.example.com/v1/x")!
        store.storeCookies(fromSetCookieFields: ["site=1; Domain=example.com"], for: site)
        #expect(store.cookieHeader(for: socket) == nil, "example.com's cookies are not the socket's")
        #expect(try #require(store.allCookies.first).matches(socket) == false)
        store.storeCookies(
            fromSetCookieFields: ["planted=1; Domain=example.com; Path=/", "own=1; Path=/", "self=1; Domain=/tmp/api.example.com; Path=/"],
            for: socket)
        #expect(store.cookieHeader(for: site) == "site=1", "a socket sets no cookie for a domain")
        #expect(store.cookieHeader(for: socket) == "own=1; self=1")
        #expect(store.allCookies.filter(\.isHostOnly).map(\.name) == ["own", "self"], "a Domain naming the socket itself is host-only")
        #expect(store.cookieHeader(for: URL(string: "http+unix://%2Ftmp%2Fother.example.com/")!) == nil)
    }

    /// `wss+unix` is TLS over a Unix socket, as `https+unix` is: a `Secure` cookie may be set
    /// from it and goes to it. Every other scheme that carries cookies was right; this one was
    /// taken for a plain one, so its `Secure` cookies were refused and never sent.
    @Test func wssOverAUnixSocketIsSecure() {
        let store = self.store()
        let secure = URL(string: "wss+unix://%2Ftmp%2Fws.sock/chat")!
        store.storeCookies(fromSetCookieFields: ["s=1; Secure; Path=/"], for: secure)
        #expect(store.cookieHeader(for: secure) == "s=1")
        #expect(store.cookieHeader(for: URL(string: "WSS+UNIX://%2Ftmp%2Fws.sock/")!) == "s=1")
        #expect(store.cookieHeader(for: URL(string: "ws+unix://%2Ftmp%2Fws.sock/chat")!) == nil, "not over plain ws+unix")
        #expect(store.allCookies.first?.matches(secure) == true)
    }

    @Test func headerValueSerialisesNamelessCookies() {
        let cookies = [Cookie(name: "", value: "token", domain: "h"), Cookie(name: "a", value: "", domain: "h")]
        #expect(Cookie.headerValue(for: cookies) == "token; a=")
        #expect(Cookie.headerValue(for: []) == nil)
        // One with neither name nor value (from a cookie file, or made by hand) adds nothing:
        // before, `a=1; ; b=2`.
        let empty = Cookie(name: "", value: "", domain: "h")
        #expect(Cookie.headerValue(for: [Cookie(name: "a", value: "1", domain: "h"), empty, Cookie(name: "b", value: "2", domain: "h")]) == "a=1; b=2")
        #expect(Cookie.headerValue(for: [empty]) == nil)
    }

    @Test func aStoreWithoutASuffixListSaysSo() {
        let (logger, messages) = RecordingLogHandler.logger()
        _ = MemoryCookieStorage(publicSuffixes: .implicitRuleOnly, logger: logger)
        #expect(messages.withLockedValue { $0 }.contains { $0.hasPrefix("warning") && $0.contains("apt-get install publicsuffix") })
        let (quietLogger, quiet) = RecordingLogHandler.logger()
        _ = MemoryCookieStorage(publicSuffixes: self.suffixes, logger: quietLogger)
        #expect(quiet.withLockedValue { $0 }.isEmpty)
    }

    @Test func concurrentUseIsSafe() async {
        let store = self.store()
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<200 {
                group.addTask {
                    let url = URL(string: "http://h\(index % 7).com/p\(index % 3)/x")!
                    store.storeCookies(fromSetCookieFields: ["c\(index)=\(index); Path=/p\(index % 3)"], for: url)
                    _ = store.cookieHeader(for: url)
                }
            }
        }
        #expect(store.allCookies.count == 200)
    }
}

@Suite("Public suffix list")
struct PublicSuffixListTests {
    @Test func rulesExceptionsAndWildcards() {
        let list = PublicSuffixList(rules: """
            // comment
            com
            co.uk
            *.kawasaki.jp
            !city.kawasaki.jp
            公司.cn
            """)
        #expect(list.ruleCount == 5)
        #expect(list.publicSuffix(of: "www.example.co.uk") == "co.uk")
        #expect(list.registrableDomain(of: "www.example.co.uk") == "example.co.uk")
        #expect(list.isPublicSuffix("a.kawasaki.jp"))
        #expect(!list.isPublicSuffix("city.kawasaki.jp"))
        #expect(list.registrableDomain(of: "www.city.kawasaki.jp") == "city.kawasaki.jp")
        #expect(list.isPublicSuffix("xn--55qx5d.cn"), "a Unicode rule, matched in Punycode")
        #expect(list.isPublicSuffix("example"), "the implicit * rule")
        #expect(!list.isPublicSuffix("example.com"))
        #expect(list.registrableDomain(of: "com") == nil)
    }

    @Test func theSystemList() throws {
        guard FileManager.default.fileExists(atPath: PublicSuffixList.systemListPath) else {
            print("skipped: \(PublicSuffixList.systemListPath) is missing (apt-get install publicsuffix)")
            return
        }
        let list = PublicSuffixList.system
        #expect(list.ruleCount > 5000)
        #expect(list.isPublicSuffix("co.uk"))
        #expect(list.isPublicSuffix("github.io"))
        #expect(list.isPublicSuffix("com"))
        #expect(!list.isPublicSuffix("example.com"))
        #expect(list.isPublicSuffix("xn--55qx5d.cn"), "公司.cn")
    }

    @Test func punycode() {
        // RFC 3492's and well-known examples.
        #expect(Punycode.encode("bücher") == "bcher-kva")
        #expect(Punycode.encode("公司") == "55qx5d")
        #expect(Punycode.encode("他们为什么不说中文") == "ihqwcrb4cv8a8dqg056pqjye")
        #expect(Punycode.asciiHost("www.Bücher.de") == "www.xn--bcher-kva.de")
        #expect(Punycode.asciiHost("example.com") == "example.com")
    }
}
