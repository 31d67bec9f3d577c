import Foundation
@testable import Courier
import HTTPTypes
import NIOCore
import NIOHPACK
import NIOHTTP1
import NIOHTTP2
import Testing

/// ``HTTP2StreamStateMachine`` without I/O: the request's frames, the server's frames as response
/// parts, the window and the close, event by event.
@Suite("HTTP/2 stream state machine")
struct HTTP2StreamStateMachineTests {
    typealias Machine = HTTP2StreamStateMachine

    static let window = 256 * 1024

    static func response(_ status: Int, _ fields: [(String, String)] = []) -> HPACKHeaders {
        HPACKHeaders([(":status", String(status))] + fields)
    }

    /// The head a hop reads for `head` (as an HTTP/1.1 connection makes it from NIO's).
    static func head(_ head: HTTPResponseHead) -> HopResponsePart {
        .head(HopResponseHead(nioHead: head))
    }

    /// A machine whose GET went out (HEADERS with END_STREAM).
    static func sentGet() -> Machine {
        var machine = Machine(targetWindow: Self.window)
        machine.sendingHead(endStream: true)
        return machine
    }

    // MARK: The request

    static let key = ConnectionPool.Key(host: "example.com", port: 443, tls: true)

    /// The header block a stream sends for `request` (``HopHandler/headerBlock(for:key:length:acceptEncoding:)``).
    static func block(
        _ request: Request, key: ConnectionPool.Key = Self.key, length: RequestBody.Length = .known(0), acceptEncoding: Bool = false
    ) throws -> HPACKHeaders {
        try HopHandler.headerBlock(for: request, key: key, length: length, acceptEncoding: acceptEncoding).block
    }

