import Courier
import Foundation
import HTTPTypes
import Testing

/// Twins of AFNetworking's `Tests/Tests/AFHTTPRequestSerializationTests.m`. Pure, as in the source.
@Suite("Conformance: AFNetworking AFHTTPRequestSerializationTests")
struct AFHTTPRequestSerializationConformanceTests {
    let url = URL(string: "http://example.com")!

    struct CustomFailure: Error, Equatable {}

    @Test func testThatAFHTTPRequestSerializationSerializesPOSTRequestsProperly() throws {
        let request = try HTTPRequestSerializer().request(
            bySerializing: Request(method: .post, url: self.url), parameters: ["key": "value"])
        #expect(request.headerFields[.contentType] == "application/x-www-form-urlencoded")
        #expect(Conformance.bodyData(request) == Data("key=value".utf8))
    }

    @Test func testThatAFHTTPRequestSerializationSerializesPOSTRequestsProperlyWhenNoParameterIsProvided() throws {
        let request = try HTTPRequestSerializer().request(bySerializing: Request(method: .post, url: self.url), parameters: nil)
        #expect(request.headerFields[.contentType] == "application/x-www-form-urlencoded")
        #expect(request.body.data == Data() || request.body.isEmpty)
        #expect(Conformance.bodyData(request) == Data())
    }

    @Test func testThatAFHTTPRequestSerialiationSerializesQueryParametersCorrectly() throws {
        let request = try HTTPRequestSerializer().request(bySerializing: Request(url: self.url), parameters: ["key": "value"])
        #expect(request.url.query == "key=value")
    }

    @Test func testThatEmptyDictionaryParametersAreProperlyEncoded() throws {
        let request = try HTTPRequestSerializer().request(bySerializing: Request(url: self.url), parameters: Parameters())
        #expect(!request.url.absoluteString.hasSuffix("?"))
    }

    @Test func testThatAFHTTPRequestSerialiationSerializesURLEncodableQueryParametersCorrectly() throws {
        let request = try HTTPRequestSerializer().request(
            bySerializing: Request(url: self.url), parameters: ["key": " :#[]@!$&'()*+,;=/?"])
        #expect(request.url.query(percentEncoded: true) == "key=%20%3A%23%5B%5D%40%21%24%26%27%28%29%2A%2B%2C%3B%3D/?")
    }

