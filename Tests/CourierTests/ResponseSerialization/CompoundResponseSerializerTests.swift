import Courier
import Foundation
import HTTPTypes
import Testing

@Suite("CompoundResponseSerializer")
struct CompoundResponseSerializerTests {
    let serializer = CompoundResponseSerializer([JSONResponseSerializer(), XMLParserResponseSerializer(), StringResponseSerializer()])

    @Test func firstSuccessWins() throws {
        let json = try self.serializer.responseObject(for: Fixture.json(), data: Fixture.data(#"{"a": 1}"#))
        #expect((json as? [String: Any])?["a"] != nil)
        let xml = try self.serializer.responseObject(for: Fixture.response(200, "text/xml"), data: Fixture.data("<a/>"))
        #expect(xml is XMLParserSource)
        let text = try self.serializer.responseObject(for: Fixture.response(200, "text/plain"), data: Fixture.data("hi"))
        #expect(text as? String == "hi")
    }

    /// A member's `nil` (JSON's answer to an empty body) is not an object: as AFNetworking's
    /// `if (responseObject)`, the next member is tried, and a boxed `nil` is never returned.
    @Test func optionalOutputsAreFlattened() throws {
        let json = CompoundResponseSerializer([JSONResponseSerializer()])
        #expect(try json.responseObject(for: Fixture.json(), data: nil) == nil)
        #expect(try json.responseObject(for: Fixture.json(), data: Data()) as? Data == Data())
    }

    /// AFNetworking's compound keeps the first member that returns an object, whatever error
    /// comes with it: a JSON error body with a 404 is the object, beside the status error.
    @Test func aMembersObjectComesWithItsError() throws {
        let compound = CompoundResponseSerializer([XMLParserResponseSerializer(), JSONResponseSerializer()])
        let body = Fixture.data(#"{"error": "not found"}"#)
        let (object, error) = compound.serialize(response: Fixture.json(404), data: body)
        #expect(error?.code == .unacceptableStatusCode)
        #expect(error?.data == body)
        let unwrapped: (any Sendable)? = object ?? nil
        #expect((unwrapped as? [String: Any])?["error"] as? String == "not found")
        #expect { try compound.responseObject(for: Fixture.json(404), data: body) } throws: {
            ($0 as? CourierError)?.code == .unacceptableStatusCode
        }
    }

    /// A member that makes no object is skipped, as in AFNetworking: the Rails `head :ok` space
    /// is no JSON object, so the next member's is taken.
    @Test func aMemberWithoutAnObjectIsSkipped() throws {
        let compound = CompoundResponseSerializer([JSONResponseSerializer(), DataResponseSerializer()])
        #expect(try compound.responseObject(for: Fixture.json(), data: Fixture.data(" ")) as? Data == Fixture.data(" "))
    }

    /// When no member makes an object, AFNetworking's compound falls back to its superclass,
    /// `AFHTTPResponseSerializer`: its own validation (200–299, any content type) and the body as
    /// it came. The members' errors are not reported.
    @Test func noMatchFallsBackToTheCompoundsOwnValidationAndTheBody() throws {
        let strict = CompoundResponseSerializer([JSONResponseSerializer(), XMLParserResponseSerializer()])
        let html = Fixture.data("<html>sorry</html>")
        #expect(try strict.responseObject(for: Fixture.response(200, "text/html"), data: html) as? Data == html)
        #expect(try strict.responseObject(for: Fixture.json(), data: Fixture.data("{broken")) as? Data == Fixture.data("{broken"))
        try strict.validate(Fixture.response(200, "text/html"), data: html)
    }

    /// With a refused status and no member's object, the error is the compound's own status
    /// error, which keeps the response and the body; it accepts any content type, so no
    /// content-type error is chained under it.
    @Test func noMatchWithABadStatusThrowsTheCompoundsStatusError() {
        let strict = CompoundResponseSerializer([JSONResponseSerializer(), XMLParserResponseSerializer()])
        let html = Fixture.data("<html>oops</html>")
        #expect { try strict.responseObject(for: Fixture.response(500, "text/html"), data: html) } throws: { error in
            let error = error as! CourierError
            return error.code == .unacceptableStatusCode && error.underlyingError == nil && error.data == html
                && error.response?.status.code == 500
        }
        #expect { try strict.validate(Fixture.response(500, "text/html"), data: html) } throws: {
            ($0 as? CourierError)?.code == .unacceptableStatusCode
        }
    }

    /// AFNetworking's data member returns the body with its validation error, and the compound
    /// keeps the first object with that member's error: a `text/html` page under a 200 is the
    /// data member's object with its content-type error (the member was skipped, and the
    /// compound's fallback gave the page with no error).
    @Test func aDataMemberRefusingTheTypeGivesTheBodyWithItsError() {
        var octets = DataResponseSerializer()
        octets.http.acceptableContentTypes = ["application/octet-stream"]
        let compound = CompoundResponseSerializer([JSONResponseSerializer(), octets])
        let html = Fixture.data("<html>")
        let (object, error) = compound.serialize(response: Fixture.response(200, "text/html"), data: html)
        let unwrapped: (any Sendable)? = object ?? nil
        #expect(unwrapped as? Data == html)
        #expect(error?.code == .unacceptableContentType)
        #expect { try compound.responseObject(for: Fixture.response(200, "text/html"), data: html) } throws: {
            ($0 as? CourierError)?.code == .unacceptableContentType
        }
    }

    /// The fallback is AFNetworking's `[super responseObjectForResponse:…]`: the body beside the
    /// compound's own validation error (it was dropped).
    @Test func theFallbackGivesTheBodyBesideItsError() {
        let strict = CompoundResponseSerializer([JSONResponseSerializer(), XMLParserResponseSerializer()])
        let html = Fixture.data("<html>oops</html>")
        let (object, error) = strict.serialize(response: Fixture.response(500, "text/html"), data: html)
        let unwrapped: (any Sendable)? = object ?? nil
        #expect(unwrapped as? Data == html)
        #expect(error?.code == .unacceptableStatusCode)
    }

    /// The compound's own rules are an ``HTTPResponseSerializer``'s, and can be narrowed.
    @Test func theCompoundsOwnRulesCanBeSet() {
        var compound = CompoundResponseSerializer([JSONResponseSerializer()])
        compound.http.acceptableContentTypes = ["application/json"]
        #expect { try compound.responseObject(for: Fixture.response(200, "text/html"), data: Fixture.data("x")) } throws: {
            ($0 as? CourierError)?.code == .unacceptableContentType
        }
    }

    @Test func emptyListReturnsTheBody() throws {
        #expect(try CompoundResponseSerializer([]).responseObject(for: Fixture.response(), data: Fixture.data("x")) as? Data == Fixture.data("x"))
        #expect(throws: CourierError.self) { try CompoundResponseSerializer([]).responseObject(for: Fixture.response(404), data: Fixture.data("x")) }
    }
}
