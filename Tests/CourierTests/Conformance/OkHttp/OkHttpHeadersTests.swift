// Ported from OkHttp's okhttp/src/jvmTest/kotlin/okhttp3/HeadersTest.kt, HeadersJvmTest.kt,
// HeadersKotlinTest.kt and HeadersRequestTest.kt (https://github.com/square/okhttp),
// Copyright (C) 2012–2019 Square, Inc., licensed under the Apache License, Version 2.0.

import CourierTesting
import Foundation
import HTTPTypes
import Testing

@testable import Courier

/// Twins of OkHttp's header tests. OkHttp's `Headers` is Courier's `HTTPFields` (swift-http-types),
/// set on a ``Request`` through ``Request/headerFields`` or AFNetworking's
/// ``Request/setValue(_:forHTTPHeaderField:)``; what OkHttp's `http2HeadersList` makes of a
/// request is checked on the wire, against a TestServer over HTTP/2 (TLS, `h2`), and what its
/// `readHttp2HeadersList` makes of a response against a ``ScriptedHTTP2Server``.
///
/// Not ported, OkHttp's own API with no Courier counterpart: `ofThrowsOddNumberOfHeaders` (a
/// vararg list of names and values), `ofMapThrowsOnNull` (a Kotlin null in a map),
/// `nameIndexesAreStrict`/`valueIndexesAreStrict` (indexed access), `byteCount`,
/// `headersToString`, `headersToStringRedactsSensitiveHeaders` and
/// `sensitiveHeadersNotIncludedInExceptions` (its `toString` and exception messages; Courier
/// refuses a bad name by having no `HTTPField.Name` for it, with no message to redact), and
/// `addParsing`, `addThrowsOnEmptyName`, `addThrowsOnNoColon`, `addThrowsOnMultiColon` (a
/// `"name: value"` line parser for building headers; Courier parses only the wire's, in NIO).
///
/// Where Courier answers otherwise on purpose, the test asserts Courier's answer and says what
/// OkHttp does and the rule Courier follows. The differences come from swift-http-types, whose
/// `HTTPField.Name` is a token or nothing and whose `HTTPField` makes any value legal (RFC 9110
/// section 5.5) instead of refusing it:
/// - a name with white space around it is refused (no name), not trimmed;
/// - a value's CR, LF, NUL and other controls become spaces instead of an error;
/// - a value's non-ASCII characters are sent as their UTF-8 bytes (`obs-text`), as OkHttp's
///   `addUnsafeNonAscii` does, instead of an error.
@Suite("OkHttp's headers tests")
struct OkHttpHeadersTests {
    static func name(_ text: String) -> HTTPField.Name? { HTTPField.Name(text) }

    // MARK: Names and values

    /// OkHttp: `ofTrims`, `ofMapTrimsValue`: white space around a value goes. Around a name,
    /// OkHttp trims it too (`ofMapTrimsKey`); swift-http-types has no name for `" User-Agent "`
    /// (RFC 9110 section 5.1: a field name is a token), so ``Request/setValue(_:forHTTPHeaderField:)``
    /// sets nothing.
    @Test func ofTrims() {
        #expect(HTTPField(name: .userAgent, value: " \r OkHttp ").value == "OkHttp")
        #expect(HTTPField(name: .userAgent, value: " OkHttp ").value == "OkHttp")
        #expect(Self.name("\t User-Agent \n") == nil)  // OkHttp: "User-Agent"
        #expect(Self.name(" User-Agent ") == nil)  // OkHttp: "User-Agent"

        var request = Request(url: URL(string: "https://example.com/")!)
        request.setValue(" OkHttp ", forHTTPHeaderField: "User-Agent")
        #expect(request.value(forHTTPHeaderField: "user-agent") == "OkHttp")
        request.setValue("Chrome", forHTTPHeaderField: " User-Agent ")
        #expect(request.value(forHTTPHeaderField: "User-Agent") == "OkHttp", "the padded name set nothing")
        #expect(request.headerFields.count == 1)
    }

    /// OkHttp: `ofThrowsOnEmptyName`, `ofMapThrowsOnEmptyName`, `ofMapThrowsOnBlankName`,
    /// `ofMapRejectsNullCharInName`, `builderRejectsUnicodeInHeaderName`,
    /// `varargFactoryRejectsUnicodeInHeaderName`, `mapFactoryRejectsUnicodeInHeaderName`,
    /// `addUnsafeNonAsciiRejectsUnicodeName`: no field has such a name, and setting one on a
    /// request sets nothing.
    @Test(arguments: ["", " ", "User-\u{0}Agent", "héader1", "a b", "a:b", "a\r\nb"])
    func aNameThatIsNoTokenIsRefused(_ text: String) {
        #expect(Self.name(text) == nil)
        var request = Request(url: URL(string: "https://example.com/")!)
        request.setValue("OkHttp", forHTTPHeaderField: text)
        #expect(request.headerFields.isEmpty)
        #expect(request.value(forHTTPHeaderField: text) == nil)
    }

