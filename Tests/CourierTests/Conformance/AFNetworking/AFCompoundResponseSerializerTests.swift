import Courier
import Foundation
import Testing

/// Twins of AFNetworking's `Tests/Tests/AFCompoundResponseSerializerTests.m`. Pure.
@Suite("Conformance: AFNetworking AFCompoundResponseSerializerTests")
struct AFCompoundResponseSerializerConformanceTests {
    @Test func testCompoundSerializerProperlySerializesResponse() throws {
        let compound = CompoundResponseSerializer([ImageResponseSerializer(), JSONResponseSerializer()])
        let object = try compound.responseObject(
            for: Conformance.response(contentType: "application/json"), data: Data(#"{"key":"value"}"#.utf8))
        #expect((object as? [String: Any])?["key"] as? String == "value")
    }

    /// A copy keeps the serializers, in order, and the compound's own rules (its `http`, which
    /// AFNetworking's compound inherits as `acceptableStatusCodes` and `acceptableContentTypes`
    /// and applies when no member makes an object).
    @Test func testCompoundSerializerCanBeCopied() {
        var original = CompoundResponseSerializer([ImageResponseSerializer(), JSONResponseSerializer()])
        original.http.acceptableStatusCodes = IndexSet(integer: 100)
        original.http.acceptableContentTypes = ["test/type"]
        var copy = original
        #expect(copy.responseSerializers.count == 2)
        #expect(copy.responseSerializers[0] is ImageResponseSerializer)
        #expect(copy.responseSerializers[1] is JSONResponseSerializer)
        #expect(copy.http.acceptableStatusCodes == original.http.acceptableStatusCodes)
        #expect(copy.http.acceptableContentTypes == original.http.acceptableContentTypes)
        copy.responseSerializers.removeAll()
        copy.http.acceptableContentTypes = nil
        #expect(original.responseSerializers.count == 2)
        #expect(original.http.acceptableContentTypes == ["test/type"])
    }
}
