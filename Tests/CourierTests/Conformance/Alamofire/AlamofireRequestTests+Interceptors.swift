import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import Testing

/// Twins of the cURL-description and per-request interceptor tests of Alamofire's
/// `Tests/RequestTests.swift` (the rest of that file is issue 17's). Courier's `cURLDescription()`
/// is synchronous, on requests and tasks, and writes curl's long options quoted for a POSIX shell
/// (`curl --request POST 'http://…' --header 'Name: value' --data-binary '…'`), not Alamofire's
/// `$ curl -v -X …` with double quotes. A request has one `interceptor`; several are composed in
/// order with `Interceptor(interceptors:)`.
@Suite("Conformance: Alamofire RequestTests (cURL, per-request interceptors)")
struct AlamofireRequestInterceptorsConformanceTests {
    /// The words of a description, without line continuations.
    static func components(_ description: String) -> [String] {
        description.components(separatedBy: .whitespacesAndNewlines).filter { $0 != "" && $0 != "\\" }
    }

    /// A task of a fresh manager for `request`, not resumed, with the manager (to invalidate).
    static func task(
        _ request: Request, configuration: SessionConfiguration = .default
    ) -> (SessionManager, DataTask) {
        let manager = SessionManager(configuration: configuration)
        return (manager, manager.dataTask(with: request, completionHandler: nil))
    }

    static let url = URL(string: "http://127.0.0.1:8080/get")!
    static let postURL = URL(string: "http://127.0.0.1:8080/post")!

    // MARK: RequestCURLDescriptionTestCase

    /// Differs: Courier's form (`curl URL` for a GET: curl's default method is not written; the
    /// URL first, then the header fields, with the session's `Accept-Encoding` as Alamofire's
    /// session headers are).
    @Test func testGETRequestCURLDescription() {
        let (manager, task) = Self.task(Request(url: Self.url))
        defer { manager.invalidate(cancelingTasks: true) }
        let components = Self.components(task.cURLDescription())
        #expect(components.first == "curl")
        #expect(!components.contains("--request"))
        #expect(components[1] == Self.url.absoluteString)
        #expect(components.dropFirst(2) == ["--header", "'Accept-Encoding:", "deflate,", "gzip'"])
    }

    /// Differs: the description is synchronous; it can be asked for on the main actor (or any
    /// thread) and needs no queue.
    @Test @MainActor func testGETRequestCURLDescriptionOnMainQueue() {
        let (manager, task) = Self.task(Request(url: Self.url))
        defer { manager.invalidate(cancelingTasks: true) }
        #expect(Self.components(task.cURLDescription()).prefix(2) == ["curl", Self.url.absoluteString])
    }

    /// Differs: there is only the synchronous form; the task's is its request's with what the
    /// session adds.
    @Test func testGETRequestCURLDescriptionSynchronous() {
        let (manager, task) = Self.task(Request(url: Self.url))
        defer { manager.invalidate(cancelingTasks: true) }
        var sent = task.currentRequest
        sent.headerFields[.acceptEncoding] = "deflate, gzip"
        #expect(task.cURLDescription() == sent.cURLDescription())
        #expect(Self.components(task.cURLDescription())[1] == Self.url.absoluteString)
    }

    @Test func testGETRequestCURLDescriptionCanBeRequestedManyTimes() {
        let (manager, task) = Self.task(Request(url: Self.url))
        defer { manager.invalidate(cancelingTasks: true) }
        let first = task.cURLDescription()
        #expect(task.cURLDescription() == first)
        #expect(Self.components(first)[1] == Self.url.absoluteString)
    }

    /// Differs: single quotes (the value's double quotes need no escaping).
    @Test func testGETRequestWithCustomHeaderCURLDescription() {
        var request = Request(url: Self.url)
        request.headerFields[HTTPField.Name("X-Custom-Header")!] = #"{"key": "value"}"#
        let (manager, task) = Self.task(request)
        defer { manager.invalidate(cancelingTasks: true) }
        #expect(task.cURLDescription().contains(#"--header 'X-Custom-Header: {"key": "value"}'"#))
    }

    @Test func testGETRequestWithDuplicateHeadersDebugDescription() {
        var configuration = SessionConfiguration.default
        configuration.httpAdditionalHeaders[.acceptLanguage] = "en-US"
        var request = Request(url: Self.url)
        request.headerFields[.acceptLanguage] = "en-GB"
        let (manager, task) = Self.task(request, configuration: configuration)
        defer { manager.invalidate(cancelingTasks: true) }
        let description = task.cURLDescription()
        #expect(Self.components(description).filter { $0.contains("Accept-Language") }.count == 1)
        #expect(description.contains("--header 'Accept-Language: en-GB'"))
    }

