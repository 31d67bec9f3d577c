import Courier
import Foundation
import HTTPTypes
import Testing

#if canImport(FoundationXML)
import FoundationXML
#endif

/// Collects element names.
private final class ElementCollector: NSObject, XMLParserDelegate {
    var names: [String] = []
    func parser(
        _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName qName: String?,
        attributes attributeDict: [String: String] = [:]
    ) {
        self.names.append(elementName)
    }
}

let malformedXML = [
    "<a><b></a>", "<a>", "<a></b>", "not xml", "<a></a><b></b>", "<?xml version=\"1.0\"?>", "<a attr=></a>", "<a>&bogus;</a>",
    "\u{FEFF}", "<", "<a><!-- </a>", "<a/>trailing<b/>",
]

@Suite("XMLParserResponseSerializer")
struct XMLParserResponseSerializerTests {
    @Test(arguments: ["application/xml", "text/xml", "text/xml; charset=utf-8", "APPLICATION/XML", "application/atom+xml"])
    func parsesWellFormedXML(_ type: String) throws {
        let body = Fixture.data(#"<?xml version="1.0"?><feed><entry id="1"/><entry id="2">text</entry></feed>"#)
        let source = try #require(try XMLParserResponseSerializer().responseObject(for: Fixture.response(200, type), data: body))
        let parser = source.makeParser()
        let collector = ElementCollector()
        parser.delegate = collector
        #expect(parser.parse())
        #expect(collector.names == ["feed", "entry", "entry"])
    }

    @Test func malformedXMLIsATypedError() {
        for text in malformedXML {
            let body = Fixture.data(text)
            do {
                _ = try XMLParserResponseSerializer().responseObject(for: Fixture.response(200, "application/xml"), data: body)
                Issue.record("expected failure for \(text)")
            } catch {
                #expect(error.code == .responseSerializationFailed, "\(text)")
                #expect(error.data == body)
                #expect(error.underlyingError != nil)
            }
        }
    }

    @Test func emptyAndWrongType() throws {
        #expect(try XMLParserResponseSerializer().responseObject(for: Fixture.response(200, "application/xml"), data: Data()) == nil)
        #expect(try XMLParserResponseSerializer().responseObject(for: Fixture.response(204), data: nil) == nil)
        #expect(throws: CourierError.self) {
            try XMLParserResponseSerializer().responseObject(for: Fixture.response(200, "application/json"), data: Fixture.data("<a/>"))
        }
    }

    /// AFNetworking's `AFXMLParserResponseSerializer` makes its parser unless the content type was
    /// refused: under a refused status alone, the body comes beside the status error.
    @Test func badStatusStillParsesBodyBesideError() throws {
        let body = Fixture.data("<error><reason>not found</reason></error>")
        let source = try #require(try RefusedStatus.objectBesideError(XMLParserResponseSerializer(), Fixture.response(404, "application/xml"), body))
        let parser = source.makeParser()
        let collector = ElementCollector()
        parser.delegate = collector
        #expect(parser.parse())
        #expect(collector.names == ["error", "reason"])
    }

    /// Malformed XML under a refused status: the status error, with the parse error under it.
    @Test func badStatusAndMalformedBodyChainTheParseError() {
        RefusedStatus.parseErrorUnderStatus(XMLParserResponseSerializer(), Fixture.response(500, "text/xml"), Fixture.data("<a><b></a>"))
    }

    /// A refused content type under a refused status is not parsed: the status error, the
    /// content-type error under it, and no object.
    @Test func badStatusAndBadContentTypeDoNotParse() {
        RefusedStatus.notParsedWhenTypeRefused(XMLParserResponseSerializer(), Fixture.response(500, "text/html"), Fixture.data("<a/>"))
    }

    @Test func deepNestingNeverCrashes() throws {
        // libxml2's SAX parser streams, so depth costs no stack; a deep document is simply accepted.
        let body = Data((String(repeating: "<a>", count: 100_000) + String(repeating: "</a>", count: 100_000)).utf8)
        _ = try XMLParserResponseSerializer().responseObject(for: Fixture.response(200, "text/xml"), data: body)
        let truncated = body.prefix(body.count - 4)
        #expect(throws: CourierError.self) {
            try XMLParserResponseSerializer().responseObject(for: Fixture.response(200, "text/xml"), data: truncated)
        }
    }
}

