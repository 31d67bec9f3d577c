import Foundation
import HTTPTypes
import NIOCore
import NIOHPACK
import NIOHTTP1
import NIOHTTP2

/// The request head ``HopHandler`` writes, and the sizes of heads as HTTP/1.1 text
/// (for the transaction's metrics).
extension HopHandler {
    /// What a connection that decompresses does about content codings for a request: whether it
    /// adds `Accept-Encoding: deflate, gzip`, and whether it decodes a response body labelled
    /// `gzip` or `deflate`. Which of the two fields the request has is noted while its head is
    /// built (the fields are gone through once a request).
    ///
    /// - A request that names `Accept-Encoding` itself gets none added, and its response is
    ///   decoded only when that field accepts `gzip`, `deflate` or `*` (a q-value of 0 refuses). A
    ///   request that refused them (`identity`: a download that counts the file's own bytes) gets
    ///   the bytes as they came, even when the server labels them with a coding anyway (Apache's
    ///   `AddEncoding gzip .gz` labels a `.tar.gz` file so; its bytes are the file), as curl does.
    /// - A request with `Range` gets none added, as OkHttp does: a range of a compressed body
    ///   cannot be decoded unless it starts at 0, and the range asked for is one of the
    ///   representation's own bytes. Its response is still decoded when the server compressed it
    ///   anyway (without the field every coding is acceptable, RFC 9110 12.5.3).
    ///
    /// It also notes whether the request names `User-Agent` (the engine's default goes to one
    /// that does not, ``NIOEngine/Configuration/userAgent``).
    struct CodingFields {
        var hasAcceptEncoding = false
        var hasRange = false
        var hasUserAgent = false

        /// Notes `name`, one of the request's field names.
        mutating func note(_ name: HTTPField.Name) {
            switch name {
            case .acceptEncoding: self.hasAcceptEncoding = true
            case .range: self.hasRange = true
            case .userAgent: self.hasUserAgent = true
            default: break
            }
        }

        /// Whether to add `Accept-Encoding`.
        var asks: Bool { !self.hasAcceptEncoding && !self.hasRange }

        /// Whether to decode a coded response to `request` (whose fields were noted); its fields are
        /// read again only when it names `Accept-Encoding`.
        func decodes(_ request: Request) -> Bool {
            !self.hasAcceptEncoding || HopHandler.acceptsDecodedCoding(request.headerFields[values: .acceptEncoding])
        }
    }

    /// Whether an engine that decompresses decodes a coded response to `request`, as
    /// ``CodingFields/decodes(_:)`` decides while the head is written: when the request names no
    /// `Accept-Encoding`, or one that accepts a coding the engine decodes.
    static func decodesResponse(to request: Request) -> Bool {
        !request.headerFields.contains(.acceptEncoding) || Self.acceptsDecodedCoding(request.headerFields[values: .acceptEncoding])
    }

    /// Whether `Accept-Encoding` values accept a coding the engine decodes (RFC 9110 12.5.3).
    static func acceptsDecodedCoding(_ values: [String]) -> Bool {
        values.contains { value in
            WeightedList.elements(value).contains { !$0.refused && ["gzip", "x-gzip", "deflate", "*"].contains($0.value) }
        }
    }

    /// The request head: origin-form target, `Host`, and the body's framing, as AHC writes them. A
    /// body with trailer fields goes chunked whatever its length, their names in `Trailer`
    /// (RFC 9110 6.6.2).
    static func head(for request: Request, key: ConnectionPool.Key, length: RequestBody.Length) -> HTTPRequestHead {
        var codings = CodingFields()
        return Self.head(for: request, key: key, length: length, codings: &codings).nio
    }

