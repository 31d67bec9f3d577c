import Foundation
import HTTPTypes
import Testing

@testable import Courier

/// RFC 9111 as written, where the cache's pure rules used to be lenient: HTTP-dates, `Age`, the
/// fields a cache does not store, `must-understand`, `Vary`'s normalization.
@Suite("RFC 9111 details")
struct RFC9111DetailTests {
    let t0 = CacheFixtures.t0

    func freshness(_ fields: [(String, String)], now: Date? = nil) -> CacheFreshness {
        let response = CacheFixtures.response(200, fields)
        return CacheFreshness(
            response: response, control: CacheControl(fields: response.headerFields[values: .cacheControl]),
            requestDate: self.t0, responseDate: self.t0, now: now ?? self.t0)
    }

    // MARK: 5.2 and 5.4: the directives' list

    /// A `"` opens a quoted string only at a value's start (RFC 9110 5.6.4), a comma or quote
    /// followed by a combining mark still delimits, and `Pragma` is read as a list of directives,
    /// not searched for text (helper 67's reading of `CacheControl`, each failing before).
    @Test func directivesAreReadByTheListGrammar() {
        let names = { (field: String) in CacheControl.directives(field).map(\.0) }
        #expect(names(#"private, community=UCI", no-store"#) == ["private", "community", "no-store"])
        #expect(names("max-age=5,\u{301} no-store") == ["max-age", "\u{301} no-store"].map { $0.trimmingSpaces() })
        #expect(CacheControl.directives(#"private="a, b"\u{301}, no-store"#).map(\.0) == ["private", "no-store"])
        #expect(CacheControl.directives(#"private="a, b""#).first?.1 == "a, b")
        #expect(CacheControl(fields: [#"public, x=a"b, no-store"#]).noStore)
        let pragma = { (value: String) in CachePlanner.hasPragmaNoCache(CacheFixtures.response(200, [("Pragma", value)]).headerFields) }
        #expect(pragma("no-cache") && pragma("x-foo, No-Cache"))
        #expect(!pragma("x-no-cache-please") && !pragma(#"x="no-cache""#))
    }

    // MARK: 4.2.1: Expires and Date are HTTP-dates

    @Test(arguments: [
        "Sun, 06 Nov 94 08:49:37 GMT",  // two-digit year
        "Thu, 01 Dec 2094 16:00:00 UTC",  // another zone
        "Thu 01 Dec 2094 16:00:00 GMT",  // no comma
        "Thu, 01 Dec 2094 160000 GMT",  // no colons
        "Thu, 01 Dec 2094  16:00:00 GMT",  // an extra space
        "Thu, 01-Dec-2094 16:00:00 GMT",
    ])
    func anExpiresThatIsNoHTTPDateHasExpired(_ expires: String) {
        let f = self.freshness([("Expires", expires)])
        #expect(f.lifetime == 0 && !f.isFresh, "\(expires)")
    }

    /// "Although all date formats are specified to be case-sensitive, a cache recipient SHOULD
    /// match the field value case-insensitively" (4.2); cache-tests' `freshness-expires-wrong-case-*`.
    @Test(arguments: ["THU, 01 DEC 2094 16:00:00 GMT", "Thu, 01 Dec 2094 16:00:00 gMT", "thu, 01 dec 2094 16:00:00 gmt"])
    func anExpiresInAnotherCaseIsRead(_ expires: String) {
        let f = self.freshness([("Date", "Tue, 01 Dec 2094 15:00:00 GMT"), ("Expires", expires)])
        #expect(f.lifetime == 3600, "\(expires)")
    }

    @Test func twoExpiresFieldsHaveExpired() {
        let future = HTTPDate.format(self.t0.addingTimeInterval(3600))
        #expect(self.freshness([("Expires", future)]).isFresh)
        #expect(!self.freshness([("Expires", future), ("Expires", future)]).isFresh)
    }

    @Test func theObsoleteFormsAreRead() {
        // 2094-12-01 16:00:00 GMT in both obsolete forms, against a response dated 2094-12-01 15:00.
        let date = ("Date", "Tue, 01 Dec 2094 15:00:00 GMT")
        #expect(self.freshness([date, ("Expires", "Tue Dec  1 16:00:00 2094")]).lifetime == 3600)
        #expect(self.freshness([("Date", "Tuesday, 01-Dec-26 15:00:00 GMT"), ("Expires", "Tuesday, 01-Dec-26 16:00:00 GMT")]).lifetime == 3600)
    }

