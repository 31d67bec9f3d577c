// Ported from OkHttp's okhttp/src/jvmTest/kotlin/okhttp3/internal/ws/WebSocketHttpTest.kt
// (https://github.com/square/okhttp), Copyright (C) 2014 Square, Inc.,
// licensed under the Apache License, Version 2.0.

@testable import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import Testing

/// Twins of `WebSocketHttpTest`: the opening handshake and the session, over real sockets.
/// MockWebServer's `webSocketUpgrade` is played by a ``ScriptedWebSocketPeer`` (a handshake
/// answered with the bytes the test writes, the client's frames recorded), or by the test
/// server's WebSocket routes where TLS is needed.
///
/// OkHttp's listener events are Courier's task API: `onOpen` is ``WebSocketTask/waitUntilOpen()``,
/// `onMessage` ``WebSocketTask/messages``, `onClosing`/`onClosed` the messages' end with
/// ``WebSocketTask/closeCode`` and ``WebSocketTask/closeReason``, `onFailure` the task's
/// ``WebSocketTask/error``. OkHttp's `readTimeout` and `callTimeout` are both Courier's
/// ``SessionConfiguration/timeoutIntervalForRequest``, which bounds the handshake only.
///
/// Not ported, no counterpart: `throwingOnOpenFailsImmediately`, `throwingOnClosingClosesImmediatelyAndFails`
/// and `throwingOnFailLogs` (Courier has no listener to throw from; a consumer that throws out
/// of its loop is `throwingOnMessageClosesImmediatelyAndFails`'s twin),
/// `webSocketAndNetworkInterceptors` (no network interceptors), `webSocketsDontTriggerEventListener`
/// (Courier's event monitors have WebSocket events of their own on purpose: `WebSocketMonitoringTests`),
/// `overflowOutgoingQueue` (Courier has no bounded outgoing queue that fails a send: a send past
/// 64 KiB queued waits for its write, the sender's back-pressure, and a waiting send is
/// cancellable: `WebSocketSessionTests.aSendsWaitIsCancellable`).
///
/// Where Courier answers otherwise on purpose, the test asserts Courier's answer and says what
/// OkHttp expects ("OkHttp expects") and the rule Courier follows.
@Suite("Conformance: OkHttp WebSocketHttpTest")
struct OkHttpWebSocketTests {
    /// The peer's answer for a plain upgrade.
    static let upgrade: ScriptedWebSocketPeer.Script = { _, _, accept in .upgrade(accept: accept) }

    /// OkHttp's client settings: no keep-alive PING (OkHttp's default `pingInterval` is 0).
    static var settings: WebSocketConfiguration {
        var settings = WebSocketConfiguration()
        settings.pingInterval = nil
        return settings
    }

    /// Runs `body` with a peer answering as `script` says and a task for its `/`, resumed;
    /// cancels the task and invalidates the manager afterwards, whatever `body` does.
    static func withSocket<T>(
        react: @escaping ScriptedWebSocketPeer.React = ScriptedWebSocketPeer.defaultReaction,
        configuration: SessionConfiguration = .default,
        webSocket: WebSocketConfiguration = Self.settings,
        request: ((URL) -> Request)? = nil,
        _ script: @escaping ScriptedWebSocketPeer.Script = Self.upgrade,
        _ body: (WebSocketTask, ScriptedWebSocketPeer, SessionManager) async throws -> T
    ) async throws -> T {
        try await ScriptedWebSocketPeer.with(react: react, script) { peer in
            let manager = SessionManager(configuration: configuration)
            let task = manager.webSocketTask(with: request?(peer.url()) ?? Request(url: peer.url()), configuration: webSocket)
            task.resume()
            do {
                let result = try await body(task, peer, manager)
                task.cancel()
                await task.waitUntilFinished()
                await manager.invalidate(cancelingTasks: true)
                return result
            } catch {
                task.cancel()
                await task.waitUntilFinished()
                await manager.invalidate(cancelingTasks: true)
                throw error
            }
        }
    }

    /// The client's frames the peer received with `opcode`.
    static func frames(_ peer: ScriptedWebSocketPeer, _ opcode: UInt8) -> [ScriptedWebSocketPeer.Frame] {
        peer.frames.filter { $0.opcode == opcode }
    }