    /// OkHttp: `ofAcceptsEmptyValue`, `ofMapAcceptsEmptyValue`.
    @Test func anEmptyValueIsAccepted() {
        var request = Request(url: URL(string: "https://example.com/")!)
        request.setValue("", forHTTPHeaderField: "User-Agent")
        #expect(request.value(forHTTPHeaderField: "User-Agent") == "")
        #expect(request.headerFields.count == 1)
    }

    /// OkHttp: `ofMakesDefensiveCopy`, `ofMapMakesDefensiveCopy`: the fields a request was given
    /// do not change with the collection they came from (`HTTPFields` is a value).
    @Test func fieldsAreCopied() {
        var fields: HTTPFields = [.userAgent: "OkHttp"]
        let request = Request(url: URL(string: "https://example.com/")!, headerFields: fields)
        fields[.userAgent] = "Chrome"
        #expect(request.value(forHTTPHeaderField: "User-Agent") == "OkHttp")
    }

    /// OkHttp: `ofRejectsNullChar`, `ofMapRejectsNullCharInValue` refuse a NUL in a value.
    /// Courier's fields (swift-http-types) replace NUL, CR, LF and the other controls with a
    /// space, as RFC 9110 section 5.5 lets a recipient do, so that no value can end the field or
    /// the head; the request goes out with the spaces, over HTTP/1.1 and HTTP/2.
    @Test(arguments: [false, true])
    func aControlInAValueBecomesASpace(_ http2: Bool) async throws {
        #expect(HTTPField(name: .userAgent, value: "Square\u{0}OkHttp").value == "Square OkHttp")
        #expect(HTTPField(name: .userAgent, value: "Square\r\nX-Injected: 1").value == "Square  X-Injected: 1")
        try await OkHttpCallTests.withMock(http2: http2) { mock, manager in
            mock.enqueue(OkHttpCallTests.mock())
            var request = Request(url: mock.url("/"))
            request.setValue("Square\u{0}OkHttp", forHTTPHeaderField: "User-Agent")
            request.setValue("a\r\nX-Injected: 1", forHTTPHeaderField: "X-Test")
            _ = try await manager.responseOfAnyStatus(for: request)
            let received = try #require(mock.requests.last)
            #expect(received.httpVersion == (http2 ? "HTTP/2" : "HTTP/1.1"))
            #expect(received.value(forHTTPHeaderField: "User-Agent") == "Square OkHttp")
            #expect(received.value(forHTTPHeaderField: "X-Test") == "a  X-Injected: 1")
            #expect(received.value(forHTTPHeaderField: "X-Injected") == nil)
        }
    }

    /// OkHttp: `builderRejectsUnicodeInHeaderValue`, `varargFactoryRejectsUnicodeInHeaderValue`,
    /// `mapFactoryRejectsUnicodeInHeaderValue` refuse `é` in a value; `addUnsafeNonAsciiAcceptsUnicodeValue`
    /// accepts it. Courier accepts it and sends its UTF-8 bytes (RFC 9110 section 5.5's
    /// `obs-text`, which a field value may hold), over HTTP/1.1 and HTTP/2 (RFC 9113 section 8.2.1
    /// forbids only NUL, CR, LF and white space at the ends).
    @Test(arguments: [false, true])
    func aNonASCIIValueIsSentAsUTF8(_ http2: Bool) async throws {
        try await OkHttpCallTests.withMock(http2: http2) { mock, manager in
            mock.enqueue(OkHttpCallTests.mock())
            var request = Request(url: mock.url("/"))
            request.setValue("valué1", forHTTPHeaderField: "header1")
            _ = try await manager.responseOfAnyStatus(for: request)
            let received = try #require(mock.requests.last)
            #expect(received.value(forHTTPHeaderField: "header1") == "valué1")
        }
    }

    // MARK: Collections of fields

