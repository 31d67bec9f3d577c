import Courier
import CourierTesting
import Foundation
import HTTPTypes
import Testing

/// A `Bool` that is its own empty value, as in Alamofire's test (there it extends `Bool` itself).
struct EmptyTrue: Decodable, Sendable, EmptyResponse {
    let value: Bool
    init(from decoder: any Decoder) throws { self.value = try decoder.singleValueContainer().decode(Bool.self) }
    private init(value: Bool) { self.value = value }
    static func emptyValue() -> EmptyTrue { EmptyTrue(value: true) }
}

/// Twins of Alamofire's `Tests/ResponseSerializationTests.swift` (the data-task serializers).
///
/// Courier keeps AFNetworking's rule for bodies: an absent or empty body is not an error. The
/// data serializer gives empty `Data`, the string serializer `""`, the JSON serializer no object;
/// only a `Decodable` type that cannot be empty fails. Alamofire fails on a missing body unless
/// the status is 204/205 or the request was `HEAD`; those twins say "Differs".
///
/// Alamofire hands its serializers the transport error ("…WhenErrorIsNotNil"); a Courier
/// serializer never sees one: the task's error is the transport's, and serialization is skipped.
/// Those twins run a request to a closed port and check that.
@Suite("Conformance: Alamofire ResponseSerializationTests")
struct AlamofireResponseSerializationConformanceTests {
    static func response(_ status: Int = 200, _ headers: [String: String] = [:]) -> HTTPResponse {
        var fields = HTTPFields()
        for (name, value) in headers { fields[HTTPField.Name(name)!] = value }
        return HTTPResponse(status: .init(code: status), headerFields: fields)
    }

    /// A request that fails before any response: the completion gets the transport's error and no object.
    static func transportFailure(_ serializer: any ResponseSerializer) async -> (object: (any Sendable)?, error: CourierError?) {
        let manager = SessionManager()
        manager.completionQueue = TestQueues.completion
        manager.responseSerializer = serializer
        let result: ((any Sendable)?, CourierError?) = await awaitCallback { finish in
            manager.dataTask(with: Request(url: URL(string: "http://127.0.0.1:\(closedPort())/")!)) { _, object, error in
                finish((object, error))
            }.resume()
        }
        await manager.invalidate(cancelingTasks: true)
        return result
    }

    static func expectTransportErrorWins(_ serializer: any ResponseSerializer) async {
        let (object, error) = await Self.transportFailure(serializer)
        #expect(object == nil)
        #expect(error?.code == .connectionFailed)
    }

    // MARK: DataResponseSerializationTestCase

    @Test func testThatDataResponseSerializerSucceedsWhenDataIsNotNil() throws {
        #expect(try DataResponseSerializer().responseObject(for: nil, data: Data("data".utf8)) == Data("data".utf8))
    }

    /// Differs: no body is empty `Data`, not an error.
    @Test func testThatDataResponseSerializerFailsWhenDataIsNil() throws {
        #expect(try DataResponseSerializer().responseObject(for: nil, data: nil) == Data())
    }

    @Test func testThatDataResponseSerializerFailsWhenErrorIsNotNil() async {
        await Self.expectTransportErrorWins(DataResponseSerializer())
    }

    /// Differs as ``testThatDataResponseSerializerFailsWhenDataIsNil()``.
    @Test func testThatDataResponseSerializerFailsWhenDataIsNilWithNonEmptyResponseStatusCode() throws {
        #expect(try DataResponseSerializer().responseObject(for: Self.response(200), data: nil) == Data())
    }

    @Test func testThatDataResponseSerializerSucceedsWhenDataIsNilWithGETRequestAnd204ResponseStatusCode() throws {
        #expect(try DataResponseSerializer().responseObject(for: Self.response(204), data: nil).isEmpty)
    }

    @Test func testThatDataResponseSerializerSucceedsWhenDataIsNilWithGETRequestAnd205ResponseStatusCode() throws {
        #expect(try DataResponseSerializer().responseObject(for: Self.response(205), data: nil).isEmpty)
    }

    @Test func testThatDataResponseSerializerSucceedsWhenDataIsNilWithHEADRequestAnd200ResponseStatusCode() throws {
        #expect(try DataResponseSerializer().responseObject(for: Self.response(200), data: Data()).isEmpty)
    }

