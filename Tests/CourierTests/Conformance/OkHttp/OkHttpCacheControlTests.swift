import Foundation
import HTTPTypes
import Testing

@testable import Courier

/// OkHttp's `Cache-Control` tests (`okhttp/src/jvmTest/kotlin/okhttp3/CacheControlTest.kt` and
/// `CacheControlJvmTest.kt`, Apache 2.0), against ``CacheControl`` (the directives of a message's
/// `Cache-Control` fields) and, where a directive changes what the cache does, ``CachePlanner``.
/// Each test keeps OkHttp's name.
///
/// Not ported: OkHttp's `CacheControl.Builder` and `toString()` are its own API for writing a
/// request's `Cache-Control`; Courier's callers write the field itself and Courier keeps no
/// header value to give back. So `emptyBuilderIsEmpty`, `completeBuilder` (in both files),
/// `computedHeaderValueIsCached`, `timeDurationTruncatedToMaxValue`, `secondsMustBeNonNegative`,
/// `timePrecisionIsTruncatedToSeconds` and `parseCacheControlHeaderValueIsRetained` (the
/// retained string's identity) have no twin. The parse tests that check `toString()` check the
/// directives read instead.
///
/// Where Courier answers otherwise on purpose, the test asserts Courier's answer:
/// - `Pragma` is read only for `no-cache`, and only without a `Cache-Control` field (RFC 9111
///   5.4 defines no other pragma); OkHttp reads every `Pragma` value as `Cache-Control`
///   directives (`parseCacheControlAndPragmaAreCombined`, `…InvalidatedByPragma`,
///   `parsePragmaHeaderValueIsNotRetained`).
@Suite("OkHttp's Cache-Control tests")
struct OkHttpCacheControlTests {
    static let t0 = CacheFixtures.t0

    /// What the planner does with `stored` (stored at `t0`, seen `after` seconds later) for a GET
    /// with `requestFields`: `serve`, `revalidate`, `network`, `network, no store`, or `504`.
    static func decision(_ responseFields: [(String, String)], _ requestFields: [(String, String)] = [], after seconds: TimeInterval)
        -> String
    {
        let stored = CacheFixtures.stored(responseFields + [("ETag", "\"v1\"")])
        switch CachePlanner.decide(CacheFixtures.request(requestFields), stored: stored, policy: .useProtocolCachePolicy, now: Self.t0 + seconds) {
        case .serve: return "serve"
        case .revalidate: return "revalidate"
        case .network(let mayStore): return mayStore ? "network" : "network, no store"
        case .unavailable: return "unavailable"
        case .gatewayTimeout: return "504"
        }
    }

    static func isStorable(_ responseFields: [(String, String)], status: Int = 200, _ requestFields: [(String, String)] = []) -> Bool {
        CachePlanner.isStorable(CacheFixtures.response(status, responseFields), for: CacheFixtures.request(requestFields))
    }

    @Test func parseEmpty() {
        let control = CacheControl(fields: [""])
        #expect(control == CacheControl())
        #expect(!control.noCache && !control.noStore && !control.isPrivate && !control.isPublic && !control.mustRevalidate)
        #expect(control.maxAge == nil && control.sharedMaxAge == nil && control.maxStale == nil && control.minFresh == nil)
        #expect(!control.onlyIfCached && !control.noTransform && !control.immutable)
    }

    @Test func parse() {
        let header =
            "no-cache, no-store, max-age=1, s-maxage=2, private, public, must-revalidate, max-stale=3, min-fresh=4, only-if-cached, no-transform"
        let control = CacheControl(fields: [header])
        #expect(control.noCache)
        #expect(control.noStore)
        #expect(control.maxAge == 1)
        #expect(control.sharedMaxAge == 2)
        #expect(control.isPrivate)
        #expect(control.isPublic)
        #expect(control.mustRevalidate)
        #expect(control.maxStale == .some(3))
        #expect(control.minFresh == 4)
        #expect(control.onlyIfCached)
        #expect(control.noTransform)
        #expect(!control.immutable)
        // What the directives do: the response is not stored, the request neither stores nor
        // takes what is stored, and, since it also says only-if-cached, it may not go to the
        // network either: a 504 (OkHttp's `CacheStrategy.compute()`: a candidate that needs the
        // network under only-if-cached is `CacheStrategy(null, null)`).
        #expect(!Self.isStorable([("Cache-Control", header)]))
        #expect(!Self.isStorable([("Cache-Control", "max-age=60")], [("Cache-Control", header)]))
        #expect(Self.decision([("Cache-Control", "max-age=60")], [("Cache-Control", header)], after: 0) == "504")
        let withoutOnlyIfCached = header.replacingOccurrences(of: ", only-if-cached", with: "")
        #expect(Self.decision([("Cache-Control", "max-age=60")], [("Cache-Control", withoutOnlyIfCached)], after: 0) == "network, no store")
    }

