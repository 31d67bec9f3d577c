import CourierTesting
import Foundation
import Testing

/// Standard input as the body: `courier POST URL < file`, read only when a method that carries a
/// body is named and no item is data.
@Suite("CLI: standard input as the body")
struct StandardInputTests {
    @Test("POST and PUT send standard input's bytes as JSON unless a Content-Type item says otherwise")
    func namedMethodsSendStandardInput() async throws {
        try await TestServer.withServer { server in
            let url = server.url("/anything").absoluteString
            let post = try await CLIRunner.run(["POST", url], input: "{\"name\": \"Ada\"}\n")
            #expect(post.status == 0)
            #expect(post.standardError.isEmpty)
            let echo = try jsonObject(post)
            #expect(echo["method"] as? String == "POST")
            #expect(echo["data"] as? String == "{\"name\": \"Ada\"}\n")
            #expect((echo["json"] as? [String: String]) == ["name": "Ada"])
            #expect((echo["headers"] as? [String: String])?["Content-Type"] == "application/json")

            let put = try await CLIRunner.run(["put", url, "Content-Type:text/plain", "q==1"], input: "plain words")
            #expect(put.status == 0)
            let putEcho = try jsonObject(put)
            #expect(putEcho["method"] as? String == "PUT")
            #expect(putEcho["data"] as? String == "plain words")
            #expect(putEcho["args"] as? [String: String] == ["q": "1"])
            #expect((putEcho["headers"] as? [String: String])?["Content-Type"] == "text/plain")

            let form = try await CLIRunner.run(["--form", "PATCH", url], input: "a=1&b=2")
            #expect(try jsonObject(form)["form"] as? [String: String] == ["a": "1", "b": "2"])
        }
    }

    @Test("Standard input is left alone without a named method, for GET and DELETE, beside data items and with --ignore-stdin")
    func standardInputIsLeftAlone() async throws {
        try await TestServer.withServer { server in
            let url = server.url("/anything").absoluteString
            // `while read url; do courier "$url"; done < urls`: each run's standard input is the loop's file.
            let unnamed = try jsonObject(try await CLIRunner.run([url], input: "the loop's next line\n"))
            #expect(unnamed["method"] as? String == "GET")
            #expect(unnamed["data"] as? String == "")
            for method in ["GET", "DELETE"] {
                let echo = try jsonObject(try await CLIRunner.run([method, url], input: "not a body"))
                #expect(echo["method"] as? String == method)
                #expect(echo["data"] as? String == "")
            }
            let items = try jsonObject(try await CLIRunner.run(["POST", url, "name=Ada"], input: "not a body"))
            #expect(items["json"] as? [String: String] == ["name": "Ada"])
            let ignored = try jsonObject(try await CLIRunner.run(["--ignore-stdin", "POST", url], input: "not a body"))
            #expect(ignored["method"] as? String == "POST")
            #expect(ignored["data"] as? String == "")
            // HTTPie's short spelling (an unknown option before).
            let short = try jsonObject(try await CLIRunner.run(["-I", "POST", url], input: "not a body"))
            #expect(short["data"] as? String == "")
        }
    }