    // MARK: String

    /// Differs: no body is `""`, not an error.
    @Test func testThatStringResponseSerializerFailsWhenDataIsNil() throws {
        #expect(try StringResponseSerializer().responseObject(for: nil, data: nil) == "")
    }

    /// Differs as ``testThatStringResponseSerializerFailsWhenDataIsNil()``.
    @Test func testThatStringResponseSerializerFailsWhenDataIsEmpty() throws {
        #expect(try StringResponseSerializer().responseObject(for: nil, data: Data()) == "")
    }

    @Test func testThatStringResponseSerializerSucceedsWithUTF8DataAndNoProvidedEncoding() throws {
        #expect(try StringResponseSerializer().responseObject(for: nil, data: Data("data".utf8)) == "data")
    }

    @Test func testThatStringResponseSerializerSucceedsWithUTF8DataAndUTF8ProvidedEncoding() throws {
        #expect(try StringResponseSerializer(encoding: .utf8).responseObject(for: nil, data: Data("data".utf8)) == "data")
    }

    @Test func testThatStringResponseSerializerSucceedsWithUTF8DataUsingResponseTextEncodingName() throws {
        let response = Self.response(200, ["Content-Type": "image/jpeg; charset=utf-8"])
        #expect(try StringResponseSerializer().responseObject(for: response, data: Data("data".utf8)) == "data")
    }

    /// Alamofire's charset table reads `iso-10646-ucs-2` and `unicode-1-1` (UTF-16's older IANA
    /// names) as UTF-16; Courier did not know them and read such a body as UTF-8, NULs and all.
    @Test(arguments: ["iso-10646-ucs-2", "ISO-10646-UCS-2", "csUnicode", "ucs-2", "unicode-1-1", "csUnicode11"])
    func testThatStringResponseSerializerReadsTheOlderNamesOfUTF16(charset: String) throws {
        let response = Self.response(200, ["Content-Type": "text/plain; charset=\(charset)"])
        // "hi" in UTF-16 without a byte-order mark: big-endian, as `charset=utf-16` reads it.
        #expect(try StringResponseSerializer().responseObject(for: response, data: Data([0x00, 0x68, 0x00, 0x69])) == "hi")
    }

    /// UTF-32 bytes read as UTF-8: Alamofire fails. So does Courier when the bytes are not UTF-8;
    /// here the UTF-32 text starts with its byte-order mark (0xFF 0xFE), which UTF-8 forbids.
    static let utf32 = Data([0xFF, 0xFE, 0x00, 0x00]) + "random data".data(using: .utf32LittleEndian)!

