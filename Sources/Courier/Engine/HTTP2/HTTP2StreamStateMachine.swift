import HTTPTypes
import NIOCore
import NIOHPACK
import NIOHTTP1
import NIOHTTP2

/// The life of one HTTP/2 stream Courier opened for a request, apart from its I/O: which frames
/// its request becomes, what the server's frames mean as response parts, when its receive window
/// reopens, and whether closing it takes a reset.
///
/// A value with no channel, frame writer or lock: ``HTTP2Stream`` feeds it the request parts the
/// hop writes, the frames and window sizes swift-nio-http2 reports for the stream, the reads the
/// hop asks for and its close, and does what each returns.
///
/// - The request head becomes HEADERS (its header block made by the hop's handler,
///   ``HopHandler/headerBlock(for:key:length:acceptEncoding:)``), sent with END_STREAM when
///   nothing follows it; its end is END_STREAM on
///   the last DATA (or an empty one), or, for a body with trailer fields, a last HEADERS with
///   END_STREAM (``requestTrailerBlock(for:)``, ``sendingTrailers()``).
/// - The response: 1xx HEADERS are informational heads, the next HEADERS the final head (with
///   `content-length: 0` or `transfer-encoding: chunked` added as swift-nio-http2's HTTP/1 codec
///   does, so that a response reads the same over either), DATA its body, HEADERS after it the
///   trailers; END_STREAM ends it.
/// - Flow control is back-pressure: DATA shrinks the stream's receive window (swift-nio-http2
///   reports its size), and only a read of the hop (``readRequested()``, which a suspended
///   exchange does not make) reopens it, once half of it is used; a paused stream stops the
///   server at the window's end.
/// - Closing a stream both sides ended, or whose HEADERS never went out, or that swift-nio-http2
///   closed (a reset either way, the connection), sends nothing; closing one under way resets it
///   (RST_STREAM CANCEL).
struct HTTP2StreamStateMachine {
    /// Where the stream is (RFC 9113 5.1, from Courier's side).
    enum Phase: Equatable {
        /// Made; nothing sent yet.
        case idle
        /// HEADERS went; both sides may send.
        case open
        /// Courier sent END_STREAM; the response goes on.
        case halfClosedLocal
        /// The server sent END_STREAM; the request may still go on.
        case halfClosedRemote
        /// Both sides ended, a reset, or the stream was closed before it opened.
        case closed
    }

    private enum ResponseProgress: Equatable {
        /// No final head yet (informational heads may come).
        case awaitingHead
        /// The final head came; DATA, then trailers or END_STREAM.
        case receivingBody
        case ended
    }

    /// What closing the stream takes.
    enum CloseAction: Equatable {
        /// Nothing goes out (nothing was sent, both sides ended, or it closed already).
        case none
        /// RST_STREAM with this code.
        case reset(NIOHTTP2.HTTP2ErrorCode)
    }

    /// The response parts a frame from the server makes, in order (at most two).
    struct Parts: Equatable {
        var first: HopResponsePart?
        var second: HopResponsePart?

        static let none = Parts(first: nil, second: nil)
    }

    /// The version swift-nio-http2's HTTP/1 codec gives its heads.
    static let version = HTTPVersion(major: 2, minor: 0)

    private(set) var phase = Phase.idle
    private var response = ResponseProgress.awaitingHead
    /// Whether the server sent a malformed header block: closing the stream resets it with
    /// PROTOCOL_ERROR (RFC 9113 8.1.1), not CANCEL.
    private var receivedMalformed = false
    /// The final head's status when it says the response has no content (204, 304): DATA with
    /// bytes is then malformed.
    private var statusWithoutContent: Int?

    /// Whether no final response head has come (informational ones may have).
    var awaitsResponseHead: Bool { self.response == .awaitingHead }
    /// The window Courier keeps open for the stream (`SETTINGS_INITIAL_WINDOW_SIZE` it sent).
    private var targetWindow: Int
    /// The stream's receive window as swift-nio-http2 last reported it (nil before any report).
    private var window: Int?

    init(targetWindow: Int) {
        self.targetWindow = targetWindow
    }

    /// Whether swift-nio-http2 may still deliver frames or take writes for the stream.
    var isOpen: Bool { self.phase != .closed }

    // MARK: The request

    /// The request head goes out as HEADERS, with END_STREAM when `endStream`.
    mutating func sendingHead(endStream: Bool) {
        guard self.phase == .idle else { return }
        self.phase = endStream ? .halfClosedLocal : .open
    }

