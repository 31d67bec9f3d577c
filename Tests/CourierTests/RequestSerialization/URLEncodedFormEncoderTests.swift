import Courier
import Foundation
import Testing

extension RequestSerializationTests {
    @Suite("URLEncodedFormEncoder")
    struct URLEncodedFormEncoderTests {
        struct Profile: Encodable {
            var userName = "Ann Lee"
            var tags = ["a", "b"]
            var admin = true
            var score = 1.5
            var address = Address()
            var nickname: String? = nil
        }

        struct Address: Encodable {
            var city = "Zürich"
            var zip = 8001
        }

        @Test("defaults: brackets, numeric booleans, %20, sorted keys, nil optionals skipped")
        func defaults() throws {
            let form = try URLEncodedFormEncoder().encode(Profile())
            #expect(form == "address%5Bcity%5D=Z%C3%BCrich&address%5Bzip%5D=8001&admin=1&score=1.5&tags%5B%5D=a&tags%5B%5D=b&userName=Ann%20Lee")
        }

        @Test(
            "array encodings",
            arguments: [
                (URLEncodedFormEncoder.ArrayEncoding.brackets, "a%5B%5D=x&a%5B%5D=y"),
                (.noBrackets, "a=x&a=y"),
                (.indexInBrackets, "a%5B0%5D=x&a%5B1%5D=y"),
            ]
        )
        func arrays(encoding: URLEncodedFormEncoder.ArrayEncoding, expected: String) throws {
            var encoder = URLEncodedFormEncoder()
            encoder.arrayEncoding = encoding
            #expect(try encoder.encode(["a": ["x", "y"]]) == expected)
        }

        @Test("booleans, spaces and plus signs")
        func boolsAndSpaces() throws {
            var encoder = URLEncodedFormEncoder()
            encoder.boolEncoding = .literal
            encoder.spaceEncoding = .plusReplaced
            #expect(try encoder.encode(["t": true, "f": false]) == "f=false&t=true")
            #expect(try encoder.encode(["q": "a b+c"]) == "q=a+b%2Bc")
            encoder.spaceEncoding = .percentEscaped
            #expect(try encoder.encode(["q": "a b+c"]) == "q=a%20b%2Bc")
        }

        @Test("dates")
        func dates() throws {
            struct Event: Encodable { var at = Date(timeIntervalSince1970: 86_400.5) }
            var encoder = URLEncodedFormEncoder()
            #expect(try encoder.encode(Event()) == "at=\(ParameterText.shortest(86_400.5 - 978_307_200))")
            encoder.dateEncoding = .secondsSince1970
            #expect(try encoder.encode(Event()) == "at=86400.5")
            encoder.dateEncoding = .millisecondsSince1970
            #expect(try encoder.encode(Event()) == "at=86400500")
            encoder.dateEncoding = .iso8601
            #expect(try encoder.encode(Event()) == "at=1970-01-02T00%3A00%3A00Z")
            encoder.dateEncoding = .custom { _ in "tomorrow" }
            #expect(try encoder.encode(Event()) == "at=tomorrow")
        }

        @Test("data")
        func data() throws {
            struct Blob: Encodable { var d = Data([0xFB, 0xFF]) }
            var encoder = URLEncodedFormEncoder()
            #expect(try encoder.encode(Blob()) == "d=%2B/8%3D")
            encoder.dataEncoding = .deferredToData
            #expect(try encoder.encode(Blob()) == "d%5B%5D=251&d%5B%5D=255")
            encoder.dataEncoding = .custom { $0.map { String(format: "%02x", $0) }.joined() }
            #expect(try encoder.encode(Blob()) == "d=fbff")
        }

        @Test("key conversion at every depth")
        func keys() throws {
            struct Outer: Encodable { var userID = 1; var homeAddress = ["postCode": "X"] }
            var encoder = URLEncodedFormEncoder()
            encoder.keyEncoding = .convertToSnakeCase
            #expect(try encoder.encode(Outer()) == "home_address%5Bpost_code%5D=X&user_id=1")
            encoder.keyEncoding = .convertToKebabCase
            #expect(try encoder.encode(Outer()) == "home-address%5Bpost-code%5D=X&user-id=1")
            encoder.keyEncoding = .custom { $0.uppercased() }
            #expect(try encoder.encode(Outer()) == "HOMEADDRESS%5BPOSTCODE%5D=X&USERID=1")
        }