    /// OkHttp: `headersEquals`, `headersNotEquals`.
    @Test func equality() {
        let first: HTTPFields = [.connection: "close", .transferEncoding: "chunked"]
        let second: HTTPFields = [.connection: "close", .transferEncoding: "chunked"]
        let third: HTTPFields = [.connection: "keep-alive", .transferEncoding: "chunked"]
        #expect(first == second)
        #expect(first.hashValue == second.hashValue)
        #expect(first != third)
    }

    /// OkHttp: `headersAddAll`: fields appended keep their order and each name its letter case,
    /// repeated names included.
    @Test func headersAddAll() throws {
        let source = HTTPFields([
            HTTPField(name: try #require(Self.name("A")), value: "aa"),
            HTTPField(name: try #require(Self.name("a")), value: "aa"),
            HTTPField(name: try #require(Self.name("B")), value: "bb"),
        ])
        var fields = HTTPFields([HTTPField(name: try #require(Self.name("A")), value: "a")])
        fields.append(contentsOf: source)
        fields.append(HTTPField(name: try #require(Self.name("C")), value: "c"))
        #expect(fields.map { "\($0.name.rawName): \($0.value)" } == ["A: a", "A: aa", "a: aa", "B: bb", "C: c"])
    }

    /// OkHttp: `toMultimapGroupsHeaders`, `toMultimapUsesCanonicalCase`,
    /// `toMultimapAllowsCaseInsensitiveGet`: the values of one name, whatever its case, come
    /// together, looked up in any case.
    ///
    /// One value for a repeated name: OkHttp's `get` gives the last. Courier's
    /// ``Request/value(forHTTPHeaderField:)`` gives them all joined with `, `, the field's value
    /// as RFC 9110 section 5.3 combines repeated field lines.
    @Test func valuesOfOneName() throws {
        let fields = HTTPFields([
            HTTPField(name: try #require(Self.name("cache-control")), value: "no-store"),
            HTTPField(name: try #require(Self.name("Cache-Control")), value: "no-cache"),
            HTTPField(name: .userAgent, value: "OkHttp"),
        ])
        #expect(fields[values: .cacheControl] == ["no-store", "no-cache"])
        #expect(fields[values: try #require(Self.name("CACHE-CONTROL"))] == ["no-store", "no-cache"])
        #expect(fields[values: .userAgent] == ["OkHttp"])
        let request = Request(url: URL(string: "https://example.com/")!, headerFields: fields)
        #expect(request.value(forHTTPHeaderField: "cache-control") == "no-store, no-cache")  // OkHttp: "no-cache"
        #expect(request.value(forHTTPHeaderField: "CACHE-control") == "no-store, no-cache")
    }

    /// OkHttp: `getOperator`, `builderGetOperator`, `iteratorOperator`.
    @Test func getAndIterate() throws {
        let a = try #require(Self.name("a")), c = try #require(Self.name("c")), e = try #require(Self.name("e"))
        var fields = HTTPFields()
        fields.append(HTTPField(name: a, value: "b"))
        fields.append(HTTPField(name: c, value: "d"))
        #expect(fields[a] == "b")
        #expect(fields[c] == "d")
        #expect(fields[e] == nil)
        #expect(fields.map { [$0.name.rawName, $0.value] } == [["a", "b"], ["c", "d"]])
    }

    /// OkHttp: `builderSetOperator`, `addDate`, `addInstant`, `setDate`, `setInstant`: a date in
    /// a field is an IMF-fixdate (RFC 9110 section 5.6.7), and reads back as the same instant.
    @Test func dates() throws {
        let name = try #require(Self.name("Test-Date"))
        var fields = HTTPFields()
        fields[name] = HTTPDate.format(Date(timeIntervalSince1970: 0))
        #expect(fields[name] == "Thu, 01 Jan 1970 00:00:00 GMT")
        fields[name] = HTTPDate.format(Date(timeIntervalSince1970: 1))
        #expect(fields[name] == "Thu, 01 Jan 1970 00:00:01 GMT")
        #expect(fields[values: name].count == 1, "set replaces")
        #expect(HTTPDate.parse(try #require(fields[name])) == Date(timeIntervalSince1970: 1))
    }

    // MARK: HTTP/2

    /// OkHttp: `http2HeadersListDropsForbiddenHeadersHttp2`: over HTTP/2 the request's `Host`
    /// becomes `:authority`, and HTTP/1's connection-specific fields (`Connection`, `Upgrade`,
    /// `Keep-Alive`, `Proxy-Connection`, `Transfer-Encoding`) and the fields `Connection` names
    /// stay behind (RFC 9113 section 8.2.2); the others go, lower-cased (the server's
    /// swift-nio-http2 would reset a stream with an upper-case name).
    @Test func http2HeadersListDropsForbiddenHeaders() async throws {
        try await OkHttpCallTests.withMock(http2: true) { mock, manager in
            mock.enqueue(OkHttpCallTests.mock())
            var request = Request(url: mock.url("/"))
            request.setValue("upgrade, X-Hop", forHTTPHeaderField: "Connection")
            request.setValue("websocket", forHTTPHeaderField: "Upgrade")
            request.setValue("square.com", forHTTPHeaderField: "Host")
            request.setValue("timeout=5", forHTTPHeaderField: "Keep-Alive")
            request.setValue("keep-alive", forHTTPHeaderField: "Proxy-Connection")
            request.setValue("chunked", forHTTPHeaderField: "Transfer-Encoding")
            request.setValue("1", forHTTPHeaderField: "X-Hop")
            request.setValue("2", forHTTPHeaderField: "X-End-To-End")
            let response = try await manager.responseOfAnyStatus(for: request)
            #expect(response.response.status.code == 200)
            let received = try #require(mock.requests.last)
            #expect(received.httpVersion == "HTTP/2")
            #expect(received.value(forHTTPHeaderField: "Host") == "square.com", "Host travelled as :authority")
            for name in ["Connection", "Upgrade", "Keep-Alive", "Proxy-Connection", "Transfer-Encoding", "X-Hop"] {
                #expect(received.value(forHTTPHeaderField: name) == nil, "\(name)")
            }
            #expect(received.value(forHTTPHeaderField: "X-End-To-End") == "2")
        }
    }

    /// OkHttp: `http2HeadersListDontDropTeIfTrailersHttp2`: `TE: trailers`, the one `TE` HTTP/2
    /// allows (RFC 9113 section 8.2.2), is sent as `te: trailers`.
    @Test(arguments: ["trailers", "Trailers"])
    func http2HeadersListKeepsTETrailers(_ value: String) async throws {
        try await OkHttpCallTests.withMock(http2: true) { mock, manager in
            mock.enqueue(OkHttpCallTests.mock())
            var request = Request(url: mock.url("/"))
            request.setValue(value, forHTTPHeaderField: "TE")
            _ = try await manager.responseOfAnyStatus(for: request)
            let received = try #require(mock.requests.last)
            #expect(received.httpVersion == "HTTP/2")
            #expect(received.value(forHTTPHeaderField: "TE") == "trailers")
        }
    }

    /// `http2HeadersListDropsForbiddenHeadersHttp2`'s `TE: gzip`: OkHttp drops the field and
    /// sends the request. Courier refuses the request with ``CourierError/Code/invalidRequest``
    /// before its stream opens (its documented answer): RFC 9113 section 8.2.2 says an HTTP/2
    /// `TE` "MUST NOT contain any value other than trailers", and a request that asks for a
    /// transfer coding is told so rather than sent without what it asked for.
    @Test func http2RefusesTEOtherThanTrailers() async throws {
        try await OkHttpCallTests.withMock(http2: true) { mock, manager in
            mock.enqueue(OkHttpCallTests.mock())
            var request = Request(url: mock.url("/"))
            request.setValue("gzip", forHTTPHeaderField: "TE")
            let error = await #expect(throws: CourierError.self) { _ = try await manager.responseOfAnyStatus(for: request) }
            #expect(error?.code == .invalidRequest, "\(String(describing: error))")
            #expect(mock.requests.isEmpty)
        }
    }

    /// OkHttp: `readNameValueBlockDropsForbiddenHeadersHttp2`: OkHttp reads a response block with
    /// an unknown pseudo-field (`:version`) and a `connection` field, keeping the first and
    /// dropping the second. Courier refuses the response: RFC 9113 sections 8.2.2 and 8.3 make
    /// both malformed, and a client must treat a malformed response as a stream error; the request
    /// fails naming swift-nio-http2's error.
    @Test func http2ResponseWithForbiddenFieldsIsRefused() async throws {
        let block = [(":status", "200"), (":version", "HTTP/1.1"), ("connection", "close")]
        try await OkHttpCallTests.overHTTP2({ _, _ in .respondWithBlock(block) }) { server, manager in
            let error = await #expect(throws: CourierError.self) {
                _ = try await manager.responseOfAnyStatus(for: Request(url: OkHttpCallTests.url(server)))
            }
            let message = error?.message ?? ""
            #expect(message.contains("UnknownPseudoHeader") || message.contains("ForbiddenHeaderField"), "\(message)")
        }
    }
}