    /// Differs: `--request POST` is written only when curl would not choose POST itself (no body).
    @Test func testPOSTRequestCURLDescription() {
        let (manager, task) = Self.task(Request(method: .post, url: Self.postURL))
        defer { manager.invalidate(cancelingTasks: true) }
        let components = Self.components(task.cURLDescription())
        #expect(Array(components.prefix(3)) == ["curl", "--request", "POST"])
        #expect(components[3] == Self.postURL.absoluteString)
    }

    /// Differs: the body is `--data-binary` in single quotes, where a `'` is written `'\''`;
    /// the URL comes before the header fields and the body.
    @Test func testPOSTRequestWithJSONParametersCURLDescription() throws {
        let serializer = JSONRequestSerializer()
        let parameters: [String: any Sendable] = ["foo": "bar", "fo\"o": "b\"ar", "f'oo": "ba'r"]
        let request = try serializer.request(method: .post, urlString: Self.postURL.absoluteString, parameters: parameters)
        let (manager, task) = Self.task(request)
        defer { manager.invalidate(cancelingTasks: true) }
        let description = task.cURLDescription()
        #expect(description.hasPrefix("curl \(Self.postURL.absoluteString)"))
        #expect(description.contains("--header 'Content-Type: application/json"))
        #expect(description.contains("--data-binary '{"))
        #expect(description.contains(#""f'\''oo":"ba'\''r""#))
        #expect(description.contains(#""fo\"o":"b\"ar""#))
        #expect(description.contains(#""foo":"bar""#))
    }

    /// Differs: Courier's form; the request's own `Content-Type` (multipart, with its boundary)
    /// is kept over the session's `httpAdditionalHeaders`.
    @Test func testMultipartFormDataRequestWithDuplicateHeadersCURLDescriptionHasOneContentTypeHeader() throws {
        var configuration = SessionConfiguration.default
        configuration.httpAdditionalHeaders[.contentType] = "application/json"
        let request = try HTTPRequestSerializer().multipartFormRequest(method: .post, urlString: Self.postURL.absoluteString) { form in
            form.appendPart(withForm: Data("日本語".utf8), name: "japanese")
        }
        let (manager, task) = Self.task(request, configuration: configuration)
        defer { manager.invalidate(cancelingTasks: true) }
        let description = task.cURLDescription()
        #expect(description.hasPrefix("curl \(Self.postURL.absoluteString)"))
        #expect(Self.components(description).filter { $0.contains("Content-Type") }.count == 1)
        #expect(description.contains("--header 'Content-Type: multipart/form-data;"))
    }

    /// Differs: a request cannot hold an invalid URL: the verb fails with `.invalidURL` before a
    /// task exists, so there is nothing to describe (and nothing crashes).
    @Test func testThatRequestWithInvalidURLDebugDescription() async {
        let manager = HTTPSessionManager(baseURL: nil)
        defer { manager.invalidate(cancelingTasks: true) }
        let (task, error): (DataTask?, CourierError?) = await awaitCallback { finish in
            let holder = NIOLockedValueBox<DataTask?>(nil)
            let task = manager.get("http://[invalid_url", failure: { _, error in finish((holder.withLockedValue { $0 }, error)) })
            holder.withLockedValue { $0 = task }
        }
        #expect(task == nil)
        #expect(error?.code == .invalidURL)
    }

    // MARK: RequestInstanceInterceptorTests

    /// Records when it adapted and was asked to retry, answering `retry` as told.
    final class Inspector: RequestInterceptor {
        let order: NIOLockedValueBox<[String]>
        let name: String
        let retries: Bool
        let adaptations = NIOLockedValueBox(0)
        let questions = NIOLockedValueBox(0)

        init(_ name: String, order: NIOLockedValueBox<[String]>, retries: Bool) {
            self.name = name
            self.order = order
            self.retries = retries
        }

        func adapt(_ request: Request, using context: AdaptationContext) async throws -> Request {
            self.adaptations.withLockedValue { $0 += 1 }
            self.order.withLockedValue { $0.append("adapt \(self.name)") }
            var request = request
            request.headerFields[HTTPField.Name("X-\(self.name)")!] = "\(self.order.withLockedValue { $0.count })"
            return request
        }

        func retry(_ attempt: FailedAttempt) async throws -> RetryDecision {
            self.questions.withLockedValue { $0 += 1 }
            self.order.withLockedValue { $0.append("retry \(self.name)") }
            return self.retries ? .retry() : .doNotRetry
        }
    }