        /// Keys are sorted as they are written, after their conversion, as Alamofire sorts its
        /// pairs (sorted before it, `C` came before `b` and was written before `B`).
        @Test func keysAreSortedAfterTheirConversion() throws {
            var encoder = URLEncodedFormEncoder()
            encoder.keyEncoding = .capitalized
            #expect(try encoder.encode(["b": 1, "C": 2]) == "B=1&C=2")
            #expect(try encoder.encode(["n": ["b": 1, "C": 2]]) == "N%5BB%5D=1&N%5BC%5D=2")
            encoder.keyEncoding = .custom { $0 == "a" ? "z" : $0 }
            #expect(try encoder.encode(["a": 1, "b": 2]) == "b=2&z=1")
        }

        @Test("explicit nils")
        func nils() throws {
            struct Explicit: Encodable {
                var value: Int? = nil
                func encode(to encoder: any Encoder) throws {
                    var container = encoder.container(keyedBy: AnyKey.self)
                    try container.encode(self.value, forKey: AnyKey(stringValue: "v"))
                    try container.encode(1, forKey: AnyKey(stringValue: "w"))
                }
            }
            var encoder = URLEncodedFormEncoder()
            #expect(try encoder.encode(Explicit()) == "w=1")
            encoder.nilEncoding = .dropValue
            #expect(try encoder.encode(Explicit()) == "v&w=1")
            encoder.nilEncoding = .null
            #expect(try encoder.encode(Explicit()) == "v=null&w=1")
        }

        @Test("empty containers, unicode keys, brackets in keys")
        func awkward() throws {
            let encoder = URLEncodedFormEncoder()
            #expect(try encoder.encode(["a": [String]()]) == "")
            #expect(try encoder.encode(["ключ[0]": "😀 🇫🇷"]) == "%D0%BA%D0%BB%D1%8E%D1%87%5B0%5D=%F0%9F%98%80%20%F0%9F%87%AB%F0%9F%87%B7")
            #expect(try encoder.encode(["m": [["x": 1], ["x": 2]]]) == "m%5B%5D%5Bx%5D=1&m%5B%5D%5Bx%5D=2")
        }

