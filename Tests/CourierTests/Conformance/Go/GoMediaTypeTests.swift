import Foundation
import HTTPTypes
import Testing

@testable import Courier

/// Go's media type tests (go1.19, `mime/mediatype_test.go`, BSD-style licence): the rows of
/// `TestParseMediaType` and `badMediaTypeTests` (most of them Julian Reschke's `tc2231`
/// Content-Disposition cases, named as there), against what Courier reads of a `Content-Type`:
/// ``HTTPResponse/mimeType`` and ``HTTPResponse/textEncodingName``.
///
/// Go's `ParseMediaType` reads any `type; parameters` value and returns every parameter;
/// Courier reads a media type for two uses, and answers otherwise on purpose:
/// - ``HTTPResponse/mimeType`` needs a `type/subtype` pair (RFC 9110 section 8.3.1); Go's rows
///   without a `/` (Content-Disposition values such as `attachment`) give nil, where Go gives the
///   lower-cased word. Where Go refuses a row for its parameters but keeps its type (`application/pdf`
///   with a missing `;`), Courier gives that type too: it does not read the parameters for it.
/// - ``HTTPResponse/textEncodingName`` reads one parameter, `charset`. Go's parameter rows are
///   run with their parameter renamed `charset` (on `text/plain`), and Courier's value has its ASCII
///   letters lower-cased (charset names are case-insensitive tokens, RFC 9110 section 8.3.2; Go
///   lower-cases with Unicode's rules). Courier follows
///   RFC 9110 where Go is loose: `\x` in a quoted string is `x` (Go keeps the backslash, "like
///   MSIE"); there are no RFC 2231 continuations or `charset*` extended values (RFC 9110 gives
///   `Content-Type` none); an empty `charset` is none. Where Go refuses a malformed list
///   (repeated names, a space or a comma in a token, text after a quoted string, a missing
///   closing quote), Courier reads it leniently: the first of repeated names, an unquoted
///   value up to the next `;`, a quoted one up to its closing quote or the end.
@Suite("Go's media type tests")
struct GoMediaTypeTests {
    /// A row of Go's tables: its `tc2231` name (empty when Go gives none), the input and the type
    /// Go returns (empty on an error).
    struct Row: Sendable, CustomTestStringConvertible {
        let name: String
        let input: String
        let goType: String
        init(_ name: String, _ input: String, _ goType: String) {
            self.name = name
            self.input = input
            self.goType = goType
        }
        var testDescription: String { self.name.isEmpty ? self.input : self.name }
    }