#if canImport(FoundationXML) || os(macOS)
@Suite("XMLDocumentResponseSerializer")
struct XMLDocumentResponseSerializerTests {
    @Test func parsesDocumentWithXPath() throws {
        let body = Fixture.data(#"<root><item n="1">one</item><item n="2">two</item></root>"#)
        let response = try #require(try XMLDocumentResponseSerializer().responseObject(for: Fixture.response(200, "text/xml"), data: body))
        let document = response.document()
        #expect(document.rootElement()?.name == "root")
        let items = try document.nodes(forXPath: "//item[@n='2']")
        #expect(items.first?.stringValue == "two")
        // A second call gets a document of its own.
        let again = response.document()
        #expect(again !== document)
        #expect(again.rootElement()?.childCount == 2)
    }

    @Test func options() throws {
        let body = Fixture.data("<root>  <a/>  </root>")
        let serializer = XMLDocumentResponseSerializer(options: [.nodePreserveWhitespace])
        let response = try #require(try serializer.responseObject(for: Fixture.response(200, "application/xml"), data: body))
        #expect(response.options.contains(.nodePreserveWhitespace))
        #expect(response.document().rootElement()?.childCount == 3)
    }

    /// AFNetworking's `AFXMLDocumentResponseSerializer` types, `application/xml` and `text/xml`
    /// (and Courier's `+xml`); anything else is refused before parsing.
    @Test func acceptsTheXMLTypes() throws {
        #expect(XMLDocumentResponseSerializer().http.acceptableContentTypes == ["application/xml", "text/xml"])
        for type in ["application/xml", "text/xml", "application/rss+xml"] {
            #expect(try XMLDocumentResponseSerializer().responseObject(for: Fixture.response(200, type), data: Fixture.data("<a/>")) != nil)
        }
        #expect { try XMLDocumentResponseSerializer().responseObject(for: Fixture.response(200, "application/json"), data: Fixture.data("<a/>")) } throws: {
            ($0 as? CourierError)?.code == .unacceptableContentType
        }
    }

    @Test func malformedXMLIsATypedError() {
        for text in malformedXML {
            let body = Fixture.data(text)
            #expect(performing: {
                try XMLDocumentResponseSerializer().responseObject(for: Fixture.response(200, "application/xml"), data: body)
            }, throws: { error in
                guard let error = error as? CourierError else { return false }
                return error.code == .responseSerializationFailed && error.data == body
            })
        }
    }

    /// AFNetworking's `AFXMLDocumentResponseSerializer` parses the body under a refused status
    /// (not under a refused content type): the document comes beside the status error.
    @Test func badStatusStillParsesBodyBesideError() throws {
        let body = Fixture.data(#"<error code="42">not found</error>"#)
        let response = try #require(try RefusedStatus.objectBesideError(XMLDocumentResponseSerializer(), Fixture.response(404, "text/xml"), body))
        let root = response.document().rootElement()
        #expect(root?.name == "error")
        #expect(root?.attribute(forName: "code")?.stringValue == "42")
    }

    /// Malformed XML under a refused status: the status error, with the parse error under it.
    @Test func badStatusAndMalformedBodyChainTheParseError() {
        RefusedStatus.parseErrorUnderStatus(XMLDocumentResponseSerializer(), Fixture.response(500, "application/xml"), Fixture.data("<a><b></a>"))
    }

    /// A refused content type under a refused status is not parsed.
    @Test func badStatusAndBadContentTypeDoNotParse() {
        RefusedStatus.notParsedWhenTypeRefused(XMLDocumentResponseSerializer(), Fixture.response(500, "text/html"), Fixture.data("<a/>"))
    }

    static func nested(_ depth: Int) -> Data {
        Data((String(repeating: "<a>", count: depth) + "LEAF" + String(repeating: "</a>", count: depth)).utf8)
    }

    /// libxml2 (through FoundationXML) builds 256 levels and drops what is deeper while reporting
    /// success: a deeper document is refused, naming the depth, instead of coming back cut off.
    @Test func aDocumentDeeperThanTheParserBuildsIsRefusedNotTruncated() throws {
        let fits = try #require(try XMLDocumentResponseSerializer().responseObject(for: Fixture.response(200, "text/xml"), data: Self.nested(256)))
        #expect(fits.document().rootElement()?.stringValue == "LEAF")
        #expect(performing: {
            try XMLDocumentResponseSerializer().responseObject(for: Fixture.response(200, "text/xml"), data: Self.nested(300))
        }, throws: { error in
            guard let error = error as? CourierError else { return false }
            return error.code == .responseSerializationFailed && error.message.contains("300 deep")
        })
        // Never a crash however deep.
        _ = try? XMLDocumentResponseSerializer().responseObject(for: Fixture.response(200, "text/xml"), data: Self.nested(10_000))
    }

    /// External entities are never loaded unless the options ask for it: a server's document does
    /// not read the client's files into itself (XXE), with the default options or with options
    /// that name no entity policy.
    @Test func externalEntitiesAreNotLoaded() throws {
        let secret = FileManager.default.temporaryDirectory.appendingPathComponent("courier-xxe-\(UUID().uuidString).txt")
        try Data("TOPSECRET".utf8).write(to: secret)
        defer { try? FileManager.default.removeItem(at: secret) }
        let body = Fixture.data(#"<?xml version="1.0"?><!DOCTYPE r [<!ENTITY ext SYSTEM "\#(secret.absoluteString)">]><r>before &ext; after</r>"#)
        // Same-origin-only too: a body has no origin, and FoundationXML on Linux loaded every
        // entity under it (it read the file).
        let serializers = [
            XMLDocumentResponseSerializer(), XMLDocumentResponseSerializer(options: [.nodePreserveWhitespace]),
            XMLDocumentResponseSerializer(options: [.nodeLoadExternalEntitiesSameOriginOnly]),
        ]
        for serializer in serializers {
            #expect(serializer.effectiveOptions.contains(.nodeLoadExternalEntitiesNever))
            #expect(!serializer.effectiveOptions.contains(.nodeLoadExternalEntitiesSameOriginOnly))
            let response = try #require(try serializer.responseObject(for: Fixture.response(200, "text/xml"), data: body))
            #expect(response.document().rootElement()?.stringValue?.contains("TOPSECRET") != true)
            #expect(response.options.contains(.nodeLoadExternalEntitiesNever))
        }
        // Always, when the caller names it, is kept as it is.
        #expect(XMLDocumentResponseSerializer(options: [.nodeLoadExternalEntitiesAlways]).effectiveOptions == [.nodeLoadExternalEntitiesAlways])
    }

    @Test func crossesIntoATask() async throws {
        let body = Fixture.data("<root><a/></root>")
        let response = try #require(try XMLDocumentResponseSerializer().responseObject(for: Fixture.response(200, "text/xml"), data: body))
        let name = await Task.detached { response.document().rootElement()?.name }.value
        #expect(name == "root")
    }
}

