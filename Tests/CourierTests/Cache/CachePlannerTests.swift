import Foundation
import HTTPTypes
import Testing

@testable import Courier

/// Builds stored responses and requests for the cache's pure tests.
enum CacheFixtures {
    static let t0 = Date(timeIntervalSince1970: 1_700_000_000)
    static let url = URL(string: "http://h.test/r?x=1")!

    static func response(_ status: Int = 200, _ fields: [(String, String)] = []) -> HTTPResponse {
        var headerFields = HTTPFields()
        for (name, value) in fields { headerFields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
        return HTTPResponse(status: .init(code: status), headerFields: headerFields)
    }

    static func stored(_ fields: [(String, String)], status: Int = 200, at date: Date = t0, body: String = "body") -> CachedResponse {
        CachedResponse(response: self.response(status, fields), data: Data(body.utf8), url: self.url, requestDate: date, responseDate: date)
    }

    static func request(_ fields: [(String, String)] = [], method: HTTPRequest.Method = .get, url: URL = url) -> Request {
        var request = Request(method: method, url: url)
        for (name, value) in fields { request.headerFields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
        return request
    }
}

@Suite("Cache-Control directives")
struct CacheControlTests {
    @Test func parsesDirectives() {
        let control = CacheControl(fields: ["Max-Age=60, no-cache=\"Set-Cookie, X\", MUST-REVALIDATE", "private, max-stale, min-fresh=5"])
        #expect(control.maxAge == 60)
        #expect(control.noCache)
        #expect(control.mustRevalidate)
        #expect(control.isPrivate)
        #expect(control.maxStale == .some(nil))
        #expect(control.minFresh == 5)
        #expect(!control.noStore)
    }

    @Test func theFirstOccurrenceWinsAndBadNumbersMeanZero() {
        #expect(CacheControl(fields: ["max-age=10, max-age=20"]).maxAge == 10)
        #expect(CacheControl(fields: ["max-age=ten"]).maxAge == 0)
        #expect(CacheControl(fields: ["max-age=\"30\""]).maxAge == 30)
        #expect(CacheControl(fields: ["max-age=99999999999"]).maxAge == Int(Int32.max))
        #expect(CacheControl(fields: ["max-stale=7"]).maxStale == .some(7))
    }

    @Test func quotedCommasDoNotSplit() {
        let directives = CacheControl.directives("a=\"x, y\", b, c=\"q\\\"z\"")
        #expect(directives.map(\.0) == ["a", "b", "c"])
        #expect(directives[0].1 == "x, y")
        #expect(directives[2].1 == "q\"z")
    }
}

@Suite("Freshness (RFC 9111 4.2)")
struct CacheFreshnessTests {
    let t0 = CacheFixtures.t0

    func freshness(_ fields: [(String, String)], status: Int = 200, requestDate: Date? = nil, responseDate: Date? = nil, now: Date) -> CacheFreshness {
        let response = CacheFixtures.response(status, fields)
        return CacheFreshness(
            response: response, control: CacheControl(fields: response.headerFields[values: .cacheControl]),
            requestDate: requestDate ?? self.t0, responseDate: responseDate ?? self.t0, now: now)
    }

    @Test func maxAgeBeatsExpires() {
        let f = self.freshness([("Cache-Control", "max-age=60"), ("Expires", HTTPDate.format(t0.addingTimeInterval(600)))], now: t0.addingTimeInterval(30))
        #expect(f.lifetime == 60 && f.age == 30 && f.isFresh)
        #expect(!self.freshness([("Cache-Control", "max-age=60")], now: t0.addingTimeInterval(60)).isFresh)
    }

    @Test func expiresCountsFromTheDateField() {
        let date = t0.addingTimeInterval(-100)
        let f = self.freshness([("Date", HTTPDate.format(date)), ("Expires", HTTPDate.format(date.addingTimeInterval(300)))], now: t0)
        #expect(f.lifetime == 300)
        #expect(f.age == 100, "the apparent age: the response was already 100 s old on arrival")
        #expect(self.freshness([("Expires", "0")], now: t0).lifetime == 0, "an invalid Expires is in the past")
    }

    @Test func theLastModifiedHeuristic() {
        let modified = t0.addingTimeInterval(-10_000)
        let f = self.freshness([("Date", HTTPDate.format(t0)), ("Last-Modified", HTTPDate.format(modified))], now: t0)
        #expect(f.lifetime == 1000 && f.isHeuristic)
        let old = self.freshness([("Last-Modified", "Thu, 01 Jan 2015 00:00:00 GMT")], now: t0)
        #expect(old.lifetime == 7 * 86_400, "capped at a week")
        #expect(self.freshness([("Last-Modified", HTTPDate.format(modified))], status: 302, now: t0).lifetime == 0,
                "302 is not heuristically cacheable")
    }

    @Test func ageCountsTheAgeFieldAndTheDelay() {
        let f = self.freshness([("Age", "50"), ("Cache-Control", "max-age=100")], requestDate: t0.addingTimeInterval(-2), responseDate: t0,
                               now: t0.addingTimeInterval(10))
        #expect(f.age == 62, "Age + response delay + resident time")
    }
}

@Suite("Cache decisions (RFC 9111 and the four cache policies)")
struct CachePlannerTests {
    let t0 = CacheFixtures.t0