    /// `TestParseMediaType`'s rows, in Go's order.
    static let parseMediaTypeRows: [Row] = [
        Row("", #"form-data; name="foo""#, "form-data"),
        Row("", " form-data ; name=foo", "form-data"),
        Row("", #"FORM-DATA;name="foo""#, "form-data"),
        Row("", #" FORM-DATA ; name="foo""#, "form-data"),
        Row("", #" FORM-DATA ; name="foo""#, "form-data"),
        Row("", #"form-data; key=value;  blah="value";name="foo" "#, "form-data"),
        Row("", "foo; key=val1; key=the-key-appears-again-which-is-bogus", ""),
        Row("", "application/x-stuff; title*=us-ascii'en-us'This%20is%20%2A%2A%2Afun%2A%2A%2A", "application/x-stuff"),
        Row("", #"message/external-body; access-type=URL; URL*0="ftp://";URL*1="cs.utk.edu/pub/moore/bulk-mailer/bulk-mailer.tar""#, "message/external-body"),
        Row("", #"application/x-stuff; title*0*=us-ascii'en'This%20is%20even%20more%20; title*1*=%2A%2A%2Afun%2A%2A%2A%20; title*2="isn't it!""#, "application/x-stuff"),
        Row("#attonly", "attachment", "attachment"),
        Row("#attonlyucase", "ATTACHMENT", "attachment"),
        Row("#attwithasciifilename", #"attachment; filename="foo.html""#, "attachment"),
        Row("#attwithasciifilename25", #"attachment; filename="0000000000111111111122222""#, "attachment"),
        Row("#attwithasciifilename35", #"attachment; filename="00000000001111111111222222222233333""#, "attachment"),
        Row("#attwithasciifnescapedchar", #"attachment; filename="f\oo.html""#, "attachment"),
        Row("#attwithasciifnescapedquote", #"attachment; filename="\"quoting\" tested.html""#, "attachment"),
        Row("#attwithquotedsemicolon", #"attachment; filename="Here's a semicolon;.html""#, "attachment"),
        Row("#attwithfilenameandextparam", #"attachment; foo="bar"; filename="foo.html""#, "attachment"),
        Row("#attwithfilenameandextparamescaped", #"attachment; foo="\"\\";filename="foo.html""#, "attachment"),
        Row("#attwithasciifilenameucase", #"attachment; FILENAME="foo.html""#, "attachment"),
        Row("#attwithasciifilenamenq", "attachment; filename=foo.html", "attachment"),
        Row("#attwithasciifilenamenqs", "attachment; filename=foo.html ;", "attachment"),
        Row("#attwithfntokensq", "attachment; filename='foo.html'", "attachment"),
        Row("#attwithisofnplain", #"attachment; filename="foo-ä.html""#, "attachment"),
        Row("#attwithutf8fnplain", #"attachment; filename="foo-Ã¤.html""#, "attachment"),
        Row("#attwithfnrawpctenca", #"attachment; filename="foo-%41.html""#, "attachment"),
        Row("#attwithfnusingpct", #"attachment; filename="50%.html""#, "attachment"),
        Row("#attwithfnrawpctencaq", #"attachment; filename="foo-%\41.html""#, "attachment"),
        Row("#attwithnamepct", #"attachment; name="foo-%41.html""#, "attachment"),
        Row("#attwithfilenamepctandiso", #"attachment; name="ä-%41.html""#, "attachment"),
        Row("#attwithfnrawpctenclong", #"attachment; filename="foo-%c3%a4-%e2%82%ac.html""#, "attachment"),
        Row("#attwithasciifilenamews1", #"attachment; filename ="foo.html""#, "attachment"),
        Row("#attmissingdisposition", "filename=foo.html", ""),
        Row("#attmissingdisposition2", "x=y; filename=foo.html", ""),
        Row("#attmissingdisposition3", #""foo; filename=bar;baz"; filename=qux"#, ""),
        Row("#attmissingdisposition4", "filename=foo.html, filename=bar.html", ""),
        Row("#emptydisposition", "; filename=foo.html", ""),
        Row("#doublecolon", ": inline; attachment; filename=foo.html", ""),
        Row("#attandinline", "inline; attachment; filename=foo.html", ""),
        Row("#attandinline2", "attachment; inline; filename=foo.html", ""),
        Row("#attbrokenquotedfn", #"attachment; filename="foo.html".txt"#, ""),
        Row("#attbrokenquotedfn2", #"attachment; filename="bar"#, ""),
        Row("#attbrokenquotedfn3", #"attachment; filename=foo"bar;baz"qux"#, ""),
        Row("#attmultinstances", "attachment; filename=foo.html, attachment; filename=bar.html", ""),
        Row("#attmissingdelim", "attachment; foo=foo filename=bar", ""),
        Row("#attmissingdelim2", "attachment; filename=bar foo=foo", ""),
        Row("#attmissingdelim3", "attachment filename=bar", ""),
        Row("#attreversed", "filename=foo.html; attachment", ""),
        Row("#attconfusedparam", "attachment; xfilename=foo.html", "attachment"),
        Row("#attcdate", #"attachment; creation-date="Wed, 12 Feb 1997 16:29:51 -0500""#, "attachment"),
        Row("#attmdate", #"attachment; modification-date="Wed, 12 Feb 1997 16:29:51 -0500""#, "attachment"),
        Row("#dispext", "foobar", "foobar"),
        Row("#dispextbadfn", #"attachment; example="filename=example.txt""#, "attachment"),
        Row("#attwithfn2231utf8", "attachment; filename*=UTF-8''foo-%c3%a4-%e2%82%ac.html", "attachment"),
        Row("#attwithfn2231noc", "attachment; filename*=''foo-%c3%a4-%e2%82%ac.html", "attachment"),
        Row("#attwithfn2231utf8comp", "attachment; filename*=UTF-8''foo-a%cc%88.html", "attachment"),
        Row("#attwithfn2231ws2", "attachment; filename*= UTF-8''foo-%c3%a4.html", "attachment"),
        Row("#attwithfn2231ws3", "attachment; filename* =UTF-8''foo-%c3%a4.html", "attachment"),
        Row("#attwithfn2231quot", #"attachment; filename*="UTF-8''foo-%c3%a4.html""#, "attachment"),
        Row("#attwithfn2231quot2", #"attachment; filename*="foo%20bar.html""#, "attachment"),
        Row("#attwithfn2231singleqmissing", "attachment; filename*=UTF-8'foo-%c3%a4.html", "attachment"),
        Row("#attwithfn2231nbadpct1", "attachment; filename*=UTF-8''foo%", "attachment"),
        Row("#attwithfn2231nbadpct2", "attachment; filename*=UTF-8''f%oo.html", "attachment"),
        Row("#attwithfn2231dpct", "attachment; filename*=UTF-8''A-%2541.html", "attachment"),
        Row("#attfncont", #"attachment; filename*0="foo."; filename*1="html""#, "attachment"),
        Row("#attfncontenc", #"attachment; filename*0*=UTF-8''foo-%c3%a4; filename*1=".html""#, "attachment"),
        Row("#attfncontlz", #"attachment; filename*0="foo"; filename*01="bar""#, "attachment"),
        Row("#attfncontnc", #"attachment; filename*0="foo"; filename*2="bar""#, "attachment"),
        Row("#attfnconts1", #"attachment; filename*1="foo."; filename*2="html""#, "attachment"),
        Row("#attfncontord", #"attachment; filename*1="bar"; filename*0="foo""#, "attachment"),
        Row("#attfnboth", #"attachment; filename="foo-ae.html"; filename*=UTF-8''foo-%c3%a4.html"#, "attachment"),
        Row("#attfnboth2", #"attachment; filename*=UTF-8''foo-%c3%a4.html; filename="foo-ae.html""#, "attachment"),
        Row("#attfnboth3", "attachment; filename*0*=ISO-8859-15''euro-sign%3d%a4; filename*=ISO-8859-1''currency-sign%3d%a4", "attachment"),
        Row("#attnewandfn", #"attachment; foobar=x; filename="foo.html""#, "attachment"),
        Row("", #"form-data; firstname="Брэд"; lastname="Фицпатрик""#, "form-data"),
        Row("", #"foo; bar="""#, "foo"),
        Row("", #"form-data; name="file"; filename="C:\dev\go\robots.txt""#, "form-data"),
        Row("", #"form-data; name="file"; filename="C:\新建文件夹\中文第二次测试.mp4""#, "form-data"),
        Row("", "message/external-body; access-type=URL;\n\t\tURL*0=\"ftp://\";\n\t\tURL*1=\"cs.utk.edu/pub/moore/bulk-mailer/bulk-mailer.tar\";", "message/external-body"),
    ]

    /// `badMediaTypeTests`' rows: Go refuses each; the type is the one Go returns with
    /// `ErrInvalidMediaParameter`, else empty.
    static let badMediaTypeRows: [Row] = [
        Row("", "bogus ;=========", ""),
        Row("", #"application/pdf; x-mac-type="3F3F3F3F"; x-mac-creator="3F3F3F3F" name="a.pdf";"#, "application/pdf"),
        Row("", "bogus/<script>alert</script>", ""),
        Row("", "bogus/bogus<script>alert</script>", ""),
        Row("", #""attachment""#, ""),
        Row("", "attachment; filename=foo,bar.html", ""),
        Row("", "attachment; ;filename=foo", ""),
        Row("", "attachment; filename=foo bar.html", ""),
        Row("", #"attachment; filename="foo.html"; filename="bar.html""#, ""),
        Row("", "attachment; filename=foo[1](2).html", ""),
        Row("", "attachment; filename=foo-ä.html", ""),
        Row("", "attachment; filename=foo-Ã¤.html", ""),
        Row("", "attachment; filename *=UTF-8''foo-%c3%a4.html", ""),
    ]

    static func response(_ contentType: String) -> HTTPResponse {
        HTTPResponse(status: .ok, headerFields: [.contentType: contentType])
    }

    /// Go's type where it is a `type/subtype` pair, nil otherwise (Courier's rule above).
    @Test(arguments: Self.parseMediaTypeRows + Self.badMediaTypeRows)
    func parseMediaType(_ row: Row) {
        let want: String? = row.goType.contains("/") ? row.goType : nil
        #expect(Self.response(row.input).mimeType == want)
        // None of Go's rows has a `charset`.
        #expect(Self.response(row.input).textEncodingName == nil)
    }

    @Test func everyRowIsPorted() {
        #expect(Self.parseMediaTypeRows.count == 80)
        #expect(Self.badMediaTypeRows.count == 13)
    }

    /// Go's parameter rows with the parameter renamed `charset` on `text/plain`; `want` is
    /// Courier's value, and Go's answer is in the comment where it differs.
    @Test(arguments: [
        ("form-data; name=\"foo\"", #"text/plain; charset="foo""#, "foo"),
        (" form-data ; name=foo", " text/plain ; charset=foo", "foo"),
        ("FORM-DATA;name=\"foo\"", #"TEXT/PLAIN;CHARSET="foo""#, "foo"),
        ("form-data; key=value;  blah=\"value\";name=\"foo\" ", #"text/plain; key=value;  blah="value";charset="foo" "#, "foo"),
        // Go: refused (a repeated name). Courier: the first, as OkHttp.
        ("foo; key=val1; key=the-key-appears-again-which-is-bogus", "text/plain; charset=val1; charset=the-key-appears-again-which-is-bogus", "val1"),
        // Go: "This is ***fun***" (RFC 2231). Courier: no `charset*`.
        ("application/x-stuff; title*=…", "text/plain; charset*=us-ascii'en-us'This%20is%20%2A%2A%2Afun%2A%2A%2A", nil),
        // Go: "ftp://cs.utk.edu/…" (RFC 2231 continuations). Courier: none.
        ("message/external-body; URL*0=…", #"text/plain; access-type=URL; charset*0="ftp://";charset*1="cs.utk.edu/pub/moore/bulk-mailer/bulk-mailer.tar""#, nil),
        ("#attwithasciifilename", #"text/plain; charset="foo.html""#, "foo.html"),
        // Go: `f\oo.html`. RFC 9110 5.6.4: `\o` is `o`.
        ("#attwithasciifnescapedchar", #"text/plain; charset="f\oo.html""#, "foo.html"),
        ("#attwithasciifnescapedquote", #"text/plain; charset="\"quoting\" tested.html""#, #""quoting" tested.html"#),
        ("#attwithquotedsemicolon", #"text/plain; charset="Here's a semicolon;.html""#, "here's a semicolon;.html"),
        ("#attwithfilenameandextparam", #"text/plain; foo="bar"; charset="foo.html""#, "foo.html"),
        ("#attwithfilenameandextparamescaped", #"text/plain; foo="\"\\";charset="foo.html""#, "foo.html"),
        ("#attwithasciifilenameucase", #"text/plain; CHARSET="foo.html""#, "foo.html"),
        ("#attwithasciifilenamenq", "text/plain; charset=foo.html", "foo.html"),
        ("#attwithasciifilenamenqs", "text/plain; charset=foo.html ;", "foo.html"),
        ("#attwithfntokensq", "text/plain; charset='foo.html'", "'foo.html'"),
        ("#attwithisofnplain", #"text/plain; charset="foo-ä.html""#, "foo-ä.html"),
        ("#attwithfnrawpctenca", #"text/plain; charset="foo-%41.html""#, "foo-%41.html"),
        // Go: `foo-%\41.html`. RFC 9110 5.6.4: `\4` is `4`.
        ("#attwithfnrawpctencaq", #"text/plain; charset="foo-%\41.html""#, "foo-%41.html"),
        ("#attwithasciifilenamews1", #"text/plain; charset ="foo.html""#, "foo.html"),
        ("#dispextbadfn", #"text/plain; example="charset=example.txt""#, nil),
        // Go: "foo-ä-€.html" (RFC 2231). Courier: no `charset*`.
        ("#attwithfn2231utf8", "text/plain; charset*=UTF-8''foo-%c3%a4-%e2%82%ac.html", nil),
        // Go: "foo.html" (RFC 2231 continuations). Courier: none.
        ("#attfncont", #"text/plain; charset*0="foo."; charset*1="html""#, nil),
        // Go: "foo-ä.html" (the RFC 2231 value wins). Courier: the plain one.
        ("#attfnboth", "text/plain; charset=\"foo-ae.html\"; charset*=UTF-8''foo-%c3%a4.html", "foo-ae.html"),
        ("#attnewandfn", #"text/plain; foobar=x; charset="foo.html""#, "foo.html"),
        // Go: "брэд" (`strings.ToLower`, Unicode's rule). Courier lower-cases ASCII letters only:
        // a charset name is a token (RFC 9110 8.3.2), and no registered name has another letter.
        ("form-data; firstname=\"Брэд\"", #"text/plain; charset="Брэд"; lastname="Фицпатрик""#, "Брэд"),
        // Go: "". Courier: an empty `charset` is none.
        ("foo; bar=\"\"", #"text/plain; charset="""#, nil),
        // Go: `C:\dev\go\robots.txt` (as Microsoft browsers send it). RFC 9110 5.6.4: `\d` is `d`.
        ("form-data; name=\"file\"; filename=\"C:\\dev…\"", #"text/plain; name="file"; charset="C:\dev\go\robots.txt""#, "c:devgorobots.txt"),
        // badMediaTypeTests: Go refuses each.
        ("attachment; filename=foo,bar.html", "text/plain; charset=foo,bar.html", "foo,bar.html"),
        ("attachment; ;filename=foo", "text/plain; ;charset=foo", "foo"),
        ("attachment; filename=foo bar.html", "text/plain; charset=foo bar.html", "foo bar.html"),
        ("attachment; filename=\"foo.html\"; filename=\"bar.html\"", #"text/plain; charset="foo.html"; charset="bar.html""#, "foo.html"),
        ("attachment; filename=foo-ä.html", "text/plain; charset=foo-ä.html", "foo-ä.html"),
        ("attachment; filename *=UTF-8''foo-%c3%a4.html", "text/plain; charset *=UTF-8''foo-%c3%a4.html", nil),
        ("#attbrokenquotedfn", #"text/plain; charset="foo.html".txt"#, "foo.html"),
        ("#attbrokenquotedfn2", #"text/plain; charset="bar"#, "bar"),
        ("#attbrokenquotedfn3", #"text/plain; charset=foo"bar;baz"qux"#, #"foo"bar"#),
        ("#attmissingdelim2", "text/plain; charset=bar foo=foo", "bar foo=foo"),
    ] as [(String, String, String?)])
    func parseMediaTypeCharset(_ source: String, _ contentType: String, _ want: String?) {
        let response = Self.response(contentType)
        #expect(response.mimeType == "text/plain", "\(source)")
        #expect(response.textEncodingName == want, "\(source)")
    }
}
