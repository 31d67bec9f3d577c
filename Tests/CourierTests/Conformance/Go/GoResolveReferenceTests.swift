import Foundation
import HTTPTypes
import Testing

@testable import Courier

/// Go's URL resolution table (go1.19, `net/url/url_test.go`, `resolveReferenceTests`, BSD-style
/// licence: RFC 3986 section 5.4's examples and Go's own), against the two places Courier
/// resolves a reference: a redirect's `Location` against the request's URL
/// (``RedirectPlanner``), and a path against an ``HTTPSessionManager``'s base URL
/// (``HTTPSessionManager/absoluteURLString(for:)``, AFNetworking's `URLWithString:relativeToURL:`).
/// Foundation's `URL(string:relativeTo:)` does the resolving in both, and gives RFC 3986's answer
/// to every row; the rows where Courier answers otherwise do so on purpose, and assert Courier's
/// answer:
/// - a redirect is followed only to an `http` or `https` URL (`mailto:`, `g:h`: the 3xx is the
///   response); an empty `Location` is no redirect (curl ignores it; Go resolves it to the
///   request's URL); and a `Location` without a fragment keeps the request's (RFC 9110 section
///   10.2.2; Go drops it);
/// - a manager's base URL whose path does not end in `/` gets one (AFNetworking's rule, so that
///   `users` lands under `http://h/v1`): each row is resolved against the base with a `/`
///   appended (`http://a/b/c/d;p?q` is `http://a/b/c/d;p/?q`), and an empty path is the base
///   itself; a URL whose scheme a manager does not request is refused.
@Suite("Go's URL resolution tests")
struct GoResolveReferenceTests {
    struct Row: Sendable, CustomTestStringConvertible {
        let base: String
        let reference: String
        let want: String
        init(_ base: String, _ reference: String, _ want: String) {
            self.base = base
            self.reference = reference
            self.want = want
        }
        var testDescription: String { "\(self.base) + '\(self.reference)'" }
    }

