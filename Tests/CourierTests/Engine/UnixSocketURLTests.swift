@testable import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOCore
import Testing

/// AsyncHTTPClient's URL forms for a server behind a Unix-domain socket (`http+unix://` and
/// `https+unix://`, the socket's path as the host, percent-encoded), against a ``TestServer``
/// listening on a socket: every wire, a base URL with relative paths, cookies and a redirect that
/// stay on the socket, redirects that would leave for another socket or come from TCP not
/// followed, and bad URLs failing with their own errors.
@Suite("Engine: http+unix and https+unix URLs")
struct UnixSocketURLTests {
    // MARK: Without I/O

    @Test func aSocketURLIsMadeAndReadBack() throws {
        let url = try #require(URL(unixSocketPath: "/var/run/docker.sock", target: "/v1.43/info?all=1"))
        #expect(url.absoluteString == "http+unix://%2Fvar%2Frun%2Fdocker.sock/v1.43/info?all=1")
        let target = try #require(url.unixSocketTarget)
        #expect(target.path == "/var/run/docker.sock")
        #expect(!target.tls)
        // A target without its slash gets one; a path with characters a host cannot hold keeps them.
        let secure = try #require(URL(unixSocketPath: "/tmp/my app@1.sock", target: "info", tls: true))
        #expect(secure.absoluteString == "https+unix://%2Ftmp%2Fmy%20app%401.sock/info")
        #expect(secure.unixSocketTarget?.path == "/tmp/my app@1.sock")
        #expect(secure.unixSocketTarget?.tls == true)
        #expect(URL(unixSocketPath: "") == nil)
        #expect(URL(string: "HTTP+Unix://%2Ftmp%2Fa.sock/")?.unixSocketTarget?.path == "/tmp/a.sock", "the scheme in any case")
        #expect(URL(string: "http+unix:///get")?.unixSocketTarget == nil, "no socket path")
        #expect(URL(string: "http://localhost/get")?.unixSocketTarget == nil)
    }

