@testable import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

/// WebSockets against the test server's WebSocket routes (``TestServer``, `/courier/websocket/…`),
/// over real sockets: echo, fragments, the closing handshake either way, back-pressure, TLS with
/// pinning, and every way a server can break the protocol.
@Suite("WebSocket over sockets")
struct WebSocketOverSocketTests {
    static func url(_ server: TestServer, _ mode: String) -> URL {
        var components = URLComponents(url: server.baseURL, resolvingAgainstBaseURL: false)!
        components.scheme = components.scheme == "https" ? "wss" : "ws"
        // A mode may carry options: `payloads?count=2`.
        let parts = mode.split(separator: "?", maxSplits: 1)
        components.path = "/courier/websocket/\(parts[0])"
        components.query = parts.count > 1 ? String(parts[1]) : nil
        return components.url!
    }

    private func withTask<T>(
        _ mode: String,
        server configuration: TestServer.Configuration = .init(),
        securityPolicy: SecurityPolicy = .default,
        webSocket: WebSocketConfiguration = WebSocketConfiguration(),
        loopOfItsOwn: Bool = false,
        _ body: (WebSocketTask, TestServer) async throws -> T
    ) async throws -> T {
        try await withTestServer(configuration) { server in
            // A test that masks megabytes (a debug build does it a byte at a time: about a third of
            // a second a side for 12 MiB on this machine, seconds under the whole suite's load)
            // keeps its client off the loops the other tests' sessions share.
            let group = loopOfItsOwn ? MultiThreadedEventLoopGroup(numberOfThreads: 1) : nil
            let manager =
                group.map {
                    SessionManager(engine: NIOEngine(configuration: .default, securityPolicy: securityPolicy, eventLoopGroup: $0))
                } ?? SessionManager(configuration: .default, securityPolicy: securityPolicy)
            let task = manager.webSocketTask(with: Request(url: Self.url(server, mode)), configuration: webSocket)
            let result: Result<T, any Error>
            do {
                result = .success(try await body(task, server))
            } catch {
                result = .failure(error)
            }
            task.cancel()
            await task.waitUntilFinished()
            await manager.invalidate(cancelingTasks: true)
            try await group?.shutdownGracefully()
            return try result.get()
        }
    }

    @Test func aSecondIteratorOfTheSameMessagesEndsAtOnce() async throws {
        // SwiftNIO's producer allows one iterator and stopped the process at a second.
        try await withTask("echo") { task, _ in
            _ = try await task.waitUntilOpen()
            let messages = task.messages
            var first = messages.makeAsyncIterator()
            var second = messages.makeAsyncIterator()
            #expect(try await second.next() == nil)
            try await task.send(.text("once"))
            #expect(try await first.next() == .text("once"))
        }
    }

