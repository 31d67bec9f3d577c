@testable import CourierCLI
import Courier
import CourierTesting
import Foundation
import Testing

/// `--offline` and `--curl` print the request without sending it: exact output.
@Suite("CLI: --offline and --curl")
struct OfflineAndCurlTests {
    @Test("--offline prints a JSON request exactly, items in order")
    func offlineJSON() async throws {
        let result = try await CLIRunner.run([
            "--offline", "POST", "example.com/items?x=1", "name=Ada", "age:=36", "tags:=[\"a\", \"b\"]",
            "X-Token:abc", "q==a b", "Accept-Encoding;",
        ])
        #expect(result.status == 0)
        #expect(result.standardError.isEmpty)
        #expect(
            result.output == """
                POST /items?x=1&q=a%20b HTTP/1.1
                Host: example.com
                User-Agent: courier/0.1.0
                Content-Type: application/json
                Accept: application/json, */*;q=0.5
                X-Token: abc
                Accept-Encoding: \n\
                Content-Length: 46

                {"name": "Ada", "age": 36, "tags": ["a", "b"]}


                """)
    }

    @Test("--offline: a form, GET by default without data, the port shorthand, an escaped separator")
    func offlineFormAndShorthands() async throws {
        let form = try await CLIRunner.run(["--offline", "--form", ":8080/login", "user=ann", "pass=a&b c", #"we\=ird=1"#])
        #expect(form.status == 0)
        #expect(
            form.output == """
                POST /login HTTP/1.1
                Host: localhost:8080
                User-Agent: courier/0.1.0
                Content-Type: application/x-www-form-urlencoded; charset=utf-8
                Accept: */*
                Content-Length: 34

                user=ann&pass=a%26b%20c&we%3Dird=1


                """)
        let get = try await CLIRunner.run(["--offline", "https://example.com:443/", "page==2"])
        #expect(get.output == "GET /?page=2 HTTP/1.1\nHost: example.com\nUser-Agent: courier/0.1.0\nAccept: */*\n\n")
    }

    /// HTTPie looks for a scheme at the start of the URL only: a `://` in the query of a URL
    /// without one was taken for its scheme, and the URL refused (exit 64).
    @Test("A URL without a scheme may hold :// further on; it gets http://")
    func schemeOnlyAtTheStart() async throws {
        let result = try await CLIRunner.run(["--offline", "example.com/login?next=https://example.com/"])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.output == "GET /login?next=https://example.com/ HTTP/1.1\nHost: example.com\nUser-Agent: courier/0.1.0\nAccept: */*\n\n", "\(result.output)")
        #expect(Invocation.startsWithScheme("HTTPS://example.com/"))
        #expect(Invocation.startsWithScheme("http+unix://%2Fvar%2Frun%2Fdocker.sock/info"))
        #expect(!Invocation.startsWithScheme("example.com/?next=http://example.com/"))
        #expect(!Invocation.startsWithScheme("1http://example.com/"))
        #expect(!Invocation.startsWithScheme("localhost:8080/x"))
    }

    /// A repeated header item kept only its last value; HTTPie 3 and xh send each.
    @Test("A repeated header item sends each value; the first replaces the command's own field, Name: drops them all")
    func repeatedHeaderItems() async throws {
        let repeated = try await CLIRunner.run(["--offline", "example.com", "X-A:1", "X-A:2", "x-a;"])
        #expect(repeated.status == 0, "\(repeated.standardError)")
        #expect(repeated.output == "GET / HTTP/1.1\nHost: example.com\nUser-Agent: courier/0.1.0\nAccept: */*\nX-A: 1\nX-A: 2\nx-a: \n\n", "\(repeated.output)")
        let agents = try await CLIRunner.run(["--offline", "example.com", "User-Agent:a", "X-B:1", "User-Agent:b"])
        #expect(agents.output == "GET / HTTP/1.1\nHost: example.com\nUser-Agent: a\nAccept: */*\nX-B: 1\nUser-Agent: b\n\n", "\(agents.output)")
        let dropped = try await CLIRunner.run(["--offline", "example.com", "X-A:1", "X-A:2", "X-A:", "X-A:3"])
        #expect(dropped.output == "GET / HTTP/1.1\nHost: example.com\nUser-Agent: courier/0.1.0\nAccept: */*\nX-A: 3\n\n", "\(dropped.output)")
    }

    /// The engine sends a request's own `Host` instead of the URL's, and its own framing
    /// instead of a request's `Content-Length`: the printer showed two `Host` lines, and the
    /// item's `Content-Length` instead of the one sent.
    @Test("--offline shows a Host item instead of the URL's, and the body's Content-Length instead of an item's")
    func offlineShowsWhatTheEngineSends() async throws {
        let host = try await CLIRunner.run(["--offline", "example.com/x", "Host:other.example:8080"])
        #expect(host.status == 0, "\(host.standardError)")
        #expect(host.output == "GET /x HTTP/1.1\nHost: other.example:8080\nUser-Agent: courier/0.1.0\nAccept: */*\n\n", "\(host.output)")
        let length = try await CLIRunner.run(["--offline", "example.com/x", "a=b", "Content-Length:99"])
        #expect(length.status == 0, "\(length.standardError)")
        #expect(length.output.contains("\nContent-Length: 10\n"), "\(length.output)")
        #expect(!length.output.contains("99"), "\(length.output)")
    }

    /// Numbers past an `Int` end in a line, not a trap: a timeout of 1e19 in `--curl`, a
    /// download of 2⁶³ bytes at under a byte a second in the progress bar.
    @Test("huge numbers print without trapping")
    func hugeNumbersPrint() async throws {
        let curl = try await CLIRunner.run(["--curl", "--timeout", "1e19", "example.com/x"])
        #expect(curl.status == 0, "\(curl.standardError)")
        #expect(curl.output.contains("--connect-timeout 10 --speed-limit 1 --speed-time 2147483647 "), "\(curl.output)")
        let line = ProgressBar.line(done: 1, total: .max, transferred: 1, elapsed: .seconds(2))
        #expect(line.hasSuffix("ETA 99999:00"), "\(line)")
    }

    /// `--timeout` is an idle wait (and a cap on connecting), but `--curl` wrote it as curl's
    /// `--max-time`, which ends a long download however steadily it goes.
    @Test("--curl writes --timeout as a cap on connecting and on a stalled transfer, not on the whole transfer")
    func curlTimeout() async throws {
        let short = try await CLIRunner.run(["--curl", "--timeout", "2.5", "example.com/x"])
        #expect(short.status == 0, "\(short.standardError)")
        #expect(
            short.output
                == "curl --connect-timeout 2.5 --speed-limit 1 --speed-time 3 http://example.com/x --header 'User-Agent: courier/0.1.0'\n",
            "\(short.output)")
        let long = try await CLIRunner.run(["--curl", "--timeout", "30", "example.com/x"])
        #expect(long.output.hasPrefix("curl --connect-timeout 10 --speed-limit 1 --speed-time 30 http://"), "\(long.output)")
        #expect(!long.output.contains("--max-time"))
    }

    @Test("--curl prints the equivalent curl command exactly")
    func curl() async throws {
        let json = try await CLIRunner.run(["--curl", "PUT", "example.com/items/1", "name=O'Brien", "X-Token:abc"])
        #expect(json.status == 0)
        #expect(
            json.output == """
                curl --request PUT http://example.com/items/1 --header 'User-Agent: courier/0.1.0' --header 'Content-Type: application/json' --header 'Accept: application/json, */*;q=0.5' --header 'X-Token: abc' --data-binary '{"name": "O'\\''Brien"}'

                """)
        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("a.txt")
        try Data("hi".utf8).write(to: file)
        let multipart = try await CLIRunner.run([
            "--curl", "--form", "--follow", "--max-redirects", "3", "--verify", "no", "example.com/up", "title=T", "doc@\(file.path);type=text/plain",
        ])
        #expect(
            multipart.output
                == "curl --location --max-redirs 3 --insecure http://example.com/up --header 'User-Agent: courier/0.1.0' "
                + "--form-string title=T --form 'doc=@\(file.path);type=text/plain'\n")
        let download = try await CLIRunner.run(["--curl", "--download", "-o", "out.bin", "--continue", "example.com/f"])
        #expect(download.output == "curl --location --max-redirs 30 --output out.bin --continue-at - http://example.com/f --header 'User-Agent: courier/0.1.0'\n")
        let digest = try await CLIRunner.run(["--curl", "-A", "digest", "-a", "ann:pw", "example.com/d"])
        #expect(digest.output == "curl --digest --user ann:pw http://example.com/d --header 'User-Agent: courier/0.1.0'\n")
    }

    @Test("--curl keeps the client key's passphrase and the cookie jar, and warns that curl's --cacert trusts that file alone")
    func curlKeepsPassphraseAndCookieJar() async throws {
        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let root = try writeTestRoot(in: folder)
        let (cert, key) = try writeClientIdentity(in: folder)
        let jar = folder.appendingPathComponent("jar.txt")
        let result = try await CLIRunner.run([
            "--curl", "--cert", cert.path, "--key", key.path, "--pass", "s3cret", "--cookie-jar", jar.path, "--cacert", root.path, "example.com/a",
        ])
        #expect(result.status == 0, "\(result.standardError)")
        let (rootPath, certPath, keyPath, jarPath) = (
            Request.shellQuoted(root.path), Request.shellQuoted(cert.path), Request.shellQuoted(key.path), Request.shellQuoted(jar.path)
        )
        #expect(
            result.output
                == "curl --cacert \(rootPath) --cert \(certPath) --key \(keyPath) --pass s3cret --cookie \(jarPath) --cookie-jar \(jarPath) "
                + "http://example.com/a --header 'User-Agent: courier/0.1.0'\n", "\(result.output)")
        #expect(result.standardError.contains("--cacert trusts only that file"), "\(result.standardError)")
    }

    @Test("--offline shows a multipart body with its files")
    func offlineMultipart() async throws {
        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("note.txt")
        try Data("file body".utf8).write(to: file)
        let result = try await CLIRunner.run(["--offline", "--form", "example.com/up", "title=T", "doc@\(file.path)"])
        #expect(result.status == 0)
        let text = result.output
        #expect(text.hasPrefix("POST /up HTTP/1.1\n"))
        #expect(text.contains("Content-Type: multipart/form-data; boundary=Boundary+"))
        #expect(text.contains("Content-Disposition: form-data; name=\"title\"\r\n\r\nT\r\n"))
        #expect(text.contains("Content-Disposition: form-data; name=\"doc\"; filename=\"note.txt\"\r\nContent-Type: text/plain\r\n\r\nfile body\r\n"))
    }

    /// HTTPie's `--json` labels the request JSON without data too (its issue #137), and a POST
    /// without data gets no label; courier sent `--json` without `Content-Type`, and a bare POST
    /// labelled a form (the serializer's label of an empty body).
    @Test("--json without data asks for JSON and labels the request JSON; a POST without data has no Content-Type; --multipart sends plain fields as a form")
    func jsonAndMultipartFlags() async throws {
        let json = try await CLIRunner.run(["--offline", "--json", "example.com/items"])
        #expect(
            json.output
                == "GET /items HTTP/1.1\nHost: example.com\nUser-Agent: courier/0.1.0\nAccept: application/json, */*;q=0.5\nContent-Type: application/json\n\n",
            "\(json.output)")
        let post = try await CLIRunner.run(["--offline", "POST", "example.com/items"])
        #expect(post.output == "POST /items HTTP/1.1\nHost: example.com\nUser-Agent: courier/0.1.0\nAccept: */*\n\n", "\(post.output)")
        let form = try await CLIRunner.run(["--offline", "--form", "POST", "example.com/items"])
        #expect(form.output.contains("\nContent-Type: application/x-www-form-urlencoded; charset=utf-8\n"), "\(form.output)")
        let multipart = try await CLIRunner.run(["--offline", "--multipart", "example.com/up", "a=1"])
        #expect(multipart.status == 0)
        #expect(multipart.output.hasPrefix("POST /up HTTP/1.1\n"))
        #expect(multipart.output.contains("Content-Type: multipart/form-data; boundary=Boundary+"))
        #expect(multipart.output.contains("Content-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n"))
    }
}
