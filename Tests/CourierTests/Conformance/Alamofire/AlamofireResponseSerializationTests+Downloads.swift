import Courier
import CourierTesting
import Foundation
import HTTPTypes
import Testing

/// Twins of Alamofire's `DownloadResponseSerializationTestCase` (`Tests/ResponseSerializationTests.swift`):
/// a serializer over the file a download wrote, `ResponseSerializer.responseObject(for:fileURL:)`
/// (Alamofire's `serializeDownload(request:response:fileURL:error:)`).
///
/// As with data tasks (the twins in `AlamofireResponseSerializationTests.swift`), an empty body
/// (an empty file) is not an error: AFNetworking's rule. A missing file (nil URL) and a file that
/// cannot be read are errors, as in Alamofire. Alamofire hands its serializers the download's
/// error; a Courier serializer never sees one: a download that fails throws the transport's
/// error and returns no file to serialize, which the "…WhenErrorIsNotNil" twins check.
@Suite("Conformance: Alamofire ResponseSerializationTests, downloads")
struct AlamofireDownloadResponseSerializationConformanceTests {
    typealias Data_ = AlamofireResponseSerializationConformanceTests

    /// The files of the source's test bundle, written for each test.
    final class Files {
        let folder: URL
        init() throws {
            self.folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-download-serialization-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: self.folder, withIntermediateDirectories: true)
            try Data().write(to: self.emptyFile)
            try Data(#"{"json": true}"#.utf8).write(to: self.validJSON)
            try Data("definitely not valid json".utf8).write(to: self.invalidJSON)
            try Data("random data".utf8).write(to: self.utf8String)
            try Data_.utf32.write(to: self.utf32String)
        }
        deinit { try? FileManager.default.removeItem(at: self.folder) }

        var emptyFile: URL { self.folder.appendingPathComponent("empty_data.json") }
        var validJSON: URL { self.folder.appendingPathComponent("valid_data.json") }
        var invalidJSON: URL { self.folder.appendingPathComponent("invalid_data.json") }
        var utf8String: URL { self.folder.appendingPathComponent("utf8_string.txt") }
        var utf32String: URL { self.folder.appendingPathComponent("utf32_string.txt") }
        var missing: URL { URL(fileURLWithPath: "/this/file/does/not/exist.txt") }
    }

