// Ported from OkHttp's okhttp/src/jvmTest/kotlin/okhttp3/ResponseBodyJvmTest.kt and
// ResponseBodyTest.kt (https://github.com/square/okhttp), Copyright (C) 2016 Square, Inc.,
// licensed under the Apache License, Version 2.0.

import CourierTesting
import Foundation
import HTTPTypes
import NIOCore
import Testing

@testable import Courier

/// Twins of OkHttp's response-body tests: a body as text, as bytes and as a stream of text.
///
/// OkHttp's `string()` is Courier's ``StringResponseSerializer``, its `bytes()`, `byteString()`,
/// `source()` and `byteStream()` are ``DataResponseSerializer`` (the body as it came), and its
/// `charStream()` (a `Reader` that decodes as it reads) is ``StringStreamSerializer``, fed the body
/// chunk by chunk. OkHttp's `body(hex, charset)` is a body of those bytes under
/// `Content-Type: any/thing; charset=…`.
///
/// Not ported, with no Courier counterpart: the `…ClosesUnderlyingSource` tests,
/// `readerClosedBeforeBom…`/`readerClosedAfterBom…` and `throwingUnderlyingSourceClosesQuietly`
/// (Courier's serializers are handed the whole body, with no source to close), and
/// `bytesThrowsMoreThanIntMaxValue`/`byteStringThrowsMoreThanIntMaxValue` (Courier does not refuse
/// a body for its declared length before reading it). `bytesThrowsWhenLengthsDisagree` and
/// `byteStringThrowsWhenLengthsDisagree` are ported over a socket: a body shorter than its
/// `Content-Length`.
///
/// Where Courier answers otherwise on purpose, the test asserts Courier's answer and says what
/// OkHttp gives and why Courier differs.
@Suite("OkHttp's response body tests")
struct OkHttpResponseBodyTests {
    static func bytes(_ hex: String) -> Data {
        var data = Data()
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            data.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return data
    }

    /// A 200 whose `Content-Type` names `charset`, or has no `Content-Type` when it is nil.
    static func response(charset: String?) -> HTTPResponse {
        var fields = HTTPFields()
        if let charset { fields[.contentType] = "any/thing; charset=\(charset)" }
        return HTTPResponse(status: .ok, headerFields: fields)
    }

    /// OkHttp's `body(hex, charset).string()`.
    static func string(_ hex: String, charset: String? = nil, serializer: StringResponseSerializer = .init()) throws -> String {
        try serializer.responseObject(for: Self.response(charset: charset), data: Self.bytes(hex))
    }

