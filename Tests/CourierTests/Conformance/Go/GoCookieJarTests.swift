import Foundation
import Testing

@testable import Courier

/// Go's cookie jar tests (GoCookieJarCases.swift), run against ``MemoryCookieStorage`` as Go runs
/// them against its jar: the same public suffixes (`co.uk` and the implicit rule), the same clock
/// steps, one store a case or one store for a whole table where Go shares its jar.
///
/// Courier differs on purpose in two rules. It follows RFC 6265bis where Go follows RFC 6265: a
/// cookie with `Secure` is refused from an `http` URL, and an `http` URL may not replace a
/// `Secure` cookie (Strict Secure Cookies, which browsers follow). And it follows RFC 6265's
/// `Domain` parsing where Go follows Chromium: a leading dot is dropped before anything else
/// (`Domain=.1.2.3.4` on 1.2.3.4 is that host; `Domain=.` is no domain). ``deviations`` lists each
/// case whose result that changes, with what Courier gives instead; every other case must give
/// Go's result, and every listed one must give Courier's (a deviation that went away fails too).
@Suite("Go's cookie jar tests")
struct GoCookieJarTests {
    /// Go's `tNow`.
    static let now = Date(timeIntervalSince1970: 1_357_041_600)
    /// Go's `testPSL`: `co.uk`, and otherwise the last label.
    static let suffixes = PublicSuffixList(rules: "co.uk\n")

    /// What Courier gives where it differs from Go on purpose, by case: the content, or the
    /// answer to a query by its index, as Go's tests write them.
    struct Deviation {
        var content: String?
        var queries: [Int: String] = [:]
    }

    static let deviations: [String: Deviation] = [
        // RFC 6265bis 5.7 (Strict Secure Cookies): `Secure` from an `http` URL is refused, and an
        // `http` URL cannot replace a `Secure` cookie. Go (RFC 6265) stores and replaces them.
        "Secure cookies are not returned to http.": Deviation(content: "", queries: [3: "", 4: "", 5: ""]),
        "Set initial cookies.": Deviation(content: "a=1 c=3", queries: [1: "a=1 c=3"]),
        "Update value via http.": Deviation(content: "a=w c=y", queries: [1: "a=w c=y"]),
        // b and d were never stored, so the http ones are new and newer than a and c: sent after.
        "Clear Secure flag from a http.": Deviation(queries: [0: "a=w c=y b=xx d=zz"]),
        // `Domain=.192.168.0.10` from 192.168.0.10: RFC 6265 5.2.3 drops the leading dot, and the
        // rest is identical to the host, so the cookie is stored (as OkHttp does). Go, like the
        // Chromium test it ported, refuses a dotted domain on an IP address.
        "Domain cookies on IP.": Deviation(content: "a=1 c=3", queries: [0: "a=1 c=3"]),
        "TestIpAddress #2.": Deviation(content: "a=1", queries: [0: "a=1"]),
        // `Domain=.`: RFC 6265 5.2.3 leaves an empty domain, so 5.3 step 6 makes a host-only
        // cookie (OkHttp ignores the attribute too). Go refuses the cookie.
        "InvalidDomainTest #1.": Deviation(content: "f=6", queries: [0: "f=6"]),
    ]

    static func makeStore(_ clock: ManualClock) -> MemoryCookieStorage {
        MemoryCookieStorage(publicSuffixes: Self.suffixes, clock: clock.function)
    }

    /// Runs `test` on `store` as Go's `jarTest.run` does; returns what differed from the
    /// expectation (Go's, or Courier's where it deviates), one line each.
    static func run(_ test: GoJarCase, on store: MemoryCookieStorage, clock: ManualClock) -> [String] {
        let deviation = Self.deviations[test.description]
        var mismatches: [String] = []
        clock.set(Self.now)
        store.storeCookies(fromSetCookieFields: test.setCookies, for: URL(string: test.fromURL)!)
        clock.set(Self.now.addingTimeInterval(1.001))
        let content = store.allCookies.map { "\($0.name)=\($0.value)" }.sorted().joined(separator: " ")
        let wantedContent = deviation?.content ?? test.content
        if content != wantedContent { mismatches.append("content: got \"\(content)\", want \"\(wantedContent)\"") }
        for (index, query) in test.queries.enumerated() {
            clock.set(Self.now.addingTimeInterval(1.001 * Double(index + 2)))
            let got = store.cookies(for: URL(string: query.url)!).map { "\($0.name)=\($0.value)" }.joined(separator: " ")
            let want = deviation?.queries[index] ?? query.want
            if got != want { mismatches.append("#\(index) \(query.url): got \"\(got)\", want \"\(want)\"") }
        }
        return mismatches
    }

    /// Go's tables that take a new jar for every case.
    @Test(arguments: GoJarCases.basics + GoJarCases.chromiumBasics + GoJarCases.domainHandling)
    func aCaseOnAnEmptyStore(_ test: GoJarCase) {
        let clock = ManualClock(Self.now)
        let mismatches = Self.run(test, on: Self.makeStore(clock), clock: clock)
        #expect(mismatches.isEmpty, "\(test.description)\n\(mismatches.joined(separator: "\n"))")
    }

    /// Go's tables whose cases run one after another on one jar.
    @Test(arguments: [
        Table("updateAndDelete", GoJarCases.updateAndDelete), Table("expiration", GoJarCases.expiration),
        Table("chromiumDomain", GoJarCases.chromiumDomain), Table("chromiumDeletion", GoJarCases.chromiumDeletion),
    ])
    func aTableOnOneStore(_ table: Table) {
        let clock = ManualClock(Self.now)
        let store = Self.makeStore(clock)
        for test in table.cases {
            let mismatches = Self.run(test, on: store, clock: clock)
            #expect(mismatches.isEmpty, "\(table.name): \(test.description)\n\(mismatches.joined(separator: "\n"))")
        }
    }

    /// One of Go's tables that share a jar.
    struct Table: Sendable, CustomTestStringConvertible {
        let name: String
        let cases: [GoJarCase]
        init(_ name: String, _ cases: [GoJarCase]) { (self.name, self.cases) = (name, cases) }
        var testDescription: String { self.name }
    }

    /// Every deviation names a case that exists (a renamed case would silently drop it).
    @Test func everyDeviationNamesACase() {
        let all = GoJarCases.basics + GoJarCases.updateAndDelete + GoJarCases.expiration + GoJarCases.chromiumBasics
            + GoJarCases.chromiumDomain + GoJarCases.chromiumDeletion + GoJarCases.domainHandling
        #expect(all.count == 71)
        let names = Set(all.map(\.description))
        for name in Self.deviations.keys { #expect(names.contains(name), "\(name)") }
    }
}