        @Test("top-level arrays and scalars, NaN and throwing values fail with a path")
        func bad() {
            struct Bad: Encodable { var list = [1.0, .nan] }
            struct Refusing: Encodable {
                struct Refused: Error {}
                func encode(to encoder: any Encoder) throws { throw Refused() }
            }
            let encoder = URLEncodedFormEncoder()
            for (value, fragment) in [([1, 2] as any Encodable, "array"), ("x", "string"), (Bad(), "'list[1]'")] as [(any Encodable, String)] {
                #expect {
                    try encoder.encode(value)
                } throws: { error in
                    guard let error = error as? CourierError else { return false }
                    return error.code == .parameterEncodingFailed && error.message.contains(fragment)
                }
            }
            #expect(throws: CourierError(.parameterEncodingFailed, "")) { try encoder.encode(["r": Refusing()]) }
        }
    }

    @Suite("URLEncodedFormEncoder: containers asked for again")
    struct URLEncodedFormEncoderContainerTests {
        /// Calls `body` with the encoder of a value and encodes that value.
        struct Manual: Encodable {
            let body: @Sendable (any Encoder) throws -> Void
            func encode(to encoder: any Encoder) throws { try self.body(encoder) }
        }

        static func form(_ body: @escaping @Sendable (any Encoder) throws -> Void) throws -> String {
            try URLEncodedFormEncoder().encode(Manual(body: body))
        }

        @Test("a keyed container asked for twice at the top or under a key merges")
        func keyedTwiceMerges() throws {
            let form = try Self.form { encoder in
                var first = encoder.container(keyedBy: AnyKey.self)
                try first.encode("1", forKey: AnyKey(stringValue: "a"))
                var nested = first.nestedContainer(keyedBy: AnyKey.self, forKey: AnyKey(stringValue: "n"))
                try nested.encode("x", forKey: AnyKey(stringValue: "x"))
                var second = encoder.container(keyedBy: AnyKey.self)
                try second.encode("2", forKey: AnyKey(stringValue: "b"))
                var nestedAgain = second.nestedContainer(keyedBy: AnyKey.self, forKey: AnyKey(stringValue: "n"))
                try nestedAgain.encode("y", forKey: AnyKey(stringValue: "y"))
            }
            #expect(form == "a=1&b=2&n%5Bx%5D=x&n%5By%5D=y")
        }

        @Test("an unkeyed container asked for twice under a key appends")
        func unkeyedTwiceAppends() throws {
            let form = try Self.form { encoder in
                var keyed = encoder.container(keyedBy: AnyKey.self)
                var first = keyed.nestedUnkeyedContainer(forKey: AnyKey(stringValue: "l"))
                try first.encode(1)
                var second = keyed.nestedUnkeyedContainer(forKey: AnyKey(stringValue: "l"))
                #expect(second.count == 1)
                try second.encode(2)
            }
            #expect(form == "l%5B%5D=1&l%5B%5D=2")
        }

        @Test("a write of another kind replaces; a value written twice under a key: the last wins")
        func otherKindReplaces() throws {
            let form = try Self.form { encoder in
                var keyed = encoder.container(keyedBy: AnyKey.self)
                var nested = keyed.nestedContainer(keyedBy: AnyKey.self, forKey: AnyKey(stringValue: "k"))
                try nested.encode("gone", forKey: AnyKey(stringValue: "x"))
                var list = keyed.nestedUnkeyedContainer(forKey: AnyKey(stringValue: "k"))
                try list.encode("kept")
                try keyed.encode(["a": 1], forKey: AnyKey(stringValue: "v"))
                try keyed.encode("last", forKey: AnyKey(stringValue: "v"))
            }
            #expect(form == "k%5B%5D=kept&v=last")
        }

        @Test("superEncoder() writes into the same container, superEncoder(forKey:) under the key")
        func superEncoders() throws {
            let form = try Self.form { encoder in
                var keyed = encoder.container(keyedBy: AnyKey.self)
                try keyed.encode(1, forKey: AnyKey(stringValue: "own"))
                var parent = keyed.superEncoder().container(keyedBy: AnyKey.self)
                try parent.encode(2, forKey: AnyKey(stringValue: "inherited"))
                var under = keyed.superEncoder(forKey: AnyKey(stringValue: "base")).container(keyedBy: AnyKey.self)
                try under.encode(3, forKey: AnyKey(stringValue: "x"))
            }
            #expect(form == "base%5Bx%5D=3&inherited=2&own=1")
        }

        @Test("an empty struct is an empty form; a value that encodes nothing fails")
        func emptyAndNothing() throws {
            struct Empty: Encodable {}
            #expect(try URLEncodedFormEncoder().encode(Empty()) == "")
            #expect { try Self.form { _ in } } throws: { error in
                (error as? CourierError)?.code == .parameterEncodingFailed && (error as? CourierError)?.message.contains("encoded no value") == true
            }
        }

        @Test("decimals and URLs are written as text; NaN and infinities fail with their path")
        func decimalsURLsAndNonFinite() throws {
            struct Values: Encodable {
                var d = Decimal(string: "12345678901234567890.125")!
                var u = URL(string: "https://example.com/a?b=c")!
                var f: Float = 0.1
            }
            #expect(try URLEncodedFormEncoder().encode(Values()) == "d=12345678901234567890.125&f=0.1&u=https%3A//example.com/a?b%3Dc")
            struct Bad: Encodable { var inner = ["x": [Float.infinity]]; var d = Decimal.nan }
            #expect { try URLEncodedFormEncoder().encode(Bad()) } throws: { error in
                guard let error = error as? CourierError else { return false }
                return error.code == .parameterEncodingFailed && (error.message.contains("'inner[x][0]'") || error.message.contains("'d'"))
            }
            #expect { try URLEncodedFormEncoder().encode(["d": Decimal.nan]) } throws: { error in
                (error as? CourierError)?.message.contains("'d'") == true
            }
            #expect { try URLEncodedFormEncoder().encode(["x": [Float.infinity]]) } throws: { error in
                (error as? CourierError)?.message.contains("'x[0]'") == true
            }
        }
    }

    struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// Swift's shortest text for a double without a trailing `.0`.
    enum ParameterText {
        static func shortest(_ value: Double) -> String {
            let text = value.description
            return text.hasSuffix(".0") ? String(text.dropLast(2)) : text
        }
    }
}

extension RequestSerializationTests {
    @Suite("URLEncodedFormEncoder: key order, custom array keys, formatted dates, allowed characters")
    struct URLEncodedFormEncoderOptionTests {
        struct Outer: Encodable {
            var zeta = "z"
            var alpha = Inner()
            var mid = [Inner(), Inner()]
        }

        struct Inner: Encodable {
            var y = 1
            var b = 2
        }

