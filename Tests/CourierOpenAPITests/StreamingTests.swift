import Courier
import CourierOpenAPI
import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import OpenAPIRuntime
import Testing

/// Bodies streamed both ways through the generated client, against TestServer's routes that
/// count what they get (`/courier/upload`) and write only as the client reads (`/courier/big`).
@Suite("CourierTransport streams request and response bodies")
struct StreamingTests {
    @Test(
        "A single-pass upload of 8 MiB arrives whole: with its Content-Length when the length is known, chunked when not",
        arguments: [true, false])
    func streamedUpload(knownLength: Bool) async throws {
        try await Peer.testServer.withClient { client, _ in
            let count = 8 << 20
            let made = NIOLockedValueBox(0)
            let chunks = PatternChunks(count: count, made: made)
            let body = HTTPBody(chunks, length: knownLength ? .known(Int64(count)) : .unknown, iterationBehavior: .single)
            let receipt = try await client.upload(body: .binary(body)).ok.body.json
            #expect(receipt.size == Int64(count))
            #expect(receipt.crc32 == patternCRC(count: count))
            #expect(receipt.chunked == !knownLength)
            #expect(receipt.method == "PUT")
            #expect(made.withLockedValue { $0 } == count / (64 * 1024), "each chunk made once, as it was sent")
        }
    }

    @Test("A 32 MiB download is read as it arrives: the server is held back while the reader waits, then the rest comes")
    func downloadWithBackPressure() async throws {
        try await TestServer.withServer { server in
            try await withGeneratedClient(baseURL: server.baseURL) { client, _ in
                let count = 32 << 20
                let body = try await client.bigDownload(path: .init(n: Int64(count))).ok.body.binary
                #expect(body.length == .known(Int64(count)))
                var iterator = body.makeAsyncIterator()
                var received = try #require(try await iterator.next()).count

                // The event: the server's response waits for writability and has written nothing
                // since the last look. Then it may write only a little more while nothing is read.
                var settled = false
                var last = -1
                // A hang guard (a full CI run held every test for about 36 s), not a pause.
                let deadline = ContinuousClock.now + .seconds(120)
                while !settled, ContinuousClock.now < deadline {
                    let written = server.streamedBodyBytesWritten
                    settled = server.streamedResponsesWaitingForWritability == 1 && written == last
                    last = written
                    if !settled { try await Task.sleep(for: .milliseconds(100)) }
                }
                #expect(settled, "the server's writes wait for the reader")
                #expect(server.streamedBodyBytesWritten < count / 2, "held back: \(server.streamedBodyBytesWritten) of \(count) bytes written")

                while let chunk = try await iterator.next() { received += chunk.count }
                #expect(received == count)
                #expect(server.streamedResponsesWaitingForWritability == 0)
            }
        }
    }