    static let rows: [Row] = [
        // Absolute URL references
        Row("http://foo.com?a=b", "https://bar.com/", "https://bar.com/"),
        Row("http://foo.com/", "https://bar.com/?a=b", "https://bar.com/?a=b"),
        Row("http://foo.com/", "https://bar.com/?", "https://bar.com/?"),
        Row("http://foo.com/bar", "mailto:foo@example.com", "mailto:foo@example.com"),
        // Path-absolute references
        Row("http://foo.com/bar", "/baz", "http://foo.com/baz"),
        Row("http://foo.com/bar?a=b#f", "/baz", "http://foo.com/baz"),
        Row("http://foo.com/bar?a=b", "/baz?", "http://foo.com/baz?"),
        Row("http://foo.com/bar?a=b", "/baz?c=d", "http://foo.com/baz?c=d"),
        // Multiple slashes
        Row("http://foo.com/bar", "http://foo.com//baz", "http://foo.com//baz"),
        Row("http://foo.com/bar", "http://foo.com///baz/quux", "http://foo.com///baz/quux"),
        // Scheme-relative
        Row("https://foo.com/bar?a=b", "//bar.com/quux", "https://bar.com/quux"),
        // Path-relative references:
        // ... current directory
        Row("http://foo.com", ".", "http://foo.com/"),
        Row("http://foo.com/bar", ".", "http://foo.com/"),
        Row("http://foo.com/bar/", ".", "http://foo.com/bar/"),
        // ... going down
        Row("http://foo.com", "bar", "http://foo.com/bar"),
        Row("http://foo.com/", "bar", "http://foo.com/bar"),
        Row("http://foo.com/bar/baz", "quux", "http://foo.com/bar/quux"),
        // ... going up
        Row("http://foo.com/bar/baz", "../quux", "http://foo.com/quux"),
        Row("http://foo.com/bar/baz", "../../../../../quux", "http://foo.com/quux"),
        Row("http://foo.com/bar", "..", "http://foo.com/"),
        Row("http://foo.com/bar/baz", "./..", "http://foo.com/"),
        // ".." in the middle (issue 3560)
        Row("http://foo.com/bar/baz", "quux/dotdot/../tail", "http://foo.com/bar/quux/tail"),
        Row("http://foo.com/bar/baz", "quux/./dotdot/../tail", "http://foo.com/bar/quux/tail"),
        Row("http://foo.com/bar/baz", "quux/./dotdot/.././tail", "http://foo.com/bar/quux/tail"),
        Row("http://foo.com/bar/baz", "quux/./dotdot/./../tail", "http://foo.com/bar/quux/tail"),
        Row("http://foo.com/bar/baz", "quux/./dotdot/dotdot/././../../tail", "http://foo.com/bar/quux/tail"),
        Row("http://foo.com/bar/baz", "quux/./dotdot/dotdot/./.././../tail", "http://foo.com/bar/quux/tail"),
        Row("http://foo.com/bar/baz", "quux/./dotdot/dotdot/dotdot/./../../.././././tail", "http://foo.com/bar/quux/tail"),
        Row("http://foo.com/bar/baz", "quux/./dotdot/../dotdot/../dot/./tail/..", "http://foo.com/bar/quux/dot/"),
        // Remove any dot-segments prior to forming the target URI.
        // https://datatracker.ietf.org/doc/html/rfc3986#section-5.2.4
        Row("http://foo.com/dot/./dotdot/../foo/bar", "../baz", "http://foo.com/dot/baz"),
        // Triple dot isn't special
        Row("http://foo.com/bar", "...", "http://foo.com/..."),
        // Fragment
        Row("http://foo.com/bar", ".#frag", "http://foo.com/#frag"),
        Row("http://example.org/", "#!$&%27()*+,;=", "http://example.org/#!$&%27()*+,;="),
        // Paths with escaping (issue 16947).
        Row("http://foo.com/foo%2fbar/", "../baz", "http://foo.com/baz"),
        Row("http://foo.com/1/2%2f/3%2f4/5", "../../a/b/c", "http://foo.com/1/a/b/c"),
        Row("http://foo.com/1/2/3", "./a%2f../../b/..%2fc", "http://foo.com/1/2/b/..%2fc"),
        Row("http://foo.com/1/2%2f/3%2f4/5", "./a%2f../b/../c", "http://foo.com/1/2%2f/3%2f4/a%2f../c"),
        Row("http://foo.com/foo%20bar/", "../baz", "http://foo.com/baz"),
        Row("http://foo.com/foo", "../bar%2fbaz", "http://foo.com/bar%2fbaz"),
        Row("http://foo.com/foo%2dbar/", "./baz-quux", "http://foo.com/foo%2dbar/baz-quux"),
        // RFC 3986: Normal Examples
        // https://datatracker.ietf.org/doc/html/rfc3986#section-5.4.1
        Row("http://a/b/c/d;p?q", "g:h", "g:h"),
        Row("http://a/b/c/d;p?q", "g", "http://a/b/c/g"),
        Row("http://a/b/c/d;p?q", "./g", "http://a/b/c/g"),
        Row("http://a/b/c/d;p?q", "g/", "http://a/b/c/g/"),
        Row("http://a/b/c/d;p?q", "/g", "http://a/g"),
        Row("http://a/b/c/d;p?q", "//g", "http://g"),
        Row("http://a/b/c/d;p?q", "?y", "http://a/b/c/d;p?y"),
        Row("http://a/b/c/d;p?q", "g?y", "http://a/b/c/g?y"),
        Row("http://a/b/c/d;p?q", "#s", "http://a/b/c/d;p?q#s"),
        Row("http://a/b/c/d;p?q", "g#s", "http://a/b/c/g#s"),
        Row("http://a/b/c/d;p?q", "g?y#s", "http://a/b/c/g?y#s"),
        Row("http://a/b/c/d;p?q", ";x", "http://a/b/c/;x"),
        Row("http://a/b/c/d;p?q", "g;x", "http://a/b/c/g;x"),
        Row("http://a/b/c/d;p?q", "g;x?y#s", "http://a/b/c/g;x?y#s"),
        Row("http://a/b/c/d;p?q", "", "http://a/b/c/d;p?q"),
        Row("http://a/b/c/d;p?q", ".", "http://a/b/c/"),
        Row("http://a/b/c/d;p?q", "./", "http://a/b/c/"),
        Row("http://a/b/c/d;p?q", "..", "http://a/b/"),
        Row("http://a/b/c/d;p?q", "../", "http://a/b/"),
        Row("http://a/b/c/d;p?q", "../g", "http://a/b/g"),
        Row("http://a/b/c/d;p?q", "../..", "http://a/"),
        Row("http://a/b/c/d;p?q", "../../", "http://a/"),
        Row("http://a/b/c/d;p?q", "../../g", "http://a/g"),
        // RFC 3986: Abnormal Examples
        // https://datatracker.ietf.org/doc/html/rfc3986#section-5.4.2
        Row("http://a/b/c/d;p?q", "../../../g", "http://a/g"),
        Row("http://a/b/c/d;p?q", "../../../../g", "http://a/g"),
        Row("http://a/b/c/d;p?q", "/./g", "http://a/g"),
        Row("http://a/b/c/d;p?q", "/../g", "http://a/g"),
        Row("http://a/b/c/d;p?q", "g.", "http://a/b/c/g."),
        Row("http://a/b/c/d;p?q", ".g", "http://a/b/c/.g"),
        Row("http://a/b/c/d;p?q", "g..", "http://a/b/c/g.."),
        Row("http://a/b/c/d;p?q", "..g", "http://a/b/c/..g"),
        Row("http://a/b/c/d;p?q", "./../g", "http://a/b/g"),
        Row("http://a/b/c/d;p?q", "./g/.", "http://a/b/c/g/"),
        Row("http://a/b/c/d;p?q", "g/./h", "http://a/b/c/g/h"),
        Row("http://a/b/c/d;p?q", "g/../h", "http://a/b/c/h"),
        Row("http://a/b/c/d;p?q", "g;x=1/./y", "http://a/b/c/g;x=1/y"),
        Row("http://a/b/c/d;p?q", "g;x=1/../y", "http://a/b/c/y"),
        Row("http://a/b/c/d;p?q", "g?y/./x", "http://a/b/c/g?y/./x"),
        Row("http://a/b/c/d;p?q", "g?y/../x", "http://a/b/c/g?y/../x"),
        Row("http://a/b/c/d;p?q", "g#s/./x", "http://a/b/c/g#s/./x"),
        Row("http://a/b/c/d;p?q", "g#s/../x", "http://a/b/c/g#s/../x"),
        // Extras.
        Row("https://a/b/c/d;p?q", "//g?q", "https://g?q"),
        Row("https://a/b/c/d;p?q", "//g#s", "https://g#s"),
        Row("https://a/b/c/d;p?q", "//g/d/e/f?y#s", "https://g/d/e/f?y#s"),
        Row("https://a/b/c/d;p#s", "?y", "https://a/b/c/d;p?y"),
        Row("https://a/b/c/d;p?q#s", "?y", "https://a/b/c/d;p?y"),
        // Empty path and query but with ForceQuery (issue 46033).
        Row("https://a/b/c/d;p?q#s", "?", "https://a/b/c/d;p?"),
    ]

