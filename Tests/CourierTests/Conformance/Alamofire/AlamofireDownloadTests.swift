import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import Testing

/// Twins of Alamofire's `Tests/DownloadTests.swift`, against TestServer (`/bytes/N`, and
/// `/courier/file/N`, which sends validators and honours `Range`, so that downloads can resume).
/// Alamofire's `session.download(_:to:)` is Courier's `download(_:to:)` or
/// `downloadTask(with:progress:destination:completionHandler:)`; its `Destination` options are
/// `DownloadDestination.Options`.
@Suite("Conformance: Alamofire DownloadTests")
struct AlamofireDownloadConformanceTests {
    static func withManager<T>(_ body: (HTTPSessionManager, TestServer, URL) async throws -> T) async throws -> T {
        try await withTestServer { server in
            try await CourierTests.withManager(baseURL: server.baseURL) { manager in
                try await withTemporaryFolder { folder in try await body(manager, server, folder) }
            }
        }
    }

    static func destination(_ url: URL, _ options: DownloadDestination.Options = [.createIntermediateDirectories]) -> DownloadDestination {
        DownloadDestination(options: options) { _, _ in url }
    }

    @Test func testDownloadClassMethodWithMethodURLAndDestination() async throws {
        try await Self.withManager { manager, server, folder in
            let task = manager.downloadTask(with: Request(url: server.url("/get")), destination: Self.destination(folder.appendingPathComponent("f")), completionHandler: nil)
            #expect(task.originalRequest.method == .get)
            #expect(task.originalRequest.url == server.url("/get"))
            task.cancel()
        }
    }

    @Test func testDownloadClassMethodWithMethodURLHeadersAndDestination() async throws {
        try await Self.withManager { manager, server, folder in
            let request = Request(url: server.url("/get"), headerFields: [.authorization: "123456"])
            let task = manager.downloadTask(with: request, destination: Self.destination(folder.appendingPathComponent("f")), completionHandler: nil)
            #expect(task.originalRequest.headerFields[.authorization] == "123456")
            task.cancel()
        }
    }

    @Test func testDownloadRequest() async throws {
        try await Self.withManager { manager, server, folder in
            let file = folder.appendingPathComponent("bytes")
            let download = try await manager.download(Request(url: server.url("/bytes/4096")), to: Self.destination(file))
            #expect(download.response.status == .ok)
            #expect(download.fileURL == file)
            #expect(try Data(contentsOf: file).count == 4096)
        }
    }

    @Test func testDownloadRequestResponseURLProducesURL() async throws {
        try await Self.withManager { manager, server, folder in
            let download = try await manager.download(Request(url: server.url("/bytes/100")))
            defer { try? FileManager.default.removeItem(at: download.fileURL) }
            #expect(FileManager.default.fileExists(atPath: download.fileURL.path))
        }
    }

    @Test func testCancelledDownloadRequest() async throws {
        try await Self.withManager { manager, server, folder in
            let (file, error): (URL?, CourierError?) = await awaitCallback { finish in
                let task = manager.downloadTask(with: Request(url: server.url("/delay/5")), completionHandler: { _, file, error in finish((file, error)) })
                task.resume()
                task.cancel()
            }
            #expect(file == nil)
            #expect(error?.code == .cancelled)
        }
    }

    @Test func testDownloadRequestWithProgress() async throws {
        try await Self.withManager { manager, server, folder in
            let fractions = NIOLockedValueBox<[Double]>([])
            let download = try await manager.download(
                Request(url: server.url("/courier/file/262144?rate=1048576")), to: Self.destination(folder.appendingPathComponent("p")),
                progress: { p in fractions.withLockedValue { $0.append(p.fractionCompleted) } })
            #expect(download.response.status == .ok)
            let seen = fractions.withLockedValue { $0 }
            #expect(seen.last == 1.0)
            #expect(seen == seen.sorted())
        }
    }

