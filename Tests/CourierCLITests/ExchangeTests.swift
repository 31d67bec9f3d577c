import CompressNIO
import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import Testing

/// Requests against TestServer: each item kind and flag, exit statuses, piped output.
@Suite("CLI: requests against TestServer")
struct ExchangeTests {
    @Test("Query, JSON fields, raw JSON and headers reach the server; piped output is the body alone")
    func jsonRequest() async throws {
        try await TestServer.withServer { server in
            let result = try await CLIRunner.run([
                "POST", server.url("/post").absoluteString, "q==swift nio", "name=Ada", "age:=36", "tags:=[\"a\",1]",
                "X-Test:hello", "X-Empty;",
            ])
            #expect(result.status == 0)
            #expect(result.standardError.isEmpty)
            let echo = try jsonObject(result)
            #expect(echo["args"] as? [String: String] == ["q": "swift nio"])
            let json = try #require(echo["json"] as? [String: Any])
            #expect(json["name"] as? String == "Ada")
            #expect((json["age"] as? NSNumber)?.intValue == 36)
            #expect((json["tags"] as? [Any])?.count == 2)
            let headers = try #require(echo["headers"] as? [String: String])
            #expect(headers["X-Test"] == "hello")
            #expect(headers["X-Empty"] == "")
            #expect(headers["Content-Type"] == "application/json")
            #expect(headers["User-Agent"] == "courier/0.1.0")
        }
    }

    @Test("--form sends URL-encoded fields; name=@file and name:=@file read files")
    func formAndFileFields() async throws {
        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let text = folder.appendingPathComponent("bio.txt")
        try Data("likes engines".utf8).write(to: text)
        let json = folder.appendingPathComponent("list.json")
        try Data("[1, 2, 3]".utf8).write(to: json)
        try await TestServer.withServer { server in
            let form = try await CLIRunner.run(["--form", server.url("/post").absoluteString, "name=Ada Lovelace", "bio=@\(text.path)"])
            #expect(form.status == 0)
            #expect(try jsonObject(form)["form"] as? [String: String] == ["name": "Ada Lovelace", "bio": "likes engines"])

            let raw = try await CLIRunner.run([server.url("/post").absoluteString, "list:=@\(json.path)", "bio=@\(text.path)"])
            let echoed = try #require(try jsonObject(raw)["json"] as? [String: Any])
            #expect((echoed["list"] as? [NSNumber])?.map(\.intValue) == [1, 2, 3])
            #expect(echoed["bio"] as? String == "likes engines")
        }
    }

    @Test("field@path with --form makes a multipart request with the file and the fields")
    func multipart() async throws {
        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("report.txt")
        try Data("quarterly numbers".utf8).write(to: file)
        try await TestServer.withServer { server in
            let result = try await CLIRunner.run(["--form", server.url("/post").absoluteString, "title=Q3", "report@\(file.path)"])
            #expect(result.status == 0)
            let echo = try jsonObject(result)
            #expect(echo["form"] as? [String: String] == ["title": "Q3"])
            #expect(echo["files"] as? [String: String] == ["report": "quarterly numbers"])
            let headers = try #require(echo["headers"] as? [String: String])
            #expect(headers["Content-Type"]?.hasPrefix("multipart/form-data; boundary=") == true)
        }
    }

    @Test("--auth and --bearer")
    func authentication() async throws {
        try await TestServer.withServer { server in
            let good = try await CLIRunner.run(["--check-status", "--auth", "ann:secret", server.url("/basic-auth/ann/secret").absoluteString])
            #expect(good.status == 0)
            #expect(try jsonObject(good)["authenticated"] as? Bool == true)
            let bad = try await CLIRunner.run(["--check-status", "--auth", "ann:wrong", server.url("/basic-auth/ann/secret").absoluteString])
            #expect(bad.status == 4)
            #expect(bad.errorLines == ["courier: warning: HTTP 401 Unauthorized"])
            let bearer = try await CLIRunner.run(["--bearer", "t0k3n", server.url("/headers").absoluteString])
            #expect((try jsonObject(bearer)["headers"] as? [String: String])?["Authorization"] == "Bearer t0k3n")
            // HTTPie's spelling: -A bearer -a TOKEN (refused as an --auth-type before).
            let typed = try await CLIRunner.run(["-A", "bearer", "-a", "t0k:3n", server.url("/headers").absoluteString])
            #expect(typed.status == 0, "\(typed.standardError)")
            #expect((try jsonObject(typed)["headers"] as? [String: String])?["Authorization"] == "Bearer t0k:3n")
        }
    }

