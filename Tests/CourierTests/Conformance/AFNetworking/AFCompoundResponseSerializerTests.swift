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

    /// Courier's compound serializer has no validation of its own (AFNetworking's inherits
    /// `acceptableStatusCodes` and `acceptableContentTypes`, which its `responseObject` does not
    /// consult); a copy keeps the serializers, in order.
    @Test func testCompoundSerializerCanBeCopied() {
        let original = CompoundResponseSerializer([ImageResponseSerializer(), JSONResponseSerializer()])
        var copy = original
        #expect(copy.responseSerializers.count == 2)
        #expect(copy.responseSerializers[0] is ImageResponseSerializer)
        #expect(copy.responseSerializers[1] is JSONResponseSerializer)
        copy.responseSerializers.removeAll()
        #expect(original.responseSerializers.count == 2)
    }
}
