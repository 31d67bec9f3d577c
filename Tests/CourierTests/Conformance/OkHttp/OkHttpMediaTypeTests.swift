import Foundation
import HTTPTypes
import Testing

@testable import Courier

/// OkHttp's media type tests (`okhttp/src/jvmTest/kotlin/okhttp3/MediaTypeTest.kt`, with Guava's
/// cases, and `MediaTypeJvmTest.kt`, Apache 2.0), against what Courier reads of a
/// `Content-Type`: ``HTTPResponse/mimeType`` (type and subtype, lower-cased),
/// ``HTTPResponse/textEncodingName`` (the `charset`, lower-cased, unquoted) and the encoding a
/// ``StringResponseSerializer`` decodes with (OkHttp's `charset()`). Each test keeps OkHttp's
/// name. OkHttp's `parameter(name)` for other parameters, `toString`, `equals` and `hashCode`
/// are its own API and are not ported (`testParameter`, `testMultipleParameters`,
/// `testRepeatedParameter`); `MediaTypeGetTest` only changes how a refusal is reported.
///
/// Where Courier answers otherwise on purpose, the test asserts Courier's answer:
/// - ``HTTPResponse/mimeType`` is lenient (its documented rule): the text before the first `;`,
///   trimmed, lower-cased, with a non-empty type and subtype around one `/`; it does not check
///   that they are tokens, nor that the parameters are well formed. It only decides whether a
///   serializer accepts the body, and a malformed type matches no acceptable type but a
///   wildcard. OkHttp refuses the whole `Content-Type` (`toMediaTypeOrNull()` is null);
/// - a charset name quoted twice (`"'utf-8'"`) is read as the name inside (``TextEncoding`` drops
///   quotes, the answer OkHttp gives on Android); OkHttp on the JVM has no charset.
@Suite("OkHttp's media type tests")
struct OkHttpMediaTypeTests {
    static func response(_ contentType: String) -> HTTPResponse {
        HTTPResponse(status: .ok, headerFields: [.contentType: contentType])
    }

    static func mimeType(_ contentType: String) -> String? {
        Self.response(contentType).mimeType
    }

    static func charsetName(_ contentType: String) -> String? {
        Self.response(contentType).textEncodingName
    }

    /// OkHttp's `charset()`: the encoding Courier knows the `charset` by, nil when it knows none.
    static func charset(_ contentType: String) -> String.Encoding? {
        Self.charsetName(contentType).flatMap { TextEncoding.encoding(forCharset: $0) }
    }

    @Test func testParse() {
        #expect(Self.mimeType("text/plain;boundary=foo;charset=utf-8") == "text/plain")
        #expect(Self.charsetName("text/plain;boundary=foo;charset=utf-8") == "utf-8")
    }

    @Test(arguments: [
        ("text/plain", "text/plain"),
        ("application/atom+xml; charset=utf-8", "application/atom+xml"),
        ("application/atom+xml; a=1; a=2; b=3", "application/atom+xml"),
        ("image/gif; foo=bar", "image/gif"),
        ("text/plain; a=1", "text/plain"),
        ("text/plain; a=1; a=2; b=3", "text/plain"),
        ("text/plain; charset=utf-16", "text/plain"),
        ("text/plain; \t \n \r a=b", "text/plain"),
        ("text/plain;", "text/plain"),
        ("text/plain; ", "text/plain"),
        ("text/plain; a=1;", "text/plain"),
        ("text/plain; a=1; ", "text/plain"),
        ("text/plain; a=1;; b=2", "text/plain"),
        ("text/plain;;", "text/plain"),
        ("text/plain; ;", "text/plain"),
    ])
    func testValidParse(_ contentType: String, _ want: String) {
        #expect(Self.mimeType(contentType) == want)
    }

    /// OkHttp refuses every one of these. Courier refuses those without a type and a subtype;
    /// for the others its lenient rule gives the type as written (OkHttp's answer: none).
    @Test(arguments: [
        ("", nil),
        ("/", nil),
        ("text", nil),
        ("text/", nil),
        ("te<t/plain", "te<t/plain"),  // OkHttp: refused (not a token)
        (" text/plain", "text/plain"),  // OkHttp: refused (leading space)
        ("te xt/plain", "te xt/plain"),  // OkHttp: refused
        ("text /plain", "text /plain"),  // OkHttp: refused
        ("text/ plain", "text/ plain"),  // OkHttp: refused
        ("text/pl@in", "text/pl@in"),  // OkHttp: refused
        ("text/plain; a", "text/plain"),  // OkHttp: refused (malformed parameter)
        ("text/plain; a=", "text/plain"),  // OkHttp: refused
        ("text/plain; a=@", "text/plain"),  // OkHttp: refused
        ("text/plain; a=\"@", "text/plain"),  // OkHttp: refused
        ("text/plain; a=1; b", "text/plain"),  // OkHttp: refused
        ("text/plain; a=1; b=", "text/plain"),  // OkHttp: refused
        ("text/plain; a=\u{2025}", "text/plain"),  // OkHttp: refused
        ("text/pl ain", "text/pl ain"),  // OkHttp: refused
        ("text/plain ", "text/plain"),  // OkHttp: refused (trailing space)
        ("text/plain ; a=1", "text/plain"),  // OkHttp: refused
    ] as [(String, String?)])
    func testInvalidParse(_ contentType: String, _ want: String?) {
        #expect(Self.mimeType(contentType) == want)
    }

