// Ported from OkHttp's okhttp/src/jvmTest/kotlin/okhttp3/internal/ws/WebSocketReaderTest.kt and
// WebSocketWriterTest.kt (https://github.com/square/okhttp), Copyright (C) 2014 Square, Inc.,
// licensed under the Apache License, Version 2.0.

@testable import Courier
import Foundation
import NIOCore
import NIOWebSocket
import Testing

/// Twins of `WebSocketReaderTest`'s client-reader cases and `WebSocketWriterTest`'s client-writer
/// cases, over a socket: the ``ScriptedWebSocketPeer`` writes OkHttp's frame bytes right behind
/// its 101 and records what Courier sends back (its frames, masked; its close frame's code).
///
/// Not ported: the server-reader and server-writer cases (`serverSimpleHello`,
/// `clientSentFramesMustBeMasked`, `serverEmptyClose`, …; Courier is a client only),
/// `clientWithCompressionCannotBeUsedAfterClose` (the reader's own life cycle), `closeWithOnlyReasonThrows`
/// (Courier's close always has a code), and `pingTooLongThrows`, `pongTooLongThrows` (Courier's
/// PINGs carry its own 8 bytes; a PONG echoes a PING of at most 125).
@Suite("Conformance: OkHttp WebSocketReaderTest and WebSocketWriterTest")
struct OkHttpWebSocketFrameTests {
    typealias Peer = ScriptedWebSocketPeer

    /// What Courier does with the frames of a row.
    enum Outcome: Sendable {
        /// Delivers these messages; the peer's close (1000) behind them then ends the task.
        case messages([WebSocketMessage])
        /// Answers PINGs with PONGs carrying these payloads.
        case pongs([[UInt8]])
        /// Ends with the server's close frame: its code and reason; Courier's reply carries `reply`.
        case closed(UInt16, String, reply: [UInt8])
        /// Fails: Courier's close frame carries `sent` (nil: none went out), the task's error has
        /// `error`, and its ``WebSocketTask/closeCode`` is `closeCode`.
        case fails(sent: UInt16?, error: CourierError.Code, closeCode: UInt16)
    }

    struct Row: Sendable, CustomTestStringConvertible {
        /// OkHttp's test.
        var name: String
        var bytes: [UInt8]
        /// Whether the peer agrees to permessage-deflate.
        var compression = false
        /// Whether the peer closes the connection after the bytes.
        var thenClose = false
        var outcome: Outcome

        var testDescription: String { self.name }
    }

