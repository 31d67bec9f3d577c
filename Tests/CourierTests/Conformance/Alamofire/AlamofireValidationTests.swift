import Courier
import CourierTesting
import Foundation
import HTTPTypes
import Testing

/// Twins of Alamofire's `Tests/ValidationTests.swift` (status-code and content-type validation).
///
/// Alamofire validates with `.validate(statusCode:)` and `.validate(contentType:)` on a request;
/// Courier validates through the serializer's `http` settings (`acceptableStatusCodes`,
/// `acceptableContentTypes`), as AFNetworking does. Each source test validates a data request and
/// a download: Courier validates data tasks only, and a download of any status gives a file (as
/// with URLSession), so only the data half has a twin; those twins say "Differs" for the download.
@Suite("Conformance: Alamofire ValidationTests")
struct AlamofireValidationConformanceTests {
    /// The error, if any, of a GET of `path` validated by `serializer`.
    static func error(_ path: String, _ configure: (inout HTTPResponseSerializer) -> Void) async throws -> CourierError? {
        try await withTestServer { server -> CourierError? in
            try await withManager(baseURL: server.baseURL) { manager -> CourierError? in
                var serializer = DataResponseSerializer()
                configure(&serializer.http)
                do {
                    _ = try await manager.response(for: Request(url: server.url(path)), serializer: serializer)
                    return nil
                } catch let error as CourierError {
                    return error
                }
            }
        }
    }

    static func statusCodes(_ range: Range<Int>) -> IndexSet { IndexSet(integersIn: range) }

    /// Differs: download tasks are not validated (see the suite).
    @Test func testThatValidationForRequestWithAcceptableStatusCodeResponseSucceeds() async throws {
        #expect(try await Self.error("/status/200") { $0.acceptableStatusCodes = Self.statusCodes(200..<300) } == nil)
    }

    /// Differs: download tasks are not validated (see the suite).
    @Test func testThatValidationForRequestWithUnacceptableStatusCodeResponseFails() async throws {
        let error = try await Self.error("/status/404") { $0.acceptableStatusCodes = IndexSet(integer: 200) }
        #expect(error?.code == .unacceptableStatusCode)
        #expect(error?.response?.status.code == 404)
    }

    /// Differs: download tasks are not validated (see the suite).
    @Test func testThatValidationForRequestWithNoAcceptableStatusCodesFails() async throws {
        let error = try await Self.error("/status/201") { $0.acceptableStatusCodes = IndexSet() }
        #expect(error?.code == .unacceptableStatusCode)
        #expect(error?.response?.status.code == 201)
    }

    /// Differs: download tasks are not validated. Acceptable types are MIME types; parameters
    /// (`charset`, `q`) are not part of them in Courier, so the twin lists the bare type.
    @Test func testThatValidationForRequestWithAcceptableContentTypeResponseSucceeds() async throws {
        #expect(try await Self.error("/ip") { $0.acceptableContentTypes = ["application/json"] } == nil)
    }

    /// The three patterns one after the other, as the source chains three validations.
    @Test func ContentTypeValidationTestCase_testThatValidationForRequestWithAcceptableWildcardContentTypeResponseSucceeds() async throws {
        for pattern in ["*/*", "application/*", "*/json"] {
            #expect(try await Self.error("/ip") { $0.acceptableContentTypes = [pattern] } == nil, "\(pattern)")
        }
        #expect(try await Self.error("/ip") { $0.acceptableContentTypes = ["text/*"] }?.code == .unacceptableContentType)
    }

    /// Differs: download tasks are not validated (see the suite).
    @Test func testThatValidationForRequestWithUnacceptableContentTypeResponseFails() async throws {
        let error = try await Self.error("/xml") { $0.acceptableContentTypes = ["application/octet-stream"] }
        #expect(error?.code == .unacceptableContentType)
        #expect(error?.response?.headerFields[.contentType]?.hasPrefix("application/xml") == true)
        #expect(error?.message.contains("application/xml") == true)
    }

    /// Differs: download tasks are not validated (see the suite).
    @Test func testThatValidationForRequestWithNoAcceptableContentTypeResponseFails() async throws {
        let error = try await Self.error("/xml") { $0.acceptableContentTypes = [] }
        #expect(error?.code == .unacceptableContentType)
    }

    /// Differs: download tasks are not validated (see the suite).
    @Test func testThatValidationForRequestWithNoAcceptableContentTypeResponseSucceedsWhenNoDataIsReturned() async throws {
        #expect(try await Self.error("/status/204") { $0.acceptableContentTypes = [] } == nil)
    }

    /// Differs: download tasks are not validated (see the suite).
    @Test func testThatValidationForRequestWithAcceptableStatusCodeAndContentTypeResponseSucceeds() async throws {
        #expect(
            try await Self.error("/ip") {
                $0.acceptableStatusCodes = Self.statusCodes(200..<300)
                $0.acceptableContentTypes = ["application/json"]
            } == nil)
    }

    /// Differs: download tasks are not validated. When both checks fail, the status-code error is
    /// thrown and keeps the content-type error as its underlying error (AFNetworking's chaining);
    /// Alamofire reports whichever validation was added first.
    @Test func testThatValidationForRequestWithUnacceptableStatusCodeAndContentTypeResponseFailsWithStatusCodeError() async throws {
        let error = try await Self.error("/xml") {
            $0.acceptableStatusCodes = Self.statusCodes(400..<600)
            $0.acceptableContentTypes = ["application/octet-stream"]
        }
        #expect(error?.code == .unacceptableStatusCode)
        #expect(error?.response?.status.code == 200)
        #expect((error?.underlyingError as? CourierError)?.code == .unacceptableContentType)
    }

    /// Differs as ``testThatValidationForRequestWithUnacceptableStatusCodeAndContentTypeResponseFailsWithStatusCodeError()``:
    /// the content-type error is the underlying one, whatever the order.
    @Test func testThatValidationForRequestWithUnacceptableStatusCodeAndContentTypeResponseFailsWithContentTypeError() async throws {
        let error = try await Self.error("/xml") {
            $0.acceptableContentTypes = ["application/octet-stream"]
            $0.acceptableStatusCodes = Self.statusCodes(400..<600)
        }
        let contentTypeError = try #require(error?.underlyingError as? CourierError)
        #expect(contentTypeError.code == .unacceptableContentType)
        #expect(contentTypeError.message.contains("application/xml"))
    }
}
