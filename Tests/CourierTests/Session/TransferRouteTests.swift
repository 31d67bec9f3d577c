import Courier
import CourierTesting
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing

/// Downloads, uploads and resumes against TestServer's transfer routes, checked by CRC-32.
@Suite("Transfers checked by checksum")
struct TransferRouteTests {
    private func crc(of url: URL) throws -> CRC32 {
        CRC32.checksum(of: try Data(contentsOf: url))
    }

    @Test func aDroppedConnectionLeavesResumeDataAndTheRestArrivesWithA206() async throws {
        try await withScratchDirectory { folder in
            try await withTestServer { server in
                var configuration = SessionConfiguration.default
                configuration.downloadDirectory = folder
                try await withManager(baseURL: server.baseURL, configuration: configuration) { manager in
                    let file = TestServer.GeneratedFile(length: 3 << 20)
                    let first = await #expect(throws: CourierError.self) {
                        try await manager.download(Request(url: server.url(file.path(["drop-after": "2000000"]))))
                    }
                    #expect(first?.code == .connectionClosed)
                    let resumeData = try #require(first?.resumeData, "a dropped download from a server with validators leaves resume data")
                    #expect(resumeData.bytesReceived > 0 && resumeData.bytesReceived <= 2_000_000)
                    #expect(resumeData.entityTag == file.etag)
                    #expect(contents(of: folder) == [resumeData.temporaryFileURL.lastPathComponent], "only the partial file is kept")

                    let target = folder.appendingPathComponent("whole.bin")
                    let rest = try await manager.download(resumingFrom: resumeData, to: DownloadDestination { _, _ in target })
                    #expect(rest.response.status == .partialContent)
                    #expect(try self.crc(of: target) == file.crc32())
                    #expect(contents(of: folder) == ["whole.bin"])
                }
            }
        }
    }

    @Test func cancellingWithResumeDataThenResuming() async throws {
        try await withScratchDirectory { folder in
            try await withTestServer { server in
                var configuration = SessionConfiguration.default
                configuration.downloadDirectory = folder
                try await withManager(baseURL: server.baseURL, configuration: configuration) { manager in
                    let file = TestServer.GeneratedFile(length: 1 << 20)
                    let completion = Recorder<CourierError?>()
                    let task = manager.downloadTask(with: Request(url: server.url(file.path(["rate": "262144"])))) { _, _, error in
                        completion.append(error)
                    }
                    task.resume()
                    #expect(await eventually { task.countOfBytesReceived > 0 })
                    let resumeData = try #require(await task.cancelProducingResumeData())
                    #expect(await eventually { completion.count == 1 })
                    #expect(completion.all.first??.code == .cancelled)
                    #expect(completion.all.first??.resumeData == resumeData, "the task's error carries the same resume data")

                    let rest = try await manager.download(resumingFrom: resumeData)
                    #expect(rest.response.status == .partialContent)
                    #expect(try self.crc(of: rest.fileURL) == file.crc32())
                }
            }
        }
    }

    @Test(arguments: ["version", "ignore-range"])
    func aServerThatWillNotContinueRestartsCleanly(_ reason: String) async throws {
        try await withScratchDirectory { folder in
            try await withTestServer { server in
                try await withManager(baseURL: server.baseURL) { manager in
                    let original = TestServer.GeneratedFile(length: 400_000)
                    let first = await #expect(throws: CourierError.self) {
                        try await manager.download(Request(url: server.url(original.path(["drop-after": "150000"]))))
                    }
                    var resumeData = try #require(first?.resumeData)
                    // The same resource changed (another version), or a server that ignores ranges.
                    let expected = reason == "version" ? TestServer.GeneratedFile(length: 400_000, version: "2") : original
                    let path = reason == "version" ? expected.path() : original.path(["ignore-range": "1"])
                    resumeData.url = server.url(path)
                    let rest = try await manager.download(resumingFrom: resumeData)
                    #expect(rest.response.status == .ok)
                    #expect(try self.crc(of: rest.fileURL) == expected.crc32())
                }
            }
        }
    }

    @Test func cancellingMidDownloadRemovesThePartialFile() async throws {
        try await withScratchDirectory { folder in
            try await withTestServer { server in
                var configuration = SessionConfiguration.default
                configuration.downloadDirectory = folder
                try await withManager(baseURL: server.baseURL, configuration: configuration) { manager in
                    let task = manager.downloadTask(
                        with: Request(url: server.url(TestServer.GeneratedFile(length: 1 << 20).path(["rate": "262144"]))), completionHandler: nil)
                    task.resume()
                    #expect(await eventually { task.countOfBytesReceived > 0 })
                    task.cancel()
                    #expect(await eventually { manager.tasks.isEmpty })
                    #expect(task.error?.code == .cancelled)
                    #expect(task.error?.resumeData == nil)
                    #expect(await eventually { contents(of: folder).isEmpty })
                }
            }
        }
    }

    @Test func aLargeDownloadArrivesWhole() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let file = TestServer.GeneratedFile(length: 16 << 20)
                let download = try await manager.download(Request(url: server.url(file.path())))
                defer { try? FileManager.default.removeItem(at: download.fileURL) }
                #expect(try self.crc(of: download.fileURL) == file.crc32())
            }
        }
    }

    @Test func uploadsArriveWholeByChecksum() async throws {
        try await withScratchDirectory { folder in
            try await withTestServer { server in
                try await withManager(baseURL: server.baseURL) { manager in
                    let source = TestServer.GeneratedFile(length: 8 << 20)
                    let fileURL = folder.appendingPathComponent("upload.bin")
                    try Data(source.bytes()).write(to: fileURL)
                    let fromFile = try await manager.response(
                        for: Request(method: .post, url: server.url("/courier/upload"), body: .file(fileURL)),
                        serializer: JSONResponseSerializer())
                    let echo = fromFile.value as? [String: any Sendable]
                    #expect(echo?["size"] as? Int == 8 << 20)
                    #expect(echo?["crc32"] as? String == source.crc32().hex)

                    let chunks = AsyncThrowingStream<ByteBuffer, any Error> { continuation in
                        for start in stride(from: 0, to: 1 << 20, by: 100_000) {
                            continuation.yield(ByteBuffer(bytes: source.bytes(start..<min(1 << 20, start + 100_000))))
                        }
                        continuation.finish()
                    }
                    let streamed = try await manager.response(
                        for: Request(method: .put, url: server.url("/courier/upload"), body: .stream(chunks, length: .unknown)),
                        serializer: JSONResponseSerializer())
                    let streamedEcho = streamed.value as? [String: any Sendable]
                    #expect(streamedEcho?["chunked"] as? Bool == true)
                    #expect(streamedEcho?["crc32"] as? String == TestServer.GeneratedFile(length: 1 << 20).crc32().hex)
                }
            }
        }
    }

    @Test func cancellingMidUploadEndsTheTask() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let chunks = AsyncThrowingStream<ByteBuffer, any Error> { continuation in
                    let producer = Task {
                        for _ in 0..<1000 {
                            continuation.yield(ByteBuffer(repeating: 9, count: 64 << 10))
                            try await Task.sleep(for: .milliseconds(10))
                        }
                        continuation.finish()
                    }
                    continuation.onTermination = { _ in producer.cancel() }
                }
                let task = manager.uploadTask(
                    withStreamedRequest: Request(method: .post, url: server.url("/courier/upload"), body: .stream(chunks, length: .unknown)),
                    completionHandler: nil)
                task.resume()
                #expect(await eventually { task.countOfBytesSent > 0 })
                task.cancel()
                #expect(await eventually { manager.tasks.isEmpty })
                #expect(task.error?.code == .cancelled)
            }
        }
    }
}

