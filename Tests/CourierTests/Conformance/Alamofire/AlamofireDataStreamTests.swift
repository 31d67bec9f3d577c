import Courier
import CourierTesting
import Dispatch
import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import Testing

/// Twins of Alamofire's `Tests/DataStreamTests.swift`, against TestServer.
///
/// Alamofire's `DataStreamRequest` hands each piece of the body to closures on a queue; Courier's
/// `stream(_:)` returns once the response head is in, with the body as an `AsyncSequence` of
/// chunks read on the caller's task (back-pressure: the connection stops reading while chunks
/// wait). So there is no queue to choose and one consumer per stream; the stream's `task` cancels
/// it; `onHTTPResponse` is the manager's `dataTaskDidReceiveResponse` hook, and a redirect is
/// steered by `taskWillPerformHTTPRedirection`. Alamofire's `.complete` event is the end of the
/// iteration (or the error it throws) and the task's `.taskDidComplete` notification.
@Suite("Conformance: Alamofire DataStreamTests")
struct AlamofireDataStreamConformanceTests {
    static func withManager<T>(_ body: (HTTPSessionManager, TestServer) async throws -> T) async throws -> T {
        try await withTestServer { server in
            try await CourierTests.withManager(baseURL: server.baseURL) { manager in try await body(manager, server) }
        }
    }

    /// Every chunk of a stream, read to its end.
    static func chunks(of stream: DataStreamResponse) async throws -> [ByteBuffer] {
        var chunks: [ByteBuffer] = []
        for try await chunk in stream.body { chunks.append(chunk) }
        return chunks
    }

    /// The hook's responses, recorded in the order they came.
    static func recordResponses(_ manager: SessionManager, disposition: ResponseDisposition = .allow) -> Recorder<HTTPResponse> {
        let responses = Recorder<HTTPResponse>()
        manager.hooks.dataTaskDidReceiveResponse = { _, _, response in
            responses.append(response)
            return disposition
        }
        return responses
    }

    /// Streams `/bytes/{count}`: the hook saw the head first, the chunks add up, the task completes.
    static func streamBytes(_ count: Int) async throws {
        try await Self.withManager { manager, server in
            let heads = Self.recordResponses(manager)
            let log = TaskNotificationLog()
            let stream = try await manager.stream(Request(url: server.url("/bytes/\(count)")))
            #expect(heads.all == [stream.response])
            let chunks = try await Self.chunks(of: stream)
            #expect(stream.response.status == .ok)
            #expect(chunks.reduce(0) { $0 + $1.readableBytes } == count)
            #expect(await log.wait(for: .taskDidComplete, of: stream.task))
            #expect(stream.task.error == nil)
        }
    }

    /// Differs: there is no queue to stream on: the body is an `AsyncSequence` read on the
    /// caller's task (here, the test's); the twin checks what arrives.
    @Test func testThatDataCanBeStreamedOnMainQueue() async throws {
        try await Self.streamBytes(5)
    }

    /// Differs: as `testThatDataCanBeStreamedOnMainQueue`: no queue to choose.
    @Test func testThatDataCanBeStreamedOnArbitraryQueue() async throws {
        try await Self.streamBytes(5)
    }

    /// Differs: a chunk is what one read of the connection brought: bytes the server wrote apart
    /// may arrive together and come as one chunk (Alamofire's test expects one callback per
    /// byte of a chunked body). The twin drips five bytes and checks that they all come, in order.
    @Test func testThatDataCanBeStreamedByByte() async throws {
        try await Self.withManager { manager, server in
            let stream = try await manager.stream(Request(url: server.url("/drip?numbytes=5&duration=0.5&delay=0")))
            let chunks = try await Self.chunks(of: stream)
            #expect((1...5).contains(chunks.count))
            #expect(chunks.reduce(0) { $0 + $1.readableBytes } == 5)
            #expect(stream.response.status == .ok)
        }
    }

    @Test func testThatDataCanBeStreamedFromURL() async throws {
        try await Self.streamBytes(1)
    }

