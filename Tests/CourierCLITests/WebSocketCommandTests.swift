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
            let result = try await CLIRunner.run(["ws", url], input: "hello\n", holdingInputOpenFor: .seconds(30))
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

    @Test func notAWebSocketURLIsAUsageError() async throws {
        let result = try await CLIRunner.run(["ws", "http://example.com/"], input: "")
        #expect(result.status == 64)
    }
}