    @Test func testThatAFHTTPRequestSerialiationSerializesURLEncodedQueryParametersCorrectly() throws {
        let request = try HTTPRequestSerializer().request(
            bySerializing: Request(url: self.url), parameters: ["key": "%20%21%22%23%24%25%26%27%28%29%2A%2B%2C%2F"])
        #expect(
            request.url.query(percentEncoded: true)
                == "key=%2520%2521%2522%2523%2524%2525%2526%2527%2528%2529%252A%252B%252C%252F")
    }

    @Test func testThatAFHTTPRequestSerialiationSerializesQueryParametersCorrectlyFromQuerySerializationBlock() throws {
        var serializer = HTTPRequestSerializer()
        serializer.setQueryStringSerialization { _, parameters in
            let dictionary = parameters as? [String: any Sendable] ?? [:]
            return dictionary.map { "\($0.key)**\($0.value)" }.joined()
        }
        let request = try serializer.request(bySerializing: Request(url: self.url), parameters: ["key": "value"])
        #expect(request.url.query == "key**value")
    }

    /// The source reads the part's header from AFNetworking's private body-part class; here the
    /// part's header is read from the bytes the form sends.
    ///
    /// Differs: AFNetworking asks Apple's type registry, which says `application/x-x509-ca-cert`
    /// for `.cer`; Courier's built-in table, the same on every platform, follows the shared MIME
    /// table of Linux distributions (`mime.types`) and RFC 2585: `application/pkix-cert`.
    @Test func testThatAFHTTPRequestSerialiationSerializesMIMETypeCorrectly() async throws {
        try await withTemporaryFolder { folder in
            let file = folder.appendingPathComponent("adn_0.cer")
            try Data("not really a certificate".utf8).write(to: file)
            var form = MultipartFormData()
            try form.appendPart(withFileURL: file, name: "test")
            let text = String(decoding: try await collectBytes(of: form.body), as: UTF8.self)
            #expect(text.contains("Content-Type: application/pkix-cert\r\n"))
        }
    }

    @Test func testThatValueForHTTPHeaderFieldReturnsSetValue() {
        var serializer = HTTPRequestSerializer()
        serializer.setValue("Actual Value", forHTTPHeaderField: "Set-Header")
        #expect(serializer.value(forHTTPHeaderField: "Set-Header") == "Actual Value")
    }

    @Test func testThatValueForHTTPHeaderFieldReturnsNilForUnsetHeader() {
        #expect(HTTPRequestSerializer().value(forHTTPHeaderField: "Unset-Header") == nil)
    }

    /// The source builds from the relative string "url"; Courier refuses a URL string without a
    /// host before the query is built (`.invalidURL`), so the twin uses an absolute one. The
    /// closure's error reaches the caller, kept as the underlying error of a typed error.
    @Test func testQueryStringSerializationCanFailWithError() {
        var serializer = HTTPRequestSerializer()
        serializer.setQueryStringSerialization { _, _ in throw CustomFailure() }
        #expect {
            _ = try serializer.request(method: .get, urlString: "http://example.com/url", parameters: Parameters())
        } throws: { error in
            guard let error = error as? CourierError else { return false }
            return error.code == .parameterEncodingFailed && error.underlyingError is CustomFailure
        }
    }

    @Test func testThatHTTPHeaderValueCanBeRemoved() {
        var serializer = HTTPRequestSerializer()
        serializer.setValue("test", forHTTPHeaderField: "TestHeader")
        #expect(serializer.httpRequestHeaders[HTTPField.Name("TestHeader")!] == "test")
        serializer.setValue(nil, forHTTPHeaderField: "TestHeader")
        #expect(serializer.httpRequestHeaders[HTTPField.Name("TestHeader")!] == nil)
    }

    /// The source sets a header from 1000 threads at once and passes if nothing crashes. A
    /// Courier serializer is a value; a manager's `requestSerializer` is read and replaced under a
    /// lock. 1000 tasks replace it at once; every one finishes and the last value is one of theirs.
    @Test func testThatHTTPHeaderValueCanBeSetToReferenceCountedStringFromMultipleThreadsWithoutCrashing() async {
        let manager = HTTPSessionManager(baseURL: nil)
        let values = (0..<1000).map { String(describing: Date(timeIntervalSince1970: Double($0))) }
        await withTaskGroup(of: Void.self) { group in
            for value in values {
                group.addTask {
                    var serializer = HTTPRequestSerializer()
                    serializer.setValue(value, forHTTPHeaderField: "FrequentlyUpdatedHeaderField")
                    manager.requestSerializer = serializer
                }
            }
        }
        let last = (manager.requestSerializer as? HTTPRequestSerializer)?.value(forHTTPHeaderField: "FrequentlyUpdatedHeaderField")
        #expect(last.map(values.contains) == true)
        await manager.invalidate(cancelingTasks: true)
    }

    @Test func testQueryStringFromParameters() throws {
        #expect(try HTTPRequestSerializer.queryString(from: ["key": "value", "key1": "value&"]) == "key=value&key1=value%26")
    }

    @Test func testPercentEscapingString() {
        #expect(HTTPRequestSerializer.percentEscaped(":#[]@!$&'()*+,;=?/") == "%3A%23%5B%5D%40%21%24%26%27%28%29%2A%2B%2C%3B%3D?/")
    }

    /// Issue #3028: escaping must not split a character made of several code points.
    @Test func testThatEmojiIsProperlyEncoded() throws {
        var parameter = "!"
        while parameter.utf16.count < 50 { parameter += "👴🏿👷🏻👮🏽" }
        let request = try HTTPRequestSerializer().request(method: .get, urlString: "http://test.com", parameters: ["test": parameter])
        let unit = "%F0%9F%91%B4%F0%9F%8F%BF%F0%9F%91%B7%F0%9F%8F%BB%F0%9F%91%AE%F0%9F%8F%BD"
        #expect(request.url.query(percentEncoded: true) == "test=%21" + String(repeating: unit, count: 5))
    }
}
