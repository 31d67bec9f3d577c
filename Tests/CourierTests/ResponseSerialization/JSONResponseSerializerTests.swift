import Courier
import Foundation
import HTTPTypes
import Testing

@Suite("JSONResponseSerializer")
struct JSONResponseSerializerTests {
    let sample = #"{"name": "Ada", "age": 36, "nested": {"gone": null, "list": [{"x": null, "y": 1}, null]}, "top": null}"#

    @Test func parsesObject() throws {
        let object = try JSONResponseSerializer().responseObject(for: Fixture.json(), data: Fixture.data(self.sample))
        let dictionary = try #require(object as? [String: Any])
        #expect(dictionary["name"] as? String == "Ada")
        #expect((dictionary["age"] as? NSNumber)?.intValue == 36)
        #expect(dictionary["top"] is NSNull)
    }

    @Test(arguments: [
        "application/json", "text/json", "text/javascript", "application/json; charset=utf-8",
        "APPLICATION/JSON", "Text/JavaScript;charset=UTF-8", "application/problem+json", "application/vnd.api+json",
    ])
    func acceptsJSONTypes(_ type: String) throws {
        #expect(try JSONResponseSerializer().responseObject(for: Fixture.json(200, type), data: Fixture.data("[1]")) != nil)
    }

    @Test(arguments: ["text/html", "application/xml", "application/jsonp", "text/plain"])
    func refusesOtherTypesWithoutParsing(_ type: String) {
        let (object, error) = JSONResponseSerializer().serialize(response: Fixture.json(200, type), data: Fixture.data("[1]"))
        #expect(object == nil)
        #expect(error?.code == .unacceptableContentType)
    }

    @Test func emptyWhitespaceAndEmptyStatusesGiveNothing() throws {
        let serializer = JSONResponseSerializer()
        for body in [nil, Data(), Fixture.data(" "), Fixture.data(" \r\n\t  \n"), Fixture.data("\u{FEFF}"), Fixture.data("\u{FEFF} \n")] {
            #expect(try serializer.responseObject(for: Fixture.json(), data: body) == nil, "\(body.map { Array($0) } ?? [])")
        }
        // A mark before a document is read through.
        #expect(try serializer.responseObject(for: Fixture.json(), data: Fixture.data("\u{FEFF}[1]")) as? [Int] == [1])
        // 204/205 even with a stray body; a HEAD response arrives as 200 with no body.
        #expect(try serializer.responseObject(for: Fixture.json(204), data: Fixture.data("garbage")) == nil)
        #expect(try serializer.responseObject(for: Fixture.json(205, nil), data: nil) == nil)
        #expect(try serializer.responseObject(for: Fixture.json(200, nil), data: nil) == nil)
    }

    @Test func invalidJSONKeepsParseErrorAndData() {
        for text in ["{", "{\"a\":}", "nul", "<html>", "\u{FEFF}{", "{\"a\":\"\u{0001}\"}", "[\"\\uD800\"]x"] {
            let body = Fixture.data(text)
            do {
                _ = try JSONResponseSerializer().responseObject(for: Fixture.json(), data: body)
                Issue.record("expected \(text) to fail")
            } catch {
                #expect(error.code == .responseSerializationFailed)
                #expect(error.data == body)
                #expect(error.underlyingError != nil)
                #expect(error.response?.status.code == 200)
            }
        }
    }

    /// The error keeps the body as it was received, not what the preprocessor made of it (the
    /// `)]}',` line was gone from it), as ``DecodableResponseSerializer``'s does.
    @Test func invalidJSONAfterAPreprocessorKeepsTheReceivedBody() {
        let body = Fixture.data(")]}',\n{\"a\":")
        do {
            _ = try JSONResponseSerializer(dataPreprocessor: .googleXSSI).responseObject(for: Fixture.json(), data: body)
            Issue.record("the body is not JSON")
        } catch {
            #expect(error.code == .responseSerializationFailed)
            #expect(error.data == body)
        }
    }

