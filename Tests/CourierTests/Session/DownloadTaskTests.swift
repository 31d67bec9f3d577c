import Courier
import CourierTesting
import Dispatch
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import Testing

/// A fresh folder for one test, removed afterwards.
func withScratchDirectory<T>(_ body: (URL) async throws -> T) async throws -> T {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("courier-tests-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: url) }
    return try await body(url)
}

/// Runs `body` with the URL of a partial download file where a continuation of resume data will
/// use it (named as Courier names its partial files, in the system's temporary directory), and
/// removes the file afterwards.
func withPartialFile<T>(_ body: (URL) async throws -> T) async throws -> T {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("CourierDownload-\(UUID().uuidString).tmp")
    defer { try? FileManager.default.removeItem(at: url) }
    return try await body(url)
}

/// Whether the code runs within a call a test makes: a task-local value, which a closure called
/// later from another task does not see.
enum CallerScope {
    @TaskLocal static var isCalling = false

    /// Runs `body` at once, with ``isCalling`` set (a synchronous function, so that only the
    /// synchronous `withValue` applies).
    static func call(_ body: () -> Void) {
        self.$isCalling.withValue(true, operation: body)
    }
}

/// The files in `directory`, by name.
func contents(of directory: URL) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).sorted()
}

/// What httpbin's `/range/{n}` sends: `abc…z` repeated.
func alphabet(_ count: Int) -> Data {
    Data((0..<count).map { UInt8(ascii: "a") + UInt8($0 % 26) })
}

@Suite("Download tasks over a real socket")
struct DownloadTaskTests {
    /// A configuration whose downloads are written in `directory`.
    private func configuration(_ directory: URL) -> SessionConfiguration {
        var configuration = SessionConfiguration.default
        configuration.downloadDirectory = directory
        return configuration
    }

    @Test func bodyGoesToTheDestinationWithProgressAndNotifications() async throws {
        try await withScratchDirectory { folder in
            let spool = folder.appendingPathComponent("spool")
            try FileManager.default.createDirectory(at: spool, withIntermediateDirectories: true)
            try await withTestServer { server in
                try await withManager(baseURL: server.baseURL, configuration: self.configuration(spool)) { manager in
                    let target = folder.appendingPathComponent("a/b/file.bin")
                    let fractions = Recorder<Double>()
                    // Other tests run at the same time: count only this test's notifications.
                    let moved = Recorder<Int>()
                    let observer = NotificationCenter.default.addObserver(forName: .downloadTaskDidMoveFile, object: nil, queue: nil) { note in
                        if let task = note.object as? DownloadTask, task.originalRequest.url.port == server.port { moved.append(task.taskIdentifier) }
                    }
                    defer { NotificationCenter.default.removeObserver(observer) }
                    let completed = Recorder<URL>()
                    let completeObserver = NotificationCenter.default.addObserver(forName: .taskDidComplete, object: nil, queue: nil) { note in
                        if let url = note.userInfo?[TaskDidCompleteKey.assetPath] as? URL, url == target { completed.append(url) }
                    }
                    defer { NotificationCenter.default.removeObserver(completeObserver) }

                    let result: (HTTPResponse?, URL?, CourierError?) = await awaitCallback { finish in
                        let task = manager.downloadTask(
                            with: Request(url: server.url("/range/60000")),
                            progress: { fractions.append($0.fractionCompleted) },
                            destination: DownloadDestination { _, _ in target }
                        ) { response, url, error in
                            #expect(DispatchQueue.getSpecific(key: TestQueues.key) == "completion")
                            finish((response, url, error))
                        }
                        #expect(manager.downloadTasks.map(\.taskIdentifier) == [task.taskIdentifier])
                        task.resume()
                    }
                    #expect(result.2 == nil)
                    #expect(result.0?.status == .ok)
                    #expect(result.1 == target)
                    let written = try Data(contentsOf: target)
                    #expect(written == alphabet(60000))
                    #expect(moved.count == 1)
                    #expect(await eventually { completed.all == [target] })
                    #expect(contents(of: spool).isEmpty, "nothing is left in the download folder")
                    let seen = fractions.all
                    #expect(!seen.isEmpty)
                    #expect(zip(seen, seen.dropFirst()).allSatisfy { $0 <= $1 }, "progress never goes backwards")
                    #expect(seen.last == 1.0)
                    #expect(await eventually { manager.tasks.isEmpty })
                }
            }
        }
    }

