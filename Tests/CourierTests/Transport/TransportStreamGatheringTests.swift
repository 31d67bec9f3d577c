@testable import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOCore
import Testing

/// `stream(_:downloadProgress:gatheringBodiesUpTo:)` over every transport: a body whose
/// `Content-Length` is within the limit is read whole before the call returns and comes from
/// memory; a longer one streams from its head; one that turns out longer than announced
/// (decompressed) streams from where it went over; a failure before the body is whole is the
/// call's.
@Suite("Transport: streamed bodies read whole when small")
struct TransportStreamGatheringTests {
    /// Every chunk of a body, read to its end.
    static func chunks(of body: ResponseBodyStream) async throws -> [ByteBuffer] {
        var chunks: [ByteBuffer] = []
        for try await chunk in body { chunks.append(chunk) }
        return chunks
    }

    @Test(arguments: Transport.allCases)
    func aBodyWithinTheLimitIsWholeWhenTheCallReturnsAndOneOverItStreamsFromItsHead(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            // Five bytes dripped over 0.3 s after the head, with `Content-Length: 5`.
            let drip = server.url("/drip?numbytes=5&duration=0.3&delay=0")
            let gathered = try await manager.stream(Request(url: drip), gatheringBodiesUpTo: 5)
            #expect(gathered.task.state == .completed, "the call returned before the body was whole")
            #expect(gathered.response.status == .ok)
            #expect(try await Self.chunks(of: gathered.body) == [ByteBuffer(string: "*****")])

            // Over the limit, and dripped over 30 s: the call returns at the head, long before the
            // end, and the body streams (until the task is cancelled here).
            let slow = server.url("/drip?numbytes=5&duration=30&delay=0")
            let streamed = try await manager.stream(Request(url: slow), gatheringBodiesUpTo: 4)
            #expect(streamed.task.state == .running, "a body over the limit is not waited for")
            streamed.task.cancel()
            var failure: CourierError?
            do { _ = try await Self.chunks(of: streamed.body) } catch { failure = error as? CourierError }
            #expect(failure?.code == .cancelled)
        }
    }

    @Test(arguments: Transport.allCases)
    func aBodyLongerThanAnnouncedStreamsFromWhereItWentOverWithNothingLost(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            // Decompressed by the session: the body is longer than the `Content-Length` it came with.
            let whole = try await manager.stream(Request(url: server.url("/gzip")))
            let expected = try await Self.chunks(of: whole.body).reduce(into: ByteBuffer()) { $0.writeImmutableBuffer($1) }
            let announced = try #require(whole.response.expectedContentLength)
            try #require(Int64(expected.readableBytes) > announced, "the document must grow when decompressed")

            let stream = try await manager.stream(Request(url: server.url("/gzip")), gatheringBodiesUpTo: Int(announced))
            let body = try await Self.chunks(of: stream.body).reduce(into: ByteBuffer()) { $0.writeImmutableBuffer($1) }
            // The document names the request's headers, which are the same for both requests.
            #expect(body == expected)
        }
    }

    @Test(arguments: Transport.allCases)
    func cancellingTheCallWhileTheBodyIsGatheredCancelsTheTask(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            // Hooks are taken when a task is made: set before it.
            let heads = Recorder<HTTPResponse>()
            let tasks = Recorder<SessionTask>()
            manager.hooks.dataTaskDidReceiveResponse = { _, task, response in
                tasks.append(task)
                heads.append(response)
                return .allow
            }
            let changes = Changes.progressAndEnds(of: manager)
            // Within the limit, but dripped over 60 s: the call waits for the body. On a task of its
            // own so that the test can cancel it while it waits (that is the point); cancelled and
            // awaited below. The drip is long so that a stalled test process (CI has seen 12 s) still
            // cancels before the body is whole; cancelling ends the test at once.
            let call = Task {
                try await manager.stream(Request(url: server.url("/drip?numbytes=5&duration=60&delay=0")), gatheringBodiesUpTo: 5)
            }
            #expect(await heads.wait { $0.count == 1 }, "the head arrived")
            call.cancel()
            let error = await #expect(throws: CourierError.self) { try await call.value }
            #expect(error?.code == .cancelled)
            let task = try #require(tasks.all.first)
            #expect(await changes.wait { task.state == .completed })
            #expect(task.error?.code == .cancelled)
        }
    }

    @Test(arguments: Transport.allCases)
    func aFailureBeforeTheBodyIsWholeIsThrownByTheCall(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            let file = TestServer.GeneratedFile(length: 4096)
            let error = await #expect(throws: CourierError.self) {
                try await manager.stream(Request(url: server.url(file.path(["drop-after": "1000"]))), gatheringBodiesUpTo: 8192)
            }
            #expect(error?.code == .connectionClosed)
        }
    }
}

