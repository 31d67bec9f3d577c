import Foundation
import HTTPTypes
import NIOCore

/// The client's side of an HTTP `CONNECT` (RFC 9110, 9.3.6), without I/O: the request to send,
/// then what to do with each piece of the proxy's answer.
///
/// Any 2xx opens the tunnel right after the answer's head (its `Content-Length` and
/// `Transfer-Encoding` are ignored, as the RFC says); 1xx heads other than 101 are skipped; 407 (and
/// 401, which tinyproxy 1.11 answers a `CONNECT` with when credentials are wrong or missing:
/// only the proxy can answer a `CONNECT`) is ``ProxyTunnelFailure/authenticationRequired(_:)``,
/// unless it carries a Digest challenge (RFC 7616) the proxy's credentials can answer; any other
/// status is ``ProxyTunnelFailure/refused(_:)``. Bytes that are not an HTTP/1.x status line, a head
/// longer than ``maximumHeadLength``, a close or a timeout before the head is complete fail it, as do
/// bytes after a 2xx head (the server cannot speak first through a tunnel Courier opens).
///
/// A Digest challenge is answered once (and once more when the proxy calls the answer's nonce
/// stale), the strongest algorithm first, as curl and URLSession do: on the same connection
/// when the 407 leaves it open with a body of known length (squid's, which is read and
/// dropped), else by ``ProxyTunnelFailure/answerOnNewConnection(authorization:answers:after:)``: the pool
/// connects again and sends the answer with its first `CONNECT`. A proxy that closes the
/// connection after its 407 without saying so (no `Connection: close`), before any byte of an
/// answer to the answer, is treated the same way, whether its close arrives as a close or as
/// the reset the answer's write met.
///
/// The first `CONNECT` may carry an answer to a challenge the proxy sent for an earlier tunnel
/// (the pool's ``ProxyDigestChallenges``, its nonce counted on): a 407 to it, stale or not, is
/// answered afresh, as a first challenge would be. Once the tunnel is open,
/// ``learnedChallenge`` is the challenge this tunnel answered, for the next tunnel to answer at
/// once.
struct HTTPConnectStateMachine: ProxyHandshake {
    typealias Action = ProxyHandshakeAction

    private enum State {
        case idle
        /// The request went; `unanswered` is the answer to a challenge it carried, and the 407
        /// it answers, until a byte of the proxy's next answer arrives: a proxy that closes the
        /// connection instead (without having said it would) gets it on a new one.
        case awaitingHead(unanswered: (authorization: String, after: HTTPResponse)?)
        /// The 407 `response`'s body is read and dropped (`remaining` bytes more); then the
        /// `CONNECT` goes again with `answer`, the answer to its challenge.
        case skippingBody(remaining: Int, answer: String, after: HTTPResponse)
        case established
        case failed
    }

    /// How many Digest challenges one tunnel answers: one, and one more when the proxy calls the
    /// first answer's nonce stale (RFC 7616, 3.3).
    static let maximumDigestAnswers = 2

    /// The longest answer head accepted, status line and fields.
    static let maximumHeadLength = 16 * 1024

    private var state = State.idle
    private let host: String
    private let port: Int
    /// The `User-Agent` each `CONNECT` carries, if any.
    private let userAgent: String?
    /// The request ``start()`` sends.
    private let request: String
    /// The proxy's user and password, to answer a Digest challenge with.
    private let credential: HTTPCredential?
    /// Digest challenges answered so far, on this connection or (one) before it.
    private var digestAnswers: Int
    /// The challenge the last `CONNECT`'s `Proxy-Authorization` answers with nonce count 1 (this
    /// machine's answer, or the one a closed connection's challenge asked for); nil when it was
    /// Basic, none, or a remembered challenge's later count.
    private var answered: HTTPAuthorization.DigestChallenge?
    private let makeClientNonce: () -> String
    /// The bytes of the answer received so far (after any skipped 1xx heads).
    private var received: [UInt8] = []
    /// Where ``endOfHead()`` looks for a LF next in ``received``: those before it ended no head
    /// (0 again whenever bytes leave its front), so it is also the least length a head not yet
    /// ended can have. A proxy that sends its head a byte at a time costs a look at each byte
    /// once, not at the whole head again.
    private var searchFrom = 0

