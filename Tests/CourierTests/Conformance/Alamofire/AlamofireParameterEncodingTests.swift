import Courier
import Foundation
import HTTPTypes
import Testing

/// Twins of Alamofire's `Tests/ParameterEncodingTests.swift`. Alamofire's dictionary encoders
/// (`URLEncoding`, `JSONEncoding`) are Courier's `HTTPRequestSerializer` and `JSONRequestSerializer`,
/// which follow AFNetworking's rules (the same query string for these cases). Alamofire's
/// `JSONEncoding` writes a body whatever the method; Courier's JSON serializer, as AFNetworking's,
/// puts GET/HEAD/DELETE parameters in the query, so the JSON twins use POST.
@Suite("Conformance: Alamofire ParameterEncodingTests")
struct AlamofireParameterEncodingConformanceTests {
    static let url = URL(string: "https://example.com/")!

    static func query(
        _ parameters: (any Sendable)?, url: URL = Self.url, style: HTTPRequestSerializer.QueryStringSerializationStyle = .default
    ) throws -> String? {
        var serializer = HTTPRequestSerializer()
        serializer.setQueryStringSerialization(with: style)
        return try serializer.request(bySerializing: Request(url: url), parameters: parameters).url.query(percentEncoded: true)
    }

    // MARK: URLParameterEncodingTestCase