@Suite("Server-sent events over a real socket")
struct EventStreamTests {
    @Test func eventsArriveParsed() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                var events: [ServerSentEvent] = []
                for try await event in manager.eventStream(Request(url: server.url("/courier/sse?count=3&retry=40"))) {
                    events.append(event)
                    if events.count == 3 { break }
                }
                #expect(events == (1...3).map { ServerSentEvent(event: "tick", data: "event \($0)\nof 3", id: String($0), retry: .milliseconds(40)) })
            }
        }
    }

    @Test(arguments: ["close-after", "drop-after"])
    func aLostConnectionIsResumedWithLastEventID(_ ending: String) async throws {
        try await withTestServer(TestServer.Configuration.recording) { server in
            try await withManager(baseURL: server.baseURL) { manager in
                var ids: [String] = []
                let stream = manager.eventStream(
                    Request(url: server.url("/courier/sse?count=5&retry=20&\(ending)=2")),
                    options: .init(retryDelay: .seconds(30)))
                for try await event in stream { ids.append(event.id ?? "?") }
                #expect(ids == ["1", "2", "3", "4", "5"], "no event lost or repeated")
                let sent = server.receivedRequests.map { $0.value(forHTTPHeaderField: "Last-Event-ID") }
                #expect(sent == [nil, "2", "4", "5"], "each reconnection names the last event; the server's 204 ends the stream")
                #expect(server.receivedRequests.allSatisfy { $0.value(forHTTPHeaderField: "Accept") == "text/event-stream" })
            }
        }
    }

    @Test func somethingElseThanAnEventStreamIsATypedError() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let error = await #expect(throws: CourierError.self) {
                    for try await _ in manager.eventStream(Request(url: server.url("/get"))) {}
                }
                #expect(error?.code == .invalidResponse)
                #expect(error?.message.contains("application/json") == true)
            }
        }
    }

    @Test func reconnectionsWithoutEventsAreBounded() async throws {
        try await withManager(baseURL: nil) { manager in
            let stream = manager.eventStream(
                Request(url: URL(string: "http://127.0.0.1:\(closedPort())/events")!),
                options: .init(retryDelay: .milliseconds(10), maximumReconnectionsWithoutEvent: 2))
            let error = await #expect(throws: CourierError.self) {
                for try await _ in stream {}
            }
            #expect(error?.code == .connectionFailed)
        }
    }
}