    /// HTTPie's `--print`/`-p` letters (H request head, B request body, h response head, b
    /// response body, m metadata: courier's metrics) were not taken: the command line was refused.
    @Test("--print chooses the parts printed, over --verbose; an unknown letter is a bad command line")
    func printChoosesTheParts() async throws {
        try await TestServer.withServer { server in
            let url = server.url("/post").absoluteString
            let requestBody = try await CLIRunner.run(["-p", "B", url, "a=1"])
            #expect(requestBody.status == 0, "\(requestBody.standardError)")
            #expect(requestBody.output == "{\"a\": \"1\"}\n\n", "\(requestBody.output)")

            let heads = try await CLIRunner.run(["--print", "Hh", url, "a=1"])
            #expect(heads.status == 0, "\(heads.standardError)")
            #expect(heads.output.hasPrefix("POST /post HTTP/1.1\n"), "\(heads.output)")
            #expect(heads.output.contains("\n\nHTTP/1.1 200 OK\n"), "\(heads.output)")
            #expect(!heads.output.contains("{"), "no body: \(heads.output)")

            let responseHead = try await CLIRunner.run(["-v", "-p", "h", url, "a=1"])
            #expect(responseHead.output.hasPrefix("HTTP/1.1 200 OK\n"), "\(responseHead.output)")
            #expect(!responseHead.output.contains("POST /post"), "\(responseHead.output)")

            // The metrics of the whole exchange: the body is read, not printed.
            let metadata = try await CLIRunner.run(["-p", "m", url, "a=1"])
            #expect(metadata.status == 0, "\(metadata.standardError)")
            #expect(metadata.output.hasPrefix("* POST \(url) 200"), "\(metadata.output)")
            #expect(!metadata.output.contains("{"), "no body: \(metadata.output)")

            let offline = try await CLIRunner.run(["--offline", "-p", "B", url, "a=1"])
            #expect(offline.output == "{\"a\": \"1\"}\n\n", "\(offline.output)")

            let unknown = try await CLIRunner.run(["-p", "hx", url])
            #expect(unknown.status == 64)
            #expect(unknown.errorLines.first?.hasPrefix("courier: error: --print hx: unknown output option 'x'") == true, "\(unknown.standardError)")
        }
    }

    /// HTTPie sends `Accept: */*` (its HTTP library's default) unless the request is JSON, which
    /// asks for `application/json, */*;q=0.5`; courier sent no `Accept` but with JSON.
    @Test("Accept is */* by default and JSON's with JSON data or --json; an Accept item replaces or drops it")
    func defaultAccept() async throws {
        try await TestServer.withServer { server in
            let url = server.url("/anything").absoluteString
            func accept(_ arguments: [String]) async throws -> String? {
                let result = try await CLIRunner.run(arguments)
                #expect(result.status == 0, "\(result.standardError)")
                return (try jsonObject(result)["headers"] as? [String: String])?["Accept"]
            }
            let plain = try await accept([url])
            #expect(plain == "*/*")
            let post = try await accept(["POST", url])
            #expect(post == "*/*")
            let jsonItems = try await accept([url, "a=1"])
            #expect(jsonItems == "application/json, */*;q=0.5")
            let jsonFlag = try await accept(["--json", url])
            #expect(jsonFlag == "application/json, */*;q=0.5")
            let form = try await accept(["--form", url, "a=1"])
            #expect(form == "*/*")
            let multipart = try await accept(["--multipart", url, "a=1"])
            #expect(multipart == "*/*")
            let given = try await accept([url, "a=1", "Accept:text/html"])
            #expect(given == "text/html")
            let dropped = try await accept([url, "Accept:"])
            #expect(dropped == nil)
        }
    }