    func decide(_ request: Request = CacheFixtures.request(), stored: CachedResponse?, policy: RequestOptions.CachePolicy = .useProtocolCachePolicy,
                after seconds: TimeInterval) -> CacheDecision {
        CachePlanner.decide(request, stored: stored, policy: policy, now: t0.addingTimeInterval(seconds))
    }

    @Test func freshIsServedWithItsAge() throws {
        guard case .serve(let served) = self.decide(stored: CacheFixtures.stored([("Cache-Control", "max-age=60")]), after: 30) else {
            Issue.record("expected a hit")
            return
        }
        #expect(served.response.headerFields[.age] == "30")
        #expect(served.data == Data("body".utf8))
    }

    @Test func staleWithValidatorsIsRevalidated() throws {
        let stored = CacheFixtures.stored([("Cache-Control", "max-age=60"), ("ETag", "\"v1\""), ("Last-Modified", "Mon, 13 Nov 2023 00:00:00 GMT")])
        guard case .revalidate(_, let conditional) = self.decide(stored: stored, after: 61) else {
            Issue.record("expected a revalidation")
            return
        }
        #expect(conditional.headerFields[.ifNoneMatch] == "\"v1\"")
        #expect(conditional.headerFields[.ifModifiedSince] == "Mon, 13 Nov 2023 00:00:00 GMT")
        guard case .network(let mayStore) = self.decide(stored: CacheFixtures.stored([("Cache-Control", "max-age=60")]), after: 61) else {
            Issue.record("no validator: a plain request")
            return
        }
        #expect(mayStore)
    }

    @Test func noCacheResponsesAreAlwaysRevalidated() {
        let stored = CacheFixtures.stored([("Cache-Control", "no-cache, max-age=600"), ("ETag", "\"v\"")])
        guard case .revalidate = self.decide(stored: stored, after: 1) else {
            Issue.record("expected a revalidation")
            return
        }
    }

    /// A response's `Pragma: no-cache` counts as `no-cache` when it has no `Cache-Control` (as
    /// OkHttp and the browsers read it); a `Cache-Control` field decides alone.
    @Test func responsePragmaNoCacheWithoutCacheControlIsRevalidated() {
        let pragma = CacheFixtures.stored([("Expires", "Thu, 01 Jan 2099 00:00:00 GMT"), ("ETag", "\"v\""), ("Pragma", "no-cache")])
        if case .serve = self.decide(stored: pragma, after: 10) { Issue.record("Pragma: no-cache in the response wants a revalidation") }
        let withControl = CacheFixtures.stored([("Cache-Control", "max-age=600"), ("ETag", "\"v\""), ("Pragma", "no-cache")])
        guard case .serve = self.decide(stored: withControl, after: 10) else {
            Issue.record("Cache-Control decides over Pragma")
            return
        }
    }