    /// OkHttp's `closeWebSockets`: the server closes with 1001; Courier answers with the same
    /// code (RFC 6455 5.5.1), the messages end, and the task ends with no error. (OkHttp's
    /// listener answers with 1000 of its own; Courier's answer is its own, echoing the code.)
    static func closeFromServer(_ task: WebSocketTask, _ peer: ScriptedWebSocketPeer, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        try await peer.send(ScriptedWebSocketPeer.close(1001))
        await task.waitUntilFinished()
        #expect(task.error == nil, "\(String(describing: task.error))", sourceLocation: sourceLocation)
        #expect(task.closeCode == .goingAway, sourceLocation: sourceLocation)
        #expect(task.closeReason == "", sourceLocation: sourceLocation)
        #expect(await peer.wait { Self.frames($0, 0x8).count == 1 && $0.closedConnectionCount == 1 }, sourceLocation: sourceLocation)
        #expect(Self.frames(peer, 0x8).first?.closeCode == 1001, sourceLocation: sourceLocation)
    }

    // MARK: Messages

    /// OkHttp: textMessage. The client's frames are masked (RFC 6455 5.3).
    @Test func textMessage() async throws {
        try await Self.withSocket { task, peer, _ in
            try await task.waitUntilOpen()
            try await task.send(.text("Hello, WebSockets!"))
            #expect(await peer.wait { Self.frames($0, 0x1).count == 1 })
            let frame = try #require(Self.frames(peer, 0x1).first)
            #expect(frame.text == "Hello, WebSockets!")
            #expect(frame.fin && frame.masked && !frame.rsv1)
            try await Self.closeFromServer(task, peer)
        }
    }

    /// OkHttp: binaryMessage.
    @Test func binaryMessage() async throws {
        try await Self.withSocket { task, peer, _ in
            try await task.send(.binary(Data("Hello!".utf8)))
            #expect(await peer.wait { Self.frames($0, 0x2).count == 1 })
            let frame = try #require(Self.frames(peer, 0x2).first)
            #expect(frame.payload == Array("Hello!".utf8))
            #expect(frame.fin && frame.masked)
            try await Self.closeFromServer(task, peer)
        }
    }

    /// OkHttp: serverMessage.
    @Test func serverMessage() async throws {
        try await Self.withSocket { task, peer, _ in
            try await task.waitUntilOpen()
            var messages = task.messages.makeAsyncIterator()
            try await peer.send(ScriptedWebSocketPeer.text("Hello, WebSockets!"))
            #expect(try await messages.next() == .text("Hello, WebSockets!"))
            try await Self.closeFromServer(task, peer)
            #expect(try await messages.next() == nil)
        }
    }

