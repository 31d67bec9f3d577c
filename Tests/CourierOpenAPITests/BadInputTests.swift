import Courier
import CourierOpenAPI
import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import OpenAPIRuntime
import Testing

/// What a generated call on ``CourierTransport`` throws when things go wrong: the runtime's
/// `ClientError`, with Courier's `CourierError` beneath wherever Courier failed.
@Suite("CourierTransport: failures keep Courier's typed error beneath the runtime's")
struct BadInputTests {
    /// The call fails with `CourierError.cancelled` beneath the runtime's `ClientError`, and so
    /// does the Courier task the recorder saw (when one is given).
    static func expectCancelled<T: Sendable>(
        _ call: Task<T, any Error>, recorder: CompletionRecorder?, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let error = try await #require(throws: ClientError.self, sourceLocation: sourceLocation) { try await call.value }
        let courier = try #require(error.underlyingError as? CourierError, "\(error.underlyingError)", sourceLocation: sourceLocation)
        #expect(courier.code == .cancelled, sourceLocation: sourceLocation)
        guard let recorder else { return }
        await recorder.wait(for: 1)
        #expect(recorder.errors.first??.code == .cancelled, sourceLocation: sourceLocation)
    }

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
                // A task of its own, so that the test can cancel the call before the head;
                // cancelled below and awaited by `expectCancelled`.
                let call = Task { try await client.getJSON() }
                #expect(await arrived.wait(), "the request never reached the server")
                call.cancel()
                try await Self.expectCancelled(call, recorder: recorder)
            }
        }
    }

    @Test("A call made from a task already cancelled fails with CourierError.cancelled beneath ClientError")
    func alreadyCancelled() async throws {
        try await TestServer.withServer { server in
            try await withGeneratedClient(baseURL: server.baseURL) { client, _ in
                // A task of its own, so that it can be cancelled before the call starts; it
                // cancels itself and `expectCancelled` awaits it.
                let call = Task {
                    withUnsafeCurrentTask { $0?.cancel() }
                    return try await client.postAnything(body: .json(.init(name: "Ada", count: 1)))
                }
                try await Self.expectCancelled(call, recorder: nil)
            }
        }
    }

    // The time limit only catches a hang (two minutes: a full CI run held every test for about 36 s).
    @Test(
        "Cancelling the call while its streamed request body waits for a chunk cancels the Courier task and stops reading the body",
        .timeLimit(.minutes(2)))
    func cancelledMidUpload() async throws {
        try await TestServer.withServer { server in
            try await withGeneratedClient(baseURL: server.baseURL) { client, manager in
                let recorder = CompletionRecorder(manager)
                let stalled = Signal()
                let released = Signal()
                let chunks = StallingChunks(stalled: stalled, released: released)
                let body = HTTPBody(chunks, length: .unknown, iterationBehavior: .single)
                // A task of its own, so that the test can cancel the call mid-upload; cancelled
                // below and awaited by `expectCancelled`.
                // A task of its own, so that the test cancels this call alone; it is awaited below,
                // and cancelled, so it ends with the test.
                let call = Task { try await client.upload(body: .binary(body)) }
                #expect(await stalled.wait(), "the body never stalled")
                call.cancel()
                try await Self.expectCancelled(call, recorder: recorder)
                // The wait for the next chunk was cancelled too, rather than left hanging (until
                // the time limit cancels the test).
                _ = await withTaskCancellationHandler { await released.wait() } onCancel: { released.fire() }
                #expect(chunks.wasReleased.withLockedValue { $0 }, "the body's wait for a chunk was left hanging")
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
                #expect(await firstChunk.wait(), "no chunk of the download arrived")
                reader.cancel()
                let error = try await #require(throws: CourierError.self) { try await reader.value }
                #expect(error.code == .cancelled)
                await recorder.wait(for: 1)
                #expect(recorder.errors.first??.code == .cancelled)
            }
        }
    }

    /// How a failing upload's `HTTPBody` is made, and so how the transport sends it.
    enum FailingUpload: String, CaseIterable, Sendable, CustomTestStringConvertible {
        /// Single-pass, of known length: a one-shot stream with a `Content-Length`.
        case singlePassKnownLength
        /// Single-pass, of unknown length: a one-shot chunked stream.
        case singlePassUnknownLength
        /// Iterable again, over the collected-body limit: a replayable stream.
        case replayableStream
        /// Iterable again, within the collected-body limit: collected before anything is sent.
        case collected

        var testDescription: String { self.rawValue }

        var body: HTTPBody {
            let failure = UploadStreamFailure(reason: "the source went away")
            // A declared length beyond what the stream gives before failing: the server waits for the rest.
            switch self {
            case .singlePassKnownLength:
                return HTTPBody(PatternChunks(count: 256 << 10, failure: failure), length: .known(1 << 20), iterationBehavior: .single)
            case .singlePassUnknownLength:
                return HTTPBody(PatternChunks(count: 256 << 10, failure: failure), length: .unknown, iterationBehavior: .single)
            case .replayableStream:
                return HTTPBody(PatternChunks(count: 256 << 10, failure: failure), length: .known(1 << 20), iterationBehavior: .multiple)
            case .collected:
                return HTTPBody(PatternChunks(count: 16 << 10, failure: failure), length: .known(32 << 10), iterationBehavior: .multiple)
            }
        }
    }

    @Test(
        "A request body stream that fails mid-upload fails the call with its own error beneath CourierError.bodyReadFailed, not a timeout",
        arguments: FailingUpload.allCases)
    func failingUpload(_ kind: FailingUpload) async throws {
        try await TestServer.withServer { server in
            var configuration = CourierTransport.Configuration()
            // Long enough not to be what ends the call.
            configuration.options.timeoutInterval = 60
            try await withGeneratedClient(baseURL: server.baseURL, configuration: configuration) { client, _ in
                let failure = UploadStreamFailure(reason: "the source went away")
                let error = try await #require(throws: ClientError.self) { try await client.upload(body: .binary(kind.body)) }
                #expect(error.operationID == "upload")
                let courier = try #require(error.underlyingError as? CourierError, "\(error.underlyingError)")
                #expect(courier.code == .bodyReadFailed)
                #expect(courier.underlyingError as? UploadStreamFailure == failure, "\(String(describing: courier.underlyingError))")
            }
        }
    }

    @Test(
        "A body the runtime can iterate again that gives fewer bytes than its length fails the call with CourierError.bodyReadFailed, collected or streamed; it is not sent short",
        arguments: [16 << 10, 128 << 10])
    func shortUpload(given: Int) async throws {
        try await TestServer.withServer { server in
            var configuration = CourierTransport.Configuration()
            // Long enough not to be what ends the call.
            configuration.options.timeoutInterval = 60
            try await withGeneratedClient(baseURL: server.baseURL, configuration: configuration) { client, _ in
                // Twice as long declared as given: 32 KiB within the collected-body limit (sent as
                // bytes), 256 KiB over it (a replayable stream).
                let body = HTTPBody(PatternChunks(count: given), length: .known(Int64(2 * given)), iterationBehavior: .multiple)
                let error = try await #require(throws: ClientError.self) { try await client.upload(body: .binary(body)) }
                let courier = try #require(error.underlyingError as? CourierError, "\(error.underlyingError)")
                #expect(courier.code == .bodyReadFailed, "\(courier)")
            }
        }
    }

    /// A body that waits until its reader is cancelled, and tells when it is first read.
    struct ChunksUntilCancelled: AsyncSequence, Sendable {
        typealias Element = ArraySlice<UInt8>
        let reading: Signal

        struct AsyncIterator: AsyncIteratorProtocol {
            let reading: Signal
            mutating func next() async throws -> ArraySlice<UInt8>? {
                self.reading.fire()
                // Waits for cancellation, with no timer: nothing is ever yielded, and the stream
                // is finished only after the loop, which only the reader's cancellation ends.
                let (never, continuation) = AsyncStream<Never>.makeStream()
                for await _ in never {}
                continuation.finish()
                throw CancellationError()
            }
        }

        func makeAsyncIterator() -> AsyncIterator { AsyncIterator(reading: self.reading) }
    }

    @Test("Cancelling a call while its small replayable request body is read ends it as cancelled, not as a body that failed")
    func cancelledWhileTheBodyIsGathered() async throws {
        try await TestServer.withServer { server in
            try await withGeneratedClient(baseURL: server.baseURL) { client, _ in
                let reading = Signal()
                let body = HTTPBody(ChunksUntilCancelled(reading: reading), length: .known(1024), iterationBehavior: .multiple)
                // A task of its own, so that the test cancels this call alone; it is awaited below,
                // and cancelled, so it ends with the test.
                let call = Task { try await client.upload(body: .binary(body)) }
                #expect(await reading.wait())
                call.cancel()
                let error = try await #require(throws: ClientError.self) { try await call.value }
                let courier = try #require(error.underlyingError as? CourierError, "\(error.underlyingError)")
                #expect(courier.code == .cancelled, "\(courier)")
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

    @Test(
        "A JSON body cut short by the server: the CourierError of the body's stream beneath ClientError, whether it was read whole before the call returned or streamed",
        arguments: [100, 100_000])
    func truncatedJSON(sent: Int) async throws {
        try await TestServer.withServer { server in
            try await withGeneratedClient(baseURL: server.baseURL) { client, _ in
                let error = try await #require(throws: ClientError.self) {
                    try await client.truncatedJSON(path: .init(n: sent), query: .init(_type: "application/json"))
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

/// One chunk, then a wait for the next that ends only when the reading task is cancelled.
struct StallingChunks: AsyncSequence, Sendable {
    typealias Element = ArraySlice<UInt8>
    typealias Failure = any Error

    /// Fired when the reader asks for the chunk that never comes.
    let stalled: Signal
    /// Fired when that wait was cancelled.
    let released: Signal
    /// Whether it was.
    let wasReleased = NIOLockedValueBox(false)

    struct AsyncIterator: AsyncIteratorProtocol {
        let sequence: StallingChunks
        var sentFirst = false

        mutating func next() async throws -> ArraySlice<UInt8>? {
            if !self.sentFirst {
                self.sentFirst = true
                return ArraySlice(repeating: 7, count: 1024)
            }
            let never = Signal()
            let stalled = self.sequence.stalled
            await withTaskCancellationHandler {
                stalled.fire()
                await never.wait()
            } onCancel: {
                never.fire()
            }
            // Released by the cancellation only: the wait's hang guard ends it too, uncancelled.
            if Task.isCancelled { self.sequence.wasReleased.withLockedValue { $0 = true } }
            self.sequence.released.fire()
            throw CancellationError()
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(sequence: self) }
}
