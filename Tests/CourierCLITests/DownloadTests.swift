import Courier
@testable import CourierCLI
import CourierTesting
import Foundation
import NIOConcurrencyHelpers
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

    @Test("Without -o the file is named from the URL, and an existing name gets a suffix")
    func namesTheFile() async throws {
        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await TestServer.withServer { server in
            let url = server.url("/bytes/100?seed=1").absoluteString
            #expect(try await CLIRunner.run(["-d", url], in: folder).status == 0)
            #expect(try await CLIRunner.run(["-d", url], in: folder).status == 0)
            let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
            #expect(names == ["100", "100-1"])
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

    @Test(
        "A full disk exits 1 naming the file it could not write",
        .enabled(if: ProcessInfo.processInfo.environment["COURIER_TINY_FS"] != nil, "COURIER_TINY_FS names no small file system (.ci/run mounts one)")
    )
    func fullDisk() async throws {
        let tiny = URL(fileURLWithPath: ProcessInfo.processInfo.environment["COURIER_TINY_FS"]!)
        let folder = tiny.appendingPathComponent("cli-\(UUID().uuidString)")
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
}
