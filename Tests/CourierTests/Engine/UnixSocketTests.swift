@testable import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOCore
import Synchronization
import Testing

/// Hosts reached through a Unix-domain socket (``SessionConfiguration/unixSocketPaths``), against
/// a ``TestServer`` listening on one: every wire (HTTP/1.1, HTTP/1.1 over TLS, HTTP/2 when TLS
/// agrees on it), the URL's host in `Host` and TLS's server name, the socket's host never sent to
/// a proxy, connections pooled apart from TCP ones to the same name and reused, nothing left open
/// after; and a socket that is not there fails at once, naming its path.
@Suite("Engine: hosts reached through a Unix-domain socket")
struct UnixSocketTests {
    /// A fresh socket path under the temporary directory (short: a socket's path is at most 107
    /// bytes).
    static func socketPath() -> String {
        "/tmp/courier-\(UUID().uuidString.prefix(8)).sock"
    }

    /// A recording server for `wire` (TLS for the two secure ones) listening on a new socket, and
    /// the socket's path.
    static func serverConfiguration(for wire: Transport.Wire) -> (TestServer.Configuration, path: String) {
        let path = Self.socketPath()
        var configuration = wire == .http1 ? TestServer.Configuration() : .https()
        configuration.recordsRequests = true
        configuration.unixSocketPath = path
        return (configuration, path)
    }