    @Test func testThatStringResponseSerializerFailsWithUTF32DataAndUTF8ProvidedEncoding() {
        #expect {
            _ = try StringResponseSerializer(encoding: .utf8).responseObject(for: nil, data: Self.utf32)
        } throws: { error in
            (error as? CourierError)?.code == .responseSerializationFailed && (error as? CourierError)?.data == Self.utf32
        }
    }

    /// Differs: Courier lets a byte-order mark win over the header's `charset` (the mark is in the
    /// bytes; the header is often wrong), so this body decodes as the UTF-32 it is.
    @Test func testThatStringResponseSerializerFailsWithUTF32DataAndUTF8ResponseEncoding() throws {
        let response = Self.response(200, ["Content-Type": "image/jpeg; charset=utf-8"])
        #expect(try StringResponseSerializer().responseObject(for: response, data: Self.utf32) == "random data")
    }

    @Test func testThatStringResponseSerializerFailsWhenErrorIsNotNil() async {
        await Self.expectTransportErrorWins(StringResponseSerializer())
    }

    /// Differs as ``testThatStringResponseSerializerFailsWhenDataIsNil()``.
    @Test func testThatStringResponseSerializerFailsWhenDataIsNilWithNonEmptyResponseStatusCode() throws {
        #expect(try StringResponseSerializer().responseObject(for: Self.response(200), data: nil) == "")
    }

    @Test func testThatStringResponseSerializerSucceedsWhenDataIsNilWithGETRequestAnd204ResponseStatusCode() throws {
        #expect(try StringResponseSerializer().responseObject(for: Self.response(204), data: nil) == "")
    }

    @Test func testThatStringResponseSerializerSucceedsWhenDataIsNilWithGETRequestAnd205ResponseStatusCode() throws {
        #expect(try StringResponseSerializer().responseObject(for: Self.response(205), data: nil) == "")
    }

    @Test func testThatStringResponseSerializerSucceedsWhenDataIsNilWithHEADRequestAnd200ResponseStatusCode() throws {
        #expect(try StringResponseSerializer().responseObject(for: Self.response(200), data: Data()) == "")
    }

    // MARK: JSON

    /// Differs: no body is no object and no error (AFNetworking's rule).
    @Test func testThatJSONResponseSerializerFailsWhenDataIsNil() throws {
        #expect(try JSONResponseSerializer().responseObject(for: nil, data: nil) == nil)
    }

    /// Differs as ``testThatJSONResponseSerializerFailsWhenDataIsNil()``.
    @Test func testThatJSONResponseSerializerFailsWhenDataIsEmpty() throws {
        #expect(try JSONResponseSerializer().responseObject(for: nil, data: Data()) == nil)
    }

    @Test func testThatJSONResponseSerializerSucceedsWhenDataIsValidJSON() throws {
        let object = try JSONResponseSerializer().responseObject(for: nil, data: Data(#"{"json": true}"#.utf8))
        #expect(((object as? [String: Any])?["json"] as? NSNumber)?.boolValue == true)
    }

    @Test func testThatJSONResponseSerializerFailsWhenDataIsInvalidJSON() {
        let body = Data("definitely not valid json".utf8)
        #expect {
            _ = try JSONResponseSerializer().responseObject(for: nil, data: body)
        } throws: { error in
            guard let error = error as? CourierError else { return false }
            return error.code == .responseSerializationFailed && error.underlyingError != nil && error.data == body
        }
    }

    @Test func testThatJSONResponseSerializerFailsWhenErrorIsNotNil() async {
        await Self.expectTransportErrorWins(JSONResponseSerializer())
    }

    /// Differs as ``testThatJSONResponseSerializerFailsWhenDataIsNil()``.
    @Test func testThatJSONResponseSerializerFailsWhenDataIsNilWithNonEmptyResponseStatusCode() throws {
        #expect(try JSONResponseSerializer().responseObject(for: Self.response(200), data: nil) == nil)
    }

    @Test func testThatJSONResponseSerializerSucceedsWhenDataIsNilWithGETRequestAnd204ResponseStatusCode() throws {
        #expect(try JSONResponseSerializer().responseObject(for: Self.response(204), data: nil) == nil)
    }

    @Test func testThatJSONResponseSerializerSucceedsWhenDataIsNilWithGETRequestAnd205ResponseStatusCode() throws {
        #expect(try JSONResponseSerializer().responseObject(for: Self.response(205), data: nil) == nil)
    }

    @Test func testThatJSONResponseSerializerSucceedsWhenDataIsNilWithHEADRequestAnd200ResponseStatusCode() throws {
        #expect(try JSONResponseSerializer().responseObject(for: Self.response(200), data: Data()) == nil)
    }

    // MARK: DecodableResponseSerializerTests

    struct DecodableValue: Decodable, Sendable, EmptyResponse {
        let string: String
        static func emptyValue() -> DecodableValue { DecodableValue(string: "") }
    }

    /// Differs: a type with an empty value (`EmptyResponse`) gets it for any empty body, as the
    /// other serializers give their empty result; Alamofire only for 204/205 or `HEAD`.
    @Test func testThatDecodableResponseSerializerFailsWhenDataIsNil() throws {
        #expect(try DecodableResponseSerializer(DecodableValue.self).responseObject(for: nil, data: nil).string == "")
    }

    /// Differs as ``testThatDecodableResponseSerializerFailsWhenDataIsNil()``.
    @Test func testThatDecodableResponseSerializerFailsWhenDataIsEmpty() throws {
        #expect(try DecodableResponseSerializer(DecodableValue.self).responseObject(for: nil, data: Data()).string == "")
    }

    @Test func testThatDecodableResponseSerializerSucceedsWhenDataIsValidJSON() throws {
        let value = try DecodableResponseSerializer(DecodableValue.self).responseObject(for: nil, data: Data(#"{"string":"string"}"#.utf8))
        #expect(value.string == "string")
    }

    @Test func testThatDecodableResponseSerializerFailsWhenDataIsInvalidRepresentation() {
        let body = Data("invalid".utf8)
        #expect {
            _ = try DecodableResponseSerializer(DecodableValue.self).responseObject(for: nil, data: body)
        } throws: { error in
            guard let error = error as? CourierError else { return false }
            return error.code == .responseSerializationFailed && error.underlyingError is DecodingError && error.data == body
        }
    }

    @Test func testThatDecodableResponseSerializerFailsWhenErrorIsNotNil() async {
        await Self.expectTransportErrorWins(DecodableResponseSerializer(DecodableValue.self))
    }

    /// Differs as ``testThatDecodableResponseSerializerFailsWhenDataIsNil()``; a type without an
    /// empty value fails, as in Alamofire.
    @Test func testThatDecodableResponseSerializerFailsWhenDataIsNilWithNonEmptyResponseStatusCode() throws {
        #expect(try DecodableResponseSerializer(DecodableValue.self).responseObject(for: Self.response(200), data: nil).string == "")
        #expect(throws: CourierError.self) { try DecodableResponseSerializer(Int.self).responseObject(for: Self.response(200), data: nil) }
    }

    @Test func testThatDecodableResponseSerializerSucceedsWhenDataIsNilWithEmptyResponseStatusCode() throws {
        #expect(try DecodableResponseSerializer(DecodableValue.self).responseObject(for: Self.response(204), data: nil).string == "")
    }

    @Test func testThatDecodableResponseSerializerSucceedsWhenDataIsNilWithEmptyTypeAndEmptyResponseStatusCode() throws {
        #expect(try DecodableResponseSerializer(Empty.self).responseObject(for: Self.response(204), data: nil) == Empty.value)
    }

    @Test func testThatDecodableResponseSerializerSucceedsWhenDataIsNilWithGETRequestAnd204ResponseStatusCode() throws {
        #expect(try DecodableResponseSerializer(Empty.self).responseObject(for: Self.response(204), data: nil) == Empty.value)
    }

    @Test func testThatDecodableResponseSerializerSucceedsWhenDataIsNilWithGETRequestAnd205ResponseStatusCode() throws {
        #expect(try DecodableResponseSerializer(Empty.self).responseObject(for: Self.response(205), data: nil) == Empty.value)
    }

    @Test func testThatDecodableResponseSerializerSucceedsWhenDataIsNilWithHEADRequestAnd200ResponseStatusCode() throws {
        #expect(try DecodableResponseSerializer(Empty.self).responseObject(for: Self.response(200), data: Data()) == Empty.value)
    }

    @Test func testThatDecodableResponseSerializerSucceedsWhenDataIsNilWithEmptyResponseConformingTypeAndEmptyResponseStatusCode() throws {
        #expect(try DecodableResponseSerializer(EmptyTrue.self).responseObject(for: Self.response(204), data: nil).value)
    }

    @Test func testThatDecodableResponseSerializerFailsWhenDataIsNilWithEmptyResponseNonconformingTypeAndEmptyResponseStatusCode() {
        #expect {
            _ = try DecodableResponseSerializer(Int.self).responseObject(for: Self.response(204), data: nil)
        } throws: { error in
            (error as? CourierError)?.code == .responseSerializationFailed
        }
    }

    // MARK: CustomResponseSerializerTests

    /// A serializer of one's own: conform, validate through an `HTTPResponseSerializer`, and use it
    /// with a manager.
    struct UppercaseSerializer: ResponseSerializer {
        var http = HTTPResponseSerializer()
        func validate(_ response: HTTPResponse?, data: Data?) throws(CourierError) { try self.http.validate(response, data: data) }
        func responseObject(for response: HTTPResponse?, data: Data?) throws(CourierError) -> String {
            try self.validate(response, data: data)
            return String(decoding: data ?? Data(), as: UTF8.self).uppercased()
        }
    }

    @Test func testThatCustomResponseSerializersCanBeWrittenWithoutCompilerIssues() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let response = try await manager.response(for: Request(url: server.url("/base64/aGVsbG8=")), serializer: UppercaseSerializer())
                #expect(response.value == "HELLO")
            }
        }
    }
}
