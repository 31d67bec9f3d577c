import Courier
import Foundation
import HTTPTypes
import NIOCore
import Testing

/// Twins of Alamofire's `Tests/MultipartFormDataTests.swift`. Alamofire's `append(_:withName:…)`
/// are Courier's `appendPart(…)` (AFNetworking's names); its `encode()` is reading the form's
/// body; its `writeEncodedData(to:)` is `HTTPRequestSerializer.request(withMultipartFormRequest:
/// writingStreamContentsToFile:)`. The layout is the same in both: `--boundary` CRLF, the part's
/// header fields, CRLF, its bytes, then CRLF `--boundary` CRLF before the next part and CRLF
/// `--boundary--` CRLF at the end.
@Suite("Conformance: Alamofire MultipartFormDataTests")
struct AlamofireMultipartFormDataConformanceTests {
    static let crlf = "\r\n"

    static func initial(_ boundary: String) -> String { "--\(boundary)\(crlf)" }
    static func encapsulated(_ boundary: String) -> String { "\(crlf)--\(boundary)\(crlf)" }
    static func final(_ boundary: String) -> String { "\(crlf)--\(boundary)--\(crlf)" }

    static func encoded(_ form: MultipartFormData) async throws -> Data {
        Data(try await collectBytes(of: form.body))
    }

