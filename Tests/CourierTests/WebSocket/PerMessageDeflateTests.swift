import CourierTesting
@testable import Courier
import Foundation
import NIOCore
import NIOHTTP1
import NIOWebSocket
import Testing

/// `permessage-deflate` (RFC 7692): the negotiation, the compressor and decompressor with RFC
/// 7692's own example, and what the connection's state machine does with RSV1.
@Suite("WebSocket permessage-deflate")
struct PerMessageDeflateTests {
    private let allocator = ByteBufferAllocator()

    @Test func rfc7692sHelloExample() throws {
        // RFC 7692, 7.2.3.1: "Hello" compressed in one message is f2 48 cd c9 c9 07 00.
        let deflate = PerMessageDeflate(PerMessageDeflateParameters())
        let compressed = try #require(deflate.compress(ByteBuffer(string: "Hello"), allocator: self.allocator))
        #expect(Array(compressed.readableBytesView) == [0xF2, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00])
        let inflater = PerMessageDeflate(PerMessageDeflateParameters())
        let result = inflater.decompress(ByteBuffer(bytes: [0xF2, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00]), limit: 100, allocator: self.allocator)
        #expect(result == .success(ByteBuffer(string: "Hello")))
        // With the context kept, the second "Hello" refers back to the first (7.2.3.2): shorter.
        let second = try #require(deflate.compress(ByteBuffer(string: "Hello"), allocator: self.allocator))
        #expect(Array(second.readableBytesView) == [0xF2, 0x00, 0x11, 0x00, 0x00])
        #expect(inflater.decompress(second, limit: 100, allocator: self.allocator) == .success(ByteBuffer(string: "Hello")))
    }