    static func expectNoFile<S: ResponseSerializer>(_ serializer: S, response: HTTPResponse? = nil) {
        #expect {
            _ = try serializer.responseObject(for: response, fileURL: nil)
        } throws: { error in
            (error as? CourierError)?.code == .responseSerializationFailed && "\(error)".contains("no downloaded file")
        }
    }

    static func expectUnreadable<S: ResponseSerializer>(_ serializer: S, _ files: Files) {
        #expect {
            _ = try serializer.responseObject(for: nil, fileURL: files.missing)
        } throws: { error in
            guard let error = error as? CourierError else { return false }
            return error.code == .fileSystemFailure && error.underlyingError != nil && error.message.contains(files.missing.path)
        }
    }

    /// A download that fails: the transport's error is thrown, and there is no file to serialize.
    static func expectTransportErrorWins() async {
        let manager = SessionManager()
        do {
            let download = try await manager.download(Request(url: URL(string: "http://127.0.0.1:\(closedPort())/")!))
            Issue.record("a download to a closed port returned \(download.fileURL)")
        } catch {
            #expect(error.code == .connectionFailed)
        }
        await manager.invalidate(cancelingTasks: true)
    }

    // MARK: Data

    @Test func DownloadResponseSerializationTestCase_testThatDataResponseSerializerSucceedsWhenFileDataIsNotNil() throws {
        let files = try Files()
        #expect(try DataResponseSerializer().responseObject(for: nil, fileURL: files.validJSON) == Data(#"{"json": true}"#.utf8))
    }

    /// Differs: an empty file is empty `Data`, not an error (AFNetworking's rule for bodies).
    @Test func DownloadResponseSerializationTestCase_testThatDataResponseSerializerFailsWhenFileDataIsEmpty() throws {
        let files = try Files()
        #expect(try DataResponseSerializer().responseObject(for: nil, fileURL: files.emptyFile) == Data())
    }

    @Test func DownloadResponseSerializationTestCase_testThatDataResponseSerializerFailsWhenFileURLIsNil() {
        Self.expectNoFile(DataResponseSerializer())
    }

    @Test func DownloadResponseSerializationTestCase_testThatDataResponseSerializerFailsWhenFileURLIsInvalid() throws {
        Self.expectUnreadable(DataResponseSerializer(), try Files())
    }

    @Test func DownloadResponseSerializationTestCase_testThatDataResponseSerializerFailsWhenErrorIsNotNil() async {
        await Self.expectTransportErrorWins()
    }

    @Test func DownloadResponseSerializationTestCase_testThatDataResponseSerializerFailsWhenFileURLIsNilWithNonEmptyResponseStatusCode() {
        Self.expectNoFile(DataResponseSerializer(), response: Data_.response(200))
    }

    @Test func DownloadResponseSerializationTestCase_testThatDataResponseSerializerSucceedsWhenDataIsNilWithEmptyResponseStatusCode() throws {
        let files = try Files()
        #expect(try DataResponseSerializer().responseObject(for: Data_.response(205), fileURL: files.emptyFile).isEmpty)
    }

    // MARK: String

    @Test func DownloadResponseSerializationTestCase_testThatStringResponseSerializerFailsWhenFileURLIsNil() {
        Self.expectNoFile(StringResponseSerializer())
    }

    @Test func DownloadResponseSerializationTestCase_testThatStringResponseSerializerFailsWhenFileURLIsInvalid() throws {
        Self.expectUnreadable(StringResponseSerializer(), try Files())
    }

    /// Differs: an empty file is `""`, not an error.
    @Test func DownloadResponseSerializationTestCase_testThatStringResponseSerializerFailsWhenFileDataIsEmpty() throws {
        let files = try Files()
        #expect(try StringResponseSerializer().responseObject(for: nil, fileURL: files.emptyFile) == "")
    }

    @Test func DownloadResponseSerializationTestCase_testThatStringResponseSerializerSucceedsWithUTF8DataAndNoProvidedEncoding() throws {
        let files = try Files()
        #expect(try StringResponseSerializer().responseObject(for: nil, fileURL: files.utf8String) == "random data")
    }

    @Test func DownloadResponseSerializationTestCase_testThatStringResponseSerializerSucceedsWithUTF8DataAndUTF8ProvidedEncoding() throws {
        let files = try Files()
        #expect(try StringResponseSerializer(encoding: .utf8).responseObject(for: nil, fileURL: files.utf8String) == "random data")
    }

    @Test func DownloadResponseSerializationTestCase_testThatStringResponseSerializerSucceedsWithUTF8DataUsingResponseTextEncodingName() throws {
        let files = try Files()
        let response = Data_.response(200, ["Content-Type": "image/jpeg; charset=utf-8"])
        #expect(try StringResponseSerializer().responseObject(for: response, fileURL: files.utf8String) == "random data")
    }

    @Test func DownloadResponseSerializationTestCase_testThatStringResponseSerializerFailsWithUTF32DataAndUTF8ProvidedEncoding() throws {
        let files = try Files()
        #expect {
            _ = try StringResponseSerializer(encoding: .utf8).responseObject(for: nil, fileURL: files.utf32String)
        } throws: { error in
            (error as? CourierError)?.code == .responseSerializationFailed && (error as? CourierError)?.data == Data_.utf32
        }
    }

    /// Differs: the byte-order mark wins over the header's `charset` (as for data tasks), so the
    /// file decodes as the UTF-32 it is.
    @Test func DownloadResponseSerializationTestCase_testThatStringResponseSerializerFailsWithUTF32DataAndUTF8ResponseEncoding() throws {
        let files = try Files()
        let response = Data_.response(200, ["Content-Type": "image/jpeg; charset=utf-8"])
        #expect(try StringResponseSerializer().responseObject(for: response, fileURL: files.utf32String) == "random data")
    }

    @Test func DownloadResponseSerializationTestCase_testThatStringResponseSerializerFailsWhenErrorIsNotNil() async {
        await Self.expectTransportErrorWins()
    }

    @Test func DownloadResponseSerializationTestCase_testThatStringResponseSerializerFailsWhenDataIsNilWithNonEmptyResponseStatusCode() {
        Self.expectNoFile(StringResponseSerializer(), response: Data_.response(200))
    }

    @Test func DownloadResponseSerializationTestCase_testThatStringResponseSerializerSucceedsWhenDataIsNilWithEmptyResponseStatusCode() throws {
        let files = try Files()
        #expect(try StringResponseSerializer().responseObject(for: Data_.response(204), fileURL: files.emptyFile) == "")
    }

    // MARK: JSON

    @Test func DownloadResponseSerializationTestCase_testThatJSONResponseSerializerFailsWhenFileURLIsNil() {
        Self.expectNoFile(JSONResponseSerializer())
    }

    @Test func DownloadResponseSerializationTestCase_testThatJSONResponseSerializerFailsWhenFileURLIsInvalid() throws {
        Self.expectUnreadable(JSONResponseSerializer(), try Files())
    }

    /// Differs: an empty file is no object and no error (AFNetworking's rule).
    @Test func DownloadResponseSerializationTestCase_testThatJSONResponseSerializerFailsWhenFileDataIsEmpty() throws {
        let files = try Files()
        #expect(try JSONResponseSerializer().responseObject(for: nil, fileURL: files.emptyFile) == nil)
    }

    @Test func DownloadResponseSerializationTestCase_testThatJSONResponseSerializerSucceedsWhenDataIsValidJSON() throws {
        let files = try Files()
        let object = try JSONResponseSerializer().responseObject(for: nil, fileURL: files.validJSON)
        #expect(((object as? [String: Any])?["json"] as? NSNumber)?.boolValue == true)
    }

    @Test func DownloadResponseSerializationTestCase_testThatJSONResponseSerializerFailsWhenDataIsInvalidJSON() throws {
        let files = try Files()
        #expect {
            _ = try JSONResponseSerializer().responseObject(for: nil, fileURL: files.invalidJSON)
        } throws: { error in
            guard let error = error as? CourierError else { return false }
            return error.code == .responseSerializationFailed && error.underlyingError != nil
                && error.data == Data("definitely not valid json".utf8)
        }
    }

    @Test func DownloadResponseSerializationTestCase_testThatJSONResponseSerializerFailsWhenErrorIsNotNil() async {
        await Self.expectTransportErrorWins()
    }

    @Test func DownloadResponseSerializationTestCase_testThatJSONResponseSerializerFailsWhenDataIsNilWithNonEmptyResponseStatusCode() {
        Self.expectNoFile(JSONResponseSerializer(), response: Data_.response(200))
    }

    @Test func DownloadResponseSerializationTestCase_testThatJSONResponseSerializerSucceedsWhenDataIsNilWithEmptyResponseStatusCode() throws {
        let files = try Files()
        #expect(try JSONResponseSerializer().responseObject(for: Data_.response(204), fileURL: files.emptyFile) == nil)
    }

    // MARK: Through a download

    /// Not a source test: `DownloadResponse.value(serializedBy:)` validates before it decodes, and
    /// its errors name the request; the file stays where it was.
    @Test func aDownloadedFileIsValidatedAndDecoded() async throws {
        try await withTestServer { server in
            let manager = SessionManager()
            let download = try await manager.download(Request(url: server.url("/status/404")))
            defer { try? FileManager.default.removeItem(at: download.fileURL) }
            #expect {
                _ = try download.value(serializedBy: JSONResponseSerializer())
            } throws: { error in
                (error as? CourierError)?.code == .unacceptableStatusCode
            }
            let json = try await manager.download(Request(url: server.url("/json")))
            defer { try? FileManager.default.removeItem(at: json.fileURL) }
            #expect(try json.value(serializedBy: JSONResponseSerializer()) is [String: Any])
            try FileManager.default.removeItem(at: json.fileURL)
            #expect {
                _ = try json.value(serializedBy: DataResponseSerializer())
            } throws: { error in
                guard let error = error as? CourierError else { return false }
                return error.code == .fileSystemFailure && error.message.hasPrefix("GET \(server.url("/json").absoluteString): ")
            }
            await manager.invalidate(cancelingTasks: true)
        }
    }

    /// Counts a file's bytes a block at a time, never holding the file: a download serializer of
    /// one's own.
    struct ByteCount: DownloadResponseSerializer {
        func responseObject(for response: HTTPResponse?, fileURL: URL?) throws(CourierError) -> Int {
            let url = try URLResponseSerializer().responseObject(for: response, fileURL: fileURL)
            do {
                let handle = try FileHandle(forReadingFrom: url)
                defer { try? handle.close() }
                var count = 0
                while let block = try handle.read(upToCount: 4096), !block.isEmpty { count += block.count }
                return count
            } catch {
                throw CourierError(.fileSystemFailure, "cannot read \(url.path)", underlyingError: error)
            }
        }
    }

    /// Not a source test: download serializers on a real download, Courier's `.url` and one of
    /// the caller's that reads the file in blocks.
    @Test func aDownloadSerializerWorksOnTheFile() async throws {
        try await withTestServer { server in
            let manager = SessionManager()
            let download = try await manager.download(Request(url: server.url("/bytes/100000")))
            defer { try? FileManager.default.removeItem(at: download.fileURL) }
            #expect(try download.value(serializedBy: .url) == download.fileURL)
            #expect(try download.value(serializedBy: ByteCount()) == 100_000)
            #expect(try download.value(serializedBy: DataResponseSerializer()).count == 100_000, "a ResponseSerializer still reads it whole")
            try FileManager.default.removeItem(at: download.fileURL)
            #expect(throws: CourierError.self) { try download.value(serializedBy: ByteCount()) }
            await manager.invalidate(cancelingTasks: true)
        }
    }

    // MARK: URLResponseSerializerTests

    @Test func testThatURLResponseSerializerProducesURLOnSuccess() throws {
        let url = URL(fileURLWithPath: "/")
        #expect(try URLResponseSerializer().responseObject(for: Data_.response(200), fileURL: url) == url)
    }

    @Test func testThatURLResponseSerializerProducesErrorFromIncomingErrors() async {
        await Self.expectTransportErrorWins()
    }

    @Test func testThatURLResponseSerializerProducesInputFileNilErrorWhenNoURL() {
        #expect {
            _ = try URLResponseSerializer().responseObject(for: Data_.response(200), fileURL: nil)
        } throws: { error in
            (error as? CourierError)?.code == .responseSerializationFailed && "\(error)".contains("no downloaded file")
        }
    }
}
