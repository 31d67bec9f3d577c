// Ported from OkHttp's okhttp/src/jvmTest/kotlin/okhttp3/internal/http2/HttpOverHttp2Test.kt
// (https://github.com/square/okhttp), Copyright (C) 2013 Square, Inc.,
// licensed under the Apache License, Version 2.0.

import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP2
import Testing

/// `HttpOverHttp2Test`'s cases of streams sharing a connection: flow control, cancellation,
/// resets, read timeouts.
extension OkHttpHTTP2Tests {
    /// The receive window Courier gives each stream (its `SETTINGS_INITIAL_WINDOW_SIZE`).
    static let streamWindow = 256 * 1024

    // MARK: Connection reuse and flow control

    // OkHttp: connectionReuse
    @Test func connectionReuse() async throws {
        try await Self.run({ index, _ in .respondPartlyThenHold(part: index == 0 ? "ABC" : "GHI", rest: index == 0 ? "DEF" : "JKL") }) {
            server, manager async throws in
            // Two responses open at once on one connection, read in turns.
            let first = try await manager.stream(Request(url: Self.url(server, "/r1")))
            let second = try await manager.stream(Request(url: Self.url(server, "/r1")))
            var firstBody = first.body.makeAsyncIterator()
            var secondBody = second.body.makeAsyncIterator()
            #expect(try await firstBody.next().map { String(buffer: $0) } == "ABC")
            #expect(try await secondBody.next().map { String(buffer: $0) } == "GHI")
            server.releaseHeld()
            #expect(try await firstBody.next().map { String(buffer: $0) } == "DEF")
            #expect(try await secondBody.next().map { String(buffer: $0) } == "JKL")
            #expect(try await firstBody.next() == nil)
            #expect(try await secondBody.next() == nil)
            #expect(server.connectionCount == 1)
            #expect(server.requests.map(\.connection) == [0, 0])
        }
    }