    /// The HEADERS never went out (swift-nio-http2 refused them: the server's GOAWAY came first):
    /// the stream never opened, and closing it sends nothing.
    mutating func headersRefused() {
        self.phase = .closed
    }

    /// DATA (or trailers) goes out, ending the request when `endStream`.
    mutating func sendingBody(endStream: Bool) {
        guard endStream else { return }
        switch self.phase {
        case .open: self.phase = .halfClosedLocal
        case .halfClosedRemote: self.phase = .closed
        case .idle, .halfClosedLocal, .closed: break
        }
    }

    /// Whether the request can still end with trailer fields (its head went, its end did not).
    var canSendTrailers: Bool { self.phase == .open || self.phase == .halfClosedRemote }

    /// The request's trailer fields go out as HEADERS with END_STREAM, after the head and any
    /// DATA, ending the request. False when the request cannot take them (its head never went,
    /// or it ended already): nothing goes out.
    mutating func sendingTrailers() -> Bool {
        switch self.phase {
        case .open:
            self.phase = .halfClosedLocal
            return true
        case .halfClosedRemote:
            self.phase = .closed
            return true
        case .idle, .halfClosedLocal, .closed:
            return false
        }
    }

    // MARK: The response

    /// A HEADERS frame from the server. Throws, and the stream is then reset with PROTOCOL_ERROR
    /// when it closes, for a malformed header block (``check(_:trailers:)``) or status.
    mutating func receivedHeaders(_ headers: HPACKHeaders, endStream: Bool) throws -> Parts {
        guard self.phase != .closed, self.response != .ended else { return .none }
        let isTrailers = self.response == .receivingBody
        var block: ReceivedBlock
        let status: Int
        do {
            block = try Self.check(headers, trailers: isTrailers)
            status = isTrailers ? 0 : try Self.status(block.status)
            if status == 101 { throw HTTP2SwitchingProtocols() }
        } catch {
            self.receivedMalformed = true
            throw error
        }
        var parts = Parts.none
        if isTrailers {
            parts.first = .end(Self.regularFields(of: headers))
        } else if (100..<200).contains(status) {
            // Informational (`100 Continue`): the final head follows. One that ends the stream
            // leaves no room for it: malformed (RFC 9113 8.1).
            if endStream {
                self.receivedMalformed = true
                throw HTTP2InterimResponseEndedStream(status: status)
            }
            parts.first = .head(Self.responseHead(status: status, of: block))
            return parts
        } else {
            // The head's fields are the server's: no `content-length` or `transfer-encoding` of
            // Courier's own for a body whose length the server left unsaid (swift-nio-http2's
            // HTTP/1 codec adds one, and an app saw a `Transfer-Encoding: chunked` no server
            // sent; URLSession, OkHttp and curl show none). DATA frames and END_STREAM frame it.
            self.response = .receivingBody
            if status == 204 || status == 304 { self.statusWithoutContent = status }
            parts.first = .head(Self.responseHead(status: status, of: block))
            if endStream {
                parts.second = .end(nil)
            }
        }
        if endStream || parts.first.map(Self.isEnd) == true { self.remoteEnded() }
        return parts
    }

    /// A DATA frame from the server. Throws ``HTTP2ContentWhereNoneMayBe`` for bytes after a head
    /// whose status has no content (RFC 9113 8.1.1, RFC 9110 6.4.1), and
    /// ``HTTP2DataBeforeResponseHead`` for DATA before the final head (after an informational
    /// one: swift-nio-http2 refuses DATA before any head itself); the stream is then reset with
    /// PROTOCOL_ERROR when it closes.
    mutating func receivedData(_ buffer: ByteBuffer, endStream: Bool) throws -> Parts {
        guard self.phase != .closed, self.response != .ended else { return .none }
        if self.response == .awaitingHead {
            self.receivedMalformed = true
            throw HTTP2DataBeforeResponseHead()
        }
        if let status = self.statusWithoutContent, buffer.readableBytes > 0 {
            self.receivedMalformed = true
            throw HTTP2ContentWhereNoneMayBe(status: status)
        }
        var parts = Parts.none
        if endStream {
            self.remoteEnded()
            if buffer.readableBytes == 0 {
                parts.first = .end(nil)
            } else {
                parts.first = .body(buffer)
                parts.second = .end(nil)
            }
        } else {
            parts.first = .body(buffer)
        }
        return parts
    }

