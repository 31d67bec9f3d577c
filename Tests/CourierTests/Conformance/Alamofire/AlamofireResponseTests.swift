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
/// `CourierError` thrown, which carries the request, response and data it had, and the task's
/// metrics (the map twins check them). Its invalid URL is the string `invalid`, which
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

// MARK: map, tryMap, mapError, tryMapError

/// Twins of Alamofire's `ResponseMapTestCase`, `ResponseTryMapTestCase`, `ResponseMapErrorTestCase`,
/// `ResponseTryMapErrorTestCase`.
///
/// A Courier `DataResponse` holds a value, not a `Result`: `map(_:)` is Alamofire's `map` and, with
/// a throwing transform, its `tryMap` (the transform's error is thrown as it is). A failed call
/// throws a `CourierError` that keeps the request, the response and body it had and the task's
/// metrics, which a `catch` maps (Alamofire's `mapError`). The `DownloadResponse…` twins are in
/// `AlamofireDownloadTests+Map.swift`.
extension AlamofireResponseConformanceTests {
    enum TestError: Error { case error(error: CourierError) }
    enum TransformationError: Error {
        case error
        func alwaysFails() throws(TransformationError) -> TestError { throw TransformationError.error }
    }
    struct TransformError: Error {}

    /// A request that fails after its task started (a closed port): Alamofire's invalid URL fails
    /// in its session's task too, with metrics.
    static func failing() -> Request { Request(url: URL(string: "http://127.0.0.1:\(closedPort())/get")!) }

    /// The error `body` throws, checked as Alamofire checks a failed response: the request and
    /// metrics are kept, there is no response or body.
    static func expectFailureKeepsRequestAndMetrics(_ error: CourierError?, request: Request) {
        #expect(error?.code == .connectionFailed)
        #expect(error?.request?.url == request.url)
        #expect(error?.response == nil)
        #expect(error?.data == nil)
        #expect(error?.metrics?.redirectCount == 0)
        #expect(error?.metrics?.transactions.isEmpty == false)
    }

    static func expectSuccessKept<Value>(_ response: DataResponse<Value>) {
        #expect(response.response.status == .ok)
        #expect(response.data?.isEmpty == false)
        #expect(response.metrics?.transactions.isEmpty == false)
    }

    @Test func ResponseMapTestCase_testThatMapTransformsSuccessValue() async throws {
        try await Self.withManager { manager, _ in
            let response = try await manager.get("get", parameters: ["foo": "bar"], as: HTTPBinEchoResponse.self).map { $0.args?["foo"] ?? "invalid" }
            #expect(response.value == "bar")
            #expect(response.request.url.query == "foo=bar")
            Self.expectSuccessKept(response)
            #expect(response.map(\.count).value == 3, "a key path is a transform")
        }
    }

    /// Differs: a failed call has no response to map; the `CourierError` it throws keeps the
    /// request and the task's metrics.
    @Test func ResponseMapTestCase_testThatMapPreservesFailureError() async throws {
        try await Self.withManager { manager, _ in
            let request = Self.failing()
            let error = await #expect(throws: CourierError.self) { _ = try await manager.data(for: request).map { _ in "ignored" } }
            Self.expectFailureKeepsRequestAndMetrics(error, request: request)
        }
    }

    @Test func ResponseTryMapTestCase_testThatTryMapTransformsSuccessValue() async throws {
        try await Self.withManager { manager, _ in
            let response = try await manager.get("get", parameters: ["foo": "bar"], as: HTTPBinEchoResponse.self)
                .map { (echo) throws(TransformError) -> String in
                    guard let foo = echo.args?["foo"] else { throw TransformError() }
                    return foo
                }
            #expect(response.value == "bar")
            Self.expectSuccessKept(response)
        }
    }