    /// An extension directive with a quoted value (RFC 2616 14.9.6's example) is read past.
    @Test func parseIgnoreCacheControlExtensions() {
        let control = CacheControl(fields: [#"private, community="UCI""#])
        var expected = CacheControl()
        expected.isPrivate = true
        #expect(control == expected)
        // `private` is explicit caching information: a 500 with it is stored.
        #expect(Self.isStorable([("Cache-Control", #"private, community="UCI""#)], status: 500))
        #expect(!Self.isStorable([], status: 500))
    }

    /// OkHttp reads `Pragma`'s values as `Cache-Control` directives. Courier reads `Pragma` only
    /// for `no-cache`, and only without a `Cache-Control` field (RFC 9111 5.4, which defines no
    /// other pragma): here `max-age=12` alone counts.
    @Test func parseCacheControlAndPragmaAreCombined() {
        let fields = [("Cache-Control", "max-age=12"), ("Pragma", "must-revalidate"), ("Pragma", "public")]
        let response = CacheFixtures.response(200, fields)
        var expected = CacheControl()
        expected.maxAge = 12
        #expect(CacheControl(fields: response.headerFields[values: .cacheControl]) == expected)  // OkHttp: also public, must-revalidate
        #expect(!CachePlanner.hasPragmaNoCache(response.headerFields))
        // Stale and asked for with max-stale: served, as `must-revalidate` came only in `Pragma`
        // (OkHttp: revalidated).
        #expect(Self.decision(fields, [("Cache-Control", "max-stale=60")], after: 20) == "serve")
    }

    @Test func parseCacheControlHeaderValueInvalidatedByPragma() {
        let fields = [("Cache-Control", "max-age=12"), ("Pragma", "must-revalidate")]
        var expected = CacheControl()
        expected.maxAge = 12
        #expect(CacheControl(fields: CacheFixtures.response(200, fields).headerFields[values: .cacheControl]) == expected)  // OkHttp: also must-revalidate
        #expect(Self.decision(fields, [("Cache-Control", "max-stale=60")], after: 20) == "serve")  // OkHttp: revalidated
    }

    /// Two `Cache-Control` fields: the directives of both count.
    @Test func parseCacheControlHeaderValueInvalidatedByTwoValues() {
        let fields = [("Cache-Control", "max-age=12"), ("Cache-Control", "must-revalidate")]
        var expected = CacheControl()
        expected.maxAge = 12
        expected.mustRevalidate = true
        #expect(CacheControl(fields: CacheFixtures.response(200, fields).headerFields[values: .cacheControl]) == expected)
        #expect(Self.decision(fields, after: 10) == "serve")
        #expect(Self.decision(fields, [("Cache-Control", "max-stale=60")], after: 20) == "revalidate")
    }

    /// `Pragma: must-revalidate` alone: OkHttp reads `must-revalidate`; Courier reads no
    /// directive (RFC 9111 5.4 gives `Pragma` only `no-cache`).
    @Test func parsePragmaHeaderValueIsNotRetained() {
        let fields = [("Pragma", "must-revalidate"), ("Expires", HTTPDate.format(Self.t0 + 12))]
        #expect(CacheControl(fields: CacheFixtures.response(200, fields).headerFields[values: .cacheControl]) == CacheControl())
        #expect(!CachePlanner.hasPragmaNoCache(CacheFixtures.response(200, fields).headerFields))
        #expect(Self.decision(fields, [("Cache-Control", "max-stale=60")], after: 20) == "serve")  // OkHttp: revalidated
        // `Pragma: no-cache` is the pragma Courier reads.
        #expect(Self.decision([("Pragma", "no-cache"), ("Expires", HTTPDate.format(Self.t0 + 12))], after: 5) == "revalidate")
    }
}