    /// Leaving the loop by throwing stops the stream: the request is cancelled.
    @Test func testThatDataStreamIsAutomaticallyCanceledOnStreamClosureError() async throws {
        struct LocalError: Error {}
        try await Self.withManager { manager, server in
            let log = TaskNotificationLog()
            let stream = try await manager.stream(Request(url: server.url("/courier/slow-body/1200?interval=0.05")))
            await #expect(throws: LocalError.self) {
                for try await _ in stream.body { throw LocalError() }
            }
            #expect(await log.wait(for: .taskDidComplete, of: stream.task))
            #expect(stream.task.error?.code == .cancelled)
            #expect(stream.response.status == .ok)
        }
    }

    /// Cancelled while reading: the iteration throws `.cancelled`.
    static func cancelWhileReading(_ cancel: @escaping @Sendable (DataTask) -> Void) async throws {
        try await Self.withManager { manager, server in
            let log = TaskNotificationLog()
            let stream = try await manager.stream(Request(url: server.url("/courier/slow-body/1200?interval=0.05")))
            var chunks = 0
            let error = await #expect(throws: CourierError.self) {
                for try await _ in stream.body {
                    chunks += 1
                    if chunks == 1 { cancel(stream.task) }
                }
            }
            #expect(error?.code == .cancelled)
            #expect(chunks >= 1 && chunks < 1200)
            #expect(await log.wait(for: .taskDidComplete, of: stream.task))
            #expect(stream.task.error?.code == .cancelled)
        }
    }

    @Test func testThatDataStreamCanBeCancelledInClosure() async throws {
        try await Self.cancelWhileReading { $0.cancel() }
    }

    /// Alamofire's token is a handle that cancels the stream from its closure; Courier's is the
    /// stream's task, here cancelled from another thread.
    @Test func testThatDataStreamCanBeCancelledByToken() async throws {
        try await Self.cancelWhileReading { task in DispatchQueue.global().async { task.cancel() } }
    }

    @Test func testThatOnHTTPResponseCanContinueStream() async throws {
        try await Self.withManager { manager, server in
            let heads = Self.recordResponses(manager, disposition: .allow)
            let stream = try await manager.stream(Request(url: server.url("/bytes/5")))
            let chunks = try await Self.chunks(of: stream)
            #expect(heads.all == [stream.response])
            #expect(chunks.reduce(0) { $0 + $1.readableBytes } == 5)
        }
    }

    /// Cancelled on its head, a stream yields no body: `stream(_:)` throws `.cancelled` with the
    /// response attached.
    @Test func testThatOnHTTPResponseCanCancelStream() async throws {
        try await Self.withManager { manager, server in
            let heads = Self.recordResponses(manager, disposition: .cancel)
            let error = await #expect(throws: CourierError.self) {
                _ = try await manager.stream(Request(url: server.url("/bytes/5")))
            }
            #expect(error?.code == .cancelled)
            #expect(error?.response?.status == .ok)
            #expect(heads.all.count == 1)
            #expect(error?.response == heads.all.first)
        }
    }

    // MARK: Integration

    /// Differs: a stream's status is not validated (there is no `validate()` on a stream): the
    /// caller reads `response.status` and decides. Alamofire's validated stream completes with an
    /// unacceptable-status error.
    @Test func testThatDataStreamCanFailValidation() async throws {
        try await Self.withManager { manager, server in
            let stream = try await manager.stream(Request(url: server.url("/status/401")))
            #expect(stream.response.status.code == 401)
            let chunks = try await Self.chunks(of: stream)
            #expect(chunks.allSatisfy { $0.readableBytes == 0 })
        }
    }

    /// The redirect hook sends the stream elsewhere: `/status/301` becomes `/stream/1`, whose
    /// line of JSON decodes.
    @Test func testThatDataStreamCanBeRedirected() async throws {
        try await Self.withManager { manager, server in
            let redirected = Recorder<Int>()
            manager.hooks.taskWillPerformHTTPRedirection = { _, _, response, proposed in
                redirected.append(response.status.code)
                var changed = proposed
                changed.url = server.url("/stream/1")
                return changed
            }
            let stream = try await manager.stream(Request(url: server.url("/status/301")))
            let data = Data(try await Self.chunks(of: stream).flatMap { $0.readableBytesView })
            #expect(redirected.all == [301])
            #expect(stream.request.url == server.url("/stream/1"))
            #expect(stream.response.status == .ok)
            #expect((try? JSONDecoder().decode(HTTPBinEchoResponse.self, from: data)) != nil)
        }
    }

    /// The body as an `InputStream` that `XMLParser` reads, on a queue (its reads block).
    @Test func testThatDataStreamRequestProducesWorkingInputStream() async throws {
        try await Self.withManager { manager, server in
            let stream = try await manager.stream(Request(url: server.url("/xml")))
            let input = QueueHandOff(stream.inputStream())
            let (parsed, error) = await withCheckedContinuation { done in
                DispatchQueue.global().async {
                    let parser = XMLParser(stream: input.value)
                    let parsed = parser.parse()
                    done.resume(returning: (parsed, parser.parserError.map { "\($0)" }))
                }
            }
            #expect(parsed)
            #expect(error == nil)
        }
    }

    /// A stream made suspended (Alamofire's session with `startRequestsImmediately` false) is
    /// `streamTask(with:events:)`: nothing goes before `resume()`; then the head, the body and
    /// the completion come on the completion queue.
    @Test func testThatDataStreamCanBeManuallyResumed() async throws {
        try await Self.withManager { manager, server in
            let events = Recorder<DataStreamEvent>()
            let task = manager.streamTask(with: Request(url: server.url("/bytes/1000"))) { events.append($0) }
            #expect(task.state == .suspended && server.requestCount == 0)
            task.resume()
            #expect(await events.wait { if case .completion = $0.last { return true } else { return false } })
            var head: HTTPResponse?
            var received = 0
            var completion: CourierError??
            for event in events.all {
                switch event {
                case .response(let response): head = response
                case .data(let piece): received += piece.count
                case .completion(let error): completion = .some(error)
                }
            }
            #expect(head?.status == .ok)
            #expect(received == 1000)
            #expect(completion == .some(nil))
        }
    }

    /// The request's cacher is offered the stream's response, its body whole, once the body has
    /// ended (a `.modify` that stores nothing, as Alamofire's); the line of JSON decodes.
    @Test func testThatDataStreamCallsCachedResponseHandler() async throws {
        try await Self.withManager { manager, server in
            let offered = Recorder<CachedResponse>()
            var request = Request(url: server.url("/stream/1"))
            request.responseCacher = .modify { _, cached in
                offered.append(cached)
                return nil
            }
            let stream = try await manager.stream(request)
            typealias TestResponse = AlamofireDataStreamSerializerConformanceTests.TestResponse
            var values: [TestResponse] = []
            for try await value in stream.decoded(TestResponse.self) { values.append(value) }
            #expect(values.map(\.id) == [0])
            #expect(stream.response.status == .ok)
            #expect(offered.all.count == 1)
            #expect(offered.all.first.map { String(decoding: $0.data, as: UTF8.self).hasSuffix("}\n") } == true)
            #expect(manager.configuration.responseCache?.cachedResponse(for: request) == nil, "the cacher stored nothing")
        }
    }
}