    private mutating func remoteEnded() {
        self.response = .ended
        switch self.phase {
        case .open: self.phase = .halfClosedRemote
        case .halfClosedLocal: self.phase = .closed
        case .idle, .halfClosedRemote, .closed: break
        }
    }

    private static func isEnd(_ part: HopResponsePart) -> Bool {
        if case .end = part { return true }
        return false
    }

    // MARK: Flow control

    /// swift-nio-http2 reports the stream's receive window (after DATA, or a WINDOW_UPDATE sent).
    mutating func windowChanged(to size: Int) {
        self.window = size
    }

    /// The server's acknowledgement of a new `SETTINGS_INITIAL_WINDOW_SIZE` moved every stream's
    /// window by `delta` (swift-nio-http2 counts a stream opened before it from the default
    /// 65,535). The target is not moved: it is already the window the settings asked for, and
    /// moving it too gave the connection's first streams 65,535 + 2 × the delta (448 KiB for 256),
    /// which a paused stream let the server fill.
    mutating func initialWindowChanged(by delta: Int) {
        self.window = self.window.map { $0 + delta }
    }

    /// The hop read what came and takes more: by how much to reopen the window (a WINDOW_UPDATE),
    /// if at least half of it is used; nil otherwise, and once the server ended its side.
    mutating func readRequested() -> Int? {
        guard self.phase == .open || self.phase == .halfClosedLocal, let window = self.window else { return nil }
        guard let increment = Self.windowIncrement(size: window, target: self.targetWindow) else { return nil }
        self.window = window + increment
        return increment
    }

    /// How much to add to a receive window of `size` to bring it back to `target`, once at most
    /// half of it is left (swift-nio-http2's rule for its own windows); nil before.
    static func windowIncrement(size: Int, target: Int) -> Int? {
        if size >= target { return nil }
        if size >= 0 {
            let increment = target - size
            return increment >= size ? increment : nil
        }
        return min(-size + target, Int(Int32.max))
    }

    // MARK: Closing

    /// The hop is done with the stream.
    mutating func close() -> CloseAction {
        switch self.phase {
        case .idle, .closed:
            self.phase = .closed
            return .none
        case .open, .halfClosedLocal, .halfClosedRemote:
            self.phase = .closed
            return .reset(self.receivedMalformed ? .protocolError : .cancel)
        }
    }

    /// swift-nio-http2 closed the stream (both sides ended, a reset either way, the connection
    /// went): nothing more goes out or comes in, and closing it sends nothing.
    mutating func closedBySwiftNIOHTTP2() {
        self.phase = .closed
    }

    // MARK: Heads

    /// The request's trailer fields as an HTTP/2 header block: names lower-cased, without
    /// HTTP/1's connection fields (forbidden fields were refused before the stream was asked for).
    static func requestTrailerBlock(for trailers: HTTPHeaders) -> HPACKHeaders {
        HPACKHeaders(httpHeaders: trailers, normalizeHTTPHeaders: true)
    }

    /// A header block the server sent, checked (``check(_:trailers:)``).
    struct ReceivedBlock {
        /// A head's `:status` value.
        var status: String?
        /// A head's regular fields, as its `HTTPResponse` takes them.
        var fields = HTTPFields()
        /// Their size as HTTP/1.1 text ("name: value" CRLF each), for the metrics.
        var fieldsSize = 0
    }

