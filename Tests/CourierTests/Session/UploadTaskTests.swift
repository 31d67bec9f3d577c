import Courier
import CourierTesting
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing

@Suite("Upload tasks over a real socket")
struct UploadTaskTests {
    @Test func aMissingFileIsATypedError() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let missing = URL(fileURLWithPath: "/nonexistent-\(UUID().uuidString).bin")
                let error: CourierError? = await awaitCallback { finish in
                    manager.uploadTask(with: Request(method: .post, url: server.url("/post")), fromFile: missing) { finish($2) }.resume()
                }
                #expect(error?.code == .bodyReadFailed)
                #expect(error?.message.contains(missing.path) == true)
                #expect(server.requestCount == 0, "nothing was sent")
            }
        }
    }

    /// A body file named by a URL that is not a `file:` URL is refused before anything is sent:
    /// its path was read as a local one, and `https://example.com/<path>` uploaded this machine's
    /// file at that path (URLSession refuses such a URL; multipart parts refused it already).
    @Test func aURLThatIsNotAFileURLIsRefusedBeforeAnythingIsSent() async throws {
        try await withScratchDirectory { folder in
            let file = folder.appendingPathComponent("local.bin")
            try Data(repeating: 1, count: 1000).write(to: file)
            var components = URLComponents()
            components.scheme = "https"
            components.host = "example.com"
            components.path = file.path
            let remote = try #require(components.url)
            try await withTestServer { server in
                try await withManager(baseURL: server.baseURL) { manager in
                    let error: CourierError? = await awaitCallback { finish in
                        manager.uploadTask(with: Request(method: .post, url: server.url("/courier/upload")), fromFile: remote) { finish($2) }.resume()
                    }
                    #expect(error?.code == .bodyReadFailed, "\(String(describing: error))")
                    #expect(error?.message.contains("not a file URL") == true, "\(String(describing: error))")
                    #expect(server.requestCount == 0, "nothing was sent")
                }
            }
        }
    }

    /// A body file given as a symbolic link is its target's bytes: its size was read without
    /// following the link (the length of the target's path), and the upload then failed as a file
    /// that grew.
    @Test func aSymbolicLinkIsUploadedAsItsTarget() async throws {
        try await withScratchDirectory { folder in
            let target = folder.appendingPathComponent("target.bin")
            try Data(repeating: 7, count: 100_000).write(to: target)
            let link = folder.appendingPathComponent("link.bin")
            try FileManager.default.createSymbolicLink(at: link, withDestinationURL: target)
            try await withTestServer { server in
                try await withManager(baseURL: server.baseURL) { manager in
                    manager.responseSerializer = HTTPResponseSerializer()
                    let result: (Data?, CourierError?) = await awaitCallback { finish in
                        manager.uploadTask(with: Request(method: .post, url: server.url("/courier/upload")), fromFile: link) {
                            finish(($1 as? Data, $2))
                        }.resume()
                    }
                    #expect(result.1 == nil, "\(String(describing: result.1))")
                    let summary = try #require(result.0.flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] })
                    #expect(summary["size"] as? Int == 100_000)
                }
            }
        }
    }

    /// A body file that is not a regular file (a device that reads as 0 bytes or none, a pipe that
    /// blocks whoever opens it, a directory) is refused before anything is sent: the server got a
    /// complete empty upload before the body failed, and a pipe held one of NIO's blocking threads
    /// and the task until its timeout, which then reported success.
    @Test func aFileThatIsNotARegularFileIsRefusedBeforeAnythingIsSent() async throws {
        try await withScratchDirectory { folder in
            let pipe = folder.appendingPathComponent("pipe")
            #expect(mkfifo(pipe.path, 0o600) == 0)
            defer {
                // Frees a thread an old build left blocked opening the pipe.
                let writer = open(pipe.path, O_WRONLY | O_NONBLOCK)
                if writer >= 0 { close(writer) }
            }
            try await withTestServer { server in
                var configuration = SessionConfiguration.default
                configuration.timeoutIntervalForRequest = 5
                try await withManager(baseURL: server.baseURL, configuration: configuration) { manager in
                    for file in [URL(fileURLWithPath: "/dev/null"), pipe, folder] {
                        let error: CourierError? = await awaitCallback { finish in
                            manager.uploadTask(with: Request(method: .put, url: server.url("/courier/upload")), fromFile: file) { finish($2) }.resume()
                        }
                        #expect(error?.code == .bodyReadFailed, "\(file.path): \(String(describing: error))")
                        #expect(error?.message.contains(file.path) == true, "\(String(describing: error))")
                        #expect(server.requestCount == 0, "\(file.path): nothing was sent")
                    }
                }
            }
        }
    }

    @Test func aFileThatShrinksWhileSentIsATypedError() async throws {
        try await withScratchDirectory { folder in
            let file = folder.appendingPathComponent("shrinking.bin")
            // Several chunks long, so that the cut comes while the file is being sent.
            try Data(repeating: 3, count: 8 << 20).write(to: file)
            try await withTestServer { server in
                try await withManager(baseURL: server.baseURL) { manager in
                    let truncated = NIOLockedValueBox(false)
                    let error: CourierError? = await awaitCallback { finish in
                        manager.uploadTask(
                            with: Request(method: .post, url: server.url("/courier/upload")), fromFile: file,
                            progress: { _ in
                                let first = truncated.withLockedValue { done -> Bool in
                                    defer { done = true }
                                    return !done
                                }
                                if first { truncate(file.path, 1024) }
                            }
                        ) { finish($2) }.resume()
                    }
                    #expect(truncated.withLockedValue { $0 })
                    #expect(error?.code == .bodyReadFailed, "\(String(describing: error))")
                }
            }
        }
    }

    /// A file that grows while it is sent fails before its last chunk goes out: the server never
    /// gets the request whole. The growth was found on the read after the last chunk, once the
    /// whole body (as long as declared) had been written: the server had a complete request, and
    /// the client reported a body "not sent". The file grows in the first progress report, before
    /// the second of its four chunks is read (the pump reads a chunk once the previous one was
    /// written and reported).
    @Test func aFileThatGrowsWhileSentFailsBeforeTheRequestIsComplete() async throws {
        try await withScratchDirectory { folder in
            let file = folder.appendingPathComponent("growing.bin")
            try Data(repeating: 5, count: 2 << 20).write(to: file)
            try await withTestServer { server in
                try await withManager(baseURL: server.baseURL) { manager in
                    let reported = NIOLockedValueBox(false)
                    let grown = NIOLockedValueBox(false)
                    let error: CourierError? = await awaitCallback { finish in
                        manager.uploadTask(
                            with: Request(method: .post, url: server.url("/courier/upload")), fromFile: file,
                            progress: { _ in
                                let first = reported.withLockedValue { done -> Bool in
                                    defer { done = true }
                                    return !done
                                }
                                if first, Self.append(Data(repeating: 6, count: 1024), to: file) { grown.withLockedValue { $0 = true } }
                            }
                        ) { finish($2) }.resume()
                    }
                    #expect(grown.withLockedValue { $0 }, "the file did not grow")
                    #expect(error?.code == .bodyReadFailed, "\(String(describing: error))")
                    // Once the server saw the connection close, it has read all the client wrote.
                    #expect(await eventually { server.openConnectionCount == 0 })
                    #expect(server.requestCount == 0, "the server got the whole request before the client failed it")
                }
            }
        }
    }

    /// A file's 512 KiB chunks go out in slices of 64 KiB, each counted as it is written, as a
    /// body in memory is: the upload's progress and the idle clock (`timeoutIntervalForRequest`)
    /// follow the socket. Counted once a chunk, an upload over a link slower than 512 KiB per
    /// idle timeout (70 kbit/s for 60 s, 280 kbit/s for 15 s) timed out with "no data" while its
    /// bytes went steadily.
    @Test func aFileUploadIsCountedInSlicesAsTheyAreWritten() async throws {
        try await withScratchDirectory { folder in
            let file = folder.appendingPathComponent("slices.bin")
            // Under the expect-continue threshold; a whole chunk and part of another.
            let size = 900_000
            try Data(repeating: 9, count: size).write(to: file)
            try await withTestServer { server in
                try await withManager(baseURL: server.baseURL) { manager in
                    let sent = Recorder<Int64>()
                    var hooks = SessionManager.Hooks()
                    hooks.taskDidSendBodyData = { _, _, bytes, _, _ in sent.append(bytes) }
                    manager.hooks = hooks
                    let error: CourierError? = await awaitCallback { finish in
                        manager.uploadTask(with: Request(method: .post, url: server.url("/courier/upload")), fromFile: file) { finish($2) }.resume()
                    }
                    #expect(error == nil, "\(String(describing: error))")
                    #expect(sent.all.reduce(0, +) == Int64(size))
                    #expect(sent.all.allSatisfy { $0 <= 64 * 1024 }, "counted in pieces of \(Set(sent.all).sorted())")
                }
            }
        }
    }

    /// An upload answered before its body went (the server answers on the head, keeps the
    /// connection, and reads and drops the body) ends with that answer, and its count of bytes sent
    /// stops there: a body in memory is queued whole over HTTP/1.1 and leaves as the server reads
    /// it, and each slice that left after the task's end was still reported, to the progress
    /// handler and `countOfBytesSent`, after the completion handler had run.
    @Test func nothingIsCountedAfterAnEarlyAnswerEndedTheUpload() async throws {
        let size = 32 << 20
        try await ScriptedHTTPServer.with({ _, _, _ in
            .respondBeforeBody("HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")
        }) { server in
            var configuration = SessionConfiguration.default
            configuration.expectContinueThreshold = nil
            try await withManager(baseURL: server.baseURL, configuration: configuration) { manager in
                let made = NIOLockedValueBox<UploadTask?>(nil)
                let atCompletion: (CourierError?, Int64) = await awaitCallback { finish in
                    let task = manager.uploadTask(
                        with: Request(method: .post, url: server.baseURL.appendingPathComponent("early")), fromData: Data(count: size)
                    ) { _, _, error in finish((error, made.withLockedValue { $0?.countOfBytesSent } ?? -1)) }
                    made.withLockedValue { $0 = task }
                    task.resume()
                }
                #expect(atCompletion.0 == nil, "\(String(describing: atCompletion.0))")
                let task = try #require(made.withLockedValue { $0 })
                // The server has read the whole body: every write of it has completed.
                #expect(await eventually { server.receivedBodyLengths == [size] })
                #expect(task.countOfBytesSent == atCompletion.1, "counted after the task ended")
            }
        }
    }

    /// Appends `data` to `file`; false when it could not.
    private static func append(_ data: Data, to file: URL) -> Bool {
        guard let handle = try? FileHandle(forWritingTo: file) else { return false }
        defer { try? handle.close() }
        do {
            _ = try handle.seekToEnd()
            try handle.write(contentsOf: data)
            return true
        } catch {
            return false
        }
    }

    /// A file that ``RequestCompressor`` compresses as it is sent has no length beforehand: the
    /// upload's progress counts compressed bytes against a total of -1 (unknown), and once the
    /// task succeeded its expected count is the bytes sent. The total
    /// was the file's uncompressed size, which the compressed count never reached.
    @Test func aCompressedFileUploadHasAnUnknownTotalAndEndsComplete() async throws {
        try await withScratchDirectory { folder in
            let file = folder.appendingPathComponent("zeros.bin")
            let size = 3 << 20
            try Data(count: size).write(to: file)
            try await withTestServer { server in
                try await withManager(baseURL: server.baseURL) { manager in
                    manager.interceptor = RequestCompressor()
                    manager.responseSerializer = JSONResponseSerializer()
                    let reports = Recorder<(completed: Int64, total: Int64)>()
                    let made = NIOLockedValueBox<UploadTask?>(nil)
                    let result: ((any Sendable)?, CourierError?) = await awaitCallback { finish in
                        let task = manager.uploadTask(
                            with: Request(method: .post, url: server.url("/courier/upload")), fromFile: file,
                            progress: { reports.append(($0.completedUnitCount, $0.totalUnitCount)) }
                        ) { finish(($1, $2)) }
                        made.withLockedValue { $0 = task }
                        task.resume()
                    }
                    #expect(result.1 == nil, "\(String(describing: result.1))")
                    let task = try #require(made.withLockedValue { $0 })
                    let received = result.0.json?["size"] as? Int
                    #expect(received.map { $0 > 0 && $0 < size / 10 } == true, "the body was not compressed: \(String(describing: received))")
                    #expect(received.map { Int64($0) } == task.countOfBytesSent)
                    #expect(!reports.all.isEmpty)
                    #expect(reports.all.allSatisfy { $0.total == -1 }, "totals reported: \(Set(reports.all.map(\.total)))")
                    #expect(reports.all.last?.completed == task.countOfBytesSent, "the last report left bytes out")
                    #expect(task.countOfBytesExpectedToSend == task.countOfBytesSent)
                }
            }
        }
    }

    @Test func aFailingStreamIsATypedError() async throws {
        struct Broken: Error {}
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let stream = AsyncThrowingStream<ByteBuffer, any Error> { continuation in
                    continuation.yield(ByteBuffer(string: "part"))
                    continuation.finish(throwing: Broken())
                }
                let error: CourierError? = await awaitCallback { finish in
                    manager.uploadTask(withStreamedRequest: Request(method: .post, url: server.url("/post"), body: .stream(stream, length: .unknown))) {
                        finish($2)
                    }.resume()
                }
                #expect(error?.code == .bodyReadFailed)
                #expect(error?.underlyingError is Broken)
            }
        }
    }

    /// A stream declared negative in length is refused before a connection is used. Its head went
    /// out with `Content-Length: -5`, and the task failed only then, as a length mismatch (or as
    /// whatever the server made of that head).
    @Test func aStreamDeclaredNegativeInLengthIsRefusedBeforeAnythingIsSent() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let chunks: @Sendable () -> AsyncThrowingStream<ByteBuffer, any Error> = {
                    AsyncThrowingStream { continuation in
                        continuation.yield(ByteBuffer(string: "part"))
                        continuation.finish()
                    }
                }
                let bodies: [RequestBody] = [.stream(chunks(), length: .known(-5)), .replayableStream(length: .known(-1), chunks)]
                for body in bodies {
                    let error: CourierError? = await awaitCallback { finish in
                        manager.uploadTask(withStreamedRequest: Request(method: .post, url: server.url("/courier/upload"), body: body)) {
                            finish($2)
                        }.resume()
                    }
                    #expect(error?.code == .invalidRequest, "\(String(describing: error))")
                    #expect(error?.message.contains("negative") == true, "\(String(describing: error))")
                }
                #expect(server.connectionCount == 0, "nothing was sent")
            }
        }
    }

    /// Issue 17: the session-level multipart path takes a boundary too (callback and async), and
    /// it goes on the wire; a boundary RFC 2046 refuses fails before any task is made.
    @Test func customBoundaryThroughTheSessionManager() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let response = try await manager.post("post", parameters: ["a": "1"], boundary: "courier-session-boundary") { form in
                    form.appendPart(withForm: Data("français".utf8), name: "french")
                }
                let headers = try #require(response.value.json?["headers"] as? [String: any Sendable])
                #expect(headers["Content-Type"] as? String == "multipart/form-data; boundary=courier-session-boundary")
                #expect((response.value.json?["form"] as? [String: any Sendable])?["french"] as? String == "français")

                let object: (any Sendable)? = await awaitCallback { finish in
                    manager.post("post", boundary: "courier-callback-boundary", constructingBodyWith: { form in
                        form.appendPart(withForm: Data("1".utf8), name: "one")
                    }, success: { _, object in finish(object) }, failure: { _, error in
                        Issue.record("\(error)")
                        finish(nil)
                    })
                }
                let echoed = try #require(object.json?["headers"] as? [String: any Sendable])
                #expect(echoed["Content-Type"] as? String == "multipart/form-data; boundary=courier-callback-boundary")

                let before = server.requestCount
                let refused: (DataTask?, CourierError)? = await awaitCallback { finish in
                    let task = manager.post("post", boundary: "", constructingBodyWith: { _ in }, failure: { task, error in finish((task, error)) })
                    #expect(task == nil)
                }
                #expect(refused?.0 == nil)
                #expect(refused?.1.code == .invalidRequest)
                #expect(server.requestCount == before)
            }
        }
    }
}

