import CourierTesting
import Foundation
import Testing

/// `courier ws URL` against the test server's WebSocket echo route.
@Suite("courier ws")
struct WebSocketCommandTests {
    @Test func linesGoOutAndMessagesComeBack() async throws {
        try await TestServer.withServer { server in
            let url = "ws://127.0.0.1:\(server.port)/courier/websocket/echo"
            let result = try await CLIRunner.run(["ws", url], input: "hello\nwörld\n")
            #expect(result.status == 0, "\(result.standardError)")
            #expect(result.output == "hello\nwörld\n")
        }
    }

    /// The server's close ends the command at once, its code and reason on standard error, though
    /// standard input is still open. Before, the command waited for another line or the end of
    /// input (websocat and wscat exit).
    @Test func theServersCloseEndsTheCommand() async throws {
        try await TestServer.withServer { server in
            let url = "ws://127.0.0.1:\(server.port)/courier/websocket/close-after-first"
            // The hold only bounds a failing run: the command must exit before it ends (30 s left
            // too little margin for a full CI run, which held every test for about 36 s).
            let result = try await CLIRunner.run(["ws", url], input: "hello\n", holdingInputOpenFor: .seconds(120))
            #expect(result.status == 0, "\(result.standardError)")
            #expect(result.errorLines == ["courier: the server closed the connection (1000 bye)"])
            // It exited while its input was still open: it did not wait for the input's end. (Not
            // a time: waiting for one of the two process slots the CLI tests share took 17 s once,
            // on a loaded machine.)
            #expect(result.inputWasOpenAtExit)
        }
    }

    @Test func aFailedHandshakeIsOneLineAndStatus1() async throws {
        try await TestServer.withServer { server in
            let result = try await CLIRunner.run(["ws", "ws://127.0.0.1:\(server.port)/courier/websocket/bad-accept"], input: "")
            #expect(result.status == 1)
            #expect(result.errorLines.count == 1)
            #expect(result.standardError.contains("Sec-WebSocket-Accept"))
        }
    }

    /// `--protocol a,b` offers two subprotocols (it went out as the one field value `a,b`, and the
    /// server's choice of either was refused as never offered); an empty one or one with a space
    /// is a bad command line.
    @Test func aCommaListOffersEachSubprotocol() async throws {
        try await TestServer.withServer { server in
            let url = "ws://127.0.0.1:\(server.port)/courier/websocket/echo"
            let listed = try await CLIRunner.run(["ws", "--protocol", "chat,superchat", url], input: "hi\n")
            #expect(listed.status == 0, "\(listed.standardError)")
            #expect(listed.output == "hi\n")
            for bad in ["", "chat superchat", "chat,"] {
                let refused = try await CLIRunner.run(["ws", "--protocol", bad, url], input: "")
                #expect(refused.status == 64, "\(bad): \(refused.standardError)")
                #expect(refused.standardError.contains("--protocol"), "\(bad): \(refused.standardError)")
            }
        }
    }

    /// `courier ws` takes the request command's proxies: `--proxy` (an HTTP proxy tunnels ws://
    /// with CONNECT), `all_proxy` (SOCKS5), and `http_proxy` with `no_proxy`. Before, it always
    /// connected directly: a made-up host failed, and a proxy that is down went unnoticed.
    @Test func theRequestCommandsProxiesCarryTheWebSocket() async throws {
        try await TestServer.withServer { server in
            let url = "ws://courier-target.invalid:\(server.port)/courier/websocket/echo"
            let clean = CLIProxyTests.clean
            let proxy = try await TestProxy.start(upstreamPort: server.port)
            let socks = try await TestSOCKSServer.start(upstreamPort: server.port)
            let flag = try await CLIRunner.run(["ws", "--proxy", "http:http://127.0.0.1:\(proxy.port)", url], environment: clean, input: "flag\n")
            var environment = clean
            environment["all_proxy"] = "socks5h://127.0.0.1:\(socks.port)"
            let variable = try await CLIRunner.run(["ws", url], environment: environment, input: "variable\n")
            try await proxy.shutdown()
            try await socks.shutdown()
            #expect(flag.status == 0, "\(flag.standardError)")
            #expect(flag.output == "flag\n")
            #expect(proxy.connectTargets == ["courier-target.invalid:\(server.port)"])
            #expect(variable.status == 0, "\(variable.standardError)")
            #expect(variable.output == "variable\n")
            #expect(socks.connectTargets == ["courier-target.invalid:\(server.port)"])

            // A proxy that is down is an error naming it, not a direct connection; no_proxy
            // sends the server's own address past it.
            let direct = "ws://127.0.0.1:\(server.port)/courier/websocket/echo"
            environment = clean
            environment["http_proxy"] = "http://127.0.0.1:9"
            let down = try await CLIRunner.run(["ws", direct], environment: environment, input: "down\n")
            #expect(down.status == 1, "\(down.standardError)")
            #expect(down.standardError.contains("127.0.0.1:9"), "\(down.standardError)")
            environment["no_proxy"] = "127.0.0.1"
            let bypassed = try await CLIRunner.run(["ws", direct], environment: environment, input: "bypassed\n")
            #expect(bypassed.status == 0, "\(bypassed.standardError)")
            #expect(bypassed.output == "bypassed\n")
            let bad = try await CLIRunner.run(["ws", "--proxy", "all:socks4://p:1", direct], environment: clean, input: "")
            #expect(bad.status == 64, "\(bad.standardError)")
        }
    }

