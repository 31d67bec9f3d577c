import Foundation
import Testing

@testable import Courier

/// Go's cookie parsing and writing tests (go1.19, `net/http/cookie_test.go`, BSD-style licence):
/// `readSetCookiesTests` and `TestSetCookieDoubleQuotes` against ``SetCookieParser`` (RFC 6265bis
/// 5.6, the step before the storage rules, as Go's `readSetCookies` has no URL either), and
/// `addCookieTests` and the name-and-value rows of `writeSetCookiesTests` against the `Cookie`
/// field Courier writes (``Cookie/headerValue(for:)``, and a ``MemoryCookieStorage``'s
/// ``MemoryCookieStorage/cookieHeader(for:)``). Go's rows have no names; each is named here by
/// its cookie's name, as Go's table spells it.
///
/// Courier follows RFC 6265bis where Go answers otherwise, and those rows assert Courier's answer:
/// - a value keeps its double quotes (6265bis 5.6 takes everything after the `=`, trimmed, and
///   so do browsers); Go strips one pair (`" z"` → ` z`);
/// - `Domain`'s leading dot is dropped when the field is parsed (6265bis 5.6.3); Go's parser keeps
///   the attribute as sent (`.google.ch`) and its jar drops the dot later;
/// - the `Cookie` field carries a value as it was received (6265bis 5.8.3 step 4); Go's writer
///   quotes a value with a space or a comma (`special-1="a z"`).
///
/// Not ported: `readCookiesTests` (Go's server reads a request's `Cookie` field; Courier is a
/// client and has no such parser), the attribute part of `writeSetCookiesTests`,
/// `TestSetCookie`, `TestCookieSanitizeValue`, `TestCookieSanitizePath` and `TestCookieValid`
/// (Go's server writes `Set-Cookie`; Courier writes none).
@Suite("Go's cookie parsing tests")
struct GoCookieParsingTests {
    /// One row of Go's `readSetCookiesTests`: the field and the cookie Courier's parser gives.
    struct SetCookieCase: Sendable, CustomTestStringConvertible {
        let field: String
        let want: ParsedSetCookie
        var testDescription: String { self.want.name }
    }

