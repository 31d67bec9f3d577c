import Crypto
import Foundation
import NIOHTTP1

/// The opening handshake's checks (RFC 6455, 4.1 and 4.2.2): the key Courier sends, and what the
/// server's answer must be for the connection to become a WebSocket: `101`, `Upgrade: websocket`
/// (no other value), `Upgrade` among `Connection`'s tokens, the accept value of the key, and no
/// extension or subprotocol that was not offered.
struct WebSocketHandshake: Sendable {
    /// The `Sec-WebSocket-Key`: 16 random bytes in base64.
    let key: String
    /// The subprotocols offered (`Sec-WebSocket-Protocol`), if any.
    let offeredProtocols: [String]

    /// Whether `permessage-deflate` is offered.
    let offersCompression: Bool

    init(key: String = WebSocketHandshake.makeKey(), offeredProtocols: [String] = [], offersCompression: Bool = false) {
        self.key = key
        self.offeredProtocols = offeredProtocols
        self.offersCompression = offersCompression
    }

    static func makeKey() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return Data(bytes).base64EncodedString()
    }

    /// The `Sec-WebSocket-Accept` the server must send for `key`: base64 of the SHA-1 of the key
    /// and the protocol's GUID.
    static func acceptValue(for key: String) -> String {
        let digest = Insecure.SHA1.hash(data: Data((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8))
        return Data(digest).base64EncodedString()
    }

    /// Why a response does not complete the handshake, or nil when it does.
    func failure(of head: HTTPResponseHead) -> String? {
        guard head.status == .switchingProtocols else {
            return "the server answered the upgrade with \(head.status.code), not 101"
        }
        // `websocket` and nothing else (RFC 6455 4.1: a value that is not `websocket` fails the
        // connection, in a list that also names it too).
        let upgrade = head.headers[canonicalForm: "upgrade"].map(\.lowercasedASCII)
        guard !upgrade.isEmpty, upgrade.allSatisfy({ $0 == "websocket" }) else {
            return "the 101 response has no `Upgrade: websocket`" + (upgrade.isEmpty ? "" : " alone (\(head.headers["upgrade"].joined(separator: ", ")))")
        }
        let connection = head.headers[canonicalForm: "connection"].map(\.lowercasedASCII)
        guard connection.contains("upgrade") else { return "the 101 response has no `Connection: Upgrade`" }
        let accept = head.headers["sec-websocket-accept"]
        // Compared as bytes: `String`'s `==` takes U+212A KELVIN SIGN for the `K` a key can hold.
        guard accept.count == 1, accept[0].utf8.elementsEqual(Self.acceptValue(for: self.key).utf8) else {
            return "the 101 response's Sec-WebSocket-Accept (\(accept.joined(separator: ", "))) does not match the key sent"
        }
        // Only permessage-deflate, and only if offered (RFC 6455, 4.1: the client fails an
        // extension it did not offer).
        switch PerMessageDeflateParameters.parse(head.headers["sec-websocket-extensions"]) {
        case .none: break
        case .refused(let reason): return reason
        case .accepted:
            if !self.offersCompression { return "the server chose permessage-deflate, which was not offered" }
        }
        let chosen = head.headers[canonicalForm: "sec-websocket-protocol"]
        if let first = chosen.first {
            guard chosen.count == 1, self.offeredProtocols.contains(String(first)) else {
                return "the server chose the subprotocol \(chosen.joined(separator: ", ")), which was not offered"
            }
        }
        return nil
    }

    /// The subprotocol the server chose, if any.
    static func chosenProtocol(in head: HTTPResponseHead) -> String? {
        head.headers[canonicalForm: "sec-websocket-protocol"].first.map(String.init)
    }
}
