import Courier
import Foundation
import Testing

extension RequestSerializationTests {
    @Suite("Percent escaping (AFPercentEscapedStringFromString)")
    struct PercentEscapingTests {
        @Test(
            "escapes all but unreserved, ? and /",
            arguments: [
                ("abcXYZ019-._~", "abcXYZ019-._~"),
                ("?/", "?/"),
                (":#[]@", "%3A%23%5B%5D%40"),
                ("!$&'()*+,;=", "%21%24%26%27%28%29%2A%2B%2C%3B%3D"),
                ("a b", "a%20b"),
                ("a+b", "a%2Bb"),
                ("100%", "100%25"),
                ("%20", "%2520"),  // already-escaped input is escaped again, as AFNetworking does
                ("é", "%C3%A9"),
                ("e\u{301}", "e%CC%81"),  // combining mark
                ("😀", "%F0%9F%98%80"),
                ("👍🏽", "%F0%9F%91%8D%F0%9F%8F%BD"),  // skin tone
                ("🇫🇷", "%F0%9F%87%AB%F0%9F%87%B7"),  // flag
                ("\"<>\\^`{|}", "%22%3C%3E%5C%5E%60%7B%7C%7D"),
                ("\n\t\0", "%0A%09%00"),
                ("", ""),
            ] as [(String, String)]
        )
        func escapes(input: String, expected: String) {
            #expect(HTTPRequestSerializer.percentEscaped(input) == expected)
        }

        /// AFNetworking keeps `URLQueryAllowedCharacterSet` minus `:#[]@` and `!$&'()*+,;=`: of ASCII,
        /// only letters, digits, `-._~`, `?` and `/`.
        @Test("every ASCII character as AFNetworking escapes it")
        func everyASCIICharacter() {
            let kept = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~?/".unicodeScalars)
            for value in UInt8(0)...UInt8(127) {
                let scalar = Unicode.Scalar(value)
                let expected = kept.contains(scalar) ? String(scalar) : "%" + (value < 16 ? "0" : "") + String(value, radix: 16, uppercase: true)
                #expect(HTTPRequestSerializer.percentEscaped(String(scalar)) == expected, "U+\(String(value, radix: 16))")
            }
        }

        /// AFNetworking escapes in batches of 50 UTF-16 units and must not cut an emoji in half; put
        /// composed characters across every position around 50 and 100.
        @Test("composed characters across batch boundaries", arguments: [48, 49, 50, 51, 98, 99, 100])
        func emojiAcrossBatchBoundaries(prefixLength: Int) {
            for composed in ["😀", "👍🏽", "🇫🇷", "👨‍👩‍👧‍👦", "e\u{301}\u{302}"] {
                let input = String(repeating: "a", count: prefixLength) + composed + composed + "z"
                let escaped = HTTPRequestSerializer.percentEscaped(input)
                #expect(escaped.removingPercentEncoding == input)
                #expect(escaped.hasPrefix(String(repeating: "a", count: prefixLength)))
                #expect(escaped.dropFirst(prefixLength).allSatisfy { $0 != "a" })
                #expect(escaped.hasSuffix("z"))
                #expect(!escaped.contains("%EF%BF%BD"), "no replacement character from a split")
            }
        }

        @Test("very long values round-trip")
        func veryLong() {
            let input = String(repeating: "a b/é😀🇫🇷", count: 20_000)
            let escaped = HTTPRequestSerializer.percentEscaped(input)
            #expect(escaped.removingPercentEncoding == input)
            #expect(escaped.allSatisfy { $0.isASCII })
        }
    }
}
