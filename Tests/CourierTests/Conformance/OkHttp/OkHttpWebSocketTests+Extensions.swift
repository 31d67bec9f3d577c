// Ported from OkHttp's okhttp/src/jvmTest/kotlin/okhttp3/internal/ws/WebSocketExtensionsTest.kt and
// the permessage-deflate cases of WebSocketHttpTest.kt (https://github.com/square/okhttp),
// Copyright (C) 2020 Square, Inc., licensed under the Apache License, Version 2.0.

@testable import Courier
import CompressNIO
import Foundation
import NIOCore
import Testing

/// Twins of `WebSocketExtensionsTest` (reading the server's `Sec-WebSocket-Extensions`) against
/// ``PerMessageDeflateParameters/parse(_:)``, and of `WebSocketHttpTest`'s permessage-deflate
/// sessions over a socket.
///
/// OkHttp's parser reports what it did not understand as `unknownValues`, and OkHttp then opens
/// the connection and closes it with 1010; Courier refuses such an answer in the handshake, which
/// fails with `invalidResponse` (RFC 6455 4.1 and RFC 7692 5 have the client fail the connection;
/// no close frame is needed before it is open). A row that OkHttp marks `unknownValues` is a row
/// Courier refuses, but for the differences named on the rows.
@Suite("Conformance: OkHttp WebSocketExtensionsTest and compressed sessions")
struct OkHttpWebSocketExtensionsTests {
    typealias Parameters = PerMessageDeflateParameters

    static func parameters(
        clientNoContextTakeover: Bool = false, serverNoContextTakeover: Bool = false, clientMaxWindowBits: Int = 15, serverMaxWindowBits: Int = 15
    ) -> Parameters.Answer {
        .accepted(
            Parameters(
                clientNoContextTakeover: clientNoContextTakeover, serverNoContextTakeover: serverNoContextTakeover,
                clientMaxWindowBits: clientMaxWindowBits, serverMaxWindowBits: serverMaxWindowBits))
    }

