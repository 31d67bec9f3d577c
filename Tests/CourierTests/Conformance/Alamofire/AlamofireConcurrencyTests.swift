import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import Testing

/// Twins of Alamofire's `Tests/ConcurrencyTests.swift`, against TestServer.
///
/// Alamofire's `serializingX()` tasks are Courier's `async` calls: `response(for:serializer:)`,
/// `data(for:)`, `get(_:as:)`, `download(_:to:)`, `stream(_:)`. Cancelling the Swift task that
/// awaits one cancels the request (always: there is no opt-out). Alamofire's `request.isCancelled`
/// is read from the Courier task the manager's `taskDidComplete` hook reports.
@Suite("Conformance: Alamofire ConcurrencyTests")
struct AlamofireConcurrencyConformanceTests {
    static func withManager<T>(_ body: (HTTPSessionManager, TestServer) async throws -> T) async throws -> T {
        try await withTestServer { server in
            try await CourierTests.withManager(baseURL: server.baseURL) { manager in try await body(manager, server) }
        }
    }

    /// Alamofire's `.result`.
    static func result<Value>(_ body: () async throws(CourierError) -> Value) async -> Result<Value, CourierError> {
        do {
            return .success(try await body())
        } catch {
            return .failure(error)
        }
    }

    /// The errors of the tasks `manager` completes, as its `taskDidComplete` hook reports them.
    final class CompletedTasks: Sendable {
        private let errors = NIOLockedValueBox<[CourierError?]>([])
        private let first = NotificationWaiter()

        init(_ manager: SessionManager) {
            manager.hooks.taskDidComplete = { [self] _, _, error in
                self.errors.withLockedValue { $0.append(error) }
                self.first.deliver(nil)
            }
        }

        var all: [CourierError?] { self.errors.withLockedValue { $0 } }

        /// Waits for the first completion (bounded, for a failing test).
        func waitForOne() async -> Int {
            _ = await self.first.wait()
            return self.all.count
        }
    }

    // MARK: Data requests

    @Test func testThatDataTaskSerializesResponseUsingSerializer() async throws {
        try await Self.withManager { manager, server in
            let value = try await manager.response(for: Request(url: server.url("/get")), serializer: DataResponseSerializer()).value
            #expect(!value.isEmpty)
        }
    }

