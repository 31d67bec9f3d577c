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

    @Test func optionalOutputsAreFlattened() throws {
        let nothing = try self.serializer.responseObject(for: Fixture.json(), data: Data())
        #expect(nothing == nil)
    }

    @Test func allFailingThrowsTheFirstError() {
        let strict = CompoundResponseSerializer([JSONResponseSerializer(), XMLParserResponseSerializer()])
        #expect { try strict.responseObject(for: Fixture.json(), data: Fixture.data("{broken")) } throws: { error in
            (error as? CourierError)?.code == .responseSerializationFailed && (error as? CourierError)?.data == Fixture.data("{broken")
        }
        #expect { try strict.validate(Fixture.response(200, "text/html"), data: Fixture.data("x")) } throws: {
            ($0 as? CourierError)?.code == .unacceptableContentType
        }
    }

    @Test func emptyListReturnsTheBody() throws {
        #expect(try CompoundResponseSerializer([]).responseObject(for: Fixture.response(), data: Fixture.data("x")) as? Data == Fixture.data("x"))
    }
}
