import Courier
import Foundation
import Testing

/// Twins of AFNetworking's `Tests/Tests/AFPropertyListResponseSerializerTests.m`. Pure.
@Suite("Conformance: AFNetworking AFPropertyListResponseSerializerTests")
struct AFPropertyListResponseSerializerConformanceTests {
    @Test func testThatPropertyListResponseSerializerAcceptsPlistData() throws {
        let data = try PropertyListSerialization.data(fromPropertyList: ["foo": "bar"], format: .xml, options: 0)
        let object = try PropertyListResponseSerializer().responseObject(
            for: Conformance.response(contentType: "application/x-plist"), data: data)
        #expect((object as? [String: Any])?["foo"] as? String == "bar")
    }

    @Test func testThatPropertyListResponseSerializerHandlesInvalidPlistData() {
        #expect {
            _ = try PropertyListResponseSerializer().responseObject(
                for: Conformance.response(contentType: "application/x-plist"), data: Conformance.jsonSample)
        } throws: { error in
            guard let error = error as? CourierError else { return false }
            return error.code == .responseSerializationFailed && error.underlyingError != nil && error.data == Conformance.jsonSample
        }
    }

    @Test func testThatPropertyListResponseSerializerHandles204() throws {
        let object = try PropertyListResponseSerializer().responseObject(
            for: Conformance.response(204, contentType: "application/x-plist"), data: nil)
        #expect(object == nil)
    }

    @Test func testResponseSerializerCanBeCopied() {
        var original = PropertyListResponseSerializer()
        original.http.acceptableContentTypes = ["test/type"]
        original.http.acceptableStatusCodes = IndexSet(integer: 100)
        original.format = .xml
        original.readOptions = .mutableContainers
        var copy = original
        #expect(copy.format == original.format)
        #expect(copy.readOptions == original.readOptions)
        #expect(copy.http.acceptableContentTypes == original.http.acceptableContentTypes)
        #expect(copy.http.acceptableStatusCodes == original.http.acceptableStatusCodes)
        copy.format = .binary
        #expect(original.format == .xml)
    }
}