    /// Whether `answer` is a refusal.
    static func isRefused(_ answer: Parameters.Answer) -> Bool {
        if case .refused = answer { return true }
        return false
    }

    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        /// The `Sec-WebSocket-Extensions` field values.
        var values: [String]
        /// nil: refused.
        var expected: Parameters.Answer?
        var testDescription: String { "\(self.name): \(self.values)" }
    }

    static let rows: [Row] = [
        Row(name: "emptyHeader", values: [""], expected: Parameters.Answer.none),
        Row(name: "noExtensionHeader", values: [], expected: Parameters.Answer.none),
        // OkHttp marks the empty element `unknownValues`; RFC 9110 5.6.1 has a recipient ignore
        // empty list elements, and Courier does.
        Row(name: "emptyExtension", values: [", permessage-deflate"], expected: parameters()),
        Row(name: "unknownExtension", values: ["unknown-ext"], expected: nil),
        Row(name: "perMessageDeflate", values: ["permessage-deflate"], expected: parameters()),
        Row(name: "emptyParameters", values: ["permessage-deflate;"], expected: parameters()),
        Row(name: "repeatedPerMessageDeflate", values: ["permessage-deflate, permessage-deflate; server_no_context_takeover"], expected: nil),
        Row(name: "multiplePerMessageDeflateHeaders", values: ["", "permessage-deflate"], expected: parameters()),
        Row(
            name: "noContextTakeoverServerAndClient", values: ["permessage-deflate; server_no_context_takeover; client_no_context_takeover"],
            expected: parameters(clientNoContextTakeover: true, serverNoContextTakeover: true)),
        Row(
            name: "everything",
            values: ["permessage-deflate; client_max_window_bits=15; client_no_context_takeover; server_max_window_bits=8; server_no_context_takeover"],
            expected: parameters(clientNoContextTakeover: true, serverNoContextTakeover: true, clientMaxWindowBits: 15, serverMaxWindowBits: 8)),
        Row(
            name: "noWhitespace", values: ["permessage-deflate;server_no_context_takeover;client_no_context_takeover"],
            expected: parameters(clientNoContextTakeover: true, serverNoContextTakeover: true)),
        Row(
            name: "excessWhitespace", values: ["  permessage-deflate\t ; \tserver_no_context_takeover\t ;  client_no_context_takeover  "],
            expected: parameters(clientNoContextTakeover: true, serverNoContextTakeover: true)),
        Row(
            name: "noContextTakeoverClientAndServer", values: ["permessage-deflate; client_no_context_takeover; server_no_context_takeover"],
            expected: parameters(clientNoContextTakeover: true, serverNoContextTakeover: true)),
        Row(name: "noContextTakeoverClient", values: ["permessage-deflate; client_no_context_takeover"], expected: parameters(clientNoContextTakeover: true)),
        Row(name: "noContextTakeoverServer", values: ["permessage-deflate; server_no_context_takeover"], expected: parameters(serverNoContextTakeover: true)),
        Row(name: "clientMaxWindowBits", values: ["permessage-deflate; client_max_window_bits=8"], expected: parameters(clientMaxWindowBits: 8)),
        Row(name: "clientMaxWindowBits", values: ["permessage-deflate; client_max_window_bits=\"8\""], expected: parameters(clientMaxWindowBits: 8)),
        Row(name: "clientMaxWindowBits", values: ["permessage-deflate; client_max_window_bits=15"], expected: parameters(clientMaxWindowBits: 15)),
        Row(name: "clientMaxWindowBits", values: ["permessage-deflate; client_max_window_bits=\"15\""], expected: parameters(clientMaxWindowBits: 15)),
        Row(name: "clientMaxWindowBits", values: ["permessage-deflate; client_max_window_bits\t =\t 8\t "], expected: parameters(clientMaxWindowBits: 8)),
        Row(name: "clientMaxWindowBits", values: ["permessage-deflate; client_max_window_bits\t =\t \"8\"\t "], expected: parameters(clientMaxWindowBits: 8)),
        Row(name: "serverMaxWindowBits", values: ["permessage-deflate; server_max_window_bits=8"], expected: parameters(serverMaxWindowBits: 8)),
        Row(name: "serverMaxWindowBits", values: ["permessage-deflate; server_max_window_bits=\"8\""], expected: parameters(serverMaxWindowBits: 8)),
        Row(name: "serverMaxWindowBits", values: ["permessage-deflate; server_max_window_bits=15"], expected: parameters(serverMaxWindowBits: 15)),
        Row(name: "serverMaxWindowBits", values: ["permessage-deflate; server_max_window_bits=\"15\""], expected: parameters(serverMaxWindowBits: 15)),
        Row(name: "serverMaxWindowBits", values: ["permessage-deflate; server_max_window_bits\t =\t 8\t "], expected: parameters(serverMaxWindowBits: 8)),
        Row(name: "serverMaxWindowBits", values: ["permessage-deflate; server_max_window_bits\t =\t \"8\"\t "], expected: parameters(serverMaxWindowBits: 8)),
        Row(name: "unknownParameters", values: ["permessage-deflate; unknown"], expected: nil),
        Row(name: "unknownParameters", values: ["permessage-deflate; unknown_parameter=15"], expected: nil),
        Row(name: "unknownParameters", values: ["permessage-deflate; unknown_parameter=15; unknown_parameter=15"], expected: nil),
        Row(name: "unexpectedValue", values: ["permessage-deflate; client_no_context_takeover=true"], expected: nil),
        Row(name: "unexpectedValue", values: ["permessage-deflate; server_max_window_bits=true"], expected: nil),
        Row(name: "absentValue", values: ["permessage-deflate; server_max_window_bits"], expected: nil),
        Row(
            name: "uppercase", values: ["PERMESSAGE-DEFLATE; SERVER_NO_CONTEXT_TAKEOVER; CLIENT_NO_CONTEXT_TAKEOVER"],
            expected: parameters(clientNoContextTakeover: true, serverNoContextTakeover: true)),
        // Not OkHttp's rows: RFC 7692 7 has the client fail a response with a parameter given
        // twice, or with a value that is not one (a window of 8 to 15 in decimal without leading
        // zeroes, 7.1.2; a quoted value that is not closed, or a sign, are not that).
        Row(name: "a repeated parameter", values: ["permessage-deflate; server_no_context_takeover; server_no_context_takeover"], expected: nil),
        Row(name: "a window out of range", values: ["permessage-deflate; server_max_window_bits=7"], expected: nil),
        Row(name: "a window out of range", values: ["permessage-deflate; client_max_window_bits=16"], expected: nil),
        Row(name: "a window with a leading zero", values: ["permessage-deflate; server_max_window_bits=08"], expected: nil),
        Row(name: "a window with a sign", values: ["permessage-deflate; client_max_window_bits=+9"], expected: nil),
        Row(name: "a window with an unclosed quote", values: ["permessage-deflate; server_max_window_bits=\"9"], expected: nil),
        Row(name: "a window with quotes doubled", values: ["permessage-deflate; server_max_window_bits=\"\"9\"\""], expected: nil),
        Row(name: "a window with an escape", values: ["permessage-deflate; server_max_window_bits=\"1\\2\""], expected: parameters(serverMaxWindowBits: 12)),
    ]

    /// OkHttp's `WebSocketExtensionsTest`, a row a case (one of its tests may hold several).
    @Test(arguments: Self.rows)
    func parse(_ row: Row) {
        let answer = Parameters.parse(row.values)
        if let expected = row.expected {
            #expect(answer == expected)
        } else {
            #expect(Self.isRefused(answer), "\(answer)")
        }
    }

    // MARK: Sessions

    /// The texts of a client's compressed messages (payloads without their `00 00 FF FF`, RFC
    /// 7692 7.2.1), inflated in order by one raw DEFLATE stream; `reset` starts a new stream for
    /// each (the client's `client_no_context_takeover`).
    static func inflate(_ payloads: [[UInt8]], reset: Bool = false, windowBits: Int32 = 15) throws -> [String] {
        let decompressor = try ZlibDecompressor(algorithm: .deflate, windowSize: windowBits)
        return try payloads.map { payload in
            if reset { try decompressor.reset() }
            var input = ByteBuffer(bytes: payload + [0x00, 0x00, 0xFF, 0xFF])
            var output = ByteBuffer()
            output.reserveCapacity(1 << 16)
            do {
                try decompressor.inflate(from: &input, to: &output)
            } catch let error as CompressNIOError where error == .inputBufferOverflow {
                // All of the input was taken (a sync flush does not end the stream).
            }
            return String(decoding: output.readableBytesView, as: UTF8.self)
        }
    }

    /// "Hello" compressed (RFC 7692 7.2.3.1), and compressed again behind the first in the same
    /// stream (7.2.3.2: a back-reference into the first).
    static let hello: [UInt8] = [0xF2, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00]
    static let helloAgain: [UInt8] = [0xF2, 0x00, 0x11, 0x00, 0x00]

    /// OkHttp: compressedMessages, compressedMessagesNoClientContextTakeover,
    /// compressedMessagesNoServerContextTakeover, serverMaxWindowBitsJustRight. Messages each way,
    /// compressed (RSV1 on the frame), an empty one each way, and one each way that may share the
    /// stream's context with the first: the server's second `Hello` refers back into its first
    /// unless it said `server_no_context_takeover`, and the client's is compressed alone when the
    /// server said `client_no_context_takeover`.
    @Test(arguments: [
        "permessage-deflate", "permessage-deflate; client_no_context_takeover", "permessage-deflate; server_no_context_takeover",
        "permessage-deflate; server_max_window_bits=15",
    ])
    func compressedMessages(_ extensions: String) async throws {
        let serverNoContextTakeover = extensions.contains("server_no_context_takeover")
        let clientNoContextTakeover = extensions.contains("client_no_context_takeover")
        let script: ScriptedWebSocketPeer.Script = { _, _, accept in .upgrade(accept: accept, [("Sec-WebSocket-Extensions", extensions)]) }
        try await OkHttpWebSocketTests.withSocket(script) { task, peer, _ in
            try await task.waitUntilOpen()
            var messages = task.messages.makeAsyncIterator()
            let frame = { (payload: [UInt8]) in ScriptedWebSocketPeer.frame(0x1, payload, rsv1: true) }
            try await peer.send(frame(Self.hello))
            #expect(try await messages.next() == .text("Hello"))
            try await task.send(.text("Hello"))
            // An empty message: one 0x00 byte (RFC 7692 7.2.3.6), or no byte at all.
            try await peer.send(frame([0x00]))
            #expect(try await messages.next() == .text(""))
            try await peer.send(frame([]))
            #expect(try await messages.next() == .text(""))
            try await task.send(.text(""))
            try await peer.send(frame(serverNoContextTakeover ? Self.hello : Self.helloAgain))
            #expect(try await messages.next() == .text("Hello"))
            try await task.send(.text("Hello"))
            #expect(await peer.wait { OkHttpWebSocketTests.frames($0, 0x1).count == 3 })
            let sent = OkHttpWebSocketTests.frames(peer, 0x1)
            #expect(sent.allSatisfy { $0.rsv1 && $0.masked && $0.fin })
            #expect(try Self.inflate(sent.map(\.payload), reset: clientNoContextTakeover) == ["Hello", "", "Hello"])
            #expect(sent.first?.payload == Self.hello, "zlib's Hello, as RFC 7692 7.2.3.1 has it")
            // Alone, the second Hello is compressed as the first was; with context, it refers back.
            #expect((sent.last?.payload == Self.hello) == clientNoContextTakeover)
            try await OkHttpWebSocketTests.closeFromServer(task, peer)
            let offers = peer.heads.first?.lowercased().split(separator: "\r\n").filter { $0.hasPrefix("sec-websocket-extensions:") }
            // OkHttp offers `permessage-deflate` alone; Courier also lets the server cap its window.
            #expect(offers == ["sec-websocket-extensions: permessage-deflate; client_max_window_bits"])
        }
    }

    /// A server that caps the client's window (`client_max_window_bits=8`, RFC 7692 7.1.2.2)
    /// inflates Courier's messages with a window of 256 bytes: nothing refers further back, even
    /// in a message whose every 300 bytes repeat (zlib takes no 8-bit raw window, and Courier's
    /// 9-bit one reaches back at most 250 bytes).
    @Test func aCappedClientWindowIsHonoured() async throws {
        let script: ScriptedWebSocketPeer.Script = { _, _, accept in
            .upgrade(accept: accept, [("Sec-WebSocket-Extensions", "permessage-deflate; client_max_window_bits=8")])
        }
        try await OkHttpWebSocketTests.withSocket(script) { task, peer, _ in
            var generator = SystemRandomNumberGenerator()
            let block = String((0..<300).map { _ in Character(UnicodeScalar(UInt8.random(in: 97...122, using: &generator))) })
            let text = String(repeating: block, count: 4)
            try await task.send(.text(text))
            try await task.send(.text(text))
            #expect(await peer.wait { OkHttpWebSocketTests.frames($0, 0x1).count == 2 })
            let payloads = OkHttpWebSocketTests.frames(peer, 0x1).map(\.payload)
            #expect(try Self.inflate(payloads, windowBits: 8) == [text, text])
            try await OkHttpWebSocketTests.closeFromServer(task, peer)
        }
    }

    /// OkHttp: unexpectedExtensionParameter, clientMaxWindowBitsIncluded, serverMaxWindowBitsTooLow,
    /// serverMaxWindowBitsTooHigh. OkHttp opens the connection, then closes it with 1010 and
    /// "unexpected Sec-WebSocket-Extensions in response header"; Courier fails the handshake
    /// (`invalidResponse`, nothing sent; RFC 7692 5: the client fails the connection).
    ///
    /// `client_max_window_bits=15` fails OkHttp, which did not offer the parameter; Courier offers
    /// it (`permessage-deflate; client_max_window_bits`), so the server may answer with any window
    /// of 8 to 15, and the connection opens (RFC 7692 7.1.2.2).
    @Test(arguments: [
        ("permessage-deflate; unknown_parameter=15", false), ("permessage-deflate; client_max_window_bits=15", true),
        ("permessage-deflate; server_max_window_bits=7", false), ("permessage-deflate; server_max_window_bits=16", false),
    ])
    func extensionNegotiationFailure(_ extensions: String, opens: Bool) async throws {
        let script: ScriptedWebSocketPeer.Script = { _, _, accept in .upgrade(accept: accept, [("Sec-WebSocket-Extensions", extensions)]) }
        try await OkHttpWebSocketTests.withSocket(script) { task, peer, _ in
            if opens {
                try await task.waitUntilOpen()
                try await OkHttpWebSocketTests.closeFromServer(task, peer)
                return
            }
            let error = await #expect(throws: CourierError.self) { try await task.waitUntilOpen() }
            #expect(error?.code == .invalidResponse)
            #expect(error?.message.contains("permessage-deflate") == true, "\(String(describing: error))")
            #expect(await peer.wait { $0.closedConnectionCount == 1 })
            #expect(peer.frames.isEmpty)
        }
    }

    /// An answer with permessage-deflate when Courier did not offer it
    /// (``WebSocketConfiguration/permessageDeflate`` off) fails the handshake (RFC 6455 4.1).
    @Test func anExtensionNotOfferedFailsTheHandshake() async throws {
        var settings = OkHttpWebSocketTests.settings
        settings.permessageDeflate = false
        let script: ScriptedWebSocketPeer.Script = { _, _, accept in .upgrade(accept: accept, [("Sec-WebSocket-Extensions", "permessage-deflate")]) }
        try await OkHttpWebSocketTests.withSocket(webSocket: settings, script) { task, peer, _ in
            let error = await #expect(throws: CourierError.self) { try await task.waitUntilOpen() }
            #expect(error?.code == .invalidResponse)
            #expect(error?.message.contains("not offered") == true, "\(String(describing: error))")
            #expect(peer.heads.first?.lowercased().contains("sec-websocket-extensions") == false)
        }
    }
}
