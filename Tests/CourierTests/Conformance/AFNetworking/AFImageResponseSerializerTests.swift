import Courier
import Foundation
import Testing

/// Twins of AFNetworking's `Tests/Tests/AFImageResponseSerializerTests.m`. Pure.
@Suite("Conformance: AFNetworking AFImageResponseSerializerTests")
struct AFImageResponseSerializerConformanceTests {
    @Test func testImageSerializerCanBeCopied() {
        var original = ImageResponseSerializer()
        original.http.acceptableContentTypes = ["test/type"]
        original.http.acceptableStatusCodes = IndexSet(integer: 100)
        original.automaticallyInflatesResponseImage = false
        original.imageScale = 2
        var copy = original
        #expect(copy.http.acceptableContentTypes == original.http.acceptableContentTypes)
        #expect(copy.http.acceptableStatusCodes == original.http.acceptableStatusCodes)
        #expect(copy.automaticallyInflatesResponseImage == original.automaticallyInflatesResponseImage)
        #expect(abs(copy.imageScale - original.imageScale) <= 0.001)
        copy.imageScale = 3
        #expect(original.imageScale == 2)
    }
}
