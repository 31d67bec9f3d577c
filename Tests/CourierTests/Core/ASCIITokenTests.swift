import Foundation
import HTTPTypes
import NIOEmbedded
import NIOHTTP1
import Testing

@testable import Courier

/// HTTP's tokens (codings, connection options, media types, cookie attributes, extension names)
/// are case-insensitive in ASCII only (RFC 9110 5.6.2; RFC 6265bis 5.6). Swift's `lowercased()`
/// and `uppercased()` apply Unicode's rules, and `String`'s `==` Unicode's canonical equivalence:
/// U+212A KELVIN SIGN is `K` to `==` and lower-cases to `k`; U+017F LATIN SMALL LETTER LONG S
/// upper-cases to `S`. Each test gives Courier a token spelt with one of them where the protocol
/// has an ASCII one, and checks that Courier does not take it for the ASCII one, as the peer
/// that wrote it and SwiftNIO's parser do not. Every test but the first failed before Courier
/// compared tokens by bytes (`equalsLowercased`, `lowercasedASCII`).
@Suite("Protocol tokens are compared in ASCII only")
struct ASCIITokenTests {
    static let kelvin = "\u{212A}"

    @Test func theHelpersFoldOnlyASCIILetters() {
        #expect("Chunked".equalsLowercased("chunked"))
        #expect("CHUNKED"[...].equalsLowercased("chunked"))
        #expect(!"chun\(Self.kelvin)ed".equalsLowercased("chunked"))
        #expect(!"chunk".equalsLowercased("chunked") && !"chunkedx".equalsLowercased("chunked"))
        #expect("Text/HTML; Charset=UTF-8".lowercasedASCII == "text/html; charset=utf-8")
        #expect("ÀÉ-Ab".lowercasedASCII == "ÀÉ-ab", "a non-ASCII letter stays as it is")
        #expect(Array("\(Self.kelvin)EEP".lowercasedASCII.utf8) == Array("\(Self.kelvin)eep".utf8))
        // What the helpers are for: Unicode's rules take the sign for an ASCII letter.
        #expect("chun\(Self.kelvin)ed".lowercased() == "chunked")
        #expect("FAL\u{017F}E".uppercased() == "FALSE")
    }

