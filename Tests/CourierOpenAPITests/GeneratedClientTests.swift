import Courier
import CourierOpenAPI
import Foundation
import HTTPTypes
import OpenAPIRuntime
import Testing

/// The generated client (`Generated/`, from `Generated/openapi.yaml`) on ``CourierTransport``:
/// every operation TestServer and httpbin both answer, against each of them.
@Suite("A generated client on CourierTransport, against TestServer and httpbin")
struct GeneratedClientTests {
    @Test("GET with a query: the runtime's Accept goes out, the JSON comes back decoded", arguments: Peer.all)
    func getJSON(_ peer: Peer) async throws {
        try await peer.withClient { client, _ in
            let echo = try await client.getJSON(query: .init(show: "courier")).ok.body.json
            #expect(echo.args?.additionalProperties["show"] == "courier")
            #expect(echo.url.hasSuffix("/get?show=courier"))
            #expect(echo.headers.additionalProperties["Accept"] == "application/json")
        }
    }

    @Test("HEAD: the head without a body, and the task ends by itself rather than being cancelled", arguments: Peer.all)
    func head(_ peer: Peer) async throws {
        try await peer.withClient { client, manager in
            let recorder = CompletionRecorder(manager)
            let ok = try await client.headGet().ok
            #expect((ok.headers.contentLength ?? 0) > 0, "the length of the body a GET would get")
            await recorder.wait(for: 1)
            #expect(recorder.errors.count == 1)
            #expect(recorder.errors.first.map { $0 == nil } == true, "completed without an error: \(recorder.errors)")
        }
    }

    @Test("POST with a JSON body: sent with its Content-Length, echoed back and decoded", arguments: Peer.all)
    func postJSON(_ peer: Peer) async throws {
        try await peer.withClient { client, _ in
            let greeting = Components.Schemas.Greeting(name: "Ada", count: 3)
            let echo = try await client.postAnything(body: .json(greeting)).ok.body.json
            #expect(echo.method == "POST")
            #expect(echo.json == greeting)
            #expect(echo.headers.additionalProperties["Content-Type"] == "application/json; charset=utf-8")
            let length = try #require(echo.headers.additionalProperties["Content-Length"].flatMap { Int($0) })
            #expect(length == echo.data.utf8.count)
            #expect(echo.headers.additionalProperties["Transfer-Encoding"] == nil)
        }
    }

    @Test("PUT of an octet stream: an in-memory body and a single-pass stream of known length both arrive whole", arguments: Peer.all)
    func uploadEcho(_ peer: Peer) async throws {
        try await peer.withClient { client, _ in
            let inMemory = try await client.uploadEcho(body: .binary(HTTPBody("hello, courier"))).ok.body.json
            #expect(inMemory.data == "hello, courier")
            #expect(inMemory.method == "PUT")

            let parts = ["one ", "two ", "three"]
            let stream = AsyncThrowingStream<ArraySlice<UInt8>, any Error> { continuation in
                for part in parts { continuation.yield(ArraySlice(part.utf8)) }
                continuation.finish()
            }
            let length = parts.reduce(0) { $0 + $1.utf8.count }
            let body = HTTPBody(stream, length: .known(Int64(length)), iterationBehavior: .single)
            let streamed = try await client.uploadEcho(body: .binary(body)).ok.body.json
            #expect(streamed.data == "one two three")
            #expect(streamed.headers.additionalProperties["Content-Length"] == String(length))
        }
    }

    @Test("Binary downloads: /bytes has its Content-Length as the body's known length, /stream-bytes (chunked) an unknown one", arguments: Peer.all)
    func downloads(_ peer: Peer) async throws {
        try await peer.withClient { client, _ in
            let bytes = try await client.bytes(path: .init(n: 50_000)).ok.body.binary
            #expect(bytes.length == .known(50_000))
            #expect(try await [UInt8](collecting: bytes, upTo: 1 << 20).count == 50_000)

            let streamed = try await client.streamBytes(path: .init(n: 50_000)).ok.body.binary
            #expect(streamed.length == .unknown)
            var count = 0
            for try await chunk in streamed { count += chunk.count }
            #expect(count == 50_000)
        }
    }
}
