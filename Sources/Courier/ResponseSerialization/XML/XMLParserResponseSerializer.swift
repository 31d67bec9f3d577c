import Foundation
import HTTPTypes

#if canImport(FoundationXML)
import FoundationXML
#endif

/// Validates a response, checks that the body is well-formed XML, and returns it ready for an
/// `XMLParser` (AFNetworking's `AFXMLParserResponseSerializer`).
///
/// AFNetworking handed back an `XMLParser` that had not parsed anything yet. A parser is a
/// class that is not `Sendable`, so Courier hands back an ``XMLParserSource`` — the checked body —
/// and you make the parser where you use it with ``XMLParserSource/makeParser()``. Unlike
/// AFNetworking, malformed XML is reported here, as a ``CourierError/Code/responseSerializationFailed``
/// error keeping the parse error and the body, not later by your delegate.
///
/// - Accepts `application/xml`, `text/xml` and any `+xml` type.
/// - An absent or empty body and a 204 or 205 response give `nil` and no error.
/// - With an unacceptable status code the body is still checked: ``serialize(response:data:)``
///   returns the source beside the status-code error (which ``responseObject(for:data:)``
///   throws), as AFNetworking's failure blocks get the parser; if the body is not well-formed
///   either, the status-code error wraps the parse error. An unacceptable content type stops
///   there: the body is not looked at.
///
/// ```swift
/// if let source = try XMLParserResponseSerializer().responseObject(for: response, data: body) {
///     let parser = source.makeParser()
///     parser.delegate = myDelegate
///     parser.parse()
/// }
/// ```
public struct XMLParserResponseSerializer: ResponseSerializer {
    /// The validation part; its content types are the XML ones.
    public var http = HTTPResponseSerializer()

    /// A serializer that accepts `application/xml`, `text/xml` and `+xml`.
    public init() {
        self.http = HTTPResponseSerializer(rules: .xml)
    }

    public func validate(_ response: HTTPResponse?, data: Data?) throws(CourierError) {
        try self.http.validate(response, data: data)
    }

    public func responseObject(for response: HTTPResponse?, data: Data?) throws(CourierError) -> XMLParserSource? {
        try HTTPResponseSerializer.objectOrError(self.serialize(response: response, data: data))
    }

    public func serialize(response: HTTPResponse?, data: Data?) -> (object: XMLParserSource??, error: CourierError?) {
        self.http.serialize(response, data: data) { data throws(CourierError) in
            if let problem = XMLWellFormednessCheck.problem(in: data) {
                throw CourierError(
                    .responseSerializationFailed, "the body is not well-formed XML",
                    response: response, data: data, underlyingError: problem)
            }
            return XMLParserSource(data: data)
        }
    }
}