    /// `User-Agent:` and `Accept-Encoding:` (HTTPie's way to drop a field) dropped only what the
    /// command set: the engine added the library's `User-Agent` (which names the OS version) and
    /// its `Accept-Encoding: deflate, gzip`, and `--verbose` showed a request that was not the one sent.
    @Test("User-Agent: and Accept-Encoding: send neither field, and --verbose shows neither")
    func droppedFieldsAreNotSent() async throws {
        try await TestServer.withServer { server in
            let url = server.url("/headers").absoluteString
            let result = try await CLIRunner.run([url, "User-Agent:", "Accept-Encoding:"])
            #expect(result.status == 0, "\(result.standardError)")
            let headers = try #require(try jsonObject(result)["headers"] as? [String: String])
            #expect(headers["User-Agent"] == nil, "\(headers)")
            #expect(headers["Accept-Encoding"] == nil, "\(headers)")

            let verbose = try await CLIRunner.run(["--verbose", url, "User-Agent:", "Accept-Encoding:"])
            #expect(verbose.status == 0, "\(verbose.standardError)")
            let requestHead = verbose.output.components(separatedBy: "\n\n").first ?? ""
            #expect(requestHead == "GET /headers HTTP/1.1\nHost: 127.0.0.1:\(server.port)\nAccept: */*", "\(requestHead)")

            // Given again after it was dropped, a field goes as given.
            let again = try await CLIRunner.run([url, "User-Agent:", "User-Agent:mine", "Accept-Encoding:", "Accept-Encoding:gzip"])
            let echoed = try #require(try jsonObject(again)["headers"] as? [String: String])
            #expect(echoed["User-Agent"] == "mine")
            #expect(echoed["Accept-Encoding"] == "gzip")
        }
    }

    /// The engine asks for no encoding with a `Range` (``NIOEngine/Decompression``); `--verbose`
    /// showed the `Accept-Encoding` it adds otherwise.
    @Test("--verbose with a Range item shows no Accept-Encoding, as none is sent")
    func verboseWithARangeShowsNoAcceptEncoding() async throws {
        try await TestServer.withServer { server in
            let url = server.url("/headers").absoluteString
            let verbose = try await CLIRunner.run(["--verbose", url, "Range:bytes=0-9"])
            #expect(verbose.status == 0, "\(verbose.standardError)")
            let requestHead = verbose.output.components(separatedBy: "\n\n").first ?? ""
            #expect(requestHead.contains("\nRange: bytes=0-9"), "\(requestHead)")
            #expect(!requestHead.contains("Accept-Encoding"), "\(requestHead)")
            let echo = try await CLIRunner.run([url, "Range:bytes=0-9"])
            let headers = try #require(try jsonObject(echo)["headers"] as? [String: String])
            #expect(headers["Range"] == "bytes=0-9")
            #expect(headers["Accept-Encoding"] == nil, "\(headers)")
        }
    }

    @Test("--check-status: 3xx, 4xx and 5xx exit 3, 4 and 5; without it they exit 0")
    func checkStatus() async throws {
        try await TestServer.withServer { server in
            for (path, status) in [("/status/200", Int32(0)), ("/redirect/1", 3), ("/status/404", 4), ("/status/503", 5)] {
                let checked = try await CLIRunner.run(["--check-status", server.url(path).absoluteString])
                #expect(checked.status == status, "\(path)")
                let unchecked = try await CLIRunner.run([server.url(path).absoluteString])
                #expect(unchecked.status == 0, "\(path)")
            }
        }
    }

    /// HTTPie counts a 3xx as an error only without `--follow`: with it, a 3xx that is not a
    /// redirect to follow is the answer. It exited 3.
    @Test("--check-status --follow: a final 3xx exits 0; without --follow it exits 3")
    func checkStatusWithFollow() async throws {
        try await TestServer.withServer { server in
            let followed = try await CLIRunner.run(["--check-status", "--follow", server.url("/status/300").absoluteString])
            #expect(followed.status == 0, "\(followed.standardError)")
            let unfollowed = try await CLIRunner.run(["--check-status", server.url("/status/300").absoluteString])
            #expect(unfollowed.status == 3)
        }
    }