    /// The same, with its size and `Connection` counted as it is built (``HTTP1RequestHead``),
    /// noting the fields that decide content coding (``CodingFields``) on the way.
    static func head(
        for request: Request, key: ConnectionPool.Key, length: RequestBody.Length, codings: inout CodingFields
    ) -> HTTP1RequestHead {
        var head = HTTP1RequestHead(
            HTTPRequestHead(version: .http1_1, method: HTTPMethod(rawValue: request.method.rawValue), uri: Self.target(of: request)))
        // Room for Host, Trailer, the framing field and Accept-Encoding.
        head.reserveCapacity(request.headerFields.count + 4)
        let trailers = Self.trailers(of: request)
        var hasHost = false
        for field in request.headerFields {
            switch field.name {
            case .contentLength, .transferEncoding: continue
            case .trailer where trailers != nil: continue
            case .acceptEncoding, .range, .userAgent: codings.note(field.name)
            // For a forwarding proxy only (RFC 9110 11.7.2): through a tunnel, or with no proxy,
            // the caller's proxy credential would go to the server.
            case .proxyAuthorization where !key.route.usesAbsoluteForm: continue
            default: if field.name.canonicalName == "host" { hasHost = true }
            }
            head.add(name: field.name.rawName, value: field.value)
        }
        if !hasHost {
            head.add(name: "Host", value: Self.host(of: key))
        }
        if let trailers {
            head.add(name: "Trailer", value: Self.trailerNames(trailers))
        }
        switch Self.framing(of: request, length: length, hasTrailers: trailers != nil) {
        case .none: break
        case .contentLength(let value): head.add(name: "Content-Length", value: value)
        case .chunked: head.add(name: "Transfer-Encoding", value: "chunked")
        }
        return head
    }

    /// The `Host` value of a request to `key` that names none.
    private static func host(of key: ConnectionPool.Key) -> String {
        // Every request's that names no `Host`, on the connection's event loop. Bytes, not
        // Characters: `contains(Character)` walks grapheme clusters, and Foundation's
        // `contains(_: StringProtocol)` would bridge to NSString. Concatenation, not
        // interpolation, which costs more for two short strings.
        let host = key.host.utf8.contains(UInt8(ascii: ":")) ? "[" + key.host + "]" : key.host
        return key.port == key.defaultPort ? host : host + ":" + String(key.port)
    }

    /// The origin-form target: the URL's path (`/` when empty) and query, percent-encoded as given.
    static func target(of request: Request) -> String {
        if let target = HTTPURLParts.target(of: request.url) { return target }
        return Self.targetReadByFoundation(of: request.url)
    }

    /// ``target(of:)`` read with Foundation's accessors: for any URL (a test checks both ways
    /// agree on the plain ones).
    static func targetReadByFoundation(of url: URL) -> String {
        var target = url.path(percentEncoded: true)
        if target.isEmpty { target = "/" }
        if let query = url.query(percentEncoded: true) {
            target += "?" + query
        }
        return target
    }

    /// How a request's head frames its body.
    private enum Framing {
        case none
        case contentLength(String)
        case chunked
    }

    private static func framing(of request: Request, length: RequestBody.Length, hasTrailers: Bool) -> Framing {
        switch hasTrailers ? .unknown : length {
        case .known(0):
            // No Content-Length where the method gives a body no meaning (RFC 9110 8.6).
            switch request.method {
            case .get, .head, .delete, .connect, .trace: return .none
            default: return .contentLength("0")
            }
        case .known(let length):
            return .contentLength(String(length))
        case .unknown:
            return .chunked
        }
    }