    /// Checks a header block the server sent as RFC 9113 8.2 and 8.3.2 ask, and makes a head's
    /// fields as it goes (swift-nio-http2's own header-block validation is off: its one switch
    /// would also check every request Courier sends, whose fields `HTTPFields` made valid
    /// already, at a twentieth of the connection's loop). Names are lower-case tokens (what
    /// `HTTPField.Name(parsed:)` takes); pseudo-fields come first, and a response has one,
    /// `:status`, trailers none; no connection-specific field; no CR, LF or NUL in a value, nor
    /// control characters or spaces in a pseudo-field's. The errors are swift-nio-http2's.
    static func check(_ headers: HPACKHeaders, trailers: Bool) throws -> ReceivedBlock {
        var block = ReceivedBlock()
        if !trailers { block.fields.reserveCapacity(headers.count) }
        var regularSeen = false
        for (name, value, _) in headers {
            guard let fieldName = HTTPField.Name(parsed: name) else { throw NIOHTTP2Errors.invalidHTTP2HeaderFieldName(name) }
            if name.utf8.first == UInt8(ascii: ":") {
                if regularSeen { throw NIOHTTP2Errors.pseudoHeaderAfterRegularHeader(name) }
                guard Self.isValidPseudoFieldValue(value) else { throw NIOHTTP2Errors.invalidPseudoHeaderValue(name: name, value: value) }
                switch name {
                case ":status":
                    if trailers { throw NIOHTTP2Errors.invalidPseudoHeaders(headers) }
                    if block.status != nil { throw NIOHTTP2Errors.duplicatePseudoHeader(name) }
                    block.status = value
                case ":path", ":method", ":scheme", ":authority", ":protocol":
                    // Request pseudo-fields: not for a response (nor its trailers).
                    throw NIOHTTP2Errors.invalidPseudoHeaders(headers)
                default:
                    throw NIOHTTP2Errors.unknownPseudoHeader(name)
                }
                continue
            }
            regularSeen = true
            // The connection-specific names are 7, 10, 16 and 17 bytes long: most names are not
            // compared at all.
            switch name.utf8.count {
            case 7, 10, 16, 17:
                if HopHandler.isConnectionSpecific(name) { throw NIOHTTP2Errors.forbiddenHeaderField(name: name, value: value) }
            default: break
            }
            guard Self.isValidFieldValue(value) else { throw NIOHTTP2Errors.invalidHTTP2HeaderFieldValue(name: name, value: value) }
            if !trailers {
                block.fieldsSize += name.utf8.count + 2 + value.utf8.count + 2
                block.fields.append(HTTPField(received: fieldName, value: value))
            }
        }
        if !trailers, block.status == nil { throw NIOHTTP2Errors.missingPseudoHeader(":status") }
        return block
    }

    /// No CR, LF or NUL (RFC 9113 8.2.1).
    static func isValidFieldValue(_ value: String) -> Bool {
        !value.utf8.contains { $0 == 0x00 || $0 == 0x0A || $0 == 0x0D }
    }

    /// No control character, space or DEL: a pseudo-field's value goes into a request or status
    /// line when carried on as HTTP/1.1.
    static func isValidPseudoFieldValue(_ value: String) -> Bool {
        !value.utf8.contains { $0 <= 0x20 || $0 == 0x7F }
    }

    /// The status a head's `:status` value (``check(_:trailers:)``'s) names.
    private static func status(_ value: String?) throws -> Int {
        guard let value else { throw NIOHTTP2Errors.missingPseudoHeader(":status") }
        // Three digits, the first a class (RFC 9110 15): not `+20`, `-10` or `000`, which `Int`
        // reads; 600–999 are taken, as over HTTP/1.1 and by Go.
        guard value.utf8.count == 3, value.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let status = Int(value), status >= 100 else {
            throw NIOHTTP2Errors.invalidStatusValue(value)
        }
        return status
    }

    /// The response head of a checked header block (its regular fields), made once as the exchange's `HTTPResponse` with no `HTTPResponseHead` between (its
    /// size as HTTP/1.1 text, with the reason phrase NIO gives the status).
    static func responseHead(status: Int, of block: ReceivedBlock) -> HopResponseHead {
        let reasonPhrase = HTTPResponseStatus(statusCode: status).reasonPhrase
        // "HTTP/1.1 SP 200 SP reason CRLF" ... "CRLF", as an HTTP/1.1 `HopResponseHead` counts it.
        let size = 8 + 1 + 3 + 1 + reasonPhrase.utf8.count + 2 + 2 + block.fieldsSize
        let response = HTTPResponse(status: HTTPResponse.Status(code: status, reasonPhrase: reasonPhrase), headerFields: block.fields)
        return HopResponseHead(response: response, status: status, version: Self.version, isKeepAlive: false, size: Int64(size))
    }

    /// The fields of a header block without its pseudo-fields.
    private static func regularFields(of headers: HPACKHeaders) -> HTTPHeaders {
        var fields: [(String, String)] = []
        fields.reserveCapacity(headers.count)
        for (name, value, _) in headers where !name.hasPrefix(":") {
            fields.append((name, value))
        }
        return HTTPHeaders(fields)
    }
}

/// DATA came on a stream before its response's final HEADERS: malformed (RFC 9113 8.1, a response
/// is HEADERS first). Before any head swift-nio-http2 refuses the frame and resets the stream
/// itself (with STREAM_CLOSED); after an informational head Courier does (PROTOCOL_ERROR).
struct HTTP2DataBeforeResponseHead: HTTP2MalformedStream {
    var description: String { "DATA came before the response's HEADERS (RFC 9113 8.1); Courier reset the stream" }
}
