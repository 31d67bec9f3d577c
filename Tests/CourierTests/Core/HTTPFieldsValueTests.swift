import HTTPTypes
import Testing

@testable import Courier

/// `HTTPFields.value(of:)`, the hot path's reading of one field, agrees with the subscript it
/// stands in for, and the response properties built on it read what they did.
@Suite struct HTTPFieldsValueTests {
    static let cases: [HTTPFields] = [
        [:],
        [.contentLength: "42"],
        [.contentType: "text/plain", .contentLength: "7", .server: "nginx"],
        HTTPFields([HTTPField(name: .contentLength, value: "5"), HTTPField(name: .contentLength, value: "5")]),
        HTTPFields([HTTPField(name: .cookie, value: "a=1"), HTTPField(name: .server, value: "x"), HTTPField(name: .cookie, value: "b=2")]),
        HTTPFields([HTTPField(name: .accept, value: "text/html"), HTTPField(name: .accept, value: "application/json")]),
    ]

    @Test(arguments: Self.cases)
    func agreesWithTheSubscript(_ fields: HTTPFields) {
        for name in [HTTPField.Name.contentLength, .contentType, .cookie, .accept, .server, .eTag] {
            #expect(fields.value(of: name) == fields[name], "\(name)")
        }
    }

    @Test func repeatedFieldsAreJoinedAsTheSubscriptJoinsThem() {
        let cookies = HTTPFields([HTTPField(name: .cookie, value: "a=1"), HTTPField(name: .cookie, value: "b=2")])
        #expect(cookies.value(of: .cookie) == "a=1; b=2")
        let accepts = HTTPFields([HTTPField(name: .accept, value: "text/html"), HTTPField(name: .accept, value: "*/*")])
        #expect(accepts.value(of: .accept) == "text/html, */*")
    }

    @Test func responsePropertiesReadThroughIt() {
        var response = HTTPResponse(status: .ok, headerFields: [.contentLength: " 12 ", .contentType: "Application/JSON; charset=UTF-8"])
        #expect(response.expectedContentLength == 12)
        #expect(response.mimeType == "application/json")
        // Two different lengths join to a value that is no number: no length, as before.
        response.headerFields = HTTPFields([HTTPField(name: .contentLength, value: "5"), HTTPField(name: .contentLength, value: "6")])
        #expect(response.expectedContentLength == nil)
        response.headerFields = [:]
        #expect(response.expectedContentLength == nil)
        #expect(response.mimeType == nil)
    }
}