    @Test func requestDirectives() {
        let stored = CacheFixtures.stored([("Cache-Control", "max-age=600"), ("ETag", "\"v\"")])
        if case .serve = self.decide(CacheFixtures.request([("Cache-Control", "max-age=0")]), stored: stored, after: 10) {
            Issue.record("max-age=0 wants a revalidation")
        }
        if case .serve = self.decide(CacheFixtures.request([("Cache-Control", "no-cache")]), stored: stored, after: 10) {
            Issue.record("no-cache wants a revalidation")
        }
        if case .serve = self.decide(CacheFixtures.request([("Pragma", "no-cache")]), stored: stored, after: 10) {
            Issue.record("Pragma: no-cache without Cache-Control wants a revalidation")
        }
        if case .serve = self.decide(CacheFixtures.request([("Cache-Control", "min-fresh=595")]), stored: stored, after: 10) {
            Issue.record("min-fresh wants more freshness left")
        }
        guard case .serve = self.decide(CacheFixtures.request([("Cache-Control", "max-age=20")]), stored: stored, after: 10) else {
            Issue.record("a 10 s old response satisfies max-age=20")
            return
        }
        guard case .network(let mayStore) = self.decide(CacheFixtures.request([("Cache-Control", "no-store")]), stored: stored, after: 10) else {
            Issue.record("no-store bypasses the cache")
            return
        }
        #expect(!mayStore)
    }

    @Test func maxStaleAcceptsStaleUnlessMustRevalidate() {
        let stale = CacheFixtures.stored([("Cache-Control", "max-age=60"), ("ETag", "\"v\"")])
        guard case .serve = self.decide(CacheFixtures.request([("Cache-Control", "max-stale=100")]), stored: stale, after: 100) else {
            Issue.record("40 s stale is within max-stale=100")
            return
        }
        if case .serve = self.decide(CacheFixtures.request([("Cache-Control", "max-stale=10")]), stored: stale, after: 100) {
            Issue.record("40 s stale is beyond max-stale=10")
        }
        guard case .serve = self.decide(CacheFixtures.request([("Cache-Control", "max-stale")]), stored: stale, after: 100_000) else {
            Issue.record("max-stale without a value accepts any staleness")
            return
        }
        let strict = CacheFixtures.stored([("Cache-Control", "max-age=60, must-revalidate"), ("ETag", "\"v\"")])
        if case .serve = self.decide(CacheFixtures.request([("Cache-Control", "max-stale")]), stored: strict, after: 100) {
            Issue.record("must-revalidate forbids serving stale")
        }
    }

    @Test func onlyIfCached() {
        let request = CacheFixtures.request([("Cache-Control", "only-if-cached")])
        guard case .gatewayTimeout = self.decide(request, stored: nil, after: 0) else {
            Issue.record("nothing stored: 504")
            return
        }
        let stale = CacheFixtures.stored([("Cache-Control", "max-age=60"), ("ETag", "\"v\"")])
        guard case .gatewayTimeout = self.decide(request, stored: stale, after: 100) else {
            Issue.record("stale and no max-stale: 504, never the network")
            return
        }
        guard case .serve = self.decide(request, stored: stale, after: 10) else {
            Issue.record("fresh: served")
            return
        }
        // A request that would go to the network whatever is stored (not a GET, no-store, its
        // own conditionals or range) gets the 504 too, as OkHttp's: before, it went out.
        let fresh = CacheFixtures.stored([("Cache-Control", "max-age=600"), ("ETag", "\"v\"")])
        let bypassing = [
            CacheFixtures.request([("Cache-Control", "only-if-cached")], method: .head),
            CacheFixtures.request([("Cache-Control", "no-store, only-if-cached")]),
            CacheFixtures.request([("Cache-Control", "only-if-cached"), ("If-None-Match", "\"x\"")]),
            CacheFixtures.request([("Cache-Control", "only-if-cached"), ("Range", "bytes=0-9")]),
        ]
        for request in bypassing {
            for stored in [nil, fresh] {
                guard case .gatewayTimeout = self.decide(request, stored: stored, after: 10) else {
                    Issue.record("\(request.method) \(request.headerFields): 504, never the network")
                    continue
                }
            }
        }
    }