    /// The source attaches two serializing tasks to one request and cancels both at once (its
    /// issue 3978: a continuation resumed twice). A Courier request has one awaiting caller: the
    /// twin cancels two awaiting calls at once, a hundred times, and each ends exactly once.
    @Test func testThatDataTaskCanBeCancelledConcurrently() async throws {
        try await Self.withManager { manager, _ in
            for _ in 0..<100 {
                let first = Task { await Self.result { () async throws(CourierError) in try await manager.get("get", as: HTTPBinEchoResponse.self) } }
                let second = Task { await Self.result { () async throws(CourierError) in try await manager.get("get", as: HTTPBinEchoResponse.self) } }
                async let firstCancel: Void = Task { first.cancel() }.value
                async let secondCancel: Void = Task { second.cancel() }.value
                let results = await (first.value, second.value, firstCancel, secondCancel)
                for result in [results.0, results.1] {
                    if case .failure(let error) = result { #expect(error.code == .cancelled) }
                }
            }
        }
    }

    @Test func testThatDataTaskSerializesDecodable() async throws {
        try await Self.withManager { manager, server in
            let value = try await manager.get("get", as: HTTPBinEchoResponse.self).value
            #expect(value.url?.hasSuffix("/get") == true)
        }
    }

    @Test func testThatDataTaskSerializesString() async throws {
        try await Self.withManager { manager, _ in
            let value = try await manager.response(method: .get, urlString: "get", serializer: StringResponseSerializer()).value
            #expect(value.contains("headers"))
        }
    }

    @Test func testThatDataTaskSerializesData() async throws {
        try await Self.withManager { manager, server in
            let value = try await manager.data(for: Request(url: server.url("/get"))).value
            #expect(!value.isEmpty)
        }
    }

    @Test func testThatDataTaskProducesResult() async throws {
        try await Self.withManager { manager, _ in
            let result = await Self.result { () async throws(CourierError) in try await manager.get("get", as: HTTPBinEchoResponse.self).value }
            #expect((try? result.get()) != nil)
        }
    }

    @Test func testThatDataTaskProducesValue() async throws {
        try await Self.withManager { manager, _ in
            let value = try await manager.get("get", as: HTTPBinEchoResponse.self).value
            #expect(value.headers.isEmpty == false)
        }
    }

    @Test func testThatDataTaskProperlySupportsConcurrentRequests() async throws {
        try await Self.withManager { manager, _ in
            async let first = Self.result { () async throws(CourierError) in try await manager.get("get", as: HTTPBinEchoResponse.self) }
            async let second = Self.result { () async throws(CourierError) in try await manager.get("get", as: HTTPBinEchoResponse.self) }
            async let third = Self.result { () async throws(CourierError) in try await manager.get("get", as: HTTPBinEchoResponse.self) }
            let responses = await [first, second, third]
            #expect(responses.count == 3)
            #expect(responses.allSatisfy { (try? $0.get()) != nil })
        }
    }

    /// Cancelling the awaiting task cancels the request, and the request says so.
    static func expectCancelledRequest(_ manager: HTTPSessionManager, _ start: @escaping @Sendable () async -> Result<DataResponse<HTTPBinEchoResponse>, CourierError>) async {
        let completed = CompletedTasks(manager)
        let task = Task { await start() }
        task.cancel()
        let result = await task.value
        guard case .failure(let error) = result else {
            Issue.record("the request succeeded")
            return
        }
        #expect(error.code == .cancelled)
        #expect(task.isCancelled)
        #expect(await completed.waitForOne() == 1)
        #expect(completed.all.first??.code == .cancelled)
        #expect(manager.tasks.isEmpty)
    }

    @Test func testThatDataTaskCancellationCancelsRequest() async throws {
        try await Self.withManager { manager, _ in
            await Self.expectCancelledRequest(manager) {
                await Self.result { () async throws(CourierError) in try await manager.get("delay/10", as: HTTPBinEchoResponse.self) }
            }
        }
    }

    /// The source's `/get` may answer before the cancellation lands on a loaded machine; the twin
    /// asks a route that answers late.
    @Test func testThatDataTaskIsAutomaticallyCancelledInTask() async throws {
        try await Self.withManager { manager, _ in
            await Self.expectCancelledRequest(manager) {
                await Self.result { () async throws(CourierError) in try await manager.get("delay/10", as: HTTPBinEchoResponse.self) }
            }
        }
    }

    @Test func testThatDataTaskIsAutomaticallyCancelledInTaskGroup() async throws {
        try await Self.withManager { manager, _ in
            await Self.expectCancelledRequest(manager) {
                await withTaskGroup(of: Result<DataResponse<HTTPBinEchoResponse>, CourierError>.self) { group in
                    group.addTask { await Self.result { () async throws(CourierError) in try await manager.get("delay/10", as: HTTPBinEchoResponse.self) } }
                    return await group.first { _ in true }!
                }
            }
        }
    }

    /// Alamofire's `automaticallyCancelling: false` is the request's `cancelsWithCallingTask`:
    /// the calling task is cancelled at once, the request is not, and the call returns its
    /// response; the task completes once, without an error.
    static func expectUncancelled<Value: Sendable>(_ manager: HTTPSessionManager, _ start: @escaping @Sendable () async -> Result<Value, CourierError>) async {
        let completed = CompletedTasks(manager)
        // The calling task the source cancels; awaited below, so it ends with the test.
        let task = Task { await start() }
        task.cancel()
        let result = await task.value
        #expect(task.isCancelled)
        if case .failure(let error) = result { Issue.record("the request failed: \(error)") }
        #expect(await completed.waitForOne() == 1)
        #expect(completed.all.first ?? nil == nil)
        #expect(manager.tasks.isEmpty)
    }

    static func uncancelledRequest(_ server: TestServer) -> Request {
        var request = Request(url: server.url("/get"))
        request.cancelsWithCallingTask = false
        return request
    }

    @Test func testThatDataTaskIsNotAutomaticallyCancelledInTaskWhenDisabled() async throws {
        try await Self.withManager { manager, server in
            await Self.expectUncancelled(manager) {
                await Self.result { () async throws(CourierError) in
                    try await manager.response(for: Self.uncancelledRequest(server), serializer: DecodableResponseSerializer(HTTPBinEchoResponse.self))
                }
            }
        }
    }

    @Test func testThatDataTaskIsNotAutomaticallyCancelledInTaskGroupWhenDisabled() async throws {
        try await Self.withManager { manager, server in
            await Self.expectUncancelled(manager) {
                await withTaskGroup(of: Result<DataResponse<HTTPBinEchoResponse>, CourierError>.self) { group in
                    group.addTask {
                        await Self.result { () async throws(CourierError) in
                            try await manager.response(for: Self.uncancelledRequest(server), serializer: DecodableResponseSerializer(HTTPBinEchoResponse.self))
                        }
                    }
                    return await group.first { _ in true }!
                }
            }
        }
    }

    // MARK: Downloads

    @Test func testThatDownloadTaskSerializesURL() async throws {
        try await Self.withManager { manager, server in
            let download = try await manager.download(Request(url: server.url("/get")))
            defer { try? FileManager.default.removeItem(at: download.fileURL) }
            #expect(FileManager.default.fileExists(atPath: download.fileURL.path))
            #expect(try Data(contentsOf: download.fileURL).isEmpty == false)
        }
    }

    // Alamofire's `serializingDownload(using:)`, `serializingDecodable`, `serializingString`,
    // `serializingData` on a download: Courier's `download(_:to:)` returns the file, and
    // `DownloadResponse.value(serializedBy:)` reads and serializes it.

    @Test func testThatDownloadTaskSerializesResponseFromSerializer() async throws {
        try await Self.withManager { manager, server in
            let download = try await manager.download(Request(url: server.url("/get")))
            defer { try? FileManager.default.removeItem(at: download.fileURL) }
            let value = try download.value(serializedBy: DataResponseSerializer())
            #expect(value == (try Data(contentsOf: download.fileURL)) && !value.isEmpty)
        }
    }

    @Test func testThatDownloadTaskSerializesDecodable() async throws {
        try await Self.withManager { manager, server in
            let download = try await manager.download(Request(url: server.url("/get")))
            defer { try? FileManager.default.removeItem(at: download.fileURL) }
            let value = try download.value(serializedBy: DecodableResponseSerializer<HTTPBinEchoResponse>())
            #expect(value.url?.hasSuffix("/get") == true)
        }
    }

    @Test func testThatDownloadTaskSerializesString() async throws {
        try await Self.withManager { manager, server in
            let download = try await manager.download(Request(url: server.url("/get")))
            defer { try? FileManager.default.removeItem(at: download.fileURL) }
            #expect(try download.value(serializedBy: StringResponseSerializer()).hasPrefix("{"))
        }
    }

    @Test func testThatDownloadTaskSerializesData() async throws {
        try await Self.withManager { manager, server in
            let download = try await manager.download(Request(url: server.url("/get")))
            defer { try? FileManager.default.removeItem(at: download.fileURL) }
            #expect(try !download.value(serializedBy: DataResponseSerializer()).isEmpty)
        }
    }

    @Test func testThatDownloadTaskProducesResult() async throws {
        try await Self.withManager { manager, server in
            let result = await Self.result { () async throws(CourierError) in
                let download = try await manager.download(Request(url: server.url("/get")))
                defer { try? FileManager.default.removeItem(at: download.fileURL) }
                return try download.value(serializedBy: DecodableResponseSerializer<HTTPBinEchoResponse>())
            }
            #expect((try? result.get()) != nil)
        }
    }

    @Test func testThatDownloadTaskProducesValue() async throws {
        try await Self.withManager { manager, server in
            let download = try await manager.download(Request(url: server.url("/get")))
            defer { try? FileManager.default.removeItem(at: download.fileURL) }
            let value = try download.value(serializedBy: DecodableResponseSerializer<HTTPBinEchoResponse>())
            #expect(!value.headers.isEmpty)
        }
    }

    @Test func testThatDownloadTaskProperlySupportsConcurrentRequests() async throws {
        try await Self.withManager { manager, server in
            async let first = Self.result { () async throws(CourierError) in try await manager.download(Request(url: server.url("/get"))) }
            async let second = Self.result { () async throws(CourierError) in try await manager.download(Request(url: server.url("/get"))) }
            async let third = Self.result { () async throws(CourierError) in try await manager.download(Request(url: server.url("/get"))) }
            let downloads = await [first, second, third]
            #expect(downloads.count == 3)
            for download in downloads {
                let file = try download.get().fileURL
                defer { try? FileManager.default.removeItem(at: file) }
                #expect((try? download.get().value(serializedBy: DecodableResponseSerializer<HTTPBinEchoResponse>())) != nil)
            }
        }
    }

    /// Cancelling the task that awaits a download cancels it.
    static func expectCancelledDownload(_ manager: HTTPSessionManager, _ start: @escaping @Sendable () async -> Result<DownloadResponse, CourierError>) async {
        let completed = CompletedTasks(manager)
        let task = Task { await start() }
        task.cancel()
        guard case .failure(let error) = await task.value else {
            Issue.record("the download succeeded")
            return
        }
        #expect(error.code == .cancelled)
        #expect(await completed.waitForOne() == 1)
        #expect(completed.all.first??.code == .cancelled)
        #expect(manager.tasks.isEmpty)
    }

    @Test func testThatDownloadTaskCancelsRequest() async throws {
        try await Self.withManager { manager, server in
            await Self.expectCancelledDownload(manager) {
                await Self.result { () async throws(CourierError) in try await manager.download(Request(url: server.url("/delay/10"))) }
            }
        }
    }

    @Test func testThatDownloadTaskIsAutomaticallyCancelledInTask() async throws {
        try await Self.withManager { manager, server in
            await Self.expectCancelledDownload(manager) {
                await Self.result { () async throws(CourierError) in try await manager.download(Request(url: server.url("/delay/10"))) }
            }
        }
    }

    @Test func testThatDownloadTaskIsAutomaticallyCancelledInTaskGroup() async throws {
        try await Self.withManager { manager, server in
            await Self.expectCancelledDownload(manager) {
                await withTaskGroup(of: Result<DownloadResponse, CourierError>.self) { group in
                    group.addTask { await Self.result { () async throws(CourierError) in try await manager.download(Request(url: server.url("/delay/10"))) } }
                    return await group.first { _ in true }!
                }
            }
        }
    }

    @Test func testThatDownloadTaskIsNotAutomaticallyCancelledInTaskWhenDisabled() async throws {
        try await Self.withManager { manager, server in
            await Self.expectUncancelled(manager) {
                let result = await Self.result { () async throws(CourierError) in try await manager.download(Self.uncancelledRequest(server)) }
                if case .success(let download) = result { try? FileManager.default.removeItem(at: download.fileURL) }
                return result
            }
        }
    }

    @Test func testThatDownloadTaskIsNotAutomaticallyCancelledInTaskGroupWhenDisabled() async throws {
        try await Self.withManager { manager, server in
            await Self.expectUncancelled(manager) {
                await withTaskGroup(of: Result<DownloadResponse, CourierError>.self) { group in
                    group.addTask {
                        let result = await Self.result { () async throws(CourierError) in try await manager.download(Self.uncancelledRequest(server)) }
                        if case .success(let download) = result { try? FileManager.default.removeItem(at: download.fileURL) }
                        return result
                    }
                    return await group.first { _ in true }!
                }
            }
        }
    }

    // MARK: Streams

    /// The lines of a streamed body, read to its end.
    static func lines(of stream: DataStreamResponse) async throws -> [String] {
        var data = Data()
        for try await chunk in stream.body { data.append(contentsOf: chunk.readableBytesView) }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    /// Alamofire's `payloads(2)` sends two JSON documents; TestServer's `/stream/2` sends two
    /// lines of JSON.
    @Test func testThatDataStreamTaskCanStreamData() async throws {
        try await Self.withManager { manager, server in
            let stream = try await manager.stream(Request(url: server.url("/stream/2")))
            #expect(try await Self.lines(of: stream).count == 2)
        }
    }

    /// Differs: `/stream/2` writes two lines; the strings are what each chunk completes, so their
    /// number follows the reads: joined, they are the two lines.
    @Test func testThatDataStreamTaskCanStreamStrings() async throws {
        try await Self.withManager { manager, server in
            let stream = try await manager.stream(Request(url: server.url("/stream/2")))
            var strings: [String] = []
            for try await string in stream.strings { strings.append(string) }
            #expect(!strings.isEmpty)
            #expect(strings.joined().split(separator: "\n").count == 2)
        }
    }

    /// Alamofire's `payloads(2)` is TestServer's `/stream/2`: two values, one a line.
    @Test func testThatDataStreamTaskCanStreamDecodable() async throws {
        try await Self.withManager { manager, server in
            struct Line: Decodable, Sendable { let id: Int }
            let stream = try await manager.stream(Request(url: server.url("/stream/2")))
            var ids: [Int] = []
            for try await line in stream.decoded(Line.self) { ids.append(line.id) }
            #expect(ids == [0, 1])
        }
    }

    /// Differs: the response hook (`dataTaskDidReceiveResponse`) is synchronous, called on an
    /// engine thread; Alamofire's `onHTTPResponse` may be `async`.
    @Test func testThatDataStreamHasAsyncOnHTTPResponse() async throws {
        try await Self.withManager { manager, server in
            let called = Recorder<Int>()
            manager.hooks.dataTaskDidReceiveResponse = { _, _, response in
                called.append(response.status.code)
                return .allow
            }
            let stream = try await manager.stream(Request(url: server.url("/stream/2")))
            #expect(try await Self.lines(of: stream).count == 2)
            #expect(called.all == [200])
        }
    }

    @Test func testThatDataOnHTTPResponseCanAllow() async throws {
        try await Self.withManager { manager, server in
            let called = Recorder<Int>()
            manager.hooks.dataTaskDidReceiveResponse = { _, _, response in
                called.append(response.status.code)
                return .allow
            }
            let stream = try await manager.stream(Request(url: server.url("/stream/2")))
            #expect(try await Self.lines(of: stream).count == 2)
            #expect(called.all == [200])
        }
    }

    /// Cancelled on its response head, a stream gives no body: `stream(_:)` throws
    /// `.cancelled`, the response attached.
    @Test func testThatDataOnHTTPResponseCanCancel() async throws {
        try await Self.withManager { manager, server in
            let called = Recorder<Int>()
            manager.hooks.dataTaskDidReceiveResponse = { _, _, response in
                called.append(response.status.code)
                return .cancel
            }
            let completed = CompletedTasks(manager)
            let error = await #expect(throws: CourierError.self) {
                _ = try await manager.stream(Request(url: server.url("/stream/2")))
            }
            #expect(error?.code == .cancelled)
            #expect(error?.response?.status == .ok)
            #expect(called.all == [200])
            #expect(await completed.waitForOne() == 1)
            #expect(completed.all.first??.code == .cancelled)
        }
    }

    /// A paced body of `count` chunks (one every 50 ms), so that the stream is still going when
    /// the twin stops it: a minute by default, so that it is, however long a busy machine keeps
    /// the consumer from its first chunk (with 2.5 s, a full suite beside two builds once saw the
    /// whole body arrive before the consumer's first read, and nothing left to cancel).
    static func pacedURL(_ server: TestServer, count: Int = Self.pacedChunks) -> URL {
        server.url("/courier/slow-body/\(count)?interval=0.05")
    }

    static let pacedChunks = 1200

    @Test func testThatDataStreamTaskCanBeDirectlyCancelled() async throws {
        try await Self.withManager { manager, server in
            let log = TaskNotificationLog()
            let stream = try await manager.stream(Request(url: Self.pacedURL(server)))
            var chunks = 0
            var thrown: CourierError?
            do {
                for try await _ in stream.body {
                    chunks += 1
                    if chunks == 1 { stream.task.cancel() }
                }
            } catch {
                thrown = error as? CourierError
            }
            #expect(thrown?.code == .cancelled)
            #expect(chunks >= 1 && chunks < Self.pacedChunks)
            #expect(await log.wait(for: .taskDidComplete, of: stream.task))
            #expect(stream.task.error?.code == .cancelled)
        }
    }

    @Test func testThatDataStreamTaskIsCancelledByCancellingIteration() async throws {
        try await Self.withManager { manager, server in
            let log = TaskNotificationLog()
            let stream = try await manager.stream(Request(url: Self.pacedURL(server)))
            var chunks = 0
            for try await _ in stream.body {
                chunks += 1
                break
            }
            #expect(chunks == 1)
            #expect(await log.wait(for: .taskDidComplete, of: stream.task))
            #expect(stream.task.error?.code == .cancelled)
        }
    }

    /// Differs: a body is iterated once; reading it a second time is a second reader of its
    /// broadcast (`broadcast(to:)`, which starts at the first chunk too). The first reader's
    /// `break` does not cancel the request while another reader remains; the second's does.
    @Test func testThatDataStreamTaskCanBeCancelledAfterStreamTurnsOffAutomaticCancellation() async throws {
        try await Self.withManager { manager, server in
            let log = TaskNotificationLog()
            let stream = try await manager.stream(Request(url: Self.pacedURL(server)))
            let readers = stream.broadcast(to: 2)
            var datas: [ByteBuffer] = []
            for try await chunk in readers[0].body {
                datas.append(chunk)
                break
            }
            #expect(stream.task.state == .running, "another reader remains")
            for try await chunk in readers[1].body {
                datas.append(chunk)
                break
            }
            #expect(datas.count == 2)
            #expect(datas[0] == datas[1])
            #expect(await log.wait(for: .taskDidComplete, of: stream.task))
            #expect(stream.task.error?.code == .cancelled)
        }
    }

    @Test func testThatDataStreamTaskCanBeImplicitlyCancelled() async throws {
        try await Self.withManager { manager, server in
            let completed = CompletedTasks(manager)
            let task = Task { () -> (chunks: Int, error: CourierError?) in
                var chunks = 0
                do {
                    let stream = try await manager.stream(Request(url: Self.pacedURL(server)))
                    for try await _ in stream.body { chunks += 1 }
                    return (chunks, nil)
                } catch {
                    return (chunks, error as? CourierError)
                }
            }
            task.cancel()
            let (chunks, error) = await task.value
            #expect(chunks == 0)
            #expect(error?.code == .cancelled)
            #expect(await completed.waitForOne() == 1)
            #expect(completed.all.first??.code == .cancelled)
        }
    }

    // MARK: Uploads

    /// The source feeds a bound stream pair 75 times, pausing 3 ms between writes. The twin's
    /// stream yields the next piece only once the upload progress has reported the previous one,
    /// so the body goes out in 75 steps however loaded the machine is.
    @Test func testThatDelayedUploadStreamResultsInMultipleProgressValues() async throws {
        try await Self.withManager { manager, server in
            let count = 75
            let piece = Data("Lorem ipsum dolor sit amet, consectetur adipiscing elit. ".utf8)
            let total = Int64(piece.count * count)
            let (stream, continuation) = AsyncThrowingStream<ByteBuffer, any Error>.makeStream()
            let fed = NIOLockedValueBox(1)
            continuation.yield(ByteBuffer(bytes: piece))
            let uploads = Recorder<Double>()
            let downloads = Recorder<Double>()
            let request = Request(method: .post, url: server.url("/courier/upload"), body: .stream(stream, length: .known(total)))
            let response = try await manager.response(
                for: request, serializer: JSONResponseSerializer(),
                uploadProgress: { progress in
                    uploads.append(progress.fractionCompleted)
                    // Feed the next piece once everything fed so far went out.
                    let next = fed.withLockedValue { fed -> Bool in
                        guard fed < count, progress.completedUnitCount >= Int64(fed * piece.count) else { return false }
                        fed += 1
                        return true
                    }
                    if next { continuation.yield(ByteBuffer(bytes: piece)) }
                    if fed.withLockedValue({ $0 }) == count { continuation.finish() }
                },
                downloadProgress: { downloads.append($0.fractionCompleted) })
            let seen = uploads.all
            #expect(zip(seen, seen.dropFirst()).allSatisfy { $0 <= $1 })
            #expect(seen.count > 1)
            #expect(downloads.all.last == 1.0)
            #expect((response.value as? [String: any Sendable])?["size"] as? Int == Int(total))
        }
    }

    // MARK: Progress sequences

    /// Differs: Courier's task has progress sequences (`progressUpdates(for:)`), not sequences of
    /// responses, requests, tasks or cURL descriptions; each progress sequence starts with the
    /// current snapshot, so a GET's upload sequence is not empty: it ends finished at 1.0, as the
    /// download's does.
    @Test func testThatDownloadProgressStreamReturnsProgress() async throws {
        try await Self.withManager { manager, server in
            let status: NIOLockedValueBox<Int?> = NIOLockedValueBox(nil)
            let done = NotificationWaiter()
            let task = manager.dataTask(with: Request(url: server.url("/get"))) { response, _, _ in
                status.withLockedValue { $0 = response?.status.code }
                done.deliver(nil)
            }
            let downloads = task.progressUpdates(for: .download)
            let uploads = task.progressUpdates(for: .upload)
            async let downloadSnapshots = downloads.reduce(into: [ProgressSnapshot]()) { $0.append($1) }
            async let uploadSnapshots = uploads.reduce(into: [ProgressSnapshot]()) { $0.append($1) }
            task.resume()
            let (download, upload) = await (downloadSnapshots, uploadSnapshots)
            _ = await done.wait()
            #expect(status.withLockedValue { $0 } == 200)
            #expect(download.last?.isFinished == true)
            #expect(download.last?.fractionCompleted == 1)
            #expect(upload.last?.isFinished == true)
            #expect(upload.last?.completedUnitCount == 0)
        }
    }
}