    @Test func withoutDestinationTheFileStaysInTheDownloadFolder() async throws {
        try await withScratchDirectory { folder in
            try await withTestServer { server in
                try await withManager(baseURL: server.baseURL, configuration: self.configuration(folder)) { manager in
                    let download = try await manager.download(Request(url: server.url("/range/1000")))
                    #expect(download.fileURL.deletingLastPathComponent().standardizedFileURL.path == folder.standardizedFileURL.path)
                    #expect(try Data(contentsOf: download.fileURL) == alphabet(1000))
                    #expect(download.response.status == .ok)
                }
            }
        }
    }

    /// A destination whose name is near the file system's 255-byte limit: the file went first
    /// to a hidden name built on it, 31 bytes longer, and the move failed.
    @Test func aDestinationNamedNearTheLimitIsReached() async throws {
        try await withScratchDirectory { folder in
            let target = folder.appendingPathComponent(String(repeating: "a", count: 240) + ".bin")
            try await withTestServer { server in
                try await withManager(baseURL: server.baseURL, configuration: self.configuration(folder)) { manager in
                    let download = try await manager.download(
                        Request(url: server.url("/range/100")), to: DownloadDestination(options: [.removePreviousFile]) { _, _ in target })
                    #expect(download.fileURL == target)
                    #expect(try Data(contentsOf: target) == alphabet(100))
                    #expect(contents(of: folder) == [target.lastPathComponent])
                }
            }
        }
    }