        @Test("without alphabetizing, keys come in the order written, at every depth and in arrays")
        func implementationOrder() throws {
            var encoder = URLEncodedFormEncoder()
            #expect(
                try encoder.encode(Outer()).removingPercentEncoding
                    == "alpha[b]=2&alpha[y]=1&mid[][b]=2&mid[][y]=1&mid[][b]=2&mid[][y]=1&zeta=z")
            encoder.alphabetizeKeyValuePairs = false
            #expect(
                try encoder.encode(Outer()).removingPercentEncoding
                    == "zeta=z&alpha[y]=1&alpha[b]=2&mid[][y]=1&mid[][b]=2&mid[][y]=1&mid[][b]=2")
        }

        @Test("without alphabetizing, a key written again keeps its first place; merged containers append")
        func implementationOrderRewrites() throws {
            struct Manual: Encodable {
                func encode(to encoder: any Encoder) throws {
                    var first = encoder.container(keyedBy: AnyKey.self)
                    try first.encode("1", forKey: AnyKey(stringValue: "b"))
                    try first.encode("1", forKey: AnyKey(stringValue: "a"))
                    var second = encoder.container(keyedBy: AnyKey.self)
                    try second.encode("2", forKey: AnyKey(stringValue: "b"))
                    try second.encode("2", forKey: AnyKey(stringValue: "c"))
                }
            }
            var encoder = URLEncodedFormEncoder()
            encoder.alphabetizeKeyValuePairs = false
            #expect(try encoder.encode(Manual()) == "b=2&a=1&c=2")
        }

        @Test("a custom array key: every depth, escaped as any key; copies are equal, two closures are not")
        func customArrayKeys() throws {
            var encoder = URLEncodedFormEncoder()
            let dotted = URLEncodedFormEncoder.ArrayEncoding.custom { key, index in "\(key).\(index + 1)" }
            encoder.arrayEncoding = dotted
            #expect(try encoder.encode(["a": [["x", "y"], ["z"]]]) == "a.1.1=x&a.1.2=y&a.2.1=z")
            encoder.arrayEncoding = .custom { key, index in "\(key)&\(index)" }
            #expect(try encoder.encode(["a": ["x"]]) == "a%260=x")

            let copy = dotted
            #expect(copy == dotted)
            #expect(Set([dotted, copy]).count == 1)
            #expect(dotted != .custom { key, index in "\(key).\(index + 1)" })
            #expect(dotted != .brackets)
            #expect(URLEncodedFormEncoder.ArrayEncoding.brackets == .brackets)

            let style = HTTPRequestSerializer.QueryStringSerializationStyle(arrayEncoding: dotted)
            #expect(try HTTPRequestSerializer.queryString(from: ["a": ["x", ["k": "v"]] as [any Sendable]], style: style) == "a.1=x&a.2%5Bk%5D=v")
        }

        @Test("a formatted date is the formatter's string, escaped")
        func formattedDates() throws {
            let formatter = DateFormatter()
            formatter.dateFormat = "yyyy/MM/dd HH:mm"
            formatter.timeZone = TimeZone(secondsFromGMT: 3600)
            formatter.locale = Locale(identifier: "en_US_POSIX")
            var encoder = URLEncodedFormEncoder()
            encoder.dateEncoding = .formatted(formatter)
            #expect(try encoder.encode(["at": Date(timeIntervalSince1970: 0)]) == "at=1970/01/01%2001:00".replacingOccurrences(of: ":", with: "%3A"))
        }

        @Test("allowed characters: what the set holds is written as it is, other bytes %XX, spaces as the space encoding says")
        func allowedCharacters() throws {
            var encoder = URLEncodedFormEncoder()
            #expect(encoder.allowedCharacters == nil)
            let text = "a/b?c=d é😀 +"
            let byDefault = try encoder.encode(["k": text])
            encoder.allowedCharacters = URLEncodedFormEncoder.queryAllowedCharacters
            #expect(try encoder.encode(["k": text]) == byDefault)
            #expect(byDefault == "k=a/b?c%3Dd%20%C3%A9%F0%9F%98%80%20%2B")

            var allowed = URLEncodedFormEncoder.queryAllowedCharacters
            allowed.remove(charactersIn: "?/")
            allowed.insert(charactersIn: "=é")
            encoder.allowedCharacters = allowed
            #expect(try encoder.encode(["k/": text]) == "k%2F=a%2Fb%3Fc=d%20é%F0%9F%98%80%20%2B")
            encoder.spaceEncoding = .plusReplaced
            #expect(try encoder.encode(["k": "a b"]) == "k=a+b")
            allowed.insert(" ")
            encoder.allowedCharacters = allowed
            encoder.spaceEncoding = .percentEscaped
            #expect(try encoder.encode(["k": "a b"]) == "k=a b")
        }
    }
}
