import Courier
import Foundation
import HTTPTypes
import Testing

extension RequestSerializationTests {
    @Suite("JSONRequestSerializer")
    struct JSONRequestSerializerTests {
        let serializer = JSONRequestSerializer()

        func body(_ parameters: (any Sendable)?, serializer: JSONRequestSerializer? = nil) throws -> String? {
            let request = try (serializer ?? self.serializer).request(method: .post, urlString: "https://h.test/", parameters: parameters)
            return request.body.data.map { String(decoding: $0, as: UTF8.self) }
        }

        struct Case: CustomTestStringConvertible, Sendable {
            var name: String
            var parameters: any Sendable
            var expected: String
            var testDescription: String { self.name }
        }

        static let cases: [Case] = [
            Case(name: "flat, keys sorted", parameters: ["b": 1, "a": "x"] as Parameters, expected: #"{"a":"x","b":1}"#),
            Case(name: "booleans stay booleans", parameters: ["t": true, "n": NSNumber(value: false), "one": NSNumber(value: 1), "i": 1, "z": 0, "c": NSNumber(value: Int8(1))] as Parameters, expected: #"{"c":1,"i":1,"n":false,"one":1,"t":true,"z":0}"#),
            Case(name: "null", parameters: ["a": NSNull(), "b": Int?.none] as Parameters, expected: #"{"a":null,"b":null}"#),
            Case(name: "numbers", parameters: ["d": 0.1, "w": 2.0, "e": 1e-7, "x": Decimal(string: "12.340")!] as Parameters, expected: #"{"d":0.1,"e":1e-07,"w":2,"x":12.34}"#),
            Case(name: "nested", parameters: ["a": [["b": [1, 2]] as Parameters, [:] as Parameters] as [any Sendable], "c": [String]()] as Parameters, expected: #"{"a":[{"b":[1,2]},{}],"c":[]}"#),
            Case(name: "escapes", parameters: ["s": "q\"\\/\n\t\u{1}é😀"] as Parameters, expected: #"{"s":"q\"\\\/\n\t\u0001é😀"}"#),
            Case(name: "top-level array", parameters: [1, "a"] as [any Sendable], expected: #"[1,"a"]"#),
        ]

        @Test("writes JSON", arguments: cases)
        func writes(_ testCase: Case) throws {
            #expect(try self.body(testCase.parameters) == testCase.expected)
        }

        @Test("Content-Type application/json unless set; headers and options from the base")
        func headers() throws {
            var serializer = self.serializer
            serializer.timeoutInterval = 4
            serializer.setValue("v", forHTTPHeaderField: "X-Key")
            let request = try serializer.request(method: .patch, urlString: "https://h.test/", parameters: ["a": 1])
            #expect(request.headerFields[.contentType] == "application/json")
            #expect(request.headerFields[HTTPField.Name("X-Key")!] == "v")
            #expect(request.options.timeoutInterval == 4)
            #expect(serializer.value(forHTTPHeaderField: "x-key") == "v")

            var own = Request(method: .post, url: URL(string: "https://h.test/")!)
            own.headerFields[.contentType] = "application/vnd.api+json"
            #expect(try serializer.request(bySerializing: own, parameters: ["a": 1]).headerFields[.contentType] == "application/vnd.api+json")
        }

        @Test("nil parameters leave the body and Content-Type alone, as AFNetworking")
        func nilParameters() throws {
            let request = try self.serializer.request(method: .post, urlString: "https://h.test/", parameters: nil)
            #expect(request.body.isEmpty)
            #expect(request.headerFields[.contentType] == nil)
        }

        @Test("GET, HEAD and DELETE still use the query")
        func query() throws {
            for method in [HTTPRequest.Method.get, .head, .delete] {
                let request = try self.serializer.request(method: method, urlString: "https://h.test/p#f", parameters: ["a": [1, 2]])
                #expect(request.url.absoluteString == "https://h.test/p?a%5B%5D=1&a%5B%5D=2#f")
                #expect(request.body.isEmpty)
                #expect(request.headerFields[.contentType] == nil)
            }
        }

        @Test("writing options")
        func writingOptions() throws {
            var serializer = self.serializer
            serializer.writingOptions = [.prettyPrinted, .withoutEscapingSlashes]
            #expect(try self.body(["b": ["x/y"], "a": [:] as Parameters] as Parameters, serializer: serializer) == "{\n  \"a\" : {},\n  \"b\" : [\n    \"x/y\"\n  ]\n}")
            serializer.writingOptions = [.fragmentsAllowed]
            #expect(try self.body("text", serializer: serializer) == #""text""#)
            #expect(try self.body(3, serializer: serializer) == "3")
        }

        /// With `.sortedKeys`, keys come in the order `JSONSerialization` writes them then
        /// (swift-corelibs-foundation: numeric, case-insensitive, forced ordering): `a9` before
        /// `a10`, capitals among the lower-case letters. They came in `compare:`'s order, every
        /// capital first and `a10` before `a9`.
        @Test func sortedKeysFollowJSONSerialization() throws {
            var serializer = self.serializer
            serializer.writingOptions = [.sortedKeys]
            #expect(try self.body(["b": 1, "C": 2, "a10": 3, "a9": 4] as Parameters, serializer: serializer) == #"{"a9":4,"a10":3,"b":1,"C":2}"#)
            #expect(try self.body(["n": ["b": 1, "C": 2] as Parameters] as Parameters, serializer: serializer) == #"{"n":{"b":1,"C":2}}"#)
            // Byte for byte what Foundation writes, where only case tells keys apart too.
            let keys: [String: Int] = ["b": 1, "B": 2, "a10": 3, "a9": 4, "_z": 5, "Z": 6]
            let foundation = try JSONSerialization.data(withJSONObject: keys, options: [.sortedKeys])
            let courier = try serializer.request(method: .post, urlString: "https://h.test/", parameters: keys as Parameters).body.data
            #expect(courier == foundation)
            // Without the option, keys are sorted as query-string keys are.
            #expect(try self.body(["b": 1, "C": 2, "a10": 3, "a9": 4] as Parameters) == #"{"C":2,"a10":3,"a9":4,"b":1}"#)
        }

        @Test(
            "values JSON cannot carry fail with their path",
            arguments: [
                (["a": ["b": Double.nan]] as Parameters, "'a[b]'"),
                (["a": [1, Double.infinity]] as Parameters, "'a[1]'"),
                (["x": -Float.infinity] as Parameters, "'x'"),
                (["s": Set([1])] as Parameters, "'s'"),
                (["d": Date()] as Parameters, "'d'"),
                (["k": [1: "one"]] as Parameters, "'k'"),
                (["f": { @Sendable in }] as Parameters, "'f'"),
            ] as [(Parameters, String)]
        )
        func badValues(parameters: Parameters, path: String) {
            #expect {
                try self.body(parameters)
            } throws: { error in
                guard let error = error as? CourierError else { return false }
                return error.code == .parameterEncodingFailed && error.message.contains(path) && error.request != nil
            }
        }

        @Test("a top-level scalar needs fragmentsAllowed")
        func fragments() {
            #expect(throws: CourierError(.parameterEncodingFailed, "")) { try self.body("text") }
            #expect(throws: CourierError(.parameterEncodingFailed, "")) { try self.body(NSNull()) }
        }

        @Test("JSON parses back to the same values")
        func roundTrip() throws {
            let text = try #require(try self.body(["s": "é😀/\u{0}", "n": [1.5, -2, true] as [any Sendable]] as Parameters))
            let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
            #expect(object?["s"] as? String == "é😀/\u{0}")
            #expect((object?["n"] as? [Any])?.count == 3)
        }
    }
}
