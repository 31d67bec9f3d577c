import Courier
import Foundation
import Testing

/// Twins of AFNetworking's `Tests/Tests/AFHTTPResponseSerializationTests.m`. Pure, as in the source.
@Suite("Conformance: AFNetworking AFHTTPResponseSerializationTests")
struct AFHTTPResponseSerializationConformanceTests {
    let text = Data("text".utf8)

    @Test func testThatAFHTTPResponseSerializationHandlesAll2XXCodes() throws {
        let serializer = HTTPResponseSerializer()
        for code in 200..<300 {
            #expect(serializer.acceptableStatusCodes.contains(code))
            #expect(throws: Never.self, "status \(code)") {
                try serializer.validate(Conformance.response(code, contentType: "text/html"), data: self.text)
            }
        }
    }

    @Test func testThatAFHTTPResponseSerializationSucceedsWith205WithNoResponseContentTypeAndNoResponseData() throws {
        var serializer = HTTPResponseSerializer()
        #expect(serializer.acceptableStatusCodes.contains(205))
        serializer.acceptableContentTypes = ["text/html"]
        try serializer.validate(Conformance.response(205), data: nil)
        #expect(throws: CourierError.self) { try serializer.validate(Conformance.response(205), data: Data("test".utf8)) }
    }

    @Test func testThatAFHTTPResponseSerializationFailsWith205WithNoResponseContentTypeAndResponseData() {
        var serializer = HTTPResponseSerializer()
        serializer.acceptableContentTypes = ["text/html"]
        #expect {
            try serializer.validate(Conformance.response(205), data: Data("test".utf8))
        } throws: { error in
            Conformance.isCourierError(error, .unacceptableContentType)
        }
    }

    @Test func testThatAFHTTPResponseSerializationFailsAll4XX5XXStatusCodes() {
        let serializer = HTTPResponseSerializer()
        for code in 400..<600 {
            #expect(!serializer.acceptableStatusCodes.contains(code))
            #expect("status \(code)") {
                try serializer.validate(Conformance.response(code, contentType: "text/html"), data: self.text)
            } throws: { error in
                guard let error = error as? CourierError else { return false }
                return error.code == .unacceptableStatusCode && error.response?.status.code == code && error.data == self.text
            }
        }
    }

    @Test func testResponseIsValidated() throws {
        try HTTPResponseSerializer().validate(Conformance.response(200, contentType: "text/html"), data: self.text)
    }

    /// A value copy, not `NSCopying`: equal settings, and independent afterwards.
    @Test func testCanBeCopied() {
        var original = HTTPResponseSerializer()
        original.acceptableContentTypes = ["text/html"]
        var copy = original
        #expect(copy.acceptableContentTypes == original.acceptableContentTypes)
        #expect(copy.acceptableStatusCodes == original.acceptableStatusCodes)
        copy.acceptableStatusCodes = IndexSet(integer: 100)
        #expect(original.acceptableStatusCodes.count == 100)
    }
}
