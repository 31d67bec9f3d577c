import Courier
import Foundation
import HTTPTypes
import Testing

/// Twins of Alamofire's `Tests/MIMETypeTests.swift`.
///
/// Alamofire's internal `Request.MIMEType` parses a `Content-Type` for its validation; Courier's
/// parse is the public `HTTPResponse.mimeType` (the type and subtype, lower-cased, parameters and
/// white space dropped, nil when there is none), and its matching is `HTTPResponseSerializer`'s
/// check against `acceptableContentTypes`, where `*` stands for any type or subtype.
@Suite("Conformance: Alamofire MIMETypeTests")
struct AlamofireMIMETypeConformanceTests {
    static func mimeType(_ contentType: String) -> String? {
        HTTPResponse(status: .ok, headerFields: [.contentType: contentType]).mimeType
    }

    /// Whether a serializer accepting `acceptable` takes a body sent as `contentType`.
    static func accepts(_ acceptable: String, _ contentType: String) -> Bool {
        var serializer = HTTPResponseSerializer()
        serializer.acceptableContentTypes = [acceptable]
        let response = HTTPResponse(status: .ok, headerFields: [.contentType: contentType])
        return (try? serializer.validate(response, data: Data("x".utf8))) != nil
    }

    @Test(arguments: [
        ("text/plain", "text", "plain"), ("application/json", "application", "json"), ("image/png", "image", "png"),
        ("*/*", "*", "*"), ("text/*", "text", "*"), ("*/json", "*", "json"),
    ])
    func parsesWellFormedPair(input: String, expectedType: String, expectedSubtype: String) throws {
        let mime = try #require(Self.mimeType(input))
        let parts = mime.split(separator: "/", omittingEmptySubsequences: false)
        #expect(parts.count == 2)
        #expect(parts.first.map(String.init) == expectedType)
        #expect(parts.last.map(String.init) == expectedSubtype)
    }

    @Test func stripsParameters() {
        #expect(Self.mimeType("text/plain; charset=utf-8") == "text/plain")
    }

    @Test func stripsWhitespace() {
        #expect(Self.mimeType("  text/plain  ") == "text/plain")
    }

    /// Issue 17: `mimeType` returned `text` for a `Content-Type` with no `/`.
    @Test func singleComponentWithoutSlashReturnsNil() {
        #expect(Self.mimeType("text") == nil)
        #expect(Self.mimeType("text/") == nil)
        #expect(Self.mimeType("/plain") == nil)
        #expect(!Self.accepts("text", "text"))
    }

    @Test func emptyStringReturnsNil() {
        #expect(Self.mimeType("") == nil)
        #expect(Self.mimeType("; charset=utf-8") == nil)
    }

    @Test func exactMatch() {
        #expect(Self.accepts("text/plain", "text/plain"))
        #expect(Self.accepts("text/plain", "TEXT/Plain; charset=utf-8"))
    }

    @Test func noMatchOnDifferentPair() {
        #expect(!Self.accepts("application/json", "text/plain"))
    }

    @Test func sameTypeButDifferentSubtypeNoMatch() {
        #expect(!Self.accepts("text/plain", "text/html"))
    }

    /// Alamofire's `isWildcard` is true for `*/*` only: the pattern that takes every type.
    @Test func wildcardDetection() {
        for type in ["text/plain", "application/json", "image/png"] {
            #expect(Self.accepts("*/*", type))
        }
        #expect(!Self.accepts("text/*", "application/json"))
        #expect(!Self.accepts("*/json", "text/plain"))
        #expect(!Self.accepts("text/plain", "text/html"))
    }

    @Test func wildcardSubtypeMatchesAnySametype() {
        #expect(Self.accepts("text/*", "text/plain"))
        #expect(Self.accepts("text/*", "text/html"))
    }

    @Test func wildcardSubtypeDoesNotMatchDifferentType() {
        #expect(!Self.accepts("text/*", "application/json"))
    }

    @Test func wildcardTypeMatchesSameSubtype() {
        #expect(Self.accepts("*/json", "application/json"))
    }

    @Test func fullWildcardMatchesAny() {
        #expect(Self.accepts("*/*", "text/plain"))
        #expect(Self.accepts("*/*", "application/json"))
        #expect(Self.accepts("*/*", "image/png"))
    }

    /// Not a source test: a body without a `Content-Type` is refused even by `*/*`, and a pattern
    /// is compared case-insensitively like a name.
    @Test func aWildcardNeedsAContentTypeAndIgnoresCase() {
        var serializer = HTTPResponseSerializer()
        serializer.acceptableContentTypes = ["*/*"]
        #expect((try? serializer.validate(HTTPResponse(status: .ok), data: Data("x".utf8))) == nil)
        #expect(Self.accepts("TEXT/*", "text/plain"))
        #expect(!Self.accepts("text*", "text/plain"))
    }
}
