import Courier
import Foundation
import HTTPTypes
import Testing

/// Twins of Alamofire's `Tests/ParameterEncoderTests.swift`: `JSONParameterEncoder`,
/// `URLEncodedFormParameterEncoder` and `URLEncodedFormEncoder`, which Courier keeps under the same
/// names. Alamofire configures an encoder through its initializer; Courier through `var`s.
@Suite("Conformance: Alamofire ParameterEncoderTests")
struct AlamofireParameterEncoderConformanceTests {
    static let url = URL(string: "https://localhost/get")!
    static func request(_ method: HTTPRequest.Method = .get) -> Request { Request(method: method, url: url) }
    static let parameters = ["property": "property"]

    static func form(_ value: some Encodable & Sendable, configure: (inout URLEncodedFormEncoder) -> Void = { _ in }) throws -> String {
        var encoder = URLEncodedFormEncoder()
        configure(&encoder)
        return try encoder.encode(value)
    }

    // MARK: JSONParameterEncoderTests

    @Test func testThatDataIsProperlyEncodedAndProperContentTypeIsSet() throws {
        let request = try JSONParameterEncoder().encode(Self.parameters, into: Self.request())
        #expect(request.headerFields[.contentType] == "application/json")
        #expect(Conformance.bodyText(request) == #"{"property":"property"}"#)
    }

    @Test func testThatDataIsProperlyEncodedButContentTypeIsNotSetIfRequestAlreadyHasAContentType() throws {
        var original = Self.request()
        original.headerFields[.contentType] = "type"
        let request = try JSONParameterEncoder().encode(Self.parameters, into: original)
        #expect(request.headerFields[.contentType] == "type")
        #expect(Conformance.bodyText(request) == #"{"property":"property"}"#)
    }

    @Test func testThatJSONEncoderCanBeCustomized() throws {
        let json = JSONEncoder()
        json.outputFormatting = .prettyPrinted
        let request = try JSONParameterEncoder(encoder: json).encode(Self.parameters, into: Self.request())
        #expect(Conformance.bodyText(request) == "{\n  \"property\" : \"property\"\n}")
    }

    @Test func testThatJSONEncoderDefaultWorks() throws {
        let request = try JSONParameterEncoder.default.encode(Self.parameters, into: Self.request())
        #expect(Conformance.bodyText(request) == #"{"property":"property"}"#)
    }

    @Test func testThatJSONEncoderPrettyPrintedPrintsPretty() throws {
        let request = try JSONParameterEncoder.prettyPrinted.encode(Self.parameters, into: Self.request())
        #expect(Conformance.bodyText(request) == "{\n  \"property\" : \"property\"\n}")
    }

    /// Alamofire's `.sortedKeys`; Courier's `.default` sorts keys already.
    @Test func testTestJSONEncoderSortedKeysHasSortedKeys() throws {
        let request = try JSONParameterEncoder.default.encode(["z": "z", "a": "a", "p": "p"], into: Self.request())
        #expect(Conformance.bodyText(request) == #"{"a":"a","p":"p","z":"z"}"#)
    }

    // MARK: URLEncodedFormParameterEncoderTests

    @Test func testThatQueryIsBodyEncodedAndProperContentTypeIsSetForPOSTRequest() throws {
        let request = try URLEncodedFormParameterEncoder().encode(Self.parameters, into: Self.request(.post))
        #expect(request.headerFields[.contentType] == "application/x-www-form-urlencoded; charset=utf-8")
        #expect(Conformance.bodyText(request) == "property=property")
    }

    @Test func testThatQueryIsBodyEncodedButContentTypeIsNotSetWhenRequestAlreadyHasContentType() throws {
        var original = Self.request(.post)
        original.headerFields[.contentType] = "type"
        let request = try URLEncodedFormParameterEncoder().encode(Self.parameters, into: original)
        #expect(request.headerFields[.contentType] == "type")
        #expect(Conformance.bodyText(request) == "property=property")
    }

    @Test func testThatEncoderCanBeCustomized() throws {
        var form = URLEncodedFormEncoder()
        form.boolEncoding = .literal
        let request = try URLEncodedFormParameterEncoder(encoder: form).encode(["bool": true], into: Self.request())
        #expect(request.url.query(percentEncoded: true) == "bool=true")
    }

