import Courier
import Foundation
import HTTPTypes
import Testing

extension RequestSerializationTests {
    @Suite("Query strings (AFQueryStringFromParameters)")
    struct QueryStringTests {
        struct Case: CustomTestStringConvertible, Sendable {
            var name: String
            var parameters: Parameters
            var expected: String
            var testDescription: String { self.name }
        }

        static let cases: [Case] = [
            Case(name: "flat, sorted", parameters: ["b": "2", "a": "1", "c": "3"], expected: "a=1&b=2&c=3"),
            Case(name: "empty", parameters: [:], expected: ""),
            Case(name: "nested dictionary", parameters: ["user": ["name": "Ann", "age": 30] as Parameters], expected: "user%5Bage%5D=30&user%5Bname%5D=Ann"),
            Case(name: "array", parameters: ["tags": ["x", "y", "x"]], expected: "tags%5B%5D=x&tags%5B%5D=y&tags%5B%5D=x"),
            Case(
                name: "array of dictionaries",
                parameters: ["items": [["id": 1, "q": 2], ["id": 3]] as [any Sendable]],
                expected: "items%5B%5D%5Bid%5D=1&items%5B%5D%5Bq%5D=2&items%5B%5D%5Bid%5D=3"
            ),
            Case(name: "nested arrays", parameters: ["m": [[1, 2], [3]]], expected: "m%5B%5D%5B%5D=1&m%5B%5D%5B%5D=2&m%5B%5D%5B%5D=3"),
            Case(name: "set repeats the key, sorted", parameters: ["s": Set(["b", "c", "a"])], expected: "s=a&s=b&s=c"),
            Case(name: "set of integers", parameters: ["s": Set([2, 1, 10])], expected: "s=1&s=10&s=2"),
            // Sorted by Foundation's description: "{\n    id = 10;\n}" before "{\n    id = 1;\n}" ('0' < ';').
            Case(
                name: "set of dictionaries, sorted by their description",
                parameters: ["s": Set([["id": 1], ["id": 10], ["id": 2]])],
                expected: "s%5Bid%5D=10&s%5Bid%5D=1&s%5Bid%5D=2"
            ),
            Case(name: "set of arrays, sorted by their description", parameters: ["s": Set([[2], [10], [1, 5]])], expected: "s%5B%5D=1&s%5B%5D=5&s%5B%5D=10&s%5B%5D=2"),
            // A string with a space is quoted in a description, and '"' sorts before letters.
            Case(name: "set of dictionaries of strings", parameters: ["s": Set([["k": "b"], ["k": "b c"], ["k": "a"]])], expected: "s%5Bk%5D=b%20c&s%5Bk%5D=a&s%5Bk%5D=b"),
            Case(name: "NSNull is the bare key", parameters: ["a": NSNull(), "b": "1"], expected: "a&b=1"),
            Case(name: "NSNull in an array is the bare key[]", parameters: ["a": [NSNull(), "x"] as [any Sendable]], expected: "a%5B%5D&a%5B%5D=x"),
            Case(name: "nil optional is the bare key", parameters: ["a": String?.none, "b": String?.some("x")], expected: "a&b=x"),
            Case(name: "booleans", parameters: ["t": true, "f": false], expected: "f=0&t=1"),
            Case(name: "NSNumber booleans", parameters: ["t": NSNumber(value: true), "f": NSNumber(value: false)], expected: "f=0&t=1"),
            Case(name: "NSNumber 1 is not true", parameters: ["one": NSNumber(value: 1), "zero": NSNumber(value: 0)], expected: "one=1&zero=0"),
            Case(
                name: "numbers in shortest form",
                parameters: ["i": 42, "d": 0.1, "w": 100.0, "n": -3, "e": 1e16, "s": 1e-7, "f": Float(0.1), "u": UInt64.max, "x": Decimal(string: "1.50")!],
                expected: "d=0.1&e=1e%2B16&f=0.1&i=42&n=-3&s=1e-07&u=18446744073709551615&w=100&x=1.5"
            ),
            Case(
                name: "NSNumber doubles and integers",
                parameters: ["d": NSNumber(value: 2.5), "i": NSNumber(value: 7), "q": NSNumber(value: UInt64.max)],
                expected: "d=2.5&i=7&q=18446744073709551615"
            ),
            Case(name: "plus and spaces", parameters: ["q": "a+b c"], expected: "q=a%2Bb%20c"),
            Case(name: "already percent-encoded input", parameters: ["q": "a%20b"], expected: "q=a%2520b"),
            Case(name: "keys with brackets", parameters: ["a[b]": "1", "c[]": "2"], expected: "a%5Bb%5D=1&c%5B%5D=2"),
            Case(name: "unicode keys", parameters: ["ключ": "значение", "😀": "🇫🇷"], expected: "%D0%BA%D0%BB%D1%8E%D1%87=%D0%B7%D0%BD%D0%B0%D1%87%D0%B5%D0%BD%D0%B8%D0%B5&%F0%9F%98%80=%F0%9F%87%AB%F0%9F%87%B7"),
            Case(name: "empty containers write nothing", parameters: ["a": [String](), "b": [String: String](), "c": Set<String>(), "d": "1"], expected: "d=1"),
            Case(name: "empty string value", parameters: ["a": ""], expected: "a="),
            Case(name: "empty key", parameters: ["": "x"], expected: "=x"),
            Case(
                name: "deep nesting",
                parameters: ["a": ["b": ["c": ["d": ["e": [1]]]]]],
                expected: "a%5Bb%5D%5Bc%5D%5Bd%5D%5Be%5D%5B%5D=1"
            ),
            Case(name: "keys sorted at every depth", parameters: ["z": ["y": 1, "x": 2], "a": ["c": 3, "b": 4]], expected: "a%5Bb%5D=4&a%5Bc%5D=3&z%5Bx%5D=2&z%5By%5D=1"),
            Case(name: "URL and UUID values", parameters: ["u": URL(string: "https://x.org/a?b=c")!], expected: "u=https%3A//x.org/a?b%3Dc"),
            Case(name: "[String: Any]-typed nested", parameters: ["n": ["k": "v"] as [String: String]], expected: "n%5Bk%5D=v"),
        ]