    /// curl has no `http+unix` URLs: the description names the socket with `--unix-socket`.
    @Test func theCurlDescriptionNamesTheSocket() throws {
        let request = Request(url: try #require(URL(unixSocketPath: "/var/run/docker.sock", target: "/v1.43/containers/json?all=1")))
        #expect(request.cURLDescription() == "curl --unix-socket /var/run/docker.sock 'http://localhost/v1.43/containers/json?all=1'")
        let secure = Request(url: try #require(URL(unixSocketPath: "/tmp/a b.sock", tls: true)))
        #expect(try secure.cURLArguments() == ["--unix-socket", "'/tmp/a b.sock'", "https://localhost/"])
    }

    @Test func thePoolsKeyIsTheSocketUnderTheNameLocalhost() throws {
        let url = try #require(URL(string: "https+unix://%2Ftmp%2Fa.sock:8443/x"))
        let key = try #require(ConnectionPool.key(for: url))
        #expect(key.host == "localhost")
        #expect(key.port == 443, "a socket has no port: the URL's is not used")
        #expect(key.tls)
        #expect(key.socketPath == "/tmp/a.sock")
        #expect(ConnectionPool.key(for: URL(string: "http+unix://%2Ftmp%2Fb.sock/")!) != key)
        #expect(ConnectionPool.key(for: URL(string: "http+unix:///x")!) == nil)
    }

    @Test func aRedirectToASocketIsFollowedOnlyFromThatSocket() throws {
        let socket = try #require(URL(string: "http+unix://%2Ftmp%2Fa.sock/start"))
        var request = Request(url: socket)
        func step(from: URL, to location: String) -> RedirectStep {
            request.url = from
            var response = HTTPResponse(status: .found)
            response.headerFields[.location] = location
            return RedirectPlanner.step(for: response, request: request, policy: .follow(max: 5, allowCycles: true), redirectCount: 0, visitedURLs: [])
        }
        guard case .follow(let relative) = step(from: socket, to: "/next") else { Issue.record("a relative redirect stays on the socket"); return }
        #expect(relative.url.absoluteString == "http+unix://%2Ftmp%2Fa.sock/next")
        guard case .follow(let tcp) = step(from: socket, to: "http://example.com/") else { Issue.record("to TCP is an ordinary redirect"); return }
        #expect(tcp.url.host == "example.com")
        let http = try #require(URL(string: "http://example.com/start"))
        for (from, location) in [
            (http, "http+unix://%2Fvar%2Frun%2Fdocker.sock/containers/json"),
            (socket, "http+unix://%2Ftmp%2Fb.sock/next"),
            (socket, "http+unix://%2Ftmp%2FA.sock/next"),
            (socket, "https+unix://%2Ftmp%2Fa.sock/next"),
        ] {
            guard case .none = step(from: from, to: location) else {
                Issue.record("\(from) → \(location) must not be followed")
                continue
            }
        }
    }

    // MARK: Over a socket

    @Test(arguments: [Transport.Wire.http1, .http1TLS, .http2])
    func aSocketURLReachesItsServerOverEveryWire(_ wire: Transport.Wire) async throws {
        let (serverConfiguration, path) = UnixSocketTests.serverConfiguration(for: wire)
        try await TestServer.withServer(serverConfiguration) { server in
            var configuration = SessionConfiguration.default
            configuration.httpVersion = wire == .http1TLS ? .http1Only : .automatic
            configuration.responseCache = nil
            // A proxy nothing listens on, and a map that sends `localhost` elsewhere: a socket URL
            // goes to its own socket.
            configuration.proxy = .http(host: "127.0.0.1", port: 9)
            configuration.unixSocketPaths = ["localhost": "/nonexistent/courier.sock"]
            let baseURL = try #require(URL(unixSocketPath: path, target: "/", tls: wire != .http1))
            try await withManager(baseURL: baseURL, configuration: configuration, securityPolicy: try Transport.trustingTestRoot()) { manager in
                manager.responseSerializer = HTTPResponseSerializer()
                let response = try await manager.get("get", parameters: ["q": "1"])
                #expect(response.response.status == .ok)
                let transaction = try #require(response.metrics?.transactions.last)
                #expect(transaction.networkProtocolName == (wire == .http2 ? "h2" : "http/1.1"))
                #expect(transaction.remoteSocketAddress?.pathname == path)
                // A cookie set through the socket, and the relative redirect after it, come back on it.
                manager.responseSerializer = JSONResponseSerializer()
                let cookies = try await manager.get("cookies/set", parameters: ["flavour": "oat"])
                #expect((cookies.value as? [String: Any])?["cookies"] as? [String: String] == ["flavour": "oat"])
                let received = server.receivedRequests
                #expect(received.map(\.target) == ["/get?q=1", "/cookies/set?flavour=oat", "/cookies"])
                #expect(
                    received.allSatisfy { ($0.value(forHTTPHeaderField: "Host") ?? $0.value(forHTTPHeaderField: ":authority")) == "localhost" },
                    "\(received.map(\.headerFields))")
                #expect(server.connectionCount == 1, "one connection, reused")
            }
            #expect(await eventually { server.openConnectionCount == 0 }, "the connection was closed")
        }
    }

    @Test func badSocketURLsFailWithTheirOwnErrors() async throws {
        try await withManager(baseURL: nil) { manager in
            // No socket path: the serializer refuses it before a task is made.
            let noPath = await #expect(throws: CourierError.self) { try await manager.get("http+unix:///get") }
            #expect(noPath?.code == .invalidURL, "\(noPath.map { "\($0)" } ?? "")")
            // Straight to the engine.
            let direct = await #expect(throws: CourierError.self) {
                try await manager.data(for: Request(url: URL(string: "http+unix:///get")!))
            }
            #expect(direct?.code == .invalidURL)
            #expect(direct?.message.contains("names no socket") == true, "\(direct?.message ?? "")")
            let other = await #expect(throws: CourierError.self) {
                try await manager.data(for: Request(url: URL(string: "ftp+unix://%2Ftmp%2Fa.sock/get")!))
            }
            #expect(other?.code == .unsupportedScheme)
            // A socket nothing listens on fails as any mapped host's does, naming its path.
            let missing = UnixSocketTests.socketPath()
            let absent = await #expect(throws: CourierError.self) {
                try await manager.data(for: Request(url: URL(unixSocketPath: missing, target: "/get")!))
            }
            #expect(absent?.code == .connectionFailed)
            #expect(absent?.description.contains("could not connect to the Unix socket \(missing)") == true, "\(absent.map { "\($0)" } ?? "")")
        }
    }
}