    /// OkHttp: throwingOnMessageClosesImmediatelyAndFails. A consumer that throws out of its loop
    /// stops the iteration, which cancels the task: a close frame with 1001 goes out and the
    /// connection closes (OkHttp's listener failure closes the socket with no close frame).
    @Test func throwingOnMessageClosesImmediatelyAndFails() async throws {
        struct Boom: Error {}
        try await Self.withSocket { task, peer, _ in
            try await task.waitUntilOpen()
            try await peer.send(ScriptedWebSocketPeer.text("Hello, WebSockets!"))
            await #expect(throws: Boom.self) {
                for try await _ in task.messages { throw Boom() }
            }
            await task.waitUntilFinished()
            #expect(task.error?.code == .cancelled)
            #expect(await peer.wait { $0.closedConnectionCount == 1 })
            #expect(Self.frames(peer, 0x8).map(\.closeCode) == [1001])
        }
    }

    /// OkHttp: unplannedCloseHandledByCloseWithoutFailure and unplannedCloseHandledWithoutFailure.
    /// The server closes first; Courier answers at once with the server's code (RFC 6455 5.5.1:
    /// "typically echoing the status code it received"), so a `close(...)` after it finds the task
    /// over and sends nothing more. OkHttp expects the code its listener's `close(1000, null)`
    /// chose.
    @Test func unplannedCloseHandledWithoutFailure() async throws {
        try await Self.withSocket { task, peer, _ in
            try await task.waitUntilOpen()
            try await peer.send(ScriptedWebSocketPeer.close(1001, "bye"))
            for try await _ in task.messages {}
            #expect(task.closeCode == .goingAway)
            #expect(task.closeReason == "bye")
            #expect(task.error == nil)
            await task.close(code: .normalClosure)
            #expect(await peer.wait { $0.closedConnectionCount == 1 })
            #expect(Self.frames(peer, 0x8).map(\.closeCode) == [1001])
            // Messages after the close fail (`send` returns false in OkHttp).
            let error = await #expect(throws: CourierError.self) { try await task.send(.text("late")) }
            #expect(error?.code == .connectionClosed)
        }
    }

    // MARK: Handshake refused

    /// OkHttp: non101RetainsBody, notFound, and what a redirect or a 408 does (no twin in
    /// `WebSocketHttpTest`; `clientTimeoutClosesBody` retries a 408). A final answer that is not
    /// `101` fails the task with `invalidResponse`; the error carries the response's head.
    ///
    /// OkHttp expects the body kept on the response (`Body`); Courier reads the head only and
    /// closes the connection (the task's own), so the error has no body. A redirect is not
    /// followed and a 408 not retried (Courier retries a handshake only through the session's
    /// retriers; OkHttp retries a 408 once by itself, `clientTimeoutClosesBody`).
    @Test(arguments: [
        ("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nBody", 200),
        ("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", 404),
        ("HTTP/1.1 302 Found\r\nLocation: /elsewhere\r\nContent-Length: 0\r\n\r\n", 302),
        ("HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n", 408),
    ])
    func non101(head: String, status: Int) async throws {
        try await Self.withSocket({ _, _, _ in ScriptedWebSocketPeer.Answer(head: head) }) { task, peer, _ in
            let error = await #expect(throws: CourierError.self) { try await task.waitUntilOpen() }
            #expect(error?.code == .invalidResponse, "\(String(describing: error))")
            #expect(error?.response?.status.code == status)
            #expect(error?.message.contains("answered the upgrade with \(status), not 101") == true, "\(String(describing: error))")
            #expect(await peer.wait { $0.closedConnectionCount == 1 })
            #expect(peer.heads.count == 1, "no redirect followed, no retry")
            #expect(task.closeCode == .abnormalClosure)
        }
    }

    /// OkHttp: missingConnectionHeader, wrongConnectionHeader, missingUpgradeHeader,
    /// wrongUpgradeHeader, missingMagicHeader, wrongMagicHeader; and the subprotocol and extension
    /// answers RFC 6455 4.1 has the client fail (a subprotocol or an extension it did not offer).
    /// The task fails with `invalidResponse` naming the field, the 101's head on the error, and
    /// the connection is closed with no frame sent.
    @Test(arguments: [
        // (fields of the 101, with `ACCEPT` for the right accept value; what the error names)
        ("Upgrade: websocket\r\nSec-WebSocket-Accept: ACCEPT", "Connection: Upgrade"),
        ("Upgrade: websocket\r\nConnection: Downgrade\r\nSec-WebSocket-Accept: ACCEPT", "Connection: Upgrade"),
        ("Connection: Upgrade\r\nSec-WebSocket-Accept: ACCEPT", "Upgrade: websocket"),
        ("Connection: Upgrade\r\nUpgrade: Pepsi\r\nSec-WebSocket-Accept: ACCEPT", "Upgrade: websocket"),
        // RFC 6455 4.1: an `Upgrade` with a value other than `websocket` fails, a list that also
        // names it included (OkHttp compares the whole field value, and fails it too).
        ("Connection: Upgrade\r\nUpgrade: websocket, h2c\r\nSec-WebSocket-Accept: ACCEPT", "Upgrade: websocket"),
        ("Connection: Upgrade\r\nUpgrade: websocket\r\nUpgrade: Pepsi\r\nSec-WebSocket-Accept: ACCEPT", "Upgrade: websocket"),
        ("Connection: Upgrade\r\nUpgrade: websocket", "Sec-WebSocket-Accept"),
        ("Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Accept: magic", "Sec-WebSocket-Accept"),
        ("Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Accept: ACCEPT\r\nSec-WebSocket-Protocol: chat", "subprotocol chat"),
        ("Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Accept: ACCEPT\r\nSec-WebSocket-Extensions: x-unknown", "x-unknown"),
    ])
    func aBrokenUpgradeFailsTheHandshake(fields: String, named: String) async throws {
        let script: ScriptedWebSocketPeer.Script = { _, _, accept in
            ScriptedWebSocketPeer.Answer(head: "HTTP/1.1 101 Switching Protocols\r\n" + fields.replacingOccurrences(of: "ACCEPT", with: accept) + "\r\n\r\n")
        }
        try await Self.withSocket(script) { task, peer, _ in
            let error = await #expect(throws: CourierError.self) { try await task.waitUntilOpen() }
            #expect(error?.code == .invalidResponse)
            #expect(error?.message.contains(named) == true, "\(String(describing: error))")
            #expect(error?.response?.status.code == 101)
            #expect(await peer.wait { $0.closedConnectionCount == 1 })
            #expect(peer.frames.isEmpty)
        }
    }

    /// The other side of the header cases: RFC 6455 4.1 compares `Upgrade` and `Connection`'s
    /// tokens without case (OkHttp too: `equals(ignoreCase = true)`), field names have no case,
    /// the reason phrase is free, and an interim answer before the 101 is not the handshake's.
    /// `Connection` is a list that must hold `Upgrade` (RFC 6455 4.1, RFC 9110 7.6.1), so
    /// `keep-alive, Upgrade` opens; OkHttp compares the whole field value with `Upgrade` and
    /// fails it.
    @Test(arguments: [
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: WebSocket\r\nConnection: UPGRADE\r\nSec-WebSocket-Accept: ACCEPT",
        "HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: keep-alive, Upgrade\r\nsec-websocket-accept: ACCEPT",
        "HTTP/1.1 101\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ACCEPT",
        "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 101 Web Socket Protocol Handshake\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ACCEPT",
    ])
    func anUpgradeInOtherCasesOpens(head: String) async throws {
        let script: ScriptedWebSocketPeer.Script = { _, _, accept in
            ScriptedWebSocketPeer.Answer(head: head.replacingOccurrences(of: "ACCEPT", with: accept) + "\r\n\r\n")
        }
        try await Self.withSocket(script) { task, peer, _ in
            let response = try await task.waitUntilOpen()
            #expect(response.status.code == 101)
            try await task.send(.text("abc"))
            #expect(await peer.wait { Self.frames($0, 0x1).first?.text == "abc" })
            try await Self.closeFromServer(task, peer)
        }
    }

    /// A status line that is not HTTP/1.x's (RFC 9112 4: `HTTP/1.1`, then a status of three
    /// digits) fails the handshake as not HTTP/1.1, as the proxy tunnel's reader of the same head
    /// refuses it. (`Int` read `+101` and `0101` as 101, and any version after `HTTP/1.` was
    /// taken: the connection opened.) OkHttp's `StatusLine.parse` refuses all three as well.
    @Test(arguments: ["HTTP/1.1 +101 Switching Protocols", "HTTP/1.1 0101 Switching Protocols", "HTTP/1.1x 101 Switching Protocols"])
    func aStatusLineThatIsNotHTTP11sFailsTheHandshake(statusLine: String) async throws {
        let script: ScriptedWebSocketPeer.Script = { _, _, accept in
            ScriptedWebSocketPeer.Answer(head: statusLine + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: \(accept)\r\n\r\n")
        }
        try await Self.withSocket(script) { task, peer, _ in
            let error = await #expect(throws: CourierError.self) { try await task.waitUntilOpen() }
            #expect(error?.code == .invalidResponse)
            #expect(error?.message.contains("is not HTTP/1.1: the status line") == true, "\(String(describing: error))")
            #expect(await peer.wait { $0.closedConnectionCount == 1 })
        }
    }

    /// A subprotocol offered and chosen, and a server that chose another: the latter fails.
    /// (OkHttp checks no `Sec-WebSocket-Protocol`; RFC 6455 4.1 has the client fail a choice it
    /// did not offer.)
    @Test(arguments: [("chat", true), ("superchat", false)])
    func theServersSubprotocol(chosen: String, opens: Bool) async throws {
        var settings = Self.settings
        settings.subprotocols = ["chat"]
        let script: ScriptedWebSocketPeer.Script = { _, _, accept in .upgrade(accept: accept, [("Sec-WebSocket-Protocol", chosen)]) }
        try await Self.withSocket(webSocket: settings, script) { task, peer, _ in
            if opens {
                try await task.waitUntilOpen()
                #expect(task.subprotocol == chosen)
            } else {
                let error = await #expect(throws: CourierError.self) { try await task.waitUntilOpen() }
                #expect(error?.code == .invalidResponse)
                #expect(error?.message.contains("subprotocol \(chosen)") == true, "\(String(describing: error))")
            }
            #expect(peer.heads.first?.lowercased().contains("sec-websocket-protocol: chat") == true, "\(peer.heads)")
        }
    }

    /// A subprotocol offered in the request's own `Sec-WebSocket-Protocol` (as URLSession's and
    /// OkHttp's callers offer one) went out, and the server's choice of it is the task's: it was
    /// offered. (Courier refused it as "not offered", since it compared the server's choice with
    /// ``WebSocketConfiguration/subprotocols`` alone.)
    @Test func aSubprotocolOfferedInTheRequestsFieldIsTaken() async throws {
        let script: ScriptedWebSocketPeer.Script = { _, _, accept in .upgrade(accept: accept, [("Sec-WebSocket-Protocol", "superchat")]) }
        let request: (URL) -> Request = { url in
            var request = Request(url: url)
            request.headerFields[HTTPField.Name("Sec-WebSocket-Protocol")!] = "chat, superchat"
            return request
        }
        try await Self.withSocket(request: request, script) { task, peer, _ in
            try await task.waitUntilOpen()
            #expect(task.subprotocol == "superchat")
            #expect(peer.heads.first?.lowercased().contains("sec-websocket-protocol: chat, superchat") == true, "\(peer.heads)")
            try await Self.closeFromServer(task, peer)
        }
    }

    /// OkHttp: clientIncludesForbiddenHeader. OkHttp fails a request that brings its own
    /// `Sec-WebSocket-Extensions`; Courier sends its own offer in its place (or none when
    /// ``WebSocketConfiguration/permessageDeflate`` is off), so that the server's answer is to
    /// an offer Courier can keep.
    @Test(arguments: [true, false])
    func clientIncludesForbiddenHeader(permessageDeflate: Bool) async throws {
        var settings = Self.settings
        settings.permessageDeflate = permessageDeflate
        let request: (URL) -> Request = { url in
            var request = Request(url: url)
            request.headerFields[HTTPField.Name("Sec-WebSocket-Extensions")!] = "x-webkit-deflate-frame"
            return request
        }
        try await Self.withSocket(webSocket: settings, request: request) { task, peer, _ in
            try await task.waitUntilOpen()
            let head = try #require(peer.heads.first).lowercased()
            #expect(!head.contains("x-webkit-deflate-frame"))
            let offers = head.split(separator: "\r\n").filter { $0.hasPrefix("sec-websocket-extensions:") }
            #expect(offers == (permessageDeflate ? ["sec-websocket-extensions: permessage-deflate; client_max_window_bits"] : []))
        }
    }

    /// OkHttp: webSocketAndApplicationInterceptors. The session's adapters (OkHttp's application
    /// interceptors) run once on the handshake's request.
    @Test func webSocketAndApplicationInterceptors() async throws {
        let adapted = NIOLockedValueBox(0)
        try await ScriptedWebSocketPeer.with(Self.upgrade) { peer in
            let manager = SessionManager()
            manager.interceptor = Adapter { request, _ in
                adapted.withLockedValue { $0 += 1 }
                var request = request
                request.headerFields[HTTPField.Name("X-Intercepted")!] = "yes"
                return request
            }
            let task = manager.webSocketTask(with: Request(url: peer.url()), configuration: Self.settings)
            try await task.waitUntilOpen()
            #expect(adapted.withLockedValue { $0 } == 1)
            #expect(peer.heads.first?.lowercased().contains("x-intercepted: yes") == true, "\(peer.heads)")
            try await Self.closeFromServer(task, peer)
            await manager.invalidate(cancelingTasks: true)
        }
    }

    // MARK: Closing

    /// OkHttp: closeReasonMaximumLength. 123 bytes of reason each way (a close frame's body is at
    /// most 125 bytes with its code).
    @Test func closeReasonMaximumLength() async throws {
        let serverReason = String(repeating: "S", count: 123)
        let react: ScriptedWebSocketPeer.React = { frame, _ in
            frame.opcode == 0x8 ? .sendThenClose(ScriptedWebSocketPeer.close(1000, serverReason)) : .nothing
        }
        try await Self.withSocket(react: react) { task, peer, _ in
            try await task.waitUntilOpen()
            let clientReason = String(repeating: "C", count: 123)
            await task.close(code: .normalClosure, reason: clientReason)
            #expect(task.error == nil)
            #expect(task.closeCode == .normalClosure)
            #expect(task.closeReason == serverReason)
            let close = try #require(Self.frames(peer, 0x8).first)
            #expect(close.closeCode == 1000)
            #expect(close.closeReason == clientReason)
        }
    }

    /// OkHttp: closeReasonTooLong. OkHttp refuses a reason over 123 bytes (`IllegalArgumentException`)
    /// and the caller closes again without one; Courier sends the first 123 bytes, cut on a
    /// character (documented on ``WebSocketTask/close(code:reason:)``): a close is never refused.
    @Test func closeReasonTooLong() async throws {
        try await Self.withSocket { task, peer, _ in
            try await task.waitUntilOpen()
            await task.close(code: .normalClosure, reason: String(repeating: "X", count: 124))
            #expect(task.error == nil)
            #expect(task.closeCode == .normalClosure)
            let close = try #require(Self.frames(peer, 0x8).first)
            #expect(close.closeReason == String(repeating: "X", count: 123))
            #expect(close.payload.count == 125)
        }
        try await Self.withSocket { task, peer, _ in
            try await task.waitUntilOpen()
            // 124 bytes of two-byte characters: cut to 122, not inside the 62nd.
            await task.close(code: .normalClosure, reason: String(repeating: "é", count: 62))
            let close = try #require(Self.frames(peer, 0x8).first)
            #expect(close.closeReason == String(repeating: "é", count: 61))
        }
    }

    /// OkHttp: clientCancelsIfCloseIsNotAcknowledged. A server that never answers the close:
    /// the task ends after ``WebSocketConfiguration/closeTimeout`` with `timedOut`, and the
    /// connection is closed; the server saw the close frame with its code and reason.
    @Test func clientCancelsIfCloseIsNotAcknowledged() async throws {
        var settings = Self.settings
        settings.closeTimeout = 0.3
        try await Self.withSocket(react: ScriptedWebSocketPeer.silent, webSocket: settings) { task, peer, _ in
            try await task.waitUntilOpen()
            await task.close(code: .normalClosure, reason: "goodbye")
            #expect(task.error?.code == .timedOut, "\(String(describing: task.error))")
            #expect(await peer.wait { $0.closedConnectionCount == 1 })
            let close = try #require(Self.frames(peer, 0x8).first)
            #expect(close.closeCode == 1000)
            #expect(close.closeReason == "goodbye")
        }
    }

    /// OkHttp: closeWithoutSuccessfulConnect. Closing a task whose handshake is under way cancels
    /// it at once (documented on ``WebSocketTask/close(code:reason:)``), and a send then fails;
    /// nothing waits for the server's answer.
    @Test func closeWithoutSuccessfulConnect() async throws {
        try await Self.withSocket({ _, _, _ in ScriptedWebSocketPeer.Answer(head: nil) }) { task, peer, _ in
            #expect(await peer.wait { $0.heads.count == 1 })
            await task.close(code: .normalClosure)
            #expect(task.error?.code == .cancelled)
            await #expect(throws: CourierError.self) { try await task.send(.text("hello")) }
            #expect(await peer.wait { $0.closedConnectionCount == 1 })
            #expect(peer.frames.isEmpty)
        }
    }

    /// Messages the server sent before it saw Courier's close frame are delivered (RFC 6455
    /// 5.5.1), after the task ended, then the messages end; a send after the close fails.
    @Test func messagesAfterTheClientsCloseAreDelivered() async throws {
        let react: ScriptedWebSocketPeer.React = { frame, _ in
            frame.opcode == 0x8 ? .sendThenClose(ScriptedWebSocketPeer.text("late") + ScriptedWebSocketPeer.close(1000, "done")) : .nothing
        }
        try await Self.withSocket(react: react) { task, peer, _ in
            try await task.waitUntilOpen()
            await task.close(code: .normalClosure, reason: "bye")
            #expect(task.error == nil)
            #expect(task.closeCode == .normalClosure)
            #expect(task.closeReason == "done")
            var received: [WebSocketMessage] = []
            for try await message in task.messages { received.append(message) }
            #expect(received == [.text("late")])
            let error = await #expect(throws: CourierError.self) { try await task.send(.text("after")) }
            #expect(error?.code == .connectionClosed)
            #expect(Self.frames(peer, 0x8).map(\.closeCode) == [1000])
        }
    }

    /// OkHttp's `cancel()`: the task ends at once with `cancelled`; Courier sends a close frame
    /// with 1001 first (documented on ``WebSocketTask/cancel()``), where OkHttp closes the socket
    /// with none; the connection is closed either way.
    @Test func cancel() async throws {
        try await Self.withSocket(react: ScriptedWebSocketPeer.silent) { task, peer, _ in
            try await task.waitUntilOpen()
            task.cancel()
            await task.waitUntilFinished()
            #expect(task.error?.code == .cancelled)
            #expect(task.closeCode == .goingAway)
            #expect(await peer.wait { $0.closedConnectionCount == 1 })
            #expect(Self.frames(peer, 0x8).map(\.closeCode) == [1001])
        }
    }

    // MARK: Schemes

    /// OkHttp: wsScheme, wsUppercaseScheme. (`http` as well, as `httpsScheme` below.)
    @Test(arguments: ["ws", "WS", "http"])
    func webSocketScheme(_ scheme: String) async throws {
        try await Self.withSocket(request: { url in Request(url: URL(string: url.absoluteString.replacingOccurrences(of: "ws://", with: "\(scheme)://"))!) }) {
            task, peer, _ in
            try await task.send(.text("abc"))
            #expect(await peer.wait { Self.frames($0, 0x1).first?.text == "abc" })
            try await Self.closeFromServer(task, peer)
        }
    }

    /// The request line of the handshake: the path and query, never a fragment (RFC 6455 3: a
    /// WebSocket URI has none; RFC 9112 3.2: nor has an origin-form target).
    @Test func theHandshakesRequestLineHasNoFragment() async throws {
        try await Self.withSocket(request: { url in Request(url: URL(string: url.absoluteString + "chat?room=1#top")!) }) { task, peer, _ in
            try await task.waitUntilOpen()
            #expect(peer.heads.first?.split(separator: "\r\n").first == "GET /chat?room=1 HTTP/1.1", "\(peer.heads)")
            try await Self.closeFromServer(task, peer)
        }
    }

    /// OkHttp: wssScheme, httpsScheme. Over TLS, against the test server's echo route.
    @Test(arguments: ["wss", "https", "WSS"])
    func secureWebSocketScheme(_ scheme: String) async throws {
        var server = TestServer.Configuration.https()
        server.http2 = false
        var policy = SecurityPolicy.default
        policy.additionalTrustedCertificates = try Certificate.certificates(pemEncoded: TestCertificates.rootCA)
        try await withTestServer(server) { server in
            var components = URLComponents(url: WebSocketOverSocketTests.url(server, "echo"), resolvingAgainstBaseURL: false)!
            components.scheme = scheme
            let manager = SessionManager(configuration: .default, securityPolicy: policy)
            let task = manager.webSocketTask(with: Request(url: components.url!), configuration: Self.settings)
            var messages = task.messages.makeAsyncIterator()
            try await task.send(.text("abc"))
            #expect(try await messages.next() == .text("abc"))
            #expect(task.handshakeMetrics?.tlsProtocolVersion != nil)
            await task.close()
            #expect(task.error == nil)
            await manager.invalidate(cancelingTasks: true)
        }
    }

    // MARK: Timeouts and PINGs

    static func timeout(_ seconds: TimeInterval) -> SessionConfiguration {
        var configuration = SessionConfiguration.default
        configuration.timeoutIntervalForRequest = seconds
        return configuration
    }

    /// OkHttp: readTimeoutAppliesToHttpRequest and callTimeoutAppliesToSetup. A server that never
    /// answers the handshake: the task fails with `timedOut` after the request timeout, and a
    /// close afterwards does nothing.
    @Test func readTimeoutAppliesToHttpRequest() async throws {
        try await Self.withSocket(configuration: Self.timeout(0.3), { _, _, _ in ScriptedWebSocketPeer.Answer(head: nil) }) { task, peer, _ in
            let error = await #expect(throws: CourierError.self) { try await task.waitUntilOpen() }
            #expect(error?.code == .timedOut, "\(String(describing: error))")
            await task.close()
            #expect(task.error?.code == .timedOut)
            #expect(await peer.wait { $0.closedConnectionCount == 1 })
        }
    }

    /// OkHttp: readTimeoutDoesNotApplyAcrossFrames and callTimeoutDoesNotApplyOnceConnected. Once
    /// open, the request timeout no longer applies: a message that comes after longer than it
    /// is delivered. (The wait is the case's subject, not a synchronization.)
    @Test func readTimeoutDoesNotApplyAcrossFrames() async throws {
        // Long enough for the handshake on a loaded machine (0.2 s was not, with the WebSocket
        // suites in parallel).
        try await Self.withSocket(configuration: Self.timeout(2)) { task, peer, _ in
            try await task.waitUntilOpen()
            try await Task.sleep(for: .milliseconds(2500))
            var messages = task.messages.makeAsyncIterator()
            try await peer.send(ScriptedWebSocketPeer.text("abc"))
            #expect(try await messages.next() == .text("abc"))
            try await Self.closeFromServer(task, peer)
        }
    }

    /// OkHttp: readTimeoutAppliesWithinFrames. OkHttp fails a frame cut short with its read
    /// timeout; Courier has no read timeout once open: a server that stalls (here inside a
    /// frame, answering no PING either) is given up by the keep-alive, with `timedOut` and 1006.
    @Test func readTimeoutAppliesWithinFrames() async throws {
        var settings = Self.settings
        settings.pingInterval = 0.2
        let script: ScriptedWebSocketPeer.Script = { _, _, accept in .upgrade(accept: accept, frames: [0x81]) }
        try await Self.withSocket(react: ScriptedWebSocketPeer.silent, webSocket: settings, script) { task, peer, _ in
            try await task.waitUntilOpen()
            await task.waitUntilFinished()
            #expect(task.error?.code == .timedOut, "\(String(describing: task.error))")
            #expect(task.closeCode == .abnormalClosure)
            #expect(await peer.wait { $0.closedConnectionCount == 1 })
        }
    }

    /// OkHttp: clientPingsServerOnInterval. PINGs go out on the interval, masked, and their
    /// PONGs keep the connection open. (An interval of 1 s: at 0.1 s a PONG late on a loaded
    /// machine ended the connection, which is `unacknowledgedPingFailsConnection`'s case.)
    @Test func clientPingsServerOnInterval() async throws {
        var settings = Self.settings
        settings.pingInterval = 1
        try await Self.withSocket(webSocket: settings) { task, peer, _ in
            try await task.waitUntilOpen()
            #expect(await peer.wait { Self.frames($0, 0x9).count >= 2 || task.isFinished })
            try #require(!task.isFinished, "\(String(describing: task.error))")
            #expect(Self.frames(peer, 0x9).allSatisfy { $0.masked && $0.fin })
            try await Self.closeFromServer(task, peer)
        }
    }

    /// OkHttp: clientDoesNotPingServerByDefault. OkHttp sends no PING unless asked; Courier's
    /// keep-alive is on by default (every 30 s, as `URLSessionWebSocketTask`'s), and nil turns it
    /// off.
    @Test func clientDoesNotPingServerByDefault() {
        #expect(WebSocketConfiguration().pingInterval == 30)
    }

    /// OkHttp: unacknowledgedPingFailsConnection. A server that answers no PING: the tick after
    /// the first PING gives up, with `timedOut`, no second PING and no close frame (it would not
    /// be answered either).
    @Test func unacknowledgedPingFailsConnection() async throws {
        var settings = Self.settings
        settings.pingInterval = 0.2
        try await Self.withSocket(react: ScriptedWebSocketPeer.silent, webSocket: settings) { task, peer, _ in
            try await task.waitUntilOpen()
            await task.waitUntilFinished()
            #expect(task.error?.code == .timedOut)
            #expect(task.error?.message.contains("did not answer a PING within 0.2 s") == true, "\(String(describing: task.error))")
            #expect(await peer.wait { $0.closedConnectionCount == 1 })
            #expect(peer.frames.map(\.opcode) == [0x9])
        }
    }

    // MARK: Connections

    /// OkHttp: webSocketConnectionIsReleased. OkHttp gives the connection of a refused upgrade
    /// back to its pool, and the next request reuses it; Courier's WebSocket connection is the
    /// task's own and is closed when the handshake fails, and the next request opens another.
    @Test func webSocketConnectionIsReleased() async throws {
        let script: ScriptedWebSocketPeer.Script = { connection, _, _ in
            connection == 0
                ? ScriptedWebSocketPeer.Answer(head: "HTTP/1.1 404 Not Found\r\nContent-Length: 10\r\n\r\nnot found!")
                : ScriptedWebSocketPeer.Answer(head: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        }
        try await Self.withSocket(script) { task, peer, manager in
            await #expect(throws: CourierError.self) { try await task.waitUntilOpen() }
            #expect(await peer.wait { $0.closedConnectionCount == 1 })
            let response = try await manager.responseOfAnyStatus(for: Request(url: URL(string: "http://127.0.0.1:\(peer.port)/")!))
            #expect(response.response.status.code == 200)
            #expect(peer.connectionCount == 2)
        }
    }

    /// OkHttp: reconnectingToNonWebSocket. Twenty tasks one after the other, each made when the
    /// last failed on a `401`: each fails with its response, and each connection is closed.
    @Test func reconnectingToNonWebSocket() async throws {
        let script: ScriptedWebSocketPeer.Script = { _, _, _ in
            ScriptedWebSocketPeer.Answer(head: "HTTP/1.1 401 Unauthorized\r\nContent-Length: 14\r\n\r\nWrong endpoint")
        }
        try await ScriptedWebSocketPeer.with(script) { peer in
            let manager = SessionManager()
            for _ in 0..<20 {
                let task = manager.webSocketTask(with: Request(url: peer.url()), configuration: Self.settings)
                let error = await #expect(throws: CourierError.self) { try await task.waitUntilOpen() }
                #expect(error?.response?.status.code == 401)
                await task.waitUntilFinished()
            }
            #expect(await peer.wait { $0.closedConnectionCount == 20 })
            #expect(manager.webSocketTasks.isEmpty)
            await manager.invalidate(cancelingTasks: true)
        }
    }
}
