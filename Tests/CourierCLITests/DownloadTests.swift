import CompressNIO
import Courier
@testable import CourierCLI
import CourierTesting
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing

/// `--download`: files, names, resume after an interrupted download.
@Suite("CLI: --download")
struct DownloadTests {
    @Test("-d -o writes the body to the file; the status and progress go to standard error")
    func downloadToFile() async throws {
        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await TestServer.withServer { server in
            let file = TestServer.GeneratedFile(length: 3 << 20)
            let target = folder.appendingPathComponent("out.bin")
            let result = try await CLIRunner.run(["--download", "-o", target.path, server.url(file.path()).absoluteString])
            #expect(result.status == 0, "\(result.standardError)")
            #expect(result.standardOutput.isEmpty)
            #expect(result.standardError.hasPrefix("HTTP/1.1 200 OK\n"))
            #expect(result.standardError.contains("Downloading 3.0 MiB to '\(target.path)'"))
            #expect(result.errorLines.last?.hasPrefix("Done. 3.0 MiB in ") == true)
            let data = try Data(contentsOf: target)
            #expect(data.count == file.length)
            #expect(CRC32.checksum(of: data) == file.crc32())
        }
    }

    @Test("Without -o, standard output a terminal, the file is named from the URL, and an existing name gets a suffix")
    func namesTheFile() async throws {
        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await TestServer.withServer { server in
            let url = server.url("/bytes/100?seed=1").absoluteString
            #expect(try await CLIRunner.runWithOutputOnTerminal(["-d", url], in: folder).status == 0)
            #expect(try await CLIRunner.runWithOutputOnTerminal(["-d", url], in: folder).status == 0)
            let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
            #expect(names == ["100", "100-1"])
        }
    }

    /// HTTPie writes a download without `-o` to standard output when that is not a terminal
    /// (`http -d URL | tar zxf -`); courier made a file named from the URL and wrote nothing there.
    @Test("-d without -o writes the body to standard output when it is a pipe, and makes no file")
    func downloadToPipedStandardOutput() async throws {
        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await TestServer.withServer { server in
            let file = TestServer.GeneratedFile(length: 1 << 20)
            let result = try await CLIRunner.run(["-d", server.url(file.path()).absoluteString], in: folder)
            #expect(result.status == 0, "\(result.standardError)")
            #expect(result.standardOutput.count == file.length)
            #expect(CRC32.checksum(of: result.standardOutput) == file.crc32())
            #expect(result.standardError.hasPrefix("HTTP/1.1 200 OK\n"))
            #expect(result.standardError.contains("Downloading 1.0 MiB to standard output"), "\(result.standardError)")
            #expect(result.errorLines.last?.hasPrefix("Done. 1.0 MiB in ") == true)
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
        }
        #expect(Downloader.writesToStandardOutput(output: nil, standardOutputIsTerminal: false))
        #expect(!Downloader.writesToStandardOutput(output: nil, standardOutputIsTerminal: true))
        #expect(!Downloader.writesToStandardOutput(output: "f.bin", standardOutputIsTerminal: false))
    }

    /// HTTPie's `--download` implies `--follow`: a redirect wrote nothing and exited 3.
    @Test("--download follows redirects")
    func downloadFollowsRedirects() async throws {
        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await TestServer.withServer { server in
            let target = folder.appendingPathComponent("got.json")
            let result = try await CLIRunner.run(["-d", "-o", target.path, server.url("/redirect/2").absoluteString])
            #expect(result.status == 0, "\(result.standardError)")
            let echo = try JSONSerialization.jsonObject(with: Data(contentsOf: target)) as? [String: Any]
            #expect(echo?["url"] as? String == server.url("/get").absoluteString)
        }
    }

    @Test("A 404 writes no file and exits 4")
    func errorStatusWritesNothing() async throws {
        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await TestServer.withServer { server in
            let target = folder.appendingPathComponent("missing.bin")
            let result = try await CLIRunner.run(["-d", "-o", target.path, server.url("/status/404").absoluteString])
            #expect(result.status == 4)
            #expect(result.errorLines.last == "courier: error: HTTP 404 Not Found: nothing downloaded")
            #expect(!FileManager.default.fileExists(atPath: target.path))
        }
    }