    @Test("A body the runtime can iterate again is sent again after a 307; a single-pass one gets the 307 itself rather than go out empty")
    func replayableBodyFollowsRedirect() async throws {
        try await TestServer.withServer { server in
            let attempts = NIOLockedValueBox<[Int]>([])
            server.route("/courier/upload", methods: [.put]) { request in
                let attempt = attempts.withLockedValue { $0.append(request.body.count); return $0.count }
                guard attempt.isMultiple(of: 2) else {
                    return TestServer.Response(status: .temporaryRedirect, headerFields: [.location: "/courier/upload?again=1"])
                }
                var crc = CRC32()
                crc.update(request.body)
                return .json(#"{"size": \#(request.body.count), "crc32": "\#(crc.hex)", "chunked": false, "method": "PUT"}"#)
            }
            try await withGeneratedClient(baseURL: server.baseURL) { client, _ in
                // 256 KiB in memory: over the collected-body limit, so sent as a replayable stream.
                let bytes = PatternChunks.bytes(from: 0, to: 256 << 10)
                let receipt = try await client.upload(body: .binary(HTTPBody(bytes))).ok.body.json
                #expect(receipt.size == Int64(bytes.count))
                #expect(receipt.crc32 == patternCRC(count: bytes.count))
                #expect(attempts.withLockedValue { $0 } == [bytes.count, bytes.count])

                let once = HTTPBody(PatternChunks(count: bytes.count), length: .known(Int64(bytes.count)), iterationBehavior: .single)
                let output = try await client.upload(body: .binary(once))
                guard case .undocumented(statusCode: 307, _) = output else {
                    Issue.record("a single-pass body followed a 307: \(output)")
                    return
                }
                #expect(attempts.withLockedValue { $0.count } == 3, "the redirect is not followed with an empty body")
            }
        }
    }

    @Test("RetryPolicy retries a 503 before the generated client sees it, resending a body the runtime can iterate again; a single-pass body's 503 is the answer")
    func retriedStatus() async throws {
        try await TestServer.withServer { server in
            let attempts = NIOLockedValueBox<[Int]>([])
            server.route("/courier/upload", methods: [.put]) { request in
                let attempt = attempts.withLockedValue { $0.append(request.body.count); return $0.count }
                guard attempt.isMultiple(of: 2) else { return .text("busy", status: .serviceUnavailable) }
                var crc = CRC32()
                crc.update(request.body)
                return .json(#"{"size": \#(request.body.count), "crc32": "\#(crc.hex)", "chunked": false, "method": "PUT"}"#)
            }
            let manager = SessionManager()
            var policy = RetryPolicy(retryLimit: 1)
            policy.initialBackoff = .zero
            manager.interceptor = policy
            try await withGeneratedClient(baseURL: server.baseURL, manager: manager) { client, _ in
                let bytes = PatternChunks.bytes(from: 0, to: 256 << 10)
                let receipt = try await client.upload(body: .binary(HTTPBody(bytes))).ok.body.json
                #expect(receipt.size == Int64(bytes.count))
                #expect(receipt.crc32 == patternCRC(count: bytes.count))
                #expect(attempts.withLockedValue { $0 } == [bytes.count, bytes.count])

                let once = HTTPBody(PatternChunks(count: bytes.count), length: .known(Int64(bytes.count)), iterationBehavior: .single)
                let output = try await client.upload(body: .binary(once))
                guard case .undocumented(statusCode: 503, let payload) = output else {
                    Issue.record("a single-pass body was retried: \(output)")
                    return
                }
                let text = try await String(collecting: try #require(payload.body), upTo: 1024)
                #expect(text == "busy")
                #expect(attempts.withLockedValue { $0.count } == 3)
            }
        }
    }

    @Test("A small response is read whole before the call returns, unless the request body streams (it may be written in answer)")
    func smallResponsesAreReadWholeUnlessTheRequestStreams() async throws {
        try await TestServer.withServer { server in
            try await withGeneratedClient(baseURL: server.baseURL) { _, manager in
                let transport = CourierTransport(manager: manager)
                // Five bytes with `Content-Length: 5`, held back after the head until the test
                // has seen the call return (a body dripped over time could arrive with the head on
                // a starved machine).
                let (gate, release) = AsyncStream<Void>.makeStream()
                server.route("/held") { _ in
                    TestServer.Response(body: Data("*****".utf8)) { for await _ in gate { break } }
                }
                let held = HTTPRequest(method: .put, scheme: nil, authority: nil, path: "/held")

                let single = HTTPBody(AsyncStream { $0.yield(ArraySlice("abc".utf8)); $0.finish() }, length: .known(3), iterationBehavior: .single)
                let (streamedHead, streamedBody) = try await transport.send(held, body: single, baseURL: server.baseURL, operationID: "held")
                #expect(streamedHead.status == .ok)
                #expect(manager.tasks.count == 1, "the call returned at the head; its task still reads the body")
                release.yield()
                release.finish()
                #expect(try await Data(collecting: try #require(streamedBody), upTo: 100) == Data("*****".utf8))
                #expect(manager.tasks.isEmpty, "the body ended with the task")

                let quick = HTTPRequest(method: .put, scheme: nil, authority: nil, path: "/drip?numbytes=5&duration=0.2&delay=0")
                let (head, body) = try await transport.send(quick, body: HTTPBody(Array("abc".utf8)), baseURL: server.baseURL, operationID: "drip")
                #expect(head.status == .ok)
                #expect(manager.tasks.isEmpty, "a request sent as bytes: the small body was read whole first")
                #expect(try await Data(collecting: try #require(body), upTo: 100) == Data("*****".utf8))
            }
        }
    }
}