    /// Sends a GET to a route that fails once (503), then answers 200, with `request`'s
    /// interceptor and the session's `sessionInterceptor`; the status the task ends with.
    static func flaky(
        session sessionInterceptor: (any RequestInterceptor)? = nil, request interceptor: any RequestInterceptor, failures: Int = 1
    ) async throws -> HTTPResponse.Status? {
        try await withTestServer { server in
            _ = failingRoute(server, "/flaky", failures: failures)
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            manager.interceptor = sessionInterceptor
            var request = Request(url: server.url("/flaky"))
            request.interceptor = interceptor
            let response: HTTPResponse? = await awaitCallback { finish in
                manager.dataTask(with: request) { response, _, _ in finish(response) }.resume()
            }
            return response?.status
        }
    }

    @Test func instanceAdapterIsCalled() async throws {
        let order = NIOLockedValueBox<[String]>([])
        let adapter = Inspector("A", order: order, retries: false)
        #expect(try await Self.flaky(request: adapter, failures: 0) == .ok)
        #expect(adapter.adaptations.withLockedValue { $0 } == 1)
    }

    /// Differs: a request has one interceptor; `Interceptor(adapters:)` runs several in order.
    @Test func instanceAdaptersAreCalledInAddedOrder() async throws {
        let order = NIOLockedValueBox<[String]>([])
        let first = Inspector("First", order: order, retries: false)
        let second = Inspector("Second", order: order, retries: false)
        #expect(try await Self.flaky(request: Interceptor(adapters: [first, second]), failures: 0) == .ok)
        #expect(order.withLockedValue { $0 } == ["adapt First", "adapt Second"])
    }

    @Test func sessionAdapterIsCalledBeforeInstanceAdapter() async throws {
        let order = NIOLockedValueBox<[String]>([])
        let session = Inspector("Session", order: order, retries: false)
        let instance = Inspector("Instance", order: order, retries: false)
        #expect(try await Self.flaky(session: session, request: instance, failures: 0) == .ok)
        #expect(order.withLockedValue { $0 } == ["adapt Session", "adapt Instance"])
    }

    /// Differs: the first attempt fails with a 503 (Alamofire's with a timeout).
    @Test func instanceInterceptorIsCalled() async throws {
        let order = NIOLockedValueBox<[String]>([])
        let interceptor = Inspector("I", order: order, retries: true)
        #expect(try await Self.flaky(request: interceptor) == .ok)
        #expect(interceptor.adaptations.withLockedValue { $0 } == 2)
        #expect(interceptor.questions.withLockedValue { $0 } == 1)
    }

    /// Differs: composed with `Interceptor(interceptors:)`; the first attempt fails with a 503.
    @Test func multipleInstanceInterceptorsAreCalledInAddedOrder() async throws {
        let order = NIOLockedValueBox<[String]>([])
        let first = Inspector("First", order: order, retries: false)
        let second = Inspector("Second", order: order, retries: true)
        #expect(try await Self.flaky(request: Interceptor(interceptors: [first, second])) == .ok)
        #expect(order.withLockedValue { $0 } == [
            "adapt First", "adapt Second", "retry First", "retry Second", "adapt First", "adapt Second",
        ])
    }

    /// Differs: the first attempt fails with a 503.
    @Test func instanceRetrierIsCalled() async throws {
        let questions = NIOLockedValueBox(0)
        let retrier = Retrier { _ in
            questions.withLockedValue { $0 += 1 }
            return .retry()
        }
        #expect(try await Self.flaky(request: retrier) == .ok)
        #expect(questions.withLockedValue { $0 } == 1)
    }

    /// Differs: composed with `Interceptor(retriers:)`; the first attempt fails with a 503.
    @Test func multipleInstanceRetriersAreCalledInAddedOrder() async throws {
        let order = NIOLockedValueBox<[String]>([])
        let first = Inspector("First", order: order, retries: false)
        let second = Inspector("Second", order: order, retries: true)
        #expect(try await Self.flaky(request: Interceptor(retriers: [first, second])) == .ok)
        #expect(order.withLockedValue { $0 } == ["retry First", "retry Second"])
    }

    /// Differs: the first attempt fails with a 503.
    @Test func sessionRetrierIsCalledBeforeInstanceRetrier() async throws {
        let order = NIOLockedValueBox<[String]>([])
        let session = Inspector("Session", order: order, retries: false)
        let instance = Inspector("Instance", order: order, retries: true)
        #expect(try await Self.flaky(session: Interceptor(retriers: [session]), request: Interceptor(retriers: [instance])) == .ok)
        #expect(order.withLockedValue { $0 } == ["retry Session", "retry Instance"])
    }
}
