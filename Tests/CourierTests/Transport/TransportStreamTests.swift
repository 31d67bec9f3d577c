import Courier
import CourierTesting
import Foundation
import NIOCore
import Testing

/// Server-sent events, and requests that run side by side.
@Suite("Transport: event streams and concurrency")
struct TransportStreamTests {
    @Test(arguments: Transport.allCases)
    func eventsArriveParsed(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            var events: [ServerSentEvent] = []
            for try await event in manager.eventStream(Request(url: server.url("/courier/sse?count=3&retry=40"))) {
                events.append(event)
                if events.count == 3 { break }
            }
            #expect(events == (1...3).map { ServerSentEvent(event: "tick", data: "event \($0)\nof 3", id: String($0), retry: .milliseconds(40)) })
        }
    }

    @Test(arguments: Transport.allCases, ["close-after", "drop-after"])
    func aLostEventStreamIsResumedWithLastEventID(_ transport: Transport, ending: String) async throws {
        try await transport.run { server, manager in
            var ids: [String] = []
            let stream = manager.eventStream(
                Request(url: server.url("/courier/sse?count=5&retry=20&\(ending)=2")),
                options: .init(retryDelay: .seconds(30)))
            for try await event in stream { ids.append(event.id ?? "?") }
            #expect(ids == ["1", "2", "3", "4", "5"], "no event lost or repeated")
            let sent = server.receivedRequests.map { $0.value(forHTTPHeaderField: "Last-Event-ID") }
            #expect(sent == [nil, "2", "4", "5"], "each reconnection names the last event; the server's 204 ends the stream")
            #expect(server.receivedRequests.allSatisfy { $0.value(forHTTPHeaderField: "Accept") == "text/event-stream" })
        }
    }

    /// An event that runs over `maximumEventSize` before its blank line fails the stream with a
    /// typed error once the events before it are read; the stream does not reconnect (it would
    /// ask for the same event again).
    @Test(arguments: Transport.allCases)
    func anEventOverTheLimitFailsTheStreamAfterTheEventsBeforeIt(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            server.route("/endless-event") { _ in
                let body = "id: 1\ndata: before\n\ndata: " + String(repeating: "x", count: 200_000) + "\n\n"
                return TestServer.Response(headerFields: [.contentType: "text/event-stream"], body: Data(body.utf8))
            }
            let stream = manager.eventStream(
                Request(url: server.url("/endless-event")), options: .init(retryDelay: .milliseconds(10), maximumEventSize: 64 << 10))
            var events: [ServerSentEvent] = []
            let error = await #expect(throws: CourierError.self) {
                for try await event in stream { events.append(event) }
            }
            #expect(events == [ServerSentEvent(data: "before", id: "1")])
            #expect(error?.code == .responseSerializationFailed)
            #expect(error?.description.contains("holds over 65536 bytes") == true, "\(error.map { "\($0)" } ?? "")")
            #expect(server.requestCount == 1, "no reconnection")
        }
    }

    /// A server's `retry:` of a day is waited at most `maximumRetryDelay`: the stream reconnects
    /// and reads on (it slept the day). The time limit is the hang guard: it counts from the
    /// test's start, which in a full run comes a minute or more before its cases get to run.
    @Test(.timeLimit(.minutes(5)), arguments: Transport.allCases)
    func aServersRetryIsWaitedAtMostTheMaximum(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            let stream = manager.eventStream(
                Request(url: server.url("/courier/sse?count=2&retry=86400000&close-after=1")),
                options: .init(maximumRetryDelay: .milliseconds(20)))
            var ids: [String] = []
            for try await event in stream { ids.append(event.id ?? "?") }
            #expect(ids == ["1", "2"])
            #expect(server.receivedRequests.map { $0.value(forHTTPHeaderField: "Last-Event-ID") } == [nil, "1", "2"])
        }
    }

    /// Eight requests held by the server at once: HTTP/2 carries them as streams of one
    /// connection; HTTP/1.1 needs a connection each (the per-host limit is 8).
    @Test(arguments: Transport.allCases)
    func concurrentRequestsShareAnHTTP2ConnectionOrOpenOneEach(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            let count = 8
            // Every request is answered once all of them have arrived: they run side by side.
            let arrived = Recorder<Void>()
            let everyone = OneShotGate()
            server.route("/together") { _ in
                arrived.append(())
                if arrived.count == count { everyone.open() }
                await withCheckedContinuation { continuation in everyone.whenOpen { continuation.resume() } }
                return .text("ok")
            }
            manager.responseSerializer = HTTPResponseSerializer()
            try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<count {
                    group.addTask { try await manager.get("together").response.status.code }
                }
                for try await status in group { #expect(status == 200) }
            }
            #expect(server.requestCount == count)
            #expect(server.connectionCount == (transport.isHTTP2 ? 1 : count))
        }
    }

    /// A request body written in answer to the response (AsyncHTTPClient's
    /// `testBiDirectionalStreaming`): each piece goes out only once the server has sent the one
    /// before back, so the call must return at the response's head, the response's pieces must
    /// come while the upload is still going, and the upload must go on after them. A client that
    /// waits for either side to end first never ends. Not through tinyproxy's absolute-form
    /// forwarding, which holds the answer back until the request body has ended (`PENDING.md`).
    @Test(arguments: Transport.allCases(except: [.http1ViaHTTPProxy]))
    func aBodyWrittenInAnswerToTheResponse(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            let rounds = 30
            let (pieces, writer) = AsyncThrowingStream<ByteBuffer, any Error>.makeStream()
            var request = Request(method: .post, url: server.url("/courier/echo-stream"))
            request.body = .stream(pieces, length: .unknown)
            writer.yield(ByteBuffer(integer: UInt64(0)))
            let stream = try await manager.stream(request)
            #expect(stream.response.status == .ok)
            var iterator = stream.body.makeAsyncIterator()
            var echoed = ByteBuffer()
            for index in 0..<rounds {
                while echoed.readableBytes < 8 {
                    guard var piece = try await iterator.next() else {
                        Issue.record("the response ended after \(index) of \(rounds) pieces")
                        return
                    }
                    echoed.writeBuffer(&piece)
                }
                #expect(echoed.readInteger(as: UInt64.self) == UInt64(index))
                if index + 1 < rounds {
                    writer.yield(ByteBuffer(integer: UInt64(index + 1)))
                } else {
                    writer.finish()
                }
            }
            #expect(try await iterator.next() == nil, "the response ends with the request")
            #expect(echoed.readableBytes == 0)
            #expect(server.requestCount == 1)
        }
    }

    /// Both ways at once, more than the buffers and windows between hold: 8 MiB written while
    /// the echo of it is read. An engine that stopped reading while it writes (or the reverse)
    /// would stall with the server's writes held back by the unread echo and its reads by them.
    @Test(arguments: Transport.allCases)
    func aLargeBodyAndItsEchoFlowAtOnce(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            let pieces = 128
            let piece = 64 << 10
            let body = AsyncThrowingStream<ByteBuffer, any Error> { continuation in
                for index in 0..<pieces { continuation.yield(ByteBuffer(repeating: UInt8(index % 251), count: piece)) }
                continuation.finish()
            }
            var request = Request(method: .put, url: server.url("/courier/echo-stream"))
            request.body = .stream(body, length: .known(Int64(pieces * piece)))
            let stream = try await manager.stream(request)
            var received = 0
            var mismatches = 0
            for try await chunk in stream.body {
                // Every 1,024th byte and the last: each piece is one value, so a piece lost,
                // repeated or out of order shows.
                let bytes = chunk.readableBytesView
                guard !bytes.isEmpty else { continue }
                for offset in Array(stride(from: 0, to: bytes.count, by: 1024)) + [bytes.count - 1]
                where bytes[bytes.startIndex + offset] != UInt8((received + offset) / piece % 251) {
                    mismatches += 1
                }
                received += chunk.readableBytes
            }
            #expect(received == pieces * piece)
            #expect(mismatches == 0, "the echo came back as it was sent")
            #expect(stream.task.countOfBytesSent == Int64(pieces * piece))
        }
    }

    /// A redirect to another server (another host and port, from a cleartext one): the hop goes
    /// to the other pool and over this transport.
    @Test(arguments: Transport.allCases)
    func aRedirectToAnotherServerIsFollowedOverThisTransport(_ transport: Transport) async throws {
        try await withTestServer { origin in
            try await transport.run { server, manager in
                let target = server.url("/get?from=origin").absoluteString
                origin.route("/elsewhere") { _ in
                    TestServer.Response(status: .found, headerFields: [.location: target])
                }
                let response = try await manager.get(origin.url("/elsewhere").absoluteString)
                #expect(response.response.status == .ok)
                #expect(response.request.url.absoluteString == target)
                #expect(origin.requestCount == 1)
                #expect(server.receivedRequests.map(\.target) == ["/get?from=origin"])
            }
        }
    }
}
