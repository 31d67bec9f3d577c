import CourierTesting
import Foundation
import Testing

/// `--trailer Name:value`: trailer fields after the request body, as the server received them.
@Suite("CLI: --trailer")
struct TrailerTests {
    @Test("--trailer sends its fields after a JSON body and after a multipart body streamed from a file")
    func trailersReachTheServer() async throws {
        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("report.txt")
        try Data("quarterly numbers".utf8).write(to: file)
        try await TestServer.withServer { server in
            let json = try await CLIRunner.run([
                "PUT", server.url("/anything").absoluteString, "name=Ada", "--trailer", "Courier-Checksum:crc32=1", "--trailer", "Server-Timing: client;dur=3",
            ])
            #expect(json.status == 0, "\(json.standardError)")
            let echo = try jsonObject(json)
            #expect(echo["trailers"] as? [String: String] == ["Courier-Checksum": "crc32=1", "Server-Timing": "client;dur=3"])
            #expect((echo["json"] as? [String: Any])?["name"] as? String == "Ada")

            let multipart = try await CLIRunner.run(["--form", server.url("/post").absoluteString, "report@\(file.path)", "--trailer", "Courier-Checksum:crc32=2"])
            #expect(multipart.status == 0, "\(multipart.standardError)")
            let form = try jsonObject(multipart)
            #expect(form["trailers"] as? [String: String] == ["Courier-Checksum": "crc32=2"])
            #expect((form["files"] as? [String: String])?["report"] == "quarterly numbers")
        }
    }

    @Test("The response's trailer fields are printed after its body when its head is (--headers --body, -v), and not with the body alone")
    func responseTrailersArePrintedAfterTheBody() async throws {
        try await TestServer.withServer { server in
            let url = server.url("/courier/trailers").absoluteString
            let shown = try await CLIRunner.run(["--headers", "--body", url])
            #expect(shown.status == 0, "\(shown.standardError)")
            #expect(shown.output.contains("the fields that describe this body follow it\n\nCourier-Checksum: crc32="), "\(shown.output)")
            #expect(shown.output.hasSuffix("Server-Timing: total;dur=1\n\n"), "\(shown.output)")
            let bodyOnly = try await CLIRunner.run([url])
            #expect(bodyOnly.status == 0)
            #expect(bodyOnly.output == "the fields that describe this body follow it\n")
        }
    }

    @Test("--verbose over HTTP/2 shows the Trailer field and no Transfer-Encoding, which HTTP/2 does not send")
    func verboseOverHTTP2ShowsNoChunkedFraming() async throws {
        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let root = try writeTestRoot(in: folder)
        try await TestServer.withServer(.https()) { server in
            let url = server.url("/anything").absoluteString
            let result = try await CLIRunner.run(["--cacert", root.path, "--verbose", "PUT", url, "name=Ada", "--trailer", "Courier-Checksum:crc32=1"])
            #expect(result.status == 0, "\(result.standardError)")
            #expect(result.output.hasPrefix("PUT /anything HTTP/2\n"), "\(result.output)")
            let requestHead = result.output.components(separatedBy: "\n\n").first ?? ""
            #expect(requestHead.contains("\nTrailer: Courier-Checksum"))
            #expect(!requestHead.contains("Transfer-Encoding"), "\(requestHead)")
            let echo = result.output.components(separatedBy: "\n\n").first { $0.hasPrefix("{") } ?? ""
            #expect(!echo.contains("Transfer-Encoding"), "the server got none either: \(echo)")
        }
    }

    @Test("--offline shows the chunked head, the Trailer field and the trailers after the body")
    func offline() async throws {
        let result = try await CLIRunner.run(["--offline", "PUT", "example.com/items", "name=Ada", "--trailer", "Courier-Checksum:crc32=1"])
        #expect(result.status == 0)
        #expect(
            result.output == """
                PUT /items HTTP/1.1
                Host: example.com
                User-Agent: courier/0.1.0
                Content-Type: application/json
                Accept: application/json, */*;q=0.5
                Trailer: Courier-Checksum
                Transfer-Encoding: chunked

                {"name": "Ada"}

                Courier-Checksum: crc32=1


                """)
    }

    @Test("--curl leaves the trailers out and says so")
    func curl() async throws {
        let result = try await CLIRunner.run(["--curl", "PUT", "example.com/items", "name=Ada", "--trailer", "Courier-Checksum:crc32=1"])
        #expect(result.status == 0)
        #expect(result.errorLines == ["courier: warning: curl cannot send trailer fields; the --trailer fields are left out"])
        #expect(!result.output.contains("Courier-Checksum"))
    }
}
