import CourierTesting
import Foundation
import Testing

/// `--cookie-jar FILE`: a shell session logs in once.
@Suite("CLI: --cookie-jar")
struct CookieJarTests {
    @Test("Cookies set by one run go with the next, through a Netscape cookies.txt file")
    func logInOnce() async throws {
        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let jar = folder.appendingPathComponent("cookies.txt").path
        try await TestServer.withServer { server in
            // /cookies/set answers 302 with Set-Cookie; without --follow the 302 is the answer.
            let login = try await CLIRunner.run(["--cookie-jar", jar, server.url("/cookies/set").absoluteString + "?session=abc"])
            #expect(login.status == 0)
            let text = try String(contentsOfFile: jar, encoding: .utf8)
            #expect(text.hasPrefix("# Netscape HTTP Cookie File"))
            #expect(text.contains("127.0.0.1\tFALSE\t/\tFALSE\t0\tsession\tabc"))

            let next = try await CLIRunner.run(["--cookie-jar", jar, server.url("/cookies").absoluteString])
            #expect(next.status == 0)
            #expect(try jsonObject(next)["cookies"] as? [String: String] == ["session": "abc"])

            let offline = try await CLIRunner.run(["--offline", "--cookie-jar", jar, server.url("/cookies").absoluteString, "Cookie:own=1"])
            #expect(offline.output.contains("Cookie: own=1; session=abc"), "the request shows what will be sent")

            let without = try await CLIRunner.run([server.url("/cookies").absoluteString])
            #expect(try jsonObject(without)["cookies"] as? [String: String] == [:], "no jar, no cookies")
        }
    }

    @Test("A jar curl wrote is read; a jar that cannot be read or written is an error")
    func badJars() async throws {
        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let curlJar = folder.appendingPathComponent("curl.txt")
        try "# Netscape HTTP Cookie File\n127.0.0.1\tFALSE\t/\tFALSE\t0\tfrom\tcurl\n".write(to: curlJar, atomically: true, encoding: .utf8)
        try await TestServer.withServer { server in
            let read = try await CLIRunner.run(["--cookie-jar", curlJar.path, server.url("/cookies").absoluteString])
            #expect(try jsonObject(read)["cookies"] as? [String: String] == ["from": "curl"])

            let unreadable = try await CLIRunner.run(["--cookie-jar", folder.path, server.url("/get").absoluteString])
            #expect(unreadable.status == 66)
            #expect(unreadable.standardError.hasPrefix("courier: error: --cookie-jar"))

            let unwritable = try await CLIRunner.run(["--cookie-jar", folder.appendingPathComponent("missing/jar.txt").path, server.url("/get").absoluteString])
            #expect(unwritable.status == 1)
            #expect(unwritable.standardError.contains("--cookie-jar"))
        }
    }
}
