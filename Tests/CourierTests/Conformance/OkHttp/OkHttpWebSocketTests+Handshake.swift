// Ported from OkHttp's okhttp/src/jvmTest/kotlin/okhttp3/internal/ws/WebSocketHttpTest.kt
// (https://github.com/square/okhttp), Copyright (C) 2014 Square, Inc.,
// licensed under the Apache License, Version 2.0.

@testable import Courier
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import Testing

/// `WebSocketHttpTest`'s handshakes that fail, and what the handshake sends and takes.
extension OkHttpWebSocketTests {
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
}
