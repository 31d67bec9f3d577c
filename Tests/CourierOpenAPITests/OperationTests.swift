import Courier
import CourierTesting
import Foundation
import HTTPTypes
import InMemoryTracing
import Logging
import NIOConcurrencyHelpers
import OpenAPIRuntime
import Testing
import Tracing

@testable import CourierOpenAPI

/// The `operationID` in the span name, the log metadata and the task metrics; the request the
/// transport makes (URL, options, body kind) without a server.
@Suite("CourierTransport: operations and requests")
struct OperationTests {
    @Test("Each call's operationID names its span and hop spans, is in its log metadata and on its task metrics")
    func operationNames() async throws {
        try await TestServer.withServer { server in
            let manager = SessionManager()
            let tracer = InMemoryTracer()
            manager.tracer = tracer
            let records = NIOLockedValueBox<[Logger.Metadata]>([])
            manager.logger = Logger(label: "openapi") { _ in MetadataLogHandler(records: records) }
            let recorder = CompletionRecorder(manager)
            try await withGeneratedClient(baseURL: server.baseURL, manager: manager) { client, _ in
                _ = try await client.getJSON().ok.body.json
                _ = try await client.headGet().ok
                await recorder.wait(for: 2)
            }
            let spans = tracer.finishedSpans
            #expect(Set(spans.map(\.operationName)) == ["getJSON", "getJSON hop", "headGet", "headGet hop"])
            let span = try #require(spans.first { $0.operationName == "getJSON" })
            #expect(span.attributes["courier.operation"]?.toSpanAttribute() == .string("getJSON"))
            #expect(span.attributes["http.request.method"]?.toSpanAttribute() == .string("GET"))
            let operations = records.withLockedValue { $0 }.compactMap { $0["courier-operation"]?.description }
            #expect(Set(operations) == ["getJSON", "headGet"])
            #expect(records.withLockedValue { $0 }.allSatisfy { $0["courier-task-id"] != nil })
            #expect(recorder.metrics.map(\.operationName) == ["getJSON", "headGet"])
        }
    }

    @Test("The request path and query are joined to the server URL, whose own path is kept and whose query and fragment are not")
    func urls() throws {
        func join(_ base: String, _ path: String) throws -> String {
            try CourierTransport.url(HTTPRequest(method: .get, scheme: nil, authority: nil, path: path), baseURL: URL(string: base)!).absoluteString
        }
        #expect(try join("http://127.0.0.1:8080", "/get?show=a%20b") == "http://127.0.0.1:8080/get?show=a%20b")
        #expect(try join("http://127.0.0.1:8080/", "/get") == "http://127.0.0.1:8080/get")
        #expect(try join("https://api.example.com/v1", "/pets/%7Bid%7D") == "https://api.example.com/v1/pets/%7Bid%7D")
        #expect(try join("https://api.example.com/v1/", "/pets?limit=2&tag=x") == "https://api.example.com/v1/pets?limit=2&tag=x")
        #expect(try join("https://api.example.com/v1?key=1#top", "/pets") == "https://api.example.com/v1/pets")
        #expect(try join("https://api.example.com/v1", "/pets?tag=x#part") == "https://api.example.com/v1/pets?tag=x")
        #expect(try join("https://api.example.com", "") == "https://api.example.com")
        let error = try #require(throws: CourierError.self) { try join("file:///tmp", "/get") }
        #expect(error.code == .invalidURL)
        // A character a URL cannot hold is percent-encoded (the runtime encodes what it puts in a path).
        #expect(try join("http://127.0.0.1:8080", "/a b") == "http://127.0.0.1:8080/a%20b")
        let noHost = try #require(throws: CourierError.self) { try join("http://127.0.0.1:8080", "pets") }
        #expect(noHost.code == .invalidURL)
    }

    @Test("Per-operation options over the transport's: the timeout of one operation, the rest unchanged")
    func options() {
        var configuration = CourierTransport.Configuration()
        configuration.options = RequestOptions(timeoutInterval: 30, httpShouldHandleCookies: false)
        configuration.operationOptions["upload"] = RequestOptions(timeoutInterval: 300)
        #expect(configuration.options(for: "upload") == RequestOptions(timeoutInterval: 300, httpShouldHandleCookies: false))
        #expect(configuration.options(for: "getJSON") == configuration.options)
    }

    @Test("The Courier request: method, fields, options and operation name; small replayable bodies as bytes, larger ones replayable streams, single-pass ones one-shot streams")
    func requests() async throws {
        var configuration = CourierTransport.Configuration()
        configuration.operationOptions["upload"] = RequestOptions(timeoutInterval: 300)
        let manager = SessionManager()
        defer { manager.invalidate(cancelingTasks: true) }
        let transport = CourierTransport(manager: manager, configuration: configuration)
        var head = HTTPRequest(method: .put, scheme: nil, authority: nil, path: "/courier/upload")
        head.headerFields[.contentType] = "application/octet-stream"
        let base = URL(string: "http://127.0.0.1:8080")!

        let small = try await transport.courierRequest(head, body: HTTPBody("small"), baseURL: base, operationID: "upload")
        #expect(small.method == .put)
        #expect(small.url.absoluteString == "http://127.0.0.1:8080/courier/upload")
        #expect(small.headerFields[.contentType] == "application/octet-stream")
        #expect(small.operationName == "upload")
        #expect(small.options.timeoutInterval == 300)
        #expect(small.body.data == Data("small".utf8))

        let large = [UInt8](repeating: 7, count: 100_000)
        let replayable = try await transport.courierRequest(head, body: HTTPBody(large), baseURL: base, operationID: "upload")
        #expect(replayable.body.data == nil)
        #expect(replayable.body.isReplayable)
        #expect(replayable.body.knownLength == 100_000)

        let once = HTTPBody(PatternChunks(count: 10), length: .unknown, iterationBehavior: .single)
        let oneShot = try await transport.courierRequest(head, body: once, baseURL: base, operationID: "other")
        #expect(!oneShot.body.isReplayable)
        #expect(oneShot.body.knownLength == nil)
        #expect(oneShot.options.timeoutInterval == nil)

        let none = try await transport.courierRequest(head, body: nil, baseURL: base, operationID: "other")
        #expect(none.body.isEmpty)
    }
}