    /// The scalars of `text`: U+FEFF and NUL count, as they would not in `String` comparison alone.
    static func scalars(_ text: String) -> [UInt32] { text.unicodeScalars.map(\.value) }

    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let hex: String
        let charset: String?
        let text: String
        var testDescription: String { self.name }
    }

    /// The bodies of the `string…` and `reader…` tests (both decode the same bytes).
    static let decodingCases: [Case] = [
        Case(name: "Empty", hex: "", charset: nil, text: ""),
        Case(name: "LooksLikeBomButTooShort", hex: "000048", charset: nil, text: "\u{0}\u{0}H"),
        Case(name: "DefaultsToUtf8", hex: "68656c6c6f", charset: nil, text: "hello"),
        Case(name: "ExplicitCharset", hex: "00000068000000650000006c0000006c0000006f", charset: "utf-32be", text: "hello"),
        Case(name: "BomOverridesExplicitCharset", hex: "0000feff00000068000000650000006c0000006c0000006f", charset: "utf-8", text: "hello"),
        Case(name: "BomUtf8", hex: "efbbbf68656c6c6f", charset: nil, text: "hello"),
        Case(name: "BomUtf16Be", hex: "feff00680065006c006c006f", charset: nil, text: "hello"),
        Case(name: "BomUtf16Le", hex: "fffe680065006c006c006f00", charset: nil, text: "hello"),
        Case(name: "BomUtf32Be", hex: "0000feff00000068000000650000006c0000006c0000006f", charset: nil, text: "hello"),
        Case(name: "BomUtf32Le", hex: "fffe000068000000650000006c0000006c0000006f000000", charset: nil, text: "hello"),
    ]

    // MARK: string()

    /// OkHttp: `stringEmpty`, `stringLooksLikeBomButTooShort`, `stringDefaultsToUtf8`,
    /// `stringExplicitCharset`, `stringBomOverridesExplicitCharset`, `stringBomUtf8`,
    /// `stringBomUtf16Be`, `stringBomUtf16Le`, `stringBomUtf32Be`, `stringBomUtf32Le`: the
    /// `charset` decides unless a byte-order mark says otherwise (the WHATWG Encoding standard's
    /// "BOM sniff" too), and the mark is not part of the text.
    @Test(arguments: Self.decodingCases)
    func string(_ row: Case) throws {
        #expect(Self.scalars(try Self.string(row.hex, charset: row.charset)) == Self.scalars(row.text))
    }

    /// OkHttp: `unicodeText`, `unicodeTextWithCharset`, `unicodeTextWithUnsupportedEncoding`: UTF-8
    /// text with no `charset`, with `charset=UTF-8`, and with a `charset` nobody knows (which
    /// leaves the UTF-8 default).
    @Test(arguments: [nil, "UTF-8", "unknown"] as [String?])
    func unicodeText(_ charset: String?) throws {
        let text = "eile oli oliiviõli"
        let hex = Data(text.utf8).map { String(format: "%02x", $0) }.joined()
        #expect(try Self.string(hex, charset: charset) == text)
    }

    /// Not in OkHttp (whose `string()` takes no encoding): a serializer given an encoding
    /// (``StringResponseSerializer/encoding``, Alamofire's `encoding:`) decodes with it, and a
    /// byte-order mark of that same encoding at the start is not part of the text, as it is not
    /// when the mark chose the encoding. Before, a UTF-16 or UTF-32 mark came out as U+FEFF at the
    /// start of the string (the UTF-8 one did not: Foundation drops that one itself).
    @Test(arguments: [
        (String.Encoding.utf8, "efbbbf68656c6c6f"),
        (.utf16BigEndian, "feff00680065006c006c006f"),
        (.utf16LittleEndian, "fffe680065006c006c006f00"),
        (.utf32BigEndian, "0000feff00000068000000650000006c0000006c0000006f"),
        (.utf32LittleEndian, "fffe000068000000650000006c0000006c0000006f000000"),
        (.utf16, "feff00680065006c006c006f"),
        (.utf16, "fffe680065006c006c006f00"),
    ])
    func anEncodingGivenDropsItsOwnByteOrderMark(_ encoding: String.Encoding, _ hex: String) throws {
        let text = try Self.string(hex, charset: "iso-8859-1", serializer: StringResponseSerializer(encoding: encoding))
        #expect(Self.scalars(text) == Self.scalars("hello"))
    }

    /// An encoding given still outranks a mark of another encoding (its documented order): UTF-8
    /// asked for, a UTF-16 mark in the body, and the body is not UTF-8. OkHttp has no such setting.
    @Test func anEncodingGivenOutranksTheMarkOfAnother() {
        #expect(throws: CourierError.self) {
            try Self.string("fffe680065006c006c006f00", serializer: StringResponseSerializer(encoding: .utf8))
        }
    }

    /// Not in OkHttp's tests, its answer for them in the comments: `charset=utf-16` without a mark
    /// is big-endian (RFC 2781 section 4.3, and Java's `UTF-16`; the WHATWG label `utf-16` would be
    /// little-endian, which a browser never meets in HTTP).
    @Test func utf16WithoutAMarkIsBigEndian() throws {
        #expect(try Self.string("00680069", charset: "utf-16") == "hi")
    }

    /// Bytes that are not text in the chosen encoding. OkHttp's `string()` (Java's decoder) puts
    /// U+FFFD in their place and returns text; Courier fails with
    /// ``CourierError/Code/responseSerializationFailed`` and keeps the body, as its serializer
    /// documents and as Alamofire's `StringResponseSerializer` fails
    /// (`stringSerializationFailed`): a string with replacement characters in it would pass for
    /// the server's text.
    @Test(arguments: [
        ("68ff6c6c6f", nil),  // OkHttp: "h\u{FFFD}llo"
        ("68ff6c6c6f", "utf-8"),  // OkHttp: "h\u{FFFD}llo"
    ] as [(String, String?)])
    func textInvalidInItsEncodingFails(_ hex: String, _ charset: String?) {
        let error = #expect(throws: CourierError.self) { try Self.string(hex, charset: charset) }
        #expect(error?.code == .responseSerializationFailed)
        #expect(error?.data == Self.bytes(hex))
    }

    /// A byte past 7F in a body labelled `us-ascii`: OkHttp (Java's ASCII decoder) gives
    /// "h\u{FFFD}llo"; Courier reads the label as windows-1252, as the WHATWG Encoding standard
    /// and browsers do, and gives the character the server most likely meant.
    @Test func asciiLabelIsReadAsWindows1252() throws {
        #expect(try Self.string("68e96c6c6f", charset: "us-ascii") == "h\u{E9}llo")
    }

    /// Not in OkHttp (whose `string()` is all it has): `charset=euc-jp`, which Courier knows by
    /// name, cannot be decoded on Linux, whose Foundation has no EUC-JP (`String(data:encoding:
    /// .japaneseEUC)` is nil even for ASCII): the body fails with
    /// ``CourierError/Code/responseSerializationFailed``. OkHttp decodes it with Java's decoder.
    @Test func eucJPOnLinux() throws {
        try withKnownIssue("Foundation on Linux has no EUC-JP decoder") {
            let text = try Self.string("616263", charset: "euc-jp")
            #expect(text == "abc")
        } when: {
            Self.isLinux
        }
    }

    #if os(Linux)
    static let isLinux = true
    #else
    static let isLinux = false
    #endif

    struct JSONCase: Sendable, CustomTestStringConvertible {
        let name: String
        let encoding: String.Encoding
        let mark: [UInt8]
        var testDescription: String { self.name }
    }

    /// Not in OkHttp's tests: JSON in each Unicode encoding, with and without its byte-order mark.
    /// RFC 8259 section 8.1 asks for UTF-8 on the network, and lets a parser ignore a mark.
    static let jsonCases: [JSONCase] = [
        JSONCase(name: "UTF-8", encoding: .utf8, mark: []),
        JSONCase(name: "UTF-8 with mark", encoding: .utf8, mark: [0xEF, 0xBB, 0xBF]),
        JSONCase(name: "UTF-16BE", encoding: .utf16BigEndian, mark: []),
        JSONCase(name: "UTF-16BE with mark", encoding: .utf16BigEndian, mark: [0xFE, 0xFF]),
        JSONCase(name: "UTF-16LE", encoding: .utf16LittleEndian, mark: []),
        JSONCase(name: "UTF-16LE with mark", encoding: .utf16LittleEndian, mark: [0xFF, 0xFE]),
        JSONCase(name: "UTF-32BE", encoding: .utf32BigEndian, mark: []),
        JSONCase(name: "UTF-32BE with mark", encoding: .utf32BigEndian, mark: [0x00, 0x00, 0xFE, 0xFF]),
        JSONCase(name: "UTF-32LE", encoding: .utf32LittleEndian, mark: []),
        JSONCase(name: "UTF-32LE with mark", encoding: .utf32LittleEndian, mark: [0xFF, 0xFE, 0x00, 0x00]),
    ]

    /// ``JSONResponseSerializer`` hands the body to `JSONSerialization`, which finds the encoding
    /// itself (RFC 4627's pattern of NULs, or the mark); ``DecodableResponseSerializer`` hands it
    /// to `JSONDecoder`, which does too, but on Linux not for UTF-32LE after its mark (a
    /// Foundation bug: "not valid JSON").
    @Test(arguments: Self.jsonCases)
    func jsonInAnyUnicodeEncoding(_ row: JSONCase) throws {
        let data = Data(row.mark) + "[\"hé\"]".data(using: row.encoding)!
        let response = HTTPResponse(status: .ok, headerFields: [.contentType: "application/json"])
        let object = try JSONResponseSerializer().responseObject(for: response, data: data)
        #expect(object as? [String] == ["hé"])
        try withKnownIssue("JSONDecoder on Linux refuses UTF-32LE after its byte-order mark") {
            let value = try DecodableResponseSerializer([String].self).responseObject(for: response, data: data)
            #expect(value == ["hé"])
        } when: {
            Self.isLinux && row.encoding == .utf32LittleEndian && !row.mark.isEmpty
        }
    }

    // MARK: bytes(), byteString(), source(), byteStream()

    /// OkHttp: `bytesEmpty`, `byteStringEmpty`, `sourceEmpty`, `byteStreamEmpty`,
    /// `bytesSeesBom`, `byteStringSeesBom`, `sourceSeesBom`, `byteStreamSeesBom`, `unicodeBytes`,
    /// `unicodeByteString`, `unicodeBytesWithCharset`, `unicodeByteStringWithCharset`: the bytes
    /// are the body as it came, a byte-order mark included, whatever the `charset` names (EBCDIC,
    /// which Courier does not know).
    @Test(arguments: [
        ("", nil),
        ("efbbbf68656c6c6f", nil),
        ("65696c65206f6c69206f6c69697669c3b56c69", nil),
        ("65696c65206f6c69206f6c69697669c3b56c69", "EBCDIC"),
    ] as [(String, String?)])
    func bytes(_ hex: String, _ charset: String?) throws {
        let data = try DataResponseSerializer().responseObject(for: Self.response(charset: charset), data: Self.bytes(hex))
        #expect(data == Self.bytes(hex))
    }

    /// OkHttp: `bytesThrowsWhenLengthsDisagree`, `byteStringThrowsWhenLengthsDisagree`: a body
    /// shorter than its `Content-Length` is an error, not a short body. Over a socket here: the
    /// server declares 10 bytes, sends 5 and closes.
    @Test(arguments: [false, true])
    func bytesThrowsWhenLengthsDisagree(_ http2: Bool) async throws {
        var configuration = http2 ? TestServer.Configuration.https() : TestServer.Configuration()
        configuration.http2 = http2
        try await withTestServer(configuration) { server in
            try await withManager(baseURL: nil, securityPolicy: try HTTP2PoolTests.policy()) { manager in
                let error = await #expect(throws: CourierError.self) {
                    _ = try await manager.responseOfAnyStatus(for: Request(url: server.url("/courier/truncated/5")))
                }
                #expect(error?.code == .connectionClosed, "\(String(describing: error))")
            }
        }
    }

    // MARK: charStream()

    /// The text ``StringStreamSerializer`` makes of `bytes` cut into `chunks` (sizes; the rest is
    /// the last chunk).
    static func streamed(_ bytes: Data, chunks: [Int]) -> String {
        var serializer = StringStreamSerializer()
        var strings: [String] = []
        var rest = bytes[...]
        for size in chunks {
            let chunk = rest.prefix(size)
            rest = rest.dropFirst(size)
            strings += serializer.serialize(ByteBuffer(bytes: chunk))
        }
        if !rest.isEmpty { strings += serializer.serialize(ByteBuffer(bytes: rest)) }
        strings += serializer.finish()
        return strings.joined()
    }

    /// OkHttp: `readerEmpty`, `readerLooksLikeBomButTooShort`, `readerDefaultsToUtf8`,
    /// `readerBomUtf8`, `readerBomUtf16Be`, `readerBomUtf16Le`, `readerBomUtf32Be`,
    /// `readerBomUtf32Le`: a byte-order mark at the start of the stream says its encoding and is
    /// not part of the text, whether the body comes in one chunk, one byte at a time or cut
    /// anywhere. Before, ``StringStreamSerializer`` decoded every body as UTF-8: a UTF-8 mark came
    /// out as U+FEFF, and UTF-16 or UTF-32 text as NULs and U+FFFD.
    ///
    /// `readerExplicitCharset` and the `charset` of `BomOverridesExplicitCharset` are not
    /// ported: a stream serializer sees the body's chunks, not its `Content-Type`, and decodes
    /// UTF-8 unless a mark says otherwise (Alamofire's `StringStreamSerializer` is UTF-8 only).
    @Test(arguments: Self.decodingCases.filter { $0.charset == nil })
    func reader(_ row: Case) {
        let bytes = Self.bytes(row.hex)
        let want = Self.scalars(row.text)
        #expect(Self.scalars(Self.streamed(bytes, chunks: [])) == want, "one chunk")
        #expect(Self.scalars(Self.streamed(bytes, chunks: Array(repeating: 1, count: bytes.count))) == want, "byte by byte")
        for cut in 0...bytes.count {
            #expect(Self.scalars(Self.streamed(bytes, chunks: [cut])) == want, "cut at \(cut)")
        }
    }

    /// The UTF-16 and UTF-32 streams beyond OkHttp's ASCII: a character outside the BMP (a
    /// surrogate pair in UTF-16) split anywhere comes whole, and a unit the body ends in the middle
    /// of becomes U+FFFD, as a broken UTF-8 character does.
    @Test func readerKeepsUTF16AndUTF32CharactersWhole() {
        let text = "a€😀b"
        var utf16BE = Data([0xFE, 0xFF])
        var utf32LE = Data([0xFF, 0xFE, 0x00, 0x00])
        for unit in text.utf16 { utf16BE += [UInt8(unit >> 8), UInt8(unit & 0xFF)] }
        for scalar in text.unicodeScalars {
            let value = scalar.value
            utf32LE += [UInt8(value & 0xFF), UInt8((value >> 8) & 0xFF), UInt8((value >> 16) & 0xFF), UInt8(value >> 24)]
        }
        for bytes in [utf16BE, utf32LE] {
            for cut in 0...bytes.count {
                #expect(Self.streamed(bytes, chunks: [cut]) == text, "cut at \(cut)")
            }
            #expect(Self.streamed(bytes, chunks: Array(repeating: 1, count: bytes.count)) == text)
        }
        // A UTF-16 body that ends one byte into a unit, and one that ends on a high surrogate.
        #expect(Self.streamed(Self.bytes("feff006800"), chunks: []) == "h\u{FFFD}")
        #expect(Self.streamed(Self.bytes("feff0068d83d"), chunks: [3]) == "h\u{FFFD}")
        // Only the first mark is one: a second is text (U+FEFF).
        #expect(Self.scalars(Self.streamed(Self.bytes("efbbbfefbbbf68"), chunks: [])) == [0xFEFF, 0x68])
    }
}
