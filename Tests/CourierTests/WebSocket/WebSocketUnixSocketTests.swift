@testable import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOCore
import Testing

/// WebSockets to a server on a Unix-domain socket, against a ``TestServer`` listening on one:
/// `ws+unix://` and `wss+unix://` URLs (the socket's path as the host, percent-encoded, as an
/// `http+unix://` URL's), and a `ws://` URL whose host ``SessionConfiguration/unixSocketPaths``
/// sends to a socket. A proxy never carries them, the handshake names the host (`localhost` for a
/// socket URL), nothing is left open after; bad URLs fail with their own errors.
@Suite("WebSocket over Unix-domain sockets")
struct WebSocketUnixSocketTests {
    // MARK: Without I/O

    @Test func socketURLsStandForTheirHTTPForms() throws {
        let url = try #require(URL(unixSocketPath: "/var/run/docker.sock", target: "/containers/x/attach/ws?stream=1", webSocket: true))
        #expect(url.absoluteString == "ws+unix://%2Fvar%2Frun%2Fdocker.sock/containers/x/attach/ws?stream=1")
        let http = try #require(WebSocketTask.httpURL(for: url))
        #expect(http.absoluteString == "http+unix://%2Fvar%2Frun%2Fdocker.sock/containers/x/attach/ws?stream=1")
        #expect(http.unixSocketTarget?.path == "/var/run/docker.sock")
        let secure = try #require(URL(unixSocketPath: "/tmp/a b.sock", tls: true, webSocket: true))
        #expect(secure.absoluteString == "wss+unix://%2Ftmp%2Fa%20b.sock/")
        #expect(WebSocketTask.httpURL(for: secure)?.unixSocketTarget?.path == "/tmp/a b.sock")
        #expect(WebSocketTask.httpURL(for: secure)?.unixSocketTarget?.tls == true)
        #expect(WebSocketTask.httpURL(for: URL(string: "WS+Unix://%2Ftmp%2Fa.sock/x")!)?.absoluteString == "http+unix://%2Ftmp%2Fa.sock/x")
        #expect(WebSocketTask.httpURL(for: URL(string: "https+unix://%2Ftmp%2Fa.sock/x")!)?.absoluteString == "https+unix://%2Ftmp%2Fa.sock/x")
        #expect(WebSocketTask.httpURL(for: URL(string: "ftp+unix://%2Ftmp%2Fa.sock/x")!) == nil)
        // The HTTP form is unchanged by the new parameter's default.
        #expect(URL(unixSocketPath: "/tmp/a.sock")?.absoluteString == "http+unix://%2Ftmp%2Fa.sock/")
    }

    // MARK: Over a socket

    /// The echo route over the socket a `ws+unix` (or `wss+unix`) URL names; then the `payloads`
    /// route, whose message describes the handshake: `Host: localhost`. A proxy nothing listens
    /// on and a map that sends `localhost` elsewhere are set and not used.
    @Test(arguments: [false, true])
    func aSocketURLOpensOnItsSocket(_ tls: Bool) async throws {
        var (serverConfiguration, path) = UnixSocketTests.serverConfiguration(for: tls ? .http1TLS : .http1)
        // The test server upgrades to WebSockets on its HTTP/1.1-only pipeline (as the other
        // `wss` tests' servers).
        serverConfiguration.http2 = false
        try await TestServer.withServer(serverConfiguration) { server in
            var configuration = SessionConfiguration.default
            configuration.proxy = .http(host: "127.0.0.1", port: 9)
            configuration.unixSocketPaths = ["localhost": "/nonexistent/courier.sock"]
            let manager = SessionManager(configuration: configuration, securityPolicy: try Transport.trustingTestRoot())
            let echo = try #require(URL(unixSocketPath: path, target: "/courier/websocket/echo", tls: tls, webSocket: true))
            let task = manager.webSocketTask(with: Request(url: echo))
            let response = try await task.waitUntilOpen()
            #expect(response.status.code == 101)
            var messages = task.messages.makeAsyncIterator()
            try await task.send(.text("through the socket"))
            #expect(try await messages.next() == .text("through the socket"))
            #expect(task.handshakeMetrics?.remoteSocketAddress?.pathname == path)
            #expect(task.handshakeMetrics?.isProxyConnection == false)
            #expect((task.handshakeMetrics?.tlsProtocolVersion != nil) == tls)
            await task.close()
            #expect(task.error == nil)

            let described = try #require(URL(unixSocketPath: path, target: "/courier/websocket/payloads", tls: tls, webSocket: true))
            let payloads = manager.webSocketTask(with: Request(url: described))
            payloads.resume()
            var received = payloads.messages.makeAsyncIterator()
            let document = try #require(AlamofireWebSocketConformanceTests.document(try await received.next()))
            #expect(document.headers["Host"] == "localhost", "\(document.headers)")
            await payloads.waitUntilFinished()
            await manager.invalidate(cancelingTasks: true)
            #expect(await eventually { server.openConnectionCount == 0 }, "every connection was closed")
        }
    }