    @Test func anInvalidDateIsAsGoodAsNone() {
        // The Date field would make the response 100 s old on arrival; an invalid one is ignored.
        let valid = self.freshness([("Date", HTTPDate.format(self.t0.addingTimeInterval(-100))), ("Cache-Control", "max-age=60")])
        #expect(valid.age == 100)
        let invalid = self.freshness([("Date", "yesterday"), ("Cache-Control", "max-age=60")])
        #expect(invalid.age == 0 && invalid.isFresh)
    }

    // MARK: 4.2.3: Age

    @Test func ageIsANonNegativeIntegerOrNothing() {
        func age(_ values: String...) -> Int? {
            var fields = HTTPFields()
            for value in values { fields.append(HTTPField(name: .age, value: value)) }
            return CacheFreshness.age(of: fields)
        }
        #expect(age("7200") == 7200)
        #expect(age(" 30 ") == 30)
        #expect(age("30, 60") == 30, "a list: the first member")
        #expect(age("30", "60") == 30, "a repeated field: the first")
        #expect(age("99999999999") == Int(Int32.max))
        #expect(age("7200.0") == nil)
        #expect(age("10s") == nil)
        #expect(age("-5") == nil)
        #expect(age("") == nil)
        #expect(age() == nil)
    }

    @Test func aMalformedAgeChangesNothing() {
        let control = ("Cache-Control", "max-age=3600")
        #expect(self.freshness([control, ("Age", "7200.0")]) == self.freshness([control]))
        #expect(self.freshness([control, ("Age", "7200s")]) == self.freshness([control]))
        #expect(self.freshness([control, ("Age", "7200")]).age == 7200)
    }

    // MARK: 3.1: fields a cache does not store

    @Test func theConnectionsAndTheProxysFieldsAreNotStored() {
        let response = CacheFixtures.response(200, [
            ("Cache-Control", "max-age=60"), ("Connection", "close, X-Hop"), ("X-Hop", "1"), ("Keep-Alive", "timeout=5"),
            ("Proxy-Authenticate", "Basic realm=\"p\""), ("Proxy-Authentication-Info", "nextnonce=\"n\""),
            ("Proxy-Connection", "keep-alive"), ("Upgrade", "h2c"), ("X-Kept", "yes"),
        ])
        let stored = CachePlanner.storable(response)
        #expect(stored.headerFields.map(\.name.canonicalName).sorted() == ["cache-control", "x-kept"])
        let plain = CacheFixtures.response(200, [("Cache-Control", "max-age=60")])
        #expect(CachePlanner.storable(plain) == plain)
    }

    @Test func a304DoesNotBringThemIn() {
        let stored = CacheFixtures.stored([("Cache-Control", "max-age=60"), ("ETag", "\"v\"")])
        let notModified = CacheFixtures.response(304, [
            ("Cache-Control", "max-age=120"), ("Proxy-Authenticate", "Basic realm=\"p\""), ("Connection", "X-Hop"), ("X-Hop", "1"),
            ("Keep-Alive", "timeout=5"), ("X-New", "2"),
        ])
        let updated = CachePlanner.updated(stored, with: notModified, requestDate: self.t0, responseDate: self.t0)
        #expect(updated.response.headerFields.map(\.name.canonicalName).sorted() == ["cache-control", "etag", "x-new"])
        #expect(updated.response.headerFields[.cacheControl] == "max-age=120")
    }

    // MARK: 5.2.2.3: must-understand

    @Test func mustUnderstandStoresAnUnderstoodStatusDespiteNoStore() {
        func storable(_ status: Int, _ control: String) -> Bool {
            CachePlanner.isStorable(CacheFixtures.response(status, [("Cache-Control", control)]), for: CacheFixtures.request())
        }
        #expect(storable(200, "max-age=60, must-understand, no-store"))
        #expect(storable(404, "max-age=60, must-understand, no-store"))
        #expect(!storable(200, "max-age=60, no-store"))
        #expect(!storable(299, "max-age=60, must-understand"), "a status the cache does not know: not stored")
        #expect(!storable(299, "max-age=60, must-understand, no-store"))
        #expect(storable(299, "max-age=60"), "explicit freshness stores any final status")
    }