    /// A `CONNECT` to `host`:`port`.
    /// - Parameters:
    ///   - host: The server's host: a name, or an IP address (IPv6 without brackets).
    ///   - port: The server's port.
    ///   - authorization: The first request's `Proxy-Authorization`, if any: Basic up front, or
    ///     the answer to a Digest challenge a closed connection carried.
    ///   - credential: The proxy's user and password, to answer Digest challenges with (none
    ///     are answered without).
    ///   - digestAnswers: Digest challenges already answered for this tunnel (1 when
    ///     `authorization` is such an answer; 0 for a remembered challenge's answer, so that a 407
    ///     to it is answered afresh).
    ///   - answered: The challenge `authorization` answers with nonce count 1, when it is the
    ///     answer a closed connection's challenge asked for (``learnedChallenge`` once open).
    ///   - makeClientNonce: The client nonces of Digest answers (random; fixed by tests).
    init(
        host: String,
        port: Int,
        authorization: String?,
        credential: HTTPCredential? = nil,
        digestAnswers: Int = 0,
        answered: HTTPAuthorization.DigestChallenge? = nil,
        userAgent: String? = nil,
        makeClientNonce: @escaping () -> String = HTTPAuthorization.makeClientNonce
    ) {
        self.host = host
        self.port = port
        self.userAgent = userAgent
        self.request = Self.request(host: host, port: port, authorization: authorization, userAgent: userAgent)
        self.credential = credential
        self.digestAnswers = digestAnswers
        self.answered = answered
        self.makeClientNonce = makeClientNonce
    }

    /// Once the tunnel is open, the Digest challenge its `CONNECT` answered with nonce count 1
    /// (for later tunnels through the proxy to answer at once, counting on); nil before, after a
    /// failure, and when no challenge was answered here.
    var learnedChallenge: HTTPAuthorization.DigestChallenge? {
        guard case .established = self.state else { return nil }
        return self.answered
    }

    /// The `CONNECT` request for `host`:`port` (an IPv6 host in brackets), with `Host`, and
    /// `User-Agent` and `Proxy-Authorization` when given (a value's control characters, which
    /// would end the field, become spaces, as HTTPTypes makes them in a request's fields).
    static func request(host: String, port: Int, authorization: String?, userAgent: String? = nil) -> String {
        let authority = NIOEngine.Proxy.authority(host: host, port: port)
        var text = "CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n"
        if let userAgent, !userAgent.isEmpty { text += "User-Agent: \(HTTPField(name: .userAgent, value: userAgent).value)\r\n" }
        if let authorization { text += "Proxy-Authorization: \(authorization)\r\n" }
        return text + "\r\n"
    }

    /// The request to send.
    mutating func start() -> Action {
        guard case .idle = self.state else { return .wait }
        self.state = .awaitingHead(unanswered: nil)
        return .write(Array(self.request.utf8))
    }

    /// Whether the answer is still awaited (or the request not yet sent).
    private var isOpen: Bool {
        switch self.state {
        case .idle, .awaitingHead, .skippingBody: true
        case .established, .failed: false
        }
    }

    /// Bytes from the proxy.
    mutating func received(_ buffer: ByteBuffer) -> Action {
        switch self.state {
        case .awaitingHead(let unanswered):
            self.received += buffer.readableBytesView
            if unanswered != nil, !self.received.isEmpty { self.state = .awaitingHead(unanswered: nil) }
            return self.readHead()
        case .skippingBody(let remaining, let answer, let response):
            let count = buffer.readableBytes
            guard count <= remaining else {
                // The proxy spoke after its 407 ended, before the next request.
                return self.fail(.unsolicitedBytes(count - remaining))
            }
            return self.skipped(count, of: remaining, then: answer, after: response)
        case .idle, .established, .failed:
            return .wait
        }
    }

