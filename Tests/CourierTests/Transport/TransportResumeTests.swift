@testable import Courier
import CourierTesting
import Foundation
import Testing

/// Resuming downloads: `Range` and `If-Range` on the wire, resume data from a cancel and from a
/// connection (a stream, on HTTP/2) lost mid-body.
@Suite("Transport: resuming downloads")
struct TransportResumeTests {
    private func crc(of url: URL) throws -> CourierTesting.CRC32 {
        CourierTesting.CRC32.checksum(of: try Data(contentsOf: url))
    }

    @Test(arguments: Transport.allCases)
    func aMatchingValidatorContinuesWithA206(_ transport: Transport) async throws {
        try await withScratchDirectory { folder in
            // The partial file in the session's download directory, where a continuation uses it.
            try await transport.run(configure: { $0.downloadDirectory = folder }) { server, manager in
                let file = DownloadDestination.temporaryFileURL(in: folder)
                try alphabet(5000).prefix(1200).write(to: file)
                let resume = ResumeData(
                    request: Request(url: server.url("/range/5000")), temporaryFileURL: file, bytesReceived: 1200,
                    expectedLength: 5000, entityTag: "\"range5000\"", lastModified: nil)
                let decoded = try ResumeData(data: resume.data)
                #expect(decoded == resume, "resume data survives its byte form")
                let target = folder.appendingPathComponent("whole.bin")
                let fractions = Recorder<Double>()
                let download = try await manager.download(
                    resumingFrom: decoded, to: DownloadDestination { _, _ in target }, progress: { fractions.append($0.fractionCompleted) })
                #expect(download.response.status == .partialContent)
                #expect(try Data(contentsOf: target) == alphabet(5000))
                let sent = server.receivedRequests.last
                #expect(sent?.value(forHTTPHeaderField: "Range") == "bytes=1200-")
                #expect(sent?.value(forHTTPHeaderField: "If-Range") == "\"range5000\"")
                #expect(fractions.all.first.map { $0 > 0.2 } == true, "progress starts from the bytes kept")
                #expect(fractions.all.last == 1.0)
                #expect(!FileManager.default.fileExists(atPath: resume.temporaryFileURL.path), "the partial file became the download")
            }
        }
    }

    @Test(arguments: Transport.allCases)
    func aDroppedConnectionLeavesResumeDataAndTheRestArrivesWithA206(_ transport: Transport) async throws {
        try await withScratchDirectory { folder in
            try await transport.run(configure: { $0.downloadDirectory = folder }) { server, manager in
                let file = TestServer.GeneratedFile(length: 3 << 20)
                let first = await #expect(throws: CourierError.self) {
                    try await manager.download(Request(url: server.url(file.path(["drop-after": "2000000"]))))
                }
                #expect(first?.code == .connectionClosed)
                let resumeData = try #require(first?.resumeData, "a dropped download from a server with validators leaves resume data")
                #expect(resumeData.bytesReceived == 2_000_000, "every byte received before the drop is kept")
                #expect(resumeData.entityTag == file.etag)
                #expect(contents(of: folder) == [resumeData.temporaryFileURL.lastPathComponent], "only the partial file is kept")

                let target = folder.appendingPathComponent("whole.bin")
                let rest = try await manager.download(resumingFrom: resumeData, to: DownloadDestination { _, _ in target })
                #expect(rest.response.status == .partialContent)
                #expect(server.receivedRequests.last?.value(forHTTPHeaderField: "Range") == "bytes=\(resumeData.bytesReceived)-")
                #expect(try self.crc(of: target) == file.crc32())
                #expect(contents(of: folder) == ["whole.bin"])
            }
        }
    }

    @Test(arguments: Transport.allCases)
    func cancellingWithResumeDataThenResuming(_ transport: Transport) async throws {
        try await withScratchDirectory { folder in
            try await transport.run(configure: { $0.downloadDirectory = folder }) { server, manager in
                let file = TestServer.GeneratedFile(length: 1 << 20)
                let changes = Changes.progressAndEnds(of: manager)
                let completion = Recorder<CourierError?>()
                // Slow enough (32 s for the file) that the download cannot finish before the
                // cancel, even when the test's thread stalls on a loaded machine in between.
                let task = manager.downloadTask(with: Request(url: server.url(file.path(["rate": "32768"])))) { _, _, error in
                    completion.append(error)
                }
                task.resume()
                #expect(await changes.wait { task.countOfBytesReceived > 0 })
                let resumeData = try #require(await task.cancelProducingResumeData())
                #expect(await completion.wait { $0.count == 1 })
                #expect(completion.all.first??.code == .cancelled)
                #expect(completion.all.first??.resumeData == resumeData, "the task's error carries the same resume data")

                // The rest comes from the same file (same validators) without the rate limit.
                var unthrottled = resumeData
                unthrottled.url = server.url(file.path())
                let rest = try await manager.download(resumingFrom: unthrottled)
                #expect(rest.response.status == .partialContent)
                #expect(try self.crc(of: rest.fileURL) == file.crc32())
            }
        }
    }

    @Test(arguments: Transport.allCases, ["version", "ignore-range"])
    func aServerThatWillNotContinueRestartsCleanly(_ transport: Transport, reason: String) async throws {
        try await withScratchDirectory { folder in
            try await transport.run(configure: { $0.downloadDirectory = folder }) { server, manager in
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