    /// A `;` inside a quoted string does not end the parameter: there is no `charset` here.
    @Test func testDoubleQuotesAreSpecial() {
        #expect(Self.charsetName("text/plain;a=\";charset=utf-8;b=\"") == nil)
    }

    @Test func testSingleQuotesAreNotSpecial() {
        #expect(Self.charsetName("text/plain;a=';charset=utf-8;b='") == "utf-8")
    }

    @Test func testParseWithSpecialCharacters() {
        #expect(Self.mimeType("!#$%&'*+-.{|}~/!#$%&'*+-.{|}~; !#$%&'*+-.{|}~=!#$%&'*+-.{|}~") == "!#$%&'*+-.{|}~/!#$%&'*+-.{|}~")
    }

    @Test func testCharsetIsOneOfManyParameters() {
        #expect(Self.mimeType("text/plain;a=1;b=2;charset=utf-8;c=3") == "text/plain")
        #expect(Self.charsetName("text/plain;a=1;b=2;charset=utf-8;c=3") == "utf-8")
        #expect(Self.charsetName("text/plain;a=1;b=2;CHARSET=utf-8;c=3") == "utf-8")
    }

    @Test func testCharsetAndQuoting() {
        #expect(Self.charsetName("text/plain;a=\";charset=us-ascii\";charset=\"utf-8\";b=\"iso-8859-1\"") == "utf-8")
    }

    @Test func testDuplicatedCharsets() {
        #expect(Self.charsetName("text/plain; charset=utf-8; charset=UTF-8") == "utf-8")
    }

    @Test func testMultipleCharsetsReturnsFirstMatch() {
        #expect(Self.charsetName("text/plain; charset=utf-8; charset=utf-16") == "utf-8")
    }

    /// Single quotes are no quoting in RFC 9110, so the name is `'utf-8'`; OkHttp drops them, as
    /// Chrome does, and so does ``TextEncoding`` when it looks the name up.
    @Test func testCharsetNameIsSingleQuoted() {
        #expect(Self.charsetName("text/plain;charset='utf-8'") == "'utf-8'")
        #expect(Self.charset("text/plain;charset='utf-8'") == .utf8)
    }

    @Test func testParseDanglingSemicolon() {
        #expect(Self.mimeType("text/plain;") == "text/plain")
        #expect(Self.charsetName("text/plain;") == nil)
    }

    // MARK: MediaTypeJvmTest

    /// OkHttp on Android: UTF-8; on the JVM: no charset. Courier: UTF-8 (``TextEncoding`` drops the
    /// single quotes left inside the double ones).
    @Test func testCharsetNameIsDoubleQuotedAndSingleQuotedAndroid() {
        #expect(Self.charset("text/plain;charset=\"'utf-8'\"") == .utf8)
    }

    /// With no `charset` the serializer's fallback is used (OkHttp's `charset(default)`); with
    /// one, the charset wins over the fallback. OkHttp: ISO-8859-1; Courier reads that label as
    /// windows-1252, as the WHATWG Encoding standard does.
    @Test func testDefaultCharset() {
        var serializer = StringResponseSerializer()
        let body = Data("x".utf8)
        #expect(serializer.encoding(for: Self.response("text/plain"), data: body).0 == .utf8)
        serializer.fallbackEncoding = .ascii
        #expect(serializer.encoding(for: Self.response("text/plain"), data: body).0 == .ascii)
        #expect(serializer.encoding(for: Self.response("text/plain; charset=iso-8859-1"), data: body).0 == .windowsCP1252)
        serializer.fallbackEncoding = .utf8
        #expect(serializer.encoding(for: Self.response("text/plain; charset=iso-8859-1"), data: body).0 == .windowsCP1252)
    }

    /// Swift's `lowercased()` does not depend on the locale, so there is no Turkish dotless i.
    @Test func testTurkishDotlessIWithEnUs() {
        #expect(Self.mimeType("IMAGE/JPEG") == "image/jpeg")
    }

    @Test func testIllegalCharsetName() {
        #expect(Self.charset("text/plain; charset=\"!@#$%^&*()\"") == nil)
    }

    @Test func testUnsupportedCharset() {
        #expect(Self.charset("text/plain; charset=utf-wtf") == nil)
    }

    /// OkHttp on the JVM: no charset (the JVM case of the Android test above); Courier: UTF-8.
    @Test func testCharsetNameIsDoubleQuotedAndSingleQuoted() {
        #expect(Self.charset("text/plain;charset=\"'utf-8'\"") == .utf8)
    }

    @Test func testCharsetNameIsDoubleQuotedSingleQuote() {
        #expect(Self.charset("text/plain;charset=\"'\"") == nil)
    }
}