    @Test func everyRowIsPorted() {
        #expect(Self.rows.count == 87)
        // Every deviation names a row (none is left behind when a row changes).
        let keys = Set(Self.rows.map(Self.key))
        #expect(Set(Self.redirectDeviations.keys).isSubset(of: keys))
        #expect(Set(Self.baseURLDeviations.keys).isSubset(of: keys))
    }

    /// A `302` to `request`'s base with `Location: reference`: the URL followed, nil when none.
    static func redirect(_ row: Row) throws -> String? {
        let request = Request(method: .get, url: try #require(URL(string: row.base)))
        var head = HTTPResponse(status: .found)
        head.headerFields[.location] = row.reference
        let step = RedirectPlanner.step(for: head, request: request, policy: .follow(max: 10, allowCycles: true), redirectCount: 0, visitedURLs: [])
        guard case .follow(let next) = step else { return nil }
        return next.url.absoluteString
    }

    /// Where the redirect planner answers otherwise, by `base + reference`; nil: not followed.
    static let redirectDeviations: [String: String?] = [
        // Only `http` and `https` are followed.
        "http://foo.com/bar + mailto:foo@example.com": nil,
        "http://a/b/c/d;p?q + g:h": nil,
        // An empty `Location` is no redirect (curl's rule).
        "http://a/b/c/d;p?q + ": nil,
        // RFC 9110 10.2.2: the request's fragment is kept.
        "http://foo.com/bar?a=b#f + /baz": "http://foo.com/baz#f",
        "https://a/b/c/d;p#s + ?y": "https://a/b/c/d;p?y#s",
        "https://a/b/c/d;p?q#s + ?y": "https://a/b/c/d;p?y#s",
        "https://a/b/c/d;p?q#s + ?": "https://a/b/c/d;p?#s",
    ]

    /// Where the manager answers otherwise, by `base + reference`: the answer for the base with a
    /// `/` appended to its path (verified against RFC 3986 5.2 by hand); nil: refused.
    static let baseURLDeviations: [String: String?] = [
        // Not a scheme a manager requests (`unsupportedScheme`).
        "http://foo.com/bar + mailto:foo@example.com": nil,
        "http://foo.com/bar + .": "http://foo.com/bar/",
        "http://foo.com/bar/baz + quux": "http://foo.com/bar/baz/quux",
        "http://foo.com/bar/baz + ../quux": "http://foo.com/bar/quux",
        "http://foo.com/bar/baz + ./..": "http://foo.com/bar/",
        "http://foo.com/bar/baz + quux/dotdot/../tail": "http://foo.com/bar/baz/quux/tail",
        "http://foo.com/bar/baz + quux/./dotdot/../tail": "http://foo.com/bar/baz/quux/tail",
        "http://foo.com/bar/baz + quux/./dotdot/.././tail": "http://foo.com/bar/baz/quux/tail",
        "http://foo.com/bar/baz + quux/./dotdot/./../tail": "http://foo.com/bar/baz/quux/tail",
        "http://foo.com/bar/baz + quux/./dotdot/dotdot/././../../tail": "http://foo.com/bar/baz/quux/tail",
        "http://foo.com/bar/baz + quux/./dotdot/dotdot/./.././../tail": "http://foo.com/bar/baz/quux/tail",
        "http://foo.com/bar/baz + quux/./dotdot/dotdot/dotdot/./../../.././././tail": "http://foo.com/bar/baz/quux/tail",
        "http://foo.com/bar/baz + quux/./dotdot/../dotdot/../dot/./tail/..": "http://foo.com/bar/baz/quux/dot/",
        "http://foo.com/dot/./dotdot/../foo/bar + ../baz": "http://foo.com/dot/foo/baz",
        "http://foo.com/bar + ...": "http://foo.com/bar/...",
        "http://foo.com/bar + .#frag": "http://foo.com/bar/#frag",
        "http://foo.com/1/2%2f/3%2f4/5 + ../../a/b/c": "http://foo.com/1/2%2f/a/b/c",
        "http://foo.com/1/2/3 + ./a%2f../../b/..%2fc": "http://foo.com/1/2/3/b/..%2fc",
        "http://foo.com/1/2%2f/3%2f4/5 + ./a%2f../b/../c": "http://foo.com/1/2%2f/3%2f4/5/a%2f../c",
        // Not a scheme a manager requests.
        "http://a/b/c/d;p?q + g:h": nil,
        "http://a/b/c/d;p?q + g": "http://a/b/c/d;p/g",
        "http://a/b/c/d;p?q + ./g": "http://a/b/c/d;p/g",
        "http://a/b/c/d;p?q + g/": "http://a/b/c/d;p/g/",
        "http://a/b/c/d;p?q + ?y": "http://a/b/c/d;p/?y",
        "http://a/b/c/d;p?q + g?y": "http://a/b/c/d;p/g?y",
        "http://a/b/c/d;p?q + #s": "http://a/b/c/d;p/?q#s",
        "http://a/b/c/d;p?q + g#s": "http://a/b/c/d;p/g#s",
        "http://a/b/c/d;p?q + g?y#s": "http://a/b/c/d;p/g?y#s",
        "http://a/b/c/d;p?q + ;x": "http://a/b/c/d;p/;x",
        "http://a/b/c/d;p?q + g;x": "http://a/b/c/d;p/g;x",
        "http://a/b/c/d;p?q + g;x?y#s": "http://a/b/c/d;p/g;x?y#s",
        "http://a/b/c/d;p?q + ": "http://a/b/c/d;p/?q",
        "http://a/b/c/d;p?q + .": "http://a/b/c/d;p/",
        "http://a/b/c/d;p?q + ./": "http://a/b/c/d;p/",
        "http://a/b/c/d;p?q + ..": "http://a/b/c/",
        "http://a/b/c/d;p?q + ../": "http://a/b/c/",
        "http://a/b/c/d;p?q + ../g": "http://a/b/c/g",
        "http://a/b/c/d;p?q + ../..": "http://a/b/",
        "http://a/b/c/d;p?q + ../../": "http://a/b/",
        "http://a/b/c/d;p?q + ../../g": "http://a/b/g",
        "http://a/b/c/d;p?q + g.": "http://a/b/c/d;p/g.",
        "http://a/b/c/d;p?q + .g": "http://a/b/c/d;p/.g",
        "http://a/b/c/d;p?q + g..": "http://a/b/c/d;p/g..",
        "http://a/b/c/d;p?q + ..g": "http://a/b/c/d;p/..g",
        "http://a/b/c/d;p?q + ./../g": "http://a/b/c/g",
        "http://a/b/c/d;p?q + ./g/.": "http://a/b/c/d;p/g/",
        "http://a/b/c/d;p?q + g/./h": "http://a/b/c/d;p/g/h",
        "http://a/b/c/d;p?q + g/../h": "http://a/b/c/d;p/h",
        "http://a/b/c/d;p?q + g;x=1/./y": "http://a/b/c/d;p/g;x=1/y",
        "http://a/b/c/d;p?q + g;x=1/../y": "http://a/b/c/d;p/y",
        "http://a/b/c/d;p?q + g?y/./x": "http://a/b/c/d;p/g?y/./x",
        "http://a/b/c/d;p?q + g?y/../x": "http://a/b/c/d;p/g?y/../x",
        "http://a/b/c/d;p?q + g#s/./x": "http://a/b/c/d;p/g#s/./x",
        "http://a/b/c/d;p?q + g#s/../x": "http://a/b/c/d;p/g#s/../x",
        "https://a/b/c/d;p#s + ?y": "https://a/b/c/d;p/?y",
        "https://a/b/c/d;p?q#s + ?y": "https://a/b/c/d;p/?y",
        "https://a/b/c/d;p?q#s + ?": "https://a/b/c/d;p/?",
    ]

    static func key(_ row: Row) -> String { "\(row.base) + \(row.reference)" }

    @Test(arguments: Self.rows)
    func resolveReferenceInARedirect(_ row: Row) throws {
        let got = try Self.redirect(row)
        let want = Self.redirectDeviations[Self.key(row)] ?? row.want
        #expect(got == want)
    }

    @Test(arguments: Self.rows)
    func resolveReferenceAgainstABaseURL(_ row: Row) throws {
        let manager = HTTPSessionManager(baseURL: URL(string: row.base), engine: RefusingEngine())
        let got = try? manager.absoluteURLString(for: row.reference)
        let want = Self.baseURLDeviations[Self.key(row)] ?? row.want
        #expect(got == want)
    }
}
