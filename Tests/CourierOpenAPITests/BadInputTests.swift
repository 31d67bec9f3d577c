import Courier
import CourierOpenAPI
import CourierTesting
import Foundation
import HTTPTypes
import OpenAPIRuntime
import Testing

/// What a generated call on ``CourierTransport`` throws when things go wrong: the runtime's
/// `ClientError`, with Courier's `CourierError` beneath wherever Courier failed.
@Suite("CourierTransport: failures keep Courier's typed error beneath the runtime's")
struct BadInputTests {
    @Test("A server nobody listens on: ClientError naming the operation, over CourierError.connectionFailed")
    func unreachable() async throws {
        // Port 1 on loopback: nothing listens there, so the connection is refused at once.
        try await withGeneratedClient(baseURL: URL(string: "http://127.0.0.1:1")!) { client, _ in
            let error = try await #require(throws: ClientError.self) { try await client.getJSON() }
            #expect(error.operationID == "getJSON")
            let courier = try #require(error.underlyingError as? CourierError, "\(error.underlyingError)")
            #expect(courier.code == .connectionFailed)
        }
    }

    @Test("A server URL a request cannot be made for: ClientError over CourierError.invalidURL, nothing sent")
    func invalidServerURL() async throws {
        try await withGeneratedClient(baseURL: URL(string: "file:///tmp")!) { client, manager in
            let error = try await #require(throws: ClientError.self) { try await client.getJSON() }
            let courier = try #require(error.underlyingError as? CourierError, "\(error.underlyingError)")
            #expect(courier.code == .invalidURL)
            #expect(manager.tasks.isEmpty)
        }
    }

    @Test("Cancelling the call while the server holds the response cancels the Courier task")
    func cancelledBeforeHead() async throws {
        try await TestServer.withServer { server in
            let arrived = Signal()
            let release = Signal()
            server.route("/get") { _ in
                arrived.fire()
                await release.wait()
                return .json(#"{"url": "late", "headers": {}}"#)
            }
            defer { release.fire() }
            try await withGeneratedClient(baseURL: server.baseURL) { client, manager in
                let recorder = CompletionRecorder(manager)
                let call = Task { try await client.getJSON() }
                await arrived.wait()
                call.cancel()
                let error = try await #require(throws: ClientError.self) { try await call.value }
                let courier = try #require(error.underlyingError as? CourierError, "\(error.underlyingError)")
                #expect(courier.code == .cancelled)
                await recorder.wait(for: 1)
                #expect(recorder.errors.first??.code == .cancelled)
            }
        }
    }

    @Test("Cancelling the reader of a streamed download mid-body cancels the Courier task, and the reader is told")
    func cancelledMidBody() async throws {
        try await TestServer.withServer { server in
            try await withGeneratedClient(baseURL: server.baseURL) { client, manager in
                let recorder = CompletionRecorder(manager)
                let firstChunk = Signal()
                let reader = Task {
                    let body = try await client.bigDownload(path: .init(n: 32 << 20)).ok.body.binary
                    var count = 0
                    for try await chunk in body {
                        count += chunk.count
                        firstChunk.fire()
                    }
                    return count
                }
                await firstChunk.wait()
                reader.cancel()
                let error = try await #require(throws: CourierError.self) { try await reader.value }
                #expect(error.code == .cancelled)
                await recorder.wait(for: 1)
                #expect(recorder.errors.first??.code == .cancelled)
            }
        }
    }

    @Test(
        "A request body stream that fails mid-upload fails the call with its own error beneath CourierError.bodyReadFailed, not a timeout",
        arguments: [true, false])
    func failingUpload(knownLength: Bool) async throws {
        try await TestServer.withServer { server in
            var configuration = CourierTransport.Configuration()
            // Long enough not to be what ends the call.
            configuration.options.timeoutInterval = 60
            try await withGeneratedClient(baseURL: server.baseURL, configuration: configuration) { client, _ in
                let failure = UploadStreamFailure(reason: "the source went away")
                let chunks = PatternChunks(count: 256 << 10, failure: failure)
                // A declared length beyond what the stream gives before failing: the server waits for the rest.
                let body = HTTPBody(chunks, length: knownLength ? .known(1 << 20) : .unknown, iterationBehavior: .single)
                let error = try await #require(throws: ClientError.self) { try await client.upload(body: .binary(body)) }
                #expect(error.operationID == "upload")
                let courier = try #require(error.underlyingError as? CourierError, "\(error.underlyingError)")
                #expect(courier.code == .bodyReadFailed)
                #expect(courier.underlyingError as? UploadStreamFailure == failure, "\(String(describing: courier.underlyingError))")
            }
        }
    }

    @Test(
        "A body that is not the document's JSON: the runtime's DecodingError beneath ClientError",
        arguments: [#"{"url": 42, "headers": {}}"#, "this is not JSON"])
    func undecodable(body: String) async throws {
        try await TestServer.withServer { server in
            server.route("/get") { _ in .json(body) }
            try await withGeneratedClient(baseURL: server.baseURL) { client, _ in
                let error = try await #require(throws: ClientError.self) { try await client.getJSON() }
                #expect(error.underlyingError is DecodingError, "\(error.underlyingError)")
                #expect(error.response?.status == .ok)
            }
        }
    }

    @Test("A JSON body cut short by the server: the CourierError of the body's stream beneath ClientError")
    func truncatedJSON() async throws {
        try await TestServer.withServer { server in
            try await withGeneratedClient(baseURL: server.baseURL) { client, _ in
                let error = try await #require(throws: ClientError.self) {
                    try await client.truncatedJSON(path: .init(n: 100), query: .init(_type: "application/json"))
                }
                let courier = try #require(error.underlyingError as? CourierError, "\(error.underlyingError)")
                #expect(courier.code == .connectionClosed)
            }
        }
    }

    @Test("An operation's own timeout ends it with CourierError.timedOut; the transport's other operations keep theirs")
    func operationTimeout() async throws {
        try await TestServer.withServer { server in
            let release = Signal()
            server.route("/get") { _ in
                await release.wait()
                return .json(#"{"url": "late", "headers": {}}"#)
            }
            defer { release.fire() }
            var configuration = CourierTransport.Configuration()
            configuration.options.timeoutInterval = 60
            configuration.operationOptions["getJSON"] = RequestOptions(timeoutInterval: 0.3)
            try await withGeneratedClient(baseURL: server.baseURL, configuration: configuration) { client, _ in
                let error = try await #require(throws: ClientError.self) { try await client.getJSON() }
                let courier = try #require(error.underlyingError as? CourierError, "\(error.underlyingError)")
                #expect(courier.code == .timedOut)
                #expect(courier.request?.options.timeoutInterval == 0.3)
                // Another operation keeps the transport's 60 s.
                let echo = try await client.postAnything(body: .json(.init(name: "Ada", count: 1))).ok.body.json
                #expect(echo.json?.name == "Ada")
            }
        }
    }
}
