@testable import Courier
import NIOCore
import NIOHTTP2
import Testing

/// ``HTTP2SentFrames`` reads what swift-nio-http2 writes (the preface, then frames, cut anywhere
/// into writes), and ``HTTP2ConnectionStateMachine/endsConnection(_:goAwaySent:)`` decides from it.
@Suite("HTTP/2: what Courier's side sent, and which errors end a connection")
struct HTTP2SentFramesTests {
    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    /// A frame's bytes: its 9-byte header, then `payload`.
    static func frame(type: UInt8, stream: UInt32 = 0, payload: [UInt8]) -> [UInt8] {
        let length = payload.count
        return [UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF), type, 0]
            + [UInt8(stream >> 24 & 0x7F), UInt8(stream >> 16 & 0xFF), UInt8(stream >> 8 & 0xFF), UInt8(stream & 0xFF)] + payload
    }

    static let settings = frame(type: 0x4, payload: [0, 3, 0, 0, 0, 0])
    /// DATA whose payload looks like a GOAWAY header: it must be skipped, not read.
    static let data = frame(type: 0x0, stream: 1, payload: frame(type: 0x7, payload: [0, 0, 0, 0, 0, 0, 0, 0]))
    static let reset = frame(type: 0x3, stream: 5, payload: [0, 0, 0, 0x8])
    static let goAway = frame(type: 0x7, payload: [0, 0, 0, 3, 0, 0, 0, 0x1])

    @Test func resetsAndGoAwayAreFoundWhereverTheWritesCut() {
        let bytes = Self.preface + Self.settings + Self.data + Self.reset
        for size in [1, 2, 5, 9, 13, bytes.count] {
            var sent = HTTP2SentFrames()
            var start = 0
            while start < bytes.count {
                sent.read(bytes[start..<min(start + size, bytes.count)])
                start += size
            }
            #expect(!sent.sentGoAway, "a DATA payload is not a frame (writes of \(size))")
            #expect(sent.reset(of: 5) == .cancel, "writes of \(size)")
            #expect(sent.reset(of: 1) == nil)
            #expect(sent.goAwayCode == nil)
            var goAway = Self.goAway[...]
            while !goAway.isEmpty {
                sent.read(goAway.prefix(size))
                goAway = goAway.dropFirst(size)
            }
            #expect(sent.sentGoAway)
            #expect(sent.goAwayCode == .protocolError, "writes of \(size)")
            // With debug data, which is skipped: the frames after it are still read.
            sent.read(Self.frame(type: 0x7, payload: [0, 0, 0, 3, 0, 0, 0, 0x9] + Array("too large".utf8))[...])
            #expect(sent.goAwayCode == .compressionError)
            sent.read(Self.frame(type: 0x3, stream: 7, payload: [0, 0, 0, 0x1])[...])
            #expect(sent.reset(of: 7) == .protocolError)
        }
    }

    @Test func onlyRecentResetsAreRemembered() {
        var sent = HTTP2SentFrames(client: false)
        for stream in stride(from: UInt32(1), through: UInt32(2 * HTTP2SentFrames.rememberedResets + 1), by: 2) {
            sent.read(Self.frame(type: 0x3, stream: stream, payload: [0, 0, 0, 0x1]))
        }
        #expect(sent.reset(of: 1) == nil)
        #expect(sent.reset(of: HTTP2StreamID(2 * HTTP2SentFrames.rememberedResets + 1)) == .protocolError)
    }

    @Test func onlyConnectionErrorsEndTheConnection() {
        // Not HTTP/2's: the connection below failed.
        #expect(HTTP2ConnectionStateMachine.endsConnection(ChannelError.eof, goAwaySent: false))
        // swift-nio-http2 sent GOAWAY: it found a connection error.
        #expect(HTTP2ConnectionStateMachine.endsConnection(NIOHTTP2Errors.noSuchStream(streamID: 3), goAwaySent: true))
        // A frame for a stream whose channel is gone (reported and dropped), a stream created
        // after the server's GOAWAY (refused, nothing sent), a stream error (that stream reset).
        #expect(!HTTP2ConnectionStateMachine.endsConnection(NIOHTTP2Errors.noSuchStream(streamID: 3), goAwaySent: false))
        #expect(!HTTP2ConnectionStateMachine.endsConnection(NIOHTTP2Errors.createdStreamAfterGoaway(), goAwaySent: false))
        #expect(!HTTP2ConnectionStateMachine.endsConnection(NIOHTTP2Errors.contentLengthViolated(), goAwaySent: false))
        // A frame it could not encode: header compression may disagree with the server's now.
        #expect(HTTP2ConnectionStateMachine.endsConnection(NIOHTTP2Errors.unableToSerializeFrame(), goAwaySent: false))
    }
}
