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
public struct XMLDocumentResponseSerializer: ResponseSerializer {
    /// The validation part; its content types are the XML ones.
    public var http = HTTPResponseSerializer()
    /// Options for `XMLDocument(data:options:)`; none by default, as in AFNetworking.
    public var options: XMLNode.Options = []

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
        try self.validate(response, data: data)
        guard let data, !data.isEmpty, !HTTPResponseSerializer.isEmptyStatus(response) else { return nil }
        // libxml2 as FoundationXML drives it recovers from many errors (`<a><b></a>` gives a
        // document), so well-formedness is checked first, with the same rules as the parser serializer.
        if let problem = XMLWellFormednessCheck.problem(in: data) {
            throw CourierError(
                .responseSerializationFailed, "the body is not a well-formed XML document",
                response: response, data: data, underlyingError: problem)
        }
        do {
            let document = try XMLDocument(data: data, options: self.options)
            return XMLDocumentResponse(data: data, options: self.options, document: document)
        } catch {
            throw CourierError(
                .responseSerializationFailed, "the body is not a well-formed XML document",
                response: response, data: data, underlyingError: error)
        }
    }
}
#endif
