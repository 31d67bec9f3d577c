import CourierTesting
import Foundation
import Testing

/// Bad command lines: one clear line on standard error, the documented exit status, nothing on
/// standard output, never a crash.
@Suite("CLI: bad input")
struct BadInputTests {
    struct Case: Sendable, CustomStringConvertible {
        var arguments: [String]
        var status: Int32
        var message: String
        var description: String { self.arguments.joined(separator: " ") }
    }

    static let cases: [Case] = [
        Case(arguments: ["http://exa mple.com"], status: 64, message: "'http://exa mple.com' is not a valid URL"),
        Case(arguments: ["ftp://example.com/x"], status: 64, message: "'ftp://example.com/x': only http, https, http+unix and https+unix URLs are supported"),
        Case(arguments: ["example.com", "a:=not-json"], status: 64, message: "'a:=not-json': the value after ':=' is not valid JSON"),
        Case(arguments: ["example.com", "justaword"], status: 64, message: "'justaword' is not a request item"),
        Case(arguments: ["example.com", "=value"], status: 64, message: "'=value' has no name before its separator"),
        Case(arguments: ["example.com", "Bad Header:x"], status: 64, message: "'Bad Header:x': 'Bad Header' is not a valid header name"),
        Case(arguments: ["--form", "example.com", "a:=[1]"], status: 64, message: "'a': only a JSON string or number can go in a form (--form, --multipart), not an array"),
        Case(arguments: ["--multipart", "example.com", "a:=true"], status: 64, message: "'a': only a JSON string or number can go in a form (--form, --multipart), not a boolean"),
        Case(arguments: ["--form", "example.com", "f@/nonexistent/file"], status: 66, message: "cannot read '/nonexistent/file': no such file"),
        // HTTPie: "Invalid file fields (perhaps you meant --form?)"; courier sent them multipart.
        Case(arguments: ["example.com", "title=Q3", "report@/tmp/q3.pdf"], status: 64, message: "file fields need --form or --multipart (perhaps you meant --form?): report"),
        Case(arguments: ["--json", "example.com", "a@/tmp/a.txt", "b@/tmp/b.txt;type=text/plain"], status: 64, message: "file fields need --form or --multipart (perhaps you meant --form?): a, b"),
        Case(arguments: ["example.com", "f=@/nonexistent/file"], status: 66, message: "cannot read '/nonexistent/file': no such file"),
        Case(arguments: ["--timeout"], status: 64, message: "Missing value for '--timeout <seconds>'"),
        Case(arguments: ["--timeout", "soon", "example.com"], status: 64, message: "The value 'soon' is invalid for '--timeout <seconds>'"),
        Case(arguments: ["--frobnicate", "example.com"], status: 64, message: "Unknown option '--frobnicate'"),
        Case(arguments: [], status: 64, message: "missing URL"),
        Case(arguments: ["--resolve", "example.com:80", "example.com"], status: 64, message: "--resolve example.com:80: expected host:port:address[,address] (curl's form)"),
        Case(arguments: ["--resolve", "example.com:http:127.0.0.1", "example.com"], status: 64, message: "--resolve example.com:http:127.0.0.1: expected host:port:address[,address] (curl's form)"),
        Case(arguments: ["--resolve", "example.com:80:127.0.0.1,nowhere", "example.com"], status: 64, message: "--resolve example.com:80:127.0.0.1,nowhere: 'nowhere' is not an IP address"),
        Case(arguments: ["--auth", "justuser", "example.com"], status: 64, message: "--auth needs user:password"),
        Case(arguments: ["--continue", "example.com"], status: 64, message: "--continue needs --download and -o FILE"),
        Case(arguments: ["--pin-cert", "/nonexistent.pem", "https://example.com"], status: 66, message: "cannot read '/nonexistent.pem': no such file"),
        Case(arguments: ["--trailer", "Host:evil.example", "example.com", "a=b"], status: 64, message: "--trailer Host: HTTP forbids this field in a trailer"),
        Case(arguments: ["--trailer", "content-length:3", "example.com", "a=b"], status: 64, message: "--trailer content-length: HTTP forbids this field in a trailer"),
        Case(arguments: ["--trailer", "no-colon", "example.com", "a=b"], status: 64, message: "--trailer needs Name:value, not 'no-colon'"),
        Case(arguments: ["--trailer", "X-Sum:1", "example.com"], status: 64, message: "--trailer needs a body: data fields, a file or standard input"),
    ]

    @Test("Each bad command line", arguments: Self.cases)
    func badInput(_ bad: Case) async throws {
        let result = try await CLIRunner.run(["--offline"] + bad.arguments)
        #expect(result.status == bad.status)
        #expect(result.standardOutput.isEmpty)
        #expect(result.errorLines.count == 1, "\(result.standardError)")
        let line = try #require(result.errorLines.first)
        #expect(line.hasPrefix("courier: error: " + bad.message), "\(line)")
    }

    @Test("A refused connection: one line, exit 1")
    func refusedConnection() async throws {
        // Refused at once: the timeout only bounds a hang (5 s could pass first on a loaded
        // machine, exiting 2 instead).
        let result = try await CLIRunner.run(["--timeout", "60", "http://127.0.0.1:1/get"])
        #expect(result.status == 1)
        #expect(result.errorLines == ["courier: error: GET http://127.0.0.1:1/get: could not connect to 127.0.0.1:1"]
            || result.errorLines.count == 1)
        #expect(!result.standardError.contains("Fatal error"))
    }

    @Test("--help prints the usage and exits 0")
    func help() async throws {
        let result = try await CLIRunner.run(["--help"])
        #expect(result.status == 0)
        #expect(result.output.contains("courier [METHOD] URL [ITEM ...]"))
    }

    /// Standard output on a full device: status 1 and a line saying so (curl exits 23); the
    /// failure was passed over and the command exited 0.
    @Test func aFullStandardOutputIsAFailure() async throws {
        try await TestServer.withServer { server in
            let full = open("/dev/full", O_WRONLY)
            try #require(full >= 0)
            defer { close(full) }
            let child = try ChildProcess.spawn(
                CLIRunner.executable.path, ["--body", server.url("/get").absoluteString], standardOutput: .descriptor(full), standardError: .pipe)
            let errors = await CLIRunner.onOwnThread { Data(ChildProcess.readToEnd(child.standardError!)) }
            let status = await CLIRunner.waitForExit(child)
            #expect(status == 1)
            #expect(String(decoding: errors, as: UTF8.self).contains("cannot write to standard output: No space left on device"))
        }
    }
}
