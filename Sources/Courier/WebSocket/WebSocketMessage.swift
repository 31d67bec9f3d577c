import Foundation

/// A whole WebSocket message (RFC 6455, 5.6): text, which Courier checked is UTF-8, or bytes.
public enum WebSocketMessage: Sendable, Hashable {
    /// A text message.
    case text(String)
    /// A binary message.
    case binary(Data)

    /// The payload: a binary message's bytes, a text message's UTF-8.
    public var data: Data {
        switch self {
        case .text(let text): Data(text.utf8)
        case .binary(let data): data
        }
    }

    /// The payload decoded as a `Value` with `decoder` (JSON by default), whether the message is
    /// text or binary (Alamofire's `DecodableWebSocketMessageDecoder`).
    /// - Throws: ``CourierError/Code/responseSerializationFailed``, with the payload as its
    ///   ``CourierError/data`` and the decoder's error under it.
    public func decoded<Value: Decodable>(as type: Value.Type, decoder: any DataDecoder = JSONDecoder()) throws(CourierError) -> Value {
        let data = self.data
        do {
            return try decoder.decode(type, from: data)
        } catch {
            throw CourierError(
                .responseSerializationFailed, "a WebSocket message (\(data.count) bytes) is not a \(Value.self)", data: data,
                underlyingError: error)
        }
    }

    /// The payload's size in bytes (text as UTF-8).
    var byteCount: Int {
        switch self {
        case .text(let text): text.utf8.count
        case .binary(let data): data.count
        }
    }

    /// What the message counts for while it waits unread
    /// (``WebSocketConfiguration/maximumBufferedBytes``): its payload and
    /// ``queuedOverhead``.
    var queuedCost: Int { self.byteCount + Self.queuedOverhead }

    /// What a waiting message costs beyond its payload, about: the queue's element and the
    /// message's own storage. Counted so that empty messages, which cost that and nothing more,
    /// cannot pile up without bound (counted by payload alone, a server's stream of empty frames
    /// to a task nobody read grew its queue for ever, never reaching the bound).
    static let queuedOverhead = 64
}

/// A close code (RFC 6455, 7.4): the named ones as static members, any other from 3000 to 4999
/// for applications.
public struct WebSocketCloseCode: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt16

    /// A code from its number.
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// 1000: the purpose of the connection was fulfilled.
    public static let normalClosure = WebSocketCloseCode(rawValue: 1000)
    /// 1001: an endpoint is going away.
    public static let goingAway = WebSocketCloseCode(rawValue: 1001)
    /// 1002: a protocol error (a masked frame from a server, a control frame over 125 bytes, a bad
    /// close code…).
    public static let protocolError = WebSocketCloseCode(rawValue: 1002)
    /// 1003: a kind of data the endpoint cannot take.
    public static let unsupportedData = WebSocketCloseCode(rawValue: 1003)
    /// 1005: no code was in the close frame (never sent; reported when the peer's close had none).
    public static let noStatusReceived = WebSocketCloseCode(rawValue: 1005)
    /// 1006: the connection closed without a closing handshake (never sent; reported locally).
    public static let abnormalClosure = WebSocketCloseCode(rawValue: 1006)
    /// 1007: a text message that is not UTF-8.
    public static let invalidFramePayloadData = WebSocketCloseCode(rawValue: 1007)
    /// 1008: a message that violates the endpoint's policy.
    public static let policyViolation = WebSocketCloseCode(rawValue: 1008)
    /// 1009: a message over the endpoint's maximum size.
    public static let messageTooBig = WebSocketCloseCode(rawValue: 1009)
    /// 1010: the server did not agree to an extension the client needs.
    public static let mandatoryExtensionMissing = WebSocketCloseCode(rawValue: 1010)
    /// 1011: the server met an unexpected condition.
    public static let internalServerError = WebSocketCloseCode(rawValue: 1011)

    /// Whether a close frame may carry the code (RFC 6455, 7.4.1 and 7.4.2): 1000 to 1003, 1007
    /// to 1011 (1012 to 1014 as IANA registered them), and 3000 to 4999.
    public var isAllowedOnTheWire: Bool {
        switch self.rawValue {
        case 1000...1003, 1007...1014, 3000...4999: true
        default: false
        }
    }

    public var description: String { String(self.rawValue) }
}