        @Test("writes as AFNetworking does", arguments: cases)
        func writes(_ testCase: Case) throws {
            #expect(try HTTPRequestSerializer.queryString(from: testCase.parameters) == testCase.expected)
        }

        /// AFNetworking sorts with `compare:`, which is not literal: where two ASCII characters
        /// first differ they decide, otherwise code points and canonical decompositions do.
        @Test("keys are sorted as -[NSString compare:] sorts them")
        func sortOrder() throws {
            // U+FF01 sorts before U+1F600 by code point (its UTF-16 unit is after the surrogate's).
            #expect(
                try HTTPRequestSerializer.queryString(from: ["\u{FF01}": 1, "😀": 2, "B": 3, "a": 4] as Parameters)
                    == "B=3&a=4&%EF%BC%81=1&%F0%9F%98%80=2")
            // é is compared as e + U+0301: after e and ea, before f.
            #expect(
                try HTTPRequestSerializer.queryString(from: ["f": 1, "é": 2, "ea": 3, "e": 4] as Parameters)
                    == "e=4&ea=3&%C3%A9=2&f=1")
            // й is и + U+0306, which sorts before б.
            #expect(try HTTPRequestSerializer.queryString(from: ["иб": 1, "йа": 2] as Parameters) == "%D0%B9%D0%B0=2&%D0%B8%D0%B1=1")
            // A prefix first; then a combining mark after the ASCII letters.
            #expect(
                try HTTPRequestSerializer.queryString(from: ["b": 1, "a\u{301}": 2, "ab": 3, "a": 4] as Parameters)
                    == "a=4&ab=3&a%CC%81=2&b=1")
            // Set elements are sorted the same way.
            #expect(try HTTPRequestSerializer.queryString(from: ["s": Set(["f", "é", "e"])] as Parameters) == "s=e&s=%C3%A9&s=f")
        }

        struct Filter: Encodable, Sendable {
        var minPrice = 1.5
        var brands = ["a", "b"]
        var inStock = true
        var note: String? = nil
    }

    @Test("Encodable values nested in parameters are written as a default JSONEncoder would")
    func encodableValues() throws {
        let query = try HTTPRequestSerializer.queryString(from: ["filter": Filter(), "page": 1] as Parameters)
        #expect(query == "filter%5Bbrands%5D%5B%5D=a&filter%5Bbrands%5D%5B%5D=b&filter%5BinStock%5D=1&filter%5BminPrice%5D=1.5&page=1")
        let json = try JSONRequestSerializer().request(method: .post, urlString: "https://h.test/", parameters: Filter())
        #expect(json.body.data == Data(#"{"brands":["a","b"],"inStock":true,"minPrice":1.5}"#.utf8))
    }

    @Test("an Encodable value that fails names the path inside it")
    func encodableFailure() {
        struct Bad: Encodable, Sendable { var values = [1.0, .nan] }
        #expect {
            try HTTPRequestSerializer.queryString(from: ["outer": Bad()] as Parameters)
        } throws: { error in
            (error as? CourierError)?.message.contains("'outer[values][1]'") == true
        }
    }

    @Test("an Encodable value that asks again for a container it wrote is written, not a trap")
    func encodableWritingTwice() throws {
        struct Twice: Encodable, Sendable {
            var at = Date(timeIntervalSinceReferenceDate: 1.5)
            var blob = Data([0xFB, 0xFF])
            enum Keys: String, CodingKey { case a, b, at, blob }
            func encode(to encoder: any Encoder) throws {
                var first = encoder.container(keyedBy: Keys.self)
                try first.encode(1, forKey: .a)
                var nested = first.nestedUnkeyedContainer(forKey: .b)
                try nested.encode("x")
                var second = encoder.container(keyedBy: Keys.self)
                try second.encode(self.at, forKey: .at)
                try second.encode(self.blob, forKey: .blob)
                var nestedAgain = second.nestedUnkeyedContainer(forKey: .b)
                try nestedAgain.encode("y")
            }
        }
        let query = try HTTPRequestSerializer.queryString(from: ["t": Twice()] as Parameters)
        #expect(query == "t%5Ba%5D=1&t%5Bat%5D=1.5&t%5Bb%5D%5B%5D=x&t%5Bb%5D%5B%5D=y&t%5Bblob%5D=%2B/8%3D")
        let json = try JSONRequestSerializer().request(method: .post, urlString: "https://h.test/", parameters: Twice())
        #expect(json.body.data == Data(#"{"a":1,"at":1.5,"b":["x","y"],"blob":"+\/8="}"#.utf8))
    }

    @Test("a very long value")
        func veryLongValue() throws {
            let value = String(repeating: "é😀 ", count: 50_000)
            let query = try HTTPRequestSerializer.queryString(from: ["v": value] as Parameters)
            #expect(query.hasPrefix("v="))
            #expect(query.dropFirst(2).removingPercentEncoding == value)
        }

        struct BadCase: CustomTestStringConvertible, Sendable {
            var name: String
            var parameters: any Sendable
            var path: String
            var testDescription: String { self.name }
        }

        final class Opaque: Sendable {}

        static let badCases: [BadCase] = [
            BadCase(name: "closure", parameters: ["a": ["b": { @Sendable in 1 }]] as Parameters, path: "'a[b]'"),
            BadCase(name: "object", parameters: ["list": [1, Opaque()] as [any Sendable]] as Parameters, path: "'list[1]'"),
            BadCase(name: "non-string key", parameters: ["d": [1: "x"]] as Parameters, path: "'d'"),
            BadCase(name: "top-level array", parameters: ["a", "b"], path: "array"),
            BadCase(name: "top-level scalar", parameters: "a=b", path: "string"),
            BadCase(name: "date", parameters: ["when": Date()] as Parameters, path: "'when'"),
            BadCase(name: "data", parameters: ["x": ["blob": Data([1])]] as Parameters, path: "'x[blob]'"),
        ]

        @Test("bad input fails with the path", arguments: badCases)
        func badInput(_ testCase: BadCase) {
            #expect {
                try HTTPRequestSerializer.queryString(from: testCase.parameters)
            } throws: { error in
                guard let error = error as? CourierError else { return false }
                return error.code == .parameterEncodingFailed && error.message.contains(testCase.path)
            }
        }
    }
}