    /// A `ws://` URL whose host the configuration maps to a socket: the handshake names the URL's
    /// host, and no proxy carries it. Untested before ``SessionConfiguration/unixSocketPaths``
    /// met WebSockets here.
    @Test func aMappedHostOpensOnItsSocket() async throws {
        let (serverConfiguration, path) = UnixSocketTests.serverConfiguration(for: .http1)
        try await TestServer.withServer(serverConfiguration) { server in
            var configuration = SessionConfiguration.default
            configuration.proxy = .http(host: "127.0.0.1", port: 9)
            configuration.unixSocketPaths = ["docker.invalid": path]
            let manager = SessionManager(configuration: configuration)
            let url = try #require(URL(string: "ws://docker.invalid/courier/websocket/payloads"))
            let task = manager.webSocketTask(with: Request(url: url))
            task.resume()
            var received = task.messages.makeAsyncIterator()
            let document = try #require(AlamofireWebSocketConformanceTests.document(try await received.next()))
            #expect(document.headers["Host"] == "docker.invalid", "\(document.headers)")
            #expect(task.handshakeMetrics?.remoteSocketAddress?.pathname == path)
            await task.waitUntilFinished()
            #expect(task.error == nil)
            await manager.invalidate(cancelingTasks: true)
            #expect(await eventually { server.openConnectionCount == 0 })
        }
    }

    @Test func badSocketURLsFailWithTheirOwnErrors() async throws {
        let manager = SessionManager(configuration: .default)
        // No socket path: the URL's host is empty.
        let noPath = manager.webSocketTask(with: Request(url: URL(string: "ws+unix:///courier/websocket/echo")!))
        await #expect(throws: CourierError.self) { try await noPath.waitUntilOpen() }
        #expect(noPath.error?.code == .unsupportedScheme)
        #expect(noPath.error?.message.contains("names no socket") == true, "\(String(describing: noPath.error))")
        // A socket nothing listens on fails as an `http+unix` URL's does, naming its path.
        let missing = UnixSocketTests.socketPath()
        let absent = manager.webSocketTask(with: Request(url: URL(unixSocketPath: missing, webSocket: true)!))
        await #expect(throws: CourierError.self) { try await absent.waitUntilOpen() }
        #expect(absent.error?.code == .connectionFailed)
        #expect(absent.error?.description.contains("could not connect to the Unix socket \(missing)") == true, "\(String(describing: absent.error))")
        // Another scheme with `+unix` is no WebSocket URL.
        let other = manager.webSocketTask(with: Request(url: URL(string: "ftp+unix://%2Ftmp%2Fa.sock/")!))
        await #expect(throws: CourierError.self) { try await other.waitUntilOpen() }
        #expect(other.error?.code == .unsupportedScheme)
        #expect(other.error?.message.contains("not a ws or wss URL") == true, "\(String(describing: other.error))")
        await manager.invalidate(cancelingTasks: true)
    }
}