    @Test func anExistingFileIsKeptUnlessReplacingIsAsked() async throws {
        try await withScratchDirectory { folder in
            let spool = folder.appendingPathComponent("spool")
            try FileManager.default.createDirectory(at: spool, withIntermediateDirectories: true)
            let target = folder.appendingPathComponent("existing.bin")
            try Data("keep me".utf8).write(to: target)
            try await withTestServer { server in
                try await withManager(baseURL: server.baseURL, configuration: self.configuration(spool)) { manager in
                    let failed = Recorder<CourierError>()
                    let observer = NotificationCenter.default.addObserver(forName: .downloadTaskDidFailToMoveFile, object: nil, queue: nil) { note in
                        if let error = note.userInfo?[TaskDidCompleteKey.error] as? CourierError, error.message.contains(target.path) {
                            failed.append(error)
                        }
                    }
                    defer { NotificationCenter.default.removeObserver(observer) }

                    let error = await #expect(throws: CourierError.self) {
                        try await manager.download(Request(url: server.url("/range/100")), to: DownloadDestination { _, _ in target })
                    }
                    #expect(error?.code == .fileSystemFailure)
                    #expect(error?.message.contains(target.path) == true)
                    #expect(try Data(contentsOf: target) == Data("keep me".utf8))
                    #expect(failed.count == 1)
                    #expect(contents(of: spool).isEmpty, "the downloaded file is removed")

                    let replaced = try await manager.download(
                        Request(url: server.url("/range/100")),
                        to: DownloadDestination(options: [.removePreviousFile]) { _, _ in target })
                    #expect(replaced.fileURL == target)
                    #expect(try Data(contentsOf: target) == alphabet(100))
                }
            }
        }
    }

    @Test("A download does not look completed while its file is moved: its error is not yet known")
    func aDownloadIsNotCompletedBeforeItsErrorIsSet() async throws {
        try await withScratchDirectory { folder in
            let target = folder.appendingPathComponent("existing.bin")
            try Data("keep me".utf8).write(to: target)
            try await withTestServer { server in
                try await withManager(baseURL: server.baseURL, configuration: self.configuration(folder)) { manager in
                    let task = NIOLockedValueBox<DownloadTask?>(nil)
                    // What the task looked like while the destination was being named.
                    let seen = NIOLockedValueBox<(SessionTask.State, CourierError?)?>(nil)
                    let done = AsyncStream<CourierError?>.makeStream()
                    let destination = DownloadDestination { _, _ in
                        seen.withLockedValue { $0 = task.withLockedValue { $0.map { ($0.state, $0.error) } } }
                        return target
                    }
                    let made = manager.downloadTask(with: Request(url: server.url("/range/100")), destination: destination) { _, _, error in
                        done.continuation.yield(error)
                    }
                    task.withLockedValue { $0 = made }
                    made.resume()
                    var results = done.stream.makeAsyncIterator()
                    let error = await results.next() ?? nil
                    #expect(error?.code == .fileSystemFailure, "the file was there already: the move failed")
                    let during = try #require(seen.withLockedValue { $0 })
                    #expect(during.0 == .running, "not completed while the file is moved")
                    #expect(during.1 == nil)
                    #expect(made.state == .completed)
                    #expect(made.error?.code == .fileSystemFailure)
                    #expect(made.metrics != nil)
                    task.withLockedValue { $0 = nil }
                }
            }
        }
    }

    @Test func anUnwritableDestinationFailsAndLeavesNothing() async throws {
        try await withScratchDirectory { folder in
            let spool = folder.appendingPathComponent("spool")
            try FileManager.default.createDirectory(at: spool, withIntermediateDirectories: true)
            let blocker = folder.appendingPathComponent("not-a-folder")
            try Data().write(to: blocker)
            try await withTestServer { server in
                try await withManager(baseURL: server.baseURL, configuration: self.configuration(spool)) { manager in
                    let target = blocker.appendingPathComponent("file.bin")
                    let error = await #expect(throws: CourierError.self) {
                        try await manager.download(Request(url: server.url("/range/100")), to: DownloadDestination { _, _ in target })
                    }
                    #expect(error?.code == .fileSystemFailure)
                    #expect(!FileManager.default.fileExists(atPath: target.path))
                    #expect(contents(of: spool).isEmpty)
                }
            }
        }
    }

    @Test func aFolderThatCannotHoldTheDownloadFailsTyped() async throws {
        try await withTestServer { server in
            var configuration = SessionConfiguration.default
            configuration.downloadDirectory = URL(fileURLWithPath: "/nonexistent-\(UUID().uuidString)")
            try await withManager(baseURL: server.baseURL, configuration: configuration) { manager in
                let error = await #expect(throws: CourierError.self) {
                    try await manager.download(Request(url: server.url("/range/100")))
                }
                #expect(error?.code == .fileSystemFailure)
            }
        }
    }

    @Test func anyStatusGivesAFileAsWithURLSession() async throws {
        try await withScratchDirectory { folder in
            try await withTestServer { server in
                try await withManager(baseURL: server.baseURL, configuration: self.configuration(folder)) { manager in
                    let download = try await manager.download(Request(url: server.url("/status/418")))
                    #expect(download.response.status.code == 418)
                    #expect(try Data(contentsOf: download.fileURL) == Data("I'm a teapot\n".utf8))
                }
            }
        }
    }

    /// A download's file, in the download folder, at its destination or kept as resume data, is
    /// readable and writable by its owner only: a download may be private. They were made
    /// readable by everyone (0644).
    @Test func aDownloadsFilesAreTheOwnersOnly() async throws {
        func mode(_ file: URL) throws -> Int? {
            (try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? NSNumber).map { $0.intValue & 0o777 }
        }
        try await withScratchDirectory { folder in
            try await withTestServer { server in
                try await withManager(baseURL: server.baseURL, configuration: self.configuration(folder)) { manager in
                    let kept = try await manager.download(Request(url: server.url("/range/1000")))
                    #expect(try mode(kept.fileURL) == 0o600)
                    let target = folder.appendingPathComponent("placed.bin")
                    let placed = try await manager.download(Request(url: server.url("/range/1000")), to: DownloadDestination { _, _ in target })
                    #expect(placed.fileURL == target)
                    #expect(try mode(target) == 0o600)
                }
            }
            let head = "HTTP/1.1 200 OK\r\nETag: \"x\"\r\nContent-Length: 60\r\n\r\n"
            try await ScriptedHTTPServer.with({ _, _, _ in .respond(head + String(repeating: "a", count: 20), thenClose: true) }) { server in
                try await withManager(baseURL: server.baseURL, configuration: self.configuration(folder)) { manager in
                    let error = await #expect(throws: CourierError.self) {
                        try await manager.download(Request(url: server.baseURL.appendingPathComponent("file")))
                    }
                    let resume = try #require(error?.resumeData)
                    defer { resume.discard() }
                    #expect(resume.bytesReceived == 20)
                    #expect(try mode(resume.temporaryFileURL) == 0o600)
                }
            }
        }
    }

    /// `cancel(byProducingResumeData:)` on a task that has ended gives nil as a running task's
    /// handler is called: once, on a thread of Courier's, not within the call. It was called
    /// within the call, on the caller's thread (a task-local value the caller set shows which).
    @Test func cancellingAnEndedTaskForResumeDataAnswersOutsideTheCall() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let ended = Recorder<URL?>()
                let task = manager.downloadTask(with: Request(url: server.url("/range/100"))) { _, url, _ in ended.append(url) }
                task.resume()
                #expect(await ended.wait { $0.count == 1 })
                if let file = ended.all.first ?? nil { try? FileManager.default.removeItem(at: file) }
                let answers = Recorder<ResumeData?>()
                let withinTheCall = Recorder<Bool>()
                CallerScope.call {
                    task.cancel { resumeData in
                        withinTheCall.append(CallerScope.isCalling)
                        answers.append(resumeData)
                    }
                }
                #expect(await answers.wait { $0.count == 1 })
                #expect(answers.all.compactMap { $0 }.isEmpty, "no resume data")
                #expect(withinTheCall.all == [false], "not called within the call")
            }
        }
    }

    @Test func cancellingBeforeResumeGivesNoResumeData() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let task = manager.downloadTask(with: Request(url: server.url("/range/100")), completionHandler: nil)
                let resumeData = await task.cancelProducingResumeData()
                #expect(resumeData == nil)
                #expect(await eventually { manager.tasks.isEmpty })
            }
        }
    }
}

