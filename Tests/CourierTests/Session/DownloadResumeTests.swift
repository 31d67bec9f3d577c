@testable import Courier
import CourierTesting
import Foundation
import HTTPTypes
import Testing

@Suite("Resuming downloads")
struct DownloadResumeTests {
    /// Resume data naming `file` as `bytesReceived` bytes of a 60-byte file (entity tag `"r"`),
    /// whose continuation goes to a port nothing listens on.
    static func resumeToNowhere(_ file: URL, bytesReceived: Int64) -> ResumeData {
        ResumeData(
            request: Request(url: URL(string: "http://127.0.0.1:\(closedPort())/file")!), temporaryFileURL: file,
            bytesReceived: bytesReceived, expectedLength: 60, entityTag: "\"r\"", lastModified: nil)
    }

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

    /// A partial file of Courier's that is shorter than its resume data records cannot be
    /// continued: the download starts over in a file of its own, and removes that one when it
    /// ends, whether it succeeded or not. It was left behind with nothing naming it.
    @Test func aPartialFileShorterThanRecordedIsRemovedByTheRestart() async throws {
        try await withPartialFile { file in
            try await withTestServer(TestServer.Configuration.recording) { server in
                try await withManager(baseURL: server.baseURL) { manager in
                    var resume = try self.partial(server, total: 2000, kept: 700, entityTag: "\"range2000\"", in: file)
                    resume.bytesReceived = 900
                    let download = try await manager.download(resumingFrom: resume)
                    defer { try? FileManager.default.removeItem(at: download.fileURL) }
                    #expect(download.response.status == .ok)
                    #expect(server.receivedRequests.last?.value(forHTTPHeaderField: "Range") == nil, "the download starts over")
                    #expect(download.fileURL != file)
                    #expect(try Data(contentsOf: download.fileURL) == alphabet(2000))
                    #expect(!FileManager.default.fileExists(atPath: file.path), "the partial file it could not continue is gone")
                }
            }
        }
        // A restart that cannot connect removes it too: the resume data can never continue it.
        try await withPartialFile { file in
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            try alphabet(10).write(to: file)
            let resume = Self.resumeToNowhere(file, bytesReceived: 60)
            let error = await #expect(throws: CourierError.self) { try await manager.download(resumingFrom: resume) }
            #expect(error?.code == .connectionFailed)
            #expect(error?.resumeData == nil)
            #expect(!FileManager.default.fileExists(atPath: file.path))
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

    /// A 206 whose `Content-Range` does not start where the partial file ends fails with
    /// `invalidResponse`. When it names the version `If-Range` sent (or none), nothing was
    /// written and the partial file is still good: it stays, and the error carries the resume
    /// data the continuation began with (the file was removed, and the caller's bytes lost with
    /// it). When it names another version, the partial file is stale, and is removed.
    @Test(arguments: ["\"v\"", "\"w\""])
    func a206ElsewhereFailsAndKeepsThePartialFileOfItsVersion(_ tag: String) async throws {
        try await withPartialFile { file in
            try await withTestServer { server in
                server.route("/wrong-range") { _ in
                    TestServer.Response(
                        status: .partialContent,
                        headerFields: [.contentRange: "bytes 0-9/100", .eTag: tag],
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
                    if tag == resume.entityTag {
                        #expect(error?.resumeData == resume, "the resume data still names the partial file")
                        #expect(try Data(contentsOf: file) == Data(repeating: 1, count: 50), "the partial file is as it was")
                    } else {
                        #expect(error?.resumeData == nil)
                        #expect(await eventually { !FileManager.default.fileExists(atPath: file.path) }, "the partial file is of another version")
                    }
                }
            }
        }
    }

    /// With an interceptor too (any adapter is a retrier): the 416 went to a file of its own, as
    /// an answer a retrier might retry, and the download "succeeded" with the 416's empty body.
    @Test(arguments: [false, true])
    func aStaleRangeFailsWith416(withAnInterceptor: Bool) async throws {
        try await withPartialFile { file in
            try await withTestServer { server in
                try await withManager(baseURL: server.baseURL) { manager in
                    if withAnInterceptor { manager.interceptor = Adapter { request, _ in request } }
                    // More bytes kept than the resource now has: the server cannot send "the rest".
                    var resume = try self.partial(server, total: 900, kept: 900, entityTag: "\"range900\"", in: file)
                    try alphabet(1000).write(to: file)
                    resume.bytesReceived = 1000
                    let error = await #expect(throws: CourierError.self) { try await manager.download(resumingFrom: resume) }
                    #expect(error?.code == .invalidResponse)
                    #expect(error?.response?.status == .rangeNotSatisfiable)
                    #expect(!FileManager.default.fileExists(atPath: file.path), "the partial file is of no use")
                }
            }
        }
    }

    /// A 416 whose `Content-Range: bytes */N` names exactly the bytes kept says the partial file
    /// is the whole representation (the connection had closed after the last byte): the download
    /// completes with it, as curl's `-C -` does; the 416's own body is written nowhere. The
    /// download deleted the whole file and failed.
    @Test func a416ForAWholeKeptFileCompletesTheDownload() async throws {
        try await withPartialFile { file in
            try await withTestServer(TestServer.Configuration.recording) { server in
                try await withManager(baseURL: server.baseURL) { manager in
                    let resume = try self.partial(server, total: 900, kept: 900, entityTag: "\"range900\"", in: file)
                    let download = try await manager.download(resumingFrom: resume)
                    #expect(download.response.status == .rangeNotSatisfiable)
                    #expect(server.receivedRequests.last?.value(forHTTPHeaderField: "Range") == "bytes=900-")
                    #expect(download.fileURL == file)
                    #expect(try Data(contentsOf: download.fileURL) == alphabet(900))
                }
            }
        }
    }

    /// A 416 with no `Content-Range` (Apache's and lighttpd's) to a continuation that sent
    /// `If-Range` says the validator matched and nothing lies past the bytes kept (a stale
    /// validator gets the whole representation instead, RFC 9110 13.1.5): the download completes
    /// with the partial file, whether the resume data recorded the whole length or none. The
    /// download failed as stale and removed the whole partial file.
    @Test(arguments: [60, nil] as [Int64?])
    func a416WithoutContentRangeCompletesTheDownloadWithTheKeptFile(_ expectedLength: Int64?) async throws {
        try await withPartialFile { file in
            try await ScriptedHTTPServer.with({ _, _, _ in .respond("HTTP/1.1 416 Range Not Satisfiable\r\nContent-Length: 0\r\n\r\n") }) { server in
                let manager = SessionManager()
                defer { manager.invalidate(cancelingTasks: true) }
                try alphabet(60).write(to: file)
                let resume = ResumeData(
                    request: Request(url: server.baseURL.appendingPathComponent("f")), temporaryFileURL: file, bytesReceived: 60,
                    expectedLength: expectedLength, entityTag: "\"r\"", lastModified: nil)
                let download = try await manager.download(resumingFrom: resume)
                #expect(download.response.status == .rangeNotSatisfiable)
                #expect(download.fileURL == file)
                #expect(try Data(contentsOf: download.fileURL) == alphabet(60))
                let head = try #require(server.receivedHeads.last)
                #expect(head.contains("Range: bytes=60-\r\n") && head.contains("If-Range: \"r\"\r\n"), "\(head)")
            }
        }
    }

    /// A 416 with no `Content-Range` to a continuation whose resume data recorded a whole length
    /// other than the bytes kept: the resume data is stale, the download fails and the partial
    /// file is removed.
    @Test func a416WithoutContentRangeAgainstAnotherRecordedLengthIsStale() async throws {
        try await self.continuingTenOfSixty(answeredWith: "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Length: 0\r\n\r\n") { manager, resume in
            let error = await #expect(throws: CourierError.self) { try await manager.download(resumingFrom: resume) }
            #expect(error?.code == .invalidResponse)
            #expect(error?.response?.status == .rangeNotSatisfiable)
            #expect(!FileManager.default.fileExists(atPath: resume.temporaryFileURL.path), "the partial file is of no use")
        }
    }

    /// A session with an interceptor completes a continuation whose 416 finds the partial file
    /// whole as one without does, and no retrier is asked about that 416 (the download
    /// succeeded). The 416's empty body was the download, over the destination's earlier file
    /// with `.removePreviousFile`, and the whole partial file was left behind.
    @Test func a416ForAWholeKeptFileCompletesTheDownloadWithAnInterceptor() async throws {
        let asked = Recorder<Int>()
        let interceptors: [any RequestInterceptor] = [
            Adapter { request, _ in request },
            Retrier { attempt in
                asked.append(attempt.statusCode ?? 0)
                return .doNotRetry
            },
        ]
        for interceptor in interceptors {
            try await withScratchDirectory { folder in
                try await withPartialFile { file in
                    try await withTestServer { server in
                        try await withManager(baseURL: server.baseURL) { manager in
                            manager.interceptor = interceptor
                            let target = folder.appendingPathComponent("file.bin")
                            try Data("the earlier file".utf8).write(to: target)
                            let resume = try self.partial(server, total: 900, kept: 900, entityTag: "\"range900\"", in: file)
                            let download = try await manager.download(
                                resumingFrom: resume, to: DownloadDestination(options: [.removePreviousFile]) { _, _ in target })
                            #expect(download.response.status == .rangeNotSatisfiable)
                            #expect(download.fileURL == target)
                            #expect(try Data(contentsOf: target) == alphabet(900))
                            #expect(!FileManager.default.fileExists(atPath: file.path), "the partial file became the download")
                        }
                    }
                }
            }
        }
        #expect(asked.all.isEmpty, "a 416 that completes the download is not a failure to retry: \(asked.all)")
    }

    /// A continuation answered with something that is not the representation (an error page)
    /// gives that answer in a file of its own, and the partial file stays for a later
    /// continuation. The error page replaced the partial file (only when no retrier was set).
    @Test func anErrorAnswerToAContinuationKeepsThePartialFile() async throws {
        try await self.continuingTenOfSixty(answeredWith: "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy") { manager, resume in
            let download = try await manager.download(resumingFrom: resume)
            #expect(download.response.status.code == 503)
            #expect(download.fileURL != resume.temporaryFileURL)
            #expect(try Data(contentsOf: download.fileURL) == Data("busy".utf8))
            try? FileManager.default.removeItem(at: download.fileURL)
            #expect(try Data(contentsOf: resume.temporaryFileURL) == alphabet(10), "the partial file is as it was")
        }
    }

    /// Runs `body` with a manager and resume data for 10 bytes of a 60-byte `/f` (tag `"r"`) whose
    /// continuation a scripted server answers with `answer`.
    private func continuingTenOfSixty(answeredWith answer: String, _ body: (SessionManager, ResumeData) async throws -> Void) async throws {
        try await withPartialFile { file in
            try await ScriptedHTTPServer.with({ _, _, _ in .respond(answer) }) { server in
                let manager = SessionManager()
                defer { manager.invalidate(cancelingTasks: true) }
                try alphabet(10).write(to: file)
                let resume = ResumeData(
                    request: Request(url: server.baseURL.appendingPathComponent("f")), temporaryFileURL: file, bytesReceived: 10,
                    expectedLength: 60, entityTag: "\"r\"", lastModified: nil)
                try await body(manager, resume)
            }
        }
    }

    /// `bytes=10-` asks for everything from 10 to the end: a 206 that stops short of the end it
    /// names is not the rest, and is refused. It was appended and the download ended "complete"
    /// with 20 of 60 bytes.
    @Test func a206ThatStopsShortIsRefused() async throws {
        let short = "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 10-19/60\r\nETag: \"r\"\r\nContent-Length: 10\r\n\r\nklmnopqrst"
        try await self.continuingTenOfSixty(answeredWith: short) { manager, resume in
            let error = await #expect(throws: CourierError.self) { try await manager.download(resumingFrom: resume) }
            #expect(error?.code == .invalidResponse)
            #expect(error?.message.contains("Content-Range bytes 10-19/60") == true)
        }
    }

    /// A continuation's 206 whose body does not fill the range its `Content-Range` names (its
    /// `Content-Length` disagrees: it ends short, or runs past the end) fails with
    /// `invalidResponse`, as a body cut short fails: the partial file keeps the bytes that fell
    /// within the range (nothing past it), and the error's resume data continues from them. The
    /// short one completed "successfully" with a file of the wrong size; the long one had its
    /// extra bytes appended.
    @Test(arguments: [20, 70])
    func a206WhoseBodyDoesNotFillItsRangeFails(bodyLength: Int) async throws {
        let total = 60, kept = 10
        try await withPartialFile { file in
            try await withTestServer(TestServer.Configuration.recording) { server in
                server.route("/disagreeing") { request in
                    let range = request.value(forHTTPHeaderField: "Range") ?? ""
                    guard range.hasPrefix("bytes="), range.hasSuffix("-"), let start = Int(range.dropFirst(6).dropLast()) else {
                        return TestServer.Response(headerFields: [.eTag: "\"r\""], body: alphabet(total))
                    }
                    if start >= total {
                        return TestServer.Response(status: .rangeNotSatisfiable, headerFields: [.contentRange: "bytes */\(total)"])
                    }
                    // The first continuation's body disagrees with its range; the next one's is right.
                    let body = start == kept ? alphabet(kept + bodyLength).dropFirst(kept) : alphabet(total).dropFirst(start)
                    return TestServer.Response(
                        status: .partialContent, headerFields: [.contentRange: "bytes \(start)-\(total - 1)/\(total)", .eTag: "\"r\""],
                        body: Data(body))
                }
                try await withManager(baseURL: server.baseURL) { manager in
                    try alphabet(kept).write(to: file)
                    let resume = ResumeData(
                        request: Request(url: server.url("/disagreeing")), temporaryFileURL: file, bytesReceived: Int64(kept),
                        expectedLength: Int64(total), entityTag: "\"r\"", lastModified: nil)
                    let error = await #expect(throws: CourierError.self) { try await manager.download(resumingFrom: resume) }
                    #expect(error?.code == .invalidResponse)
                    #expect(error?.message.contains("Content-Range bytes \(kept)-\(total - 1)/\(total)") == true, "\(String(describing: error))")
                    let within = min(kept + bodyLength, total)
                    let again = try #require(error?.resumeData, "the partial file keeps the bytes within the range")
                    #expect(again.temporaryFileURL == file)
                    #expect(again.bytesReceived == Int64(within))
                    #expect(again.entityTag == "\"r\"")
                    #expect(try Data(contentsOf: file) == alphabet(within))
                    let download = try await manager.download(resumingFrom: again)
                    #expect(server.receivedRequests.last?.value(forHTTPHeaderField: "Range") == "bytes=\(within)-")
                    #expect(download.fileURL == file)
                    #expect(try Data(contentsOf: download.fileURL) == alphabet(total), "whole and correct")
                }
            }
        }
    }

    /// A server (or a cache before it) that honours `Range` but ignores `If-Range` sends the rest
    /// of the version it has now: a 206 naming another strong entity tag, or another
    /// modification date when `If-Range` sent a date, does not continue the partial file. It was
    /// appended, and the download succeeded with the start of one version and the end of
    /// another; it now fails as stale, and the partial file is removed.
    @Test(
        arguments: [
            ("\"r\"", nil, "ETag: \"r2\""),
            (nil, "Tue, 01 Dec 2026 10:00:00 GMT", "Last-Modified: Wed, 02 Dec 2026 10:00:00 GMT"),
        ] as [(String?, String?, String)])
    func a206OfAnotherVersionIsRefused(_ tag: String?, _ modified: String?, _ validator: String) async throws {
        let answer = "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 10-59/60\r\n\(validator)\r\nContent-Length: 50\r\n\r\n"
            + String(repeating: "B", count: 50)
        try await withPartialFile { file in
            try await ScriptedHTTPServer.with({ _, _, _ in .respond(answer) }) { server in
                let manager = SessionManager()
                defer { manager.invalidate(cancelingTasks: true) }
                try alphabet(10).write(to: file)
                let resume = ResumeData(
                    request: Request(url: server.baseURL.appendingPathComponent("f")), temporaryFileURL: file, bytesReceived: 10,
                    expectedLength: 60, entityTag: tag, lastModified: modified)
                let error = await #expect(throws: CourierError.self) { try await manager.download(resumingFrom: resume) }
                #expect(error?.code == .invalidResponse)
                #expect(error?.message.contains("ignored If-Range") == true, "\(String(describing: error))")
                #expect(await eventually { !FileManager.default.fileExists(atPath: file.path) }, "the partial file is of another version")
                let head = try #require(server.receivedHeads.last)
                #expect(head.contains("If-Range: \(tag ?? modified ?? "")\r\n"), "\(head)")
            }
        }
    }

    /// A continuation's metrics count the body bytes that came, not those its partial file kept
    /// from before: a 206 of 50 bytes after 10 kept reported 60 received, and a 416 that found the
    /// partial file whole reported its 10 kept bytes as received.
    @Test func aContinuationsMetricsCountOnlyTheBytesThatCame() async throws {
        let rest = String(decoding: alphabet(60).dropFirst(10), as: UTF8.self)
        let partial = "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 10-59/60\r\nETag: \"r\"\r\nContent-Length: 50\r\n\r\n" + rest
        try await self.continuingTenOfSixty(answeredWith: partial) { manager, resume in
            let download = try await manager.download(resumingFrom: resume)
            #expect(try Data(contentsOf: download.fileURL) == alphabet(60))
            #expect(download.metrics?.bytesReceived == 50)
            #expect(download.metrics?.attempts.last?.bytesReceived == 50)
        }
        let whole = "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */10\r\nContent-Length: 0\r\n\r\n"
        try await self.continuingTenOfSixty(answeredWith: whole) { manager, resume in
            let download = try await manager.download(resumingFrom: resume)
            #expect(download.response.status == .rangeNotSatisfiable)
            #expect(try Data(contentsOf: download.fileURL) == alphabet(10))
            #expect(download.metrics?.bytesReceived == 0)
        }
    }

    /// A continuation's `countOfBytesReceived` counts the body bytes this task received, as
    /// URLSession's does, and `countOfBytesExpectedToReceive` those its response announced; its
    /// download progress counts the partial file's bytes too. Both counts included the bytes
    /// kept: 60 of 60 after a 206 of 50, and 10 of 10 after a 416 that found the file whole.
    @Test func aContinuationsCountsAreTheBytesThisTaskReceived() async throws {
        let rest = String(decoding: alphabet(60).dropFirst(10), as: UTF8.self)
        let partial = "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 10-59/60\r\nETag: \"r\"\r\nContent-Length: 50\r\n\r\n" + rest
        let whole = "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */10\r\nContent-Length: 0\r\n\r\n"
        for (answer, received, length) in [(partial, 50, 60), (whole, 0, 10)] as [(String, Int64, Int64)] {
            try await self.continuingTenOfSixty(answeredWith: answer) { manager, resume in
                manager.completionQueue = TestQueues.completion
                let ended = Recorder<CourierError?>()
                let task = manager.downloadTask(withResumeData: resume) { _, _, error in ended.append(error) }
                task.resume()
                #expect(await ended.wait { $0.count == 1 })
                #expect(ended.all.first??.code == nil, "\(ended.all)")
                #expect(task.countOfBytesReceived == received)
                #expect(task.countOfBytesExpectedToReceive == received)
                #expect(task.downloadProgress.completedUnitCount == length)
                #expect(task.downloadProgress.totalUnitCount == length)
            }
        }
    }

    /// A continuation whose connection cannot be made leaves its partial file as it was, and
    /// hands back the resume data it began with, to try again with. It gave none, and the partial
    /// file was left in the temporary directory with nothing naming it.
    @Test func aContinuationThatCannotConnectHandsBackItsResumeData() async throws {
        try await withPartialFile { file in
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            try alphabet(10).write(to: file)
            let resume = Self.resumeToNowhere(file, bytesReceived: 10)
            let error = await #expect(throws: CourierError.self) { try await manager.download(resumingFrom: resume) }
            #expect(error?.code == .connectionFailed)
            #expect(error?.resumeData?.bytesReceived == 10)
            #expect(error?.resumeData == resume)
            #expect(try Data(contentsOf: file) == alphabet(10), "the partial file is as it was")
        }
    }

    /// A continuation cancelled producing resume data before its answer came hands back the
    /// resume data it began with; the partial file stays. It gave nil, and the partial file was
    /// left with nothing naming it.
    @Test func aContinuationCancelledBeforeItsAnswerHandsBackItsResumeData() async throws {
        try await withPartialFile { file in
            try await ScriptedHTTPServer.with({ _, _, _ in .hold }) { server in
                let manager = SessionManager()
                defer { manager.invalidate(cancelingTasks: true) }
                manager.completionQueue = TestQueues.completion
                try alphabet(10).write(to: file)
                let resume = ResumeData(
                    request: Request(url: server.baseURL.appendingPathComponent("file")), temporaryFileURL: file, bytesReceived: 10,
                    expectedLength: 60, entityTag: "\"r\"", lastModified: nil)
                let ended = Recorder<CourierError?>()
                let task = manager.downloadTask(withResumeData: resume) { _, _, error in ended.append(error) }
                task.resume()
                #expect(await server.changes.wait { server.receivedHeads.count == 1 })
                #expect(server.receivedHeads.first?.contains("Range: bytes=10-\r\n") == true)
                let again = await task.cancelProducingResumeData()
                #expect(again == resume)
                #expect(await ended.changes.wait { ended.count == 1 })
                #expect(ended.all.first??.code == .cancelled)
                #expect(try Data(contentsOf: file) == alphabet(10), "the partial file is as it was")
            }
        }
    }

    /// Resume data is made only where a continuation can be right: not for a `POST` (a
    /// continuation repeats the method without its body; URLSession makes resume data for `GET`
    /// only), not for a caller's own range (`bytes=N-` counts from the representation's start,
    /// not the range's), not for a content-coded body (`Range` counts the coded bytes; the file
    /// holds what they decode to). Each of these left resume data whose continuation asked for
    /// the wrong bytes, or posted again.
    @Test func resumeDataIsMadeOnlyWhereAContinuationCanBeRight() async throws {
        let cases: [(String, (inout Request) -> Void, String)] = [
            ("a POST", { $0.method = .post; $0.body = .data(Data("q=1".utf8)) }, "HTTP/1.1 200 OK\r\nETag: \"x\"\r\nContent-Length: 60\r\n\r\n"),
            (
                "a caller's range", { $0.headerFields[.range] = "bytes=100-199" },
                "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 100-199/1000\r\nETag: \"x\"\r\nContent-Length: 100\r\n\r\n"
            ),
            ("a coded body", { _ in }, "HTTP/1.1 200 OK\r\nContent-Encoding: br\r\nETag: \"x\"\r\nContent-Length: 60\r\n\r\n"),
            ("a plain GET (the control)", { _ in }, "HTTP/1.1 200 OK\r\nETag: \"x\"\r\nContent-Length: 60\r\n\r\n"),
        ]
        for (name, shape, head) in cases {
            try await ScriptedHTTPServer.with({ _, _, _ in .respond(head + String(repeating: "a", count: 20), thenClose: true) }) { server in
                let manager = SessionManager()
                defer { manager.invalidate(cancelingTasks: true) }
                var request = Request(url: server.baseURL.appendingPathComponent("export"))
                shape(&request)
                let error = await #expect(throws: CourierError.self, "\(name)") { try await manager.download(request) }
                #expect(error?.code == .connectionClosed, "\(name)")
                if name.hasPrefix("a plain GET") {
                    #expect(error?.resumeData?.bytesReceived == 20)
                    error?.resumeData?.discard()
                } else {
                    #expect(error?.resumeData == nil, "\(name) leaves no resume data")
                }
            }
        }
    }

    /// Resume data records the caller's request, not the fields the session added to the
    /// attempt (an adapter's token, the jar's cookies): it is bytes a caller stores anywhere, and a
    /// continuation adds them afresh. It carried the adapter's `Authorization` and the old cookie,
    /// which a continuation then sent before the jar's new one.
    @Test func resumeDataRecordsTheCallersRequestOnly() async throws {
        let heads = Recorder<String>()
        try await ScriptedHTTPServer.with({ connection, _, head in
            heads.append(head)
            return connection == 0
                ? .respond(
                    "HTTP/1.1 200 OK\r\nSet-Cookie: a=old\r\nETag: \"x\"\r\nContent-Length: 60\r\n\r\n" + String(repeating: "a", count: 20),
                    thenClose: true)
                : .respond(
                    "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 20-59/60\r\nETag: \"x\"\r\nContent-Length: 40\r\n\r\n"
                        + String(repeating: "b", count: 40))
        }) { server in
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            manager.interceptor = Adapter { request, _ in
                var request = request
                request.headerFields[.authorization] = "Bearer from-the-adapter"
                return request
            }
            var request = Request(url: server.baseURL.appendingPathComponent("file"))
            request.headerFields[HTTPField.Name("X-Caller")!] = "1"
            let error = await #expect(throws: CourierError.self) { try await manager.download(request) }
            let resume = try #require(error?.resumeData)
            let names = resume.headerFields.compactMap { $0.first?.lowercased() }
            #expect(names == ["x-caller"], "only the caller's field: \(names)")
            manager.configuration.httpCookieStorage?.setCookie(Cookie(name: "a", value: "new", domain: "127.0.0.1"))
            let download = try await manager.download(resumingFrom: resume)
            #expect(download.response.status == .partialContent)
            defer { try? FileManager.default.removeItem(at: download.fileURL) }
            let continuation = try #require(heads.all.last)
            #expect(continuation.contains("Cookie: a=new\r\n"), "the jar's cookie alone: \(continuation)")
            #expect(continuation.contains("Authorization: Bearer from-the-adapter\r\n"), "the adapter's, once")
            #expect(continuation.components(separatedBy: "Authorization").count == 2)
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
        // A date only when it is strong (RFC 9110 13.1.5, 8.8.2.2): `Date` a second or more later,
        // and no entity tag held, not even a weak one.
        let modified = "Sat, 21 Nov 2026 10:00:00 GMT"
        #expect(ResumeData.validators(of: response(200, [.lastModified: modified, .date: "Sat, 21 Nov 2026 10:00:01 GMT"]))?.lastModified == modified)
        #expect(ResumeData.validators(of: response(206, [.lastModified: modified, .date: "Sun, 22 Nov 2026 09:00:00 GMT"]))?.lastModified == modified)
        #expect(ResumeData.validators(of: response(200, [.lastModified: modified, .date: modified])) == nil, "a weak date: the same second")
        #expect(ResumeData.validators(of: response(200, [.lastModified: modified])) == nil, "no Date: the date cannot be shown strong")
        #expect(ResumeData.validators(of: response(200, [.lastModified: "yesterday", .date: modified])) == nil)
        #expect(
            ResumeData.validators(of: response(200, [.eTag: "W/\"weak\"", .lastModified: modified, .date: "Sun, 22 Nov 2026 09:00:00 GMT"])) == nil,
            "a date may not stand in for a weak tag")
        #expect(ResumeData.validators(of: response(200, [.eTag: "\"a\"", .lastModified: modified]))?.entityTag == "\"a\"")
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
                // Each attempt counts the bytes it received, not the partial file's kept ones.
                #expect(download.metrics?.attempts.map(\.bytesReceived) == [20, Int64(total - kept)])
            }
        }
    }

    /// A continuation whose `206` names no validator (RFC 9110 15.3.7 lets an answer to
    /// `If-Range` leave them out) and breaks off again: its resume data keeps the validator the
    /// server matched, and the partial file keeps every byte of both transfers, which a third
    /// request completes. The partial file was removed and no resume data made.
    @Test(arguments: [(nil, "Tue, 01 Dec 2026 10:00:00 GMT"), ("\"r\"", nil)] as [(String?, String?)])
    func aContinuationWhose206NamesNoValidatorLeavesResumeData(_ tag: String?, _ modified: String?) async throws {
        let total = 60, kept = 10, more = 20
        let rest = String(decoding: alphabet(total).dropFirst(kept), as: UTF8.self)
        let heads = Recorder<String>()
        try await withPartialFile { file in
            try await ScriptedHTTPServer.with({ connection, _, head in
                heads.append(head)
                let from = connection == 0 ? kept : kept + more
                let answer = "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes \(from)-\(total - 1)/\(total)\r\nContent-Length: \(total - from)\r\n\r\n"
                return connection == 0 ? .respond(answer + rest.prefix(more), thenClose: true) : .respond(answer + rest.dropFirst(more))
            }) { server in
                let manager = SessionManager()
                defer { manager.invalidate(cancelingTasks: true) }
                try alphabet(total).prefix(kept).write(to: file)
                let resume = ResumeData(
                    request: Request(url: server.baseURL.appendingPathComponent("file")), temporaryFileURL: file,
                    bytesReceived: Int64(kept), expectedLength: Int64(total), entityTag: tag, lastModified: modified)
                let error = await #expect(throws: CourierError.self) { try await manager.download(resumingFrom: resume) }
                let again = try #require(error?.resumeData, "\(String(describing: error))")
                #expect(again.bytesReceived == Int64(kept + more))
                #expect(again.entityTag == tag && again.lastModified == modified)
                let download = try await manager.download(resumingFrom: again)
                defer { try? FileManager.default.removeItem(at: download.fileURL) }
                #expect(try Data(contentsOf: download.fileURL) == alphabet(total))
                let validator = tag ?? modified ?? ""
                #expect(heads.all.last?.contains("If-Range: \(validator)\r\n") == true, "\(heads.all)")
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
