@testable import Courier
import CourierTesting
import Foundation
import HTTPTypes
import Testing

@Suite("Resuming downloads")
struct DownloadResumeTests {
    /// Resume data for `/range/{total}` after `kept` bytes, with the partial file written.
    private func partial(_ server: TestServer, total: Int, kept: Int, entityTag: String?, in file: URL) throws -> ResumeData {
        try alphabet(total).prefix(kept).write(to: file)
        return ResumeData(
            request: Request(url: server.url("/range/\(total)")), temporaryFileURL: file, bytesReceived: Int64(kept),
            expectedLength: Int64(total), entityTag: entityTag, lastModified: nil)
    }

    @Test func aChangedResourceRestartsCleanly() async throws {
        try await withPartialFile { file in
            try await withTestServer { server in
                try await withManager(baseURL: server.baseURL) { manager in
                    let resume = try self.partial(server, total: 3000, kept: 1000, entityTag: "\"another-version\"", in: file)
                    // Spoil the kept bytes: a restart must not keep any of them.
                    try Data(repeating: UInt8(ascii: "!"), count: 1000).write(to: resume.temporaryFileURL)
                    let download = try await manager.download(resumingFrom: resume)
                    #expect(download.response.status == .ok)
                    #expect(try Data(contentsOf: download.fileURL) == alphabet(3000))
                }
            }
        }
    }

    @Test func aMissingPartialFileStartsOver() async throws {
        try await withPartialFile { file in
            try await withTestServer(TestServer.Configuration.recording) { server in
                try await withManager(baseURL: server.baseURL) { manager in
                    let resume = try self.partial(server, total: 2000, kept: 700, entityTag: "\"range2000\"", in: file)
                    resume.discard()
                    let download = try await manager.download(resumingFrom: resume)
                    #expect(download.response.status == .ok)
                    #expect(server.receivedRequests.last?.value(forHTTPHeaderField: "Range") == nil)
                    #expect(try Data(contentsOf: download.fileURL) == alphabet(2000))
                    // Without a destination the file is left in the temporary directory for the caller.
                    try FileManager.default.removeItem(at: download.fileURL)
                }
            }
        }
    }

    /// Resume data is bytes from anywhere: its file is used only when Courier could have made
    /// it. A file elsewhere, a file with another name, or a link named like a partial file is
    /// neither appended to, moved nor removed; the download starts over. `discard()` removes only
    /// regular files with a partial file's name (in any folder: a session's download directory is
    /// not known to it).
    @Test func aPartialFileCourierDidNotMakeIsLeftAlone() async throws {
        try await withScratchDirectory { folder in
            try await withTestServer(TestServer.Configuration.recording) { server in
                try await withManager(baseURL: server.baseURL) { manager in
                    let precious = Data("precious".utf8)
                    let victim = folder.appendingPathComponent("victim.txt")
                    try precious.write(to: victim)
                    let namedLikeOurs = folder.appendingPathComponent("CourierDownload-\(UUID().uuidString).tmp")
                    try precious.write(to: namedLikeOurs)
                    let link = FileManager.default.temporaryDirectory.appendingPathComponent("CourierDownload-\(UUID().uuidString).tmp")
                    try FileManager.default.createSymbolicLink(at: link, withDestinationURL: namedLikeOurs)
                    defer { try? FileManager.default.removeItem(at: link) }
                    for file in [victim, namedLikeOurs, link] {
                        let resume = try ResumeData(
                            data: ResumeData(
                                request: Request(url: server.url("/range/2000")), temporaryFileURL: file, bytesReceived: 3,
                                expectedLength: 2000, entityTag: "\"range2000\"", lastModified: nil
                            ).data)
                        if file != namedLikeOurs { resume.discard() }
                        let download = try await manager.download(resumingFrom: resume)
                        #expect(download.response.status == .ok, "\(file.lastPathComponent): the download starts over")
                        #expect(server.receivedRequests.last?.value(forHTTPHeaderField: "Range") == nil)
                        #expect(download.fileURL != file)
                        #expect(try Data(contentsOf: download.fileURL) == alphabet(2000))
                        try FileManager.default.removeItem(at: download.fileURL)
                        #expect(try Data(contentsOf: file) == precious, "\(file.lastPathComponent) is not Courier's to change")
                    }
                }
            }
        }
    }

    @Test func a206ElsewhereFailsAndRemovesThePartialFile() async throws {
        try await withPartialFile { file in
            try await withTestServer { server in
                server.route("/wrong-range") { _ in
                    TestServer.Response(
                        status: .partialContent,
                        headerFields: [.contentRange: "bytes 0-9/100", .eTag: "\"v\""],
                        body: Data(repeating: 0, count: 10))
                }
                try await withManager(baseURL: server.baseURL) { manager in
                    try Data(repeating: 1, count: 50).write(to: file)
                    let resume = ResumeData(
                        request: Request(url: server.url("/wrong-range")), temporaryFileURL: file, bytesReceived: 50,
                        expectedLength: 100, entityTag: "\"v\"", lastModified: nil)
                    let error = await #expect(throws: CourierError.self) { try await manager.download(resumingFrom: resume) }
                    #expect(error?.code == .invalidResponse)
                    #expect(error?.message.contains("Content-Range bytes 0-9/100") == true)
                    #expect(await eventually { !FileManager.default.fileExists(atPath: file.path) })
                }
            }
        }
    }