    @Test func testThatQueryIsInURLWhenDestinationIsURLAndMethodIsPOST() throws {
        let request = try URLEncodedFormParameterEncoder(destination: .queryString).encode(Self.parameters, into: Self.request(.post))
        #expect(request.url.query(percentEncoded: true) == "property=property")
    }

    @Test func testThatQueryIsNilWhenEncodableResultsInAnEmptyString() throws {
        let request = try URLEncodedFormParameterEncoder(destination: .queryString).encode([String: String](), into: Self.request())
        #expect(request.url.query(percentEncoded: true) == nil)
    }

    // MARK: URLEncodedFormEncoderTests: values

    @Test func testEncoderCanEncodeDictionary() throws { #expect(try Self.form(["a": "a"]) == "a=a") }
    @Test func testEncoderCanEncodeDecimal() throws { #expect(try Self.form(["a": Decimal(1.0)]) == "a=1") }
    @Test func testEncoderCanEncodeDecimalWithHighPrecision() throws {
        #expect(try Self.form(["a": Decimal(string: "1.123456")!]) == "a=1.123456")
    }

    /// Differs: Alamofire writes `1.0`; Courier's form encoder writes a number in its shortest
    /// form, `1` (as AFNetworking's query strings do).
    @Test func testEncoderCanEncodeDouble() throws { #expect(try Self.form(["a": 1.0]) == "a=1") }

    /// Differs as ``testEncoderCanEncodeDouble()``.
    @Test func testEncoderCanEncodeFloat() throws { #expect(try Self.form(["a": Float(1.0)]) == "a=1") }

    @Test func testEncoderCanEncodeInt8() throws { #expect(try Self.form(["a": Int8(1)]) == "a=1") }
    @Test func testEncoderCanEncodeInt16() throws { #expect(try Self.form(["a": Int16(1)]) == "a=1") }
    @Test func testEncoderCanEncodeInt32() throws { #expect(try Self.form(["a": Int32(1)]) == "a=1") }
    @Test func testEncoderCanEncodeInt64() throws { #expect(try Self.form(["a": Int64(1)]) == "a=1") }
    @Test func testEncoderCanEncodeUInt() throws { #expect(try Self.form(["a": UInt(1)]) == "a=1") }
    @Test func testEncoderCanEncodeUInt8() throws { #expect(try Self.form(["a": UInt8(1)]) == "a=1") }
    @Test func testEncoderCanEncodeUInt16() throws { #expect(try Self.form(["a": UInt16(1)]) == "a=1") }
    @Test func testEncoderCanEncodeUInt32() throws { #expect(try Self.form(["a": UInt32(1)]) == "a=1") }
    @Test func testEncoderCanEncodeUInt64() throws { #expect(try Self.form(["a": UInt64(1)]) == "a=1") }

    @Test func testThatNestedDictionariesCanHaveBracketKeyPathsByDefault() throws {
        #expect(try Self.form(["a": ["b": "b"]]) == "a%5Bb%5D=b")
    }

    // MARK: Structs and classes

    struct Nested: Encodable, Sendable { var a = "a" }
    struct EncodableStruct: Encodable, Sendable {
        var one = "one"
        var two = 2
        var three = true
        var four = [1, 2, 3]
        var five = ["a": "a"]
        var six = ["a": ["b": "b"]]
        var seven = Nested()
    }

    class EncodableSuperclass: Encodable, @unchecked Sendable {
        // @unchecked: immutable after init; only encoded.
        let one = "one"
        let two = 2
        let three = true
    }

    final class EncodableSubclass: EncodableSuperclass, @unchecked Sendable {
        // @unchecked: immutable after init; only encoded.
        let four = [1, 2, 3]
        let five = ["a": "a", "b": "b"]
        private enum CodingKeys: String, CodingKey { case four, five }
        override func encode(to encoder: any Encoder) throws {
            try super.encode(to: encoder)
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(self.four, forKey: .four)
            try container.encode(self.five, forKey: .five)
        }
    }

    struct OptionalStruct: Encodable, Sendable {
        var one = "one"
        var two: String? = nil
        // Synthesized conformance skips nil; write it so the nil encoding decides.
        enum CodingKeys: String, CodingKey { case one, two }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(self.one, forKey: .one)
            try container.encodeIfPresent(self.two, forKey: .two)
        }
    }

    @Test func testThatEncodableStructCanBeEncoded() throws {
        #expect(
            try Self.form(EncodableStruct())
                == "five%5Ba%5D=a&four%5B%5D=1&four%5B%5D=2&four%5B%5D=3&one=one&seven%5Ba%5D=a&six%5Ba%5D%5Bb%5D=b&three=1&two=2")
    }

    @Test func testThatEncodableSubclassCanBeEncodedInImplementationOrderWhenAlphabetizeKeysIsFalse() throws {
        #expect(
            try Self.form(EncodableStruct()) { $0.alphabetizeKeyValuePairs = false }
                == "one=one&two=2&three=1&four%5B%5D=1&four%5B%5D=2&four%5B%5D=3&five%5Ba%5D=a&six%5Ba%5D%5Bb%5D=b&seven%5Ba%5D=a")
    }

    @Test func testThatEncodableClassWithNoInheritanceCanBeEncoded() throws {
        #expect(try Self.form(EncodableSuperclass()) == "one=one&three=1&two=2")
    }

    @Test func testThatEncodableSubclassCanBeEncoded() throws {
        #expect(
            try Self.form(EncodableSubclass())
                == "five%5Ba%5D=a&five%5Bb%5D=b&four%5B%5D=1&four%5B%5D=2&four%5B%5D=3&one=one&three=1&two=2")
    }

    /// Writes into a container it already wrote under the same key: a keyed container under
    /// `root`, then an unkeyed one (whose writes replace the keyed one), then nested containers in it.
    struct ManuallyEncodableStruct: Encodable, Sendable {
        var a = ["string": "string"]
        var b = [1, 2, 3]
        private enum RootKey: String, CodingKey { case root }
        private enum TypeKeys: String, CodingKey { case a, b }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: RootKey.self)
            var nestedKeyed = container.nestedContainer(keyedBy: TypeKeys.self, forKey: .root)
            try nestedKeyed.encode(self.a, forKey: .a)
            var nestedUnkeyed = container.nestedUnkeyedContainer(forKey: .root)
            try nestedUnkeyed.encode(self.b)
            var nestedUnkeyedKeyed = nestedUnkeyed.nestedContainer(keyedBy: TypeKeys.self)
            try nestedUnkeyedKeyed.encode(self.a, forKey: .a)
            var nestedUnkeyedUnkeyed = nestedUnkeyed.nestedUnkeyedContainer()
            try nestedUnkeyedUnkeyed.encode(self.b)
        }
    }

    /// Writes through `superEncoder()`, `superEncoder(forKey:)` and an unkeyed container's
    /// `superEncoder()` under keys it already wrote.
    final class ManuallyEncodableSubclass: EncodableSuperclass, @unchecked Sendable {
        // @unchecked: immutable after init; only encoded.
        let four = [1, 2, 3]
        let five = ["a": "a", "b": "b"]
        private enum CodingKeys: String, CodingKey { case four, five }
        override func encode(to encoder: any Encoder) throws {
            var keyed = encoder.container(keyedBy: CodingKeys.self)
            try keyed.encode(self.four, forKey: .four)
            try keyed.encode(self.five, forKey: .five)
            var superContainer = keyed.superEncoder().container(keyedBy: CodingKeys.self)
            try superContainer.encode(self.one, forKey: .four)
            var superKeyed = keyed.superEncoder(forKey: .four).container(keyedBy: CodingKeys.self)
            try superKeyed.encode(self.two, forKey: .five)
            var unkeyed = keyed.nestedUnkeyedContainer(forKey: .four)
            var unkeyedSuper = unkeyed.superEncoder().container(keyedBy: CodingKeys.self)
            try unkeyedSuper.encode(self.one, forKey: .four)
        }
    }

    /// The pairs of a form string, sorted: the same pairs in any order compare equal.
    static func sortedPairs(_ form: String) -> [String] {
        form.split(separator: "&").map(String.init).sorted()
    }

    /// Differs: the same pairs as Alamofire, in another order. Alamofire sorts the written
    /// elements of every array as text (`root[][][]=…` before `root[][]=…`); Courier keeps an
    /// array's elements in their order (it sorts keys only), so `root`'s three elements come as
    /// they were encoded.
    @Test func testThatManuallyEncodableStructCanBeEncoded() throws {
        let alamofire =
            "root%5B%5D%5B%5D%5B%5D=1&root%5B%5D%5B%5D%5B%5D=2&root%5B%5D%5B%5D%5B%5D=3&root%5B%5D%5B%5D=1&root%5B%5D%5B%5D=2&root%5B%5D%5B%5D=3&root%5B%5D%5Ba%5D%5Bstring%5D=string"
        let form = try Self.form(ManuallyEncodableStruct())
        #expect(
            form
                == "root%5B%5D%5B%5D=1&root%5B%5D%5B%5D=2&root%5B%5D%5B%5D=3&root%5B%5D%5Ba%5D%5Bstring%5D=string&root%5B%5D%5B%5D%5B%5D=1&root%5B%5D%5B%5D%5B%5D=2&root%5B%5D%5B%5D%5B%5D=3"
        )
        #expect(Self.sortedPairs(form) == Self.sortedPairs(alamofire))
    }

    @Test func testThatManuallyEncodableSubclassCanBeEncoded() throws {
        #expect(try Self.form(ManuallyEncodableSubclass()) == "five%5Ba%5D=a&five%5Bb%5D=b&four%5Bfive%5D=2&four%5Bfour%5D=one")
    }

    @Test func testThatARootArrayCannotBeEncoded() {
        #expect { try Self.form([1]) } throws: { Conformance.isCourierError($0, .parameterEncodingFailed) }
    }

    @Test func testThatARootValueCannotBeEncoded() {
        #expect { try Self.form("string") } throws: { Conformance.isCourierError($0, .parameterEncodingFailed) }
    }

    static func indexed(_ value: some Encodable & Sendable) throws -> String {
        try Self.form(value) { $0.arrayEncoding = .indexInBrackets }
    }

    @Test func testThatEncodableSuperclassCanBeEncodedWithIndexInBrackets() throws {
        #expect(try Self.indexed(["foo": [EncodableSuperclass()]]) == "foo%5B0%5D%5Bone%5D=one&foo%5B0%5D%5Bthree%5D=1&foo%5B0%5D%5Btwo%5D=2")
    }

    @Test func testThatEncodableSubclassCanBeEncodedWithIndexInBrackets() throws {
        #expect(
            try Self.indexed(EncodableSubclass())
                == "five%5Ba%5D=a&five%5Bb%5D=b&four%5B0%5D=1&four%5B1%5D=2&four%5B2%5D=3&one=one&three=1&two=2")
    }

    @Test func testThatManuallyEncodableSubclassCanBeEncodedWithIndexInBrackets() throws {
        #expect(try Self.indexed(ManuallyEncodableSubclass()) == "five%5Ba%5D=a&five%5Bb%5D=b&four%5Bfive%5D=2&four%5Bfour%5D=one")
    }

    @Test func testThatManuallyEncodableStructCanBeEncodedWithIndexInBrackets() throws {
        #expect(
            try Self.indexed(ManuallyEncodableStruct())
                == "root%5B0%5D%5B0%5D=1&root%5B0%5D%5B1%5D=2&root%5B0%5D%5B2%5D=3&root%5B1%5D%5Ba%5D%5Bstring%5D=string&root%5B2%5D%5B0%5D%5B0%5D=1&root%5B2%5D%5B0%5D%5B1%5D=2&root%5B2%5D%5B0%5D%5B2%5D=3"
        )
    }

    @Test func testThatEncodableStructCanBeEncodedWithIndexInBrackets() throws {
        #expect(
            try Self.indexed(EncodableStruct())
                == "five%5Ba%5D=a&four%5B0%5D=1&four%5B1%5D=2&four%5B2%5D=3&one=one&seven%5Ba%5D=a&six%5Ba%5D%5Bb%5D=b&three=1&two=2")
    }

    @Test func testThatArrayNestedDictionaryIntValueCanBeEncodedWithIndexInBrackets() throws {
        #expect(try Self.indexed(["foo": [["bar": 2], ["qux": 3], ["quy": 4]]]) == "foo%5B0%5D%5Bbar%5D=2&foo%5B1%5D%5Bqux%5D=3&foo%5B2%5D%5Bquy%5D=4")
    }

    @Test func testThatArrayNestedDictionaryStringValueCanBeEncodedWithIndexInBrackets() throws {
        #expect(try Self.indexed(["foo": [["bar": "2"], ["qux": "3"], ["quy": "4"]]]) == "foo%5B0%5D%5Bbar%5D=2&foo%5B1%5D%5Bqux%5D=3&foo%5B2%5D%5Bquy%5D=4")
    }

    @Test func testThatArrayNestedDictionaryBoolValueCanBeEncodedWithIndexInBrackets() throws {
        #expect(try Self.indexed(["foo": [["bar": true], ["qux": false], ["quy": true]]]) == "foo%5B0%5D%5Bbar%5D=1&foo%5B1%5D%5Bqux%5D=0&foo%5B2%5D%5Bquy%5D=1")
    }

    @Test func testThatArraysCanBeEncodedWithoutBrackets() throws {
        #expect(try Self.form(["array": [1, 2]]) { $0.arrayEncoding = .noBrackets } == "array=1&array=2")
    }

    @Test func testThatArraysCanBeEncodedWithCustomClosure() throws {
        #expect(try Self.form(["array": [1, 2]]) { $0.arrayEncoding = .custom { key, index in "\(key).\(index + 1)" } } == "array.1=1&array.2=2")
    }

    @Test func testThatBoolsCanBeLiteralEncoded() throws {
        #expect(try Self.form(["bool": true]) { $0.boolEncoding = .literal } == "bool=true")
    }

    // MARK: Data and dates

    struct EncodingFailure: Error {}

    @Test func testThatDataCanBeEncoded() throws {
        #expect(try Self.form(["data": Data("data".utf8)]) == "data=ZGF0YQ%3D%3D")
    }

    @Test func testThatCustomDataEncodingFailsWhenErrorIsThrown() {
        #expect {
            try Self.form(["data": Data("data".utf8)]) { $0.dataEncoding = .custom { _ in throw EncodingFailure() } }
        } throws: { error in
            (error as? CourierError)?.code == .parameterEncodingFailed && (error as? CourierError)?.underlyingError is EncodingFailure
        }
    }

    static let date = Date(timeIntervalSinceReferenceDate: 123.456)

    @Test func testThatDatesCanBeEncoded() throws {
        #expect(try Self.form(["date": Self.date]) { $0.dateEncoding = .deferredToDate } == "date=123.456")
    }

    @Test func testThatDatesCanBeEncodedAsSecondsSince1970() throws {
        #expect(try Self.form(["date": Self.date]) { $0.dateEncoding = .secondsSince1970 } == "date=978307323.456")
    }

    /// Differs as ``testEncoderCanEncodeDouble()``: `978307323456`, not `978307323456.0`.
    @Test func testThatDatesCanBeEncodedAsMillisecondsSince1970() throws {
        #expect(try Self.form(["date": Self.date]) { $0.dateEncoding = .millisecondsSince1970 } == "date=978307323456")
    }

    @Test func testThatDatesCanBeEncodedAsISO8601Formatted() throws {
        #expect(try Self.form(["date": Self.date]) { $0.dateEncoding = .iso8601 } == "date=2001-01-01T00%3A02%3A03Z")
    }

    @Test func testThatDatesCanBeEncodedAsFormatted() throws {
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss.SSSS"
        formatter.timeZone = TimeZone(secondsFromGMT: 0)
        formatter.calendar = Calendar(identifier: .gregorian)
        #expect(try Self.form(["date": Self.date]) { $0.dateEncoding = .formatted(formatter) } == "date=2001-01-01%2000%3A02%3A03.4560")
    }

    @Test func testThatDatesCanBeEncodedAsCustomFormatted() throws {
        #expect(try Self.form(["date": Self.date]) { $0.dateEncoding = .custom { "\($0.timeIntervalSinceReferenceDate)" } } == "date=123.456")
    }

    @Test func testEncoderThrowsErrorWhenCustomDateEncodingFails() {
        #expect {
            try Self.form(["date": Self.date]) { $0.dateEncoding = .custom { _ in throw EncodingFailure() } }
        } throws: { error in
            (error as? CourierError)?.code == .parameterEncodingFailed && (error as? CourierError)?.underlyingError is EncodingFailure
        }
    }

    // MARK: Keys

    @Test func testThatKeysCanBeEncodedIntoSnakeCase() throws {
        #expect(try Self.form(["oneTwoThree": "oneTwoThree"]) { $0.keyEncoding = .convertToSnakeCase } == "one_two_three=oneTwoThree")
    }

    @Test func testThatKeysCanBeEncodedIntoKebabCase() throws {
        #expect(try Self.form(["oneTwoThree": "oneTwoThree"]) { $0.keyEncoding = .convertToKebabCase } == "one-two-three=oneTwoThree")
    }

    @Test func testThatNestedDictionariesCanHaveExplicitBracketKeyPaths() throws {
        #expect(try Self.form(["a": ["b": "b"]]) { $0.keyPathEncoding = .brackets } == "a%5Bb%5D=b")
    }

    @Test func testThatNestedDictionariesCanHaveDottedKeyPaths() throws {
        #expect(try Self.form(["a": ["b": "b"]]) { $0.keyPathEncoding = .dots } == "a.b=b")
    }

    @Test func testThatNestedDictionariesCanHaveCustomKeyPaths() throws {
        #expect(try Self.form(["a": ["b": "b"]]) { $0.keyPathEncoding = .init { "-\($0)" } } == "a-b=b")
        // Deeper, with converted keys and arrays.
        #expect(try Self.form(["oneTwo": ["threeFour": ["x", "y"]]]) {
            $0.keyPathEncoding = .dots
            $0.keyEncoding = .convertToSnakeCase
        } == "one_two.three_four%5B%5D=x&one_two.three_four%5B%5D=y")
    }

    @Test func testThatKeysCanBeEncodedIntoACapitalizedString() throws {
        #expect(try Self.form(["oneTwoThree": "oneTwoThree"]) { $0.keyEncoding = .capitalized } == "OneTwoThree=oneTwoThree")
    }

    @Test func testThatKeysCanBeEncodedIntoALowercasedString() throws {
        #expect(try Self.form(["oneTwoThree": "oneTwoThree"]) { $0.keyEncoding = .lowercased } == "onetwothree=oneTwoThree")
    }

    @Test func testThatKeysCanBeEncodedIntoAnUppercasedString() throws {
        #expect(try Self.form(["oneTwoThree": "oneTwoThree"]) { $0.keyEncoding = .uppercased } == "ONETWOTHREE=oneTwoThree")
    }

    @Test func testThatKeysCanBeCustomEncoded() throws {
        #expect(try Self.form(["oneTwoThree": "oneTwoThree"]) { $0.keyEncoding = .custom { _ in "A" } } == "A=oneTwoThree")
    }

    // MARK: Nil

    @Test func testThatNilCanBeEncodedByDroppingTheKeyByDefault() throws {
        #expect(try Self.form(["a": String?.none]) == "")
    }

    @Test func testThatNilCanBeEncodedInSynthesizedEncodableByDroppingTheKeyByDefault() throws {
        #expect(try Self.form(OptionalStruct()) == "one=one")
    }

    /// A nil written with `encodeNil` (as a dictionary of optionals does) is a null, so the nil
    /// encoding decides for dictionaries of optionals as for Alamofire.
    @Test func testThatNilCanBeEncodedAsNull() throws {
        #expect(try Self.form(["a": String?.none]) { $0.nilEncoding = .null } == "a=null")
    }

    /// Differs: a synthesized `Encodable` skips nil properties (`encodeIfPresent`); Alamofire's
    /// encoder turns that skip into a nil, Courier's keeps Swift's `encodeIfPresent`, which
    /// writes nothing for a nil.
    @Test func testThatNilCanBeEncodedInSynthesizedEncodableAsNull() throws {
        #expect(try Self.form(OptionalStruct()) { $0.nilEncoding = .null } == "one=one")
    }

    @Test func testThatNilCanBeEncodedByDroppingTheKey() throws {
        #expect(try Self.form(["a": String?.none]) { $0.nilEncoding = .dropKey } == "")
    }

    @Test func testThatNilCanBeEncodedInSynthesizedEncodableByDroppingTheKey() throws {
        #expect(try Self.form(OptionalStruct()) { $0.nilEncoding = .dropKey } == "one=one")
    }

    /// Differs: Alamofire writes `a=`; Courier's `.dropValue` writes the key alone, `a`, which is
    /// AFNetworking's form for `NSNull` in a query string (documented on `NilEncoding`).
    @Test func testThatNilCanBeEncodedByDroppingTheValue() throws {
        #expect(try Self.form(["a": String?.none]) { $0.nilEncoding = .dropValue } == "a")
    }

    /// Differs as ``testThatNilCanBeEncodedInSynthesizedEncodableAsNull()``.
    @Test func testThatNilCanBeEncodedInSynthesizedEncodableByDroppingTheValue() throws {
        #expect(try Self.form(OptionalStruct()) { $0.nilEncoding = .dropValue } == "one=one")
    }

    // MARK: Escaping

    @Test func testThatSpacesCanBeEncodedAsPluses() throws {
        #expect(try Self.form(["spaces": "replace with spaces"]) { $0.spaceEncoding = .plusReplaced } == "spaces=replace+with+spaces")
    }

    @Test func testThatEscapedCharactersCanBeCustomized() throws {
        var allowed = URLEncodedFormEncoder.queryAllowedCharacters
        allowed.remove(charactersIn: "?/")
        #expect(try Self.form(["allowed": "?/"]) { $0.allowedCharacters = allowed } == "allowed=%3F%2F")
    }

    @Test func testThatUnreservedCharactersAreNotPercentEscaped() throws {
        let parameters = ["lowercase": "abcdefghijklmnopqrstuvwxyz", "numbers": "0123456789", "uppercase": "ABCDEFGHIJKLMNOPQRSTUVWXYZ"]
        #expect(try Self.form(parameters) == "lowercase=abcdefghijklmnopqrstuvwxyz&numbers=0123456789&uppercase=ABCDEFGHIJKLMNOPQRSTUVWXYZ")
    }

    @Test func testThatReservedCharactersArePercentEscaped() throws {
        #expect(try Self.form(["reserved": ":#[]@!$&'()*+,;="]) == "reserved=%3A%23%5B%5D%40%21%24%26%27%28%29%2A%2B%2C%3B%3D")
    }

    @Test func testThatIllegalASCIICharactersArePercentEscaped() throws {
        #expect(try Self.form(["illegal": " \"#%<>[]\\^`{}|"]) == "illegal=%20%22%23%25%3C%3E%5B%5D%5C%5E%60%7B%7D%7C")
    }

    @Test func testThatAmpersandsInKeysAndValuesArePercentEscaped() throws {
        #expect(try Self.form(["foo&bar": "baz&qux", "foobar": "bazqux"]) == "foo%26bar=baz%26qux&foobar=bazqux")
    }

    @Test func testThatQuestionMarksInKeysAndValuesAreNotPercentEscaped() throws {
        #expect(try Self.form(["?foo?": "?bar?"]) == "?foo?=?bar?")
    }

    @Test func testThatSlashesInKeysAndValuesAreNotPercentEscaped() throws {
        #expect(try Self.form(["foo": "/bar/baz/qux"]) == "foo=/bar/baz/qux")
    }

    @Test func testThatSpacesInKeysAndValuesArePercentEscaped() throws {
        #expect(try Self.form([" foo ": " bar "]) == "%20foo%20=%20bar%20")
    }

    @Test func testThatPlusesInKeysAndValuesArePercentEscaped() throws {
        #expect(try Self.form(["+foo+": "+bar+"]) == "%2Bfoo%2B=%2Bbar%2B")
    }

    @Test func testThatPercentsInKeysAndValuesArePercentEscaped() throws {
        #expect(try Self.form(["percent%": "%25"]) == "percent%25=%2525")
    }

    @Test func testThatNonLatinCharactersArePercentEscaped() throws {
        let parameters = ["french": "français", "japanese": "日本語", "arabic": "العربية", "emoji": "😃"]
        let expected = [
            "arabic=%D8%A7%D9%84%D8%B9%D8%B1%D8%A8%D9%8A%D8%A9", "emoji=%F0%9F%98%83", "french=fran%C3%A7ais",
            "japanese=%E6%97%A5%E6%9C%AC%E8%AA%9E",
        ].joined(separator: "&")
        #expect(try Self.form(parameters) == expected)
    }

    @Test func testStringWithThousandsOfChineseCharactersIsPercentEscaped() throws {
        let escaped = String(
            repeating: "%E4%B8%80%E4%BA%8C%E4%B8%89%E5%9B%9B%E4%BA%94%E5%85%AD%E4%B8%83%E5%85%AB%E4%B9%9D%E5%8D%81", count: 2000)
        #expect(try Self.form(["chinese": String(repeating: "一二三四五六七八九十", count: 2000)]) == "chinese=\(escaped)")
    }
}