#endif

@Suite("PropertyListResponseSerializer")
struct PropertyListResponseSerializerTests {
    let value: [String: Any] = ["name": "Ada", "ids": [1, 2, 3], "when": Date(timeIntervalSince1970: 0), "blob": Data([1, 2])]

    @Test(arguments: [PropertyListSerialization.PropertyListFormat.xml, .binary])
    func readsBothFormats(_ format: PropertyListSerialization.PropertyListFormat) throws {
        let body = try PropertyListSerialization.data(fromPropertyList: self.value, format: format, options: 0)
        let object = try PropertyListResponseSerializer().responseObject(for: Fixture.response(200, "application/x-plist"), data: body)
        let dictionary = try #require(object as? [String: Any])
        #expect(dictionary["name"] as? String == "Ada")
        #expect(dictionary["blob"] as? Data == Data([1, 2]))
        // Restricting the format.
        let other: PropertyListSerialization.PropertyListFormat = format == .xml ? .binary : .xml
        #expect(throws: CourierError.self) {
            try PropertyListResponseSerializer(format: other).responseObject(for: Fixture.response(200, "application/x-plist"), data: body)
        }
        #expect(throws: Never.self) {
            try PropertyListResponseSerializer(format: format).responseObject(for: Fixture.response(200, "application/x-plist"), data: body)
        }
    }

    @Test func malformedIsATypedError() throws {
        let xml = try PropertyListSerialization.data(fromPropertyList: self.value, format: .xml, options: 0)
        let binary = try PropertyListSerialization.data(fromPropertyList: self.value, format: .binary, options: 0)
        for body in [Fixture.data("<plist><dict><key>a</key></plist>"), xml.prefix(xml.count / 2), binary.prefix(binary.count - 5), Data("bplist00\u{0}\u{1}".utf8), Data([0xFF, 0x00, 0x13])] {
            #expect(performing: {
                try PropertyListResponseSerializer().responseObject(for: Fixture.response(200, "application/x-plist"), data: Data(body))
            }, throws: { error in
                guard let error = error as? CourierError else { return false }
                return error.code == .responseSerializationFailed && error.data == Data(body)
            })
        }
    }

    /// AFNetworking's `AFPropertyListResponseSerializer` parses the body under a refused status
    /// (not under a refused content type): the object comes beside the status error, also when
    /// any content type is accepted.
    @Test func badStatusStillParsesBodyBesideError() throws {
        let body = try PropertyListSerialization.data(fromPropertyList: ["error": "not found"], format: .xml, options: 0)
        var unrestricted = PropertyListResponseSerializer()
        unrestricted.http.acceptableContentTypes = nil
        for (serializer, type) in [(PropertyListResponseSerializer(), "application/x-plist"), (unrestricted, "text/plain")] {
            let object = try RefusedStatus.objectBesideError(serializer, Fixture.response(404, type), body)
            #expect((object as? [String: Any])?["error"] as? String == "not found")
        }
    }

    /// A body that is not a property list under a refused status: the status error, with the
    /// parse error under it.
    @Test func badStatusAndMalformedBodyChainTheParseError() {
        RefusedStatus.parseErrorUnderStatus(
            PropertyListResponseSerializer(), Fixture.response(500, "application/x-plist"), Fixture.data("<plist><dict><key>a</key></plist>"))
    }

    /// A refused content type under a refused status is not parsed.
    @Test func badStatusAndBadContentTypeDoNotParse() throws {
        let body = try PropertyListSerialization.data(fromPropertyList: ["a": 1], format: .xml, options: 0)
        RefusedStatus.notParsedWhenTypeRefused(PropertyListResponseSerializer(), Fixture.response(500, "text/html"), body)
    }

    @Test func emptyAndWrongType() throws {
        #expect(try PropertyListResponseSerializer().responseObject(for: Fixture.response(200, "application/x-plist"), data: nil) == nil)
        #expect(throws: CourierError.self) {
            try PropertyListResponseSerializer().responseObject(for: Fixture.response(200, "application/json"), data: Fixture.data("{}"))
        }
    }
}
