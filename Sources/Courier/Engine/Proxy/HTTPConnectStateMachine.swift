import Foundation
import HTTPTypes
import NIOCore

/// The client's side of an HTTP `CONNECT` (RFC 9110, 9.3.6), without I/O: the request to send,
/// then what to do with each piece of the proxy's answer.
///
/// Any 2xx opens the tunnel right after the answer's head (its `Content-Length` and
/// `Transfer-Encoding` are ignored, as the RFC says); 1xx heads other than 101 are skipped; 407 (and
/// 401, which tinyproxy 1.11 answers a `CONNECT` with when credentials are wrong or missing:
/// only the proxy can answer a `CONNECT`) is ``ProxyTunnelFailure/authenticationRequired(_:)``; any other status is
/// ``ProxyTunnelFailure/refused(_:)``. Bytes that are not an HTTP/1.x status line, a head longer
/// than ``maximumHeadLength``, a close or a timeout before the head is complete fail it, as do
/// bytes after a 2xx head (the server cannot speak first through a tunnel Courier opens).
struct HTTPConnectStateMachine: ProxyHandshake {
    typealias Action = ProxyHandshakeAction

    private enum State {
        case idle
        case awaitingHead
        case established
        case failed
    }

    /// The longest answer head accepted, status line and fields.
    static let maximumHeadLength = 16 * 1024

    private var state = State.idle
    /// The request ``start()`` sends.
    private let request: String
    /// The bytes of the answer received so far (after any skipped 1xx heads).
    private var received: [UInt8] = []

    /// A `CONNECT` to `host`:`port`, with `Proxy-Authorization: authorization` when given.
    init(host: String, port: Int, authorization: String?) {
        self.request = Self.request(host: host, port: port, authorization: authorization)
    }

    /// The `CONNECT` request for `host`:`port` (an IPv6 host in brackets), with `Host` and, when
    /// `authorization` is given, `Proxy-Authorization`.
    static func request(host: String, port: Int, authorization: String?) -> String {
        let authority = NIOEngine.Proxy.authority(host: host, port: port)
        var text = "CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n"
        if let authorization { text += "Proxy-Authorization: \(authorization)\r\n" }
        return text + "\r\n"
    }

    /// The request to send.
    mutating func start() -> Action {
        guard case .idle = self.state else { return .wait }
        self.state = .awaitingHead
        return .write(Array(self.request.utf8))
    }

    /// Whether the answer is still awaited (or the request not yet sent).
    private var isOpen: Bool {
        switch self.state {
        case .idle, .awaitingHead: true
        case .established, .failed: false
        }
    }

    /// Bytes from the proxy.
    mutating func received(_ buffer: ByteBuffer) -> Action {
        guard case .awaitingHead = self.state else { return .wait }
        self.received += buffer.readableBytesView
        while true {
            guard self.looksLikeHTTP() else {
                return self.fail(.invalidResponse("something that is not HTTP: \(self.preview())"))
            }
            guard let (headLength, bodyStart) = self.endOfHead() else {
                if self.received.count > Self.maximumHeadLength {
                    return self.fail(.invalidResponse("a head longer than \(Self.maximumHeadLength) bytes"))
                }
                return .wait
            }
            guard let response = Self.parseHead(self.received[..<headLength]) else {
                return self.fail(.invalidResponse("a malformed status line: \(self.preview())"))
            }
            let rest = self.received.count - bodyStart
            switch response.status.code {
            case 100..<200 where response.status.code != 101:
                self.received.removeFirst(bodyStart)
                continue
            case 200..<300:
                guard rest == 0 else {
                    return self.fail(.unsolicitedBytes(rest))
                }
                self.state = .established
                self.received = []
                return .established
            case 401, 407:
                return self.fail(.authenticationRequired(response))
            default:
                return self.fail(.refused(response))
            }
        }
    }

    /// The connection closed.
    mutating func closed() -> Action {
        guard self.isOpen else { return .wait }
        return self.fail(.closed(received: self.received.count))
    }

    /// The connection failed under the exchange (`description` says how).
    mutating func errorCaught(_ description: String) -> Action {
        guard self.isOpen else { return .wait }
        return self.fail(.connectionError(description))
    }

    /// The timeout passed.
    mutating func timedOut(after timeout: TimeAmount) -> Action {
        guard self.isOpen else { return .wait }
        return self.fail(.timedOut(timeout))
    }

    private mutating func fail(_ failure: ProxyTunnelFailure) -> Action {
        self.state = .failed
        self.received = []
        return .fail(failure)
    }

    /// Whether what arrived so far can be the start of `HTTP/`.
    private func looksLikeHTTP() -> Bool {
        let prefix: [UInt8] = Array("HTTP/".utf8)
        return zip(self.received, prefix).allSatisfy { $0 == $1 }
    }

    /// Where the head ends: its length without the blank line, and where the bytes after it start.
    /// Lines may end in CRLF or a bare LF (RFC 9112, 2.2).
    private func endOfHead() -> (Int, Int)? {
        var index = 0
        let bytes = self.received
        while let newline = bytes[index...].firstIndex(of: UInt8(ascii: "\n")) {
            var next = newline + 1
            if next < bytes.count, bytes[next] == UInt8(ascii: "\r") { next += 1 }
            if next < bytes.count, bytes[next] == UInt8(ascii: "\n") {
                return (newline, next + 1)
            }
            if next >= bytes.count { return nil }
            index = newline + 1
        }
        return nil
    }

    /// The status and fields of a head (without its blank line), or nil when the status line is
    /// not `HTTP/1.x ddd[ reason]`. Field lines that do not parse are left out.
    static func parseHead(_ head: ArraySlice<UInt8>) -> HTTPResponse? {
        // Lines split on the bytes: "\r\n" is one Character, which a String split on "\n" misses.
        var lines = head.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map { line in
            String(decoding: line.last == UInt8(ascii: "\r") ? line.dropLast() : line, as: UTF8.self)
        }
        guard !lines.isEmpty else { return nil }
        let statusLine = lines.removeFirst()
        let parts = statusLine.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0] == "HTTP/1.1" || parts[0] == "HTTP/1.0",
            parts[1].count == 3, parts[1].allSatisfy({ $0.isASCII && $0.isNumber }), let code = Int(parts[1])
        else { return nil }
        let reason = parts.count > 2 ? String(parts[2]) : ""
        var fields = HTTPFields()
        for line in lines {
            guard let colon = line.firstIndex(of: ":"), let name = HTTPField.Name(String(line[..<colon])) else { continue }
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            fields.append(HTTPField(name: name, value: value))
        }
        return HTTPResponse(status: HTTPResponse.Status(code: code, reasonPhrase: reason), headerFields: fields)
    }

    /// The first bytes received, printable, for a message.
    private func preview() -> String {
        let shown = self.received.prefix(40).map { byte -> String in
            (0x20..<0x7F).contains(byte) ? String(UnicodeScalar(byte)) : "\\x" + String(byte, radix: 16, uppercase: true)
        }
        return "\"" + shown.joined() + (self.received.count > 40 ? "…" : "") + "\""
    }
}