    @Test("--multipart with a body on standard input is a bad command line; --offline shows the body")
    func badCombinationsAndOffline() async throws {
        let multipart = try await CLIRunner.run(["--multipart", "POST", "example.com/up"], input: "bytes")
        #expect(multipart.status == 64)
        #expect(multipart.errorLines == [
            "courier: error: a body from standard input cannot be a multipart form; --ignore-stdin leaves standard input alone"
        ])
        let offline = try await CLIRunner.run(["--offline", "POST", "example.com/up"], input: "[1, 2]")
        #expect(offline.status == 0)
        #expect(offline.output.hasPrefix("POST /up HTTP/1.1\n"))
        #expect(offline.output.contains("Content-Length: 6\n"))
        #expect(offline.output.contains("\n\n[1, 2]"))
    }

    /// The bytes of a body over the 1 MiB read whole: a pattern, so that a chunk sent twice or
    /// out of order changes the checksum.
    static func largeBody(_ count: Int) -> String {
        var bytes = [UInt8](repeating: 0, count: count)
        for index in 0..<count {
            let letter = (index / 7 + index) % 26
            bytes[index] = UInt8(97 + letter)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test("A body of more than 1 MiB from a pipe is streamed as it is read: chunked, not read whole first for a Content-Length")
    func aLargePipedBodyIsStreamed() async throws {
        try await TestServer.withServer { server in
            let url = server.url("/courier/upload").absoluteString
            let body = Self.largeBody(3 << 20 + 5)
            let result = try await CLIRunner.run(["PUT", url, "Content-Type:application/octet-stream"], input: body)
            #expect(result.status == 0, "\(result.standardError)")
            let echo = try jsonObject(result)
            #expect(echo["chunked"] as? Bool == true)
            #expect(echo["content_length"] is NSNull)
            #expect(echo["size"] as? Int == 3 << 20 + 5)
            #expect(echo["crc32"] as? String == CRC32.checksum(of: Array(body.utf8)).hex)

            // `--verbose` shows that it went out streamed, and the small body as before.
            let verbose = try await CLIRunner.run(["-v", "--pretty", "none", "PUT", url, "Content-Type:text/plain"], input: body)
            #expect(verbose.status == 0, "\(verbose.standardError)")
            #expect(verbose.output.contains("\n(a body streamed from standard input, not shown)\n"), "\(verbose.output.prefix(600))")
            #expect(!verbose.output.contains(String(body.prefix(100))))
        }
    }

    @Test("A large regular file on standard input keeps its Content-Length, is sent from where standard input stands, and again after a 307")
    func aLargeFileOnStandardInputKeepsItsLength() async throws {
        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("body.bin")
        let bytes = Array(Self.largeBody(2 << 20 + 1000).utf8)
        try Data(bytes).write(to: file)
        try await TestServer.withServer { server in
            for redirected in [false, true] {
                let handle = try FileHandle(forReadingFrom: file)
                defer { try? handle.close() }
                // As `{ head -c 1000 >/dev/null; courier PUT URL; } < body.bin` leaves it.
                try handle.seek(toOffset: 1000)
                let url = redirected
                    ? server.url("/redirect-to?url=/courier/upload&status_code=307").absoluteString
                    : server.url("/courier/upload").absoluteString
                let result = try await CLIRunner.run(
                    (redirected ? ["--follow"] : []) + ["PUT", url, "Content-Type:application/octet-stream"],
                    inputDescriptor: handle.fileDescriptor)
                #expect(result.status == 0, "\(result.standardError)")
                let echo = try jsonObject(result)
                #expect(echo["content_length"] as? Int == 2 << 20, "redirected: \(redirected)")
                #expect(echo["chunked"] as? Bool == false)
                #expect(echo["size"] as? Int == 2 << 20)
                #expect(echo["crc32"] as? String == CRC32.checksum(of: bytes[1000...]).hex)
            }
        }
    }

    @Test("Expect: drops the Expect: 100-continue the engine adds to a body of 1 MiB or more")
    func anEmptyExpectItemDropsTheEnginesExpectation() async throws {
        try await TestServer.withServer { server in
            let url = server.url("/anything").absoluteString
            let large = String(repeating: "x", count: 1 << 20)
            let announced = try jsonObject(try await CLIRunner.run(["POST", url, "Content-Type:text/plain"], input: large))
            #expect((announced["headers"] as? [String: String])?["Expect"] == "100-continue")
            let dropped = try jsonObject(try await CLIRunner.run(["POST", url, "Content-Type:text/plain", "Expect:"], input: large))
            #expect((dropped["headers"] as? [String: String])?["Expect"] == nil)
            #expect((dropped["data"] as? String)?.count == 1 << 20)
        }
    }
}