    @Test func theFourPolicies() {
        let stale = CacheFixtures.stored([("Cache-Control", "no-cache, max-age=0"), ("ETag", "\"v\"")])
        guard case .network(let mayStore) = self.decide(stored: stale, policy: .reloadIgnoringLocalCacheData, after: 0), mayStore else {
            Issue.record("reload: to the network, and the response is stored")
            return
        }
        guard case .serve = self.decide(stored: stale, policy: .returnCacheDataElseLoad, after: 1_000_000) else {
            Issue.record("returnCacheDataElseLoad: anything stored, however old")
            return
        }
        guard case .network = self.decide(stored: nil, policy: .returnCacheDataElseLoad, after: 0) else {
            Issue.record("returnCacheDataElseLoad without an entry: load")
            return
        }
        guard case .serve = self.decide(stored: stale, policy: .returnCacheDataDontLoad, after: 1_000_000) else {
            Issue.record("returnCacheDataDontLoad: anything stored")
            return
        }
        guard case .unavailable = self.decide(stored: nil, policy: .returnCacheDataDontLoad, after: 0) else {
            Issue.record("returnCacheDataDontLoad without an entry: fails")
            return
        }
    }

    @Test func onlyGETIsAnsweredAndCallerConditionalsPassThrough() {
        let fresh = CacheFixtures.stored([("Cache-Control", "max-age=600")])
        guard case .network(false) = self.decide(CacheFixtures.request(method: .post), stored: fresh, after: 0) else {
            Issue.record("POST goes to the network and is not stored")
            return
        }
        guard case .network(true) = self.decide(CacheFixtures.request([("If-None-Match", "\"mine\"")]), stored: fresh, after: 0) else {
            Issue.record("the caller's own conditional request is the caller's")
            return
        }
        guard case .network = self.decide(CacheFixtures.request([("Range", "bytes=0-1")]), stored: fresh, after: 0) else {
            Issue.record("a range request is not answered from a whole response")
            return
        }
    }

