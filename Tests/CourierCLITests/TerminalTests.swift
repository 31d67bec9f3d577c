import Courier
import CourierTesting
import Foundation
import Testing

/// On a terminal (a pseudo-terminal here): the head is shown, JSON is indented and coloured,
/// binary bodies are not written, downloads draw a progress bar.
@Suite("CLI: terminal output")
struct TerminalTests {
    @Test("JSON on a terminal: status line, head, indented and coloured body")
    func prettyJSON() async throws {
        try await TestServer.withServer { server in
            let result = try await CLIRunner.runOnTerminal([server.url("/get?q=1").absoluteString])
            #expect(result.status == 0)
            let text = result.output
            #expect(text.contains("\u{1B}[34mHTTP/1.1\u{1B}[0m \u{1B}[32m200 OK\u{1B}[0m"))
            #expect(text.contains("\u{1B}[36mContent-Type\u{1B}[0m: application/json"))
            #expect(text.contains("{\n    \u{1B}[34m\"args\"\u{1B}[0m: {\n        \u{1B}[34m\"q\"\u{1B}[0m: \u{1B}[33m\"1\"\u{1B}[0m\n    },"))
            let plain = try await CLIRunner.runOnTerminal(["--pretty", "format", server.url("/get?q=1").absoluteString])
            #expect(!plain.output.contains("\u{1B}["))
            #expect(plain.output.contains("{\n    \"args\": {\n        \"q\": \"1\"\n    },"))
        }
    }

    @Test("XML on a terminal is indented")
    func prettyXML() async throws {
        try await TestServer.withServer { server in
            let result = try await CLIRunner.runOnTerminal(["--pretty", "format", "--body", server.url("/xml").absoluteString])
            #expect(result.status == 0)
            #expect(result.output.contains("\n    <"))
        }
    }

    /// An entity that names a local file is shown as written, never read: with no options,
    /// `XMLDocument` substituted it, and the file's text was printed as the server's.
    @Test("XML's external entities are never loaded")
    func xmlEntitiesAreNotLoaded() async throws {
        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let secret = folder.appendingPathComponent("secret.txt")
        try Data("SECRET-LOCAL-FILE".utf8).write(to: secret)
        try await TestServer.withServer { server in
            server.route("/entity") { _ in
                TestServer.Response(
                    headerFields: [.contentType: "application/xml"],
                    body: Data(#"<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file://\#(secret.path)">]><r><a>&x;</a></r>"#.utf8))
            }
            let result = try await CLIRunner.runOnTerminal(["--pretty", "format", "--body", server.url("/entity").absoluteString])
            #expect(result.status == 0, "\(result.output)")
            #expect(!result.output.contains("SECRET-LOCAL-FILE"), "\(result.output)")
        }
    }

    @Test("Binary data is not written to a terminal")
    func binaryNote() async throws {
        try await TestServer.withServer { server in
            let result = try await CLIRunner.runOnTerminal(["--body", server.url("/image/png").absoluteString])
            #expect(result.status == 0)
            #expect(result.output.contains("NOTE: binary data not shown in terminal"))
            #expect(!result.output.contains("PNG"))
        }
    }

    @Test("A download on a terminal draws a progress bar that reaches 100%")
    func progressBar() async throws {
        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await TestServer.withServer { server in
            let file = TestServer.GeneratedFile(length: 1 << 20)
            let target = folder.appendingPathComponent("f.bin")
            let url = server.url(file.path(["rate": String(4 << 20)])).absoluteString
            let result = try await CLIRunner.runOnTerminal(["-d", "-o", target.path, url])
            #expect(result.status == 0)
            #expect(result.output.contains("\r100% [####################] 1.0 MiB / 1.0 MiB"))
            #expect(result.output.contains("Done. 1.0 MiB in "))
            #expect(CRC32.checksum(of: try Data(contentsOf: target)) == file.crc32())
        }
    }
}
