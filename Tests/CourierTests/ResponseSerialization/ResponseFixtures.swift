import Foundation
import HTTPTypes

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
