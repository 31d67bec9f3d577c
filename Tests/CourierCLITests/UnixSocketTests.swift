import CourierTesting
import Foundation
import Testing

/// `--unix-socket PATH` (curl's): every connection through a Unix-domain socket, and `--curl`
/// naming it.
@Suite("CLI: --unix-socket")
struct CLIUnixSocketTests {
    /// A recording server on a new socket, and the socket's path.
    static func withSocketServer(_ body: (TestServer, String) async throws -> Void) async throws {
        let path = "/tmp/courier-cli-\(UUID().uuidString.prefix(8)).sock"
        var configuration = TestServer.Configuration()
        configuration.unixSocketPath = path
        configuration.recordsRequests = true
        try await TestServer.withServer(configuration) { server in try await body(server, path) }
    }

    @Test func theURLsHostIsReachedThroughTheSocket() async throws {
        var socketPath = ""
        try await Self.withSocketServer { server, path in
            socketPath = path
            let result = try await CLIRunner.run(["--unix-socket", path, "http://docker/get?via=socket"])
            #expect(result.status == 0, "\(result.standardError)")
            #expect(try jsonObject(result)["args"] as? [String: String] == ["via": "socket"])
            #expect(server.receivedRequests.map { $0.value(forHTTPHeaderField: "Host") } == ["docker"])
        }
        // The server is gone, and its socket file with it.
        let missing = try await CLIRunner.run(["--unix-socket", socketPath, "http://docker/get"])
        #expect(missing.status != 0)
        #expect(missing.standardError.contains("could not connect to the Unix socket \(socketPath): there is no socket at that path"), "\(missing.standardError)")
    }

    /// As curl: a redirect to another host goes through the socket too.
    @Test func aRedirectToAnotherHostGoesThroughTheSocketToo() async throws {
        try await Self.withSocketServer { server, path in
            let result = try await CLIRunner.run(["--follow", "--unix-socket", path, "http://docker/redirect-to?url=http%3A%2F%2Fother%2Fget"])
            #expect(result.status == 0, "\(result.standardError)")
            #expect(server.receivedRequests.map { $0.value(forHTTPHeaderField: "Host") } == ["docker", "other"])
        }
    }

    /// AsyncHTTPClient's form: the socket's path as the URL's host, percent-encoded.
    @Test func anHTTPUnixURLNamesItsSocket() async throws {
        try await Self.withSocketServer { server, path in
            let encoded = path.replacingOccurrences(of: "/", with: "%2F")
            let result = try await CLIRunner.run(["http+unix://\(encoded)/get?via=url"])
            #expect(result.status == 0, "\(result.standardError)")
            #expect(try jsonObject(result)["args"] as? [String: String] == ["via": "url"])
            #expect(server.receivedRequests.map { $0.value(forHTTPHeaderField: "Host") } == ["localhost"])
            let curl = try await CLIRunner.run(["--curl", "http+unix://\(encoded)/get"])
            #expect(curl.output.hasPrefix("curl --unix-socket \(path) http://localhost/get "), "\(curl.output)")
        }
    }

    /// `courier ws` over a socket: a `ws+unix` URL, and `--unix-socket` for a `ws://` URL; a
    /// `ws+unix` URL without a socket path is a bad command line.
    @Test func theWebSocketCommandReachesASocket() async throws {
        try await Self.withSocketServer { _, path in
            let encoded = path.replacingOccurrences(of: "/", with: "%2F")
            let url = try await CLIRunner.run(["ws", "ws+unix://\(encoded)/courier/websocket/echo"], input: "by url\n")
            #expect(url.status == 0, "\(url.standardError)")
            #expect(url.output == "by url\n")
            let flag = try await CLIRunner.run(["ws", "--unix-socket", path, "ws://docker/courier/websocket/echo"], input: "by flag\n")
            #expect(flag.status == 0, "\(flag.standardError)")
            #expect(flag.output == "by flag\n")
        }
        let noPath = try await CLIRunner.run(["ws", "ws+unix:///courier/websocket/echo"], input: "")
        #expect(noPath.status == 64, "\(noPath.standardError)")
        #expect(noPath.standardError.contains("ws+unix://"), "\(noPath.standardError)")
    }

    @Test func curlIsToldTheSocket() async throws {
        let result = try await CLIRunner.run(["--curl", "--unix-socket", "/var/run/docker.sock", "http://docker/v1.43/info"])
        #expect(result.output == "curl --unix-socket /var/run/docker.sock http://docker/v1.43/info --header 'User-Agent: courier/0.1.0'\n", "\(result.output)")
    }
}
