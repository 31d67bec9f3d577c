import Courier
import CourierTesting
import Foundation
import Testing

/// Twins of Alamofire's `DataPreprocessorSerializationTests`, `DataPreprocessorTests` and
/// `StaticDataPreprocessorTests` (`Tests/ResponseSerializationTests.swift`).
@Suite("Conformance: Alamofire ResponseSerializationTests, data preprocessors")
struct AlamofireDataPreprocessorConformanceTests {
    struct DropFirst: DataPreprocessor {
        func preprocess(_ data: Data) throws -> Data { data.dropFirst() }
    }

    struct Throwing: DataPreprocessor {
        struct Failure: Error {}
        func preprocess(_ data: Data) throws -> Data { throw Failure() }
    }

    typealias DecodableValue = AlamofireResponseSerializationConformanceTests.DecodableValue

    static func expectPreprocessorFailure(_ body: () throws -> Void) {
        #expect {
            try body()
        } throws: { error in
            guard let error = error as? CourierError else { return false }
            return error.code == .responseSerializationFailed && error.underlyingError is Throwing.Failure
        }
    }

    // MARK: DataPreprocessorSerializationTests

    @Test func testThatDataResponseSerializerProperlyCallsSuccessfulDataPreprocessor() throws {
        let serializer = DataResponseSerializer(dataPreprocessor: DropFirst())
        #expect(try serializer.responseObject(for: nil, data: Data("abcd".utf8)) == Data("bcd".utf8))
    }

    @Test func testThatDataResponseSerializerProperlyReceivesErrorFromFailingDataPreprocessor() {
        Self.expectPreprocessorFailure { _ = try DataResponseSerializer(dataPreprocessor: Throwing()).responseObject(for: nil, data: Data("abcd".utf8)) }
    }

    @Test func testThatStringResponseSerializerProperlyCallsSuccessfulDataPreprocessor() throws {
        let serializer = StringResponseSerializer(dataPreprocessor: DropFirst())
        #expect(try serializer.responseObject(for: nil, data: Data("abcd".utf8)) == "bcd")
    }

    @Test func testThatStringResponseSerializerProperlyReceivesErrorFromFailingDataPreprocessor() {
        Self.expectPreprocessorFailure { _ = try StringResponseSerializer(dataPreprocessor: Throwing()).responseObject(for: nil, data: Data("abcd".utf8)) }
    }

    @Test func testThatJSONResponseSerializerProperlyCallsSuccessfulDataPreprocessor() throws {
        let serializer = JSONResponseSerializer(dataPreprocessor: DropFirst())
        // Fragments, as the source's serializer takes them.
        var fragments = serializer
        fragments.readingOptions = .fragmentsAllowed
        #expect(try fragments.responseObject(for: nil, data: Data("1\"abcd\"".utf8)) as? String == "abcd")
    }

    @Test func testThatJSONResponseSerializerProperlyReceivesErrorFromFailingDataPreprocessor() {
        Self.expectPreprocessorFailure { _ = try JSONResponseSerializer(dataPreprocessor: Throwing()).responseObject(for: nil, data: Data("1\"abcd\"".utf8)) }
    }

    @Test func testThatDecodableResponseSerializerProperlyCallsSuccessfulDataPreprocessor() throws {
        let serializer = DecodableResponseSerializer<DecodableValue>(dataPreprocessor: DropFirst())
        #expect(try serializer.responseObject(for: nil, data: Data("1{\"string\":\"string\"}".utf8)).string == "string")
    }

    @Test func testThatDecodableResponseSerializerProperlyReceivesErrorFromFailingDataPreprocessor() {
        Self.expectPreprocessorFailure {
            _ = try DecodableResponseSerializer<DecodableValue>(dataPreprocessor: Throwing()).responseObject(for: nil, data: Data("1{\"string\":\"string\"}".utf8))
        }
    }

    // MARK: DataPreprocessorTests

    @Test func testThatPassthroughPreprocessorPassesDataThrough() throws {
        #expect(try PassthroughPreprocessor().preprocess(Data("data".utf8)) == Data("data".utf8))
    }

    @Test func testThatGoogleXSSIPreprocessorProperlyPreprocessesData() throws {
        #expect(try GoogleXSSIPreprocessor().preprocess(Data(")]}',\nabcd".utf8)) == Data("abcd".utf8))
    }

    @Test func testThatGoogleXSSIPreprocessorDoesNotChangeDataIfPrefixDoesNotMatch() throws {
        #expect(try GoogleXSSIPreprocessor().preprocess(Data("abcd".utf8)) == Data("abcd".utf8))
    }

    // MARK: StaticDataPreprocessorTests

    func consumeDataPreprocessor(_ preprocessor: any DataPreprocessor) -> any DataPreprocessor { preprocessor }

    @Test func testThatPassthroughCanBeCreatedStaticallyFromProtocol() {
        #expect(consumeDataPreprocessor(.passthrough) is PassthroughPreprocessor)
    }

    @Test func testThatGoogleXSSICanBeCreatedStaticallyFromProtocol() {
        #expect(consumeDataPreprocessor(.googleXSSI) is GoogleXSSIPreprocessor)
    }

    /// Not a source test: an empty body is not preprocessed, and a Google JSON body arrives
    /// decoded over a socket.
    @Test func anEmptyBodyIsNotPreprocessedAndAPrefixedBodyIsDecoded() async throws {
        #expect(try DataResponseSerializer(dataPreprocessor: Throwing()).responseObject(for: nil, data: Data()) == Data())
        #expect(try JSONResponseSerializer(dataPreprocessor: Throwing()).responseObject(for: nil, data: nil) == nil)
        try await withTestServer { server in
            server.route("/xssi") { _ in .json(")]}',\n{\"a\": [1, 2]}") }
            try await withManager(baseURL: server.baseURL) { manager in
                let serializer = DecodableResponseSerializer<[String: [Int]]>(dataPreprocessor: .googleXSSI)
                let value = try await manager.response(for: Request(url: server.url("/xssi")), serializer: serializer).value
                #expect(value == ["a": [1, 2]])
            }
        }
    }
}
