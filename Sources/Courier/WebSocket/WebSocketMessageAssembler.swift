import Foundation
import NIOCore
import NIOWebSocket

/// Puts data frames together into messages (RFC 6455, 5.4): a text or binary frame starts one,
/// continuations follow until the one with FIN. Control frames never come here (they may arrive
/// between fragments; ``WebSocketConnectionStateMachine`` takes them). A pure state machine: frames
/// in, outcomes out.
struct WebSocketMessageAssembler {
    /// What a frame led to.
    enum Outcome: Equatable {
        /// The message goes on.
        case incomplete
        /// A whole message.
        case message(WebSocketMessage)
        /// A whole message compressed with `permessage-deflate` (RFC 7692): text when `isText`,
        /// still to be inflated (and then checked, if text, to be UTF-8).
        case compressed(isText: Bool, ByteBuffer)
        /// The peer broke the protocol: close with this code.
        case failure(WebSocketCloseCode, String)
    }

    private enum Kind { case text, binary }

    /// The message being put together, if any.
    private var kind: Kind?
    /// The message being put together came with RSV1 (compressed).
    private var compressed = false
    private var buffer = ByteBuffer()
    /// The uncompressed text message's fragments checked so far: a fragment that breaks UTF-8
    /// fails the message at once (RFC 6455 8.1), not at its end. The last fragment is checked
    /// with the whole message, as an unfragmented one is.
    private var textSoFar = UTF8PrefixValidator()
    /// The largest message taken, in bytes (after decompression).
    let maximumMessageSize: Int
    /// The most bytes a compressed message may hold before it is inflated: a little more than
    /// the maximum, since data that does not compress grows a little
    /// (``PerMessageDeflate/compressedBound(_:)``); the maximum itself applies once inflated.
    let maximumCompressedSize: Int

    init(maximumMessageSize: Int) {
        self.maximumMessageSize = maximumMessageSize
        self.maximumCompressedSize = PerMessageDeflate.compressedBound(maximumMessageSize)
    }

    /// Whether a message has begun and not ended.
    var isAssembling: Bool { self.kind != nil }

    /// Takes a data frame (text, binary or continuation) whose payload is unmasked; `compressed`
    /// is the first frame's RSV1 under `permessage-deflate`.
    mutating func receive(opcode: WebSocketOpcode, fin: Bool, payload: ByteBuffer, compressed: Bool = false) -> Outcome {
        switch opcode {
        case .text, .binary:
            guard self.kind == nil else {
                return .failure(.protocolError, "a new \(opcode == .text ? "text" : "binary") message began before the last one ended")
            }
            self.kind = opcode == .text ? .text : .binary
            self.compressed = compressed
            self.buffer.clear()
            self.textSoFar = UTF8PrefixValidator()
        case .continuation:
            guard self.kind != nil else { return .failure(.protocolError, "a continuation frame with no message begun") }
        default:
            return .failure(.protocolError, "opcode \(opcode) is not a data frame")
        }
        let limit = self.compressed ? self.maximumCompressedSize : self.maximumMessageSize
        guard self.buffer.readableBytes + payload.readableBytes <= limit else {
            self.kind = nil
            self.buffer = ByteBuffer()
            if self.compressed {
                return .failure(
                    .messageTooBig,
                    "a compressed message over \(limit) bytes, more than one of the maximum of \(self.maximumMessageSize) bytes takes compressed")
            }
            return .failure(.messageTooBig, "a message over the maximum of \(self.maximumMessageSize) bytes")
        }
        if !fin, self.kind == .text, !self.compressed, !self.textSoFar.take(payload.readableBytesView) {
            self.kind = nil
            self.buffer = ByteBuffer()
            return .failure(.invalidFramePayloadData, "a text message that is not UTF-8 (in a fragment before its last)")
        }
        var payload = payload
        self.buffer.writeBuffer(&payload)
        guard fin else { return .incomplete }
        let kind = self.kind
        self.kind = nil
        let bytes = self.buffer.readableBytesView
        defer { self.buffer.clear() }
        if self.compressed {
            self.compressed = false
            return .compressed(isText: kind == .text, ByteBuffer(self.buffer.readableBytesView))
        }
        switch kind {
        case .text:
            guard let text = String(validating: bytes, as: UTF8.self) else {
                return .failure(.invalidFramePayloadData, "a text message that is not UTF-8")
            }
            return .message(.text(text))
        default:
            return .message(.binary(Data(bytes)))
        }
    }
}