/// One test at a time: each fills the small file system, and the continuation test needs room
/// again once it freed its own filler.
@Suite(
    "Writing to a full disk", .serialized,
    .enabled(if: TinyFileSystem.url != nil, "COURIER_TINY_FS names no small file system (.ci/run mounts one)"))
struct FullDiskDownloadTests {
    @Test func aFullDiskFailsTypedAndLeavesNoFile() async throws {
        let folder = TinyFileSystem.url!.appendingPathComponent("download-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var configuration = SessionConfiguration.default
        configuration.downloadDirectory = folder
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL, configuration: configuration) { manager in
                let error = await #expect(throws: CourierError.self) {
                    try await manager.download(Request(url: server.url("/courier/big/4000000")))
                }
                #expect(error?.code == .fileSystemFailure)
                #expect(error?.message.contains(folder.path) == true, "the error names the file")
                #expect(contents(of: folder).isEmpty, "the partial file is removed")
                #expect(await eventually { manager.tasks.isEmpty })
            }
        }
    }

    /// A continuation of resume data that fills the disk keeps its partial file, as curl's `-C -`
    /// does: the bytes kept and those written before the failure stay (cut back to the last
    /// write that reached the disk), and the error's resume data names them; once there is room,
    /// resuming from it completes the file. The partial file was removed and no resume data
    /// given: the bytes the caller had were lost with the ones that did not fit.
    @Test func aContinuationThatFillsTheDiskKeepsItsPartialFileToResumeLater() async throws {
        let file = TestServer.GeneratedFile(length: 600_000)
        try await Self.withResumeDataOnTheTinyDisk(of: file) { server, manager, folder, resume in
            var resume = resume
            let kept = resume.bytesReceived
            // The continuations ask for the whole file, not broken off.
            resume.url = server.url(file.path())

            // The disk filled to within 64 KiB: the continuation cannot write the rest.
            let filler = try Self.fillDisk(folder)
            let full = await #expect(throws: CourierError.self) { try await manager.download(resumingFrom: resume) }
            #expect(full?.code == .fileSystemFailure)
            let again = try #require(full?.resumeData, "the partial file is kept, with resume data: \(String(describing: full))")
            #expect(again.temporaryFileURL == resume.temporaryFileURL)
            #expect(again.bytesReceived >= kept, "the bytes kept stay")
            #expect(again.bytesReceived < Int64(file.length))
            let partial = try Data(contentsOf: again.temporaryFileURL)
            #expect(partial.count == Int(again.bytesReceived), "the file holds the bytes its resume data names")
            #expect(CRC32.checksum(of: partial) == file.crc32(0..<min(partial.count, file.length)), "and they are the file's")

            // Room again: resuming from the error's resume data completes the file.
            try FileManager.default.removeItem(at: filler)
            let download = try await manager.download(resumingFrom: again)
            #expect(download.response.status == .partialContent)
            let data = try Data(contentsOf: download.fileURL)
            #expect(data.count == file.length)
            #expect(CRC32.checksum(of: data) == file.crc32(), "whole and correct")
            #expect(contents(of: folder) == [download.fileURL.lastPathComponent], "nothing else is left")
            #expect(await eventually { manager.tasks.isEmpty })
        }
    }

    /// A continuation answered with a 200 (here a server that ignores `Range`) writes the whole
    /// body again; when the disk fills meanwhile, the partial file keeps the bytes it had, and the
    /// error carries the resume data the continuation began with. The half-written body replaced
    /// the partial file, which was then removed with no resume data: the caller's bytes were lost.
    @Test func aRewriteThatFillsTheDiskKeepsThePartialFileAsItWas() async throws {
        let file = TestServer.GeneratedFile(length: 600_000)
        try await Self.withResumeDataOnTheTinyDisk(of: file) { server, manager, folder, resume in
            var resume = resume
            let kept = Int(resume.bytesReceived)
            // The continuation gets the whole file again, with a 200.
            resume.url = server.url(file.path(["ignore-range": "1"]))

            // The disk filled to within 64 KiB: the 200's body cannot be written whole.
            let filler = try Self.fillDisk(folder)
            let full = await #expect(throws: CourierError.self) { try await manager.download(resumingFrom: resume) }
            #expect(full?.code == .fileSystemFailure)
            #expect(full?.resumeData == resume, "the resume data it began with: \(String(describing: full))")
            let partial = try Data(contentsOf: resume.temporaryFileURL)
            #expect(partial.count == kept, "the partial file is as it was")
            #expect(CRC32.checksum(of: partial) == file.crc32(0..<kept))

            // Room again: the partial file is continued.
            try FileManager.default.removeItem(at: filler)
            resume.url = server.url(file.path())
            let download = try await manager.download(resumingFrom: resume)
            #expect(download.response.status == .partialContent)
            let data = try Data(contentsOf: download.fileURL)
            #expect(CRC32.checksum(of: data) == file.crc32(), "whole and correct")
            #expect(contents(of: folder) == [download.fileURL.lastPathComponent], "nothing else is left")
            #expect(await eventually { manager.tasks.isEmpty })
        }
    }

    /// Runs `body` with a server, a manager whose downloads go to a new folder on the small file
    /// system (held for this test alone: the command line's full-disk test fills it too), that
    /// folder, and the resume data of a download of `file` cut short after 100 000 bytes, which
    /// keeps its partial file there.
    private static func withResumeDataOnTheTinyDisk(
        of file: TestServer.GeneratedFile, _ body: (TestServer, HTTPSessionManager, URL, ResumeData) async throws -> Void
    ) async throws {
        let folder = TinyFileSystem.url!.appendingPathComponent("resume-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var configuration = SessionConfiguration.default
        configuration.downloadDirectory = folder
        try await TinyFileSystem.withExclusiveUse {
            try await withTestServer { server in
                try await withManager(baseURL: server.baseURL, configuration: configuration) { manager in
                    let cut = await #expect(throws: CourierError.self) {
                        try await manager.download(Request(url: server.url(file.path(["drop-after": "100000"]))))
                    }
                    let resume = try #require(cut?.resumeData, "\(String(describing: cut))")
                    #expect(resume.bytesReceived > 0)
                    #expect(resume.temporaryFileURL.deletingLastPathComponent().standardizedFileURL.path == folder.standardizedFileURL.path)
                    try await body(server, manager, folder, resume)
                }
            }
        }
    }

    /// Fills the file system of `folder` to within 64 KiB with a file there, returned.
    private static func fillDisk(_ folder: URL) throws -> URL {
        let filler = folder.appendingPathComponent("filler")
        let free = (try FileManager.default.attributesOfFileSystem(forPath: folder.path)[.systemFreeSize] as? NSNumber)?.intValue ?? 0
        // A folder that is not on the small file system (unmounted under the test) would make a
        // buffer of the whole disk's free space, which traps and takes the test process with it.
        guard free <= 64 << 20 else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: folder.path, NSLocalizedDescriptionKey: "\(folder.path) has \(free) bytes free: not the small file system"])
        }
        try Data(count: max(0, free - (64 << 10))).write(to: filler)
        return filler
    }

    @Test func aMoveToAFullDiskOnAnotherFileSystemLeavesNoFileThere() async throws {
        // Written in the system's temporary directory, moved to the small file system: a copy,
        // cut short when the disk is full. The copy was made under the destination's own name
        // and left there, truncated.
        let folder = TinyFileSystem.url!.appendingPathComponent("moved-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let target = folder.appendingPathComponent("big.bin")
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let error = await #expect(throws: CourierError.self) {
                    try await manager.download(Request(url: server.url("/courier/big/3000000")), to: DownloadDestination { _, _ in target })
                }
                #expect(error?.code == .fileSystemFailure)
                #expect(error?.message.contains(target.path) == true, "the error names the destination")
                #expect(contents(of: folder).isEmpty, "neither the destination nor a part of it is left")
                #expect(await eventually { manager.tasks.isEmpty })
            }
        }
    }

    @Test func aMultipartBodyWrittenToAFullDiskFailsTypedAndLeavesNoFile() async throws {
        let folder = TinyFileSystem.url!.appendingPathComponent("form-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let serializer = HTTPRequestSerializer()
        let form = try serializer.multipartFormRequest(method: .post, urlString: "http://127.0.0.1/upload") { form in
            form.appendPart(withFileData: Data(repeating: 1, count: 3 << 20), name: "file", fileName: "big.bin", mimeType: "application/octet-stream")
        }
        let target = folder.appendingPathComponent("body.bin")
        let error = await #expect(throws: CourierError.self) {
            _ = try await serializer.request(withMultipartFormRequest: form, writingStreamContentsToFile: target)
        }
        #expect(error?.code == .fileSystemFailure)
        #expect(contents(of: folder).isEmpty, "neither the body nor a temporary file is left")
    }
}