    @Test func testDownloadRequestWithParameters() async throws {
        try await Self.withManager { manager, server, folder in
            let request = try HTTPRequestSerializer().request(method: .get, urlString: server.url("/get").absoluteString, parameters: ["foo": "bar"])
            let file = folder.appendingPathComponent("get.json")
            _ = try await manager.download(request, to: Self.destination(file))
            let json = try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any]
            #expect((json?["args"] as? [String: Any])?["foo"] as? String == "bar")
        }
    }

    @Test func testDownloadRequestWithHeaders() async throws {
        try await Self.withManager { manager, server, folder in
            let request = Request(url: server.url("/get"), headerFields: [.authorization: "123456"])
            let file = folder.appendingPathComponent("get.json")
            _ = try await manager.download(request, to: Self.destination(file))
            let json = try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any]
            #expect((json?["headers"] as? [String: Any])?["Authorization"] as? String == "123456")
        }
    }

    @Test func testThatDownloadingFileAndMovingToDirectoryThatDoesNotExistThrowsError() async throws {
        try await Self.withManager { manager, server, folder in
            let file = folder.appendingPathComponent("missing/folder/file")
            await #expect {
                _ = try await manager.download(Request(url: server.url("/bytes/100")), to: Self.destination(file, []))
            } throws: { error in
                (error as? CourierError)?.code == .fileSystemFailure && (error as? CourierError)?.underlyingError != nil
            }
        }
    }

    @Test func testThatDownloadOptionsCanCreateIntermediateDirectoriesPriorToMovingFile() async throws {
        try await Self.withManager { manager, server, folder in
            let file = folder.appendingPathComponent("missing/folder/file")
            let download = try await manager.download(Request(url: server.url("/bytes/100")), to: Self.destination(file, [.createIntermediateDirectories]))
            #expect(download.fileURL == file)
        }
    }

    @Test func testThatDownloadingFileAndMovingToDestinationThatIsOccupiedThrowsError() async throws {
        try await Self.withManager { manager, server, folder in
            let file = folder.appendingPathComponent("occupied")
            try Data("already here".utf8).write(to: file)
            await #expect {
                _ = try await manager.download(Request(url: server.url("/bytes/100")), to: Self.destination(file))
            } throws: { error in
                (error as? CourierError)?.code == .fileSystemFailure
            }
            #expect(try Data(contentsOf: file) == Data("already here".utf8))
        }
    }

    @Test func testThatDownloadOptionsCanRemovePreviousFilePriorToMovingFile() async throws {
        try await Self.withManager { manager, server, folder in
            let file = folder.appendingPathComponent("occupied")
            try Data("already here".utf8).write(to: file)
            _ = try await manager.download(Request(url: server.url("/bytes/100")), to: Self.destination(file, [.removePreviousFile]))
            #expect(try Data(contentsOf: file).count == 100)
        }
    }

    // MARK: DownloadResumeDataTestCase

    /// Starts a paced download and calls `cancel` once part of the body arrived.
    static func cancelMidway(
        _ manager: HTTPSessionManager, _ server: TestServer, cancel: @escaping @Sendable (DownloadTask) -> Void
    ) async -> (URL?, CourierError?) {
        await awaitCallback { finish in
            let once = NIOLockedValueBox(true)
            let box = NIOLockedValueBox<DownloadTask?>(nil)
            let task = manager.downloadTask(
                with: Request(url: server.url("/courier/file/1048576?rate=524288")),
                progress: { progress in
                    guard progress.completedUnitCount > 50_000, once.withLockedValue({ first in defer { first = false }; return first }),
                        let task = box.withLockedValue({ $0 })
                    else { return }
                    cancel(task)
                },
                completionHandler: { _, file, error in finish((file, error)) })
            box.withLockedValue { $0 = task }
            task.resume()
        }
    }

    /// A plain `cancel()` produces no resume data; `cancel(byProducingResumeData:)` does.
    @Test func testThatCancelledDownloadRequestDoesNotProduceResumeData() async throws {
        try await Self.withManager { manager, server, folder in
            let (file, error) = await Self.cancelMidway(manager, server) { $0.cancel() }
            #expect(file == nil)
            #expect(error?.code == .cancelled)
            #expect(error?.resumeData == nil)
        }
    }

    @Test func testThatDownloadRequestProducesResumeDataOnError() async throws {
        try await Self.withManager { manager, server, folder in
            let (file, error) = await awaitCallback { (finish: @escaping @Sendable ((URL?, CourierError?)) -> Void) in
                manager.downloadTask(with: Request(url: server.url("/courier/file/262144?drop-after=100000")), completionHandler: { _, file, error in
                    finish((file, error))
                }).resume()
            }
            #expect(file == nil)
            let resumeData = try #require(error?.resumeData)
            #expect(resumeData.bytesReceived > 0)
            // The partial file is the caller's until it resumes or discards it.
            #expect(FileManager.default.fileExists(atPath: resumeData.temporaryFileURL.path))
            resumeData.discard()
            #expect(!FileManager.default.fileExists(atPath: resumeData.temporaryFileURL.path))
        }
    }

    @Test func testThatCancelledDownloadResponseDataMatchesResumeData() async throws {
        try await Self.withManager { manager, server, folder in
            let produced = NIOLockedValueBox<ResumeData?>(nil)
            let done = NIOLockedValueBox(false)
            let (_, error) = await Self.cancelMidway(manager, server) { task in
                task.cancel(byProducingResumeData: { data in
                    produced.withLockedValue { $0 = data }
                    done.withLockedValue { $0 = true }
                })
            }
            #expect(await eventually { done.withLockedValue { $0 } })
            #expect(error?.code == .cancelled)
            let resumeData = try #require(produced.withLockedValue { $0 })
            #expect(resumeData.bytesReceived > 0)
            resumeData.discard()
        }
    }

    /// The resume data the cancel hands over is the one the failed download's error carries
    /// (the source compares the response's, the request's and the handler's).
    @Test func testThatCancelledDownloadProducesMatchingResumeData() async throws {
        try await Self.withManager { manager, server, folder in
            let produced = NIOLockedValueBox<ResumeData?>(nil)
            let (file, error) = await Self.cancelMidway(manager, server) { task in
                // Called before the task's completion handler.
                task.cancel(byProducingResumeData: { data in produced.withLockedValue { $0 = data } })
            }
            #expect(file == nil)
            #expect(error?.code == .cancelled)
            #expect(error?.response?.status == .ok)
            let handed = try #require(produced.withLockedValue { $0 })
            #expect(error?.resumeData == handed)
            #expect(handed.bytesReceived > 0)
            handed.discard()
        }
    }

    @Test func testThatCancelledDownloadCanBeResumedWithResumeData() async throws {
        try await Self.withManager { manager, server, folder in
            let produced = NIOLockedValueBox<ResumeData?>(nil)
            let done = NIOLockedValueBox(false)
            _ = await Self.cancelMidway(manager, server) { task in
                task.cancel(byProducingResumeData: { data in
                    produced.withLockedValue { $0 = data }
                    done.withLockedValue { $0 = true }
                })
            }
            #expect(await eventually { done.withLockedValue { $0 } })
            let resumeData = try #require(produced.withLockedValue { $0 })
            let file = folder.appendingPathComponent("resumed")
            let rest = try await manager.download(resumingFrom: resumeData, to: Self.destination(file))
            #expect(rest.response.status.code == 206)
            let expected = TestServer.GeneratedFile(length: 1_048_576)
            #expect(try Data(contentsOf: file).count == 1_048_576)
            #expect(CRC32.checksum(of: try Data(contentsOf: file)).hex == expected.crc32().hex)
        }
    }
}