    @Test func storability() {
        let get = CacheFixtures.request()
        func storable(_ status: Int, _ fields: [(String, String)], _ request: Request = CacheFixtures.request()) -> Bool {
            CachePlanner.isStorable(CacheFixtures.response(status, fields), for: request)
        }
        #expect(storable(200, [("Cache-Control", "max-age=60")]))
        #expect(storable(200, [("ETag", "\"v\"")]), "revalidatable")
        #expect(storable(200, [("Last-Modified", "Mon, 13 Nov 2023 00:00:00 GMT")]))
        #expect(storable(200, []), "a 200 without a lifetime or a validator: the returnCacheData policies use it")
        #expect(!storable(200, [("Cache-Control", "no-store, max-age=60")]))
        #expect(!storable(200, [("Cache-Control", "max-age=60")], CacheFixtures.request([("Cache-Control", "no-store")])))
        #expect(!storable(200, [("Cache-Control", "max-age=60"), ("Vary", "Accept, *")]))
        #expect(!storable(206, [("Cache-Control", "max-age=60")]))
        #expect(!storable(304, [("Cache-Control", "max-age=60")]))
        #expect(!storable(302, [("ETag", "\"v\"")]), "302 needs explicit freshness")
        for status in [301, 302, 303, 307, 308] {
            let response = CacheFixtures.response(status, [("Cache-Control", "max-age=60"), ("Location", "/x")])
            #expect(CachePlanner.isStorable(response, for: get), "\(status): a redirect is stored like any other response")
        }
        #expect(!CachePlanner.isStorable(CacheFixtures.response(302, [("Location", "/x")]), for: get),
                "a 302 without explicit freshness, as any status that is not heuristically cacheable")
        #expect(CachePlanner.isStorable(CacheFixtures.response(301, [("Location", "/x")]), for: get),
                "301 is heuristically cacheable")
        #expect(CachePlanner.isStorable(CacheFixtures.response(308, [("Location", "/x")]), for: get),
                "308 is heuristically cacheable")
        #expect(storable(300, [("Cache-Control", "max-age=60")]))
        #expect(storable(404, [("Last-Modified", "Mon, 13 Nov 2023 00:00:00 GMT")]))
        #expect(!storable(200, [("Cache-Control", "max-age=60")], CacheFixtures.request(method: .post)))
    }

    @Test func a304UpdatesTheStoredHeaders() {
        let stored = CacheFixtures.stored([("Cache-Control", "max-age=60"), ("ETag", "\"v\""), ("Content-Length", "4"), ("X-Old", "1")])
        let notModified = CacheFixtures.response(304, [("Cache-Control", "max-age=120"), ("ETag", "\"v\""), ("Content-Length", "0"), ("X-New", "2")])
        let later = t0.addingTimeInterval(500)
        let updated = CachePlanner.updated(stored, with: notModified, requestDate: later, responseDate: later)
        #expect(updated.response.status.code == 200)
        #expect(updated.response.headerFields[.cacheControl] == "max-age=120")
        #expect(updated.response.headerFields[.contentLength] == "4", "the length is the stored body's")
        #expect(updated.response.headerFields[HTTPField.Name("X-Old")!] == "1")
        #expect(updated.response.headerFields[HTTPField.Name("X-New")!] == "2")
        #expect(updated.data == stored.data)
        #expect(updated.responseDate == later)
        guard case .serve = CachePlanner.decide(CacheFixtures.request(), stored: updated, policy: .useProtocolCachePolicy, now: later.addingTimeInterval(100)) else {
            Issue.record("fresh again for 120 s from the 304")
            return
        }
    }

    /// A response stored with the age a shared cache gave it is fresh for its whole lifetime
    /// again after a 304 without `Age`: the origin validated it now (RFC 9111 5.1). Before, the
    /// stored `Age` stayed, and the entry went stale again 100 s later.
    @Test func a304WithoutAgeMakesTheStoredResponseNew() {
        let stored = CacheFixtures.stored([("Cache-Control", "max-age=3600"), ("Age", "3500"), ("ETag", "\"v\"")])
        let later = t0.addingTimeInterval(200)
        let updated = CachePlanner.updated(stored, with: CacheFixtures.response(304, [("ETag", "\"v\"")]), requestDate: later, responseDate: later)
        #expect(updated.response.headerFields[.age] == nil)
        guard case .serve = CachePlanner.decide(CacheFixtures.request(), stored: updated, policy: .useProtocolCachePolicy, now: later.addingTimeInterval(300)) else {
            Issue.record("fresh for an hour from the 304")
            return
        }
        // A 304 from a cache on the way says its own age, which replaces the stored one.
        let aged = CachePlanner.updated(stored, with: CacheFixtures.response(304, [("Age", "60")]), requestDate: later, responseDate: later)
        #expect(aged.response.headerFields[.age] == "60")
    }

    /// A 304 without `Date` to a stored response with one: the updated response is dated when the
    /// 304 came (RFC 9110 6.6.1), so it is fresh for its `max-age` from then, not stale at once by
    /// the age of the first response's `Date`.
    @Test func a304WithoutDateDatesTheUpdatedResponseNow() {
        let stored = CacheFixtures.stored([("Cache-Control", "max-age=600"), ("Date", HTTPDate.format(t0)), ("ETag", "\"v\"")])
        let later = t0.addingTimeInterval(700)
        let updated = CachePlanner.updated(stored, with: CacheFixtures.response(304, [("ETag", "\"v\"")]), requestDate: later, responseDate: later)
        #expect(updated.response.headerFields[.date] == HTTPDate.format(later))
        guard case .serve = CachePlanner.decide(CacheFixtures.request(), stored: updated, policy: .useProtocolCachePolicy, now: later.addingTimeInterval(60)) else {
            Issue.record("fresh for ten minutes from the 304")
            return
        }
        // A 304 with its own `Date` keeps it.
        let dated = CachePlanner.updated(
            stored, with: CacheFixtures.response(304, [("Date", HTTPDate.format(later.addingTimeInterval(-5)))]), requestDate: later, responseDate: later)
        #expect(dated.response.headerFields[.date] == HTTPDate.format(later.addingTimeInterval(-5)))
    }

    @Test func unsafeMethodsInvalidate() {
        let post = CacheFixtures.request(method: .post)
        let urls = CachePlanner.invalidatedURLs(
            by: CacheFixtures.response(201, [("Location", "/items/7"), ("Content-Location", "http://elsewhere.test/x")]), to: post)
        #expect(urls.map(\.absoluteString) == ["http://h.test/r?x=1", "http://h.test/items/7"], "another origin is not invalidated")
        #expect(CachePlanner.invalidatedURLs(by: CacheFixtures.response(500), to: post).isEmpty, "a failure invalidates nothing")
        #expect(CachePlanner.invalidatedURLs(by: CacheFixtures.response(200), to: CacheFixtures.request()).isEmpty, "GET is safe")
        #expect(CachePlanner.invalidatedURLs(by: CacheFixtures.response(204), to: CacheFixtures.request(method: .delete)).count == 1)
    }
}