/// The sink itself, without I/O: what the caller is woken for, and what it reads.
@Suite("Streamed bodies: a small body gathered whole")
struct StreamGatheringSinkTests {
    /// What the caller reads once woken: every chunk of its body, to the end.
    static func body(of sink: ResponseStreamSink) async throws -> [ByteBuffer] {
        try await sink.waitForHead()
        return try await TransportStreamGatheringTests.chunks(of: #require(sink.takeBody()))
    }

    @Test func theCallerIsWokenAtTheEndOfAGatheredBodyAndReadsItFromMemory() async throws {
        let sink = ResponseStreamSink(gatheringUpTo: 100)
        sink.gatherBody()
        // On a task of its own so that this one can drive the sink meanwhile; awaited below, and
        // the sink's end (which this test always reaches) wakes it, so it cannot outlive the test.
        let caller = Task {
            try await sink.waitForHead()
            return sink.hasFinished
        }
        #expect(await eventually { sink.isWaitingForHead })
        #expect(sink.yield(ByteBuffer(string: "small ")))
        #expect(sink.yield(ByteBuffer(string: "body")))
        #expect(sink.isWaitingForHead, "a chunk of a gathered body does not wake the caller")
        #expect(!sink.wantsPause)
        sink.finish(with: nil)
        #expect(try await caller.value, "woken before the body was whole")
        #expect(!sink.madeSequence, "a body read from memory needs no sequence")
        var body = try #require(sink.takeBody()).makeAsyncIterator()
        #expect(try await body.next() == ByteBuffer(string: "small body"))
        #expect(try await body.next() == nil)
        #expect(sink.takeBody() == nil, "handed out once")
    }

    @Test func aGatheredBodyThatGoesOverTheLimitStreamsFromThereWithWhatCameFirst() async throws {
        let sink = ResponseStreamSink(gatheringUpTo: 8)
        sink.gatherBody()
        #expect(sink.yield(ByteBuffer(string: "12345")))
        #expect(sink.consumerHasHead, "the attempt that got the head is the caller's either way")
        #expect(!sink.madeSequence)
        #expect(sink.yield(ByteBuffer(string: "67890")))
        #expect(sink.madeSequence)
        // The caller is woken by the overflow, not by the end.
        try await sink.waitForHead()
        #expect(!sink.hasFinished)
        var body = try #require(sink.takeBody()).makeAsyncIterator()
        #expect(try await body.next() == ByteBuffer(string: "1234567890"))
        #expect(sink.yield(ByteBuffer(string: "abc")))
        #expect(try await body.next() == ByteBuffer(string: "abc"))
        sink.finish(with: nil)
        #expect(try await body.next() == nil)
    }

    @Test func aFailureWhileGatheringReachesTheCallerInsteadOfTheHead() async throws {
        let sink = ResponseStreamSink(gatheringUpTo: 100)
        sink.gatherBody()
        #expect(sink.yield(ByteBuffer(string: "part")))
        sink.finish(with: CourierError(.connectionClosed, "closed mid-body"))
        let error = await #expect(throws: CourierError.self) { try await sink.waitForHead() }
        #expect(error?.code == .connectionClosed)
        #expect(!sink.madeSequence)
    }

    @Test func aRetriedAttemptsHeldBodyIsNotPartOfTheNextAttemptsGatheredOne() async throws {
        let sink = ResponseStreamSink(gatheringUpTo: 100)
        sink.holdHead()
        guard case .held = sink.hold(ByteBuffer(string: "503 body")) else {
            Issue.record("a held head's chunk is held")
            return
        }
        // The retry's head, gathered.
        sink.gatherBody()
        guard case .notHolding = sink.hold(ByteBuffer(string: "ok")) else {
            Issue.record("the retry's head is not held")
            return
        }
        #expect(sink.yield(ByteBuffer(string: "ok")))
        sink.finish(with: nil)
        #expect(try await Self.body(of: sink) == [ByteBuffer(string: "ok")])
    }

    @Test func anEmptyGatheredBodyEndsAtOnce() async throws {
        let sink = ResponseStreamSink(gatheringUpTo: 100)
        sink.gatherBody()
        sink.finish(with: nil)
        #expect(try await Self.body(of: sink) == [])
    }

    @Test func aSinkThatStreamsFromTheHeadStillHasASequenceWhenTheBodyEndsBeforeItIsTaken() async throws {
        let sink = ResponseStreamSink(gatheringUpTo: 100)
        sink.headArrived()
        sink.finish(with: nil)
        #expect(try await Self.body(of: sink) == [])
    }
}
