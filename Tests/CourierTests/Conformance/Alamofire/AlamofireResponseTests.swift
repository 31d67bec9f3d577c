import Courier
import CourierTesting
import Foundation
import HTTPTypes
import Testing

/// Twins of Alamofire's `Tests/ResponseTests.swift`, against TestServer.
///
/// Alamofire's `response`, `responseData`, `responseString`, `responseJSON` and
/// `responseDecodable` are a request sent with `DataResponseSerializer`,
/// `StringResponseSerializer`, `JSONResponseSerializer` or `DecodableResponseSerializer`; its
/// `DataResponse` is Courier's (`request`, `response`, `data`, `value`), and a failure is the
/// `CourierError` thrown, which carries the request, response and data it had. The source also
/// checks `metrics`: task metrics are issue 19's. Its invalid URL is the string `invalid`, which
/// names neither scheme nor host: the task fails with `.invalidURL` (URLSession's
/// `unsupportedURL`), before any connection.
@Suite("Conformance: Alamofire ResponseTests")
struct AlamofireResponseConformanceTests {
    static func withManager<T>(_ body: (HTTPSessionManager, TestServer) async throws -> T) async throws -> T {
        try await withTestServer { server in
            try await CourierTests.withManager(baseURL: server.baseURL) { manager in try await body(manager, server) }
        }
    }

    /// The request for Alamofire's `String.invalidURL`.
    static let invalid = Request(url: URL(string: "invalid")!)

    /// Sends the invalid request with `serializer` and checks the failure: the request is there,
    /// no response, no data.
    static func expectInvalidURLFailure<Serializer: ResponseSerializer>(_ serializer: Serializer) async throws {
        try await Self.withManager { manager, _ in
            let error = await #expect(throws: CourierError.self) {
                _ = try await manager.response(for: Self.invalid, serializer: serializer)
            }
            #expect(error?.code == .invalidURL)
            #expect(error?.request?.url == Self.invalid.url)
            #expect(error?.response == nil)
            #expect(error?.data == nil)
        }
    }

    @Test func testThatResponseReturnsSuccessResultWithValidData() async throws {
        try await Self.withManager { manager, _ in
            let response = try await manager.response(method: .get, urlString: "get", parameters: ["foo": "bar"], serializer: DataResponseSerializer())
            #expect(response.request.url.query == "foo=bar")
            #expect(response.response.status == .ok)
            #expect(response.data?.isEmpty == false)
        }
    }

    /// The callback form: the completion gets no response, no object and the error.
    @Test func testThatResponseReturnsFailureResultWithOptionalDataAndError() async throws {
        try await Self.withManager { manager, _ in
            let (response, object, error): (HTTPResponse?, (any Sendable)?, CourierError?) = await awaitCallback { finish in
                manager.dataTask(with: Self.invalid) { finish(($0, $1, $2)) }.resume()
            }
            #expect(response == nil)
            #expect(object == nil)
            #expect(error?.code == .invalidURL)
            #expect(error?.request?.url == Self.invalid.url)
            #expect(error?.data == nil)
        }
    }

    @Test func testThatResponseDataReturnsSuccessResultWithValidData() async throws {
        try await Self.withManager { manager, _ in
            let response = try await manager.response(method: .get, urlString: "get", parameters: ["foo": "bar"], serializer: DataResponseSerializer())
            #expect(response.value.isEmpty == false)
            #expect(response.value == response.data)
        }
    }

    @Test func testThatResponseDataReturnsFailureResultWithOptionalDataAndError() async throws {
        try await Self.expectInvalidURLFailure(DataResponseSerializer())
    }

    @Test func testThatResponseStringReturnsSuccessResultWithValidString() async throws {
        try await Self.withManager { manager, _ in
            let response = try await manager.response(method: .get, urlString: "get", parameters: ["foo": "bar"], serializer: StringResponseSerializer())
            #expect(response.value.contains(#""foo""#))
            #expect(response.data?.isEmpty == false)
        }
    }

    @Test func testThatResponseStringReturnsFailureResultWithOptionalDataAndError() async throws {
        try await Self.expectInvalidURLFailure(StringResponseSerializer())
    }

    @Test func testThatResponseJSONReturnsSuccessResultWithValidJSON() async throws {
        try await Self.withManager { manager, _ in
            let response = try await manager.response(method: .get, urlString: "get", parameters: ["foo": "bar"], serializer: JSONResponseSerializer())
            #expect(response.value is [String: any Sendable])
            #expect(response.data?.isEmpty == false)
        }
    }

    /// The source's JSON class reuses the string class's test name for the JSON serializer's failure.
    @Test func ResponseJSONTestCase_testThatResponseStringReturnsFailureResultWithOptionalDataAndError() async throws {
        try await Self.expectInvalidURLFailure(JSONResponseSerializer())
    }

    @Test func testThatResponseJSONReturnsSuccessResultForGETRequest() async throws {
        try await Self.withManager { manager, _ in
            let response = try await manager.response(method: .get, urlString: "get", parameters: ["foo": "bar"], serializer: JSONResponseSerializer())
            let args = (response.value as? [String: any Sendable])?["args"] as? [String: any Sendable]
            #expect(args?["foo"] as? String == "bar")
            #expect(args?.count == 1)
        }
    }

    @Test func testThatResponseJSONReturnsSuccessResultForPOSTRequest() async throws {
        try await Self.withManager { manager, _ in
            let response = try await manager.response(method: .post, urlString: "post", parameters: ["foo": "bar"], serializer: JSONResponseSerializer())
            let form = (response.value as? [String: any Sendable])?["form"] as? [String: any Sendable]
            #expect(form?["foo"] as? String == "bar")
            #expect(form?.count == 1)
        }
    }

    @Test func testThatResponseDecodableReturnsSuccessResultWithValidJSON() async throws {
        try await Self.withManager { manager, server in
            let response = try await manager.response(for: Request(url: server.url("/get")), serializer: DecodableResponseSerializer(HTTPBinEchoResponse.self))
            #expect(response.value.url == server.url("/get").absoluteString)
        }
    }

    @Test func testThatResponseDecodableWithPassedTypeReturnsSuccessResultWithValidJSON() async throws {
        try await Self.withManager { manager, server in
            let response = try await manager.get("get", as: HTTPBinEchoResponse.self)
            #expect(response.value.url == server.url("/get").absoluteString)
        }
    }
}

extension AlamofireResponseConformanceTests {
    /// The source's Decodable class reuses the string class's test name for its failure.
    @Test func ResponseJSONDecodableTestCase_testThatResponseStringReturnsFailureResultWithOptionalDataAndError() async throws {
        try await Self.expectInvalidURLFailure(DecodableResponseSerializer(HTTPBinEchoResponse.self))
    }
}
