import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import Testing

/// Twins of Alamofire's `Tests/UploadTests.swift`, against TestServer's `/post` (httpbin's echo)
/// and `/courier/upload`. Alamofire's `session.upload(_:to:)` is Courier's `uploadTask(with:…)`
/// (AFNetworking's names) or `response(for:serializer:)` with a request body.
@Suite("Conformance: Alamofire UploadTests")
struct AlamofireUploadConformanceTests {
    static func withManager<T>(_ body: (HTTPSessionManager, TestServer) async throws -> T) async throws -> T {
        try await withTestServer { server in
            try await CourierTests.withManager(baseURL: server.baseURL) { manager in try await body(manager, server) }
        }
    }

    /// Runs an upload task and returns what its completion got.
    static func upload(_ make: (@escaping @Sendable (HTTPResponse?, (any Sendable)?, CourierError?) -> Void) -> UploadTask) async -> (HTTPResponse?, [String: any Sendable]?, CourierError?) {
        await awaitCallback { finish in
            make { response, object, error in finish((response, object as? [String: any Sendable], error)) }.resume()
        }
    }

    // MARK: Initialization

    static func expectUploadRequest(_ task: UploadTask, method: HTTPRequest.Method, url: URL, header: (HTTPField.Name, String)? = nil) {
        #expect(task.originalRequest.method == method)
        #expect(task.originalRequest.url == url)
        if let header { #expect(task.originalRequest.headerFields[header.0] == header.1) }
        task.cancel()
    }

    @Test func testUploadClassMethodWithMethodURLAndFile() async throws {
        try await Self.withManager { manager, server in
            try await withTemporaryFolder { folder in
                let file = folder.appendingPathComponent("body.txt")
                try Data("file body".utf8).write(to: file)
                let task = manager.uploadTask(with: Request(method: .post, url: server.url("/post")), fromFile: file, completionHandler: nil)
                Self.expectUploadRequest(task, method: .post, url: server.url("/post"))
            }
        }
    }

    @Test func testUploadClassMethodWithMethodURLHeadersAndFile() async throws {
        try await Self.withManager { manager, server in
            try await withTemporaryFolder { folder in
                let file = folder.appendingPathComponent("body.txt")
                try Data("file body".utf8).write(to: file)
                let request = Request(method: .post, url: server.url("/post"), headerFields: [.authorization: "123456"])
                let task = manager.uploadTask(with: request, fromFile: file, completionHandler: nil)
                Self.expectUploadRequest(task, method: .post, url: server.url("/post"), header: (.authorization, "123456"))
            }
        }
    }

    @Test func testUploadClassMethodWithMethodURLAndData() async throws {
        try await Self.withManager { manager, server in
            let task = manager.uploadTask(with: Request(method: .post, url: server.url("/post")), fromData: Data("data".utf8), completionHandler: nil)
            Self.expectUploadRequest(task, method: .post, url: server.url("/post"))
        }
    }

    @Test func testUploadClassMethodWithMethodURLHeadersAndData() async throws {
        try await Self.withManager { manager, server in
            let request = Request(method: .post, url: server.url("/post"), headerFields: [.authorization: "123456"])
            let task = manager.uploadTask(with: request, fromData: Data("data".utf8), completionHandler: nil)
            Self.expectUploadRequest(task, method: .post, url: server.url("/post"), header: (.authorization, "123456"))
        }
    }

    static func stream(_ data: Data) -> RequestBody {
        .replayableStream(length: .known(Int64(data.count))) {
            AsyncThrowingStream<ByteBuffer, any Error> { continuation in
                continuation.yield(ByteBuffer(bytes: data))
                continuation.finish()
            }
        }
    }

    @Test func testUploadClassMethodWithMethodURLAndStream() async throws {
        try await Self.withManager { manager, server in
            let task = manager.uploadTask(withStreamedRequest: Request(method: .post, url: server.url("/post"), body: Self.stream(Data("s".utf8))), completionHandler: nil)
            Self.expectUploadRequest(task, method: .post, url: server.url("/post"))
        }
    }

    @Test func testUploadClassMethodWithMethodURLHeadersAndStream() async throws {
        try await Self.withManager { manager, server in
            let request = Request(method: .post, url: server.url("/post"), headerFields: [.authorization: "123456"], body: Self.stream(Data("s".utf8)))
            let task = manager.uploadTask(withStreamedRequest: request, completionHandler: nil)
            Self.expectUploadRequest(task, method: .post, url: server.url("/post"), header: (.authorization, "123456"))
        }
    }

    // MARK: UploadDataTestCase

    @Test func testUploadDataRequest() async throws {
        try await Self.withManager { manager, server in
            let (response, json, error) = await Self.upload { done in
                manager.uploadTask(with: Request(method: .post, url: server.url("/post")), fromData: Data("Lorem ipsum dolor sit amet".utf8), completionHandler: done)
            }
            #expect(error == nil)
            #expect(response?.status == .ok)
            #expect(json?["data"] as? String == "Lorem ipsum dolor sit amet")
        }
    }

    @Test func testUploadDataRequestWithProgress() async throws {
        let payload = Data(String(repeating: "Lorem ipsum dolor sit amet, consectetur adipiscing elit.\n", count: 300).utf8)
        try await Self.withManager { manager, server in
            let fractions = NIOLockedValueBox<[Double]>([])
            let (_, _, error) = await Self.upload { done in
                manager.uploadTask(
                    with: Request(method: .post, url: server.url("/post")), fromData: payload,
                    progress: { progress in fractions.withLockedValue { $0.append(progress.fractionCompleted) } }, completionHandler: done)
            }
            #expect(error == nil)
            let seen = fractions.withLockedValue { $0 }
            #expect(seen.last == 1.0)
            #expect(seen == seen.sorted(), "progress never goes backwards")
        }
    }

    // MARK: UploadMultipartFormDataTestCase

    static func postForm(_ form: MultipartFormData, manager: HTTPSessionManager, server: TestServer) async throws -> DataResponse<(any Sendable)?> {
        var request = Request(method: .post, url: server.url("/post"), body: form.body)
        request.headerFields[.contentType] = form.contentType
        request.headerFields[.contentLength] = String(form.contentLength)
        return try await manager.response(for: request, serializer: JSONResponseSerializer())
    }

    @Test func testThatUploadingMultipartFormDataSetsContentTypeHeader() async throws {
        try await Self.withManager { manager, server in
            let response = try await manager.post("post", parameters: nil) { form in
                form.appendPart(withForm: Data("français".utf8), name: "french")
                form.appendPart(withForm: Data("日本語".utf8), name: "japanese")
            }
            let contentType = try #require(response.request.headerFields[.contentType])
            #expect(contentType.hasPrefix("multipart/form-data; boundary="))
            let form = try #require(response.value.json?["form"] as? [String: any Sendable])
            #expect(form["french"] as? String == "français")
            #expect(form["japanese"] as? String == "日本語")
        }
    }

    /// Issue 17: `MultipartFormData(boundary:)` fixes the boundary, and it goes on the wire.
    @Test func testThatCustomBoundaryCanBeSetWhenUploadingMultipartFormData() async throws {
        try await Self.withManager { manager, server in
            var form = try MultipartFormData(boundary: "custom-test-boundary")
            form.appendPart(withForm: Data("français".utf8), name: "french")
            let response = try await Self.postForm(form, manager: manager, server: server)
            #expect(response.request.headerFields[.contentType] == "multipart/form-data; boundary=custom-test-boundary")
            let headers = try #require(response.value.json?["headers"] as? [String: any Sendable])
            #expect(headers["Content-Type"] as? String == "multipart/form-data; boundary=custom-test-boundary")
            #expect((response.value.json?["form"] as? [String: any Sendable])?["french"] as? String == "français")
        }
    }

    /// Alamofire's `URLRequestConvertible` appends the parts while the request is made; Courier's
    /// construction block runs then too. With a boundary as long as Alamofire's, the body is the
    /// source's 241 bytes.
    @Test func testThatUploadingMultipartFormDataWorksWhenAppendingBodyPartsInURLRequestConvertible() async throws {
        try await Self.withManager { manager, server in
            let request = try HTTPRequestSerializer().multipartFormRequest(
                method: .post, urlString: server.url("/post").absoluteString, parameters: nil,
                boundary: "alamofire.boundary.0123456789abcdef"
            ) { form in
                form.appendPart(withForm: Data("français".utf8), name: "french")
                form.appendPart(withForm: Data("日本語".utf8), name: "japanese")
            }
            #expect(request.body.knownLength == 241)
            #expect(request.headerFields[.contentLength] == "241")
            let response = try await manager.response(for: request, serializer: JSONResponseSerializer())
            #expect(response.response.status == .ok)
            let form = try #require(response.value.json?["form"] as? [String: any Sendable])
            #expect(form["french"] as? String == "français")
            #expect(form["japanese"] as? String == "日本語")
        }
    }

    @Test func testThatUploadingMultipartFormDataSucceedsWithDefaultParameters() async throws {
        try await Self.withManager { manager, server in
            let response = try await manager.post("post", parameters: nil) { form in
                form.appendPart(withForm: Data("français".utf8), name: "french")
            }
            #expect(response.response.status == .ok)
        }
    }

    @Test func testThatUploadingMultipartFormDataWhileStreamingFromMemoryMonitorsProgress() async throws {
        try await Self.withManager { manager, server in
            let fractions = NIOLockedValueBox<[Double]>([])
            let big = Data(repeating: 7, count: 300_000)
            _ = try await manager.post("post", parameters: nil, progress: { p in fractions.withLockedValue { $0.append(p.fractionCompleted) } }) { form in
                form.appendPart(withFileData: big, name: "big", fileName: "big.bin", mimeType: "application/octet-stream")
            }
            let seen = fractions.withLockedValue { $0 }
            #expect(seen.last == 1.0)
            #expect(seen == seen.sorted())
        }
    }

    @Test func testThatUploadingMultipartFormDataWhileStreamingFromDiskMonitorsProgress() async throws {
        try await Self.withManager { manager, server in
            try await withTemporaryFolder { folder in
                let file = folder.appendingPathComponent("big.bin")
                try Data(repeating: 9, count: 300_000).write(to: file)
                let fractions = NIOLockedValueBox<[Double]>([])
                _ = try await manager.post("post", parameters: nil, progress: { p in fractions.withLockedValue { $0.append(p.fractionCompleted) } }) { form in
                    try form.appendPart(withFileURL: file, name: "big")
                }
                let seen = fractions.withLockedValue { $0 }
                #expect(seen.last == 1.0)
                #expect(seen == seen.sorted())
            }
        }
    }

    /// A form of the source's two text parts, each text repeated `count` times.
    static func largeForm(repeating count: Int) -> MultipartFormData {
        var form = MultipartFormData()
        form.appendPart(withForm: Data(String(repeating: "français", count: count).utf8), name: "french")
        form.appendPart(withForm: Data(String(repeating: "日本語", count: count).utf8), name: "japanese")
        return form
    }

    /// The form was neither encoded into one `Data` nor written to a temporary file: its body is a
    /// stream of the parts, of known length, that can be sent again.
    static func expectStreamed(_ body: RequestBody, length: Int64) {
        #expect(body.data == nil)
        #expect(body.fileURL == nil)
        #expect(body.knownLength == length)
        #expect(body.isReplayable)
    }

    /// Differs: Courier has no memory threshold; a form of any size is streamed from its parts
    /// (here 2 MB of the source's text, whose server echo is checked whole).
    @Test func testThatUploadingMultipartFormDataBelowMemoryThresholdStreamsFromMemory() async throws {
        try await Self.withManager { manager, server in
            let form = Self.largeForm(repeating: 125_000)
            Self.expectStreamed(form.body, length: form.contentLength)
            let response = try await Self.postForm(form, manager: manager, server: server)
            let echoed = try #require(response.value.json?["form"] as? [String: any Sendable])
            #expect(echoed["french"] as? String == String(repeating: "français", count: 125_000))
            #expect(echoed["japanese"] as? String == String(repeating: "日本語", count: 125_000))
        }
    }

    /// Differs: as `testThatUploadingMultipartFormDataBelowMemoryThresholdStreamsFromMemory`; the
    /// server sees the form's `Content-Type` with its boundary.
    @Test func testThatUploadingMultipartFormDataBelowMemoryThresholdSetsContentTypeHeader() async throws {
        try await Self.withManager { manager, server in
            let form = Self.largeForm(repeating: 1)
            let response = try await Self.postForm(form, manager: manager, server: server)
            let headers = try #require(response.value.json?["headers"] as? [String: any Sendable])
            #expect(headers["Content-Type"] as? String == form.contentType)
            #expect(form.contentType.hasPrefix("multipart/form-data; boundary="))
        }
    }

    /// Differs: a file part is read from its own file as the body is sent; nothing is copied to a
    /// temporary file first, whatever the form's size.
    @Test func testThatUploadingMultipartFormDataAboveMemoryThresholdStreamsFromDisk() async throws {
        try await Self.withManager { manager, server in
            try await withTemporaryFolder { folder in
                let file = folder.appendingPathComponent("french.txt")
                try Data(String(repeating: "français", count: 100_000).utf8).write(to: file)
                var form = Self.largeForm(repeating: 1)
                try form.appendPart(withFileURL: file, name: "file")
                Self.expectStreamed(form.body, length: form.contentLength)
                let response = try await Self.postForm(form, manager: manager, server: server)
                let files = try #require(response.value.json?["files"] as? [String: any Sendable])
                #expect((files["file"] as? String)?.utf8.count == 900_000)
                #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["french.txt"], "no file of Courier's beside it")
            }
        }
    }

    /// Differs: as `testThatUploadingMultipartFormDataAboveMemoryThresholdStreamsFromDisk`.
    @Test func testThatUploadingMultipartFormDataAboveMemoryThresholdSetsContentTypeHeader() async throws {
        try await Self.withManager { manager, server in
            try await withTemporaryFolder { folder in
                let file = folder.appendingPathComponent("japanese.txt")
                try Data("日本語".utf8).write(to: file)
                var form = Self.largeForm(repeating: 1)
                try form.appendPart(withFileURL: file, name: "file")
                let response = try await Self.postForm(form, manager: manager, server: server)
                let headers = try #require(response.value.json?["headers"] as? [String: any Sendable])
                #expect(headers["Content-Type"] as? String == form.contentType)
            }
        }
    }

    /// Differs: there is no temporary file whose URL a running upload could change: the request
    /// is a value, read from any thread while the upload runs.
    @Test func testThatAccessingMultipartFormDataURLIsThreadSafe() async throws {
        try await Self.withManager { manager, server in
            var form = MultipartFormData()
            form.appendPart(withForm: Data("upload_data".utf8), name: "upload_data")
            let url = server.url("/post")
            var request = Request(method: .post, url: url, body: form.body)
            request.headerFields[.contentType] = form.contentType
            let done = AsyncStream<CourierError?>.makeStream()
            let task = manager.dataTask(with: request) { _, _, error in
                done.continuation.yield(error)
                done.continuation.finish()
            }
            task.resume()
            // Four child tasks read the request while the upload runs.
            let reads = await withTaskGroup(of: Bool.self) { readers in
                for _ in 0..<4 { readers.addTask { (0..<100).allSatisfy { _ in task.currentRequest.url == url } } }
                return await readers.reduce(into: []) { $0.append($1) }
            }
            #expect(reads == [true, true, true, true])
            var errors = done.stream.makeAsyncIterator()
            let error = await errors.next()
            #expect(error == .some(nil))
        }
    }

    /// Alamofire raises the error when encoding; Courier when the part is appended: the request
    /// is not made, and the error is a typed `.bodyReadFailed`.
    @Test func testThatUploadingMultipartFormDataWithNonexistentFileThrowsAnError() async throws {
        try await Self.withManager { manager, server in
            let missing = FileManager.default.temporaryDirectory.appendingPathComponent("courier-missing-\(UUID().uuidString).jpg")
            await #expect {
                _ = try await manager.post("post", parameters: nil) { form in try form.appendPart(withFileURL: missing, name: "missing") }
            } throws: { error in
                (error as? CourierError)?.code == .bodyReadFailed
            }
            #expect(server.requestCount == 0)
        }
    }
}