    /// The transform's error is thrown, typed (Alamofire puts it in the mapped response's result).
    @Test func ResponseTryMapTestCase_testThatTryMapCatchesTransformationError() async throws {
        try await Self.withManager { manager, _ in
            let response = try await manager.data(for: Request(url: manager.baseURL!.appendingPathComponent("get")))
            Self.expectSuccessKept(response)
            #expect(throws: TransformError.self) {
                _ = try response.map { (_) throws(TransformError) -> String in throw TransformError() }
            }
        }
    }

    /// Differs: as `ResponseMapTestCase_testThatMapPreservesFailureError`.
    @Test func ResponseTryMapTestCase_testThatTryMapPreservesFailureError() async throws {
        try await Self.withManager { manager, _ in
            let request = Self.failing()
            let error = await #expect(throws: CourierError.self) {
                _ = try await manager.data(for: request).map { (_) throws(TransformError) -> String in "ignored" }
            }
            Self.expectFailureKeepsRequestAndMetrics(error, request: request)
        }
    }

    /// Differs: the failure is the thrown `CourierError`, mapped in a `catch`; it keeps the request
    /// and metrics.
    @Test func ResponseMapErrorTestCase_testThatMapErrorTransformsFailureValue() async throws {
        try await Self.withManager { manager, _ in
            let request = Self.failing()
            let error = await #expect(throws: TestError.self) {
                do throws(CourierError) {
                    _ = try await manager.response(for: request, serializer: DecodableResponseSerializer(HTTPBinEchoResponse.self))
                } catch {
                    throw TestError.error(error: error)
                }
            }
            guard case .error(let underlying) = error else { Issue.record("not mapped"); return }
            Self.expectFailureKeepsRequestAndMetrics(underlying, request: request)
        }
    }

    /// Differs: a success throws nothing, so no `catch` runs; the response is untouched.
    @Test func ResponseMapErrorTestCase_testThatMapErrorPreservesSuccessValue() async throws {
        try await Self.withManager { manager, _ in
            var mapped = false
            do throws(CourierError) {
                let response = try await manager.data(for: Request(url: manager.baseURL!.appendingPathComponent("get")))
                Self.expectSuccessKept(response)
            } catch {
                mapped = true
            }
            #expect(!mapped)
        }
    }

    /// Differs: as `ResponseMapErrorTestCase_testThatMapErrorPreservesSuccessValue`.
    @Test func ResponseTryMapErrorTestCase_testThatTryMapErrorPreservesSuccessValue() async throws {
        try await Self.withManager { manager, _ in
            let response = try await Self.mappingFailures(manager, Request(url: manager.baseURL!.appendingPathComponent("get"))) {
                TestError.error(error: $0)
            }
            Self.expectSuccessKept(response)
        }
    }

    /// Differs: a `catch` whose mapping throws throws that error instead.
    @Test func ResponseTryMapErrorTestCase_testThatTryMapErrorCatchesTransformationError() async throws {
        try await Self.withManager { manager, _ in
            _ = await #expect(throws: TransformationError.self) {
                _ = try await Self.mappingFailures(manager, Self.failing()) { _ in try TransformationError.error.alwaysFails() }
            }
        }
    }

    /// Differs: as `ResponseMapErrorTestCase_testThatMapErrorTransformsFailureValue`.
    @Test func ResponseTryMapErrorTestCase_testThatTryMapErrorTransformsError() async throws {
        try await Self.withManager { manager, _ in
            let request = Self.failing()
            let error = await #expect(throws: TestError.self) {
                _ = try await Self.mappingFailures(manager, request) { TestError.error(error: $0) }
            }
            guard case .error(let underlying) = error else { Issue.record("not mapped"); return }
            Self.expectFailureKeepsRequestAndMetrics(underlying, request: request)
        }
    }

    /// `data(for:)` with its failure mapped by `transform` (which may itself throw): Alamofire's
    /// `tryMapError` written as a `catch`.
    static func mappingFailures(
        _ manager: HTTPSessionManager, _ request: Request, _ transform: (CourierError) throws -> any Error
    ) async throws -> DataResponse<Data> {
        do {
            return try await manager.data(for: request)
        } catch {
            throw try transform(error)
        }
    }
}