    /// HTTPie's `--output` without `--download` replaces standard output; it was refused (64).
    @Test("-o without --download writes the output to the file")
    func outputWithoutDownload() async throws {
        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let target = folder.appendingPathComponent("out.json")
        try Data("old contents, longer than the new ones will be".utf8).write(to: target)
        try await TestServer.withServer { server in
            let result = try await CLIRunner.run(["-o", target.path, server.url("/get").absoluteString])
            #expect(result.status == 0, "\(result.standardError)")
            #expect(result.standardOutput.isEmpty)
            let echo = try JSONSerialization.jsonObject(with: Data(contentsOf: target)) as? [String: Any]
            #expect(echo?["url"] as? String == server.url("/get").absoluteString)
        }
    }

    @Test("--verbose --follow shows the request that got the response, after the URL it was redirected from")
    func verboseFollowShowsTheLastRequest() async throws {
        try await TestServer.withServer { server in
            let start = server.url("/redirect/2").absoluteString
            let result = try await CLIRunner.run(["--verbose", "--follow", start])
            #expect(result.status == 0, "\(result.standardError)")
            #expect(result.output.hasPrefix("* followed redirects from GET \(start)\nGET /get HTTP/1.1\nHost: 127.0.0.1:\(server.port)\n"), "\(result.output)")
            #expect(result.output.contains("\nHTTP/1.1 200 OK\n"))
        }
    }

    @Test("--follow follows redirects; more than --max-redirects exits 6")
    func redirects() async throws {
        try await TestServer.withServer { server in
            let followed = try await CLIRunner.run(["--follow", "--check-status", server.url("/redirect/2").absoluteString])
            #expect(followed.status == 0)
            #expect(try jsonObject(followed)["url"] as? String == server.url("/get").absoluteString)
            let tooMany = try await CLIRunner.run(["--follow", "--max-redirects", "1", server.url("/redirect/3").absoluteString])
            #expect(tooMany.status == 6)
            #expect(tooMany.errorLines.count == 1)
            #expect(tooMany.errorLines.first?.hasPrefix("courier: error: ") == true)
        }
    }

    @Test("--timeout: a server that does not answer in time exits 2")
    func timeout() async throws {
        try await TestServer.withServer { server in
            // Answered after 10 s: a wide margin for the 0.3 s on a loaded machine, and an
            // answer (exit 0) were --timeout not applied.
            let result = try await CLIRunner.run(["--timeout", "0.3", server.url("/delay/10").absoluteString])
            #expect(result.status == 2)
            #expect(result.errorLines.count == 1)
        }
    }

    @Test("--headers, --body and --verbose choose what is printed")
    func outputParts() async throws {
        try await TestServer.withServer { server in
            let url = server.url("/response-headers?X-Mark=1").absoluteString
            let headers = try await CLIRunner.run(["--headers", url])
            #expect(headers.output.hasPrefix("HTTP/1.1 200 OK\n"))
            #expect(headers.output.contains("X-Mark: 1\n"))
            #expect(headers.output.hasSuffix("\n\n"))
            #expect(!headers.output.contains("{"))

            let body = try await CLIRunner.run(["--body", url])
            #expect(body.output.hasPrefix("{"))

            let verbose = try await CLIRunner.run(["--verbose", server.url("/post").absoluteString, "a=b"])
            let text = verbose.output
            let requestLine = try #require(text.range(of: "POST /post HTTP/1.1\n"))
            let bodyLine = try #require(text.range(of: "{\"a\": \"b\"}\n\n"))
            let statusLine = try #require(text.range(of: "HTTP/1.1 200 OK\n"))
            #expect(requestLine.lowerBound < bodyLine.lowerBound)
            #expect(bodyLine.lowerBound < statusLine.lowerBound)
            #expect(text.contains("\"json\""))
        }
    }

    @Test("--verbose shows the Expect: 100-continue the engine adds to a body of 1 MiB or more over HTTP/1.1, and none to a small one")
    func verboseShowsTheExpectation() async throws {
        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let large = folder.appendingPathComponent("large.txt")
        try Data(repeating: UInt8(ascii: "a"), count: (1 << 20) + 1).write(to: large)
        try await TestServer.withServer { server in
            let url = server.url("/post").absoluteString
            let announced = try await CLIRunner.run(["--verbose", url, "text=@\(large.path)"])
            #expect(announced.status == 0, "\(announced.standardError)")
            let head = try #require(announced.output.components(separatedBy: "\n\n").first)
            #expect(head.contains("\nExpect: 100-continue"), "\(head)")
            let small = try await CLIRunner.run(["--verbose", url, "a=b"])
            #expect(!small.output.contains("Expect:"))
        }
    }

