@testable import Courier
import Foundation
import HTTPTypes
import NIOHPACK
import NIOHTTP1
import Testing

/// The HTTP/1.1 head and the HTTP/2 header block a request gets, without I/O: which of the
/// caller's fields the engine keeps, replaces or adds, and what it notes for content coding.
@Suite("Engine: a request's head")
struct RequestHeadTests {
    static let key = ConnectionPool.Key(host: "example.com", port: 8080)
    static let tlsKey = ConnectionPool.Key(host: "example.com", port: 443, tls: true)

    static func request(_ fields: HTTPFields, url: String = "http://example.com:8080/a") -> Request {
        Request(method: .get, url: URL(string: url)!, headerFields: fields)
    }

    @Test func theCallersHostIsKeptOnceWhateverItsCaseAndOtherwiseTheKeysIsAdded() throws {
        for name in ["Host", "host", "HOST"] {
            let fields: HTTPFields = [try #require(HTTPField.Name(name)): "other.example:9000", .accept: "*/*"]
            let head = HopHandler.head(for: Self.request(fields), key: Self.key, length: .known(0))
            #expect(head.headers["Host"] == ["other.example:9000"], "\(name)")
        }
        let head = HopHandler.head(for: Self.request([.accept: "*/*"]), key: Self.key, length: .known(0))
        #expect(head.headers["Host"] == ["example.com:8080"], "the key's host, with its port as it is not the default")
    }

    @Test func theCallersFramingFieldsGiveWayToTheEngines() {
        let fields: HTTPFields = [.contentLength: "99", .transferEncoding: "gzip", .accept: "*/*"]
        let request = Request(method: .post, url: URL(string: "http://example.com:8080/a")!, headerFields: fields, body: .data(Data("abc".utf8)))
        let head = HopHandler.head(for: request, key: Self.key, length: .known(3))
        #expect(head.headers["Content-Length"] == ["3"])
        #expect(head.headers["Transfer-Encoding"].isEmpty)
        #expect(head.headers["Accept"] == ["*/*"])
    }

    /// A head's size as HTTP/1.1 text, counted from its bytes the way a server reads them.
    static func textSize(of head: HTTPRequestHead) -> Int64 {
        var text = "\(head.method.rawValue) \(head.uri) HTTP/1.1\r\n"
        for (name, value) in head.headers { text += "\(name): \(value)\r\n" }
        return Int64((text + "\r\n").utf8.count)
    }

    /// The size and `Connection` are counted as the head is built, not read again: they stay true
    /// through every change the hop makes (`Accept-Encoding`, a forwarding proxy's target and
    /// `Proxy-Authorization`, `Expect` added and taken out).
    @Test func theHeadsSizeAndCloseAreCountedAsItIsBuiltAndStayTrueThroughEveryChange() throws {
        let fields: HTTPFields = [.userAgent: "a-rather-long-user-agent/1.0 (Linux; 6.1)", .acceptLanguage: "en;q=1", .connection: "keep-alive"]
        let request = Request(method: .post, url: URL(string: "http://example.com:8080/a?b=c")!, headerFields: fields, body: .data(Data("abc".utf8)))
        var codings = HopHandler.CodingFields()
        var head = HopHandler.head(for: request, key: Self.key, length: .known(3), codings: &codings)
        #expect(head.size == Self.textSize(of: head.nio))
        #expect(!head.asksToClose)
        head.add(name: "Accept-Encoding", value: "deflate, gzip")
        #expect(head.size == Self.textSize(of: head.nio))
        head.adjust(for: .forward(NIOEngine.Proxy.http(host: "p", port: 1, username: "ann", password: "pw")), url: request.url)
        #expect(head.nio.uri == "http://example.com:8080/a?b=c")
        #expect(head.nio.headers.contains(name: "Proxy-Authorization"))
        #expect(head.size == Self.textSize(of: head.nio))
        var outgoing = OutgoingRequestHead.connection(head)
        outgoing.announceContinue()
        guard case .connection(let announced) = outgoing else { Issue.record("an HTTP/1.1 head"); return }
        #expect(announced.nio.headers["Expect"] == ["100-continue"])
        #expect(outgoing.size == Self.textSize(of: announced.nio))
        outgoing.removeExpect()
        #expect(outgoing.size == head.size)

        let closing = HopHandler.head(
            for: Self.request([HTTPField.Name("CONNECTION")!: "Keep-Alive, Close"]), key: Self.key, length: .known(0), codings: &codings)
        #expect(closing.asksToClose)
        #expect(OutgoingRequestHead.connection(closing).asksToClose)
    }

    /// Fields, then whether `Accept-Encoding` and `Range` are noted.
    static let codingCases: [(HTTPFields, Bool, Bool)] = [
        ([.accept: "*/*"], false, false),
        ([.acceptEncoding: "br"], true, false),
        ([HTTPField.Name("ACCEPT-ENCODING")!: "br"], true, false),
        ([.range: "bytes=0-1"], false, true),
        ([.acceptLanguage: "en", .range: "bytes=0-1", .acceptEncoding: "gzip"], true, true),
    ]

    @Test(arguments: Self.codingCases)
    func theFieldsThatDecideContentCodingAreNotedOverBothVersions(_ fields: HTTPFields, acceptEncoding: Bool, range: Bool) throws {
        var codings = HopHandler.CodingFields()
        _ = HopHandler.head(for: Self.request(fields), key: Self.key, length: .known(0), codings: &codings)
        #expect(codings.hasAcceptEncoding == acceptEncoding)
        #expect(codings.hasRange == range)
        let block = try HopHandler.headerBlock(
            for: Self.request(fields, url: "https://example.com/a"), key: Self.tlsKey, length: .known(0), acceptEncoding: false)
        #expect(block.codings.hasAcceptEncoding == acceptEncoding)
        #expect(block.codings.hasRange == range)
    }

    @Test func anHTTP2BlockLeavesOutATrailerFieldOnlyWhenTheBodyHasTrailers() throws {
        let plain = try HopHandler.headerBlock(
            for: Self.request([.trailer: "x-sum"], url: "https://example.com/a"), key: Self.tlsKey, length: .known(0),
            acceptEncoding: false)
        #expect(plain.block["trailer"] == ["x-sum"], "a body without trailers: the caller's field goes as it is")
        let request = Request(
            method: .put, url: URL(string: "https://example.com/a")!, headerFields: [.trailer: "x-sum"],
            body: .data(Data("abc".utf8), trailers: [.courierChecksum: "crc32=1"]))
        let withTrailers = try HopHandler.headerBlock(for: request, key: Self.tlsKey, length: .known(3), acceptEncoding: false)
        #expect(withTrailers.block["trailer"] == ["Courier-Checksum"], "the engine's names, not the caller's")
    }
}