    /// A header block over 16 KiB compressed is refused on a connection whose server said no
    /// larger frame size, and goes in one frame to a server that takes larger frames (Go's
    /// says 1 MiB): swift-nio-http2 writes HEADERS up to the server's SETTINGS_MAX_FRAME_SIZE.
    @Test func aBlockOverSixteenKiBGoesToAServerThatTakesLargerFrames() throws {
        var request = Request(url: URL(string: "https://example.com/u")!)
        // Bytes of every value, which no Huffman code makes shorter.
        request.headerFields[HTTPField.Name("x-large")!] = String((0..<20_000).map { Character(UnicodeScalar(UInt8(33 + $0 % 94))) })
        do {
            _ = try HopHandler.headerBlock(for: request, key: Self.key, length: .known(0), acceptEncoding: false)
            Issue.record("a 20 KB block was not refused at 16 KiB")
        } catch let error as RequestHeadTooLargeForHTTP2 {
            #expect(error.frameSize == 16_384 && error.encodedBytes > 16_384)
            #expect(error.description.contains("more than one frame of 16384 (Courier sends no CONTINUATION frames)"))
        }
        let fits = try HopHandler.headerBlock(
            for: request, key: Self.key, length: .known(0), acceptEncoding: false, peerMaximumFrameSize: 1 << 20)
        #expect(fits.block.count == 5)
        #expect(throws: RequestHeadTooLargeForHTTP2.self) {
            try HopHandler.headerBlock(for: request, key: Self.key, length: .known(0), acceptEncoding: false, peerMaximumFrameSize: 17_000)
        }
    }

    /// RFC 9113 6.5.2's count: each field's name and value, and 32 octets. A list at the
    /// server's limit goes; one octet more is refused, naming the limit.
    @Test func aListOverTheServersLimitIsRefusedAtItsExactSize() throws {
        var request = Request(url: URL(string: "https://example.com/u")!)
        request.headerFields[HTTPField.Name("x-a")!] = "12345"
        // :path /u, :method GET, :scheme https, :authority example.com, x-a 12345.
        let listSize = (5 + 2) + (7 + 3) + (7 + 5) + (10 + 11) + (3 + 5) + 5 * 32
        let fits = try HopHandler.headerBlock(for: request, key: Self.key, length: .known(0), acceptEncoding: false, peerMaximumHeaderListSize: listSize)
        #expect(fits.block.count == 5)
        #expect(throws: RequestHeaderListTooLargeForServer.self) {
            try HopHandler.headerBlock(for: request, key: Self.key, length: .known(0), acceptEncoding: false, peerMaximumHeaderListSize: listSize - 1)
        }
        do {
            _ = try HopHandler.headerBlock(for: request, key: Self.key, length: .known(0), acceptEncoding: false, peerMaximumHeaderListSize: listSize - 1)
        } catch let error as RequestHeaderListTooLargeForServer {
            #expect(error.listSize == listSize && error.limit == listSize - 1)
        }
    }

    @Test func theRequestHeadBecomesAnHTTP2HeaderBlock() throws {
        let request = Request(url: URL(string: "https://example.com/path?q=1")!, headerFields: [.connection: "keep-alive", .accept: "*/*"])
        let block = try Self.block(request)
        #expect(block[":path"] == ["/path?q=1"])
        #expect(block[":method"] == ["GET"])
        #expect(block[":scheme"] == ["https"])
        #expect(block[":authority"] == ["example.com"], "the key's host, its port the default")
        #expect(block["host"].isEmpty, "Host becomes :authority")
        #expect(block["connection"].isEmpty, "HTTP/1's connection fields are not HTTP/2's")
        #expect(block["accept"] == ["*/*"], "names lower-cased")
        #expect(block["content-length"].isEmpty, "no Content-Length for a GET without content")
        #expect(block.map { $0.name } == [":path", ":method", ":scheme", ":authority", "accept"], "pseudo-fields first")
    }

    /// RFC 9113 8.2.2: HTTP/1's connection-specific fields, and those `Connection` names (its
    /// options are case-insensitive, RFC 9110 7.6.1), are left out.
    @Test func theHeaderBlockKeepsTheFieldsOrderAndLeavesOutEveryConnectionSpecificField() throws {
        var fields = HTTPFields()
        for (name, value) in [
            ("X-One", "1"), ("HOST", "example.com:8443"), ("Connection", "keep-alive, X-Hop"), ("Keep-Alive", "timeout=5"),
            ("Proxy-Connection", "keep-alive"), ("Transfer-Encoding", "chunked"), ("Upgrade", "h2c"), ("x-hop", "dropped"),
            ("Content-Type", "text/plain"), ("x-one", "2"),
        ] {
            fields.append(HTTPField(name: HTTPField.Name(name)!, value: value))
        }
        let request = Request(method: .post, url: URL(string: "https://example.com/u")!, headerFields: fields)
        let (block, size, _) = try HopHandler.headerBlock(for: request, key: Self.key, length: .known(3), acceptEncoding: true)
        #expect(block.map { $0.name } == [":path", ":method", ":scheme", ":authority", "x-one", "content-type", "x-one", "content-length", "accept-encoding"])
        #expect(block.map { $0.value } == ["/u", "POST", "https", "example.com:8443", "1", "text/plain", "2", "3", "deflate, gzip"])
        // As HTTP/1.1 text: "POST /u HTTP/1.1\r\n", "Host: example.com:8443\r\n", the fields sent, "\r\n".
        let text =
            "POST /u HTTP/1.1\r\nHost: example.com:8443\r\nx-one: 1\r\ncontent-type: text/plain\r\nx-one: 2\r\n"
            + "content-length: 3\r\naccept-encoding: deflate, gzip\r\n\r\n"
        #expect(size == Int64(text.utf8.count))
    }

    /// The same head as an HTTP/1.1 connection's, in HTTP/2's terms: `:authority` with the key's
    /// port when it is not the default, the body's length, trailer names, and the request's own
    /// `Accept-Encoding` kept.
    @Test func theHeaderBlockCarriesTheHeadAnHTTP11ConnectionWouldSend() throws {
        let key = ConnectionPool.Key(host: "::1", port: 8443, tls: true)
        let upload = Request(method: .put, url: URL(string: "https://[::1]:8443/up")!, headerFields: [.acceptEncoding: "br"], body: .data(Data("abc".utf8)))
        let block = try Self.block(upload, key: key, length: .known(3), acceptEncoding: true)
        #expect(block[":authority"] == ["[::1]:8443"])
        #expect(block["content-length"] == ["3"])
        #expect(block["accept-encoding"] == ["br"], "the request's own, not Courier's")
        let trailed = Request(method: .put, url: URL(string: "https://example.com/up")!, body: .data(Data("abc".utf8), trailers: [HTTPField.Name("Courier-Checksum")!: "1"]))
        let withTrailers = try Self.block(trailed, length: .known(3))
        #expect(withTrailers["trailer"] == ["Courier-Checksum"])
        #expect(withTrailers["content-length"].isEmpty, "a body with trailers goes without its length, as on HTTP/1.1")
        #expect(withTrailers["transfer-encoding"].isEmpty)
        let empty = try Self.block(Request(method: .post, url: URL(string: "https://example.com/")!))
        #expect(empty["content-length"] == ["0"], "a POST without content says so")
    }

    @Test func aRequestWithTwoHostFieldsIsRefused() throws {
        var fields = HTTPFields()
        fields.append(HTTPField(name: HTTPField.Name("Host")!, value: "a"))
        let one = try Self.block(Request(url: URL(string: "https://example.com/")!, headerFields: fields))
        #expect(one[":authority"] == ["a"], "the request's Host names the authority")
        fields.append(HTTPField(name: HTTPField.Name("host")!, value: "b"))
        #expect(throws: NIOHTTP2Errors.DuplicateHostHeader.self) {
            try Self.block(Request(url: URL(string: "https://example.com/")!, headerFields: fields))
        }
    }

    @Test func theStreamOpensWithItsHeadersAndHalfClosesWithItsEnd() {
        var machine = Machine(targetWindow: Self.window)
        #expect(machine.phase == .idle)
        machine.sendingHead(endStream: false)
        #expect(machine.phase == .open)
        machine.sendingBody(endStream: false)
        #expect(machine.phase == .open)
        machine.sendingBody(endStream: true)
        #expect(machine.phase == .halfClosedLocal)
    }

    @Test func trailersEndTheRequestAfterItsHeadAndBody() {
        var machine = Machine(targetWindow: Self.window)
        var sent = machine.sendingTrailers()
        #expect(!sent, "no trailers before the head")
        #expect(machine.phase == .idle)
        machine.sendingHead(endStream: false)
        machine.sendingBody(endStream: false)
        sent = machine.sendingTrailers()
        #expect(sent)
        #expect(machine.phase == .halfClosedLocal, "the trailers carried END_STREAM")
        sent = machine.sendingTrailers()
        #expect(!sent, "the request has ended")
        #expect(machine.phase == .halfClosedLocal)
    }

    @Test func trailersMayFollowTheHeadAloneAndAnEndedResponse() throws {
        var machine = Machine(targetWindow: Self.window)
        machine.sendingHead(endStream: false)
        _ = try machine.receivedHeaders(Self.response(413, [("content-length", "0")]), endStream: true)
        #expect(machine.phase == .halfClosedRemote)
        let sent = machine.sendingTrailers()
        #expect(sent)
        #expect(machine.phase == .closed, "both sides ended")
        let close = machine.close()
        #expect(close == .none)
    }

    @Test func theTrailersBecomeAnHTTP2HeaderBlock() {
        let block = Machine.requestTrailerBlock(for: ["Courier-Checksum": "crc32=1", "Server-Timing": "a", "Connection": "close"])
        #expect(block["courier-checksum"] == ["crc32=1"], "names lower-cased")
        #expect(block["server-timing"] == ["a"])
        #expect(block["connection"].isEmpty, "HTTP/1's connection fields are not HTTP/2's")
        #expect(!block.contains { $0.name.hasPrefix(":") }, "no pseudo-header fields in trailers")
    }

    // MARK: The response

    @Test func aResponseIsItsHeadBodyAndEnd() throws {
        var machine = Self.sentGet()
        let head = try machine.receivedHeaders(Self.response(200, [("content-length", "2")]), endStream: false)
        let expected = HTTPResponseHead(version: Machine.version, status: .ok, headers: ["content-length": "2"])
        #expect(head == .init(first: Self.head(expected), second: nil))
        #expect(machine.phase == .halfClosedLocal)
        let body = ByteBuffer(string: "hi")
        #expect(try machine.receivedData(body, endStream: false) == .init(first: .body(body), second: nil))
        #expect(try machine.receivedData(ByteBuffer(), endStream: true) == .init(first: .end(nil), second: nil))
        #expect(machine.phase == .closed, "both sides ended")
    }

    @Test func theLastDataCarriesTheEnd() throws {
        var machine = Self.sentGet()
        _ = try machine.receivedHeaders(Self.response(200, [("content-length", "2")]), endStream: false)
        let body = ByteBuffer(string: "hi")
        #expect(try machine.receivedData(body, endStream: true) == .init(first: .body(body), second: .end(nil)))
    }

    /// A head with END_STREAM is the whole response, and its fields are the server's: no
    /// `content-length: 0` of Courier's own (swift-nio-http2's HTTP/1 codec adds one).
    @Test func aHeadWithEndStreamIsTheWholeResponse() throws {
        var machine = Self.sentGet()
        let parts = try machine.receivedHeaders(Self.response(200), endStream: true)
        let expected = HTTPResponseHead(version: Machine.version, status: .ok)
        #expect(parts == .init(first: Self.head(expected), second: .end(nil)))
        #expect(machine.phase == .closed)
    }

    /// A body whose length the server left unsaid gets no framing field of Courier's own (the
    /// HTTP/1 codec's `transfer-encoding: chunked`, which an app then saw though no server sent
    /// it): over HTTP/2, DATA frames and END_STREAM frame it. Nor does a HEAD's or a 204's.
    @Test func aBodyWithoutLengthGetsNoFramingField() throws {
        var machine = Self.sentGet()
        var parts = try machine.receivedHeaders(Self.response(200), endStream: false)
        #expect(parts.first == Self.head(HTTPResponseHead(version: Machine.version, status: .ok)))

        machine = Machine(targetWindow: Self.window)
        machine.sendingHead(endStream: true)
        parts = try machine.receivedHeaders(Self.response(200), endStream: true)
        #expect(parts.first == Self.head(HTTPResponseHead(version: Machine.version, status: .ok)))

        machine = Self.sentGet()
        parts = try machine.receivedHeaders(Self.response(204), endStream: true)
        #expect(parts.first == Self.head(HTTPResponseHead(version: Machine.version, status: .noContent)))
    }

    @Test func informationalHeadsComeBeforeTheFinalOne() throws {
        var machine = Machine(targetWindow: Self.window)
        machine.sendingHead(endStream: false)
        let continueHead = try machine.receivedHeaders(Self.response(100), endStream: false)
        #expect(continueHead == .init(first: Self.head(HTTPResponseHead(version: Machine.version, status: .continue)), second: nil))
        let final = try machine.receivedHeaders(Self.response(201, [("content-length", "0")]), endStream: true)
        #expect(final.second == .end(nil))
        #expect(machine.phase == .halfClosedRemote, "the request has not ended")
        machine.sendingBody(endStream: true)
        #expect(machine.phase == .closed)
    }

    /// An informational head with END_STREAM leaves no room for the final one: malformed (RFC
    /// 9113 8.1), reset with PROTOCOL_ERROR.
    @Test func anInformationalHeadThatEndsTheStreamIsAnError() throws {
        var machine = Self.sentGet()
        #expect(throws: HTTP2InterimResponseEndedStream.self) { try machine.receivedHeaders(Self.response(103), endStream: true) }
        #expect(machine.close() == .reset(.protocolError))
    }

    /// HTTP/2 has no `101 Switching Protocols` (RFC 9113 8.6): a head that says it is malformed,
    /// and the stream is reset with PROTOCOL_ERROR, as nghttp2 and Go take it. Before, it was read
    /// as an interim head, and the stream waited for a final one the server would not send.
    @Test func aSwitchingProtocolsHeadIsAnError() throws {
        for endStream in [false, true] {
            var machine = Self.sentGet()
            #expect(throws: HTTP2SwitchingProtocols.self) {
                try machine.receivedHeaders(HPACKHeaders([(":status", "101"), ("x-protocol", "example")]), endStream: endStream)
            }
            #expect(machine.close() == .reset(.protocolError))
        }
    }

    @Test func headersAfterTheBodyAreTheTrailers() throws {
        var machine = Self.sentGet()
        _ = try machine.receivedHeaders(Self.response(200), endStream: false)
        _ = try machine.receivedData(ByteBuffer(string: "x"), endStream: false)
        let trailers = try machine.receivedHeaders(HPACKHeaders([("grpc-status", "0")]), endStream: true)
        #expect(trailers == .init(first: .end(["grpc-status": "0"]), second: nil))
        #expect(machine.phase == .closed)
    }

    /// DATA before the final head (here after a 103) is malformed (RFC 9113 8.1): the stream is
    /// reset with PROTOCOL_ERROR. Before, the bytes were dropped and the response read on.
    @Test func dataBeforeTheFinalHeadIsAnError() throws {
        var machine = Self.sentGet()
        #expect(machine.awaitsResponseHead)
        _ = try machine.receivedHeaders(Self.response(103), endStream: false)
        #expect(machine.awaitsResponseHead)
        #expect(throws: HTTP2DataBeforeResponseHead.self) { try machine.receivedData(ByteBuffer(string: "early"), endStream: false) }
        #expect(machine.close() == .reset(.protocolError))

        machine = Self.sentGet()
        _ = try machine.receivedHeaders(Self.response(200), endStream: false)
        #expect(!machine.awaitsResponseHead)
    }

    /// A 204 or a 304 has no content (RFC 9110 6.4.1): DATA with bytes after one is malformed
    /// (RFC 9113 8.1.1), and the stream is reset with PROTOCOL_ERROR; an empty DATA that ends
    /// the stream is not content.
    @Test(arguments: [204, 304])
    func contentAfterAStatusWithoutContentIsAnError(_ status: Int) throws {
        var machine = Self.sentGet()
        _ = try machine.receivedHeaders(Self.response(status), endStream: false)
        #expect(throws: HTTP2ContentWhereNoneMayBe.self) { try machine.receivedData(ByteBuffer(string: "hello"), endStream: true) }
        #expect(machine.close() == .reset(.protocolError))

        machine = Self.sentGet()
        _ = try machine.receivedHeaders(Self.response(status), endStream: false)
        #expect(try machine.receivedData(ByteBuffer(), endStream: true) == .init(first: .end(nil), second: nil))

        machine = Self.sentGet()
        _ = try machine.receivedHeaders(Self.response(200), endStream: false)
        let body = ByteBuffer(string: "hello")
        #expect(try machine.receivedData(body, endStream: true) == .init(first: .body(body), second: .end(nil)))
    }

    @Test func aHeadWithoutStatusIsAnError() {
        var machine = Self.sentGet()
        #expect(throws: NIOHTTP2Errors.MissingPseudoHeader.self) { try machine.receivedHeaders(HPACKHeaders([("a", "b")]), endStream: true) }
    }

    @Test func aStatusOfMoreThanThreeDigitsIsAnError() {
        // `HTTPResponse.Status` traps on one: the head is made straight from the block now.
        for status in ["1000", "-1", "2x"] {
            var machine = Self.sentGet()
            #expect(throws: NIOHTTP2Errors.InvalidStatusValue.self) {
                try machine.receivedHeaders(HPACKHeaders([(":status", status)]), endStream: true)
            }
        }
    }

    @Test func theHeadFromTheBlockIsTheOneAnHTTP1HeadWouldMake() throws {
        // What nginx sends, with a field twice.
        let fields = [
            ("server", "nginx/1.22.1"), ("date", "Sun, 29 Nov 2026 11:16:25 GMT"), ("content-type", "text/plain"),
            ("set-cookie", "a=1"), ("set-cookie", "b=2"), ("content-encoding", "gzip"),
        ]
        var machine = Self.sentGet()
        let parts = try machine.receivedHeaders(Self.response(203, fields), endStream: false)
        let nioHead = HTTPResponseHead(version: Machine.version, status: .nonAuthoritativeInformation, headers: HTTPHeaders(fields))
        #expect(parts.first == Self.head(nioHead))
        guard case .head(let head) = parts.first else { return }
        #expect(head.size == HopResponseHead(nioHead: nioHead).size, "the metrics count the same bytes")
        #expect(head.response.status.reasonPhrase == "Non-Authoritative Information")
        #expect(head.response.headerFields[values: .setCookie] == ["a=1", "b=2"])
        #expect(head.response.headerFields.count == 6, "the server's fields, and no framing field of Courier's")
    }

    /// RFC 9113 8.2 and 8.3.2, checked by the stream (swift-nio-http2's header-block validation is
    /// off): each malformed block is swift-nio-http2's error, in a head or in trailers, and the
    /// stream, when closed, is reset with PROTOCOL_ERROR instead of CANCEL.
    @Test func aMalformedHeaderBlockIsAnErrorAndItsStreamIsResetAsAProtocolError() throws {
        let heads: [([(String, String)], any Error.Type)] = [
            ([(":status", "200"), ("bad name", "x")], NIOHTTP2Errors.InvalidHTTP2HeaderFieldName.self),
            ([(":status", "200"), ("Upper", "x")], NIOHTTP2Errors.InvalidHTTP2HeaderFieldName.self),
            ([(":status", "200"), ("", "x")], NIOHTTP2Errors.InvalidHTTP2HeaderFieldName.self),
            ([(":Status", "200")], NIOHTTP2Errors.InvalidHTTP2HeaderFieldName.self),
            ([(":status", "200"), ("keep-alive", "5")], NIOHTTP2Errors.ForbiddenHeaderField.self),
            ([(":status", "200"), ("upgrade", "h2c")], NIOHTTP2Errors.ForbiddenHeaderField.self),
            ([(":status", "200"), ("x", "a\nb")], NIOHTTP2Errors.InvalidHTTP2HeaderFieldValue.self),
            ([(":status", "200"), ("x", "a\u{0}b")], NIOHTTP2Errors.InvalidHTTP2HeaderFieldValue.self),
            ([("x", "1"), (":status", "200")], NIOHTTP2Errors.PseudoHeaderAfterRegularHeader.self),
            ([(":status", "200"), (":authority", "a")], NIOHTTP2Errors.InvalidPseudoHeaders.self),
            ([(":status", "200"), (":x", "a")], NIOHTTP2Errors.UnknownPseudoHeader.self),
            ([(":status", "200"), (":status", "200")], NIOHTTP2Errors.DuplicatePseudoHeader.self),
            ([(":status", "\t200")], NIOHTTP2Errors.InvalidPseudoHeaderValue.self),
        ]
        // Each block as a head, and (the first two kinds of trailers) after a valid head.
        let trailers: [([(String, String)], any Error.Type)] = [
            ([(":status", "200")], NIOHTTP2Errors.InvalidPseudoHeaders.self),
            ([("transfer-encoding", "chunked")], NIOHTTP2Errors.ForbiddenHeaderField.self),
        ]
        for (block, errorType, asTrailers) in heads.map({ ($0.0, $0.1, false) }) + trailers.map({ ($0.0, $0.1, true) }) {
            var machine = Self.sentGet()
            if asTrailers { _ = try machine.receivedHeaders(Self.response(200, []), endStream: false) }
            do {
                _ = try machine.receivedHeaders(HPACKHeaders(block), endStream: asTrailers)
                Issue.record("\(block) was taken")
            } catch {
                #expect(type(of: error) == errorType, "\(block): \(error)")
            }
            #expect(machine.close() == .reset(.protocolError), "\(block)")
        }
        // What the rules allow: any token, obs-text and spaces inside a value, a 1xx head, trailers.
        var machine = Self.sentGet()
        _ = try machine.receivedHeaders(HPACKHeaders([(":status", "103"), ("link", "</a>; rel=preload")]), endStream: false)
        _ = try machine.receivedHeaders(Self.response(200, [("x-!#$%&'*+-.^_`|~09az", "a b\u{80}")]), endStream: false)
        _ = try machine.receivedHeaders(HPACKHeaders([("x-checksum", "1")]), endStream: true)
        #expect(machine.close() == .none, "both sides ended")
    }

    @Test func aRequestTheHTTP2RulesRefuseIsRefusedBeforeItIsSent() throws {
        var te = Request(url: URL(string: "https://example.com/")!)
        te.headerFields[.te] = "gzip"
        #expect(throws: NIOHTTP2Errors.ForbiddenHeaderField.self) { try Self.block(te) }
        te.headerFields[.te] = "trailers"
        #expect(try Self.block(te).first(name: "te") == "trailers")
        // A token, whatever its case (RFC 9110 5.6.2): refused before, as if it said another coding.
        te.headerFields[.te] = "Trailers"
        #expect(try Self.block(te).first(name: "te") == "trailers")
        var host = Request(url: URL(string: "https://example.com/")!)
        host.headerFields[HTTPField.Name("Host")!] = "example.com extra"
        #expect(throws: NIOHTTP2Errors.InvalidPseudoHeaderValue.self) { try Self.block(host) }
    }

    /// `TE: trailers` goes as `te: trailers` when `Connection` names it too, as RFC 9110 7.6.1
    /// asks of a sender of `TE`: RFC 9113 8.2.2 keeps that one field in HTTP/2. Before, it was
    /// dropped with the other fields `Connection` names (a gRPC server refuses a request without
    /// it), while `TE: Trailers` went.
    @Test(arguments: ["trailers", "Trailers"])
    func teTrailersGoesWhenConnectionNamesIt(_ value: String) throws {
        var request = Request(url: URL(string: "https://example.com/")!)
        request.headerFields[.te] = value
        request.headerFields[.connection] = "TE, x-hop"
        request.headerFields[HTTPField.Name("X-Hop")!] = "1"
        let block = try Self.block(request)
        #expect(block["te"] == ["trailers"])
        #expect(!block.contains(name: "connection"))
        #expect(!block.contains(name: "x-hop"))
    }

    @Test func theCodingIsReadFromTheFieldsAsFromNIOsHead() {
        for value in ["gzip", "GZIP", " deflate , br", "br, gzip", ",gzip", "", "identity"] {
            let nio = ResponseInflater.make(head: HTTPResponseHead(version: .http1_1, status: .ok, headers: ["Content-Encoding": value]), ratio: 10)
            let fields = ResponseInflater.make(fields: [.contentEncoding: value], ratio: 10)
            #expect((nio == nil) == (fields == nil), "\(value)")
        }
        let twice = HTTPFields([HTTPField(name: .contentEncoding, value: ""), HTTPField(name: .contentEncoding, value: "gzip")])
        #expect(ResponseInflater.make(fields: twice, ratio: 10) != nil, "an empty field names no coding")
        // A field's value is trimmed as it becomes an `HTTPField`, and an empty element names no
        // coding (RFC 9110 5.6.1); NIO's fields kept the blank, whose first element was empty.
        #expect(ResponseInflater.make(fields: [.contentEncoding: " , gzip"], ratio: 10) != nil)
        #expect(ResponseInflater.make(fields: [:], ratio: 10) == nil)
    }

    /// DATA before a head is malformed (`dataBeforeTheFinalHeadIsAnError`); after the close it is
    /// nobody's.
    @Test func dataBeforeAHeadIsMalformedAndAfterTheCloseNobodys() throws {
        var machine = Self.sentGet()
        #expect(throws: HTTP2DataBeforeResponseHead.self) { try machine.receivedData(ByteBuffer(string: "x"), endStream: false) }
        _ = machine.close()
        #expect(try machine.receivedData(ByteBuffer(string: "x"), endStream: false) == .none)
    }

    // MARK: Flow control

    @Test func theWindowReopensOnReadOnceHalfOfItIsUsed() throws {
        var machine = Self.sentGet()
        _ = try machine.receivedHeaders(Self.response(200), endStream: false)
        #expect(machine.readRequested() == nil, "no size reported yet")
        machine.windowChanged(to: Self.window - 1000)
        #expect(machine.readRequested() == nil, "most of it is left")
        machine.windowChanged(to: Self.window / 2)
        #expect(machine.readRequested() == Self.window / 2)
        #expect(machine.readRequested() == nil, "reopened already")
    }

    @Test func aHopThatDoesNotReadLeavesTheWindowShut() throws {
        // Back-pressure: the server's DATA shrinks the window; without reads nothing reopens it,
        // however small it gets.
        var machine = Self.sentGet()
        _ = try machine.receivedHeaders(Self.response(200), endStream: false)
        machine.windowChanged(to: 0)
        machine.windowChanged(to: 0)
        // The hop resumes and reads: the whole window reopens at once.
        #expect(machine.readRequested() == Self.window)
    }

    @Test func noWindowUpdateOnceTheServerEndedItsSide() throws {
        var machine = Self.sentGet()
        _ = try machine.receivedHeaders(Self.response(200), endStream: false)
        machine.windowChanged(to: 0)
        _ = try machine.receivedData(ByteBuffer(), endStream: true)
        #expect(machine.readRequested() == nil)
    }

    /// The acknowledgement of Courier's `SETTINGS_INITIAL_WINDOW_SIZE` moves a stream's window
    /// as swift-nio-http2 counts it, not the target: the target is already what the settings ask.
    @Test func theInitialWindowsChangeMovesTheWindowNotTheTarget() throws {
        var machine = Self.sentGet()
        _ = try machine.receivedHeaders(Self.response(200), endStream: false)
        machine.windowChanged(to: 40_000)
        machine.initialWindowChanged(by: -10_000)
        // 30,000 left of the 256 KiB target.
        #expect(machine.readRequested() == Self.window - 30_000)
    }

    /// A stream opened before the server acknowledged the settings (the pool hands streams out at
    /// the server's own SETTINGS): once the acknowledgement's delta came and a read used its
    /// window, it is reopened to the 256 KiB the settings ask, not to 256 KiB more the delta
    /// (which let a paused download take 448 KiB).
    @Test func aStreamOpenedBeforeTheAcknowledgementKeepsItsTarget() throws {
        var machine = Self.sentGet()
        machine.initialWindowChanged(by: Self.window - 65_535)
        _ = try machine.receivedHeaders(Self.response(200), endStream: false)
        machine.windowChanged(to: Self.window - 200_000)
        #expect(machine.readRequested() == 200_000)
        #expect(machine.readRequested() == nil, "the window is whole")
    }

    @Test func windowIncrementsFollowSwiftNIOHTTP2sRule() {
        #expect(Machine.windowIncrement(size: 100, target: 100) == nil)
        #expect(Machine.windowIncrement(size: 51, target: 100) == nil)
        #expect(Machine.windowIncrement(size: 50, target: 100) == 50)
        #expect(Machine.windowIncrement(size: 0, target: 100) == 100)
        #expect(Machine.windowIncrement(size: -20, target: 100) == 120)
    }

    // MARK: Closing

    @Test func closingAStreamUnderWayResetsIt() throws {
        var machine = Self.sentGet()
        _ = try machine.receivedHeaders(Self.response(200), endStream: false)
        #expect(machine.close() == .reset(.cancel))
        #expect(machine.close() == .none, "once")
    }

    @Test func closingAStreamBothSidesEndedSendsNothing() throws {
        // Before, the stream channel closed as the response's last frame arrived and reset
        // every stream (RST_STREAM CANCEL after each response).
        var machine = Self.sentGet()
        _ = try machine.receivedHeaders(Self.response(200), endStream: true)
        #expect(machine.close() == .none)
    }

    @Test func closingAStreamThatNeverOpenedSendsNothing() {
        var machine = Machine(targetWindow: Self.window)
        #expect(machine.close() == .none, "nothing sent")
        var refused = Machine(targetWindow: Self.window)
        refused.sendingHead(endStream: true)
        refused.headersRefused()
        #expect(refused.close() == .none, "swift-nio-http2 refused its HEADERS")
    }

    @Test func aStreamSwiftNIOHTTP2ClosedIsNotResetAgain() throws {
        var machine = Self.sentGet()
        _ = try machine.receivedHeaders(Self.response(200), endStream: false)
        machine.closedBySwiftNIOHTTP2()
        #expect(!machine.isOpen)
        #expect(machine.close() == .none)
    }
}