    @Test("Piped output is the server's bytes, unmodified (no colour, no re-indentation)")
    func pipedBytesAreUnmodified() async throws {
        try await TestServer.withServer { server in
            let direct = try await fetchWithLibrary(server.url("/json"))
            let piped = try await CLIRunner.run([server.url("/json").absoluteString])
            #expect(piped.standardOutput == direct)
            let binary = try await CLIRunner.run([server.url("/bytes/70000?seed=7").absoluteString])
            #expect(binary.standardOutput == (try await fetchWithLibrary(server.url("/bytes/70000?seed=7"))))
        }
    }
    @Test("A body that inflates past the library's default ratio is printed whole, as curl and HTTPie print it")
    func aBodyThatCompressesVeryWellIsPrintedWhole() async throws {
        try await TestServer.withServer { server in
            // About 1,000 to 1: the library's default (100) refuses it; an 11 MB log file Apache
            // gzipped 343 to 1 failed so in the command before.
            let text = Data(repeating: UInt8(ascii: "a"), count: 4 << 20)
            var input = ByteBuffer(bytes: text)
            let gzip = Data(try input.compress(with: .gzip, configuration: ZlibConfiguration()).readableBytesView)
            server.route("/log") { _ in TestServer.Response(headerFields: [.contentType: "text/plain", .contentEncoding: "gzip"], body: gzip) }
            let result = try await CLIRunner.run([server.url("/log").absoluteString])
            #expect(result.status == 0, "\(result.standardError)")
            #expect(result.standardOutput == text)
        }
    }
    @Test("--verbose piped: a body without a final newline gets one before the metrics, one that has one gets none more")
    func verboseMetricsStartOnALineOfTheirOwn() async throws {
        try await TestServer.withServer { server in
            server.route("/bare") { _ in TestServer.Response(headerFields: [.contentType: "text/plain"], body: Data("hello".utf8)) }
            server.route("/line") { _ in TestServer.Response(headerFields: [.contentType: "text/plain"], body: Data("hello\n".utf8)) }
            let bare = try await CLIRunner.run(["--verbose", server.url("/bare").absoluteString])
            #expect(bare.status == 0)
            #expect(bare.output.contains("\nhello\n* "), "\(bare.output)")
            let line = try await CLIRunner.run(["--verbose", server.url("/line").absoluteString])
            #expect(line.output.contains("\nhello\n* "), "\(line.output)")
        }
    }
    @Test("--auth-type digest answers the server's Digest challenge (nothing is sent before it); Basic, the default, cannot")
    func digestAuthentication() async throws {
        try await TestServer.withServer { server in
            let sent = NIOLockedValueBox<[String?]>([])
            server.route("/digest") { request in
                let authorization = request.value(forHTTPHeaderField: "Authorization")
                sent.withLockedValue { $0.append(authorization) }
                guard let authorization, authorization.hasPrefix("Digest "), authorization.contains(#"username="ann""#),
                    authorization.contains(#"nonce="n1""#)
                else {
                    return TestServer.Response(
                        status: .unauthorized, headerFields: [.wwwAuthenticate: #"Digest realm="r", qop="auth", algorithm=SHA-256, nonce="n1""#])
                }
                return TestServer.Response(headerFields: [.contentType: "text/plain"], body: Data("ok".utf8))
            }
            let url = server.url("/digest").absoluteString
            let digest = try await CLIRunner.run(["--check-status", "--auth-type", "digest", "--auth", "ann:secret", url])
            #expect(digest.status == 0, "\(digest.standardError)")
            #expect(digest.output == "ok")
            #expect(sent.withLockedValue { $0.first } == .some(nil), "no credentials before the challenge")
            let basic = try await CLIRunner.run(["--check-status", "--auth", "ann:secret", url])
            #expect(basic.status == 4)
            let alone = try await CLIRunner.run(["-A", "digest", url])
            #expect(alone.status == 64, "--auth-type needs --auth")
        }
    }
}