    /// The request head of an HTTP/2 stream, as an HPACK header block made straight from the
    /// request (no NIO head between: that cost an `HTTPRequestHead` and its `HTTPHeaders`, each
    /// allocated, and every field copied twice), with its size as HTTP/1.1 text for the metrics.
    ///
    /// The same head as ``head(for:key:length:)`` in HTTP/2's terms (RFC 9113 8.3.1): `:path`,
    /// `:method`, `:scheme`, `:authority` (the request's `Host`, else the key's), then the fields
    /// in their order, names lower-cased, without HTTP/1's connection-specific fields and the
    /// names its `Connection` field lists but `te: trailers` (RFC 9113 8.2.2), then `trailer`, `content-length` and
    /// `accept-encoding` (when `acceptEncoding` and ``CodingFields/asks``), with the fields that
    /// decide content coding noted. A body of unknown
    /// length needs no framing field: DATA frames carry it. A stream is always HTTPS (ALPN).
    ///
    /// Throws `NIOHTTP2Errors.DuplicateHostHeader` for a request with two `Host` fields (which
    /// `:authority` would name), ``RequestHeadTooLargeForHTTP2`` for a block over one frame of
    /// `peerMaximumFrameSize` (the server's `SETTINGS_MAX_FRAME_SIZE`), and
    /// ``RequestHeaderListTooLargeForServer`` for a list over `peerMaximumHeaderListSize` (the
    /// server's `SETTINGS_MAX_HEADER_LIST_SIZE`: advisory in RFC 9113 6.5.2, but Node's server
    /// resets such a stream with ENHANCE_YOUR_CALM, which says nothing of why; Go's client
    /// refuses it too).
    static func headerBlock(
        for request: Request, key: ConnectionPool.Key, length: RequestBody.Length, acceptEncoding: Bool, userAgent: String? = nil,
        peerMaximumHeaderListSize: Int? = nil, peerMaximumFrameSize: Int = HopHandler.http2MinimumFrameSize
    ) throws -> (block: HPACKHeaders, size: Int64, codings: CodingFields) {
        let fields = request.headerFields
        var authority: String?
        if fields.contains(Self.hostName) {
            let hosts = fields[values: Self.hostName]
            if hosts.count > 1 { throw NIOHTTP2Errors.duplicateHostHeader() }
            authority = hosts.first
        }
        let authorityValue = authority ?? Self.host(of: key)
        let trailers = Self.trailers(of: request)
        let connectionOptions = fields.connectionOptions
        let target = Self.target(of: request)
        // What swift-nio-http2's header-block validation (off: `HTTP2StreamStateMachine.check`)
        // would refuse of a request: the regular fields are `HTTPFields`', valid lower-case names
        // and values without CR, LF or NUL, so only what is not checked there.
        guard HTTP2StreamStateMachine.isValidPseudoFieldValue(target) else {
            throw NIOHTTP2Errors.invalidPseudoHeaderValue(name: ":path", value: target)
        }
        guard HTTP2StreamStateMachine.isValidPseudoFieldValue(authorityValue) else {
            throw NIOHTTP2Errors.invalidPseudoHeaderValue(name: ":authority", value: authorityValue)
        }
        var block = HPACKHeaders()
        // The four pseudo-fields, and room for trailer, content-length and accept-encoding.
        block.reserveCapacity(fields.count + 7)
        block.add(name: ":path", value: target)
        block.add(name: ":method", value: request.method.rawValue)
        block.add(name: ":scheme", value: "https")
        block.add(name: ":authority", value: authorityValue)
        // "METHOD SP target SP HTTP/1.1 CRLF" "Host: authority CRLF" ... "CRLF", as
        // ``HTTP1RequestHead/size`` counts an HTTP/1.1 head.
        var size = request.method.rawValue.utf8.count + 1 + target.utf8.count + 1 + 8 + 2 + 2
        size += 4 + 2 + authorityValue.utf8.count + 2
        var codings = CodingFields()
        for field in fields {
            switch field.name {
            case .contentLength, .transferEncoding: continue
            case .trailer where trailers != nil: continue
            case .acceptEncoding, .range, .userAgent: codings.note(field.name)
            // HTTP/2 goes to the server, directly or through a tunnel: a proxy credential is not its.
            case .proxyAuthorization: continue
            case .te:
                // RFC 9113 8.2.2: `TE` may only say `trailers` in HTTP/2, a token compared
                // without regard to case (`Trailers` goes, as `trailers`). It is the one field
                // HTTP/2 keeps that HTTP/1.1 makes hop-by-hop: it goes even when `Connection`
                // names it, as RFC 9110 7.6.1 asks a sender of `TE` to do (dropped so, a gRPC
                // server, which requires `te: trailers`, refused the request).
                guard field.value == "trailers" || field.value.equalsLowercased("trailers") else {
                    throw NIOHTTP2Errors.forbiddenHeaderField(name: "te", value: field.value)
                }
                block.add(name: "te", value: "trailers")
                size += 2 + 2 + 8 + 2
                continue
            default: break
            }
            // Already lower-case: no new string a field.
            let name = field.name.canonicalName
            if name == "host" || Self.isConnectionSpecific(name) || connectionOptions.contains(field.name) { continue }
            block.add(name: name, value: field.value)
            size += name.utf8.count + 2 + field.value.utf8.count + 2
        }
        if let trailers {
            let names = Self.trailerNames(trailers)
            block.add(name: "trailer", value: names)
            size += 7 + 2 + names.utf8.count + 2
        }
        if case .contentLength(let value) = Self.framing(of: request, length: length, hasTrailers: trailers != nil) {
            block.add(name: "content-length", value: value)
            size += 14 + 2 + value.utf8.count + 2
        }
        if let userAgent, !codings.hasUserAgent {
            block.add(name: "user-agent", value: userAgent)
            size += 14 + userAgent.utf8.count
        }
        if acceptEncoding, codings.asks {
            block.add(name: "accept-encoding", value: "deflate, gzip")
            size += 15 + 2 + 13 + 2
        }
        if size > Self.http2BlockMeasuredAbove {
            // swift-nio-http2 sends a header block in one frame (it sends no CONTINUATION), and
            // a block larger than the server's frame size ends the connection with every stream
            // on it (its header compression has counted fields the server never got). Refused
            // here instead, alone. Only a long list is measured: encoded by a compressor of its
            // own, whose empty table makes a block at least as long as the connection's would be.
            // The limit is the server's SETTINGS_MAX_FRAME_SIZE (Go's says 1 MiB), 16 KiB until
            // its SETTINGS came.
            var encoder = HPACKEncoder(allocator: ByteBufferAllocator())
            var buffer = ByteBuffer()
            try encoder.encode(headers: block, to: &buffer)
            if buffer.readableBytes > peerMaximumFrameSize {
                throw RequestHeadTooLargeForHTTP2(encodedBytes: buffer.readableBytes, frameSize: peerMaximumFrameSize)
            }
        }
        // The list as RFC 9113 counts it is at most the head as HTTP/1.1 text plus 14 (the
        // pseudo-fields' names) and 32 a field: counted exactly only when that bound passes the
        // server's limit.
        if let limit = peerMaximumHeaderListSize, size + 14 + 32 * block.count > limit {
            let listSize = block.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 32 }
            if listSize > limit { throw RequestHeaderListTooLargeForServer(listSize: listSize, limit: limit) }
        }
        return (block, Int64(size), codings)
    }

    /// The longest request head (as HTTP/1.1 text) whose HTTP/2 header block is not measured: even
    /// in the longest Huffman codes (30 bits a byte) with every length's prefix, it fits in one
    /// frame of ``http2MinimumFrameSize``.
    static let http2BlockMeasuredAbove = 4 * 1024
    /// The frame size every HTTP/2 peer takes (RFC 9113 4.2), the largest Courier counts on.
    static let http2MinimumFrameSize = 16 * 1024

    private static let hostName = HTTPField.Name("Host")!

    /// HTTP/1's connection-specific fields, which an HTTP/2 request leaves out (RFC 9113 8.2.2),
    /// by lower-case name.
    static func isConnectionSpecific(_ name: String) -> Bool {
        switch name {
        case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade": return true
        default: return false
        }
    }

    /// The trailer fields that end `request`'s body, as NIO's encoder writes them; nil for none
    /// (``OutgoingBody`` refused forbidden ones before the hop was made).
    static func trailers(of request: Request) -> HTTPHeaders? {
        guard let trailers = request.body.trailers, !trailers.isEmpty else { return nil }
        return HTTPHeaders(trailers.map { ($0.name.rawName, $0.value) })
    }

    /// The names of `trailers`, each once, for the `Trailer` field.
    static func trailerNames(_ trailers: HTTPHeaders) -> String {
        var seen = Set<String>()
        return trailers.map(\.name).filter { seen.insert($0.lowercasedASCII).inserted }.joined(separator: ", ")
    }
}

