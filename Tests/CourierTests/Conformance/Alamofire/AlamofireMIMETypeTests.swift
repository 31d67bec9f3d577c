import Courier
import Foundation
import HTTPTypes
import Testing

/// Twins of Alamofire's `Tests/MIMETypeTests.swift`.
///
/// Alamofire's internal `Request.MIMEType` parses a `Content-Type` for its validation; Courier's
/// parse is the public `HTTPResponse.mimeType` (the type and subtype, lower-cased, parameters and
/// white space dropped, nil when there is none), and its matching is `HTTPResponseSerializer`'s
/// check against `acceptableContentTypes`. Courier has no wildcards (`text/*`, `*/*`): those tests
/// are "not built" in the table.
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
}