    @Test(arguments: [Transport.Wire.http1, .http1TLS, .http2])
    func aHostMappedToASocketIsServedThroughItOverEveryWire(_ wire: Transport.Wire) async throws {
        let (serverConfiguration, path) = Self.serverConfiguration(for: wire)
        let server = try await TestServer.start(serverConfiguration)
        #expect(server.baseURL.absoluteString == (wire == .http1 ? "http://localhost/" : "https://localhost/"))
        var configuration = SessionConfiguration.default
        configuration.unixSocketPaths = ["LocalHost": path]
        configuration.httpVersion = wire == .http1TLS ? .http1Only : .automatic
        configuration.responseCache = nil
        // A proxy nothing listens on: the socket's host never goes through it.
        configuration.proxy = .http(host: "127.0.0.1", port: 9)
        let manager = HTTPSessionManager(baseURL: server.baseURL, configuration: configuration, securityPolicy: try Transport.trustingTestRoot())
        manager.completionQueue = TestQueues.completion
        manager.responseSerializer = HTTPResponseSerializer()
        let pool = try #require((manager.engine as? NIOEngine)?.pool)
        do {
            for index in 0..<3 {
                let response = try await manager.get("get", parameters: ["i": "\(index)"])
                #expect(response.response.status == .ok)
                let transaction = try #require(response.metrics?.transactions.last)
                #expect(transaction.networkProtocolName == (wire == .http2 ? "h2" : "http/1.1"))
                #expect(!transaction.isProxyConnection)
                #expect(transaction.remoteAddress == nil, "a Unix socket has no IP address")
                #expect(transaction.remoteSocketAddress?.pathname == path)
                #expect(transaction.description.contains("connection to the Unix socket \(path)"), "\(transaction)")
                #expect(transaction.domainLookupStart == nil, "no name to look up")
            }
            let received = server.receivedRequests
            #expect(received.count == 3)
            #expect(received.allSatisfy { $0.httpVersion == (wire == .http2 ? "HTTP/2" : "HTTP/1.1") })
            // `Host` over HTTP/1.1, `:authority` (which the server may record as `Host`) over HTTP/2.
            #expect(
                received.allSatisfy { ($0.value(forHTTPHeaderField: "Host") ?? $0.value(forHTTPHeaderField: ":authority")) == "localhost" },
                "the URL's host, without a port: \(received.map { $0.headerFields })")
            #expect(server.connectionCount == 1, "one connection, reused")
        } catch {
            await manager.invalidate(cancelingTasks: true)
            try? await server.shutdown()
            throw error
        }
        await manager.invalidate(cancelingTasks: true)
        #expect(await eventually { pool.liveConnections.load(ordering: .relaxed) == 0 })
        #expect(await eventually { server.openConnectionCount == 0 }, "the connection was closed")
        try await server.shutdown()
        #expect(!FileManager.default.fileExists(atPath: path), "the server's socket file is removed at shutdown")
    }

    /// The map is by host: a TCP server's address goes over TCP, the mapped name through the
    /// socket, in one session.
    @Test func onlyTheMappedHostGoesThroughTheSocket() async throws {
        let path = Self.socketPath()
        var socketConfiguration = TestServer.Configuration()
        socketConfiguration.unixSocketPath = path
        try await TestServer.withServer(socketConfiguration) { socketServer in
            try await TestServer.withServer { tcpServer in
                var configuration = SessionConfiguration.default
                configuration.unixSocketPaths = ["localhost": path]
                try await withManager(baseURL: nil, configuration: configuration) { manager in
                    manager.responseSerializer = HTTPResponseSerializer()
                    _ = try await manager.get("http://localhost/get")
                    _ = try await manager.get(tcpServer.url("get").absoluteString)
                    _ = try await manager.get("http://localhost:8080/get")
                    #expect(socketServer.requestCount == 2, "the port of a mapped host's URL does not matter")
                    #expect(tcpServer.requestCount == 1)
                }
            }
        }
    }

    /// `*` maps every host the map does not name, a redirect's to another host included (curl's
    /// `--unix-socket`); a host named goes to its own socket.
    @Test func theStarMapsEveryHostNotNamed() async throws {
        let path = Self.socketPath()
        var socketConfiguration = TestServer.Configuration()
        socketConfiguration.unixSocketPath = path
        socketConfiguration.recordsRequests = true
        try await TestServer.withServer(socketConfiguration) { socketServer in
            try await TestServer.withServer { tcpServer in
                var configuration = SessionConfiguration.default
                configuration.unixSocketPaths = ["*": path, "tcp.example": "/nonexistent/courier.sock"]
                try await withManager(baseURL: nil, configuration: configuration) { manager in
                    manager.responseSerializer = HTTPResponseSerializer()
                    _ = try await manager.get("http://api.example/get")
                    // A redirect to another host: through the same socket.
                    let redirected = try await manager.get("http://first.example/redirect-to", parameters: ["url": "http://second.example/get"])
                    #expect(redirected.response.status == .ok)
                    #expect(socketServer.receivedRequests.map { $0.value(forHTTPHeaderField: "Host") } == ["api.example", "first.example", "second.example"])
                    // A host named otherwise goes to its own path (missing here), not to `*`'s.
                    let error = await #expect(throws: CourierError.self) { _ = try await manager.get("http://TCP.example/get") }
                    #expect(error?.code == .connectionFailed)
                    #expect(error?.message.contains("/nonexistent/courier.sock") == true, "\(error?.message ?? "")")
                    #expect(tcpServer.requestCount == 0)
                }
            }
        }
    }

    /// A WebSocket to a mapped host opens through the socket too (its handshake is an HTTP/1.1
    /// request like any other).
    @Test func aWebSocketToAMappedHostOpensThroughTheSocket() async throws {
        let path = Self.socketPath()
        var serverConfiguration = TestServer.Configuration()
        serverConfiguration.unixSocketPath = path
        try await TestServer.withServer(serverConfiguration) { server in
            var configuration = SessionConfiguration.default
            configuration.unixSocketPaths = ["localhost": path]
            let manager = SessionManager(configuration: configuration)
            let task = manager.webSocketTask(with: Request(url: URL(string: "ws://localhost/courier/websocket/echo")!))
            try await task.send(.text("through the socket"))
            var messages = task.messages.makeAsyncIterator()
            #expect(try await messages.next() == .text("through the socket"))
            await task.close(code: .normalClosure, reason: "")
            await manager.invalidate(cancelingTasks: true)
            #expect(server.connectionCount == 1)
        }
    }

    /// A socket path where nothing is, a file that is no listening socket, and a path too long for
    /// a socket: the request fails as a failed connection whose message names the socket, at once
    /// (the connect timeout is ten minutes: a request that waited for it would outlast the test's
    /// time limit, two minutes, as a full CI run held every test for about 36 s).
    @Test(.timeLimit(.minutes(2)))
    func aSocketThatIsNotThereFailsNamingItsPath() async throws {
        let missing = Self.socketPath()
        let notListening = Self.socketPath()
        #expect(FileManager.default.createFile(atPath: notListening, contents: Data()))
        defer { try? FileManager.default.removeItem(atPath: notListening) }
        var configuration = SessionConfiguration.default
        configuration.timeoutIntervalForConnect = 600
        let tooLong = "/tmp/" + String(repeating: "x", count: 120) + ".sock"
        configuration.unixSocketPaths = ["missing": missing, "idle": notListening, "long": tooLong]
        try await withManager(baseURL: nil, configuration: configuration) { manager in
            for (host, path, reason) in [
                ("missing", missing, "there is no socket at that path"), ("idle", notListening, "nothing listens on it"),
                ("long", tooLong, "the path is longer than a Unix socket's can be"),
            ] {
                let error = await #expect(throws: CourierError.self) { try await manager.get("http://\(host)/get") }
                #expect(error?.code == .connectionFailed, "not a timeout")
                #expect(error?.description.contains("could not connect to the Unix socket \(path): \(reason)") == true, "\(error.map { "\($0)" } ?? "")")
            }
        }
    }
}
