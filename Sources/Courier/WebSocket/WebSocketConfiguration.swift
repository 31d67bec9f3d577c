import Foundation

/// The settings of a ``WebSocketTask``.
public struct WebSocketConfiguration: Sendable {
    /// The largest message received, in bytes: a larger one closes the connection with 1009
    /// (``WebSocketCloseCode/messageTooBig``) and fails the task with
    /// ``CourierError/Code/responseTooLarge``. 1 MiB, as `URLSessionWebSocketTask`. Control
    /// frames (PINGs, PONGs, close frames: at most 125 bytes) are not bounded by it. A message is
    /// held in one buffer, so a larger value than 2³² − 1 bytes (4 GiB) is taken as that.
    ///
    /// Under `permessage-deflate` it is the message's size once inflated. Data that does not
    /// compress grows a little when deflated, so a compressed message may take up to about a
    /// seventh more than this on the wire (zlib's bound for any of its settings); more is refused
    /// with 1009 before it is inflated, and inflating stops with 1009 past this size.
    public var maximumMessageSize: Int = 1 << 20
    /// How often Courier sends a PING while the connection is open; a PING still unanswered when
    /// the next is due ends the connection with ``CourierError/Code/timedOut``. nil, zero or less:
    /// none (OkHttp's 0).
    public var pingInterval: TimeInterval? = 30
    /// How long Courier waits for the server's close frame after sending its own, counted from
    /// when it goes out: a close frame behind a message still being sent waits for that message
    /// first (the server cannot answer a frame it has not been sent), as long as the message
    /// moves: a server that reads none of it for this long ends the task too.
    public var closeTimeout: TimeInterval = 10
    /// The subprotocols offered in `Sec-WebSocket-Protocol`, preferred first: one element each,
    /// each an HTTP token (RFC 6455 4.1, RFC 9110 5.6.2: no spaces, commas or other separators),
    /// none twice. A list that breaks the rule fails the task before anything is sent
    /// (``CourierError/Code/invalidRequest``): `"chat,superchat"` as one element went out as two
    /// offers, and the server's choice of the second was then refused as never offered.
    ///
    /// Empty, the request's own `Sec-WebSocket-Protocol` field (if any) is the offer, as it is
    /// written, and the server may choose any subprotocol it names; otherwise this list replaces
    /// that field.
    public var subprotocols: [String] = []

    /// Why `subprotocols` cannot be offered, if it cannot.
    package var subprotocolsProblem: String? {
        var seen = Set<String>()
        for name in self.subprotocols {
            guard !name.isEmpty else { return "an empty subprotocol cannot be offered" }
            guard name.utf8.allSatisfy(HTTPToken.isTokenByte) else {
                return "the subprotocol \"\(name)\" is not a token (RFC 6455 4.1: no spaces, commas or separators; offer each subprotocol as an element of its own)"
            }
            guard seen.insert(name).inserted else { return "the subprotocol \"\(name)\" is offered twice" }
        }
        return nil
    }

    /// The most bytes of received messages that may wait unread in ``WebSocketTask/messages``
    /// (never less than one message of ``maximumMessageSize``): 16 MiB, as OkHttp's bound on its
    /// outgoing queue. Each message counts 64 bytes more than its payload, what it costs waiting,
    /// so that a stream of empty messages is bounded too.
    ///
    /// Courier reads the connection at all times, so that the server's PINGs are answered, the
    /// keep-alive's PONGs read and a close seen however slowly the application takes its
    /// messages. A consumer that falls further behind than this closes the connection with 1008
    /// (``WebSocketCloseCode/policyViolation``) and fails the task with
    /// ``CourierError/Code/messageBufferFull``: the messages that were waiting are still
    /// delivered, then the error.
    public var maximumBufferedBytes: Int = 16 << 20

    /// The bound ``maximumBufferedBytes`` stands for: never less than what one message of
    /// ``maximumMessageSize`` costs waiting, its payload and its 64 bytes. (Bounded by the size
    /// alone, one message of the maximum size, unread for the moment it takes the consumer to
    /// take it, went over when the two settings were equal, and closed the connection with 1008.)
    var bufferedBytesBound: Int {
        // The connection takes messages of at most 2³² − 1 bytes, whatever the setting.
        let largest = min(max(1, self.maximumMessageSize), Int(UInt32.max))
        return max(self.maximumBufferedBytes, largest + WebSocketMessage.queuedOverhead)
    }

    /// Whether `permessage-deflate` (RFC 7692) is offered: when the server agrees, messages go
    /// compressed both ways (control frames never are).
    public var permessageDeflate: Bool = true

    /// The defaults.
    public init() {}
}
