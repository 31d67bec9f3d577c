@testable import CourierCLI
import CourierTesting
import Foundation
import Testing

/// Request items read as HTTPie reads them (https://httpie.io/docs/cli/request-items), without a
/// process: the parsing is pure.
@Suite("CLI: request items")
struct RequestItemTests {
    /// HTTPie drops a backslash before a separator's character in the value too, and keeps one
    /// before any other character: the value kept its backslashes (`a=\@b` sent `\@b`), and the
    /// name lost the backslash before an ordinary character.
    @Test("A backslash makes a separator's character literal in the name and the value; before other characters it stays")
    func backslashEscapes() throws {
        #expect(try RequestItem(parsing: #"a=\@b"#) == .field(name: "a", value: "@b"))
        #expect(try RequestItem(parsing: #"token=x\=y"#) == .field(name: "token", value: "x=y"))
        #expect(try RequestItem(parsing: #"X-Pair:a\:b"#) == .header(name: "X-Pair", value: "a:b"))
        #expect(try RequestItem(parsing: #"foo\==bar"#) == .field(name: "foo=", value: "bar"))
        #expect(try RequestItem(parsing: #"path=C:\Users\x"#) == .field(name: "path", value: #"C:\Users\x"#))
        #expect(try RequestItem(parsing: #"a\b=1"#) == .field(name: #"a\b"#, value: "1"))
        #expect(try RequestItem(parsing: #"a=b\"#) == .field(name: "a", value: #"b\"#))
    }
}

/// HTTPie 3's file separators for headers and query parameters.
@Suite("CLI: Header:@file and name==@file")
struct EmbeddedFileItemTests {
    /// `X-Data:@file` was the header value `@file`, and `q==@file` the query value `@file`.
    @Test("Header:@file and name==@file are read from the file, its trailing line feeds removed")
    func headerAndQueryFromFiles() async throws {
        #expect(try RequestItem(parsing: "X-Data:@token.txt") == .headerFromFile(name: "X-Data", path: "token.txt"))
        #expect(try RequestItem(parsing: "text==@query.txt") == .queryFromFile(name: "text", path: "query.txt"))
        #expect(try RequestItem(parsing: #"X-Data:\@literal"#) == .header(name: "X-Data", value: "@literal"))
        #expect(try RequestItem(parsing: #"q==\@literal"#) == .query(name: "q", value: "@literal"))

        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let token = folder.appendingPathComponent("token.txt")
        try Data("secret token\n\n".utf8).write(to: token)
        let query = folder.appendingPathComponent("query.txt")
        try Data("a b\n".utf8).write(to: query)
        let result = try await CLIRunner.run(["--offline", "example.com/x", "X-Data:@\(token.path)", "text==@\(query.path)"])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(
            result.output == "GET /x?text=a%20b HTTP/1.1\nHost: example.com\nUser-Agent: courier/0.1.0\nAccept: */*\nX-Data: secret token\n\n",
            "\(result.output)")
    }
}

/// File paths in items, as HTTPie opens them.
@Suite("CLI: file paths in items")
struct ItemFilePathTests {
    /// A shell does not expand `~` after `@` or `=@` (HTTPie's example `cv@~/files/data.xml`):
    /// courier looked for a folder named `~`.
    @Test("A path that starts with ~ names the home folder")
    func tildeIsTheHomeFolder() throws {
        let home = NSString(string: "~/files/data.xml").expandingTildeInPath
        #expect(!home.hasPrefix("~"))
        #expect(try RequestItem(parsing: "cv@~/files/data.xml") == .file(name: "cv", path: home, mimeType: nil))
        #expect(try RequestItem(parsing: "cv@~/files/data.xml;type=text/xml") == .file(name: "cv", path: home, mimeType: "text/xml"))
        #expect(try RequestItem(parsing: "bio=@~/files/data.xml") == .fieldFromFile(name: "bio", path: home))
        #expect(try RequestItem(parsing: "doc:=@~/files/data.xml") == .rawJSONFromFile(name: "doc", path: home))
        #expect(try RequestItem(parsing: "X-A:@~/files/data.xml") == .headerFromFile(name: "X-A", path: home))
        #expect(try RequestItem(parsing: "q==@~/files/data.xml") == .queryFromFile(name: "q", path: home))
        #expect(try RequestItem(parsing: "cv@files/~x") == .file(name: "cv", path: "files/~x", mimeType: nil))
    }
}

/// HTTPie lets a raw JSON string or number into a form (https://httpie.io/docs/cli/non-string-json-fields).
@Suite("CLI: raw JSON in forms")
struct RawJSONInFormsTests {
    /// `--form a:=1` was refused (64).
    @Test("--form and --multipart take a raw JSON string or number as its text")
    func stringsAndNumbers() async throws {
        let form = try await CLIRunner.run(["--offline", "--form", "example.com/f", "a:=1", #"b:="x y""#, "c:=-1.50"])
        #expect(form.status == 0, "\(form.standardError)")
        #expect(form.output.hasSuffix("\n\na=1&b=x%20y&c=-1.50\n\n"), "\(form.output)")
        let multipart = try await CLIRunner.run(["--offline", "--multipart", "example.com/f", "n:=42"])
        #expect(multipart.status == 0, "\(multipart.standardError)")
        #expect(multipart.output.contains("name=\"n\"\r\n\r\n42\r\n"), "\(multipart.output)")
        #expect(try RequestBuilder.formText(ofJSON: #""é\n""#, name: "a") == "é\n")
        #expect(throws: CLIFailure.self) { try RequestBuilder.formText(ofJSON: "null", name: "a") }
    }
}

/// HTTPie's "request data from a filename" (https://httpie.io/docs/cli/request-data-from-a-filename).
@Suite("CLI: @file as the body")
struct BodyFileTests {
    /// `@data.xml` was refused: "has no name before its separator" (64).
    @Test("@path sends the file as the body, labelled by its extension; it takes no other data item")
    func fileIsTheBody() async throws {
        #expect(try RequestItem(parsing: "@~/data.bin;type=application/pdf")
            == .bodyFile(path: NSString(string: "~/data.bin").expandingTildeInPath, mimeType: "application/pdf"))
        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("data.xml")
        try Data("<a/>".utf8).write(to: file)
        let offline = try await CLIRunner.run(["--offline", "example.com/up", "@\(file.path)"])
        #expect(offline.status == 0, "\(offline.standardError)")
        #expect(offline.output.hasPrefix("POST /up HTTP/1.1\n"), "\(offline.output)")
        #expect(offline.output.contains("\nContent-Type: application/xml\n"), "\(offline.output)")
        #expect(offline.output.contains("\nContent-Length: 4\n"), "\(offline.output)")
        #expect(offline.output.hasSuffix("\n\n<a/>\n\n"), "\(offline.output)")
        try await TestServer.withServer { server in
            let sent = try await CLIRunner.run(["PUT", server.url("/put").absoluteString, "@\(file.path)"])
            #expect(sent.status == 0, "\(sent.standardError)")
            let echo = try jsonObject(sent)
            #expect(echo["data"] as? String == "<a/>")
            #expect((echo["headers"] as? [String: String])?["Content-Type"] == "application/xml")
        }
        let mixed = try await CLIRunner.run(["--offline", "example.com/up", "@\(file.path)", "a=b"])
        #expect(mixed.status == 64)
        #expect(mixed.standardError.hasPrefix("courier: error: @file is the whole body"), "\(mixed.standardError)")
    }
}