    static func date(_ year: Int, _ month: Int, _ day: Int, _ hour: Int, _ minute: Int, _ second: Int) -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar.date(from: DateComponents(year: year, month: month, day: day, hour: hour, minute: minute, second: second))!
    }

    static let readSetCookiesCases: [SetCookieCase] = [
        SetCookieCase(field: "Cookie-1=v$1", want: ParsedSetCookie(name: "Cookie-1", value: "v$1")),
        // Go: Domain ".google.ch" (as sent). 6265bis 5.6.3: the leading dot is dropped.
        SetCookieCase(
            field: "NID=99=YsDT5i3E-CXax-; expires=Wed, 23-Nov-2011 01:05:03 GMT; path=/; domain=.google.ch; HttpOnly",
            want: ParsedSetCookie(
                name: "NID", value: "99=YsDT5i3E-CXax-", expires: Self.date(2011, 11, 23, 1, 5, 3), domain: "google.ch", path: "/",
                isHTTPOnly: true)),
        SetCookieCase(
            field: ".ASPXAUTH=7E3AA; expires=Wed, 07-Mar-2012 14:25:06 GMT; path=/; HttpOnly",
            want: ParsedSetCookie(name: ".ASPXAUTH", value: "7E3AA", expires: Self.date(2012, 3, 7, 14, 25, 6), path: "/", isHTTPOnly: true)),
        SetCookieCase(
            field: "ASP.NET_SessionId=foo; path=/; HttpOnly",
            want: ParsedSetCookie(name: "ASP.NET_SessionId", value: "foo", path: "/", isHTTPOnly: true)),
        // Go's `SameSiteDefaultMode` for an attribute without a value or with one it does not
        // know; Courier's parser keeps "present, not understood" (6265bis 5.6.7: "Default"), and
        // the cookie's `sameSite` is nil.
        SetCookieCase(
            field: "samesitedefault=foo; SameSite", want: ParsedSetCookie(name: "samesitedefault", value: "foo", sameSite: .some(nil))),
        SetCookieCase(
            field: "samesiteinvalidisdefault=foo; SameSite=invalid",
            want: ParsedSetCookie(name: "samesiteinvalidisdefault", value: "foo", sameSite: .some(nil))),
        SetCookieCase(field: "samesitelax=foo; SameSite=Lax", want: ParsedSetCookie(name: "samesitelax", value: "foo", sameSite: .lax)),
        SetCookieCase(
            field: "samesitestrict=foo; SameSite=Strict", want: ParsedSetCookie(name: "samesitestrict", value: "foo", sameSite: .strict)),
        SetCookieCase(field: "samesitenone=foo; SameSite=None", want: ParsedSetCookie(name: "samesitenone", value: "foo", sameSite: Cookie.SameSite.none)),
        // Values with spaces and commas. Go strips a pair of double quotes; 6265bis keeps them
        // (Go's value is in each comment).
        SetCookieCase(field: "special-1=a z", want: ParsedSetCookie(name: "special-1", value: "a z")),
        SetCookieCase(field: #"special-2=" z""#, want: ParsedSetCookie(name: "special-2", value: #"" z""#)),  // Go: ` z`
        SetCookieCase(field: #"special-3="a ""#, want: ParsedSetCookie(name: "special-3", value: #""a ""#)),  // Go: `a `
        SetCookieCase(field: #"special-4=" ""#, want: ParsedSetCookie(name: "special-4", value: #"" ""#)),  // Go: ` `
        SetCookieCase(field: "special-5=a,z", want: ParsedSetCookie(name: "special-5", value: "a,z")),
        SetCookieCase(field: #"special-6=",z""#, want: ParsedSetCookie(name: "special-6", value: #"",z""#)),  // Go: `,z`
        SetCookieCase(field: "special-7=a,", want: ParsedSetCookie(name: "special-7", value: "a,")),
        SetCookieCase(field: #"special-8=",""#, want: ParsedSetCookie(name: "special-8", value: #"",""#)),  // Go: `,`
    ]

    @Test(arguments: Self.readSetCookiesCases)
    func readSetCookies(_ test: SetCookieCase) {
        #expect(SetCookieParser.parse(test.field) == test.want, "\(test.field)")
        // Twice, as Go does (its parser must not change its input; Courier's takes a value).
        #expect(SetCookieParser.parse(test.field) == test.want)
    }

    /// Go strips the quotes of `quoted1` and `quoted3` (6265bis keeps them); a quoted `max-age`
    /// is no number for either, and leaves no `Max-Age`.
    @Test func setCookieDoubleQuotes() {
        let fields = [#"quoted0=none; max-age=30"#, #"quoted1="cookieValue"; max-age=31"#, #"quoted2=cookieAV; max-age="32""#, #"quoted3="both"; max-age="33""#]
        let got = fields.map { SetCookieParser.parse($0) }
        #expect(got[0] == ParsedSetCookie(name: "quoted0", value: "none", maxAge: 30))
        #expect(got[1] == ParsedSetCookie(name: "quoted1", value: #""cookieValue""#, maxAge: 31))  // Go: cookieValue
        #expect(got[2] == ParsedSetCookie(name: "quoted2", value: "cookieAV"))
        #expect(got[3] == ParsedSetCookie(name: "quoted3", value: #""both""#))  // Go: both
    }

    /// Go's `addCookieTests`: the pairs in the order given, `; ` between them, and no field (Go's
    /// `Header.Get` gives "") for none. Also through a store, given the cookies as `Set-Cookie`
    /// fields in that order (equal paths and creation times: the store keeps their order).
    @Test(arguments: [
        ([String](), ""),
        (["cookie-1=v$1"], "cookie-1=v$1"),
        (["cookie-1=v$1", "cookie-2=v$2", "cookie-3=v$3"], "cookie-1=v$1; cookie-2=v$2; cookie-3=v$3"),
    ])
    func addCookie(_ pairs: [String], _ want: String) throws {
        let url = try #require(URL(string: "http://example.com/"))
        let now = Date(timeIntervalSince1970: 1_357_041_600)
        let cookies = pairs.compactMap { Cookie(setCookie: $0, for: url, now: now) }
        #expect(cookies.count == pairs.count)
        #expect((Cookie.headerValue(for: cookies) ?? "") == want)

        let storage = MemoryCookieStorage(publicSuffixes: PublicSuffixList(rules: ""), clock: { now })
        storage.storeCookies(fromSetCookieFields: pairs, for: url)
        #expect((storage.cookieHeader(for: url) ?? "") == want)
    }

    /// The name-and-value rows of Go's `writeSetCookiesTests`, as the `Cookie` field carries them.
    /// Go's writer quotes a value with a space or a comma, or one that starts or ends with a space;
    /// Courier sends the value as received (6265bis 5.8.3), so a server that sent `a z` gets
    /// `a z` back, and one that sent `"a z"` gets that. Go's answer is in each comment.
    @Test(arguments: [
        ("cookie-1", "v$1", "cookie-1=v$1"),
        ("special-1", "a z", "special-1=a z"),  // Go: special-1="a z"
        ("special-2", " z", "special-2= z"),  // Go: special-2=" z"
        ("special-3", "a ", "special-3=a "),  // Go: special-3="a "
        ("special-4", " ", "special-4= "),  // Go: special-4=" "
        ("special-5", "a,z", "special-5=a,z"),  // Go: special-5="a,z"
        ("special-6", ",z", "special-6=,z"),  // Go: special-6=",z"
        ("special-7", "a,", "special-7=a,"),  // Go: special-7="a,"
        ("special-8", ",", "special-8=,"),  // Go: special-8=","
        ("empty-value", "", "empty-value="),
    ])
    func writeSetCookies(_ name: String, _ value: String, _ want: String) {
        let cookie = Cookie(name: name, value: value, domain: "example.com")
        #expect(Cookie.headerValue(for: [cookie]) == want)
    }

    /// Go's row for a cookie with no name and no value writes nothing; so does Courier (no field).
    @Test func writeSetCookiesEmptyName() {
        #expect(Cookie.headerValue(for: [Cookie(name: "", value: "", domain: "example.com")]) == nil)
        #expect(Cookie.headerValue(for: [Cookie]()) == nil)
    }
}
