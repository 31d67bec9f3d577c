import Courier
import Foundation
import HTTPTypes
import Testing

@Suite("HTTPResponseSerializer")
struct HTTPResponseSerializerTests {
    @Test func acceptsDefaultStatusRangeAndReturnsData() throws {
        let body = Fixture.data("hello")
        for code in [200, 201, 204, 299] {
            #expect(try HTTPResponseSerializer().responseObject(for: Fixture.response(code), data: body) == body)
        }
    }

    @Test func rejectsStatusOutsideRangeKeepingResponseAndData() {
        let body = Fixture.data("nope")
        for code in [100, 199, 300, 404, 500] {
            #expect {
                try HTTPResponseSerializer().validate(Fixture.response(code), data: body)
            } throws: { error in
                let error = error as! CourierError
                return error.code == .unacceptableStatusCode && error.response?.status.code == code && error.data == body
            }
        }
    }

    @Test func customStatusCodes() throws {
        var serializer = HTTPResponseSerializer()
        serializer.acceptableStatusCodes = IndexSet([200, 404])
        try serializer.validate(Fixture.response(404), data: nil)
        #expect(throws: CourierError.self) { try serializer.validate(Fixture.response(201), data: nil) }
    }

    /// The rules are shared between copies until one is changed: changing a copy (or a JSON
    /// serializer's, which starts from rules every JSON serializer shares) leaves the others as
    /// they were, each property keeps the others' values, and the defaults read back as set.
    @Test func copiesKeepTheirOwnRulesWhenOneIsChanged() throws {
        let original = HTTPResponseSerializer()
        var changed = original
        changed.acceptableStatusCodes = IndexSet([404])
        changed.acceptableContentTypes = ["Text/Plain"]
        changed.acceptableStructuredSyntaxSuffixes = ["json"]
        changed.acceptableStatusCodes.insert(410)
        #expect(original.acceptableStatusCodes == IndexSet(integersIn: 200..<300))
        #expect(original.acceptableContentTypes == nil)
        #expect(original.acceptableStructuredSyntaxSuffixes.isEmpty)
        #expect(changed.acceptableStatusCodes == IndexSet([404, 410]))
        #expect(changed.acceptableContentTypes == ["text/plain"])
        #expect(changed.acceptableStructuredSyntaxSuffixes == ["json"])
        try original.validate(Fixture.response(200, "image/png"), data: Fixture.data("x"))
        try changed.validate(Fixture.response(410, "application/problem+json"), data: Fixture.data("{}"))
        #expect(throws: CourierError.self) { try changed.validate(Fixture.response(200, "text/plain"), data: nil) }

        var json = JSONResponseSerializer()
        json.http.acceptableContentTypes?.insert("text/html")
        #expect(json.http.acceptableContentTypes == ["application/json", "text/json", "text/javascript", "text/html"])
        #expect(JSONResponseSerializer().http.acceptableContentTypes == ["application/json", "text/json", "text/javascript"])
        #expect(JSONResponseSerializer().http.acceptableStructuredSyntaxSuffixes == ["json"])
        #expect(json.http.acceptableStructuredSyntaxSuffixes == ["json"])
        #expect(XMLParserResponseSerializer().http.acceptableContentTypes == ["application/xml", "text/xml"])
        #expect(XMLParserResponseSerializer().http.acceptableStructuredSyntaxSuffixes == ["xml"])
        #expect(PropertyListResponseSerializer().http.acceptableContentTypes == ["application/x-plist"])
        #expect(ImageResponseSerializer().http.acceptableContentTypes?.contains("image/webp") == true)
    }

    @Test func contentTypeCheckedWithParametersAndAnyCase() throws {
        var serializer = HTTPResponseSerializer()
        serializer.acceptableContentTypes = ["Application/JSON"]
        let body = Fixture.data("{}")
        try serializer.validate(Fixture.response(200, "application/json; charset=utf-8"), data: body)
        try serializer.validate(Fixture.response(200, "APPLICATION/JSON"), data: body)
        try serializer.validate(Fixture.response(200, "  application/json ;charset=\"UTF-8\""), data: body)
        #expect(throws: CourierError.self) { try serializer.validate(Fixture.response(200, "text/html"), data: body) }
    }

    @Test func contentTypeCheckSkippedWithoutABody() throws {
        var serializer = HTTPResponseSerializer()
        serializer.acceptableContentTypes = ["application/json"]
        try serializer.validate(Fixture.response(200, nil), data: nil)
        try serializer.validate(Fixture.response(200, nil), data: Data())
        // A body without a type is refused, as in AFNetworking.
        #expect {
            try serializer.validate(Fixture.response(200, nil), data: Fixture.data("x"))
        } throws: { ($0 as? CourierError)?.code == .unacceptableContentType }
        // A type without a body describes nothing: not checked (AFNetworking reports no error).
        try serializer.validate(Fixture.response(200, "text/html"), data: nil)
        try serializer.validate(Fixture.response(200, "text/html"), data: Data())
    }

    /// AFNetworking's content-type error carries the response and the body
    /// (`AFNetworkingOperationFailingURLResponseErrorKey`, `...DataErrorKey`), as the status error does.
    @Test func contentTypeErrorKeepsResponseAndData() {
        var serializer = HTTPResponseSerializer()
        serializer.acceptableContentTypes = ["application/json"]
        let body = Fixture.data("<html/>")
        #expect { try serializer.validate(Fixture.response(200, "text/html"), data: body) } throws: { error in
            let error = error as! CourierError
            return error.code == .unacceptableContentType && error.data == body && error.response?.status.code == 200
                && error.underlyingError == nil
        }
    }

    @Test func nilContentTypesAcceptAnything() throws {
        try HTTPResponseSerializer().validate(Fixture.response(200, "made/up"), data: Fixture.data("x"))
        try HTTPResponseSerializer().validate(Fixture.response(200, nil), data: Fixture.data("x"))
    }

    @Test func structuredSyntaxSuffix() throws {
        var serializer = HTTPResponseSerializer()
        serializer.acceptableContentTypes = ["application/json"]
        let body = Fixture.data("{}")
        #expect(throws: CourierError.self) { try serializer.validate(Fixture.response(200, "application/problem+json"), data: body) }
        serializer.acceptableStructuredSyntaxSuffixes = ["json"]
        try serializer.validate(Fixture.response(200, "application/problem+JSON"), data: body)
        #expect(throws: CourierError.self) { try serializer.validate(Fixture.response(200, "application/json+xml"), data: body) }
    }

    @Test func bothFailuresChainStatusOverContentType() {
        var serializer = HTTPResponseSerializer()
        serializer.acceptableContentTypes = ["application/json"]
        let body = Fixture.data("<html/>")
        do {
            try serializer.validate(Fixture.response(500, "text/html"), data: body)
            Issue.record("expected a failure")
        } catch {
            #expect(error.code == .unacceptableStatusCode)
            #expect(error.data == body)
            let underlying = error.underlyingError as? CourierError
            #expect(underlying?.code == .unacceptableContentType)
            #expect(underlying?.data == body)
            #expect(underlying?.response?.status.code == 500)
        }
    }

    @Test func nilResponsePasses() throws {
        #expect(try HTTPResponseSerializer().responseObject(for: nil, data: nil) == nil)
    }

    /// AFNetworking's `responseObjectForResponse:data:error:` validates, then returns the data
    /// whatever it found: the body comes beside the error (it was dropped).
    @Test func serializeGivesTheBodyBesideTheError() {
        let body = Fixture.data("<html>oops</html>")
        let (object, error) = HTTPResponseSerializer().serialize(response: Fixture.response(500, "text/html"), data: body)
        #expect((object ?? nil) == body)
        #expect(error?.code == .unacceptableStatusCode)
        var strict = HTTPResponseSerializer()
        strict.acceptableContentTypes = ["application/json"]
        let (typed, typeError) = strict.serialize(response: Fixture.response(200, "text/html"), data: body)
        #expect((typed ?? nil) == body)
        #expect(typeError?.code == .unacceptableContentType)
        let (taken, noError) = HTTPResponseSerializer().serialize(response: Fixture.response(), data: body)
        #expect((taken ?? nil) == body)
        #expect(noError == nil)
    }
}