    @Test("An interrupted download exits 1 and keeps its bytes; --continue fetches the rest")
    func resumeAfterInterruption() async throws {
        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await TestServer.withServer { server in
            let file = TestServer.GeneratedFile(length: 2 << 20)
            let target = folder.appendingPathComponent("big.bin")
            let cut = try await CLIRunner.run(["-d", "-o", target.path, server.url(file.path(["drop-after": "700000"])).absoluteString])
            #expect(cut.status == 1)
            #expect(cut.errorLines.last?.hasPrefix("courier: error: ") == true)
            let partial = try Data(contentsOf: target)
            // Every byte that arrived before the connection closed is in the file.
            #expect(partial.count == 700_000)

            let resumed = try await CLIRunner.run(["-d", "-c", "-o", target.path, server.url(file.path()).absoluteString])
            #expect(resumed.status == 0, "\(resumed.standardError)")
            #expect(resumed.standardError.contains("HTTP/1.1 206 Partial Content"))
            #expect(resumed.standardError.contains(", from byte \(partial.count)"))
            let whole = try Data(contentsOf: target)
            #expect(whole.count == file.length)
            #expect(CRC32.checksum(of: whole) == file.crc32())

            let again = try await CLIRunner.run(["-d", "-c", "-o", target.path, server.url(file.path()).absoluteString])
            #expect(again.status == 0)
            #expect(again.errorLines.last == "'\(target.path)' is already complete (2.0 MiB).")
        }
    }