    /// `count` more bytes of the 407 `response`'s body, of `remaining`, were dropped: once it is
    /// over, the `CONNECT` goes again with `answer`.
    private mutating func skipped(_ count: Int, of remaining: Int, then answer: String, after response: HTTPResponse) -> Action {
        guard count == remaining else {
            self.state = .skippingBody(remaining: remaining - count, answer: answer, after: response)
            return .wait
        }
        self.state = .awaitingHead(unanswered: (answer, response))
        return .write(Array(Self.request(host: self.host, port: self.port, authorization: answer, userAgent: self.userAgent).utf8))
    }

    /// Reads heads from what was received: skips interim ones, then acts on the final one.
    private mutating func readHead() -> Action {
        while true {
            guard self.looksLikeHTTP() else {
                return self.fail(.invalidResponse("something that is not HTTP: \(self.preview())"))
            }
            let end = self.endOfHead()
            // The head's length, or while it has not ended the least it can still have (the LF
            // `endOfHead` looks at next): the same bound however the answer was cut.
            guard (end?.length ?? self.searchFrom) <= Self.maximumHeadLength else {
                return self.fail(.invalidResponse("a head longer than \(Self.maximumHeadLength) bytes"))
            }
            guard let (headLength, bodyStart) = end else { return .wait }
            guard let response = Self.parseHead(self.received[..<headLength]) else {
                return self.fail(.invalidResponse("a malformed status line: \(self.preview())"))
            }
            let rest = self.received.count - bodyStart
            switch response.status.code {
            case 100..<200 where response.status.code != 101:
                self.received.removeFirst(bodyStart)
                self.searchFrom = 0
                continue
            case 200..<300:
                guard rest == 0 else {
                    return self.fail(.unsolicitedBytes(rest))
                }
                self.state = .established
                self.received = []
                return .established
            case 401, 407:
                return self.challenged(response, head: self.received[..<headLength], bodyBytes: rest)
            default:
                return self.fail(.refused(response))
            }
        }
    }

    /// A 407 (or 401): its Digest challenge answered, when the proxy's credentials can and the
    /// answers are not spent; else the failure. `bodyBytes` of its body arrived with the head.
    private mutating func challenged(_ response: HTTPResponse, head: ArraySlice<UInt8>, bodyBytes: Int) -> Action {
        guard let credential = self.credential, let digest = ProxyDigestChallenges.answerable(in: response),
            self.digestAnswers == 0 || (self.digestAnswers < Self.maximumDigestAnswers && digest.stale)
        else {
            return self.fail(.authenticationRequired(response))
        }
        self.digestAnswers += 1
        self.answered = digest
        let authorization = HTTPAuthorization.digest(
            digest, credential: credential, method: "CONNECT", uri: NIOEngine.Proxy.authority(host: self.host, port: self.port),
            nonceCount: 1, cnonce: self.makeClientNonce())
        guard let length = Self.reusableBodyLength(response, head: head) else {
            return self.fail(.answerOnNewConnection(authorization: authorization, answers: self.digestAnswers, after: response))
        }
        self.received = []
        self.searchFrom = 0
        guard bodyBytes <= length else { return self.fail(.unsolicitedBytes(bodyBytes - length)) }
        return self.skipped(bodyBytes, of: length, then: authorization, after: response)
    }

