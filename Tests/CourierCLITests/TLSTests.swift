import Courier
import CourierTesting
import Foundation
import Testing

/// `--verify`, `--cacert`, `--pin-cert`, `--pin-key`, `--cert`/`--key` against TestServer over HTTPS.
@Suite("CLI: TLS flags")
struct TLSTests {
    @Test("The status line names the protocol the response came over; --verbose adds the task metrics")
    func protocolAndMetrics() async throws {
        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let root = try writeTestRoot(in: folder)
        // Shut down, awaited, whatever the test does.
        try await TestServer.withServer(.https()) { server in
            let url = server.url("/get").absoluteString

            // The test server offers h2 through ALPN: the CLI takes it.
            let headers = try await CLIRunner.run(["--cacert", root.path, "--headers", url])
            #expect(headers.status == 0, "\(headers.standardError)")
            #expect(headers.output.hasPrefix("HTTP/2 200 OK\n"), "\(headers.output)")

            let verbose = try await CLIRunner.run(["--cacert", root.path, "--verbose", url])
            #expect(verbose.status == 0, "\(verbose.standardError)")
            let text = verbose.output
            #expect(text.contains("Accept-Encoding: deflate, gzip\n"), "the request as it went out")
            let requestLine = try #require(text.range(of: "GET /get HTTP/2\n"), "the request line names the protocol that carried it: \(text)")
            #expect(!text.contains("HTTP/1.1"), "nothing went over HTTP/1.1: \(text)")
            let status = try #require(text.range(of: "HTTP/2 200 OK\n"))
            #expect(requestLine.lowerBound < status.lowerBound, "the request comes before the response")
            let metrics = try #require(text.range(of: "* GET \(url) 200 over HTTP/2\n"), "\(text)")
            #expect(status.lowerBound < metrics.lowerBound, "the metrics come after the response")
            #expect(text.contains("* new connection to 127.0.0.1:\(server.port)"))
            #expect(text.contains(", TLS 1.3 TLS_"), "the TLS version once, then the suite: \(text)")
            #expect(text.contains(" TLS_AES_") || text.contains(" TLS_CHACHA20_"), "the TLS 1.3 suite the server chose: \(text)")
            #expect(text.contains("* lookup -, connect "))
        }
    }

    @Test("SSL_CERT_FILE and SSL_CERT_DIR name the system's roots, as for OpenSSL and Go")
    func systemRootsFromTheEnvironment() async throws {
        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let root = try writeTestRoot(in: folder)
        let empty = folder.appendingPathComponent("empty")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        // Shut down, awaited, whatever the test does.
        try await TestServer.withServer(.https()) { server in
            let url = server.url("/get").absoluteString
            // The bundle instead of the system's: TestServer's root is trusted.
            let file = try await CLIRunner.run(["--headers", url], environment: ["SSL_CERT_FILE": root.path])
            #expect(file.status == 0, "\(file.standardError)")
            // A directory besides the system's bundle.
            let directory = try await CLIRunner.run(["--headers", url], environment: ["SSL_CERT_DIR": folder.path])
            #expect(directory.status == 0, "\(directory.standardError)")
            // A directory without it: the system's bundle alone does not trust it.
            let without = try await CLIRunner.run(["--headers", url], environment: ["SSL_CERT_DIR": empty.path])
            #expect(without.status == 1)
            #expect(without.standardError.contains("trusted root"), "\(without.standardError)")
        }
    }

    @Test("Untrusted by default; --verify no, --cacert and pins make it work; a wrong pin is refused")
    func trust() async throws {
        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let root = try writeTestRoot(in: folder)
        let other = folder.appendingPathComponent("other.pem")
        try Data(TestCertificates.selfSignedLeaf.utf8).write(to: other)
        // Shut down, awaited, whatever the test does.
        try await TestServer.withServer(.https()) { server in
            let url = server.url("/get").absoluteString

            let refused = try await CLIRunner.run([url])
            #expect(refused.status == 1)
            #expect(refused.errorLines.count == 1)
            #expect(refused.standardError.contains("trusted root"))

            // As in AFNetworking, a pin does not make a chain valid that the trusted roots refuse.
            for flags in [["--pin-cert", root.path], ["--pin-key", root.path]] {
                let pinnedOnly = try await CLIRunner.run(flags + [url])
                #expect(pinnedOnly.status == 1, "\(flags)")
                #expect(pinnedOnly.standardError.contains("trusted root"), "\(flags): \(pinnedOnly.standardError)")
            }
            for flags in [
                ["--verify", "no"], ["--cacert", root.path], ["--verify", root.path],
                ["--pin-cert", root.path, "--cacert", root.path], ["--pin-key", root.path, "--cacert", root.path],
            ] {
                let result = try await CLIRunner.run(flags + ["--check-status", url])
                #expect(result.status == 0, "\(flags): \(result.standardError)")
                #expect(try jsonObject(result)["url"] as? String == url)
            }
            let wrongPin = try await CLIRunner.run(["--pin-cert", other.path, url])
            #expect(wrongPin.status == 1)
            #expect(wrongPin.errorLines.count == 1)

            let pinOverHTTP = try await CLIRunner.run(["--pin-cert", root.path, "http://127.0.0.1:1/"])
            #expect(pinOverHTTP.status == 64)
        }
    }

    @Test("Mutual TLS: --cert/--key accepted, none refused")
    func clientCertificate() async throws {
        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let root = try writeTestRoot(in: folder)
        let (cert, key) = try writeClientIdentity(in: folder)
        var configuration = TestServer.Configuration.https()
        configuration.requiresClientCertificate = true
        // Shut down, awaited, whatever the test does.
        try await TestServer.withServer(configuration) { server in
            let url = server.url("/get").absoluteString

            let accepted = try await CLIRunner.run(["--cacert", root.path, "--cert", cert.path, "--key", key.path, url])
            #expect(accepted.status == 0, "\(accepted.standardError)")
            // HTTPie's spelling of --key (an unknown option before).
            let httpie = try await CLIRunner.run(["--cacert", root.path, "--cert", cert.path, "--cert-key", key.path, url])
            #expect(httpie.status == 0, "\(httpie.standardError)")
            let refused = try await CLIRunner.run(["--cacert", root.path, url])
            #expect(refused.status == 1)
            #expect(refused.errorLines.count == 1)
        }
    }
}