    /// `--binary-raw` prints through the CLI's output as every other output does: standard output
    /// on a full device is status 1 and a line saying so (as `aFullStandardOutputIsAFailure`).
    /// FileHandle's `write` trapped on the failed write: the command died of a signal.
    @Test func binaryRawOnAFullStandardOutputIsAFailure() async throws {
        try await TestServer.withServer { server in
            let full = open("/dev/full", O_WRONLY)
            try #require(full >= 0)
            defer { close(full) }
            // The route sends a binary message as soon as the connection is open; standard input
            // is held open, so the command does not close first.
            let url = "ws://127.0.0.1:\(server.port)/courier/websocket/payloads"
            let child = try ChildProcess.spawn(
                CLIRunner.executable.path, ["ws", "--binary-raw", url], standardInput: .pipe, standardOutput: .descriptor(full),
                standardError: .pipe)
            defer { if let input = child.standardInput { close(input) } }
            let errors = await CLIRunner.onOwnThread { Data(ChildProcess.readToEnd(child.standardError!)) }
            let status = await CLIRunner.waitForExit(child)
            #expect(status == 1)
            #expect(String(decoding: errors, as: UTF8.self).contains("cannot write to standard output: No space left on device"), "\(String(decoding: errors, as: UTF8.self))")
        }
    }

    @Test func notAWebSocketURLIsAUsageError() async throws {
        let result = try await CLIRunner.run(["ws", "http://example.com/"], input: "")
        #expect(result.status == 64)
    }

    @Test("--max-message-size takes a message over the default 1 MiB, which ends the session without it")
    func maxMessageSize() async throws {
        try await TestServer.withServer { server in
            let url = "ws://127.0.0.1:\(server.port)/courier/websocket/echo"
            let line = String(repeating: "x", count: 2_000_000)
            let refused = try await CLIRunner.run(["ws", url], input: line + "\n")
            #expect(refused.status == 1)
            #expect(refused.standardError.contains("1009"), "\(refused.standardError)")
            let taken = try await CLIRunner.run(["ws", "--max-message-size", "4000000", url], input: line + "\n")
            #expect(taken.status == 0, "\(taken.standardError)")
            #expect(taken.output == line + "\n")
        }
    }

    @Test("--cacert trusts a private root over wss; without it the handshake is refused")
    func cacert() async throws {
        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let root = try writeTestRoot(in: folder)
        var configuration = TestServer.Configuration.https()
        configuration.http2 = false
        try await TestServer.withServer(configuration) { server in
            let url = "wss://localhost:\(server.port)/courier/websocket/echo"
            let untrusted = try await CLIRunner.run(["ws", url], input: "hi\n")
            #expect(untrusted.status == 1)
            let trusted = try await CLIRunner.run(["ws", "--cacert", root.path, url], input: "hi\n")
            #expect(trusted.status == 0, "\(trusted.standardError)")
            #expect(trusted.output == "hi\n")
        }
    }

    @Test("--timeout bounds the opening handshake: exit 2")
    func handshakeTimeout() async throws {
        try await TestServer.withServer { server in
            // Not a WebSocket route: the upgrade request goes to this one, which answers only
            // once the test is over.
            let (never, release) = AsyncStream<Void>.makeStream()
            defer { release.finish() }
            server.route("/never") { _ in
                for await _ in never {}
                return .text("late")
            }
            let result = try await CLIRunner.run(["ws", "--timeout", "0.5", "ws://127.0.0.1:\(server.port)/never"], input: "")
            #expect(result.status == 2, "\(result.standardError)")
            #expect(result.standardError.contains("the opening handshake took over 0.5 s"), "\(result.standardError)")
        }
    }
}