    @Test func aStaleRangeFailsWith416() async throws {
        try await withPartialFile { file in
            try await withTestServer { server in
                try await withManager(baseURL: server.baseURL) { manager in
                    // More bytes kept than the resource now has: the server cannot send "the rest".
                    let resume = try self.partial(server, total: 900, kept: 900, entityTag: "\"range900\"", in: file)
                    let error = await #expect(throws: CourierError.self) { try await manager.download(resumingFrom: resume) }
                    #expect(error?.code == .invalidResponse)
                    #expect(error?.response?.status == .rangeNotSatisfiable)
                }
            }
        }
    }

    @Test func resumeDataThatIsNotCouriersIsATypedError() throws {
        let manager = SessionManager(engine: RefusingEngine())
        #expect(throws: CourierError.self) {
            _ = try manager.downloadTask(withResumeData: Data("not resume data".utf8), completionHandler: nil)
        }
    }

    @Test func validatorsDecideWhetherAResponseCanBeResumed() {
        func response(_ status: Int, _ fields: HTTPFields) -> HTTPResponse { HTTPResponse(status: .init(code: status), headerFields: fields) }
        #expect(ResumeData.validators(of: response(200, [.eTag: "\"a\""]))?.entityTag == "\"a\"")
        #expect(ResumeData.validators(of: response(200, [.lastModified: "Sat, 21 Nov 2026 10:00:00 GMT"]))?.lastModified != nil)
        #expect(ResumeData.validators(of: response(200, [.eTag: "W/\"weak\""])) == nil, "a weak tag cannot be used with If-Range")
        #expect(ResumeData.validators(of: response(200, [.eTag: "\"a\"", .acceptRanges: "none"])) == nil)
        #expect(ResumeData.validators(of: response(200, [:])) == nil)
        #expect(ResumeData.validators(of: response(500, [.eTag: "\"a\""])) == nil)
    }

    @Test func aRetryAfterTheContinuationBrokeOffContinuesThePartialFile() async throws {
        // The first attempt's connection closes after part of the rest; the retry asks for the
        // same range again. The retry found the partial file removed with the failed attempt's
        // (and failed: the resume data's bytes were lost).
        let total = 60, kept = 10
        let rest = String(decoding: alphabet(total).dropFirst(kept), as: UTF8.self)
        let head = "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes \(kept)-\(total - 1)/\(total)\r\nETag: \"r\"\r\nContent-Length: \(total - kept)\r\n\r\n"
        try await withPartialFile { file in
            try await ScriptedHTTPServer.with({ connection, _, _ in
                connection == 0 ? .respond(head + rest.prefix(20), thenClose: true) : .respond(head + rest)
            }) { server in
                let manager = SessionManager()
                defer { manager.invalidate(cancelingTasks: true) }
                var policy = RetryPolicy(retryLimit: 1)
                policy.initialBackoff = .zero
                manager.interceptor = policy
                try alphabet(total).prefix(kept).write(to: file)
                let resume = ResumeData(
                    request: Request(url: server.baseURL.appendingPathComponent("file")), temporaryFileURL: file,
                    bytesReceived: Int64(kept), expectedLength: Int64(total), entityTag: "\"r\"", lastModified: nil)
                let download = try await manager.download(resumingFrom: resume)
                #expect(download.response.status == .partialContent)
                #expect(try Data(contentsOf: download.fileURL) == alphabet(total))
                #expect(server.receivedHeads.count == 2)
                #expect(server.receivedHeads.allSatisfy { $0.contains("Range: bytes=\(kept)-") }, "the retry asks for the same range")
            }
        }
    }

    @Test func contentRangeParsing() {
        #expect(ContentRange("bytes 10-19/100") == ContentRange(first: 10, last: 19, completeLength: 100))
        #expect(ContentRange("bytes 10-19/*")?.completeLength == nil)
        #expect(ContentRange("bytes */100") == nil)
        #expect(ContentRange("bytes 20-10/100") == nil)
        #expect(ContentRange("bytes 10-100/100") == nil)
        #expect(ContentRange("items 1-2/3") == nil)
        #expect(ContentRange.unsatisfiedCompleteLength("bytes */100") == 100)
        #expect(ContentRange.unsatisfiedCompleteLength("bytes 0-1/100") == nil)
        #expect(ContentRange.unsatisfiedCompleteLength("bytes */-1") == nil)
    }
}

extension TestServer.Configuration {
    /// A server that keeps every request for ``TestServer/receivedRequests``.
    static var recording: TestServer.Configuration {
        var configuration = TestServer.Configuration()
        configuration.recordsRequests = true
        return configuration
    }
}
