import Courier
import Foundation
import Testing

/// Twins of AFNetworking's `Tests/Tests/AFJSONSerializationTests.m` (its request and response
/// classes). Pure: the serializers are tested without a socket, as in the source.
@Suite("Conformance: AFNetworking AFJSONSerializationTests")
struct AFJSONSerializationConformanceTests {
    let base = "http://localhost/"

    // MARK: AFJSONRequestSerializationTests

    @Test func testThatJSONRequestSerializationHandlesParametersDictionary() throws {
        let request = try JSONRequestSerializer().request(method: .post, urlString: self.base, parameters: ["key": "value"])
        #expect(Conformance.bodyText(request) == #"{"key":"value"}"#)
    }

    @Test func testThatJSONRequestSerializationHandlesParametersArray() throws {
        let parameters: [any Sendable] = [["key": "value"] as Parameters]
        let request = try JSONRequestSerializer().request(method: .post, urlString: self.base, parameters: parameters)
        #expect(Conformance.bodyText(request) == #"[{"key":"value"}]"#)
    }

    /// The source feeds a lone UTF-16 surrogate, which a Swift `String` cannot hold; NaN is the
    /// value here that JSON cannot carry. Same kind of failure: no request, a typed error.
    @Test func testThatJSONRequestSerializationHandlesInvalidParameters() {
        #expect {
            _ = try JSONRequestSerializer().request(method: .post, urlString: self.base, parameters: ["key": Double.nan])
        } throws: { error in
            Conformance.isCourierError(error, .parameterEncodingFailed)
        }
    }

    @Test func testThatJSONRequestSerializationErrorsWithInvalidJSON() {
        #expect {
            _ = try JSONRequestSerializer().request(method: .post, urlString: self.base, parameters: ["key": Set(["value"])])
        } throws: { error in
            guard let error = error as? CourierError else { return false }
            // AFNetworking: NSURLErrorCannotDecodeContentData, "The `parameters` argument is not valid JSON."
            return error.code == .parameterEncodingFailed && error.message.contains("JSON")
        }
    }

    // MARK: AFJSONResponseSerializationTests

    @Test func testThatJSONResponseSerializerAcceptsApplicationJSONMimeType() throws {
        try JSONResponseSerializer().validate(Conformance.response(contentType: "application/json"), data: Conformance.jsonSample)
    }

    @Test func testThatJSONResponseSerializerAcceptsTextJSONMimeType() throws {
        try JSONResponseSerializer().validate(Conformance.response(contentType: "text/json"), data: Conformance.jsonSample)
    }

    @Test func testThatJSONResponseSerializerAcceptsTextJavaScriptMimeType() throws {
        try JSONResponseSerializer().validate(Conformance.response(contentType: "text/javascript"), data: Conformance.jsonSample)
    }

    @Test func testThatJSONResponseSerializerDoesNotAcceptNonStandardJSONMimeType() {
        #expect {
            try JSONResponseSerializer().validate(Conformance.response(contentType: "nonstandard/json"), data: Conformance.jsonSample)
        } throws: { error in
            Conformance.isCourierError(error, .unacceptableContentType)
        }
    }

    @Test func testThatJSONResponseSerializerReturnsDictionaryForValidJSONDictionary() throws {
        let object = try JSONResponseSerializer().responseObject(
            for: Conformance.response(contentType: "text/json"), data: Conformance.jsonSample)
        #expect((object as? [String: Any])?["foo"] as? String == "bar")
    }

    @Test func testThatJSONResponseSerializerReturnsErrorForInvalidJSON() {
        let body = Data("{invalid}".utf8)
        #expect {
            _ = try JSONResponseSerializer().responseObject(for: Conformance.response(contentType: "text/json"), data: body)
        } throws: { error in
            // The parse error is kept, and so is the body.
            guard let error = error as? CourierError else { return false }
            return error.code == .responseSerializationFailed && error.underlyingError != nil && error.data == body
        }
    }

    @Test func testThatJSONResponseSerializerReturnsNilObjectAndNilErrorForEmptyData() throws {
        let object = try JSONResponseSerializer().responseObject(for: Conformance.response(contentType: "text/json"), data: Data())
        #expect(object == nil)
    }

    @Test func testThatJSONResponseSerializerReturnsNilObjectAndNilErrorForSingleSpace() throws {
        let object = try JSONResponseSerializer().responseObject(for: Conformance.response(contentType: "text/json"), data: Data(" ".utf8))
        #expect(object == nil)
    }

    @Test func testThatJSONRemovesKeysWithNullValues() throws {
        var serializer = JSONResponseSerializer()
        serializer.removesKeysWithNullValues = true
        let body = Data(#"{"key":"value","nullkey":null,"array":[{"subnullkey":null}],"arrayWithNulls":[null]}"#.utf8)
        let object = try serializer.responseObject(for: Conformance.response(contentType: "text/json"), data: body)
        let dictionary = try #require(object as? [String: Any])
        #expect(dictionary["key"] as? String == "value")
        #expect(dictionary["nullkey"] == nil)
        let array = try #require(dictionary["array"] as? [Any])
        #expect((array.first as? [String: Any])?["subnullkey"] == nil)
        let arrayWithNulls = try #require(dictionary["arrayWithNulls"] as? [Any])
        #expect(arrayWithNulls.isEmpty)
    }

    /// AFNetworking copies with `NSCopying`; a Courier serializer is a value, so a copy is an
    /// assignment, and changing the copy leaves the original alone.
    @Test func testThatJSONResponseSerializerCanBeCopied() {
        var original = JSONResponseSerializer()
        original.http.acceptableStatusCodes = IndexSet(integer: 100)
        original.http.acceptableContentTypes = ["test/type"]
        original.readingOptions = .mutableLeaves
        original.removesKeysWithNullValues = true
        var copy = original
        #expect(copy.http.acceptableStatusCodes == original.http.acceptableStatusCodes)
        #expect(copy.http.acceptableContentTypes == original.http.acceptableContentTypes)
        #expect(copy.readingOptions == original.readingOptions)
        #expect(copy.removesKeysWithNullValues == original.removesKeysWithNullValues)
        copy.removesKeysWithNullValues = false
        copy.http.acceptableContentTypes = nil
        #expect(original.removesKeysWithNullValues)
        #expect(original.http.acceptableContentTypes == ["test/type"])
    }
}