    @Test func badStatusStillParsesBodyBesideError() throws {
        let object = try RefusedStatus.objectBesideError(JSONResponseSerializer(), Fixture.json(404), Fixture.data(#"{"error": "not found"}"#))
        #expect((object as? [String: Any])?["error"] as? String == "not found")
    }

    @Test func badStatusAndInvalidBodyChainTheParseError() {
        let parse = RefusedStatus.parseErrorUnderStatus(JSONResponseSerializer(), Fixture.json(500), Fixture.data("<html>oops</html>"))
        #expect(parse?.underlyingError != nil)
    }

    struct PreprocessorFailure: Error {}

    struct FailingPreprocessor: DataPreprocessor {
        func preprocess(_ data: Data) throws -> Data { throw PreprocessorFailure() }
    }

    /// A preprocessor that fails under a refused status stays under the status error, as a parse
    /// error does; it was dropped, and the status error came alone.
    @Test func badStatusAndFailingPreprocessorChainItsError() {
        let body = Fixture.data(#"{"error": "boom"}"#)
        let (object, error) = JSONResponseSerializer(dataPreprocessor: FailingPreprocessor()).serialize(response: Fixture.json(500), data: body)
        #expect(object == nil)
        #expect(error?.code == .unacceptableStatusCode)
        #expect(error?.data == body)
        let preprocessing = error?.underlyingError as? CourierError
        #expect(preprocessing?.code == .responseSerializationFailed)
        #expect(preprocessing?.underlyingError is PreprocessorFailure)
        #expect(preprocessing?.data == body)
        // Under an accepted status, the preprocessor's error alone, as before.
        let alone = JSONResponseSerializer(dataPreprocessor: FailingPreprocessor()).serialize(response: Fixture.json(), data: body).error
        #expect(alone?.code == .responseSerializationFailed)
        #expect(alone?.underlyingError is PreprocessorFailure)
    }

    /// AFNetworking parses a body under a refused status, but not one whose content type is
    /// refused too: the status error, with the content-type error under it, and no object.
    @Test func badStatusAndBadContentTypeDoNotParse() {
        RefusedStatus.notParsedWhenTypeRefused(JSONResponseSerializer(), Fixture.json(500, "text/html"), Fixture.data("[1]"))
    }

    @Test func fragmentsOnlyWhenAsked() throws {
        #expect(throws: CourierError.self) { try JSONResponseSerializer().responseObject(for: Fixture.json(), data: Fixture.data("\"x\"")) }
        let serializer = JSONResponseSerializer(readingOptions: .fragmentsAllowed)
        #expect(try serializer.responseObject(for: Fixture.json(), data: Fixture.data("\"x\"")) as? String == "x")
        #expect((try serializer.responseObject(for: Fixture.json(), data: Fixture.data("42")) as? NSNumber)?.intValue == 42)
        #expect(try serializer.responseObject(for: Fixture.json(), data: Fixture.data("null")) is NSNull)
    }

    @Test func removesNullsThroughNestedDictionariesAndArrays() throws {
        var serializer = JSONResponseSerializer()
        serializer.removesKeysWithNullValues = true
        let object = try serializer.responseObject(for: Fixture.json(), data: Fixture.data(self.sample))
        let dictionary = try #require(object as? [String: Any])
        #expect(dictionary["top"] == nil)
        let nested = try #require(dictionary["nested"] as? [String: Any])
        #expect(nested.keys.sorted() == ["list"])
        let list = try #require(nested["list"] as? [Any])
        #expect(list.count == 1)  // null array elements go too (AFNetworking 4)
        #expect((list[0] as? [String: Any])?.keys.sorted() == ["y"])
    }

    @Test func unicodeEncodingsAndByteOrderMarks() throws {
        let text = #"{"word": "héllo 😀"}"#
        let encodings: [(String, Data)] = [
            ("utf8", Data(text.utf8)),
            ("utf8+bom", Data([0xEF, 0xBB, 0xBF]) + Data(text.utf8)),
            ("utf16 bom", text.data(using: .utf16)!),
            ("utf16le", text.data(using: .utf16LittleEndian)!),
            ("utf16be", text.data(using: .utf16BigEndian)!),
            ("utf16be+bom", Data([0xFE, 0xFF]) + text.data(using: .utf16BigEndian)!),
            ("utf32 bom", text.data(using: .utf32)!),
            ("utf32le", text.data(using: .utf32LittleEndian)!),
            ("utf32be", text.data(using: .utf32BigEndian)!),
        ]
        for (name, body) in encodings {
            let object = try JSONResponseSerializer().responseObject(for: Fixture.json(200, "application/json; charset=utf-8"), data: body)
            #expect((object as? [String: Any])?["word"] as? String == "héllo 😀", "\(name)")
        }
    }

    @Test func foundationLeniencyIsKept() throws {
        // swift-corelibs-foundation accepts a trailing comma; Courier does not add a stricter pass.
        #expect((try JSONResponseSerializer().responseObject(for: Fixture.json(), data: Fixture.data("[1,]")) as? [Any])?.count == 1)
    }

    @Test func hugeNumbersNeverCrash() throws {
        let big = try JSONResponseSerializer().responseObject(
            for: Fixture.json(), data: Fixture.data("[123456789012345678901234567890, 18446744073709551615, -9223372036854775809, 1.7976931348623157e308, 5e-324]"))
        #expect((big as? [Any])?.count == 5)
        // Out of Double range: a typed error, not a crash.
        #expect { try JSONResponseSerializer().responseObject(for: Fixture.json(), data: Fixture.data("[1e400]")) } throws: {
            ($0 as? CourierError)?.code == .responseSerializationFailed
        }
    }

    @Test func deeplyNestedJSONIsAnErrorNotAStackOverflow() {
        for depth in [600, 100_000] {
            let body = Data((String(repeating: "[", count: depth) + String(repeating: "]", count: depth)).utf8)
            #expect(throws: CourierError.self) { try JSONResponseSerializer().responseObject(for: Fixture.json(), data: body) }
            let objects = Data((String(repeating: "{\"a\":", count: depth) + "1" + String(repeating: "}", count: depth)).utf8)
            var nulls = JSONResponseSerializer()
            nulls.removesKeysWithNullValues = true
            #expect(throws: CourierError.self) { try nulls.responseObject(for: Fixture.json(), data: objects) }
        }
        // Within the parser's limit, null removal recurses safely.
        let ok = Data((String(repeating: "{\"a\":", count: 400) + "null" + String(repeating: "}", count: 400)).utf8)
        var nulls = JSONResponseSerializer()
        nulls.removesKeysWithNullValues = true
        #expect(throws: Never.self) { try nulls.responseObject(for: Fixture.json(), data: ok) }
    }

    @Test func objectCrossesIntoATask() async throws {
        let object = try JSONResponseSerializer().responseObject(for: Fixture.json(), data: Fixture.data(self.sample))
        let name = await Task.detached { (object as? [String: Any])?["name"] as? String }.value
        #expect(name == "Ada")
    }
}
