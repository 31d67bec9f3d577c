// The HTTP caching tests (cache-tests, https://github.com/http-tests/cache-tests), Copyright (c)
// 2018, Mark Nottingham, BSD 3-Clause License; see CacheTestsHarness.swift.
//
// `cache-tests.json` was exported from a checkout of cache-tests at b55b8bd with Node 20:
//   node --input-type=module -e '
//     import tests from "./tests/index.mjs"
//     const lines = ["["]
//     tests.forEach((suite, s) => {
//       const { tests: cases, ...rest } = suite
//       lines.push(" " + JSON.stringify(rest).slice(0, -1) + ", \"tests\": [")
//       cases.forEach((test, t) => lines.push("  " + JSON.stringify(test) + (t < cases.length - 1 ? "," : "")))
//       lines.push(" ]}" + (s < tests.length - 1 ? "," : ""))
//     })
//     lines.push("]")
//     console.log(lines.join("\n"))' > cache-tests.json

import CourierTesting
import Foundation
import Testing

/// The HTTP caching test suite behind cache-tests.fyi, run against Courier's ``ResponseCache``
/// as the suite runs against a browser: each test's requests go through a session with a cache
/// of its own to the suite's server (rewritten in Swift, on a ``ScriptedHTTPServer``), whose
/// dates and the cache's clock step by three seconds where the suite pauses.
///
/// Every test the suite runs against a browser runs; those Courier cannot run say why
/// (``CacheTest/notApplicable``). A test passes unless ``CacheTestsSuiteTests/expected`` says
/// otherwise, with the reason; a listed test that passes fails the suite too, so that the list
/// stays true. `required` tests are the specification's MUSTs; `optimal` ones what a good cache
/// does; `check` ones how a cache behaves, where the specification leaves it free. With
/// `COURIER_CACHE_TESTS_RESULTS` set to a directory, each suite's results are written there in
/// the format of cache-tests' `results/*.json`, to compare with a browser's.
@Suite("Conformance: cache-tests (HTTP caching)")
struct CacheTestsSuiteTests {
    /// The tests that do not pass, with the result each has and why Courier differs.
    static let expected: [String: (result: String, why: String)] = [
        "headers-store-Transfer-Encoding": ("failed", "the response's transfer coding is one nobody knows: Courier, like Go's net/http, fails such a response (RFC 9112 6.1, 7.4) instead of reading it to the connection's end; the field is never stored (CachePlanner.fieldsNotStored)"),
        "partial-use-headers": ("setup failed", "Courier stores no 206 (partial content), as URLSession and OkHttp; the test needs a stored one"),
        "partial-use-stored-headers": ("setup failed", "Courier stores no 206 (partial content), as URLSession and OkHttp; the test needs a stored one"),
        "stale-close-must-revalidate": ("failed", "Courier does not serve the stale response (the test's point): the request fails with connectionClosed where a proxy would make a 504; the harness wants a response (browsers fail it alike)"),
        "stale-close-no-cache": ("failed", "Courier does not serve the stale response (the test's point): the request fails with connectionClosed where a proxy would make a 504; the harness wants a response (browsers fail it alike)"),
        "stale-while-revalidate-window": ("setup failed", "needs stale-while-revalidate (RFC 5861), which Courier does not implement (nor URLSession or OkHttp)"),
        "stale-while-revalidate": ("failed", "stale-while-revalidate (RFC 5861) is not implemented: it needs a revalidation that outlives the request, which no caller would await (URLSession and OkHttp do not have it either)"),
        "method-POST": ("failed", "a POST's response is not reused for a GET of its Content-Location (no browser does)"),
        "partial-store-complete-reuse-partial": ("failed", "ranges are not served from a stored complete response"),
        "partial-store-complete-reuse-partial-no-last": ("failed", "ranges are not served from a stored complete response"),
        "partial-store-complete-reuse-partial-suffix": ("failed", "ranges are not served from a stored complete response"),
        "partial-store-partial-complete": ("failed", "partial content is not stored, so not completed with a Range request"),
        "partial-store-partial-reuse-partial": ("failed", "partial content (206) is not stored"),
        "partial-store-partial-reuse-partial-absent": ("failed", "partial content (206) is not stored"),
        "partial-store-partial-reuse-partial-byterange": ("failed", "partial content (206) is not stored"),
        "partial-store-partial-reuse-partial-suffix": ("failed", "partial content (206) is not stored"),
        "vary-normalise-lang-order": ("failed", "Vary compares Accept-Language's values as fields (list members' spacing and case), not as language preferences"),
        "vary-normalise-lang-select": ("failed", "Vary compares Accept-Language's values as fields (list members' spacing and case), not as language preferences"),
        "304-etag-update-response-Content-Encoding": ("failed", "a 304 does not replace the stored Content-Encoding: the body stored was coded (or decoded) by the stored one (RFC 9111 3.2's fields the stored response depends on)"),
        "age-parse-numeric-parameter": ("failed", "an Age that is not a bare number is ignored, as RFC 9111 5.1 says a cache SHOULD"),
        "age-parse-parameter": ("failed", "an Age that is not a bare number is ignored, as RFC 9111 5.1 says a cache SHOULD"),
        "conditional-etag-forward-unquoted": ("failed", "a request's own If-None-Match goes out as the caller wrote it"),
        "conditional-etag-strong-generate-unquoted": ("failed", "a stored ETag goes out in If-None-Match as the server sent it, not quoted"),
        "conditional-etag-vary-headers-mismatch": ("failed", "a request that matches no stored variant is not made conditional with the other variants' ETags (RFC 9111 4.3.1 allows it; Chrome and Firefox do)"),
        "freshness-max-age-100a": ("failed", "an invalid max-age makes the response stale"),
        "freshness-max-age-a100": ("failed", "an invalid max-age makes the response stale"),
        "freshness-max-age-decimal-five": ("failed", "max-age=3600.5 is not delta-seconds (RFC 9111 1.2.2): the response is stale"),
        "freshness-max-age-decimal-zero": ("failed", "max-age=3600.0 is not delta-seconds (RFC 9111 1.2.2): the response is stale"),
        "freshness-max-age-space-after-equals": ("failed", "whitespace around a directive's `=` is tolerated, and the max-age used"),
        "freshness-max-age-space-before-equals": ("failed", "whitespace around a directive's `=` is tolerated, and the max-age used"),
        "freshness-max-age-two-stale-fresh-sameline": ("failed", "two max-age directives make the response stale (RFC 9111 4.2.1 allows that or the first)"),
        "freshness-max-age-two-stale-fresh-sepline": ("failed", "two max-age directives make the response stale (RFC 9111 4.2.1 allows that or the first)"),
        "head-200-freshness-update": ("failed", "a 200 to a HEAD does not freshen a stored GET response (RFC 9111 4.3.5 is a MAY; no browser does)"),
        "head-200-retain": ("failed", "a 200 to a HEAD does not freshen a stored GET response (RFC 9111 4.3.5 is a MAY; no browser does)"),
        "head-200-update": ("setup failed", "a 200 to a HEAD does not freshen a stored GET response (RFC 9111 4.3.5 is a MAY; no browser does)"),
        "head-410-update": ("setup failed", "a response to a HEAD does not freshen a stored GET response (RFC 9111 4.3.5 is a MAY; no browser does)"),
        "headers-omit-headers-listed-in-Cache-Control-no-cache": ("setup failed", "no-cache with field names is read as no-cache (RFC 9111 5.2.2.4 allows a cache that does not support the qualified form)"),
        "headers-omit-headers-listed-in-Cache-Control-no-cache-single": ("setup failed", "no-cache with field names is read as no-cache (RFC 9111 5.2.2.4 allows a cache that does not support the qualified form)"),
        "heuristic-delta-10": ("failed", "a tenth of 10 s since Last-Modified is 1 s of heuristic freshness, gone by the next request"),
        "heuristic-delta-30": ("failed", "a tenth of 30 s since Last-Modified is 3 s of heuristic freshness, gone by the next request"),
        "heuristic-delta-5": ("failed", "a tenth of 5 s since Last-Modified is 0.5 s of heuristic freshness, gone by the next request"),
        "other-age-delay": ("failed", "a response from the network carries no Age of Courier's making"),
        "pragma-request-no-cache": ("failed", "a request's Pragma: no-cache counts as Cache-Control: no-cache (RFC 7234 5.4; RFC 9111 deprecates Pragma), as in Chrome and Safari"),
        "pragma-response-no-cache-heuristic": ("failed", "a response's Pragma: no-cache keeps it from heuristic freshness"),
        "stale-503": ("failed", "a stale response is not served in place of a 503 (no browser does)"),
        "stale-close": ("failed", "a stale response is not served when the server closes the connection: the request fails (no browser serves it)"),
        "stale-sie-503": ("failed", "stale-if-error (RFC 5861) is not implemented"),
        "stale-sie-close": ("failed", "stale-if-error (RFC 5861) is not implemented"),
        "stale-warning-become": ("failed", "needs a stale response served when the server closes the connection (stale-close)"),
        "stale-warning-stored": ("failed", "needs a stale response served when the server closes the connection (stale-close)"),
    ]