    /// RFC 7692 7.2.3.3: a message may end with a final DEFLATE block (BFINAL set); what follows
    /// it is the flush's tail, and the next message is a new stream. (It was refused as invalid:
    /// the connection closed with 1007.) Bytes other than zeros after the final block stay invalid.
    @Test func aMessageEndingWithAFinalBlockInflates() throws {
        let inflater = PerMessageDeflate(PerMessageDeflateParameters())
        let final: [UInt8] = [0xF3, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00, 0x00]
        #expect(inflater.decompress(ByteBuffer(bytes: final), limit: 100, allocator: self.allocator) == .success(ByteBuffer(string: "Hello")))
        #expect(inflater.decompress(ByteBuffer(bytes: final.dropLast()), limit: 100, allocator: self.allocator) == .success(ByteBuffer(string: "Hello")))
        // After a final block the context starts again: a message of the usual kind decodes.
        #expect(
            inflater.decompress(ByteBuffer(bytes: [0xF2, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00]), limit: 100, allocator: self.allocator)
                == .success(ByteBuffer(string: "Hello")))
        #expect(
            PerMessageDeflate(PerMessageDeflateParameters()).decompress(ByteBuffer(bytes: final + [0x01]), limit: 100, allocator: self.allocator)
                == .failure(.invalid))
    }

    /// The output grows by doubling, but never past one byte over the limit nor past what a
    /// `ByteBuffer` can hold: with a limit of 2 GiB or more, about 2 MB of compressed zeros asked
    /// swift-nio for a 4 GiB buffer, which stops the process.
    @Test func theInflatedOutputNeverGrowsPastTheLimit() {
        let limit = Int(UInt32.max)
        #expect(PerMessageDeflate.growth(capacity: 1 << 31, readable: 1 << 31, limit: limit) == Int(UInt32.max) - (1 << 31))
        #expect((1 << 31) + PerMessageDeflate.growth(capacity: 1 << 31, readable: 1 << 31, limit: limit) <= Int(UInt32.max))
        #expect(PerMessageDeflate.growth(capacity: 1024, readable: 1000, limit: 1 << 20) == 1024)
        #expect(PerMessageDeflate.growth(capacity: 1024, readable: 1000, limit: 1200) == 201)
        #expect(PerMessageDeflate.growth(capacity: 300, readable: 300, limit: 300) == 1)
        // Over a real bomb with a limit that is not a power of two, the output stops one byte past it.
        let bomb = PerMessageDeflate(PerMessageDeflateParameters()).compress(ByteBuffer(repeating: 0, count: 300_000), allocator: self.allocator)!
        #expect(PerMessageDeflate(PerMessageDeflateParameters()).decompress(bomb, limit: 100_000, allocator: self.allocator) == .failure(.tooBig))
    }

    /// RFC 7692 7.2.3.6: an empty message is the one byte 0x00, first or after others (with the
    /// context kept, zlib's flush wrote nothing for it, and the empty payload broke Python
    /// websockets' and tornado's inflaters); the next message still decodes. An empty payload
    /// received decodes as an empty message.
    @Test func anEmptyMessageIsOneZeroByteFirstOrAfterOthers() throws {
        let deflate = PerMessageDeflate(PerMessageDeflateParameters())
        let inflater = PerMessageDeflate(PerMessageDeflateParameters())
        for text in ["", "a", "", "", "b"] {
            let compressed = try #require(deflate.compress(ByteBuffer(string: text), allocator: self.allocator))
            if text.isEmpty { #expect(Array(compressed.readableBytesView) == [0x00], "\(Array(compressed.readableBytesView))") }
            #expect(inflater.decompress(compressed, limit: 100, allocator: self.allocator) == .success(ByteBuffer(string: text)))
        }
        #expect(inflater.decompress(ByteBuffer(), limit: 100, allocator: self.allocator) == .success(ByteBuffer()))
        let next = try #require(deflate.compress(ByteBuffer(string: "c"), allocator: self.allocator))
        #expect(inflater.decompress(next, limit: 100, allocator: self.allocator) == .success(ByteBuffer(string: "c")))
    }

    @Test func largeMessagesRoundTripAndTheLimitHolds() throws {
        var parameters = PerMessageDeflateParameters()
        parameters.clientNoContextTakeover = true
        parameters.clientMaxWindowBits = 10
        let deflate = PerMessageDeflate(parameters)
        let inflater = PerMessageDeflate(PerMessageDeflateParameters())
        let text = String(repeating: "courier websocket ", count: 20_000)
        for _ in 0..<3 {
            let compressed = try #require(deflate.compress(ByteBuffer(string: text), allocator: self.allocator))
            #expect(compressed.readableBytes < text.utf8.count / 10)
            #expect(inflater.decompress(compressed, limit: 1 << 20, allocator: self.allocator) == .success(ByteBuffer(string: text)))
        }
        let bomb = try #require(PerMessageDeflate(PerMessageDeflateParameters()).compress(ByteBuffer(repeating: 0, count: 100_000), allocator: self.allocator))
        #expect(PerMessageDeflate(PerMessageDeflateParameters()).decompress(bomb, limit: 1000, allocator: self.allocator) == .failure(.tooBig))
        #expect(PerMessageDeflate(PerMessageDeflateParameters()).decompress(ByteBuffer(bytes: [0xFF, 0xFF, 0xFF]), limit: 1000, allocator: self.allocator) == .failure(.invalid))
    }

    /// The maximum message size applies to a compressed message as inflated. Random bytes grow
    /// when deflated (zlib's stored blocks, 5 bytes each), and a message of exactly the maximum
    /// size was refused with 1009 before it was inflated, as one frame and as fragments: the
    /// compressed bytes were held to the maximum. They are held to what a message of the maximum
    /// takes compressed: more is still 1009 before any inflating, and a bomb 1009 once inflated
    /// past the maximum; an uncompressed message keeps the maximum itself.
    @Test func aMessageOfTheMaximumSizeThatDoesNotCompressIsTaken() throws {
        let size = 100_000
        var random = SeededGenerator(seed: 1_009)
        let bytes = (0..<size).map { _ in UInt8.random(in: 0...255, using: &random) }
        let compressed = try #require(PerMessageDeflate(PerMessageDeflateParameters()).compress(ByteBuffer(bytes: bytes), allocator: self.allocator))
        #expect(compressed.readableBytes > size, "random bytes grow when deflated")
        let bound = PerMessageDeflate.compressedBound(size)
        #expect(compressed.readableBytes <= bound)

        // One frame, then the same compressed bytes in fragments of 16 KiB.
        var machine = WebSocketConnectionStateMachine(maximumMessageSize: size, compression: true)
        #expect(machine.frameReceived(WebSocketFrame(fin: true, rsv1: true, opcode: .binary, data: compressed)) == [.inflate(isText: false, compressed)])
        let inflated = PerMessageDeflate(PerMessageDeflateParameters()).decompress(compressed, limit: machine.maximumMessageSize, allocator: self.allocator)
        #expect(inflated == .success(ByteBuffer(bytes: bytes)))
        #expect(machine.inflated(isText: false, inflated) == [.deliver(.binary(Data(bytes)))])
        var fragmented = WebSocketConnectionStateMachine(maximumMessageSize: size, compression: true)
        var actions: [WebSocketConnectionStateMachine.Action] = []
        var start = 0
        while start < compressed.readableBytes {
            let length = min(16 << 10, compressed.readableBytes - start)
            let piece = compressed.getSlice(at: compressed.readerIndex + start, length: length)!
            actions = fragmented.frameReceived(
                WebSocketFrame(fin: start + length == compressed.readableBytes, rsv1: start == 0, opcode: start == 0 ? .binary : .continuation, data: piece))
            start += length
            if start < compressed.readableBytes { #expect(actions == []) }
        }
        #expect(actions == [.inflate(isText: false, compressed)])

        // Past the bound, in one frame or in fragments: 1009 before anything is inflated.
        var over = WebSocketConnectionStateMachine(maximumMessageSize: size, compression: true)
        #expect(over.frameReceived(WebSocketFrame(fin: true, rsv1: true, opcode: .binary, data: ByteBuffer(repeating: 0, count: bound + 1))).first == .sendClose(.messageTooBig, ""))
        var overInPieces = WebSocketConnectionStateMachine(maximumMessageSize: size, compression: true)
        #expect(overInPieces.frameReceived(WebSocketFrame(fin: false, rsv1: true, opcode: .binary, data: ByteBuffer(repeating: 0, count: bound))) == [])
        #expect(overInPieces.frameReceived(WebSocketFrame(fin: true, opcode: .continuation, data: ByteBuffer(bytes: [0]))).first == .sendClose(.messageTooBig, ""))
        // An uncompressed message is held to the maximum itself.
        var plain = WebSocketConnectionStateMachine(maximumMessageSize: size, compression: true)
        #expect(plain.frameReceived(WebSocketFrame(fin: true, opcode: .binary, data: ByteBuffer(repeating: 0, count: size + 1))).first == .sendClose(.messageTooBig, ""))
        // A bomb is small compressed: taken whole, then 1009 once inflated past the maximum.
        let bomb = try #require(PerMessageDeflate(PerMessageDeflateParameters()).compress(ByteBuffer(repeating: 0, count: 16 * size), allocator: self.allocator))
        var bombed = WebSocketConnectionStateMachine(maximumMessageSize: size, compression: true)
        #expect(bombed.frameReceived(WebSocketFrame(fin: true, rsv1: true, opcode: .binary, data: bomb)) == [.inflate(isText: false, bomb)])
        let result = PerMessageDeflate(PerMessageDeflateParameters()).decompress(bomb, limit: bombed.maximumMessageSize, allocator: self.allocator)
        #expect(result == .failure(.tooBig))
        #expect(bombed.inflated(isText: false, result).first == .sendClose(.messageTooBig, ""))

        // The bound is at most what a `ByteBuffer` holds.
        #expect(PerMessageDeflate.compressedBound(Int(UInt32.max)) == Int(UInt32.max))
        #expect(PerMessageDeflate.compressedBound(.max) == Int(UInt32.max))
    }

    @Test func theServersAnswer() {
        #expect(PerMessageDeflateParameters.parse([]) == .none)
        #expect(PerMessageDeflateParameters.parse(["permessage-deflate"]) == .accepted(PerMessageDeflateParameters()))
        var expected = PerMessageDeflateParameters()
        expected.serverMaxWindowBits = 12
        expected.clientMaxWindowBits = 12
        expected.serverNoContextTakeover = true
        #expect(
            PerMessageDeflateParameters.parse(["permessage-deflate; server_max_window_bits=12; client_max_window_bits=\"12\"; server_no_context_takeover"])
                == .accepted(expected))
        for refused in [
            "x-unknown", "permessage-deflate, permessage-deflate", "permessage-deflate; server_max_window_bits=16",
            "permessage-deflate; client_max_window_bits", "permessage-deflate; foo", "permessage-deflate; server_no_context_takeover; server_no_context_takeover",
        ] {
            guard case .refused = PerMessageDeflateParameters.parse([refused]) else {
                Issue.record("\(refused) was taken")
                continue
            }
        }
        let offering = WebSocketHandshake(key: "dGhlIHNhbXBsZSBub25jZQ==", offersCompression: true)
        let head = HTTPResponseHead(version: .http1_1, status: .switchingProtocols, headers: [
            "Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Accept": "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=",
            "Sec-WebSocket-Extensions": "permessage-deflate; client_max_window_bits=9",
        ])
        #expect(offering.failure(of: head) == nil)
        #expect(WebSocketHandshake(key: "dGhlIHNhbXBsZSBub25jZQ==").failure(of: head) != nil)
    }

    /// An answer with an empty parameter or none at all is refused, and no answer made of the
    /// pieces of one traps: `;` alone, `permessage-deflate; ;` and `permessage-deflate; =` each
    /// trapped on the event loop (a server, or a man in the middle on `ws://`, took the process
    /// down), whether or not the client had offered compression.
    @Test func noAnswerTrapsAndEmptyParametersAreRefused() {
        for refused in [";", " ; ", "permessage-deflate; ;", "permessage-deflate;\t;", "permessage-deflate; =", "permessage-deflate; =12", "permessage-deflate;;x"] {
            guard case .refused = PerMessageDeflateParameters.parse([refused]) else {
                Issue.record("\(refused) was taken")
                continue
            }
        }
        #expect(PerMessageDeflateParameters.parse(["permessage-deflate;"]) == .accepted(PerMessageDeflateParameters()), "a trailing semicolon, as before")
        let pieces = [";", "=", " ", "\t", ",", "\"", "permessage-deflate", "server_max_window_bits", "client_no_context_takeover", "12", "x"]
        var generator = SeededGenerator(seed: 7_692)
        for _ in 0..<3_000 {
            let value = (0..<Int.random(in: 1...8, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined()
            _ = PerMessageDeflateParameters.parse([value])
            for offered in [true, false] {
                let head = HTTPResponseHead(version: .http1_1, status: .switchingProtocols, headers: [
                    "Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Accept": "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=",
                    "Sec-WebSocket-Extensions": value,
                ])
                _ = WebSocketHandshake(key: "dGhlIHNhbXBsZSBub25jZQ==", offersCompression: offered).failure(of: head)
            }
        }
    }

    @Test func rsv1MarksACompressedMessageOnlyWhenNegotiated() {
        var machine = WebSocketConnectionStateMachine(maximumMessageSize: 100, compression: true)
        let payload = ByteBuffer(bytes: [0xF2, 0x48, 0xCD])
        #expect(machine.frameReceived(WebSocketFrame(fin: false, rsv1: true, opcode: .text, data: payload)) == [])
        #expect(
            machine.frameReceived(WebSocketFrame(fin: true, opcode: .continuation, data: ByteBuffer(bytes: [0xC9, 0xC9, 0x07, 0x00])))
                == [.inflate(isText: true, ByteBuffer(bytes: [0xF2, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00]))])
        #expect(machine.inflated(isText: true, .success(ByteBuffer(string: "Hello"))) == [.deliver(.text("Hello"))])
        #expect(machine.inflated(isText: false, .success(ByteBuffer(bytes: [1]))) == [.deliver(.binary(Data([1])))])
        // RSV1 on a continuation or a control frame is a protocol error.
        var continuation = WebSocketConnectionStateMachine(maximumMessageSize: 100, compression: true)
        _ = continuation.frameReceived(WebSocketFrame(fin: false, opcode: .binary, data: payload))
        #expect(continuation.frameReceived(WebSocketFrame(fin: true, rsv1: true, opcode: .continuation, data: payload)).first == .sendClose(.protocolError, ""))
        var control = WebSocketConnectionStateMachine(maximumMessageSize: 100, compression: true)
        #expect(control.frameReceived(WebSocketFrame(fin: true, rsv1: true, opcode: .ping, data: payload)).first == .sendClose(.protocolError, ""))
        // Inflated text that is not UTF-8, or too big, or data that does not inflate.
        var bad = WebSocketConnectionStateMachine(maximumMessageSize: 100, compression: true)
        #expect(bad.inflated(isText: true, .success(ByteBuffer(bytes: [0xFF]))).first == .sendClose(.invalidFramePayloadData, ""))
        var big = WebSocketConnectionStateMachine(maximumMessageSize: 100, compression: true)
        #expect(big.inflated(isText: false, .failure(.tooBig)).first == .sendClose(.messageTooBig, ""))
        var invalid = WebSocketConnectionStateMachine(maximumMessageSize: 100, compression: true)
        #expect(invalid.inflated(isText: false, .failure(.invalid)).first == .sendClose(.invalidFramePayloadData, ""))
    }
}