    /// A response far longer than its stream's window, unread until `stop` ends it: the server
    /// sends a window's worth at least and then waits; afterwards the connection carries another
    /// stream, and the server heard a RST_STREAM CANCEL.
    static func afterStoppingALongResponse(_ stop: @escaping @Sendable (DataStreamResponse) async throws -> Void) async throws {
        try await Self.run({ index, _ in index == 0 ? .respondCounted(bytes: 8 * 1024 * 1024 + 1) : .respond("abc") }) {
            server, manager async throws in
            let first = try await manager.stream(Request(url: Self.url(server)))
            #expect(
                await server.changes.wait { server.responseBodyBytesSent >= Self.streamWindow },
                "sent: \(server.responseBodyBytesSent)")
            try await stop(first)
            #expect(await server.changes.wait { server.resetsReceived == [.cancel] }, "\(server.resetsReceived)")
            #expect(server.responseBodyBytesSent < 8 * 1024 * 1024, "the unread body was not all sent")
            let second = try await Self.get(server, manager)
            #expect(Self.text(second) == "abc")
            #expect(server.connectionCount == 1)
            #expect(server.streamCount == 2)
        }
    }

    // OkHttp: connectionWindowUpdateAfterCanceling
    @Test func connectionWindowUpdateAfterCanceling() async throws {
        try await Self.afterStoppingALongResponse { first in
            first.task.cancel()
            // The body, read after the cancellation, fails: it did not complete.
            let error = await Self.failure(of: first.body)
            #expect(error?.code == .cancelled, "\(String(describing: error))")
        }
    }

    // OkHttp: connectionWindowUpdateOnClose
    @Test func connectionWindowUpdateOnClose() async throws {
        try await Self.afterStoppingALongResponse { first in
            // Closing the body: one chunk read, then the iteration stops.
            for try await _ in first.body { break }
        }
    }

    // OkHttp: concurrentRequestWithEmptyFlowControlWindow
    @Test func concurrentRequestWithEmptyFlowControlWindow() async throws {
        try await Self.run({ index, _ in index == 0 ? .respondCounted(bytes: Self.streamWindow) : .respond("abc") }) { server, manager async throws in
            let first = try await manager.stream(Request(url: Self.url(server)))
            #expect(first.response.headerFields[.contentLength] == String(Self.streamWindow))
            var firstBody = first.body.makeAsyncIterator()
            let chunk = try #require(try await firstBody.next())
            #expect(chunk.readableBytes > 0)
            #expect(await server.changes.wait { server.responseBodyBytesSent == Self.streamWindow }, "sent: \(server.responseBodyBytesSent)")
            // OkHttp's second response waits for the first to be closed: its connection window
            // is spent. Courier reopens the connection's window as data arrives (each stream's own
            // window is the back-pressure), so the second body comes whole at once.
            let second = try await Self.get(server, manager)
            #expect(second.response.status.code == 200)
            #expect(Self.text(second) == "abc")
            var rest = chunk.readableBytes
            while let next = try await firstBody.next() { rest += next.readableBytes }
            #expect(rest == Self.streamWindow)
            #expect(server.connectionCount == 1)
        }
    }

    /// Not in `HttpOverHttp2Test`: a download many times the stream and connection windows
    /// arrives whole, and an upload many times the server's windows goes whole.
    @Test func largeDownloadAndUploadAcrossManyWindows() async throws {
        let size = 6 * 1024 * 1024 + 7
        try await Self.run({ index, _ in index == 0 ? .respondCounted(bytes: size) : .respond("uploaded") }) { server, manager async throws in
            let download = try await Self.get(server, manager)
            #expect(download.value.count == size)
            #expect(download.value.allSatisfy { $0 == 0 })
            let upload = Data((0..<size).map { UInt8(truncatingIfNeeded: $0) })
            let response = try await manager.responseOfAnyStatus(for: Request(method: .put, url: Self.url(server), body: .data(upload)))
            #expect(Self.text(response) == "uploaded")
            #expect(server.requests.last?.body == Array(upload))
            #expect(server.connectionCount == 1)
        }
    }

    // MARK: Cancellation

    // OkHttp: cancelWithStreamNotCompleted
    @Test func cancelWithStreamNotCompleted() async throws {
        try await Self.run({ index, _ in index == 0 ? .respondPartlyThenHold(part: "", rest: "abc") : .respond("def") }) {
            server, manager async throws in
            let first = try await manager.stream(Request(url: Self.url(server)))
            first.task.cancel()
            #expect(await server.changes.wait { server.resetsReceived == [.cancel] }, "\(server.resetsReceived)")
            // The connection is kept, and works.
            let second = try await Self.get(server, manager)
            #expect(Self.text(second) == "def")
            #expect(server.connectionCount == 1)
            #expect(server.closedConnectionCount == 0)
        }
    }

    /// Sends a request the server holds and cancels it once the server has it.
    ///
    /// Should the request end before the server holds it (its connect timed out on a machine
    /// slowed down, say), the test fails at once with the request's result, rather than waiting
    /// out the hang guard of this step and of every later one.
    static func sendAndCancel(_ server: ScriptedHTTP2Server, _ manager: HTTPSessionManager, held: Int) async throws {
        let ended = NIOLockedValueBox(false)
        // A Task of its own: it is cancelled here, and awaited at once.
        let task = Task {
            defer {
                ended.withLockedValue { $0 = true }
                server.changes.signal()
            }
            return try await Self.get(server, manager)
        }
        #expect(await server.changes.wait { server.heldCount == held || ended.withLockedValue { $0 } }, "held: \(server.heldCount)")
        if server.heldCount != held {
            task.cancel()
            let result = await task.result
            try #require(server.heldCount == held, "the server never held request \(held); it ended: \(result)")
        }
        task.cancel()
        let error = await #expect(throws: CourierError.self) { try await task.value }
        #expect(error?.code == .cancelled, "\(String(describing: error))")
        #expect(await server.changes.wait { server.resetsReceived.count == held }, "\(server.resetsReceived)")
    }

    // OkHttp: recoverFromCancelReusesConnection
    @Test func recoverFromCancelReusesConnection() async throws {
        try await Self.run({ index, _ in index < 1 ? .hold("abc") : .respond("def") }) { server, manager async throws in
            try await Self.sendAndCancel(server, manager, held: 1)
            // The server answers the stream the client reset: the frames are dropped.
            server.releaseHeld()
            #expect(Self.text(try await Self.get(server, manager)) == "def")
            #expect(server.connectionCount == 1)
            #expect(server.requests.map(\.connection) == [0, 0])
        }
    }

    // OkHttp: recoverFromMultipleCancelReusesConnection
    @Test func recoverFromMultipleCancelReusesConnection() async throws {
        try await Self.run({ index, _ in index < 2 ? .hold(index == 0 ? "abc" : "def") : .respond("ghi") }) { server, manager async throws in
            try await Self.sendAndCancel(server, manager, held: 1)
            try await Self.sendAndCancel(server, manager, held: 2)
            server.releaseHeld()
            #expect(Self.text(try await Self.get(server, manager)) == "ghi")
            #expect(server.connectionCount == 1)
            #expect(server.resetsReceived == [.cancel, .cancel])
        }
    }

    /// A stream that runs out of its request timeout is reset (`CANCEL`) while its connection
    /// carries another: the server learns that nobody waits for the answer any longer. (The
    /// connection then takes no new stream, and closes once its other streams end: only an idle
    /// connection is pinged, so a timeout is all Courier knows of a server that stopped answering.)
    @Test func aStreamThatTimesOutIsResetWhileItsConnectionCarriesAnother() async throws {
        try await Self.run({ index, _ in index < 2 ? .hold(index == 0 ? "other" : "late") : .respond("next") }) { server, manager async throws in
            // The first stream, held until the end (an `async let`: cancelled and awaited should
            // the test end early).
            async let other = Self.get(server, manager)
            #expect(await server.changes.wait { server.heldCount == 1 })
            let error = await #expect(throws: CourierError.self) { try await Self.get(server, manager, timeout: 0.5) }
            #expect(error?.code == .timedOut, "\(String(describing: error))")
            #expect(await server.changes.wait { server.resetsReceived == [.cancel] }, "\(server.resetsReceived)")
            server.releaseHeld()
            #expect(Self.text(try await other) == "other")
            #expect(Self.text(try await Self.get(server, manager)) == "next")
        }
    }

    // OkHttp: cancelWhileWritingRequestBodySendsCancelToServer
    @Test func cancelWhileWritingRequestBodySendsCancelToServer() async throws {
        try await Self.run({ _, _ in .answer(status: 200) }) { server, manager async throws in
            let task = OneShotTaskBox()
            let body = OkHttpCallTests.StepwiseBody(steps: [
                {
                    // The body's first pull: the request's HEADERS went out.
                    task.cancel()
                    try await untilCancelled()
                }
            ])
            var request = Request(method: .post, url: Self.url(server), body: .stream(body, length: .unknown))
            request.headerFields[.contentType] = "text/plain; charset=utf-8"
            // A Task of its own: the body's first pull cancels it; awaited at once.
            task.set(Task { try await manager.responseOfAnyStatus(for: request) })
            let error = await #expect(throws: CourierError.self) { try await task.value() }
            #expect(error?.code == .cancelled, "\(String(describing: error))")
            #expect(await server.changes.wait { server.resetsReceived == [.cancel] }, "\(server.resetsReceived)")
        }
    }

    // MARK: Resets

    // OkHttp: noRecoveryFromOneRefusedStream
    // OkHttp: recoverFromRefusedStreamWhenAnotherRouteExists
    // OkHttp: connectionWithOneRefusedStreamIsPooled
    @Test func aRefusedStreamIsSentAgain() async throws {
        // OkHttp expects the request to fail with one route, and to go again on the same
        // connection when there are two. RFC 9113 8.7: REFUSED_STREAM says the request was not
        // processed, so Courier sends it again whatever the routes (a new connection), up to
        // `ResendRule.maximumUnprocessedResends` times.
        try await Self.run({ index, _ in index == 0 ? .reset(.refusedStream) : .respond("abc") }) { server, manager async throws in
            #expect(Self.text(try await Self.get(server, manager)) == "abc")
            #expect(server.streamCount == 2)
            let connections = server.connectionCount
            // The connection that carried the answer is kept for the next request.
            #expect(Self.text(try await Self.get(server, manager)) == "abc")
            #expect(server.connectionCount == connections)
        }
    }

    // OkHttp: noRecoveryWhenRoutesExhausted
    // OkHttp: noRecoveryFromTwoRefusedStreams
    // OkHttp: connectionWithTwoRefusedStreamsIsNotPooled
    // OkHttp: recoverFromMultipleRefusedStreamsRequiresNewConnection
    @Test func streamsRefusedSeveralTimesAreSentAgainUntilProcessed() async throws {
        // OkHttp gives up once its routes are exhausted (two or three refusals); Courier's bound
        // is `ResendRule.maximumUnprocessedResends` (HTTP2PoolTests covers reaching it).
        try await Self.run({ index, _ in index < 3 ? .reset(.refusedStream) : .respond("abc") }) { server, manager async throws in
            #expect(Self.text(try await Self.get(server, manager)) == "abc")
            #expect(server.streamCount == 4)
            #expect(Self.text(try await Self.get(server, manager)) == "abc")
            #expect(server.requests.last?.connection == server.requests.dropLast().last?.connection, "pooled")
        }
    }

    // OkHttp: recoverFromOneInternalErrorRequiresNewConnection
    // OkHttp: recoverFromOneCancelRequiresNewConnection
    // OkHttp: noRecoveryFromInternalErrorWithRetryDisabled
    // OkHttp: noRecoveryFromCancelWithRetryDisabled
    @Test(arguments: [NIOHTTP2.HTTP2ErrorCode.internalError, .cancel])
    func aStreamResetBeforeItsAnswerFails(_ code: NIOHTTP2.HTTP2ErrorCode) async throws {
        // OkHttp sends the request again on a new connection when it has another route. RFC 9113
        // 8.7: only REFUSED_STREAM and a GOAWAY guarantee the request was not processed; after
        // another reset it may have been, and Courier fails it, as OkHttp does with retries off.
        // The connection is kept.
        try await Self.run({ index, _ in index == 0 ? .reset(code) : .respond("abc") }) { server, manager async throws in
            let error = await OkHttpCallTests.failure { try await Self.get(server, manager) }
            #expect(error?.code == .connectionClosed, "\(String(describing: error))")
            #expect(server.streamCount == 1, "not sent again")
            #expect(Self.text(try await Self.get(server, manager)) == "abc")
            #expect(server.connectionCount == 1)
        }
    }

    /// Not in `HttpOverHttp2Test`: a request waiting for a stream (the server allows one at a
    /// time, the pool one connection) is cancelled before it gets one: it never reaches the
    /// server, and the connection serves the next.
    @Test func aRequestCancelledWhileWaitingForAStreamNeverGoesOut() async throws {
        let server = try await ScriptedHTTP2Server.start(maximumStreams: 1) { index, _ in index == 0 ? .hold("first") : .respond("third") }
        try await HTTP2PoolTests().withManager(server, connections: 1) { manager async throws in
            // Awaited below (cancelled with the scope if the test throws first).
            async let first = Self.get(server, manager)
            #expect(await server.changes.wait { server.heldCount == 1 })
            // A Task of its own: the test cancels it, and awaits it at once.
            let second = Task { try await Self.get(server, manager) }
            second.cancel()
            let error = await #expect(throws: CourierError.self) { try await second.value }
            #expect(error?.code == .cancelled, "\(String(describing: error))")
            server.releaseHeld()
            #expect(Self.text(try await first) == "first")
            #expect(Self.text(try await Self.get(server, manager)) == "third")
            #expect(server.streamCount == 2)
            #expect(server.connectionCount == 1)
        }
    }

    /// Not in `HttpOverHttp2Test`: a request that waits for a stream (the server allows one at
    /// a time, the pool one connection, and the one stream is held by the server) is not timed
    /// out by its 20 s `timeoutInterval` while it waits 21 s: by design it counts "from when its
    /// head goes out (connecting and waiting for a pooled connection excepted)"
    /// (`SessionConfiguration.timeoutIntervalForRequest`); only the resource deadline bounds the
    /// wait. URLSession's request timer, whose name Courier takes, runs from the task's start.
    /// (20 s, not less: once its head is out the request's own timer runs, and a full CI run held
    /// every test for about 36 s, where 7 s left too little margin; not 60 s, as the test waits
    /// longer than it.)
    @Test func aRequestWaitingForAStreamIsNotTimedOutByItsRequestTimeout() async throws {
        let server = try await ScriptedHTTP2Server.start(maximumStreams: 1) { index, _ in
            index == 0 ? .hold("slow") : .respond("waited")
        }
        try await HTTP2PoolTests().withManager(server, connections: 1) { manager async throws in
            // Held through the pause below: a timeout of its own far past it.
            var held = Request(url: Self.url(server, "/slow"))
            held.options.timeoutInterval = 120
            async let slow = manager.responseOfAnyStatus(for: held)
            #expect(await server.changes.wait { server.heldCount == 1 })
            var waiting = Request(url: Self.url(server, "/waiting"))
            waiting.options.timeoutInterval = 20
            async let waited = manager.responseOfAnyStatus(for: waiting)
            // Time passing is the subject: longer than the waiting request's timeout.
            try await Task.sleep(for: .seconds(21))
            server.releaseHeld()
            #expect(Self.text(try await slow) == "slow")
            #expect(Self.text(try await waited) == "waited")
            #expect(server.paths == ["/slow", "/waiting"])
        }
    }

    /// Not in `HttpOverHttp2Test`: a server that resets the stream mid-body, whatever the code
    /// (NO_ERROR too: RFC 9113 8.1 keeps a response only when its END_STREAM came first). The
    /// request fails (a body cut short is no response), and the connection carries the next one.
    @Test(arguments: [NIOHTTP2.HTTP2ErrorCode.internalError, .noError, .cancel])
    func aStreamResetMidResponseFails(_ code: NIOHTTP2.HTTP2ErrorCode) async throws {
        try await Self.run({ index, _ in index == 0 ? .respondPartlyThenReset(part: "abc", code: code) : .respond("next") }) {
            server, manager async throws in
            let error = await OkHttpCallTests.failure { try await Self.get(server, manager) }
            #expect(error?.code == .connectionClosed, "\(String(describing: error))")
            let streamed = try await manager.stream(Request(url: Self.url(server)))
            #expect(try await Self.read(streamed.body) == "next")
            #expect(server.connectionCount == 1)
        }
    }

    // MARK: Read timeouts

    // OkHttp: readResponseHeaderTimeout
    @Test func readResponseHeaderTimeout() async throws {
        try await Self.run({ index, _ in index == 0 ? .hold("late") : .respond("A") }) { server, manager async throws in
            let error = await OkHttpCallTests.failure { try await Self.get(server, manager, timeout: 0.5) }
            #expect(error?.code == .timedOut, "\(String(describing: error))")
            #expect(Self.text(try await Self.get(server, manager)) == "A")
            // OkHttp expects the same connection. Courier's connection whose stream timed out
            // takes no new stream (only an idle connection is pinged, so it may be dead) and
            // closes once its streams end: the second request opens another.
            #expect(server.connectionCount == 2)
            #expect(await server.changes.wait { server.closedConnectionCount == 1 }, "closed: \(server.closedConnectionCount)")
        }
    }

    // OkHttp: readTimeoutMoreGranularThanBodySize
    @Test func readTimeoutMoreGranularThanBodySize() async throws {
        // Forty-two chunks, one every 0.5 s: 20.5 s in all, more than the 20 s timeout, which
        // bounds each wait for bytes, not the whole body. (Each gap is a fortieth of the timeout:
        // a CI run stalled the machine past 3 s mid-body, as TransportTimeoutTests found, and a
        // full CI run held every test for about 36 s, where 7 s left too little margin; not 60 s,
        // as the body must take longer than the timeout.)
        let chunk = String(repeating: "y", count: 256)
        try await Self.run(configure: { $0.timeoutIntervalForRequest = 20 }, { _, _ in
            .respondSlowly(chunk: chunk, count: 42, interval: .milliseconds(500))
        }) { server, manager async throws in
            let started = ContinuousClock.now
            let response = try await Self.get(server, manager)
            #expect(Self.text(response) == String(repeating: chunk, count: 42))
            #expect(ContinuousClock.now - started > .seconds(20), "the body took longer than the timeout")
        }
    }

    // OkHttp: readTimeoutOnSlowConnection
    @Test func readTimeoutOnSlowConnection() async throws {
        let half = String(repeating: "y", count: 1024)
        try await Self.run({ index, _ in index == 0 ? .respondPartlyThenHold(part: half, rest: half) : .respond(half + half) }) {
            server, manager async throws in
            // 20 s: the head must come within it (it does at once, but the neighbouring suites on
            // two cores have delayed it past 0.5 s, a full parallel run past 2 s, and a full CI
            // run held every test for about 36 s); the body's rest never does, and the test waits
            // the timeout out, so not 60 s.
            let first = try await manager.stream(Self.request(server, timeout: 20))
            let error = await Self.failure(of: first.body)
            #expect(error?.code == .timedOut, "\(String(describing: error))")
            #expect(Self.text(try await Self.get(server, manager)) == half + half)
            // OkHttp expects the connection reused; Courier's connection whose stream timed out
            // takes no new stream (readResponseHeaderTimeout).
            #expect(server.connectionCount == 2)
        }
    }

    // OkHttp: connectionTimeout
    @Test func connectionTimeout() async throws {
        try await Self.run({ _, _ in .hold("A") }) { server, manager async throws in
            async let patient = Self.get(server, manager)
            #expect(await server.changes.wait { server.heldCount == 1 })
            var impatient = Request(url: Self.url(server))
            impatient.options.timeoutInterval = 0.3
            let error = await OkHttpCallTests.failure { try await manager.responseOfAnyStatus(for: impatient) }
            #expect(error?.code == .timedOut, "\(String(describing: error))")
            // The patient request's stream goes on, on the one connection.
            server.releaseHeld(andLater: true)
            #expect(Self.text(try await patient) == "A")
            #expect(server.connectionCount == 1)
            #expect(server.requests.map(\.connection) == [0, 0])
        }
    }

    // OkHttp: oneStreamTimeoutDoesNotBreakConnection
    @Test func oneStreamTimeoutEndsItsConnectionForNewStreams() async throws {
        // OkHttp expects all three calls on one connection (its PING after the timeout comes
        // back, so the connection is not degraded). Courier takes no new stream on a connection
        // whose stream timed out: the second and third go on a second connection.
        //
        // The connection is opened first, so that the timeout counts from the stream's start,
        // not from a TLS handshake that a loaded machine once took past it (the stream never
        // reached the server, and the next request was the one held). The script answers by
        // path, so that even then no request is held for ever.
        try await Self.run({ _, path in path == "/held" ? .hold("a") : .respond(String(path.dropFirst())) }) { server, manager async throws in
            #expect(Self.text(try await Self.get(server, manager, "/opened")) == "opened")
            let error = await OkHttpCallTests.failure { try await Self.get(server, manager, "/held", timeout: 1) }
            #expect(error?.code == .timedOut, "\(String(describing: error))")
            // The stream went out before its timeout's clock started; the server's loop may read
            // it after the timeout fired.
            #expect(await server.changes.wait { server.heldCount == 1 }, "held: \(server.heldCount)")
            #expect(Self.text(try await Self.get(server, manager, "/b")) == "b")
            #expect(Self.text(try await Self.get(server, manager, "/c")) == "c")
            #expect(server.connectionCount == 2)
            #expect(server.requests.map(\.connection) == [0, 0, 1, 1])
        }
    }
}

/// A task set after the closure that cancels it was made (a request body that cancels its own
/// request): a cancellation asked for before the task is set cancels it as it is set.
final class OneShotTaskBox: Sendable {
    private let state = NIOLockedValueBox<(task: Task<DataResponse<Data>, any Error>?, cancelled: Bool)>((nil, false))

    func set(_ task: Task<DataResponse<Data>, any Error>) {
        let cancelled = self.state.withLockedValue { state in
            state.task = task
            return state.cancelled
        }
        if cancelled { task.cancel() }
    }

    func cancel() {
        let task = self.state.withLockedValue { state in
            state.cancelled = true
            return state.task
        }
        task?.cancel()
    }

    func value() async throws -> DataResponse<Data> {
        guard let task = self.state.withLockedValue({ $0.task }) else { throw CancellationError() }
        return try await task.value
    }
}
