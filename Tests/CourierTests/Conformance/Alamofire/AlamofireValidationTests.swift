import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
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

    /// Differs: download tasks are not validated, and the acceptable types are listed in the
    /// error's message (sorted), not in a field of their own.
    @Test func testThatContentTypeValidationFailureSortsPossibleContentTypes() async throws {
        let acceptable = [
            "application/octet-stream", "image/gif", "image/x-xbitmap", "image/tiff", "image/jpg", "image/x-bmp", "image/jpeg",
            "image/x-icon", "image/jp2", "image/png", "image/ico", "image/bmp", "image/x-ms-bmp", "image/x-win-bitmap",
        ]
        let error = try await Self.error("/xml") { $0.acceptableContentTypes = Set(acceptable) }
        #expect(error?.code == .unacceptableContentType)
        let message = try #require(error?.message)
        #expect(message.contains("acceptable: " + acceptable.sorted().joined(separator: ", ")), "\(message)")
        #expect(message.contains("image/bmp, image/gif, image/ico, image/jp2, image/jpeg, image/jpg"))
    }

    /// Differs: download tasks are not validated (see the suite).
    @Test func testThatValidationForRequestWithNoAcceptableContentTypeResponseFails() async throws {
        let error = try await Self.error("/xml") { $0.acceptableContentTypes = [] }
        #expect(error?.code == .unacceptableContentType)
        #expect(error?.message.contains("no content type is acceptable") == true)
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

    // MARK: CustomValidationTestCase

    enum ValidationError: Error, Equatable {
        case missingData, missingFile, fileReadFailed
    }

    /// The error, if any, of a GET of `/get` serialized by `serializer` as a data task, and of the
    /// same as a download whose file `serializer` reads (``DownloadResponse/value(serializedBy:)``).
    static func errors<S: ResponseSerializer>(_ serializer: S) async throws -> (request: CourierError?, download: CourierError?) {
        try await Self.errors("/get") { _ in serializer }
    }

    /// The errors of a GET of `path` (with `Accept: accept` when given), serialized by the
    /// serializer `make` makes for the request, as a data task and as a download whose file it reads.
    static func errors<S: ResponseSerializer>(
        _ path: String, accept: String? = nil, _ make: (Request) -> S
    ) async throws -> (request: CourierError?, download: CourierError?) {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                var request = Request(url: server.url(path))
                if let accept { request.headerFields[.accept] = accept }
                let serializer = make(request)
                var requestError: CourierError?
                do {
                    _ = try await manager.response(for: request, serializer: serializer)
                } catch {
                    requestError = error as? CourierError
                }
                var downloadError: CourierError?
                do {
                    let file = try await manager.download(request)
                    defer { try? FileManager.default.removeItem(at: file.fileURL) }
                    _ = try file.value(serializedBy: serializer)
                } catch {
                    downloadError = error as? CourierError
                }
                return (requestError, downloadError)
            }
        }
    }

    /// Differs: a download is checked when its file is read (``DownloadResponse/value(serializedBy:)``),
    /// not as it completes, so the check sees the file's bytes (Alamofire's gets the file's URL).
    @Test func testThatCustomValidationClosureHasAccessToServerResponseData() async throws {
        let seen = NIOLockedValueBox<[Int]>([])
        let serializer = DataResponseSerializer().validating { _, data in
            guard let data else { throw ValidationError.missingData }
            seen.withLockedValue { $0.append(data.count) }
        }
        let (request, download) = try await Self.errors(serializer)
        #expect(request == nil && download == nil, "\(String(describing: request)) \(String(describing: download))")
        // Once for the data task, once for the download: each check runs once.
        #expect(seen.withLockedValue { $0.count == 2 && $0.allSatisfy { $0 > 0 } })
    }

    /// The first check that throws is the error; the next is not run.
    ///
    /// Differs: a download is checked when its file is read, not as it completes (see
    /// ``testThatCustomValidationClosureHasAccessToServerResponseData()``).
    @Test func testThatCustomValidationCanThrowCustomError() async throws {
        let second = NIOLockedValueBox(0)
        let serializer = DataResponseSerializer()
            .validating { _, _ in throw ValidationError.missingData }
            .validating { _, _ in
                second.withLockedValue { $0 += 1 }
                throw ValidationError.missingFile
            }
        let (request, download) = try await Self.errors(serializer)
        for error in [request, download] {
            #expect(error?.code == .responseValidationFailed)
            #expect(error?.underlyingError as? ValidationError == .missingData)
            #expect(error?.response?.status.code == 200)
            #expect(error?.data?.isEmpty == false, "the body stays with the error")
        }
        #expect(second.withLockedValue { $0 } == 0)
    }

    /// Differs: a download is checked when its file is read, not as it completes.
    @Test func testThatValidationExtensionHasAccessToServerResponseData() async throws {
        let (request, download) = try await Self.errors(DataResponseSerializer().validatingDataExists())
        #expect(request == nil && download == nil)
    }

    /// Extensions chained: the first one's error.
    ///
    /// Differs: a download is checked when its file is read, not as it completes.
    @Test func testThatValidationExtensionCanThrowCustomError() async throws {
        let serializer = DataResponseSerializer().validating(with: ValidationError.missingData).validating(with: ValidationError.missingFile)
        let (request, download) = try await Self.errors(serializer)
        #expect(request?.underlyingError as? ValidationError == .missingData)
        #expect(download?.underlyingError as? ValidationError == .missingData)
    }
    // MARK: Automatic validation (AutomaticValidationTestCase)

    /// A GET of `path` with `Accept: accept`, validated against it (Alamofire's `validate()`).
    static func automatic(_ path: String, accept: String) async throws -> (request: CourierError?, download: CourierError?) {
        try await Self.errors(path, accept: accept) { DataResponseSerializer().validatingAccept(of: $0) }
    }

    /// Differs: `validate()` is the serializer's `validatingAccept(of:)` (the status codes are the
    /// serializer's own, 200–299); a download is checked when its file is read.
    @Test func AutomaticValidationTestCase_testThatValidationForRequestWithAcceptableStatusCodeAndContentTypeResponseSucceeds() async throws {
        let (request, download) = try await Self.automatic("/ip", accept: "application/json")
        #expect(request == nil && download == nil, "\(String(describing: request)) \(String(describing: download))")
    }

    /// Differs: `validate()` is the serializer's `validatingAccept(of:)`; a download is checked when
    /// its file is read.
    @Test func AutomaticValidationTestCase_testThatValidationForRequestWithUnacceptableStatusCodeResponseFails() async throws {
        let (request, download) = try await Self.automatic("/status/404", accept: "application/json")
        for error in [request, download] {
            #expect(error?.code == .unacceptableStatusCode)
            #expect(error?.response?.status.code == 404)
        }
    }

    /// Differs: `validate()` is the serializer's `validatingAccept(of:)`; a download is checked when
    /// its file is read.
    @Test func testThatValidationForRequestWithAcceptableWildcardContentTypeResponseSucceeds() async throws {
        let (request, download) = try await Self.automatic("/ip", accept: "application/*")
        #expect(request == nil && download == nil, "\(String(describing: request)) \(String(describing: download))")
    }

    /// Differs: `validate()` is the serializer's `validatingAccept(of:)`; a download is checked when
    /// its file is read.
    @Test func testThatValidationForRequestWithAcceptableComplexContentTypeResponseSucceeds() async throws {
        let accept = "text/xml, application/xml, application/xhtml+xml, text/html;q=0.9, text/plain;q=0.8,*/*;q=0.5"
        let (request, download) = try await Self.automatic("/xml", accept: accept)
        #expect(request == nil && download == nil, "\(String(describing: request)) \(String(describing: download))")
    }

    /// Differs: `validate()` is the serializer's `validatingAccept(of:)`; a download is checked when
    /// its file is read; the refused type and the accepted ones are in the error's message.
    @Test func AutomaticValidationTestCase_testThatValidationForRequestWithUnacceptableContentTypeResponseFails() async throws {
        let (request, download) = try await Self.automatic("/xml", accept: "application/json")
        for error in [request, download] {
            #expect(error?.code == .unacceptableContentType)
            #expect(error?.message.contains("application/xml") == true)
            #expect(error?.message.contains("application/json") == true)
        }
    }

}

extension ResponseSerializer {
    /// A validation of one's own as an extension, as Alamofire's test writes `validateDataExists()`.
    func validatingDataExists() -> ValidatingResponseSerializer<Self> {
        self.validating { _, data in
            guard data != nil else { throw AlamofireValidationConformanceTests.ValidationError.missingData }
        }
    }

    func validating(with error: AlamofireValidationConformanceTests.ValidationError) -> ValidatingResponseSerializer<Self> {
        self.validating { _, _ in throw error }
    }
}

extension ValidatingResponseSerializer {
    func validating(with error: AlamofireValidationConformanceTests.ValidationError) -> ValidatingResponseSerializer<Base> {
        self.validating { _, _ in throw error }
    }
}