    /// A small PNG and JPEG for the file parts (the source ships unicorn.png and rainbow.jpg).
    static func imageFiles(in folder: URL) throws -> (png: URL, jpeg: URL) {
        let png = folder.appendingPathComponent("unicorn.png")
        let jpeg = folder.appendingPathComponent("rainbow.jpg")
        try Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + Array(repeating: 7, count: 300)).write(to: png)
        try Data([0xFF, 0xD8, 0xFF, 0xE0] + Array(repeating: 9, count: 500)).write(to: jpeg)
        return (png, jpeg)
    }

    /// A part with a name and a media type but no file name (Alamofire's `append(_:withName:mimeType:)`).
    static func appendData(_ data: Data, name: String, mimeType: String, to form: inout MultipartFormData) {
        var headers = HTTPFields()
        headers[.contentDisposition] = "form-data; name=\"\(name)\""
        headers[.contentType] = mimeType
        form.appendPart(withHeaders: headers, body: data)
    }

    static func stream(of data: Data) -> @Sendable () -> AsyncThrowingStream<ByteBuffer, any Error> {
        {
            AsyncThrowingStream { continuation in
                continuation.yield(ByteBuffer(bytes: data))
                continuation.finish()
            }
        }
    }

    // MARK: MultipartFormDataPropertiesTestCase

    @Test func testThatContentTypeContainsBoundary() {
        let form = MultipartFormData()
        #expect(form.contentType == "multipart/form-data; boundary=\(form.boundary)")
    }

    /// Differs: Alamofire's `contentLength` counts the parts' bodies only; Courier's is the exact
    /// length of the body it sends (delimiters and part headers too), which is what
    /// `Content-Length` must say.
    @Test func testThatContentLengthMatchesTotalBodyPartSize() async throws {
        var form = MultipartFormData()
        form.appendPart(withForm: Data("Lorem ipsum dolor sit amet.".utf8), name: "data1")
        form.appendPart(withForm: Data("Vim at integre alterum.".utf8), name: "data2")
        #expect(form.contentLength == Int64(try await Self.encoded(form).count))
    }

    // MARK: MultipartFormDataEncodingTestCase

    @Test func testEncodingDataBodyPart() async throws {
        var form = MultipartFormData()
        form.appendPart(withForm: Data("Lorem ipsum dolor sit amet.".utf8), name: "data")
        let b = form.boundary
        let expected = Self.initial(b) + "Content-Disposition: form-data; name=\"data\"\(Self.crlf)\(Self.crlf)" + "Lorem ipsum dolor sit amet." + Self.final(b)
        #expect(try await Self.encoded(form) == Data(expected.utf8))
    }

    @Test func testEncodingMultipleDataBodyParts() async throws {
        var form = MultipartFormData()
        form.appendPart(withForm: Data("français".utf8), name: "french")
        Self.appendData(Data("日本語".utf8), name: "japanese", mimeType: "text/plain", to: &form)
        Self.appendData(Data("😃👍🏻🍻🎉".utf8), name: "emoji", mimeType: "text/plain", to: &form)
        let b = form.boundary
        let expected =
            Self.initial(b) + "Content-Disposition: form-data; name=\"french\"\(Self.crlf)\(Self.crlf)" + "français"
            + Self.encapsulated(b) + "Content-Disposition: form-data; name=\"japanese\"\(Self.crlf)Content-Type: text/plain\(Self.crlf)\(Self.crlf)" + "日本語"
            + Self.encapsulated(b) + "Content-Disposition: form-data; name=\"emoji\"\(Self.crlf)Content-Type: text/plain\(Self.crlf)\(Self.crlf)" + "😃👍🏻🍻🎉"
            + Self.final(b)
        #expect(try await Self.encoded(form) == Data(expected.utf8))
    }

    @Test func testEncodingFileBodyPart() async throws {
        try await withTemporaryFolder { folder in
            let (png, _) = try Self.imageFiles(in: folder)
            var form = MultipartFormData()
            try form.appendPart(withFileURL: png, name: "unicorn")
            let b = form.boundary
            var expected = Data((Self.initial(b) + "Content-Disposition: form-data; name=\"unicorn\"; filename=\"unicorn.png\"\(Self.crlf)Content-Type: image/png\(Self.crlf)\(Self.crlf)").utf8)
            expected += try Data(contentsOf: png) + Data(Self.final(b).utf8)
            #expect(try await Self.encoded(form) == expected)
        }
    }

    @Test func testEncodingMultipleFileBodyParts() async throws {
        try await withTemporaryFolder { folder in
            let (png, jpeg) = try Self.imageFiles(in: folder)
            var form = MultipartFormData()
            try form.appendPart(withFileURL: png, name: "unicorn")
            try form.appendPart(withFileURL: jpeg, name: "rainbow")
            let b = form.boundary
            var expected = Data((Self.initial(b) + "Content-Disposition: form-data; name=\"unicorn\"; filename=\"unicorn.png\"\(Self.crlf)Content-Type: image/png\(Self.crlf)\(Self.crlf)").utf8)
            expected += try Data(contentsOf: png)
            expected += Data((Self.encapsulated(b) + "Content-Disposition: form-data; name=\"rainbow\"; filename=\"rainbow.jpg\"\(Self.crlf)Content-Type: image/jpeg\(Self.crlf)\(Self.crlf)").utf8)
            expected += try Data(contentsOf: jpeg) + Data(Self.final(b).utf8)
            #expect(try await Self.encoded(form) == expected)
        }
    }

    @Test func testEncodingStreamBodyPart() async throws {
        try await withTemporaryFolder { folder in
            let (png, _) = try Self.imageFiles(in: folder)
            let bytes = try Data(contentsOf: png)
            var form = MultipartFormData()
            try form.appendPart(withStream: Self.stream(of: bytes), name: "unicorn", fileName: "unicorn.png", length: Int64(bytes.count), mimeType: "image/png")
            let b = form.boundary
            var expected = Data((Self.initial(b) + "Content-Disposition: form-data; name=\"unicorn\"; filename=\"unicorn.png\"\(Self.crlf)Content-Type: image/png\(Self.crlf)\(Self.crlf)").utf8)
            expected += bytes + Data(Self.final(b).utf8)
            #expect(try await Self.encoded(form) == expected)
        }
    }

    @Test func testEncodingMultipleStreamBodyParts() async throws {
        try await withTemporaryFolder { folder in
            let (png, jpeg) = try Self.imageFiles(in: folder)
            let one = try Data(contentsOf: png), two = try Data(contentsOf: jpeg)
            var form = MultipartFormData()
            try form.appendPart(withStream: Self.stream(of: one), name: "unicorn", fileName: "unicorn.png", length: Int64(one.count), mimeType: "image/png")
            try form.appendPart(withStream: Self.stream(of: two), name: "rainbow", fileName: "rainbow.jpg", length: Int64(two.count), mimeType: "image/jpeg")
            let b = form.boundary
            var expected = Data((Self.initial(b) + "Content-Disposition: form-data; name=\"unicorn\"; filename=\"unicorn.png\"\(Self.crlf)Content-Type: image/png\(Self.crlf)\(Self.crlf)").utf8)
            expected += one
            expected += Data((Self.encapsulated(b) + "Content-Disposition: form-data; name=\"rainbow\"; filename=\"rainbow.jpg\"\(Self.crlf)Content-Type: image/jpeg\(Self.crlf)\(Self.crlf)").utf8)
            expected += two + Data(Self.final(b).utf8)
            #expect(try await Self.encoded(form) == expected)
        }
    }

    @Test func testEncodingMultipleBodyPartsWithVaryingTypes() async throws {
        try await withTemporaryFolder { folder in
            let (png, jpeg) = try Self.imageFiles(in: folder)
            let two = try Data(contentsOf: jpeg)
            var form = MultipartFormData()
            form.appendPart(withForm: Data("Loading unicorn and rainbow...".utf8), name: "loading")
            try form.appendPart(withFileURL: png, name: "unicorn")
            try form.appendPart(withStream: Self.stream(of: two), name: "rainbow", fileName: "rainbow.jpg", length: Int64(two.count), mimeType: "image/jpeg")
            let b = form.boundary
            var expected = Data((Self.initial(b) + "Content-Disposition: form-data; name=\"loading\"\(Self.crlf)\(Self.crlf)Loading unicorn and rainbow...").utf8)
            expected += Data((Self.encapsulated(b) + "Content-Disposition: form-data; name=\"unicorn\"; filename=\"unicorn.png\"\(Self.crlf)Content-Type: image/png\(Self.crlf)\(Self.crlf)").utf8)
            expected += try Data(contentsOf: png)
            expected += Data((Self.encapsulated(b) + "Content-Disposition: form-data; name=\"rainbow\"; filename=\"rainbow.jpg\"\(Self.crlf)Content-Type: image/jpeg\(Self.crlf)\(Self.crlf)").utf8)
            expected += two + Data(Self.final(b).utf8)
            #expect(try await Self.encoded(form) == expected)
            #expect(form.contentLength == Int64(expected.count))
        }
    }

    // MARK: MultipartFormDataWriteEncodedDataToDiskTestCase

    /// Writes `form` as a request body to a file and returns the file's bytes and the request's
    /// `Content-Length`.
    static func written(_ form: MultipartFormData, in folder: URL) async throws -> (Data, String?) {
        var request = Request(method: .post, url: URL(string: "http://localhost/upload")!, body: form.body)
        request.headerFields[.contentType] = form.contentType
        let file = folder.appendingPathComponent("encoded.multipart")
        let bare = try await HTTPRequestSerializer().request(withMultipartFormRequest: request, writingStreamContentsToFile: file)
        return (try Data(contentsOf: file), bare.headerFields[.contentLength])
    }

    static func checkWrittenEqualsEncoded(_ form: MultipartFormData) async throws {
        try await withTemporaryFolder { folder in
            let (written, length) = try await Self.written(form, in: folder)
            #expect(written == (try await Self.encoded(form)))
            #expect(length == String(written.count))
        }
    }

    @Test func testWritingEncodedDataBodyPartToDisk() async throws {
        var form = MultipartFormData()
        form.appendPart(withForm: Data("Lorem ipsum dolor sit amet.".utf8), name: "data")
        try await Self.checkWrittenEqualsEncoded(form)
    }

    @Test func testWritingMultipleEncodedDataBodyPartsToDisk() async throws {
        var form = MultipartFormData()
        form.appendPart(withForm: Data("français".utf8), name: "french")
        Self.appendData(Data("日本語".utf8), name: "japanese", mimeType: "text/plain", to: &form)
        Self.appendData(Data("😃👍🏻🍻🎉".utf8), name: "emoji", mimeType: "text/plain", to: &form)
        try await Self.checkWrittenEqualsEncoded(form)
    }

    @Test func testWritingEncodedFileBodyPartToDisk() async throws {
        try await withTemporaryFolder { folder in
            let (png, _) = try Self.imageFiles(in: folder)
            var form = MultipartFormData()
            try form.appendPart(withFileURL: png, name: "unicorn")
            try await Self.checkWrittenEqualsEncoded(form)
        }
    }

    @Test func testWritingMultipleEncodedFileBodyPartsToDisk() async throws {
        try await withTemporaryFolder { folder in
            let (png, jpeg) = try Self.imageFiles(in: folder)
            var form = MultipartFormData()
            try form.appendPart(withFileURL: png, name: "unicorn")
            try form.appendPart(withFileURL: jpeg, name: "rainbow")
            try await Self.checkWrittenEqualsEncoded(form)
        }
    }

    /// A stream longer than its declared length: the declared length is what is sent, and the
    /// body is refused rather than cut or overrun (Alamofire reads only `length` bytes).
    @Test func testWritingEncodedStreamBodyPartToDiskRespectingBodyLength() async throws {
        try await withTemporaryFolder { folder in
            let bytes = Data(repeating: 1, count: 100)
            var form = MultipartFormData()
            try form.appendPart(withStream: Self.stream(of: bytes), name: "unicorn", fileName: "unicorn.png", length: 60, mimeType: "image/png")
            await #expect {
                _ = try await Self.written(form, in: folder)
            } throws: { error in
                (error as? CourierError)?.code == .bodyReadFailed
            }
            #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("encoded.multipart").path))
        }
    }

    @Test func testWritingEncodedStreamBodyPartToDisk() async throws {
        var form = MultipartFormData()
        let bytes = Data(repeating: 2, count: 1000)
        try form.appendPart(withStream: Self.stream(of: bytes), name: "unicorn", fileName: "unicorn.png", length: 1000, mimeType: "image/png")
        try await Self.checkWrittenEqualsEncoded(form)
    }

    @Test func testWritingMultipleEncodedStreamBodyPartsToDisk() async throws {
        var form = MultipartFormData()
        let one = Data(repeating: 3, count: 700), two = Data(repeating: 4, count: 900)
        try form.appendPart(withStream: Self.stream(of: one), name: "unicorn", fileName: "unicorn.png", length: 700, mimeType: "image/png")
        try form.appendPart(withStream: Self.stream(of: two), name: "rainbow", fileName: "rainbow.jpg", length: 900, mimeType: "image/jpeg")
        try await Self.checkWrittenEqualsEncoded(form)
    }

    @Test func testWritingMultipleEncodedBodyPartsWithVaryingTypesToDisk() async throws {
        try await withTemporaryFolder { folder in
            let (png, _) = try Self.imageFiles(in: folder)
            var form = MultipartFormData()
            form.appendPart(withForm: Data("Loading unicorn and rainbow...".utf8), name: "loading")
            try form.appendPart(withFileURL: png, name: "unicorn")
            try form.appendPart(withStream: Self.stream(of: Data(repeating: 5, count: 321)), name: "rainbow", fileName: "rainbow.jpg", length: 321, mimeType: "image/jpeg")
            try await Self.checkWrittenEqualsEncoded(form)
        }
    }

    // MARK: MultipartFormDataFailureTestCase

    /// Alamofire fails when encoding; Courier checks a file when it is appended.
    static func expectAppendFails(_ url: URL, fileName: String? = nil) {
        #expect {
            var form = MultipartFormData()
            if let fileName {
                try form.appendPart(withFileURL: url, name: "empty_data", fileName: fileName, mimeType: "application/octet")
            } else {
                try form.appendPart(withFileURL: url, name: "empty_data")
            }
        } throws: { error in
            guard let error = error as? CourierError else { return false }
            return error.code == .bodyReadFailed && error.message.contains(url.path.isEmpty ? url.absoluteString : url.lastPathComponent)
        }
    }

    @Test func testThatAppendingFileBodyPartWithInvalidLastPathComponentReturnsError() {
        Self.expectAppendFails(URL(fileURLWithPath: "/"))
    }

    @Test func testThatAppendingFileBodyPartThatIsNotFileURLReturnsError() {
        Self.expectAppendFails(URL(string: "https://example.com/image.jpg")!)
    }

    @Test func testThatAppendingFileBodyPartThatIsNotReachableReturnsError() {
        Self.expectAppendFails(FileManager.default.temporaryDirectory.appendingPathComponent("does_not_exist.jpg"))
    }

    @Test func testThatAppendingFileBodyPartThatIsDirectoryReturnsError() {
        Self.expectAppendFails(FileManager.default.temporaryDirectory, fileName: "empty")
    }

    /// Differs: Alamofire refuses to write over an existing file; Courier replaces it, and only
    /// once the whole body is written (a failure leaves the old file as it was).
    @Test func testThatWritingEncodedDataToExistingFileURLFails() async throws {
        try await withTemporaryFolder { folder in
            let file = folder.appendingPathComponent("encoded.multipart")
            try Data("dummy data".utf8).write(to: file)
            var form = MultipartFormData()
            form.appendPart(withForm: Data("Lorem ipsum dolor sit amet.".utf8), name: "data")
            let (written, _) = try await Self.written(form, in: folder)
            #expect(written == (try await Self.encoded(form)))
        }
    }

    @Test func testThatWritingEncodedDataToBadURLFails() async throws {
        var form = MultipartFormData()
        form.appendPart(withForm: Data("Lorem ipsum dolor sit amet.".utf8), name: "data")
        var request = Request(method: .post, url: URL(string: "http://localhost/upload")!, body: form.body)
        request.headerFields[.contentType] = form.contentType
        await #expect {
            _ = try await HTTPRequestSerializer().request(
                withMultipartFormRequest: request, writingStreamContentsToFile: URL(fileURLWithPath: "/this/is/not/a/valid/url"))
        } throws: { error in
            (error as? CourierError)?.code == .fileSystemFailure
        }
    }

    /// Alamofire's one-shot input stream fails a second encoding; so does Courier's form built
    /// with a one-shot stream (`appendPart(withInputStream:…)`), and it says so up front.
    @Test func testThatStreamBodyPartHasUnexpectedLength() async throws {
        let bytes = Data("Lorem ipsum dolor sit amet.".utf8)
        var form = MultipartFormData()
        try form.appendPart(withInputStream: Self.stream(of: bytes)(), name: "data", fileName: "data.txt", length: Int64(bytes.count), mimeType: "text/plain")
        #expect(!form.isReplayable)
        let first = try await Self.encoded(form)
        #expect(first.count == Int(form.contentLength))
        #expect(!form.body.isReplayable)
    }
}
