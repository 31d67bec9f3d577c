import Courier
import Foundation
import Testing

#if canImport(FoundationXML)
import FoundationXML
#endif

/// Twins of AFNetworking's `Tests/Tests/AFXMLParserResponseSerializerTests.m`. Pure.
@Suite("Conformance: AFNetworking AFXMLParserResponseSerializerTests")
struct AFXMLParserResponseSerializerConformanceTests {
    @Test func testThatXMLParserResponseSerializerAcceptsApplicationXMLMimeType() throws {
        try XMLParserResponseSerializer().validate(Conformance.response(contentType: "application/xml"), data: Conformance.xmlSample)
    }

    @Test func testThatXMLParserResponseSerializerAcceptsTextXMLMimeType() throws {
        try XMLParserResponseSerializer().validate(Conformance.response(contentType: "text/xml"), data: Conformance.xmlSample)
    }

    @Test func testThatXMLParserResponseSerializerDoesNotAcceptsNonStandardXMLMimeType() {
        #expect {
            try XMLParserResponseSerializer().validate(Conformance.response(contentType: "nonstandard/xml"), data: Conformance.xmlSample)
        } throws: { error in
            Conformance.isCourierError(error, .unacceptableContentType)
        }
    }

    /// AFNetworking returns an `NSXMLParser`; an `XMLParser` is not `Sendable`, so Courier returns
    /// a source that makes one for the caller's thread.
    @Test func testThatXMLParserResponseSerializerReturnsNSXMLParserObjectForValidXML() throws {
        let source = try #require(
            try XMLParserResponseSerializer().responseObject(for: Conformance.response(contentType: "application/xml"), data: Conformance.xmlSample))
        #expect(source.makeParser().parse())
    }

    @Test func testThatXMLParserResponseSerializerCanBeCopied() {
        var original = XMLParserResponseSerializer()
        original.http.acceptableStatusCodes = IndexSet(integer: 100)
        original.http.acceptableContentTypes = ["test/type"]
        var copy = original
        #expect(copy.http.acceptableStatusCodes == original.http.acceptableStatusCodes)
        #expect(copy.http.acceptableContentTypes == original.http.acceptableContentTypes)
        copy.http.acceptableContentTypes = nil
        #expect(original.http.acceptableContentTypes == ["test/type"])
    }
}
