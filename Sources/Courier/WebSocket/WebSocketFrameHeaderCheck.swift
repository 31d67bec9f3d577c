import NIOCore
import NIOWebSocket

/// A frame whose 64-bit payload length has its most significant bit set: RFC 6455 5.2 says that
/// bit MUST be 0, so the server broke the protocol (1002).
struct WebSocketFrameLengthOverflow: Error, CustomStringConvertible {
    var description: String { "a frame whose 64-bit payload length has its most significant bit set (RFC 6455 5.2)" }
}

/// swift-nio's `WebSocketFrameDecoder`, with the checks of RFC 6455 it reports as another: it
/// throws `invalidFrameLength`, a message too big (1009), for a frame over the maximum size, and
/// so also for a 64-bit length whose most significant bit is set (5.2) and for a control frame
/// over 125 bytes or fragmented (5.5) that is over the maximum too, each a protocol error (1002).
/// Each frame's header is looked at here, once it is whole, before the decoder reads it; the
/// decoder does the rest.
struct WebSocketFrameHeaderCheck: ByteToMessageDecoder {
    typealias InboundOut = WebSocketFrame

    private let frames: WebSocketFrameDecoder
    /// The next byte begins a frame: the decoder has no part of a frame read.
    private var atFrameStart = true

    init(maxFrameSize: Int) {
        self.frames = WebSocketFrameDecoder(maxFrameSize: maxFrameSize)
    }

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        if self.atFrameStart {
            // The decoder is handed a frame only once its header's length is whole, so that it
            // never holds part of a header this check has not seen.
            guard let firstByte = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self),
                let lengthByte = buffer.getInteger(at: buffer.readerIndex + 1, as: UInt8.self)
            else { return .needMoreData }
            // A control frame (opcode 8 to 15) is whole and at most 125 bytes long (5.5), whatever
            // the maximum size: the decoder looks at the size first, and a control frame of 126
            // bytes under a maximum of 125 (a maximum message size under 126), or one longer than
            // the maximum, closed with 1009.
            if firstByte & 0x08 != 0 {
                if firstByte & 0x80 == 0 { throw NIOWebSocketError.fragmentedControlFrame }
                if lengthByte & 0x7F > 125 { throw NIOWebSocketError.multiByteControlFrameLength }
            }
            if lengthByte & 0x7F == 127 {
                guard let length = buffer.getInteger(at: buffer.readerIndex + 2, as: UInt64.self) else { return .needMoreData }
                if length & (1 << 63) != 0 { throw WebSocketFrameLengthOverflow() }
            }
        }
        let state = try self.frames.decode(context: context, buffer: &buffer)
        // `.continue`: a whole frame went on, and the next byte begins another. `.needMoreData`:
        // the decoder read a header (a whole one, when it began here) and waits for the rest of
        // the frame.
        self.atFrameStart = state == .continue
        return state
    }
}
