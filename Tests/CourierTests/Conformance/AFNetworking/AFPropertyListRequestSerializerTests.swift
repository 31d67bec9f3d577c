import Courier
import Foundation
import Testing

/// Twins of AFNetworking's `Tests/Tests/AFPropertyListRequestSerializerTests.m`. Pure.
@Suite("Conformance: AFNetworking AFPropertyListRequestSerializerTests")
struct AFPropertyListRequestSerializerConformanceTests {
    @Test func testThatPropertyListRequestSerializerAcceptsPlist() throws {
        let request = try PropertyListRequestSerializer().request(
            method: .post, urlString: "http://localhost/", parameters: ["key": "value"])
        let body = try #require(Conformance.bodyData(request))
        let object = try PropertyListSerialization.propertyList(from: body, format: nil)
        #expect((object as? [String: Any])?["key"] as? String == "value")
    }

    /// The source's dictionary has a number for a key, which a property list cannot have.
    @Test func testThatPropertyListRequestSerializerHandlesInvalidPlist() {
        let parameters: [Int: String] = [42: "value"]
        #expect {
            _ = try PropertyListRequestSerializer().request(method: .post, urlString: "http://localhost/", parameters: parameters)
        } throws: { error in
            Conformance.isCourierError(error, .parameterEncodingFailed)
        }
    }
}
