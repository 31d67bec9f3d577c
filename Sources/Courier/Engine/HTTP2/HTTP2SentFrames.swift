import NIOCore
import NIOHTTP2

/// What Courier's side of an HTTP/2 connection sent that its errors alone do not tell: whether
/// swift-nio-http2 sent GOAWAY, and which streams it reset, and with what code.
///
/// swift-nio-http2 reports everything through one `errorCaught`: a connection error it found in
/// what the server sent (it sends GOAWAY first: the connection is over), a stream error (it sends
/// RST_STREAM for that stream first: the other streams go on), and a frame it refused to send
/// (nothing goes out: a stream created after the server's GOAWAY, a frame for a stream it no
/// longer knows). The same error type can be either (`NoSuchStream` is a connection error for a
/// frame on a stream long closed, and a dropped frame for a stream already over), so
/// ``HTTP2ConnectionHandler`` asks what went out instead.
///
/// A value fed the bytes swift-nio-http2 writes, in order (the client's preface, then frames):
/// it reads each frame's 9-byte header and skips its payload.
struct HTTP2SentFrames {
    /// How many streams' resets are remembered: those still under way when their reset went out
    /// ask right after.
    static let rememberedResets = 128

    /// The client preface ("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") still to skip.
    private var prefaceLeft: Int
    /// The header of the frame being read, once complete, with its first payload bytes when the
    /// frame is one whose payload matters (RST_STREAM's error code).
    private var frame: [UInt8] = []
    /// Payload bytes of the current frame still to skip.
    private var skipLeft = 0
    /// Whether GOAWAY went out.
    private(set) var sentGoAway = false
    /// The error code of the last GOAWAY sent (NO_ERROR for a graceful one).
    private(set) var goAwayCode: NIOHTTP2.HTTP2ErrorCode?
    /// The streams reset, the most recent last, with the code sent.
    private var resets: [(stream: HTTP2StreamID, code: NIOHTTP2.HTTP2ErrorCode)] = []

    /// - Parameter client: whether the bytes begin with the client preface.
    init(client: Bool = true) {
        self.prefaceLeft = client ? 24 : 0
    }

    /// The code of the RST_STREAM Courier sent for `stream`, if it sent one recently.
    func reset(of stream: HTTP2StreamID) -> NIOHTTP2.HTTP2ErrorCode? {
        self.resets.last { $0.stream == stream }?.code
    }

    /// Reads bytes written, in order.
    mutating func read(_ data: IOData) {
        switch data {
        case .byteBuffer(let buffer):
            self.read(buffer.readableBytesView)
        case .fileRegion(let region):
            // Only ever a DATA payload.
            self.skipLeft = max(0, self.skipLeft - region.readableBytes)
        }
    }

    mutating func read<Bytes: Collection<UInt8>>(_ bytes: Bytes) {
        var index = bytes.startIndex
        while index != bytes.endIndex {
            if self.prefaceLeft > 0 || self.skipLeft > 0 {
                let available = bytes.distance(from: index, to: bytes.endIndex)
                let skipping = self.prefaceLeft > 0 ? min(self.prefaceLeft, available) : min(self.skipLeft, available)
                if self.prefaceLeft > 0 { self.prefaceLeft -= skipping } else { self.skipLeft -= skipping }
                index = bytes.index(index, offsetBy: skipping)
                continue
            }
            self.frame.append(bytes[index])
            index = bytes.index(after: index)
            self.frameGrew()
        }
    }

    /// A byte of the current frame's header (or of an RST_STREAM's payload) arrived.
    private mutating func frameGrew() {
        guard self.frame.count >= 9 else { return }
        let length = Int(self.frame[0]) << 16 | Int(self.frame[1]) << 8 | Int(self.frame[2])
        let type = self.frame[3]
        switch type {
        case 0x3 where length == 4:
            // RST_STREAM: its error code is the payload.
            guard self.frame.count == 13 else { return }
            let stream = Int32(self.frame[5] & 0x7F) << 24 | Int32(self.frame[6]) << 16 | Int32(self.frame[7]) << 8 | Int32(self.frame[8])
            let code = UInt32(self.frame[9]) << 24 | UInt32(self.frame[10]) << 16 | UInt32(self.frame[11]) << 8 | UInt32(self.frame[12])
            self.resets.append((HTTP2StreamID(stream), NIOHTTP2.HTTP2ErrorCode(networkCode: Int(code))))
            if self.resets.count > Self.rememberedResets { self.resets.removeFirst(self.resets.count - Self.rememberedResets) }
            self.frame.removeAll(keepingCapacity: true)
        case 0x7 where length >= 8:
            // GOAWAY: the last stream's id, then its error code, then debug data (skipped).
            self.sentGoAway = true
            guard self.frame.count == 17 else { return }
            let code = UInt32(self.frame[13]) << 24 | UInt32(self.frame[14]) << 16 | UInt32(self.frame[15]) << 8 | UInt32(self.frame[16])
            self.goAwayCode = NIOHTTP2.HTTP2ErrorCode(networkCode: Int(code))
            self.skipLeft = length - 8
            self.frame.removeAll(keepingCapacity: true)
        default:
            if type == 0x7 { self.sentGoAway = true }
            self.skipLeft = length
            self.frame.removeAll(keepingCapacity: true)
        }
    }
}

/// Sits right below swift-nio-http2's handler on an ``HTTP2Connection`` and reads what it writes
/// (``HTTP2SentFrames``), for ``HTTP2ConnectionHandler`` and the connection's streams.
final class HTTP2SentFramesWatcher: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    private(set) var sent = HTTP2SentFrames()

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        self.sent.read(self.unwrapOutboundIn(data))
        context.write(data, promise: promise)
    }
}
