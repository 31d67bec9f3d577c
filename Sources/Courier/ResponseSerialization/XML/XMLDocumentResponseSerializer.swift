import Foundation
import HTTPTypes

#if canImport(FoundationXML)
import FoundationXML
#endif

// `XMLDocument` exists on Linux (FoundationXML) and macOS only; iOS, tvOS and watchOS have none.
#if canImport(FoundationXML) || os(macOS)

/// Validates a response and parses its body into an `XMLDocument` (AFNetworking's
/// `AFXMLDocumentResponseSerializer`, which was macOS-only; this one works on Linux through
/// FoundationXML, XPath included).
///
/// `XMLDocument` is a class that is not `Sendable`; the document comes wrapped in an
/// ``XMLDocumentResponse`` that hands it out to one owner (see ``XMLDocumentResponse/document()``).
///
/// - Accepts `application/xml`, `text/xml` and any `+xml` type.
/// - An absent or empty body and a 204 or 205 response give `nil` and no error; malformed XML throws
///   ``CourierError/Code/responseSerializationFailed`` with the parse error and the body kept. The
///   body is checked with `XMLParser` before the document is built, because on Linux
///   `XMLDocument(data:)` silently recovers from malformed input; that costs a second, streaming
///   pass over the bytes.
/// - With an unacceptable status code the body is still parsed: ``serialize(response:data:)``
///   returns the document beside the status-code error (which ``responseObject(for:data:)``
///   throws), as AFNetworking's failure blocks get it; if the body does not parse either, the
///   status-code error wraps the parse error. An unacceptable content type stops there: the body
///   is not parsed.
public struct XMLDocumentResponseSerializer: ResponseSerializer {
    /// The validation part; its content types are the XML ones.
    public var http = HTTPResponseSerializer()
    /// Options for `XMLDocument(data:options:)`; none by default, as in AFNetworking.
    ///
    /// External entities (`<!ENTITY x SYSTEM "file:///…">`, `"http://…"`) are never loaded unless
    /// these options ask for it with `.nodeLoadExternalEntitiesAlways`: on Linux, libxml2 under
    /// FoundationXML would read the client's files and fetch URLs the server names while parsing
    /// (XXE), outside the session. `.nodeLoadExternalEntitiesSameOriginOnly` loads none: a body has
    /// no origin to compare an entity's with. ``effectiveOptions`` are the options the document is
    /// parsed with.
    public var options: XMLNode.Options = []

    /// ``options``, with `.nodeLoadExternalEntitiesNever` unless they name
    /// `.nodeLoadExternalEntitiesAlways`, and without `.nodeLoadExternalEntitiesSameOriginOnly`.
    ///
    /// Same-origin-only means never here: swift-corelibs-foundation's `XMLDocument` knows only
    /// never and always (`_CFXMLDocPtrFromDataWithOptions` has libxml2 substitute entities,
    /// `XML_PARSE_NOENT`, unless told never), so under that option libxml2's default loader read
    /// `file://` entities and fetched `http://` ones.
    public var effectiveOptions: XMLNode.Options {
        var options = self.options
        options.remove(.nodeLoadExternalEntitiesSameOriginOnly)
        if !options.contains(.nodeLoadExternalEntitiesAlways) { options.insert(.nodeLoadExternalEntitiesNever) }
        return options
    }

    /// The deepest nesting libxml2 builds a document for (without its `XML_PARSE_HUGE` option,
    /// which FoundationXML does not pass): deeper elements are dropped while the parse reports
    /// success, so a deeper document is refused instead.
    public static let maximumDepth = 256

    /// A serializer that accepts `application/xml`, `text/xml` and `+xml`.
    public init() {
        self.http = HTTPResponseSerializer(rules: .xml)
    }

    /// A serializer that parses with `options`.
    public init(options: XMLNode.Options) {
        self.init()
        self.options = options
    }

    public func validate(_ response: HTTPResponse?, data: Data?) throws(CourierError) {
        try self.http.validate(response, data: data)
    }

    public func responseObject(for response: HTTPResponse?, data: Data?) throws(CourierError) -> XMLDocumentResponse? {
        try HTTPResponseSerializer.objectOrError(self.serialize(response: response, data: data))
    }

    public func serialize(response: HTTPResponse?, data: Data?) -> (object: XMLDocumentResponse??, error: CourierError?) {
        self.http.serialize(response, data: data) { data throws(CourierError) in
            try self.document(from: data, response: response)
        }
    }

    /// The document of a non-empty body, or the reason there is none.
    private func document(from data: Data, response: HTTPResponse?) throws(CourierError) -> XMLDocumentResponse {
        // libxml2 as FoundationXML drives it recovers from many errors (`<a><b></a>` gives a
        // document), so well-formedness is checked first, with the same rules as the parser serializer.
        let (problem, depth) = XMLWellFormednessCheck.check(data)
        if let problem {
            throw CourierError(
                .responseSerializationFailed, "the body is not a well-formed XML document",
                response: response, data: data, underlyingError: problem)
        }
        if depth > Self.maximumDepth {
            throw CourierError(
                .responseSerializationFailed,
                "the XML document nests elements \(depth) deep, deeper than the \(Self.maximumDepth) levels XMLDocument builds on Linux (use XMLParserResponseSerializer)",
                response: response, data: data)
        }
        let options = self.effectiveOptions
        do {
            let document = try XMLDocument(data: data, options: options)
            return XMLDocumentResponse(data: data, options: options, document: document)
        } catch {
            throw CourierError(
                .responseSerializationFailed, "the body is not a well-formed XML document",
                response: response, data: data, underlyingError: error)
        }
    }
}
#endif
