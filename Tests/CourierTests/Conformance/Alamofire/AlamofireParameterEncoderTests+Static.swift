import Courier
import Foundation
import Testing

/// Twins of Alamofire's `StaticParameterEncoderInstanceTests` (`Tests/ParameterEncoderTests.swift`).
@Suite("Conformance: Alamofire ParameterEncoderTests, static members")
struct AlamofireStaticParameterEncoderConformanceTests {
    func takeParameterEncoder(_ encoder: any ParameterEncoder) -> any ParameterEncoder { encoder }

    static let request = Request(method: .post, url: URL(string: "https://example.com/")!)

    @Test func testThatJSONParameterEncoderCanBeCreatedStaticallyFromProtocol() throws {
        let encoded = try takeParameterEncoder(.json()).encode(["a": "b"], into: Self.request)
        #expect(encoded.headerFields[.contentType] == "application/json")
    }

    @Test func testThatURLEncodedFormParameterEncoderCanBeCreatedStaticallyFromProtocol() throws {
        let encoded = try takeParameterEncoder(.urlEncodedForm()).encode(["a": "b"], into: Self.request)
        #expect(encoded.headerFields[.contentType]?.hasPrefix("application/x-www-form-urlencoded") == true)
        let query = try takeParameterEncoder(.urlEncodedForm(destination: .queryString)).encode(["a": "b"], into: Self.request)
        #expect(query.url.query == "a=b")
    }
}