    /// SwiftNIO's parser does not read `chun\u{212A}ed` as `chunked`: the body is not chunked,
    /// and Courier must say that the server applied a coding it cannot undo, not hand on the
    /// chunks' framing as the content.
    @Test func aTransferCodingSpeltWithAKelvinSignIsNotChunked() throws {
        let coding = "chun\(Self.kelvin)ed"
        var chunked = false
        #expect(HopResponseHead.unsupportedTransferCoding(in: coding, afterChunked: &chunked).map { Array($0.coding.utf8) } == Array(coding.utf8))
        #expect(HopResponseHead.unsupportedTransferCoding(in: "identity, Chunked", afterChunked: &chunked) == nil)
        let (error, setup) = try HTTP1ParserErrorTests.failure(
            after: "HTTP/1.1 200 OK\r\nTransfer-Encoding: \(coding)\r\nConnection: close\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
        #expect(error.code == .invalidResponse)
        #expect(error.message.contains("the server applied the transfer coding"), "\(error)")
        #expect(!setup.channel.isActive, "the connection stays open")
    }

    /// An HTTP/1.0 answer to `HEAD` keeps its connection only with `Connection: keep-alive`.
    @Test func aKeepAliveOptionSpeltWithAKelvinSignDoesNotKeepAConnection() {
        var ignored: UnsupportedTransferCoding?
        let asked = HTTPResponseHead(version: .http1_0, status: .ok, headers: ["Connection": "Keep-Alive", "Content-Length": "3"])
        #expect(HopResponseHead(nioHead: asked, answersHEAD: true, unsupportedTransferCoding: &ignored).isKeepAlive)
        let spoofed = HTTPResponseHead(version: .http1_0, status: .ok, headers: ["Connection": "\(Self.kelvin)eep-alive", "Content-Length": "3"])
        #expect(!HopResponseHead(nioHead: spoofed, answersHEAD: true, unsupportedTransferCoding: &ignored).isKeepAlive)
    }

    /// RFC 6455 4.1: the client fails the connection unless `Upgrade` is `websocket` in ASCII
    /// case and `Sec-WebSocket-Accept` is the key's hash (its base64 holds a `K` here).
    @Test func aWebSocketUpgradeOrAcceptSpeltWithAKelvinSignIsRefused() {
        let handshake = WebSocketHandshake(key: "dGhlIHNhbXBsZSBub25jZQ==")
        func head(upgrade: String, accept: String) -> HTTPResponseHead {
            HTTPResponseHead(version: .http1_1, status: .switchingProtocols, headers: [
                "Upgrade": upgrade, "Connection": "Upgrade", "Sec-WebSocket-Accept": accept,
            ])
        }
        let accept = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        #expect(handshake.failure(of: head(upgrade: "WebSocket", accept: accept)) == nil)
        #expect(handshake.failure(of: head(upgrade: "websoc\(Self.kelvin)et", accept: accept)) != nil)
        let spoofedAccept = accept.replacingOccurrences(of: "K", with: Self.kelvin)
        #expect(handshake.failure(of: head(upgrade: "websocket", accept: spoofedAccept)) != nil)
    }

    /// A media type is a token: `text/mar\u{212A}down` is not `text/markdown`, so a serializer that
    /// accepts only the latter refuses it.
    @Test func aMediaTypeSpeltWithAKelvinSignIsNotTheASCIIOne() throws {
        let spoofed = HTTPResponse(status: .ok, headerFields: [.contentType: "Text/Mar\(Self.kelvin)down; charset=UTF-8"])
        #expect(spoofed.mimeType.map { Array($0.utf8) } == Array("text/mar\(Self.kelvin)down".utf8))
        #expect(spoofed.textEncodingName == "utf-8")
        var serializer = HTTPResponseSerializer()
        serializer.acceptableContentTypes = ["Text/Markdown"]
        let body = Data("# hello".utf8)
        let ascii = HTTPResponse(status: .ok, headerFields: [.contentType: "text/MARKDOWN"])
        #expect(throws: Never.self) { try serializer.validate(ascii, data: body) }
        #expect(serializer.contentTypeError(spoofed, data: body)?.code == .unacceptableContentType)
    }

    /// curl writes `TRUE` and `FALSE`; `FAL\u{017F}E` is neither, and its line is malformed.
    @Test func aCookieFileFlagSpeltWithALongSIsMalformed() {
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        let read = NetscapeCookieFile.decode("example.com\tfalse\t/\tFalse\t0\ta\t1\nexample.com\tFAL\u{017F}E\t/\tFALSE\t0\tb\t2\n", now: now)
        #expect(read.cookies.map(\.name) == ["a"])
        #expect(read.invalidLines == [2])
    }

    /// A `Vary` names fields; a name spelt with a Kelvin sign is no field's name (and so varies
    /// on nothing a request can send), not `Cookie`.
    @Test func aVaryNameSpeltWithAKelvinSignIsNotTheASCIIName() {
        let response = HTTPResponse(status: .ok, headerFields: [.vary: "Accept-Encoding, Coo\(Self.kelvin)ie"])
        #expect(CacheEntry.varyNames(of: response).map { Array($0.utf8) } == [Array("accept-encoding".utf8), Array("coo\(Self.kelvin)ie".utf8)])
    }

    /// A cookie's name is its bytes (RFC 6265bis 5.7): two names that are one to `String`'s `==`
    /// (a precomposed and a decomposed letter; a Kelvin sign and `K`) are two cookies, and the
    /// second does not replace the first.
    @Test func cookieNamesAreComparedAsBytes() {
        let store = MemoryCookieStorage(publicSuffixes: PublicSuffixList(rules: "com\n"))
        let url = URL(string: "http://www.example.com/")!
        store.storeCookies(fromSetCookieFields: ["K=1", "\(Self.kelvin)=2", "caf\u{E9}=3", "cafe\u{301}=4"], for: url)
        let names = store.cookies(for: url).map { Array($0.name.utf8) }
        #expect(names.count == 4, "\(store.cookies(for: url).map(\.name))")
        #expect(Set(names) == Set(["K", Self.kelvin, "caf\u{E9}", "cafe\u{301}"].map { Array($0.utf8) }))
        // The same bytes do replace.
        store.storeCookies(fromSetCookieFields: ["K=5"], for: url)
        #expect(store.cookies(for: url).filter { $0.name.utf8.elementsEqual("K".utf8) }.map(\.value) == ["5"])
    }

    /// A stored response varies on the request's bytes: a decomposed `é` in `Accept-Language` is
    /// another request than a precomposed one.
    @Test func varyValuesAreComparedAsBytes() {
        let precomposed = VaryField(name: "accept-language", value: "caf\u{E9}")
        let decomposed = VaryField(name: "accept-language", value: "cafe\u{301}")
        #expect(precomposed != decomposed)
        #expect(Set([precomposed, decomposed]).count == 2)
        #expect(precomposed == VaryField(name: "accept-language", value: "caf\u{E9}"))
        #expect(VaryField(name: "a", value: nil) != VaryField(name: "a", value: ""))
    }

    /// An authentication scheme and Digest's algorithm are tokens.
    @Test func anAuthenticationSchemeOrAlgorithmSpeltWithOtherLettersIsNotTheASCIIOne() {
        #expect(HTTPChallenge(scheme: "NEGOTIATE").hasScheme("negotiate"))
        #expect(!HTTPChallenge(scheme: "Ker\u{212A}eros").hasScheme("kerberos"))
        #expect(!HTTPChallenge(scheme: "kerberos").hasScheme("Ker\u{212A}eros"))
        #expect(HTTPAuthorization.DigestAlgorithm("Sha-256-Sess") != nil)
        #expect(HTTPAuthorization.DigestAlgorithm("\u{017F}ha-256") == nil)
    }
}