    static func binary(_ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7) } }

    static let protocolError = Outcome.fails(sent: 1002, error: .invalidResponse, closeCode: 1002)

    static let readerRows: [Row] = [
        Row(name: "controlFramesMustBeFinal", bytes: Peer.hex("0a00"), outcome: protocolError),
        Row(name: "reservedFlag1IsUnsupportedWithNoCompression", bytes: Peer.hex("ca00"), outcome: protocolError),
        Row(name: "reservedFlag1IsUnsupportedForControlFrames", bytes: Peer.hex("ca00"), compression: true, outcome: protocolError),
        // A compressed message begun (RSV1 on its first frame, as it may), then RSV1 on its
        // continuation: only the continuation's RSV1 is wrong. (OkHttp's bytes, `c000` alone,
        // are also a continuation with no message begun, which fails on its own.)
        Row(name: "reservedFlag1IsUnsupportedForContinuationFrames", bytes: Peer.hex("4100c000"), compression: true, outcome: protocolError),
        Row(name: "reservedFlags2and3AreUnsupported (RSV2)", bytes: Peer.hex("aa00"), outcome: protocolError),
        Row(name: "reservedFlags2and3AreUnsupported (RSV3)", bytes: Peer.hex("9a00"), outcome: protocolError),
        // With its masking key (OkHttp's reader fails on the bit before reading one).
        Row(name: "serverSentFramesMustNotBeMasked", bytes: Peer.hex("818001020304"), outcome: protocolError),
        Row(name: "controlFramePayloadMax", bytes: Peer.hex("8a7e007e") + binary(126), outcome: protocolError),
        Row(name: "clientSimpleHello", bytes: Peer.hex("810548656c6c6f"), outcome: .messages([.text("Hello")])),
        Row(name: "clientWithCompressionSimpleUncompressedHello", bytes: Peer.hex("810548656c6c6f"), compression: true, outcome: .messages([.text("Hello")])),
        Row(name: "clientWithCompressionSimpleCompressedHello", bytes: Peer.hex("c107f248cdc9c90700"), compression: true, outcome: .messages([.text("Hello")])),
        // Lengths in more bytes than needed (RFC 6455 5.2 asks for the fewest): taken, as OkHttp takes them.
        Row(name: "clientFramePayloadShort", bytes: Peer.hex("817E000548656c6c6f"), outcome: .messages([.text("Hello")])),
        Row(name: "clientFramePayloadLong", bytes: Peer.hex("817f000000000000000548656c6c6f"), outcome: .messages([.text("Hello")])),
        // A length with its top bit set is a protocol error (RFC 6455 5.2: the bit MUST be 0), as
        // OkHttp fails it; Courier checks each header before swift-nio's decoder, which reports it
        // as a frame over the maximum size.
        Row(name: "clientFramePayloadTooLongThrows", bytes: Peer.hex("817f8000000000000000"), outcome: protocolError),
        Row(name: "clientTwoFrameHello", bytes: Peer.hex("010348656c80026c6f"), outcome: .messages([.text("Hello")])),
        Row(name: "clientWithCompressionTwoFrameHello", bytes: Peer.hex("010348656c80026c6f"), compression: true, outcome: .messages([.text("Hello")])),
        Row(name: "clientWithCompressionTwoFrameCompressedHello", bytes: Peer.hex("4104f248cdc98003c90700"), compression: true,
            outcome: .messages([.text("Hello")])),
        Row(name: "clientTwoFrameHelloWithPongs", bytes: Peer.hex("010348656c" + "8a00" + "8a00" + "8a00" + "8a00" + "80026c6f"),
            outcome: .messages([.text("Hello")])),
        Row(name: "clientTwoFrameCompressedHelloWithPongs", bytes: Peer.hex("4104f248cdc9" + "8a00" + "8a00" + "8a00" + "8a00" + "8003c90700"),
            compression: true, outcome: .messages([.text("Hello")])),
        // OkHttp: EOFException; Courier: the connection closed with no closing handshake.
        Row(name: "clientIncompleteMessageBodyThrows", bytes: Peer.hex("810548656c"), thenClose: true,
            outcome: .fails(sent: nil, error: .connectionClosed, closeCode: 1006)),
        // OkHttp: an IOException; Courier: a message that does not inflate is 1007 (RFC 6455 7.4.1).
        Row(name: "clientUncompressedMessageWithCompressedFlagThrows", bytes: Peer.hex("c10548656c6c6f"), compression: true,
            outcome: .fails(sent: 1007, error: .invalidResponse, closeCode: 1007)),
        Row(name: "clientIncompleteControlFrameBodyThrows", bytes: Peer.hex("8a0548656c"), thenClose: true,
            outcome: .fails(sent: nil, error: .connectionClosed, closeCode: 1006)),
        Row(name: "clientSimpleBinary", bytes: Peer.hex("827E0100") + binary(256), outcome: .messages([.binary(Data(binary(256)))])),
        Row(name: "clientTwoFrameBinary", bytes: Peer.hex("0264") + binary(200).prefix(100) + Peer.hex("8064") + binary(200).suffix(100),
            outcome: .messages([.binary(Data(binary(200)))])),
        Row(name: "twoFrameNotContinuation", bytes: Peer.hex("0264") + binary(200).prefix(100) + Peer.hex("8264") + binary(200).suffix(100),
            outcome: protocolError),
        Row(name: "emptyPingCallsCallback", bytes: Peer.hex("8900"), outcome: .pongs([[]])),
        Row(name: "pingCallsCallback", bytes: Peer.hex("890548656c6c6f"), outcome: .pongs([Array("Hello".utf8)])),
        Row(name: "emptyCloseCallsCallback", bytes: Peer.hex("8800"), outcome: .closed(1005, "", reply: [])),
        Row(name: "closeLengthOfOneThrows", bytes: Peer.hex("880100"), outcome: protocolError),
        Row(name: "closeCallsCallback", bytes: Peer.hex("880703e848656c6c6f"), outcome: .closed(1000, "Hello", reply: [0x03, 0xE8])),
        Row(name: "closeIncompleteCallsCallback", bytes: Peer.hex("880703e948656c6c6f"), thenClose: true,
            outcome: .closed(1001, "Hello", reply: [0x03, 0xE9])),
        Row(name: "closeOutOfRangeThrows (1)", bytes: Peer.hex("88020001"), outcome: protocolError),
        Row(name: "closeOutOfRangeThrows (5000)", bytes: Peer.hex("88021388"), outcome: protocolError),
        // A few of `closeReservedSetThrows`'s 1,988 codes over the socket; all of them below.
        Row(name: "closeReservedSetThrows (1004)", bytes: Peer.hex("880203ec"), outcome: protocolError),
        Row(name: "closeReservedSetThrows (1005)", bytes: Peer.hex("880203ed"), outcome: protocolError),
        Row(name: "closeReservedSetThrows (1006)", bytes: Peer.hex("880203ee"), outcome: protocolError),
        Row(name: "closeReservedSetThrows (1015)", bytes: Peer.hex("880203f7"), outcome: protocolError),
        Row(name: "closeReservedSetThrows (2999)", bytes: Peer.hex("88020bb7"), outcome: protocolError),
        // Not OkHttp's reader tests, the brief's: text, and a close reason, that are not UTF-8
        // (1007, RFC 6455 8.1), and a reserved opcode (1002, 5.2).
        Row(name: "invalid UTF-8 in a text message", bytes: Peer.hex("81046869fffe"), outcome: .fails(sent: 1007, error: .invalidResponse, closeCode: 1007)),
        Row(name: "invalid UTF-8 in a close reason", bytes: Peer.hex("880403e8fffe"), outcome: .fails(sent: 1007, error: .invalidResponse, closeCode: 1007)),
        Row(name: "a reserved opcode", bytes: Peer.hex("8300"), outcome: protocolError),
    ]

    /// OkHttp's client-reader cases: the frames right behind the 101, and what Courier makes of them.
    @Test(arguments: Self.readerRows)
    func reader(_ row: Row) async throws {
        let frames: [UInt8]
        if case .messages = row.outcome { frames = row.bytes + Peer.close(1000) } else { frames = row.bytes }
        let extensions = row.compression ? [("Sec-WebSocket-Extensions", "permessage-deflate")] : []
        let script: ScriptedWebSocketPeer.Script = { _, _, accept in
            var answer = ScriptedWebSocketPeer.Answer.upgrade(accept: accept, extensions, frames: frames)
            answer.thenClose = row.thenClose
            return answer
        }
        try await OkHttpWebSocketTests.withSocket(script) { task, peer, _ in
            var received: [WebSocketMessage] = []
            var thrown: (any Error)?
            if case .pongs(let payloads) = row.outcome {
                #expect(await peer.wait { OkHttpWebSocketTests.frames($0, 0xA).count == payloads.count })
                #expect(OkHttpWebSocketTests.frames(peer, 0xA).map(\.payload) == payloads)
                #expect(OkHttpWebSocketTests.frames(peer, 0xA).allSatisfy { $0.masked })
                #expect(!task.isFinished)
                try await OkHttpWebSocketTests.closeFromServer(task, peer)
                return
            }
            do {
                for try await message in task.messages { received.append(message) }
            } catch {
                thrown = error
            }
            await task.waitUntilFinished()
            let closes = OkHttpWebSocketTests.frames(peer, 0x8)
            switch row.outcome {
            case .pongs: break
            case .messages(let messages):
                #expect(received == messages)
                #expect(thrown == nil && task.error == nil, "\(String(describing: task.error))")
                #expect(task.closeCode == .normalClosure)
            case .closed(let code, let reason, let reply):
                #expect(received.isEmpty)
                #expect(thrown == nil && task.error == nil, "\(String(describing: task.error))")
                #expect(task.closeCode?.rawValue == code)
                #expect(task.closeReason == reason)
                if !row.thenClose {
                    #expect(await peer.wait { OkHttpWebSocketTests.frames($0, 0x8).count == 1 })
                    #expect(OkHttpWebSocketTests.frames(peer, 0x8).first?.payload == reply)
                }
            case .fails(let sent, let error, let closeCode):
                #expect((thrown as? CourierError)?.code == error, "\(String(describing: thrown))")
                #expect(task.error?.code == error)
                #expect(task.closeCode?.rawValue == closeCode)
                if let sent {
                    #expect(await peer.wait { OkHttpWebSocketTests.frames($0, 0x8).count == 1 })
                    #expect(OkHttpWebSocketTests.frames(peer, 0x8).first?.closeCode == sent)
                } else {
                    #expect(closes.isEmpty)
                    #expect(task.error?.message.hasSuffix("the connection closed with no closing handshake") == true, "\(String(describing: task.error))")
                }
            }
            #expect(await peer.wait { $0.closedConnectionCount == 1 })
        }
    }

    /// OkHttp: closeReservedSetThrows and closeOutOfRangeThrows, every code: a close frame from
    /// the server with a code OkHttp refuses is a protocol error in Courier too, and every code
    /// OkHttp takes Courier takes (1000 to 4999 but for 1004 to 1006 and 1015 to 2999; 1012 to
    /// 1014, registered with IANA since, are taken by both).
    @Test func closeCodesTheReaderTakes() {
        var refused = 0
        for code in UInt16(0)...UInt16(5100) {
            let okHttpTakes = (1000..<5000).contains(code) && !(1004...1006).contains(code) && !(1015...2999).contains(code)
            var machine = WebSocketConnectionStateMachine(maximumMessageSize: 100)
            var payload = ByteBuffer()
            payload.writeInteger(code)
            let actions = machine.frameReceived(WebSocketFrame(fin: true, opcode: .connectionClose, data: payload))
            var courierTakes = true
            if case .finish(.protocolViolation) = actions.last { courierTakes = false }
            #expect(courierTakes == okHttpTakes, "code \(code)")
            if (1004...1006).contains(code) || (1015...2999).contains(code) { refused += courierTakes ? 0 : 1 }
        }
        #expect(refused == 1988)
    }

    // MARK: Writer

    /// OkHttp: clientEmptyClose, clientCloseWithCode, clientCloseWithCodeAndReason,
    /// closeCodeOutOfRangeThrows, closeReservedThrows. A code RFC 6455 7.4 forbids on the wire
    /// (1005, 1006, 1015, below 1000, 1016 to 2999, 5000 and up): OkHttp throws
    /// `IllegalArgumentException`; Courier sends a close frame with no code and no reason
    /// (documented on ``WebSocketTask/close(code:reason:)``), which the server reads as 1005.
    @Test(arguments: [
        (UInt16(1001), "", [UInt8]([0x03, 0xE9])),
        (1001, "Hello", [0x03, 0xE9] + Array("Hello".utf8)),
        (3000, "app", [0x0B, 0xB8] + Array("app".utf8)),
        (1005, "Hello", []),
        (1006, "", []),
        (1015, "", []),
        (999, "Hello", []),
        (5000, "Hello", []),
    ])
    func clientClose(code: UInt16, reason: String, payload: [UInt8]) async throws {
        try await OkHttpWebSocketTests.withSocket { task, peer, _ in
            try await task.waitUntilOpen()
            await task.close(code: WebSocketCloseCode(rawValue: code), reason: reason)
            let close = try #require(OkHttpWebSocketTests.frames(peer, 0x8).first)
            #expect(close.payload == payload)
            #expect(close.masked && close.fin)
            #expect(task.error == nil)
            // The peer echoes the code it got; none for an empty close (1005).
            #expect(task.closeCode?.rawValue == (payload.isEmpty ? 1005 : code))
        }
    }

    /// OkHttp: clientTextMessage, clientBinary, and the length cases (`serverMessageLengthShort`,
    /// `serverMessageLengthLong`, for the client): each length in the fewest bytes (RFC 6455 5.2),
    /// every frame masked. Past 64 KiB Courier sends fragments (its documented fragment size).
    @Test func clientFramesAreMaskedWithTheShortestLength() async throws {
        var settings = OkHttpWebSocketTests.settings
        settings.permessageDeflate = false
        try await OkHttpWebSocketTests.withSocket(webSocket: settings) { task, peer, _ in
            let sizes = [0, 125, 126, 65535, 65536]
            for size in sizes { try await task.send(.binary(Data(Self.binary(size)))) }
            try await task.send(.text(String(repeating: "a", count: 65537)))
            #expect(await peer.wait { $0.frames.count == sizes.count + 2 })
            let frames = peer.frames
            #expect(frames.allSatisfy { $0.masked })
            #expect(frames.prefix(sizes.count).map(\.extendedLength) == [0, 0, 2, 2, 8])
            #expect(frames.prefix(sizes.count).map(\.payload) == sizes.map { Self.binary($0) })
            // The text of 65,537 bytes: a first fragment of 65,536, then a continuation of 1.
            #expect(frames.suffix(2).map(\.opcode) == [0x1, 0x0])
            #expect(frames.suffix(2).map(\.fin) == [false, true])
            #expect(frames.suffix(2).map(\.payload.count) == [65536, 1])
            try await OkHttpWebSocketTests.closeFromServer(task, peer)
        }
    }

    /// OkHttp: clientEmptyPing, clientPingWithPayload. Courier's PING is masked, carries its own
    /// payload (at most 125 bytes), and its PONG answers ``WebSocketTask/sendPing()``.
    @Test func clientPing() async throws {
        try await OkHttpWebSocketTests.withSocket { task, peer, _ in
            try await task.sendPing()
            let ping = try #require(OkHttpWebSocketTests.frames(peer, 0x9).first)
            #expect(ping.masked && ping.fin && ping.payload.count <= 125)
            try await OkHttpWebSocketTests.closeFromServer(task, peer)
        }
    }
}
