import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import Testing

/// Twins of the request compression, lifetime-event and cookie cURL tests of Alamofire's
/// `Tests/RequestTests.swift` (the rest of that file is issue 17's, and the cURL and per-request
/// interceptor twins are in `AlamofireRequestTests+Interceptors.swift`). Courier's
/// `RequestCompressor` is Alamofire's `DeflateRequestCompressor` with gzip too; a body that has a
/// `Content-Encoding` already is sent as it is by default (Alamofire's `.skip`; its default is
/// `.error`).
@Suite("Conformance: Alamofire RequestTests (compression, events, cookies in cURL)")
struct AlamofireRequestCompressionConformanceTests {
    /// POSTs `{"property":"compressed"}` with `headers` and `compressor` to a route that inflates
    /// a compressed body; what the route saw (encoding, body as text) and whether it succeeded.
    static func post(headers: HTTPFields = [:], compressor: RequestCompressor) async throws -> (encoding: String?, body: String?, ok: Bool) {
        try await withTestServer { server in
            let seen = NIOLockedValueBox<(String?, String?)>((nil, nil))
            server.route("/inflating") { request in
                let encoding = request.value(forHTTPHeaderField: "Content-Encoding")
                let body = (encoding == "deflate" || encoding == "gzip") ? RequestCompressorTests.inflate(request.body) : request.body
                seen.withLockedValue { $0 = (encoding, body.map { String(decoding: $0, as: UTF8.self) }) }
                guard let body, (try? JSONSerialization.jsonObject(with: body)) != nil else { return TestServer.Response(status: .badRequest) }
                return TestServer.Response(headerFields: [.contentType: "application/json"], body: body)
            }
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            var request = Request(method: .post, url: server.url("/inflating"), body: .data(Data(#"{"property":"compressed"}"#.utf8)))
            request.headerFields[.contentType] = "application/json"
            request.headerFields.append(contentsOf: headers)
            request.interceptor = compressor
            let error: CourierError? = await awaitCallback { finish in manager.dataTask(with: request) { _, _, error in finish(error) }.resume() }
            let (encoding, body) = seen.withLockedValue { $0 }
            return (encoding, body, error == nil)
        }
    }

    static let deflate = RequestCompressor(encoding: .deflate, minimumSize: 0)

    @Test func thatRequestsCanBeCompressed() async throws {
        let result = try await Self.post(compressor: Self.deflate)
        #expect(result.ok)
        #expect(result.encoding == "deflate")
        #expect(result.body == #"{"property":"compressed"}"#)
    }

    /// Differs: a body with a `Content-Encoding` is sent as it is, never compressed twice and
    /// never failed (Alamofire's default throws `DuplicateHeaderError`).
    @Test func thatDeflateCompressorThrowsErrorByDefaultWhenRequestAlreadyHasHeader() async throws {
        let result = try await Self.post(headers: [.contentEncoding: "value"], compressor: Self.deflate)
        #expect(result.encoding == "value")
        #expect(result.body == #"{"property":"compressed"}"#)
    }

    /// The request fails before it is sent, its error's underlying error the compressor's.
    @Test func thatDeflateCompressorThrowsErrorWhenConfigured() async throws {
        try await withTestServer { server in
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            var request = Request(method: .post, url: server.url("/post"), body: .data(Data(#"{"property":"compressed"}"#.utf8)))
            request.headerFields[.contentEncoding] = "value"
            request.interceptor = RequestCompressor(encoding: .deflate, minimumSize: 0, duplicateHeaderBehavior: .error)
            let error: CourierError? = await awaitCallback { finish in manager.dataTask(with: request) { _, _, error in finish(error) }.resume() }
            #expect(error?.code == .requestAdaptationFailed)
            #expect(error?.underlyingError as? RequestCompressor.DuplicateHeaderError != nil)
            #expect(server.requestCount == 0, "nothing was sent")
        }
    }

    @Test func thatDeflateCompressorReplacesHeaderWhenConfigured() async throws {
        let compressor = RequestCompressor(encoding: .deflate, minimumSize: 0, duplicateHeaderBehavior: .replace)
        let result = try await Self.post(headers: [.contentEncoding: "value"], compressor: compressor)
        #expect(result.ok)
        #expect(result.encoding == "deflate")
        #expect(result.body == #"{"property":"compressed"}"#)
    }

    @Test func thatDeflateCompressorSkipsCompressionWhenConfigured() async throws {
        let result = try await Self.post(headers: [.contentEncoding: "gzip"], compressor: Self.deflate)
        #expect(!result.ok, "the body claims gzip but is not")
        #expect(result.encoding == "gzip")
    }

    @Test func thatDeflateCompressorDoesNotCompressDataWhenClosureReturnsFalse() async throws {
        let result = try await Self.post(compressor: RequestCompressor(encoding: .deflate, minimumSize: 0, shouldCompress: { _ in false }))
        #expect(result.ok)
        #expect(result.encoding == nil)
    }

    // MARK: Lifetime events

    /// The events of one GET, body progress left out.
    static func events(cancelling: Bool) async throws -> [String] {
        try await withTestServer { server in
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            manager.responseSerializer = HTTPResponseSerializer()
            let monitor = RecordingEventMonitor()
            manager.eventMonitors = [monitor]
            let _: CourierError? = await awaitCallback { finish in
                // A cancelled request asks for an answer that takes long: on a loaded machine the
                // thread may stall between `resume()` and `cancel()` for as long as a quick answer takes.
                let path = cancelling ? "/delay/10" : "/get"
                let task = manager.dataTask(with: Request(url: server.url(path))) { _, _, error in finish(error) }
                task.resume()
                if cancelling { task.cancel() }
            }
            await monitor.wait(for: "serialized")
            return monitor.lines().filter { !$0.hasPrefix("sent") && !$0.hasPrefix("received") }
        }
    }

    /// Differs: Courier's events (see `AlamofireUploadTests+Interceptors.swift`).
    @Test func testThatRequestTriggersAllAppropriateLifetimeEvents() async throws {
        #expect(try await Self.events(cancelling: false) == ["created", "resumed", "response 200", "metrics", "completed ok", "serialized ok"])
    }

    /// Differs: Courier's events (see `AlamofireUploadTests+Interceptors.swift`).
    @Test func testThatCancelledRequestTriggersAllAppropriateLifetimeEvents() async throws {
        let events = try await Self.events(cancelling: true)
        #expect(events.first == "created")
        #expect(events.contains("cancelled"))
        #expect(Array(events.suffix(3)) == ["metrics", "completed cancelled", "serialized cancelled"])
    }

    // MARK: Cookies in cURL descriptions

    /// A task for a POST whose session's store holds `foo=bar` for the host.
    static func cookieTask(handlesCookies: Bool) -> (SessionManager, DataTask) {
        var configuration = SessionConfiguration.default
        configuration.httpShouldHandleCookies = handlesCookies
        let url = URL(string: "http://127.0.0.1:8080/post")!
        configuration.httpCookieStorage?.setCookie(Cookie(name: "foo", value: "bar", domain: "127.0.0.1", path: "/post"))
        let manager = SessionManager(configuration: configuration)
        return (manager, manager.dataTask(with: Request(method: .post, url: url), completionHandler: nil))
    }

    /// Differs: the cookies are a `--header 'Cookie: …'` (Alamofire writes `-b`).
    @Test func testPOSTRequestWithCookieCURLDescription() {
        let (manager, task) = Self.cookieTask(handlesCookies: true)
        defer { manager.invalidate(cancelingTasks: true) }
        #expect(task.cURLDescription() == "curl --request POST http://127.0.0.1:8080/post \\\n  --header 'Cookie: foo=bar' \\\n  --header 'Accept-Encoding: deflate, gzip'")
    }

    @Test func testPOSTRequestWithCookiesDisabledCURLDescriptionHasNoCookies() {
        let (manager, task) = Self.cookieTask(handlesCookies: false)
        defer { manager.invalidate(cancelingTasks: true) }
        #expect(task.cURLDescription() == "curl --request POST http://127.0.0.1:8080/post \\\n  --header 'Accept-Encoding: deflate, gzip'")
    }
}