    @Test func echoTextAndBinaryThenCloseNormally() async throws {
        try await withTask("echo") { task, server in
            let response = try await task.waitUntilOpen()
            #expect(response.status.code == 101)
            #expect(task.handshakeMetrics?.connectStart != nil)
            var messages = task.messages.makeAsyncIterator()
            try await task.send(.text("hello, wörld"))
            #expect(try await messages.next() == .text("hello, wörld"))
            try await task.send(.binary(Data([0, 1, 2, 255])))
            #expect(try await messages.next() == .binary(Data([0, 1, 2, 255])))
            let large = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0) })
            try await task.send(.binary(large))
            #expect(try await messages.next() == .binary(large))
            try await task.sendPing()
            await task.close(code: .normalClosure, reason: "done")
            #expect(try await messages.next() == nil)
            #expect(task.closeCode == .normalClosure)
            #expect(task.error == nil)
            #expect(await eventually { server.openConnectionCount == 0 })
        }
    }

    /// A server that answers only the latest of two PINGs (RFC 6455 5.5.3) answers both: the
    /// first `sendPing()` returns with the second's PONG. (It waited for ever, and its waiter
    /// stayed with the task for the connection's life.)
    @Test func aPongAnswersItsPingAndTheEarlierOnes() async throws {
        try await withTask("latest-pong") { task, server in
            try await task.waitUntilOpen()
            let firstReturned = NIOLockedValueBox(false)
            // Unstructured so that the test can see it wait; cancelled below if it still waits.
            let first = Task {
                try await task.sendPing()
                firstReturned.withLockedValue { $0 = true }
            }
            #expect(await eventually { server.webSocketPingsReceived == 1 })
            #expect(!firstReturned.withLockedValue { $0 }, "the server holds its PONG")
            try await task.sendPing()
            #expect(await eventually { firstReturned.withLockedValue { $0 } }, "the second PING's PONG answered the first")
            first.cancel()
            #expect(!task.isFinished && task.error == nil)
        }
    }

    /// The keep-alive's PINGs and `sendPing()`'s are one sequence, end to end: against a server
    /// that answers only the latest of two PINGs, the user's PING and the keep-alive's first are
    /// answered together in whichever order they went out (the user's by the keep-alive's PONG,
    /// or the keep-alive's by the user's), and the next tick finds the keep-alive's PING answered
    /// and sends another rather than ending the connection. (Before, the first order left
    /// `sendPing()` waiting for ever, and the second ended a healthy connection with `timedOut`
    /// at the next tick.)
    ///
    /// Nothing here depends on when a tick lands: the server holds one pair of PINGs only and
    /// answers every PING after it at once, and either order of the pair is right. Which PINGs a
    /// PONG answers, and when a tick gives up, is pinned on a clock the tests move
    /// (`WebSocketChannelHandlerTests`). (This test needed the user's PING answered within one
    /// interval of the keep-alive's, ordered after it: at 1 s a loaded CI machine missed that.)
    @Test func theKeepAlivesPingsAndTheUsersAreAnsweredTogether() async throws {
        var webSocket = WebSocketConfiguration()
        // The keep-alive's own time-out: each PONG after the pair must be back within it, on a
        // machine that may be busy with the whole suite (a PONG was once over 2 s late, and a full
        // CI run held every test for about 36 s, where 4 s left too little margin). The test
        // waits two intervals, so not 60 s.
        webSocket.pingInterval = 10
        try await withTask("latest-pong?count=2&rounds=1", webSocket: webSocket) { task, server in
            try await task.waitUntilOpen()
            let returned = NIOLockedValueBox(false)
            // Unstructured so that the test can see it wait; cancelled below if it still waits.
            let waiting = Task {
                try await task.sendPing()
                returned.withLockedValue { $0 = true }
            }
            #expect(await eventually { returned.withLockedValue { $0 } || task.isFinished })
            try #require(returned.withLockedValue { $0 }, "the pair's PONG answered the user's PING: \(String(describing: task.error))")
            // The third PING is the tick after the pair's: it goes out only if that tick found the
            // keep-alive's PING answered.
            #expect(await eventually { server.webSocketPingsReceived >= 3 || task.isFinished })
            #expect(!task.isFinished, "the connection ended: \(String(describing: task.error))")
            waiting.cancel()
            await task.close()
            #expect(task.error == nil)
            #expect(task.closeCode == .normalClosure)
        }
    }

    /// Courier's reply to the server's close frame waits behind a large message the server is not
    /// reading yet; the connection closes after it went out, so the server reads the close frame.
    /// (The task closed the connection at once, which dropped the queued frame: the server saw the
    /// connection end with no close frame, 1006.)
    @Test func theCloseFrameGoesOutBehindAMessage() async throws {
        try await withTask("close-unread", loopOfItsOwn: true) { task, server in
            try await task.waitUntilOpen()
            try await task.send(.text("go"))
            // Unstructured: its write waits for the server to read again; it ends with the task.
            let sending = Task { try? await task.send(.binary(Data(repeating: 7, count: 12 << 20))) }
            await task.waitUntilFinished()
            #expect(task.error == nil)
            #expect(task.closeCode == .normalClosure)
            #expect(await eventually { server.webSocketCloseCodesReceived == [1000] }, "\(server.webSocketCloseCodesReceived)")
            await sending.value
        }
    }

    /// A caller that stops waiting for a PONG (its task cancelled) gets `cancelled`; the
    /// connection stays open and carries the next PING.
    @Test func aCancelledPingWaitEndsAndTheSocketStaysOpen() async throws {
        try await withTask("latest-pong?count=2") { task, server in
            try await task.waitUntilOpen()
            // Unstructured so that the test can cancel it while it waits.
            let waiting = Task { try await task.sendPing() }
            #expect(await eventually { server.webSocketPingsReceived == 1 })
            waiting.cancel()
            let error = await #expect(throws: CourierError.self) { try await waiting.value }
            #expect(error?.code == .cancelled)
            #expect(!task.isFinished && task.error == nil)
            // The second PING is answered (the server answers every second one).
            try await task.sendPing()
            #expect(server.webSocketPingsReceived == 2)
        }
    }

    @Test func fragmentsWithAPingBetweenAreOneMessage() async throws {
        try await withTask("fragmented") { task, _ in
            var messages = task.messages.makeAsyncIterator()
            try await task.send(.text("abcdefghijklmnopqrstuvwxyz"))
            #expect(try await messages.next() == .text("abcdefghijklmnopqrstuvwxyz"))
            try await task.send(.binary(Data(repeating: 7, count: 3001)))
            #expect(try await messages.next() == .binary(Data(repeating: 7, count: 3001)))
        }
    }

    @Test func theServerClosesFirst() async throws {
        try await withTask("close-after-first") { task, server in
            try await task.send(.text("hi"))
            var messages = task.messages.makeAsyncIterator()
            #expect(try await messages.next() == nil)
            #expect(task.closeCode == .normalClosure)
            #expect(task.closeReason == "bye")
            #expect(task.error == nil)
            #expect(await eventually { server.openConnectionCount == 0 })
        }
    }

    /// A server that resets the connection (no close frame; over TLS no close_notify either):
    /// a close with no closing handshake, 1006, over ws:// and wss:// alike. Before, the reset
    /// (and TLS's unclean shutdown) was taken for the server breaking the protocol: 1002, and the
    /// error named the transport's error type.
    @Test(arguments: [false, true])
    func aResetConnectionIsAnAbnormalClosure(tls: Bool) async throws {
        var server = tls ? TestServer.Configuration.https() : TestServer.Configuration()
        server.http2 = false
        var policy = SecurityPolicy.default
        policy.additionalTrustedCertificates = try Certificate.certificates(pemEncoded: TestCertificates.rootCA)
        try await withTask("drop-after-first", server: server, securityPolicy: policy) { task, server in
            try await task.send(.text("hi"))
            var messages = task.messages.makeAsyncIterator()
            await #expect(throws: CourierError.self) { _ = try await messages.next() }
            await task.waitUntilFinished()
            #expect(task.closeCode == .abnormalClosure)
            #expect(task.error?.code == .connectionClosed)
            #expect(task.error?.message.hasSuffix("the connection closed with no closing handshake") == true, "\(String(describing: task.error))")
            #expect(await eventually { server.openConnectionCount == 0 })
        }
    }

    @Test func wssWithAPinnedKey() async throws {
        var server = TestServer.Configuration.https()
        server.http2 = false
        var policy = SecurityPolicy(
            pinningMode: .publicKey,
            pinnedCertificates: Set(try Certificate.certificates(pemEncoded: TestCertificates.localhostLeaf))
        )
        policy.additionalTrustedCertificates = try Certificate.certificates(pemEncoded: TestCertificates.rootCA)
        try await withTask("echo", server: server, securityPolicy: policy) { task, _ in
            try await task.send(.text("secure"))
            var messages = task.messages.makeAsyncIterator()
            #expect(try await messages.next() == .text("secure"))
            #expect(task.handshakeMetrics?.tlsProtocolVersion != nil)
        }
    }

    @Test func wssWithAWrongPinFailsTheHandshake() async throws {
        var server = TestServer.Configuration.https()
        server.http2 = false
        var policy = SecurityPolicy(
            pinningMode: .publicKey,
            pinnedCertificates: Set(try Certificate.certificates(pemEncoded: TestCertificates.wrongHostLeaf))
        )
        policy.additionalTrustedCertificates = try Certificate.certificates(pemEncoded: TestCertificates.rootCA)
        try await withTask("echo", server: server, securityPolicy: policy) { task, server in
            let error = await #expect(throws: CourierError.self) { try await task.waitUntilOpen() }
            #expect(error?.code == .serverTrustEvaluationFailed)
            #expect(server.requestCount == 0)
        }
    }

    /// Numbered binary messages of `size` bytes (the last byte is the number).
    private func numbered(_ index: Int, size: Int) -> WebSocketMessage {
        var data = Data(repeating: 7, count: size - 1)
        data.append(UInt8(truncatingIfNeeded: index))
        return .binary(data)
    }

    /// A consumer that does not read while the server's messages pile up (more than one message's
    /// worth): Courier keeps reading the connection, so the PONGs behind those messages are read
    /// (the keep-alive's too: the connection ended at its second PING after reading stopped), and
    /// every message is there afterwards, in order.
    ///
    /// The PONGs are `sendPing()`'s, each behind the echoes before it, so that the test waits for
    /// events only: through the keep-alive it needed every PONG back within the interval on a
    /// machine busy with the whole suite (0.2 s and 1 s were too short; one PONG was once over 2 s
    /// late). That a tick finds the keep-alive's PONG behind unread messages read is pinned on a
    /// clock the test moves (`WebSocketChannelHandlerTests`).
    @Test func aConsumerThatDoesNotReadDoesNotStarveThePongs() async throws {
        var settings = WebSocketConfiguration()
        settings.pingInterval = nil
        try await withTask("echo", webSocket: settings) { task, _ in
            for index in 0..<40 { try await task.send(self.numbered(index, size: 4096)) }
            // The echoes wait unread; each PONG comes behind them, and `sendPing()` returns only
            // once it was read.
            let answered = NIOLockedValueBox(0)
            // Unstructured so that the test can see it wait; cancelled when the test leaves this
            // scope, the `#require` below included.
            let pinging = Task {
                for _ in 0..<3 {
                    try await task.sendPing()
                    answered.withLockedValue { $0 += 1 }
                }
            }
            defer { pinging.cancel() }
            #expect(await eventually { answered.withLockedValue { $0 } == 3 || task.isFinished })
            // Required: with reads held back, reading the messages below would wait for ever.
            try #require(answered.withLockedValue { $0 } == 3, "the PONGs behind the unread messages were read")
            #expect(!task.isFinished, "the connection ended: \(String(describing: task.error))")
            var messages = task.messages.makeAsyncIterator()
            for index in 0..<40 {
                let message = try await messages.next()
                #expect(message == self.numbered(index, size: 4096), "message \(index)")
            }
            await task.close()
            #expect(task.error == nil)
            #expect(task.closeCode == .normalClosure)
        }
    }

    /// Past ``WebSocketConfiguration/maximumBufferedBytes`` of unread messages the connection is
    /// closed with 1008 and the task fails with `messageBufferFull`; the consumer still gets the
    /// messages that were waiting, then the error.
    @Test func aConsumerBehindByMoreThanTheBoundFailsTheTask() async throws {
        var settings = WebSocketConfiguration()
        // No keep-alive: a loaded machine's late PONG must not end the task first.
        settings.pingInterval = nil
        settings.maximumMessageSize = 4096
        settings.maximumBufferedBytes = 64 * 1024
        try await withTask("echo", webSocket: settings) { task, server in
            for index in 0..<40 { try? await task.send(self.numbered(index, size: 4096)) }
            await task.waitUntilFinished()
            #expect(task.error?.code == .messageBufferFull, "\(String(describing: task.error))")
            #expect(task.closeCode == .policyViolation)
            var received = 0
            do {
                for try await message in task.messages {
                    #expect(message == self.numbered(received, size: 4096))
                    received += 1
                }
                Issue.record("the messages ended without the error")
            } catch {
                #expect((error as? CourierError)?.code == .messageBufferFull)
            }
            // 15 messages of 4 KiB (each counted 64 bytes more, what it costs waiting) make the
            // bound; the 16th is over it, and is the last.
            #expect(received == 16)
            #expect(await eventually { server.openConnectionCount == 0 })
        }
    }

    /// A bound equal to the maximum message size takes one message of that size (with its 64
    /// bytes): such a message, unread for the moment it takes the consumer to take it, went over
    /// the bound and closed the connection with 1008 (a 16 MiB maximum with the 16 MiB default
    /// failed Autobahn's 9.1.6 and 9.2.6).
    @Test func aMessageOfTheMaximumSizeFitsABoundOfTheSameSize() async throws {
        var settings = WebSocketConfiguration()
        settings.pingInterval = nil
        settings.maximumMessageSize = 4096
        settings.maximumBufferedBytes = 4096
        try await withTask("echo", webSocket: settings) { task, _ in
            _ = try await task.waitUntilOpen()
            var messages = task.messages.makeAsyncIterator()
            for index in 0..<3 {
                try await task.send(self.numbered(index, size: 4096))
                #expect(try await messages.next() == self.numbered(index, size: 4096))
            }
            await task.close()
            #expect(task.error == nil, "\(String(describing: task.error))")
            #expect(task.closeCode == .normalClosure)
        }
    }

    /// Empty messages count against the bound too (64 bytes each, what one costs waiting): a
    /// server's stream of empty frames to a task nobody reads ends it with 1008, as large ones
    /// do. Counted by payload alone, they never reached the bound and the queue grew for ever.
    @Test func emptyMessagesNobodyReadsAreBoundedToo() async throws {
        var settings = WebSocketConfiguration()
        settings.pingInterval = nil
        // Small enough that the bound is the setting (one message of the maximum size and its
        // 64 bytes fit in it).
        settings.maximumMessageSize = 1024
        settings.maximumBufferedBytes = 4096
        try await withTask("echo", webSocket: settings) { task, server in
            for _ in 0..<100 { try? await task.send(.binary(Data())) }
            // The task's end, waited for with a bound: without one, a task that goes on (as it
            // did) held the test for ever. The watcher ends with the task, cancelled below if need be.
            let finished = OneShotGate()
            let watcher = Task {
                await task.waitUntilFinished()
                finished.open()
            }
            guard await finished.wait() else {
                Issue.record("100 empty messages waited unread and the task goes on")
                task.cancel()
                await watcher.value
                return
            }
            #expect(task.error?.code == .messageBufferFull, "\(String(describing: task.error))")
            var received = 0
            do {
                for try await message in task.messages {
                    #expect(message == .binary(Data()))
                    received += 1
                }
            } catch {
                #expect((error as? CourierError)?.code == .messageBufferFull)
            }
            // 64 empty messages make the bound; the 65th is over it, and is the last.
            #expect(received == 65)
            #expect(await eventually { server.openConnectionCount == 0 })
        }
    }

    // MARK: Bad input

    /// The task ends with `code` (sent in Courier's close frame, or 1006 locally) and `error`,
    /// the messages end throwing it, and the connection is closed.
    private func expectFailure(
        _ mode: String,
        server: TestServer.Configuration = .init(),
        webSocket: WebSocketConfiguration = WebSocketConfiguration(),
        send: WebSocketMessage? = nil,
        path: String? = nil,
        code: WebSocketCloseCode?,
        error expected: CourierError.Code,
        messageSuffix: String? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        try await withTask(mode, server: server, webSocket: webSocket) { task, testServer in
            if let send { try? await task.send(send) }
            task.resume()
            var thrown: (any Error)?
            do {
                for try await _ in task.messages {}
            } catch {
                thrown = error
            }
            await task.waitUntilFinished()
            #expect((thrown as? CourierError)?.code == expected, "\(String(describing: thrown))", sourceLocation: sourceLocation)
            #expect(task.error?.code == expected, sourceLocation: sourceLocation)
            if let messageSuffix {
                #expect(task.error?.message.hasSuffix(messageSuffix) == true, "\(String(describing: task.error))", sourceLocation: sourceLocation)
            }
            if let code { #expect(task.closeCode == code, sourceLocation: sourceLocation) }
            #expect(await eventually { testServer.openConnectionCount == 0 }, "nothing left open", sourceLocation: sourceLocation)
        }
    }

    @Test func aMaskedFrameFromTheServerIs1002() async throws {
        try await self.expectFailure("masked", code: .protocolError, error: .invalidResponse)
    }

    @Test func invalidUTF8Is1007() async throws {
        try await self.expectFailure("invalid-utf8", code: .invalidFramePayloadData, error: .invalidResponse)
    }

    @Test func aControlFrameOver125BytesIs1002() async throws {
        try await self.expectFailure("big-control", code: .protocolError, error: .invalidResponse)
    }

    /// A PING of 126 bytes is a protocol error (1002) under a maximum message size under 126
    /// bytes too: swift-nio's decoder found the frame over the maximum (125) before it looked at
    /// the control frame's length, and Courier closed with 1009 (Autobahn's 2.5 and 7.3.6 failed
    /// with the wrong code).
    @Test func aControlFrameOver125BytesIs1002UnderASmallMaximumMessageSize() async throws {
        var settings = WebSocketConfiguration()
        settings.maximumMessageSize = 4
        try await self.expectFailure("big-control", webSocket: settings, code: .protocolError, error: .invalidResponse)
    }

    @Test func aForbiddenCloseCodeIs1002() async throws {
        try await self.expectFailure("bad-close", code: .protocolError, error: .invalidResponse)
    }

    @Test func anOrphanContinuationIs1002() async throws {
        try await self.expectFailure("unexpected-continuation", code: .protocolError, error: .invalidResponse)
    }

    /// RFC 6455 5.2: a 64-bit payload length's most significant bit must be 0. A frame that sets
    /// it breaks the protocol (1002), whatever the maximum message size; swift-nio's decoder
    /// reports it as a frame too big, and it closed with 1009.
    @Test func aLengthWithItsTopBitSetIs1002() async throws {
        try await self.expectFailure(
            "huge-length", code: .protocolError, error: .invalidResponse, messageSuffix: "most significant bit set (RFC 6455 5.2); closed with 1002")
    }

    @Test func aMessageOverTheMaximumIs1009() async throws {
        var settings = WebSocketConfiguration()
        settings.maximumMessageSize = 1000
        try await self.expectFailure(
            "echo", webSocket: settings, send: .binary(Data(repeating: 0, count: 1001)), code: .messageTooBig, error: .responseTooLarge)
    }

    /// A server that sends its messages and its close frame right behind the 101 (TestServer's
    /// `payloads`): the caller waiting for the opening still hears it opened, then gets the
    /// messages and the close, or the error of a message too big. Before, when those frames came
    /// in the same read as the 101, they ended the task before its open waiters were resumed, and
    /// `waitUntilOpen()` threw "the WebSocket is not open" for a task that opened and closed
    /// normally (nearly every time on loopback).
    @Test func aWaiterHearsTheOpeningWhenTheServerClosesRightAfterIt() async throws {
        for _ in 0..<10 {
            try await withTask("payloads?count=2") { task, _ in
                let response = try await task.waitUntilOpen()
                #expect(response.status.code == 101)
                var received = 0
                for try await _ in task.messages { received += 1 }
                #expect(received == 2)
                #expect(task.closeCode == .normalClosure)
                #expect(task.error == nil)
            }
        }
        var settings = WebSocketConfiguration()
        settings.maximumMessageSize = 1
        try await withTask("payloads", webSocket: settings) { task, _ in
            let response = try await task.waitUntilOpen()
            #expect(response.status.code == 101)
            let error = await #expect(throws: CourierError.self) { for try await _ in task.messages {} }
            #expect(error?.code == .responseTooLarge)
            #expect(task.closeCode == .messageTooBig)
        }
    }

    /// A maximum message size under 125 bytes bounds messages, not control frames: the PONG of
    /// an 8-byte PING and a close frame with a reason still come through (before, the frame
    /// decoder took the maximum for every frame, and both failed the task with 1009).
    @Test func aSmallMaximumMessageSizeLeavesControlFramesAlone() async throws {
        var settings = WebSocketConfiguration()
        settings.maximumMessageSize = 4
        try await withTask("echo", webSocket: settings) { task, _ in
            var messages = task.messages.makeAsyncIterator()
            try await task.send(.text("hi"))
            #expect(try await messages.next() == .text("hi"))
            try await task.sendPing()
            try await task.send(.text("12345"))
            await #expect(throws: CourierError.self) { _ = try await messages.next() }
            #expect(task.error?.code == .responseTooLarge, "\(String(describing: task.error))")
            #expect(task.closeCode == .messageTooBig)
        }
        try await withTask("close-after-first", webSocket: settings) { task, _ in
            try await task.send(.text("hi"))
            var messages = task.messages.makeAsyncIterator()
            #expect(try await messages.next() == nil)
            #expect(task.error == nil, "\(String(describing: task.error))")
            #expect(task.closeCode == .normalClosure)
            #expect(task.closeReason == "bye")
        }
    }

    /// A server that answers no PING: the second tick ends the connection as timed out. A late
    /// tick only makes that later (the message names the interval that was used), so a short
    /// interval is safe here; when a tick gives up, to the nanosecond, is pinned in
    /// `WebSocketChannelHandlerTests`.
    @Test func aServerThatStopsAnsweringPingsTimesOut() async throws {
        var settings = WebSocketConfiguration()
        settings.pingInterval = 0.2
        try await self.expectFailure(
            "silent", webSocket: settings, code: .abnormalClosure, error: .timedOut,
            messageSuffix: "the server did not answer a PING within 0.2 s (pingInterval)")
    }

    @Test func aWrongAcceptFailsTheHandshake() async throws {
        try await self.expectFailure("bad-accept", code: .abnormalClosure, error: .invalidResponse)
    }

    @Test func anUnofferedExtensionFailsTheHandshake() async throws {
        try await self.expectFailure("unoffered-extension", code: .abnormalClosure, error: .invalidResponse)
    }

    @Test func aServerAnsweringTheUpgradeWith200FailsTheHandshake() async throws {
        try await ScriptedHTTPServer.with({ _, _, _ in
            .respond("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        }) { server in
            let manager = SessionManager()
            var components = URLComponents(url: server.baseURL, resolvingAgainstBaseURL: false)!
            components.scheme = "ws"
            components.path = "/chat"
            let task = manager.webSocketTask(with: Request(url: components.url!))
            let error = await #expect(throws: CourierError.self) { try await task.waitUntilOpen() }
            #expect(error?.code == .invalidResponse)
            #expect(error?.response?.status.code == 200, "\(String(describing: error))")
            #expect(task.closeCode == .abnormalClosure)
            await manager.invalidate(cancelingTasks: true)
        }
    }

    @Test func anInterimAnswerBeforeThe101IsSkipped() async throws {
        // The 101 computed for whatever key came, after a 100.
        try await ScriptedHTTPServer.with({ _, _, head in
            let key = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("sec-websocket-key:") }
                .map { $0.split(separator: ":", maxSplits: 1)[1].trimmingCharacters(in: .whitespaces) } ?? ""
            let accept = WebSocketHandshake.acceptValue(for: key)
            return .respond(
                "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    + "Sec-WebSocket-Accept: \(accept)\r\n\r\n")
        }) { server in
            let manager = SessionManager()
            var components = URLComponents(url: server.baseURL, resolvingAgainstBaseURL: false)!
            components.scheme = "ws"
            let task = manager.webSocketTask(with: Request(url: components.url!))
            let response = try await task.waitUntilOpen()
            #expect(response.status.code == 101)
            task.cancel()
            await task.waitUntilFinished()
            await manager.invalidate(cancelingTasks: true)
        }
    }

    @Test func theServerNeverAnsweringTheCloseTimesOut() async throws {
        var settings = WebSocketConfiguration()
        settings.closeTimeout = 0.2
        settings.pingInterval = nil
        try await withTask("silent", webSocket: settings) { task, server in
            try await task.waitUntilOpen()
            await task.close()
            // The configured 0.2 s was used, not the default's 10 s: the message names it (no
            // bound on the elapsed time, which a loaded machine's stall would break).
            #expect(task.error?.code == .timedOut)
            #expect(task.error?.message.hasSuffix("the server did not answer the close frame within 0.2 s (closeTimeout)") == true, "\(String(describing: task.error))")
            #expect(await eventually { server.openConnectionCount == 0 })
        }
    }

    /// Sends that return before their write (while the connection takes more) and sends that
    /// wait for it (large ones, past the queue's 64 KiB) go out in the order they were made, and
    /// every one is echoed.
    @Test func queuedAndWaitedSendsKeepTheirOrder() async throws {
        try await withTask("echo") { task, _ in
            try await task.waitUntilOpen()
            let large = Data(repeating: 7, count: 100_000)
            var sent: [WebSocketMessage] = []
            for index in 0..<300 {
                let message: WebSocketMessage = index % 50 == 49 ? .binary(large + Data("\(index)".utf8)) : .text("message \(index)")
                try await task.send(message)
                sent.append(message)
            }
            var messages = task.messages.makeAsyncIterator()
            for expected in sent {
                #expect(try await messages.next() == expected)
            }
        }
    }

    @Test func cancelEndsTheTaskOnce() async throws {
        try await withTask("echo") { task, server in
            try await task.waitUntilOpen()
            task.cancel()
            task.cancel()
            await task.waitUntilFinished()
            #expect(task.error?.code == .cancelled)
            await #expect(throws: CourierError.self) { try await task.send(.text("late")) }
            #expect(await eventually { server.openConnectionCount == 0 })
        }
    }
}

/// WebSockets through the test proxies: an HTTP proxy tunnels even `ws://` with `CONNECT` (an
/// `https://` one inside TLS), a SOCKS5 proxy tunnels.
@Suite("WebSocket through proxies")
struct WebSocketProxyTests {
    private func echo(through proxy: ProxyConfiguration, server: TestServer) async throws {
        var configuration = SessionConfiguration.default
        configuration.proxy = proxy
        // The test root: the `https://` proxy's certificate.
        let manager = SessionManager(configuration: configuration, securityPolicy: try Transport.trustingTestRoot())
        var components = URLComponents(url: server.baseURL, resolvingAgainstBaseURL: false)!
        components.scheme = "ws"
        components.host = "ws.example"
        components.path = "/courier/websocket/echo"
        let task = manager.webSocketTask(with: Request(url: components.url!))
        try await task.send(.text("through"))
        var messages = task.messages.makeAsyncIterator()
        #expect(try await messages.next() == .text("through"))
        #expect(task.handshakeMetrics?.isProxyConnection == true)
        await task.close()
        #expect(task.error == nil)
        await manager.invalidate(cancelingTasks: true)
    }

    @Test func anHTTPProxyTunnelsWithConnect() async throws {
        try await withTestServer { server in
            let proxy = try await TestProxy.start(upstreamPort: server.port, credentials: ("courier", "secret"))
            do {
                try await self.echo(through: .http(host: "127.0.0.1", port: proxy.port, username: "courier", password: "secret"), server: server)
                #expect(proxy.connectTargets == ["ws.example:\(server.port)"])
                #expect(proxy.forwardedTargets.isEmpty)
                try await proxy.shutdown()
            } catch {
                try await proxy.shutdown()
                throw error
            }
        }
    }

    @Test func anHTTPSProxyTunnelsInsideTLS() async throws {
        try await withTestServer { server in
            let proxy = try await TestProxy.start(upstreamPort: server.port, credentials: ("courier", "secret"), tls: .localhost)
            do {
                try await self.echo(through: .https(host: "localhost", port: proxy.port, username: "courier", password: "secret"), server: server)
                #expect(proxy.connectTargets == ["ws.example:\(server.port)"])
                try await proxy.shutdown()
            } catch {
                try await proxy.shutdown()
                throw error
            }
        }
    }

    @Test func aSOCKS5ProxyTunnels() async throws {
        try await withTestServer { server in
            let socks = try await TestSOCKSServer.start(upstreamPort: server.port)
            do {
                try await self.echo(through: .socks(host: "127.0.0.1", port: socks.port), server: server)
                #expect(socks.connectTargets.count == 1)
                try await socks.shutdown()
            } catch {
                try await socks.shutdown()
                throw error
            }
        }
    }
}

/// What the opening handshake sends: the upgrade's fields, the request's own, the session's
/// additional headers and its cookies.
@Suite("WebSocket opening handshake on the wire")
struct WebSocketHandshakeWireTests {
    /// Runs `body` against a server that accepts the opening handshake (naming `subprotocol`, when
    /// given) and records its head; returns the head.
    private static func recordingHandshake(subprotocol: String? = nil, _ body: (ScriptedHTTPServer) async throws -> Void) async throws -> String {
        let seen = NIOLockedValueBox<String?>(nil)
        try await ScriptedHTTPServer.with({ _, _, head in
            seen.withLockedValue { $0 = head }
            let key = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("sec-websocket-key:") }
                .map { $0.split(separator: ":", maxSplits: 1)[1].trimmingCharacters(in: .whitespaces) } ?? ""
            return .respond(
                "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    + "Sec-WebSocket-Accept: \(WebSocketHandshake.acceptValue(for: key))\r\n"
                    + (subprotocol.map { "Sec-WebSocket-Protocol: \($0)\r\n" } ?? "") + "\r\n")
        }, body)
        return try #require(seen.withLockedValue { $0 })
    }

    @Test func theHandshakeCarriesTheSessionsHeadersCookiesAndAdapters() async throws {
        let head = try await Self.recordingHandshake(subprotocol: "chat") { server in
            var configuration = SessionConfiguration.default
            configuration.httpAdditionalHeaders = [HTTPField.Name("X-Session")!: "1"]
            configuration.userAgent = "Courier-Test/1.0"
            let storage = MemoryCookieStorage()
            storage.setCookie(Cookie(name: "sid", value: "42", domain: "127.0.0.1"))
            configuration.httpCookieStorage = storage
            let manager = SessionManager(configuration: configuration)
            // The session's adapters run on the handshake's request.
            manager.interceptor = Adapter { request, _ in
                var request = request
                request.headerFields[.authorization] = "Bearer token"
                return request
            }
            var components = URLComponents(url: server.baseURL, resolvingAgainstBaseURL: false)!
            components.scheme = "ws"
            components.path = "/chat"
            components.query = "room=1"
            var request = Request(url: components.url!)
            request.headerFields[HTTPField.Name("X-Request")!] = "2"
            var settings = WebSocketConfiguration()
            settings.subprotocols = ["chat", "superchat"]
            let task = manager.webSocketTask(with: request, configuration: settings)
            try await task.waitUntilOpen()
            #expect(task.subprotocol == "chat")
            task.cancel()
            await task.waitUntilFinished()
            await manager.invalidate(cancelingTasks: true)
        }
        let lines = head.lowercased().split(separator: "\r\n").map(String.init)
        #expect(lines.first == "get /chat?room=1 http/1.1")
        for expected in [
            "upgrade: websocket", "connection: upgrade", "sec-websocket-version: 13", "x-session: 1", "x-request: 2", "cookie: sid=42",
            "sec-websocket-protocol: chat, superchat", "authorization: bearer token", "user-agent: courier-test/1.0",
        ] {
            #expect(lines.contains(expected), "\(expected) in \(lines)")
        }
        #expect(lines.contains("sec-websocket-extensions: permessage-deflate; client_max_window_bits"))
    }

    @Test("The request's own Cookie field and the store's cookies go in one field, the caller's first, as a data task's (the caller's replaced the store's)")
    func theCallersCookieFieldIsJoinedWithTheStores() async throws {
        let head = try await Self.recordingHandshake { server in
            var configuration = SessionConfiguration.default
            let storage = MemoryCookieStorage()
            storage.setCookie(Cookie(name: "b", value: "2", domain: "127.0.0.1"))
            configuration.httpCookieStorage = storage
            let manager = SessionManager(configuration: configuration)
            var components = URLComponents(url: server.baseURL, resolvingAgainstBaseURL: false)!
            components.scheme = "ws"
            components.path = "/chat"
            var request = Request(url: components.url!)
            request.headerFields[.cookie] = "a=1"
            let task = manager.webSocketTask(with: request)
            try await task.waitUntilOpen()
            task.cancel()
            await task.waitUntilFinished()
            await manager.invalidate(cancelingTasks: true)
        }
        let cookies = head.split(separator: "\r\n").map { $0.lowercased() }.filter { $0.hasPrefix("cookie:") }
        #expect(cookies == ["cookie: a=1; b=2"], "\(head)")
    }
}

/// WebSocket tasks and the manager's invalidation.
@Suite("WebSocket and session invalidation")
struct WebSocketInvalidationTests {
    @Test func invalidatingCancelsOpenWebSocketsAndRefusesNewOnes() async throws {
        try await withTestServer { server in
            let manager = SessionManager()
            var components = URLComponents(url: server.baseURL, resolvingAgainstBaseURL: false)!
            components.scheme = "ws"
            components.path = "/courier/websocket/echo"
            let task = manager.webSocketTask(with: Request(url: components.url!))
            try await task.waitUntilOpen()
            await manager.invalidate(cancelingTasks: true)
            await task.waitUntilFinished()
            #expect(task.error?.code == .cancelled)
            #expect(await eventually { server.openConnectionCount == 0 })
            let late = manager.webSocketTask(with: Request(url: components.url!))
            let error = await #expect(throws: CourierError.self) { try await late.waitUntilOpen() }
            #expect(error?.code == .sessionInvalidated)
        }
    }

    // A generous limit: the whole suite, run in parallel on two cores, takes tests a minute.
    @Test(.timeLimit(.minutes(5)))
    func invalidatingWithoutCancellingLetsOpenWebSocketsRunAndWaitsForThem() async throws {
        // The engine stopped under open WebSockets (its wait counted the data tasks only), and
        // the manager forgot them, so that a cancelling invalidation after it missed them (the
        // wait for the task's end never returned: the time limit makes that a failure).
        try await withTestServer { server in
            let manager = SessionManager()
            let invalidate: (Bool) -> Void = { manager.invalidate(cancelingTasks: $0) }
            let task = manager.webSocketTask(with: Request(url: WebSocketOverSocketTests.url(server, "echo")))
            var messages = task.messages.makeAsyncIterator()
            try await task.waitUntilOpen()
            invalidate(false)
            try await task.send(.text("after the invalidation"))
            #expect(try await messages.next() == .text("after the invalidation"))
            #expect(!task.isFinished)
            #expect(manager.webSocketTasks.count == 1)
            invalidate(true)
            await task.waitUntilFinished()
            #expect(task.error?.code == .cancelled)
            await manager.invalidate(cancelingTasks: false)
            #expect(await eventually { server.openConnectionCount == 0 })
        }
    }

    @Test func aWebSocketTaskResumedAfterTheInvalidationConnectsNowhere() async throws {
        try await withTestServer { server in
            let manager = SessionManager()
            let task = manager.webSocketTask(with: Request(url: WebSocketOverSocketTests.url(server, "echo")))
            await manager.invalidate(cancelingTasks: false)
            let error = await #expect(throws: CourierError.self) { try await task.waitUntilOpen() }
            #expect(error?.code == .sessionInvalidated)
            #expect(server.connectionCount == 0)
        }
    }
}

/// Subprotocols are offered one token an element (RFC 6455 4.1): a list that breaks the rule
/// fails the task before any connection, saying why. `"chat,superchat"` as one element went out
/// as two offers, and the server's choice of the second was refused as never offered.
@Suite("WebSocket subprotocol offers")
struct WebSocketSubprotocolTests {
    @Test(arguments: [["chat,superchat"], ["chat superchat"], [""], ["chat", "chat"]])
    func anOfferThatIsNotOneTokenAnElementFailsBeforeAnyConnection(_ subprotocols: [String]) async throws {
        try await withTestServer { server in
            let manager = SessionManager()
            var configuration = WebSocketConfiguration()
            configuration.subprotocols = subprotocols
            let task = manager.webSocketTask(with: Request(url: WebSocketOverSocketTests.url(server, "echo")), configuration: configuration)
            task.resume()
            let error = await #expect(throws: CourierError.self) { try await task.waitUntilOpen() }
            #expect(error?.code == .invalidRequest, "\(String(describing: error))")
            #expect(error?.message.contains("subprotocol") == true, "\(String(describing: error))")
            #expect(server.connectionCount == 0)
            await manager.invalidate(cancelingTasks: true)
        }
    }

    @Test func eachTokenIsOfferedAndTheServersChoiceTaken() async throws {
        try await withTestServer { server in
            let manager = SessionManager()
            var configuration = WebSocketConfiguration()
            configuration.subprotocols = ["superchat", "chat"]
            let task = manager.webSocketTask(with: Request(url: WebSocketOverSocketTests.url(server, "echo")), configuration: configuration)
            task.resume()
            try await task.waitUntilOpen()
            #expect(task.subprotocol == "superchat")
            await manager.invalidate(cancelingTasks: true)
        }
    }
}

/// An adapter that fails fails the WebSocket task before any connection.
@Suite("WebSocket adapters")
struct WebSocketAdapterTests {
    struct Refused: Error {}

    @Test func aFailingAdapterFailsTheTaskWithNoConnection() async throws {
        try await withTestServer { server in
            let manager = SessionManager()
            manager.interceptor = Adapter { _, _ in throw Refused() }
            var components = URLComponents(url: server.baseURL, resolvingAgainstBaseURL: false)!
            components.scheme = "ws"
            components.path = "/courier/websocket/echo"
            let task = manager.webSocketTask(with: Request(url: components.url!))
            let error = await #expect(throws: CourierError.self) { try await task.waitUntilOpen() }
            #expect(error?.code == .requestAdaptationFailed)
            #expect(server.connectionCount == 0)
            await manager.invalidate(cancelingTasks: true)
        }
    }
}