    @Test func testURLParameterEncodeNilParameters() throws { #expect(try Self.query(nil) == nil) }
    @Test func testURLParameterEncodeEmptyDictionaryParameter() throws { #expect(try Self.query(Parameters()) == nil) }
    @Test func testURLParameterEncodeOneStringKeyStringValueParameter() throws { #expect(try Self.query(["foo": "bar"]) == "foo=bar") }

    @Test func testURLParameterEncodeOneStringKeyStringValueParameterAppendedToQuery() throws {
        #expect(try Self.query(["foo": "bar"], url: URL(string: "https://example.com/?baz=qux")!) == "baz=qux&foo=bar")
    }

    @Test func testURLParameterEncodeTwoStringKeyStringValueParameters() throws {
        #expect(try Self.query(["foo": "bar", "baz": "qux"]) == "baz=qux&foo=bar")
    }

    @Test func testURLParameterEncodeStringKeyNSNumberIntegerValueParameter() throws {
        #expect(try Self.query(["foo": NSNumber(value: 25)]) == "foo=25")
    }

    @Test func testURLParameterEncodeStringKeyNSNumberBoolValueParameter() throws {
        #expect(try Self.query(["foo": NSNumber(value: false)]) == "foo=0")
    }

    @Test func testURLParameterEncodeStringKeyIntegerValueParameter() throws { #expect(try Self.query(["foo": 1]) == "foo=1") }
    @Test func testURLParameterEncodeStringKeyDoubleValueParameter() throws { #expect(try Self.query(["foo": 1.1]) == "foo=1.1") }
    @Test func testURLParameterEncodeStringKeyBoolValueParameter() throws { #expect(try Self.query(["foo": true]) == "foo=1") }

    @Test func testURLParameterEncodeStringKeyArrayValueParameter() throws {
        #expect(try Self.query(["foo": ["a", 1, true] as [any Sendable]]) == "foo%5B%5D=a&foo%5B%5D=1&foo%5B%5D=1")
    }

    @Test func testURLParameterEncodeArrayNestedDictionaryValueParameterWithIndex() throws {
        let parameters: [String: any Sendable] = ["foo": ["a", 1, true, ["bar": 2], ["qux": 3], ["quy": ["quz": 3]]] as [any Sendable]]
        #expect(
            try Self.query(parameters, style: .init(arrayEncoding: .indexInBrackets))
                == "foo%5B0%5D=a&foo%5B1%5D=1&foo%5B2%5D=1&foo%5B3%5D%5Bbar%5D=2&foo%5B4%5D%5Bqux%5D=3&foo%5B5%5D%5Bquy%5D%5Bquz%5D=3")
    }

    @Test func testURLParameterEncodeStringKeyArrayValueParameterWithoutBrackets() throws {
        #expect(try Self.query(["foo": ["a", 1, true] as [any Sendable]], style: .init(arrayEncoding: .noBrackets)) == "foo=a&foo=1&foo=1")
    }

    @Test func testURLParameterEncodeStringKeyArrayValueParameterWithCustomClosure() throws {
        let style = HTTPRequestSerializer.QueryStringSerializationStyle(arrayEncoding: .custom { key, index in "\(key).\(index + 1)" })
        #expect(try Self.query(["foo": ["a", 1, true] as [any Sendable]], style: style) == "foo.1=a&foo.2=1&foo.3=1")
    }

    @Test func testURLParameterEncodeStringKeyNestedDictionaryArrayValueParameterWithoutBrackets() throws {
        let parameters: [String: any Sendable] = ["foo": ["bar": ["baz": ["a", 1, true] as [any Sendable]]]]
        #expect(
            try Self.query(parameters, style: .init(arrayEncoding: .noBrackets))
                == "foo%5Bbar%5D%5Bbaz%5D=a&foo%5Bbar%5D%5Bbaz%5D=1&foo%5Bbar%5D%5Bbaz%5D=1")
    }

    @Test func testURLParameterLiteralBoolEncodingWorksAndDoesNotAffectNumbers() throws {
        let parameters: [String: any Sendable] = [
            // Still numbers.
            "a": 1, "b": 0, "c": 1.0, "d": 0.0,
            "e": NSNumber(value: 1), "f": NSNumber(value: 0), "g": NSNumber(value: 1.0), "h": NSNumber(value: 0.0),
            // Literals.
            "i": true, "j": false, "k": NSNumber(value: true), "l": NSNumber(value: false),
        ]
        #expect(
            try Self.query(parameters, style: .init(boolEncoding: .literal))
                == "a=1&b=0&c=1&d=0&e=1&f=0&g=1&h=0&i=true&j=false&k=true&l=false")
    }

    @Test func testURLParameterEncodeStringKeyDictionaryValueParameter() throws {
        #expect(try Self.query(["foo": ["bar": 1]]) == "foo%5Bbar%5D=1")
    }

    @Test func testURLParameterEncodeStringKeyNestedDictionaryValueParameter() throws {
        #expect(try Self.query(["foo": ["bar": ["baz": 1]]]) == "foo%5Bbar%5D%5Bbaz%5D=1")
    }

    @Test func testURLParameterEncodeStringKeyNestedDictionaryArrayValueParameter() throws {
        let parameters: Parameters = ["foo": ["bar": ["baz": ["a", 1, true] as [any Sendable]] as Parameters] as Parameters]
        #expect(try Self.query(parameters) == "foo%5Bbar%5D%5Bbaz%5D%5B%5D=a&foo%5Bbar%5D%5Bbaz%5D%5B%5D=1&foo%5Bbar%5D%5Bbaz%5D%5B%5D=1")
    }

    @Test func testThatReservedCharactersArePercentEscapedMinusQuestionMarkAndForwardSlash() throws {
        #expect(try Self.query(["reserved": ":#[]@!$&'()*+,;="]) == "reserved=%3A%23%5B%5D%40%21%24%26%27%28%29%2A%2B%2C%3B%3D")
    }

    @Test func testThatReservedCharactersQuestionMarkAndForwardSlashAreNotPercentEscaped() throws {
        #expect(try Self.query(["reserved": "?/"]) == "reserved=?/")
    }

    @Test func testThatUnreservedNumericCharactersAreNotPercentEscaped() throws {
        #expect(try Self.query(["numbers": "0123456789"]) == "numbers=0123456789")
    }

    @Test func testThatUnreservedLowercaseCharactersAreNotPercentEscaped() throws {
        #expect(try Self.query(["lowercase": "abcdefghijklmnopqrstuvwxyz"]) == "lowercase=abcdefghijklmnopqrstuvwxyz")
    }

    @Test func testThatUnreservedUppercaseCharactersAreNotPercentEscaped() throws {
        #expect(try Self.query(["uppercase": "ABCDEFGHIJKLMNOPQRSTUVWXYZ"]) == "uppercase=ABCDEFGHIJKLMNOPQRSTUVWXYZ")
    }

    @Test func testThatIllegalASCIICharactersArePercentEscaped() throws {
        #expect(try Self.query(["illegal": " \"#%<>[]\\^`{}|"]) == "illegal=%20%22%23%25%3C%3E%5B%5D%5C%5E%60%7B%7D%7C")
    }

    @Test func testURLParameterEncodeStringWithAmpersandKeyStringWithAmpersandValueParameter() throws {
        #expect(try Self.query(["foo&bar": "baz&qux", "foobar": "bazqux"]) == "foo%26bar=baz%26qux&foobar=bazqux")
    }

    @Test func testURLParameterEncodeStringWithQuestionMarkKeyStringWithQuestionMarkValueParameter() throws {
        #expect(try Self.query(["?foo?": "?bar?"]) == "?foo?=?bar?")
    }

    @Test func testURLParameterEncodeStringWithSlashKeyStringWithQuestionMarkValueParameter() throws {
        #expect(try Self.query(["foo": "/bar/baz/qux"]) == "foo=/bar/baz/qux")
    }

    @Test func testURLParameterEncodeStringWithSpaceKeyStringWithSpaceValueParameter() throws {
        #expect(try Self.query([" foo ": " bar "]) == "%20foo%20=%20bar%20")
    }

    @Test func testURLParameterEncodeStringWithPlusKeyStringWithPlusValueParameter() throws {
        #expect(try Self.query(["+foo+": "+bar+"]) == "%2Bfoo%2B=%2Bbar%2B")
    }

    @Test func testURLParameterEncodeStringKeyPercentEncodedStringValueParameter() throws {
        #expect(try Self.query(["percent": "%25"]) == "percent=%2525")
    }

    @Test func testURLParameterEncodeStringKeyNonLatinStringValueParameter() throws {
        let parameters = ["french": "français", "japanese": "日本語", "arabic": "العربية", "emoji": "😃"]
        let expected = [
            "arabic=%D8%A7%D9%84%D8%B9%D8%B1%D8%A8%D9%8A%D8%A9", "emoji=%F0%9F%98%83", "french=fran%C3%A7ais",
            "japanese=%E6%97%A5%E6%9C%AC%E8%AA%9E",
        ].joined(separator: "&")
        #expect(try Self.query(parameters) == expected)
    }

    @Test func testURLParameterEncodeStringForRequestWithPrecomposedQuery() throws {
        let url = try #require(URL(string: "https://example.com/movies?hd=%5B1%5D"))
        #expect(try Self.query(["page": "0"], url: url) == "hd=%5B1%5D&page=0")
    }

    @Test func testURLParameterEncodeStringWithPlusKeyStringWithPlusValueParameterForRequestWithPrecomposedQuery() throws {
        let url = try #require(URL(string: "https://example.com/movie?hd=%5B1%5D"))
        #expect(try Self.query(["+foo+": "+bar+"], url: url) == "hd=%5B1%5D&%2Bfoo%2B=%2Bbar%2B")
    }

    @Test func testURLParameterEncodeStringWithThousandsOfChineseCharacters() throws {
        let escaped = String(
            repeating: "%E4%B8%80%E4%BA%8C%E4%B8%89%E5%9B%9B%E4%BA%94%E5%85%AD%E4%B8%83%E5%85%AB%E4%B9%9D%E5%8D%81", count: 2000)
        #expect(try Self.query(["chinese": String(repeating: "一二三四五六七八九十", count: 2000)]) == "chinese=\(escaped)")
    }

    @Test func testThatURLParameterEncodingEncodesGETParametersInURL() throws {
        let request = try HTTPRequestSerializer().request(bySerializing: Request(url: Self.url), parameters: ["foo": 1, "bar": 2])
        #expect(request.url.query(percentEncoded: true) == "bar=2&foo=1")
        #expect(request.headerFields[.contentType] == nil)
        #expect(request.body.isEmpty)
    }

    /// Differs: Alamofire's `Content-Type` adds `; charset=utf-8`; Courier sends AFNetworking's
    /// `application/x-www-form-urlencoded` (the body is in the serializer's `stringEncoding`).
    @Test func testThatURLParameterEncodingEncodesPOSTParametersInHTTPBody() throws {
        let request = try HTTPRequestSerializer().request(bySerializing: Request(method: .post, url: Self.url), parameters: ["foo": 1, "bar": 2])
        #expect(request.headerFields[.contentType] == "application/x-www-form-urlencoded")
        #expect(Conformance.bodyText(request) == "bar=2&foo=1")
    }

    /// Alamofire's `URLEncoding(destination: .queryString)`: the methods that use the query are a
    /// setting of the serializer, `httpMethodsEncodingParametersInURI`.
    @Test func testThatURLEncodedInURLParameterEncodingEncodesPOSTParametersInURL() throws {
        var serializer = HTTPRequestSerializer()
        serializer.httpMethodsEncodingParametersInURI.insert("POST")
        let request = try serializer.request(bySerializing: Request(method: .post, url: Self.url), parameters: ["foo": 1, "bar": 2])
        #expect(request.url.query(percentEncoded: true) == "bar=2&foo=1")
        #expect(request.headerFields[.contentType] == nil)
        #expect(request.body.isEmpty)
    }

    // MARK: JSONParameterEncodingTestCase

    static func json(_ parameters: (any Sendable)?, request: Request = Request(method: .post, url: Self.url)) throws -> Request {
        try JSONRequestSerializer().request(bySerializing: request, parameters: parameters)
    }

    @Test func testJSONParameterEncodeNilParameters() throws {
        let request = try Self.json(nil)
        #expect(request.url.query == nil)
        #expect(request.headerFields[.contentType] == nil)
        #expect(request.body.isEmpty)
    }

    @Test func testJSONParameterEncodeComplexParameters() throws {
        let parameters: Parameters = [
            "foo": "bar", "baz": ["a", 1, true] as [any Sendable],
            "qux": ["a": 1, "b": [2, 2], "c": [3, 3, 3]] as Parameters,
        ]
        let request = try Self.json(parameters)
        #expect(request.url.query == nil)
        #expect(request.headerFields[.contentType] == "application/json")
        let body = try #require(Conformance.bodyData(request))
        let decoded = try #require(try JSONSerialization.jsonObject(with: body) as? NSDictionary)
        let expected: NSDictionary = ["foo": "bar", "baz": ["a", 1, true], "qux": ["a": 1, "b": [2, 2], "c": [3, 3, 3]]]
        #expect(decoded == expected)
    }

    @Test func testJSONParameterEncodeArray() throws {
        let request = try Self.json(["foo", "bar", "baz"])
        #expect(request.url.query == nil)
        #expect(request.headerFields[.contentType] == "application/json")
        #expect(Conformance.bodyText(request) == #"["foo","bar","baz"]"#)
    }

    @Test func testJSONParameterEncodeParametersRetainsCustomContentType() throws {
        var original = Request(method: .post, url: Self.url)
        original.headerFields[.contentType] = "application/custom-json-type+json"
        let request = try Self.json(["foo": "bar"], request: original)
        #expect(request.url.query == nil)
        #expect(request.headerFields[.contentType] == "application/custom-json-type+json")
    }

    struct Value: Sendable {}

    @Test func testJSONParameterEncodeParametersThrowsErrorWithInvalidValue() {
        #expect { try Self.json(["key": Value()]) } throws: { Conformance.isCourierError($0, .parameterEncodingFailed) }
    }

    @Test func testJSONParameterEncodeObjectThrowsErrorWithInvalidValue() {
        #expect { try Self.json(Value()) } throws: { Conformance.isCourierError($0, .parameterEncodingFailed) }
    }
}