/// An HTTP/1.1 request head for NIO's encoder, with what the hop reads of it besides: its size as
/// HTTP/1.1 text (for the metrics) and whether it asks to close the connection. Both are counted
/// as the fields are added, in the one pass that builds the head: they were two more passes over
/// NIO's list, each copying every field's name and value out of it, on every request.
struct HTTP1RequestHead {
    /// NIO's head. Its fields change only through this type, which keeps the counts true.
    private(set) var nio: HTTPRequestHead
    /// The fields' part of ``size``: `name: value` and CRLF each.
    private var fieldsSize = 0
    /// Whether a `Connection` field says `close`.
    private(set) var asksToClose = false

    /// A head with `nio`'s method and target, and its fields counted.
    init(_ nio: HTTPRequestHead) {
        self.nio = nio
        self.recount()
    }

    /// The size as HTTP/1.1 text: request line, fields, blank line.
    var size: Int64 {
        // "METHOD SP target SP HTTP/1.1 CRLF" ... "CRLF"
        Int64(self.nio.method.rawValue.utf8.count + 1 + self.nio.uri.utf8.count + 1 + 8 + 2 + self.fieldsSize + 2)
    }

    /// Makes room for `count` fields.
    mutating func reserveCapacity(_ count: Int) {
        self.nio.headers.reserveCapacity(count)
    }

