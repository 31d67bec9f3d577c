import Foundation
import Courier
import HTTPTypes
import Testing

/// Builds response heads and bodies for the serializer tests.
enum Fixture {
    static func response(_ status: Int = 200, _ contentType: String? = nil) -> HTTPResponse {
        var fields = HTTPFields()
        if let contentType { fields[.contentType] = contentType }
        return HTTPResponse(status: .init(code: status), headerFields: fields)
    }

    static func json(_ status: Int = 200, _ contentType: String? = "application/json") -> HTTPResponse {
        self.response(status, contentType)
    }

    static func data(_ text: String) -> Data { Data(text.utf8) }
}

/// AFNetworking's rule for the serializers that parse a body (JSON, XML parser, XML document,
/// property list, image), checked the same way for each: under a refused status alone the body is
/// parsed and its object comes beside the status error; a body that does not parse then gives the
/// status error with the parse error under it; a refused content type is not parsed at all.
enum RefusedStatus {
    /// The object beside the status error (which carries the body and nothing under it), and the
    /// throwing entry point throwing that error. Returns the object, for the caller's checks.
    static func objectBesideError<S: ResponseSerializer>(
        _ serializer: S, _ response: HTTPResponse, _ body: Data, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> S.Output {
        let (object, error) = serializer.serialize(response: response, data: body)
        #expect(error?.code == .unacceptableStatusCode, sourceLocation: sourceLocation)
        #expect(error?.underlyingError == nil, sourceLocation: sourceLocation)
        #expect(error?.data == body, sourceLocation: sourceLocation)
        #expect(sourceLocation: sourceLocation) { try serializer.responseObject(for: response, data: body) } throws: {
            ($0 as? CourierError)?.code == .unacceptableStatusCode
        }
        return try #require(object, sourceLocation: sourceLocation)
    }

    /// No object, and the status error with the parse error (carrying the body) under it.
    /// Returns the parse error, for the caller's checks.
    @discardableResult
    static func parseErrorUnderStatus<S: ResponseSerializer>(
        _ serializer: S, _ response: HTTPResponse, _ body: Data, sourceLocation: SourceLocation = #_sourceLocation
    ) -> CourierError? {
        let (object, error) = serializer.serialize(response: response, data: body)
        #expect(object == nil, sourceLocation: sourceLocation)
        #expect(error?.code == .unacceptableStatusCode, sourceLocation: sourceLocation)
        let parse = error?.underlyingError as? CourierError
        #expect(parse?.code == .responseSerializationFailed, sourceLocation: sourceLocation)
        #expect(parse?.data == body, sourceLocation: sourceLocation)
        return parse
    }

    /// No object, and the status error with the content-type error under it.
    static func notParsedWhenTypeRefused<S: ResponseSerializer>(
        _ serializer: S, _ response: HTTPResponse, _ body: Data, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let (object, error) = serializer.serialize(response: response, data: body)
        #expect(object == nil, sourceLocation: sourceLocation)
        #expect(error?.code == .unacceptableStatusCode, sourceLocation: sourceLocation)
        #expect((error?.underlyingError as? CourierError)?.code == .unacceptableContentType, sourceLocation: sourceLocation)
    }
}