    static var suiteIDs: [String] { CacheTestSuite.all.map(\.id) }

    @Test(arguments: Self.suiteIDs)
    func suite(_ id: String) async throws {
        let suite = try #require(CacheTestSuite.all.first { $0.id == id })
        let state = CacheTestsServer()
        var results: [String: CacheTestResult] = [:]
        try await ScriptedHTTPServer.with({ _, _, head in state.answer(head) }) { server in
            for test in suite.tests where test.notApplicable == nil {
                results[test.id] = await CacheTestsClient.run(test, on: server, answering: state)
            }
        }
        if let directory = ProcessInfo.processInfo.environment["COURIER_CACHE_TESTS_RESULTS"] {
            try Self.write(results, to: URL(fileURLWithPath: directory).appendingPathComponent("\(id).json"))
        }
        var report: [String] = []
        for test in suite.tests where test.notApplicable == nil {
            guard let result = results[test.id] else { continue }
            if let known = Self.expected[test.id] {
                if result == .passed {
                    report.append("\(test.id) (\(test.kind)) passes now: take it off the list (\(known.why))")
                } else if !result.description.hasPrefix(known.result) {
                    report.append("\(test.id) (\(test.kind)) \(result), listed as \(known.result)")
                }
            } else if result != .passed {
                report.append("\(test.id) (\(test.kind)) \(result)")
            }
        }
        #expect(report.isEmpty, "\(report.count) of \(results.count) in \(id):\n\(report.joined(separator: "\n"))")
    }

    /// The results in the suite's own format (`results/*.json` of cache-tests: `true`, or the
    /// error's kind and message), to set beside a browser's.
    static func write(_ results: [String: CacheTestResult], to file: URL) throws {
        var object: [String: Any] = [:]
        for (id, result) in results {
            switch result {
            case .passed: object[id] = true
            case .failed(let message): object[id] = ["Assertion", message]
            case .setupFailed(let message): object[id] = ["Setup", message]
            }
        }
        try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .prettyPrinted]).write(to: file)
    }
}
