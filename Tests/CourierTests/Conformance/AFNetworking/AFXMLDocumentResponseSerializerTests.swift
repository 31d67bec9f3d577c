import Courier
import Foundation
import Testing

#if canImport(FoundationXML)
import FoundationXML
#endif

/// Twins of AFNetworking's `Tests/Tests/AFXMLDocumentResponseSerializerTests.m`. Pure.
@Suite("Conformance: AFNetworking AFXMLDocumentResponseSerializerTests")
struct AFXMLDocumentResponseSerializerConformanceTests {
    @Test func testThatXMLDocumentResponseSerializerAcceptsApplicationXMLMimeType() throws {
        try XMLDocumentResponseSerializer().validate(Conformance.response(contentType: "application/xml"), data: Conformance.xmlSample)
    }

    @Test func testThatXMLDocumentResponseSerializerAcceptsTextXMLMimeType() throws {
        try XMLDocumentResponseSerializer().validate(Conformance.response(contentType: "text/xml"), data: Conformance.xmlSample)
    }

    @Test func testThatXMLDocumentResponseSerializerDoesNotAcceptsNonStandardXMLMimeType() {
        #expect {
            try XMLDocumentResponseSerializer().validate(Conformance.response(contentType: "nonstandard/xml"), data: Conformance.xmlSample)
        } throws: { error in
            Conformance.isCourierError(error, .unacceptableContentType)
        }
    }

    /// AFNetworking returns an `NSXMLDocument`; Courier returns a `Sendable` value that makes one.
    @Test func testThatXMLDocumentResponseSerializerReturnsNSXMLDocumentObjectForValidXML() throws {
        let response = try #require(
            try XMLDocumentResponseSerializer().responseObject(for: Conformance.response(contentType: "application/xml"), data: Conformance.xmlSample))
        let document = response.document()
        #expect(document.rootElement()?.name == "foo")
        #expect(document.rootElement()?.elements(forName: "bar").first?.stringValue == "someValue")
    }

    @Test func testThatXMLDocumentResponseSerializerReturnsErrorForInvalidXML() {
        let body = Data("<foo".utf8)
        #expect {
            _ = try XMLDocumentResponseSerializer().responseObject(for: Conformance.response(contentType: "application/xml"), data: body)
        } throws: { error in
            guard let error = error as? CourierError else { return false }
            return error.code == .responseSerializationFailed && error.underlyingError != nil && error.data == body
        }
    }

    @Test func testThatXMLDocumentResponseSerializerCanBeCopied() {
        var original = XMLDocumentResponseSerializer()
        original.http.acceptableStatusCodes = IndexSet(integer: 100)
        original.http.acceptableContentTypes = ["test/type"]
        original.options = .nodePreserveWhitespace
        var copy = original
        #expect(copy.http.acceptableStatusCodes == original.http.acceptableStatusCodes)
        #expect(copy.http.acceptableContentTypes == original.http.acceptableContentTypes)
        #expect(copy.options == original.options)
        copy.options = []
        #expect(original.options == .nodePreserveWhitespace)
    }
}