    /// The length of an answer's body when the connection stays open after it (RFC 9112, 9.3
    /// and 6.3): HTTP/1.1 without `Connection: close`, or HTTP/1.0 with `keep-alive`, and a
    /// `Content-Length` without `Transfer-Encoding`. Nil when the proxy closes after it, or its
    /// body's end is the close.
    static func reusableBodyLength(_ response: HTTPResponse, head: ArraySlice<UInt8>) -> Int? {
        let tokens = response.headerFields[values: .connection]
            .flatMap { $0.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces).lowercasedASCII }
        let isHTTP11 = head.starts(with: "HTTP/1.1".utf8)
        guard isHTTP11 ? !tokens.contains("close") : tokens.contains("keep-alive"),
            response.headerFields[.transferEncoding] == nil
        else { return nil }
        let lengths = Set(response.headerFields[values: .contentLength].flatMap { $0.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces) })
        guard lengths.count == 1, let text = lengths.first, !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
            let length = Int(text)
        else { return nil }
        return length
    }

    /// The connection closed.
    mutating func closed() -> Action {
        guard self.isOpen else { return .wait }
        if case .skippingBody(_, let answer, let response) = self.state {
            // It said it would stay open, and closed: the answer goes on a new connection.
            return self.fail(.answerOnNewConnection(authorization: answer, answers: self.digestAnswers, after: response))
        }
        if let failure = self.answerOnNewConnection() { return self.fail(failure) }
        return self.fail(.closed(received: self.received.count))
    }

    /// The answer sent on this connection, for a new one: the proxy closed the connection
    /// without a word after its 407 (without reading the answer), and the close came as a close
    /// or, the answer having hit the closed socket, as a reset. Nil once a byte of the proxy's
    /// next answer came.
    private func answerOnNewConnection() -> ProxyTunnelFailure? {
        guard case .awaitingHead(let unanswered?) = self.state else { return nil }
        let (answer, response) = unanswered
        return .answerOnNewConnection(authorization: answer, answers: self.digestAnswers, after: response)
    }

    /// The connection failed under the exchange (`description` says how).
    mutating func errorCaught(_ description: String) -> Action {
        guard self.isOpen else { return .wait }
        if let failure = self.answerOnNewConnection() { return self.fail(failure) }
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
    private mutating func endOfHead() -> (length: Int, bodyStart: Int)? {
        var index = self.searchFrom
        let bytes = self.received
        while let newline = bytes[index...].firstIndex(of: UInt8(ascii: "\n")) {
            var next = newline + 1
            if next < bytes.count, bytes[next] == UInt8(ascii: "\r") { next += 1 }
            if next < bytes.count, bytes[next] == UInt8(ascii: "\n") {
                return (newline, next + 1)
            }
            if next >= bytes.count {
                // What follows this LF has not all come: it is looked at again.
                self.searchFrom = newline
                return nil
            }
            index = newline + 1
        }
        self.searchFrom = bytes.count
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
        guard let (code, reason) = Self.statusLine(lines.removeFirst()) else { return nil }
        var fields = HTTPFields()
        for line in lines {
            guard let colon = line.firstIndex(of: ":"), let name = HTTPField.Name(String(line[..<colon])) else { continue }
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            fields.append(HTTPField(name: name, value: value))
        }
        return HTTPResponse(status: HTTPResponse.Status(code: code, reasonPhrase: reason), headerFields: fields)
    }

    /// The status code and reason phrase of an HTTP/1.x status line, `HTTP/1.1 ddd[ reason]` (or
    /// `HTTP/1.0`): the code three ASCII digits naming a class, 100 to 999 (RFC 9112 4, RFC 9110
    /// 15; `Int` alone would take `+101` and `0101`). Nil for any other line. The WebSocket
    /// handshake reads its status line with it too.
    static func statusLine(_ line: some StringProtocol) -> (code: Int, reason: String)? {
        let parts = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0] == "HTTP/1.1" || parts[0] == "HTTP/1.0", parts[1].utf8.count == 3,
            parts[1].utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }), let code = Int(parts[1]),
            code >= 100
        else { return nil }
        return (code, parts.count > 2 ? String(parts[2]) : "")
    }

    /// The first bytes received, printable, for a message.
    private func preview() -> String {
        let shown = self.received.prefix(40).map { byte -> String in
            (0x20..<0x7F).contains(byte) ? String(UnicodeScalar(byte)) : "\\x" + String(byte, radix: 16, uppercase: true)
        }
        return "\"" + shown.joined() + (self.received.count > 40 ? "…" : "") + "\""
    }
}