    /// Adds a field.
    mutating func add(name: String, value: String) {
        self.nio.headers.add(name: name, value: value)
        self.count(name: name, value: value)
    }

    /// Removes every field named `name` (without case). Rare: the fields are counted again.
    mutating func remove(name: String) {
        self.nio.headers.remove(name: name)
        self.recount()
    }

    /// The head as a forwarding proxy takes it, when `route` is one (``ProxyRoute/adjust(_:for:)``).
    mutating func adjust(for route: ProxyRoute, url: URL) {
        guard case .forward = route else { return }
        route.adjust(&self.nio, for: url)
        self.recount()
    }

    private mutating func count(name: String, value: String) {
        self.fieldsSize += name.utf8.count + 2 + value.utf8.count + 2
        if !self.asksToClose, name.utf8.count == 10, name.equalsLowercased("connection"), HopStateMachine.asksToClose(connection: value) {
            self.asksToClose = true
        }
    }

    private mutating func recount() {
        self.fieldsSize = 0
        self.asksToClose = false
        for (name, value) in self.nio.headers { self.count(name: name, value: value) }
    }
}

/// The request head a hop writes, made once from the request in its transport's form.
enum OutgoingRequestHead {
    /// An HTTP/1.1 connection's: NIO's head, for its encoder, counted as it was built.
    case connection(HTTP1RequestHead)
    /// An HTTP/2 stream's: its header block (``HopHandler/headerBlock(for:key:length:acceptEncoding:)``)
    /// and its size as HTTP/1.1 text.
    case stream(HPACKHeaders, size: Int64)

    /// The head's size as HTTP/1.1 text, for the metrics.
    var size: Int64 {
        switch self {
        case .connection(let head): head.size
        case .stream(_, let size): size
        }
    }

    /// Whether the request asks the server to close the connection after the answer (a stream
    /// is never reused, and sends no `Connection`).
    var asksToClose: Bool {
        switch self {
        case .connection(let head): head.asksToClose
        case .stream: false
        }
    }

    /// Without any `Expect` field (the server refused the expectation before). Rare: the copy
    /// the payload's change makes does not matter.
    mutating func removeExpect() {
        switch self {
        case .connection(var head):
            head.remove(name: "Expect")
            self = .connection(head)
        case .stream(var block, let size):
            block.remove(name: "expect")
            self = .stream(block, size: size)
        }
    }

    /// With `Expect: 100-continue` added.
    mutating func announceContinue() {
        switch self {
        case .connection(var head):
            head.add(name: "Expect", value: "100-continue")
            self = .connection(head)
        case .stream(var block, let size):
            block.add(name: "expect", value: "100-continue")
            self = .stream(block, size: size)
        }
    }
}

/// A request whose HTTP/2 header block does not fit in one frame of the server's size:
/// swift-nio-http2 sends no CONTINUATION frames, so Courier refuses it before the stream opens
/// (RFC 9113 4.2: 16 KiB unless the server's SETTINGS_MAX_FRAME_SIZE says more; over HTTP/1.1
/// the same request goes).
struct RequestHeadTooLargeForHTTP2: Error, CustomStringConvertible {
    let encodedBytes: Int
    /// The largest frame the server takes.
    let frameSize: Int

    var description: String {
        let whose = frameSize == HopHandler.http2MinimumFrameSize ? "" : ", the server's SETTINGS_MAX_FRAME_SIZE"
        return "its header fields take \(encodedBytes) bytes compressed, more than one frame of \(frameSize)\(whose) (Courier sends no CONTINUATION frames)"
    }
}

/// A request whose HTTP/2 header list is longer than the server said it takes
/// (`SETTINGS_MAX_HEADER_LIST_SIZE`): refused before the stream opens, with the limit named.
struct RequestHeaderListTooLargeForServer: Error, CustomStringConvertible {
    /// The list's size as RFC 9113 6.5.2 counts it: each field's name and value, and 32 octets.
    let listSize: Int
    let limit: Int

    var description: String {
        "its header fields count \(listSize) bytes as HTTP/2 counts them, more than the \(limit) the server takes (its SETTINGS_MAX_HEADER_LIST_SIZE)"
    }
}