    /// `-o` opens the file as curl does, and does not replace it: a symbolic link is written
    /// through and stays a link. The file was replaced by a rename (so `-o /dev/null` failed with
    /// "cannot create", or as root replaced the device with a file). A link stands for the device
    /// here: a test that replaced `/dev/null` would break the machine it runs on.
    @Test("-o writes through a link and does not replace it")
    func downloadThroughALink() async throws {
        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("kept.bin")
        try Data("old".utf8).write(to: file)
        let link = folder.appendingPathComponent("out")
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: file.path)
        try await TestServer.withServer { server in
            let result = try await CLIRunner.run(["-d", "-o", link.path, server.url("/bytes/1000").absoluteString])
            #expect(result.status == 0, "\(result.standardError)")
            let type = try FileManager.default.attributesOfItem(atPath: link.path)[.type] as? FileAttributeType
            #expect(type == .typeSymbolicLink, "the link was replaced")
            #expect(try Data(contentsOf: file).count == 1000)
        }
    }

    /// `-c -o link` where `link` is a symbolic link to the partial file: the rest is asked from
    /// the partial file's size, not the link's own (the length of the path it holds), which put
    /// the rest after the partial file's bytes from the wrong offset.
    @Test("--continue through a symbolic link counts the partial file's bytes")
    func resumeThroughASymbolicLink() async throws {
        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await TestServer.withServer { server in
            let file = TestServer.GeneratedFile(length: 1 << 20)
            let target = folder.appendingPathComponent("part.bin")
            let cut = try await CLIRunner.run(["-d", "-o", target.path, server.url(file.path(["drop-after": "300000"])).absoluteString])
            #expect(cut.status == 1)
            let link = folder.appendingPathComponent("link")
            try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: target.path)
            let resumed = try await CLIRunner.run(["-d", "-c", "-o", link.path, server.url(file.path()).absoluteString])
            #expect(resumed.status == 0, "\(resumed.standardError)")
            #expect(resumed.standardError.contains(", from byte 300000"), "\(resumed.standardError)")
            let whole = try Data(contentsOf: target)
            #expect(whole.count == file.length)
            #expect(CRC32.checksum(of: whole) == file.crc32())
        }
    }

    @Test(
        "A full disk exits 1 naming the file it could not write",
        .enabled(if: TinyFileSystem.url != nil, "COURIER_TINY_FS names no small file system (.ci/run mounts one)")
    )
    func fullDisk() async throws {
        let folder = TinyFileSystem.url!.appendingPathComponent("cli-\(UUID().uuidString)")
        // It fills the file system: not while the library's test that needs room again runs.
        try await TinyFileSystem.withExclusiveUse {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            try await TestServer.withServer { server in
                // Three times what the file system holds.
                let file = TestServer.GeneratedFile(length: 3 << 20)
                let target = folder.appendingPathComponent("big.bin")
                let result = try await CLIRunner.run(["-d", "-o", target.path, server.url(file.path()).absoluteString])
                #expect(result.status == 1)
                #expect(result.errorLines.last?.hasPrefix("courier: error: cannot write '\(target.path)': ") == true, "\(result.standardError)")
            }
        }
    }

    @Test("--continue against a server that ignores ranges starts over")
    func resumeWithoutRangeSupport() async throws {
        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await TestServer.withServer { server in
            let file = TestServer.GeneratedFile(length: 100_000)
            let target = folder.appendingPathComponent("f.bin")
            try Data(repeating: 0xFF, count: 5000).write(to: target)
            let result = try await CLIRunner.run(["-d", "-c", "-o", target.path, server.url(file.path(["ignore-range": "1"])).absoluteString])
            #expect(result.status == 0)
            #expect(result.standardError.contains("The server sent the whole file: starting over."))
            #expect(CRC32.checksum(of: try Data(contentsOf: target)) == file.crc32())
        }
    }

    /// `/doc` as a file server keeps it: `version` bytes (`a`s, then `b`s) under the entity tag
    /// `"v1"` or `"v2"`, a `Range: bytes=N-` answered with 206 unless an `If-Range` names another
    /// version (then 200, the whole file, RFC 9110 13.1.5).
    private static func serveChangingFile(on server: TestServer, version: NIOLockedValueBox<Int>) {
        server.route("/doc") { request in
            let current = version.withLockedValue { $0 }
            let body = Data(repeating: current == 1 ? UInt8(ascii: "a") : UInt8(ascii: "b"), count: 100_000)
            let tag = "\"v\(current)\""
            if let range = request.value(forHTTPHeaderField: "Range"), range.hasPrefix("bytes="), range.hasSuffix("-"),
                let start = Int(range.dropFirst(6).dropLast()), start < body.count,
                request.value(forHTTPHeaderField: "If-Range").map({ $0 == tag }) ?? true
            {
                return TestServer.Response(
                    status: .partialContent,
                    headerFields: [.eTag: tag, .contentRange: "bytes \(start)-\(body.count - 1)/\(body.count)"],
                    body: body[start...])
            }
            return TestServer.Response(headerFields: [.eTag: tag, .acceptRanges: "bytes"], body: body)
        }
    }

    @Test("--continue sends the validator kept with the file as If-Range: a file that changed on the server comes whole, not appended")
    func resumeAcrossAChangeStartsOver() async throws {
        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await TestServer.withServer { server in
            let version = NIOLockedValueBox(1)
            Self.serveChangingFile(on: server, version: version)
            let target = folder.appendingPathComponent("doc.bin")
            let url = server.url("/doc").absoluteString
            #expect(try await CLIRunner.run(["-d", "-o", target.path, url]).status == 0)
            // A file system without user attributes keeps no validator: nothing to resume against.
            guard PartialFileValidator.stored(for: target) == "\"v1\"" else { return }

            // Unchanged: the rest is appended.
            try FileHandle(forWritingTo: target).truncate(atOffset: 40_000)
            let resumed = try await CLIRunner.run(["-d", "-c", "-o", target.path, url])
            #expect(resumed.status == 0, "\(resumed.standardError)")
            #expect(resumed.standardError.contains("206 Partial Content"))
            #expect(try Data(contentsOf: target) == Data(repeating: UInt8(ascii: "a"), count: 100_000))

            // Changed: the If-Range does not match, and the new file comes whole.
            try FileHandle(forWritingTo: target).truncate(atOffset: 40_000)
            version.withLockedValue { $0 = 2 }
            let changed = try await CLIRunner.run(["-d", "-c", "-o", target.path, url])
            #expect(changed.status == 0, "\(changed.standardError)")
            #expect(changed.standardError.contains("The server sent the whole file: starting over."))
            #expect(try Data(contentsOf: target) == Data(repeating: UInt8(ascii: "b"), count: 100_000))
        }
    }
    /// gzip's bytes as a server labels them, `Content-Encoding: gzip`, whatever was asked.
    private static func gzipped(_ data: Data) throws -> Data {
        var input = ByteBuffer(bytes: data)
        return Data(try input.compress(with: .gzip, configuration: ZlibConfiguration()).readableBytesView)
    }

    @Test("-d saves a body the server labels gzip as it came (Apache's AddEncoding gzip .gz), as curl does")
    func downloadKeepsTheBytesAsTheyCame() async throws {
        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await TestServer.withServer { server in
            let archive = try Self.gzipped(Data(TestServer.GeneratedFile(length: 200_000).bytes()))
            server.route("/site.tar.gz") { _ in
                TestServer.Response(headerFields: [.contentType: "application/x-tar", .contentEncoding: "gzip"], body: archive)
            }
            let target = folder.appendingPathComponent("site.tar.gz")
            let result = try await CLIRunner.run(["-d", "-o", target.path, server.url("/site.tar.gz").absoluteString])
            #expect(result.status == 0, "\(result.standardError)")
            #expect(try Data(contentsOf: target) == archive)
        }
    }

    @Test("--continue of a whole file is done when the 416 names no length but the If-Range validator was current (Apache, lighttpd)")
    func continueOfAWholeFileWithoutContentRange() async throws {
        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await TestServer.withServer { server in
            let body = Data(repeating: UInt8(ascii: "a"), count: 50_000)
            server.route("/whole") { request in
                if request.value(forHTTPHeaderField: "Range") != nil, request.value(forHTTPHeaderField: "If-Range") == "\"v1\"" {
                    return TestServer.Response(status: .rangeNotSatisfiable, headerFields: [.eTag: "\"v1\""], body: Data())
                }
                return TestServer.Response(headerFields: [.eTag: "\"v1\"", .acceptRanges: "bytes"], body: body)
            }
            let target = folder.appendingPathComponent("whole.bin")
            let url = server.url("/whole").absoluteString
            #expect(try await CLIRunner.run(["-d", "-o", target.path, url]).status == 0)
            // A file system without user attributes keeps no validator: nothing to vouch for the file.
            guard PartialFileValidator.stored(for: target) == "\"v1\"" else { return }
            let again = try await CLIRunner.run(["-d", "-c", "-o", target.path, url])
            #expect(again.status == 0, "\(again.standardError)")
            #expect(again.standardError.contains("is already complete (48.8 KiB)"), "\(again.standardError)")
            #expect(try Data(contentsOf: target) == body)
        }
    }

    /// `bytes=10-` asks for everything from byte 10 to the end: a 206 that stops short of the end
    /// it names is not the rest (the library refuses it too). It was appended, and the command
    /// said "Done." with 20 of 60 bytes in the file.
    @Test("--continue refuses a 206 that stops short of the end: exit 1, the partial file unchanged")
    func continueRefusesAShort206() async throws {
        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await TestServer.withServer { server in
            server.route("/short") { _ in
                TestServer.Response(status: .partialContent, headerFields: [.contentRange: "bytes 10-19/60"], body: Data(repeating: 2, count: 10))
            }
            let target = folder.appendingPathComponent("part.bin")
            try Data(repeating: 1, count: 10).write(to: target)
            let result = try await CLIRunner.run(["-d", "-c", "-o", target.path, server.url("/short").absoluteString])
            #expect(result.status == 1, "\(result.standardError)")
            #expect(result.errorLines.last?.contains("(bytes 10-19/60), not the rest of the file") == true, "\(result.standardError)")
            #expect(!result.standardError.contains("Done."))
            #expect(try Data(contentsOf: target) == Data(repeating: 1, count: 10), "the partial file is unchanged")
        }
    }

    /// A server (or a cache before it) that honours `Range` but ignores `If-Range` answers with the
    /// rest of the version it has now: its 206 names another `ETag` than the one sent. It was
    /// appended, and the command said "Done." with a file that is neither version.
    @Test("--continue refuses a 206 of another version (a server that ignores If-Range): exit 1, the partial file unchanged")
    func continueRefusesA206OfAnotherVersion() async throws {
        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await TestServer.withServer { server in
            server.route("/changed") { _ in
                TestServer.Response(
                    status: .partialContent, headerFields: [.contentRange: "bytes 10-59/60", .eTag: "\"v2\""],
                    body: Data(repeating: 2, count: 50))
            }
            let target = folder.appendingPathComponent("part.bin")
            try Data(repeating: 1, count: 10).write(to: target)
            PartialFileValidator.store("\"v1\"", for: target)
            // A file system without user attributes keeps no validator: no If-Range goes out.
            guard PartialFileValidator.stored(for: target) == "\"v1\"" else { return }
            let result = try await CLIRunner.run(["-d", "-c", "-o", target.path, server.url("/changed").absoluteString])
            #expect(result.status == 1, "\(result.standardError)")
            #expect(result.errorLines.last?.contains("another version of the file (\"v2\", not \"v1\")") == true, "\(result.standardError)")
            #expect(!result.standardError.contains("Done."))
            #expect(try Data(contentsOf: target) == Data(repeating: 1, count: 10), "the partial file is unchanged")
        }
    }

    @Test("A 416 without a length and without a validator sent is still an error (exit 4)")
    func continueWithoutValidatorAndWithoutContentRange() async throws {
        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await TestServer.withServer { server in
            server.route("/no-length") { _ in TestServer.Response(status: .rangeNotSatisfiable, body: Data()) }
            let target = folder.appendingPathComponent("part.bin")
            try Data(repeating: 1, count: 10).write(to: target)
            let result = try await CLIRunner.run(["-d", "-c", "-o", target.path, server.url("/no-length").absoluteString])
            #expect(result.status == 4, "\(result.standardError)")
        }
    }

    @Test("Content-Disposition's filename* (RFC 8187) names the file before filename")
    func extendedFileName() async throws {
        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await TestServer.withServer { server in
            server.route("/report") { _ in
                TestServer.Response(
                    headerFields: [.contentDisposition: "attachment; filename=\"naive.txt\"; filename*=UTF-8''na%C3%AFve%20r%C3%A9sum%C3%A9.txt"],
                    body: Data("x".utf8))
            }
            let result = try await CLIRunner.runWithOutputOnTerminal(["-d", server.url("/report").absoluteString], in: folder)
            #expect(result.status == 0, "\(result.standardError)")
            let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            #expect(names == ["naïve résumé.txt"])
        }
        #expect(Downloader.extendedFileName(in: "attachment; filename*=iso-8859-1'en'%A3%20rates.txt") == "£ rates.txt")
        #expect(Downloader.extendedFileName(in: "attachment; filename*=UTF-8''%ZZ") == nil)
        #expect(Downloader.extendedFileName(in: "attachment; filename*=koi8-r''x") == nil)
    }

    /// A name the server chose was looked up (`fileExists`, false for a symbolic link to
    /// nothing) and then opened through whatever had it: a link planted under the name made the
    /// download create the file it pointed to. It is created as curl creates it (`O_EXCL`).
    @Test("A server-named download does not follow a link planted under its name; it takes the next name")
    func aPlantedLinkIsNotFollowed() async throws {
        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let victim = folder.appendingPathComponent("victim")
        let work = folder.appendingPathComponent("work")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        let link = work.appendingPathComponent("report.pdf")
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: victim.path)
        try await TestServer.withServer { server in
            server.route("/report") { _ in
                TestServer.Response(headerFields: [.contentDisposition: "attachment; filename=\"report.pdf\""], body: Data("pdf".utf8))
            }
            let result = try await CLIRunner.runWithOutputOnTerminal(["-d", server.url("/report").absoluteString], in: work)
            #expect(result.status == 0, "\(result.standardError)")
            #expect(!FileManager.default.fileExists(atPath: victim.path), "the link was followed")
            #expect(try Data(contentsOf: work.appendingPathComponent("report.pdf-1")) == Data("pdf".utf8))
            let type = try FileManager.default.attributesOfItem(atPath: link.path)[.type] as? FileAttributeType
            #expect(type == .typeSymbolicLink, "the link was replaced")
        }
    }

    /// `filename` was cut at its first `;`, inside quotes too (`"Q3; final.pdf"` was saved as
    /// `Q3`), and kept a quoted-string's `\` escapes; a name past a file system's 255 bytes failed
    /// with "File name too long".
    @Test("Content-Disposition's quoted filename is read as RFC 9110 quotes it; a long name is cut to 255 bytes, its extension kept")
    func quotedAndLongFileNames() async throws {
        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let quotedName = #"Q3; final "draft".pdf"#
        let long = String(repeating: "a", count: 300) + ".pdf"
        try await TestServer.withServer { server in
            server.route("/quoted") { _ in
                TestServer.Response(headerFields: [.contentDisposition: #"attachment; filename="Q3; final \"draft\".pdf"; size=1"#], body: Data("x".utf8))
            }
            server.route("/long") { _ in
                TestServer.Response(headerFields: [.contentDisposition: "attachment; filename=\"\(long)\""], body: Data("x".utf8))
            }
            let quoted = try await CLIRunner.runWithOutputOnTerminal(["-d", server.url("/quoted").absoluteString], in: folder)
            #expect(quoted.status == 0, "\(quoted.standardError)")
            // Twice: the second name has room for its suffix.
            for _ in 0..<2 {
                let result = try await CLIRunner.runWithOutputOnTerminal(["-d", server.url("/long").absoluteString], in: folder)
                #expect(result.status == 0, "\(result.standardError)")
            }
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        let expected = [quotedName, String(repeating: "a", count: 251) + ".pdf", String(repeating: "a", count: 249) + ".pdf-1"]
        #expect(names == expected.sorted())

        #expect(Downloader.dispositionParameters(#"attachment; filename="a\\b.txt" ; x=1;y"#) == ["filename": #"a\b.txt"#, "x": "1"])
        #expect(Downloader.dispositionParameters("attachment; FILENAME=plain.txt ; filename=second") == ["filename": "plain.txt"])
        #expect(Downloader.fitted(String(repeating: "é", count: 200) + ".txt", toBytes: 255) == String(repeating: "é", count: 125) + ".txt")
        #expect(Downloader.fitted(String(repeating: "b", count: 300), toBytes: 255) == String(repeating: "b", count: 255))
        #expect(Downloader.fitted("short.txt", toBytes: 255) == "short.txt")
    }

    /// HTTPie strips the leading dots of a name from `Content-Disposition`: a server's
    /// `filename=".bashrc"` made a hidden file in the current folder.
    @Test("a name from Content-Disposition loses its leading dots")
    func dispositionNamesLoseLeadingDots() async throws {
        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await TestServer.withServer { server in
            server.route("/profile") { _ in
                TestServer.Response(headerFields: [.contentDisposition: "attachment; filename=\".bashrc\""], body: Data("x".utf8))
            }
            let result = try await CLIRunner.runWithOutputOnTerminal(["-d", server.url("/profile").absoluteString], in: folder)
            #expect(result.status == 0, "\(result.standardError)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["bashrc"])
        }
    }

    /// A name from the URL a redirect led to is decoded before its last component is taken: a
    /// redirect to `/d/..%2F..%2Fescaped.txt` wrote the body two folders up. Control characters
    /// in a server's name are written `%XX` (wget's default), in the file's name and the line
    /// that prints it.
    @Test("a server's file name stays in the current folder, without control characters")
    func aServersFileNameStaysHere() async throws {
        let outer = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(at: outer) }
        let folder = outer.appendingPathComponent("a/b")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try await TestServer.withServer { server in
            server.route("/x") { _ in TestServer.Response(status: .found, headerFields: [.location: "/d/..%2F..%2Fescaped.txt"], body: Data()) }
            server.route("/d/..%2F..%2Fescaped.txt") { _ in .text("escaped") }
            server.route("/bell") { _ in
                TestServer.Response(headerFields: [.contentDisposition: "attachment; filename*=UTF-8''x%1B%5D0%3Bpwned%07.txt"], body: Data("x".utf8))
            }
            let redirected = try await CLIRunner.runWithOutputOnTerminal(["-d", "-F", server.url("/x").absoluteString], in: folder)
            #expect(redirected.status == 0, "\(redirected.standardError)")
            #expect(!FileManager.default.fileExists(atPath: outer.appendingPathComponent("escaped.txt").path), "written two folders up")
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["escaped.txt"])
            let bell = try await CLIRunner.runWithOutputOnTerminal(["-d", server.url("/bell").absoluteString], in: folder)
            #expect(bell.status == 0, "\(bell.standardError)")
            #expect(!bell.standardError.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 }, "\(bell.standardError.debugDescription)")
            #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("x%1B]0;pwned%07.txt").path))
        }
        #expect(Downloader.safeFileName("..") == nil)
        #expect(Downloader.safeFileName("../..bashrc", droppingLeadingDots: true) == "bashrc")
        #expect(Downloader.safeFileName("...", droppingLeadingDots: true) == nil)
        #expect(Downloader.safeFileName("a/../") == nil)
        #expect(Downloader.safeFileName("nul\u{0}\u{85}") == "nul%00%85")
    }
}