@Suite("A request body written to a file")
struct RequestBodyFileTests {
    /// One chunk, then the end, at which it cancels the task reading it: the body is whole and
    /// the move into place (or the cleanup after it) runs in a cancelled task.
    struct CancellingAtEnd: AsyncSequence, Sendable {
        typealias Element = ByteBuffer
        struct AsyncIterator: AsyncIteratorProtocol {
            var sent = false
            mutating func next() async throws -> ByteBuffer? {
                if self.sent {
                    withUnsafeCurrentTask { $0?.cancel() }
                    return nil
                }
                self.sent = true
                return ByteBuffer(string: "abc")
            }
        }
        func makeAsyncIterator() -> AsyncIterator { AsyncIterator() }
    }

    @Test func aCallerCancelledAsTheBodyEndsLeavesNoHiddenFile() async throws {
        try await withScratchDirectory { folder in
            let target = folder.appendingPathComponent("body.bin")
            let request = Request(method: .post, url: URL(string: "http://localhost/upload")!, body: .stream(CancellingAtEnd(), length: .known(3)))
            // Unstructured so that the body's end cancels this task (not the test's); awaited at once.
            let written = await Task {
                try await HTTPRequestSerializer().request(withMultipartFormRequest: request, writingStreamContentsToFile: target)
            }.result
            // Moved into place before the cancellation was seen, or not at all: never a hidden
            // `.body.bin.courier-….partial` beside it.
            if case .success = written {
                #expect(contents(of: folder) == ["body.bin"])
            } else {
                #expect(contents(of: folder).isEmpty, "\(contents(of: folder))")
            }
        }
    }
}
