import Foundation
import HTTPTypes
import Testing

@testable import Courier

/// OkHttp's form body tests (`okhttp/src/jvmTest/kotlin/okhttp3/FormBodyTest.kt`, Apache 2.0),
/// against the `application/x-www-form-urlencoded` body ``HTTPRequestSerializer`` writes for a
/// `POST` (AFNetworking's). Each test keeps OkHttp's name. Not ported: `addEncoded` (OkHttp's
/// builder takes pairs already encoded; a dictionary of parameters has no such pairs) and the
/// builder's `name(i)`/`encodedName(i)` accessors.
///
/// Courier follows AFNetworking where OkHttp follows the browsers' form encoding, and those tests
/// assert Courier's answer (OkHttp's is in the comment):
/// - `AFPercentEscapedStringFromString`'s character set: every byte but the unreserved characters
///   (`A–Z a–z 0–9 - . _ ~`) and `?` and `/` is escaped, so a space is `%20` (OkHttp: `+`), `*` is
///   `%2A` (OkHttp: `*`), and `~`, `?` and `/` are kept (OkHttp: `%7E`, `%3F`, `%2F`);
/// - the pairs are sorted by key, as `AFQueryStringPairsFromKeyAndValue` sorts a dictionary's
///   keys (OkHttp keeps the order they were added in);
/// - the escapes are of the UTF-8 bytes whatever ``HTTPRequestSerializer/stringEncoding`` is
///   (AFNetworking escapes with `stringByAddingPercentEncodingWithAllowedCharacters:`, then
///   encodes the ASCII result); OkHttp escapes the bytes of the form's charset.
@Suite("OkHttp's form body tests")
struct OkHttpFormBodyTests {
    static func post(_ parameters: [String: String], serializer: HTTPRequestSerializer = HTTPRequestSerializer()) throws -> Request {
        try serializer.request(method: .post, urlString: "http://example.com/", parameters: parameters)
    }

    static func body(_ parameters: [String: String], serializer: HTTPRequestSerializer = HTTPRequestSerializer()) throws -> String {
        String(decoding: try Self.post(parameters, serializer: serializer).body.data ?? Data(), as: UTF8.self)
    }

    /// OkHttp: `a%2B%3D%26+b=c%2B%3D%26+d&space%2C+the=final+frontier&%2525=%2525` (spaces as `+`,
    /// in the order added).
    @Test func urlEncoding() throws {
        let request = try Self.post(["a+=& b": "c+=& d", "space, the": "final frontier", "%25": "%25"])
        let expected = "%2525=%2525&a%2B%3D%26%20b=c%2B%3D%26%20d&space%2C%20the=final%20frontier"
        #expect(request.headerFields[.contentType] == "application/x-www-form-urlencoded")
        #expect(request.body.data == Data(expected.utf8))
    }

    @Test func encodedPair() throws {
        #expect(try Self.body(["sim": "ple"]) == "sim=ple")
    }

    /// OkHttp: `sim=ple&hey=there&help=me` (the order added).
    @Test func encodeMultiplePairs() throws {
        #expect(try Self.body(["sim": "ple", "hey": "there", "help": "me"]) == "help=me&hey=there&sim=ple")
    }

    @Test func buildEmptyForm() throws {
        #expect(try Self.body([:]) == "")
        let request = try HTTPRequestSerializer().request(method: .post, urlString: "http://example.com/", parameters: nil)
        #expect((request.body.data ?? Data()).isEmpty)
    }

    /// Courier's escape of `code point` (between `b` and `c`, as OkHttp wraps it).
    static func formEncode(_ codePoint: Int) throws -> String {
        let scalar = try #require(Unicode.Scalar(codePoint))
        let body = try Self.body(["a": "b\(Character(scalar))c"])
        #expect(body.hasPrefix("a=b") && body.hasSuffix("c"))
        return String(body.dropFirst(3).dropLast())
    }

    /// Every code point OkHttp's test names, with OkHttp's escape; the five AFNetworking's set
    /// writes otherwise are pinned to Courier's, OkHttp's in the comment.
    @Test func characterEncoding() throws {
        var expected: [Int: String] = [:]
        for codePoint in 0...31 { expected[codePoint] = String(format: "%%%02X", codePoint) }
        expected[32] = "%20"  // OkHttp: "+"
        for (codePoint, escape) in [
            (33, "%21"), (34, "%22"), (35, "%23"), (36, "%24"), (37, "%25"), (38, "%26"), (39, "%27"), (40, "%28"), (41, "%29"),
            (43, "%2B"), (44, "%2C"), (45, "-"), (46, "."), (48, "0"), (57, "9"), (58, "%3A"), (59, "%3B"), (60, "%3C"),
            (61, "%3D"), (62, "%3E"), (64, "%40"), (65, "A"), (90, "Z"), (91, "%5B"), (92, "%5C"), (93, "%5D"), (94, "%5E"),
            (95, "_"), (96, "%60"), (97, "a"), (122, "z"), (123, "%7B"), (124, "%7C"), (125, "%7D"), (127, "%7F"),
            (128, "%C2%80"), (255, "%C3%BF"),
        ] {
            expected[codePoint] = escape
        }
        expected[42] = "%2A"  // OkHttp: "*"
        expected[47] = "/"  // OkHttp: "%2F"
        expected[63] = "?"  // OkHttp: "%3F"
        expected[126] = "~"  // OkHttp: "%7E"
        #expect(expected.count == 74)
        for (codePoint, escape) in expected.sorted(by: { $0.key < $1.key }) {
            #expect(try Self.formEncode(codePoint) == escape, "\(codePoint)")
        }
    }

    /// OkHttp: `name=Nicol%E1s` (the ISO-8859-1 byte). AFNetworking escapes the UTF-8 bytes.
    @Test func manualCharset() throws {
        var serializer = HTTPRequestSerializer()
        serializer.stringEncoding = .isoLatin1
        #expect(try Self.body(["name": "Nicol\u{E1}s"], serializer: serializer) == "name=Nicol%C3%A1s")
    }
}