    // MARK: 4.1: Vary

    @Test func varyValuesAreComparedNormalized() {
        func value(_ name: String, _ values: String...) -> String? {
            let request = CacheFixtures.request(values.map { (name, $0) })
            return CacheEntry.varying([name.lowercased()], of: request).first?.value
        }
        #expect(value("Accept-Language", "en-US,  fr") == value("Accept-Language", "EN-us , FR"))
        #expect(value("Accept-Language", "en-US", "fr") == value("Accept-Language", "en-us, fr"))
        #expect(value("Accept-Encoding", "GZIP,br") == "gzip, br")
        #expect(value("X-Custom", "A  b") == "A b", "runs of spaces are one")
        #expect(value("X-Custom", "A") != value("X-Custom", "a"), "other fields keep their case")
        #expect(value("Accept-Language", "en") != value("Accept-Language", "fr"))
    }

    @Test func aStoredVariantIsSelectedByANormalizedEqualRequest() {
        let response = CacheFixtures.response(200, [("Cache-Control", "max-age=60"), ("Vary", "Accept-Language")])
        let stored = CacheEntry.varying(CacheEntry.varyNames(of: response), of: CacheFixtures.request([("Accept-Language", "en-US, fr")]))
        #expect(CacheEntry.varying(stored, select: CacheFixtures.request([("Accept-Language", "EN-US,fr")])))
        #expect(!CacheEntry.varying(stored, select: CacheFixtures.request([("Accept-Language", "fr, en-US")])), "order matters")
    }

    /// `Vary: *` is found at the commas' bytes (`*,` and a combining mark is one `Character`),
    /// and a member that is no field name is as `*`: neither is stored (stored, it matched every
    /// request). Names split the same way.
    @Test func aVaryStarOrAMemberThatIsNoFieldNameIsNotStored() {
        let storable = { (vary: String) in
            CachePlanner.isStorable(CacheFixtures.response(200, [("Cache-Control", "max-age=60"), ("Vary", vary)]), for: CacheFixtures.request())
        }
        #expect(storable("Accept-Language, Accept-Encoding") && storable("Accept-Language,"))
        #expect(!storable("*"))
        #expect(!storable("Accept,*,\u{301}"))
        #expect(!storable("Accept, a b"))
        #expect(!storable("Accept-Language,\u{301}"))
        let names = CacheEntry.varyNames(of: CacheFixtures.response(200, [("Vary", "Accept-Language,\u{301}Accept")]))
        #expect(names == ["accept-language", "\u{301}accept"])
    }

    // MARK: 3: stored redirects

    @Test func aFreshStoredRedirectAnswersEveryRequestAndAStaleOneNeedsTheNetwork() {
        let stored = CacheFixtures.stored([("Cache-Control", "max-age=600"), ("Location", "/x"), ("ETag", "\"r\"")], status: 301)
        let request = CacheFixtures.request()
        let later = self.t0.addingTimeInterval(10)
        for follows in [false, true] {
            guard case .serve(let served) = CachePlanner.decide(request, stored: stored, policy: .useProtocolCachePolicy, now: later, followsRedirects: follows)
            else {
                Issue.record("a fresh 301 answers the request (follows redirects: \(follows))")
                continue
            }
            #expect(served.response.status.code == 301)
        }
        guard case .serve = CachePlanner.decide(request, stored: stored, policy: .returnCacheDataElseLoad, now: later) else {
            Issue.record("a policy that serves stale responses answers with the stored redirect, which the session follows")
            return
        }
        let stale = self.t0.addingTimeInterval(700)
        guard case .revalidate = CachePlanner.decide(request, stored: stored, policy: .useProtocolCachePolicy, now: stale, followsRedirects: false) else {
            Issue.record("a stale redirect with a validator is revalidated for a request that takes it as its response")
            return
        }
        guard case .network(mayStore: true) = CachePlanner.decide(request, stored: stored, policy: .useProtocolCachePolicy, now: stale) else {
            Issue.record("a stale redirect is not revalidated for a request that follows it: a 304 would end the task at the redirect")
            return
        }
    }
}
