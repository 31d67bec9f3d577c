@testable import Courier
import CourierTesting
import Dispatch
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing

/// A consumer that stops taking bytes must stop the connection (the stream, on HTTP/2) reading,
/// so that the server sees its socket buffers or its flow-control window fill.
@Suite("Transport: back-pressure")
struct TransportBackPressureTests {
    /// More than loopback's socket buffers and any engine's buffering hold together. Through a
    /// proxy, twice that: two TCP connections and the proxy's buffers lie between the server and
    /// the client, and under a full parallel run danted let 28.7 MiB through before the server was
    /// held back (17 MiB once before), over three quarters of 32 MiB.
    ///
    /// Through the `https://` proxy (stunnel in front of tinyproxy) three connections lie in
    /// between, and with this machine's loopback limits (a receive buffer grows to 32 MiB,
    /// `net.ipv4.tcp_rmem`; a send buffer to 4 MiB) they can hold about 108 MiB: a clean-clone CI
    /// run saw the server write 58 MiB of 64 before it was held back, with well under 1 MiB
    /// delivered (10–26 MiB on a quiet machine, 0.5 MiB or less delivered).
    /// How long the rest of a transfer may take once it is let go: a hang guard. Under a full
    /// parallel run, 128 MiB through the `https://` proxy (TLS inside TLS, a debug build) has
    /// taken longer than the usual two minutes (``Changes/hangGuard``); the whole suite has
    /// taken 232 s in a clean-clone CI run.
    static let wholeTransferGuard: Duration = .seconds(360)

    static func size(_ transport: Transport) -> Int {
        switch transport.route {
        case .httpsProxy: 128 << 20
        default: transport.isProxied ? 64 << 20 : 32 << 20
        }
    }

    /// What the server may have written, at most, once it is held back: what the connections in
    /// between can hold (see ``size(_:)``), which an engine that keeps reading passes, taking the
    /// whole body.
    static func heldBackBound(_ transport: Transport) -> Int {
        switch transport.route {
        case .httpsProxy: Self.size(transport) * 7 / 8
        default: transport.isProxied ? Self.size(transport) * 3 / 4 : Self.size(transport) / 2
        }
    }

    /// Waits until the server's streamed response is held back by the client (the event: it waits
    /// for writability and writes nothing more between two looks), then expects it to stay held
    /// back, having written only part of the body, while `received` stays put: a negative, so it
    /// is checked over a bounded wait once the event has come.
    /// - Parameters:
    ///   - exact: Whether no byte at all may be delivered meanwhile (a suspended task); a
    ///   stream's buffer may still take the few bytes the engine had read.
    ///   - transport: Through a proxy, the server may have written more before it is held back:
    ///   two TCP connections (each with socket buffers loopback grows to several MiB) and the
    ///   proxy's own buffers lie between it and the client (danted let 17 MiB through once).
    static func expectHeldBack(_ server: TestServer, exact: Bool, transport: Transport, received: () -> Int64) async throws {
        // The event: the server's response waits for writability and has written nothing since
        // the last look (a client still reading makes it wait only in passing).
        var settled = false
        var last = -1
        // A hang guard (a full CI run held every test for about 36 s), not a pause.
        let deadline = ContinuousClock.now + Changes.hangGuard
        while !settled, ContinuousClock.now < deadline {
            let written = server.streamedBodyBytesWritten
            settled = server.streamedResponsesWaitingForWritability == 1 && written == last
            last = written
            if !settled { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(settled, "the server's writes wait for the client")
        let written = server.streamedBodyBytesWritten
        let delivered = received()
        try await Task.sleep(for: .milliseconds(300))
        // Still held back: the server waits again. A client that was only descheduled for longer
        // than the looks above (two loaded cores in a full CI run) may have read up to its limit
        // meanwhile, so the server may be writing at this instant: the bounds below say how much
        // it could write, and an engine that keeps reading fails them.
        #expect(await eventually { server.streamedResponsesWaitingForWritability == 1 }, "still waiting")
        // An engine may take a few more megabytes into its buffers (AHC over TLS took 2.5 MiB
        // more in one run of four); one that keeps reading takes the rest of the 32 MiB. Through a
        // proxy its buffers and a second connection's add more (5.5 MiB through danted once, with
        // two builds running beside the tests). Through the `https://` proxy the tunnel has three
        // hops of loopback buffers, two of them TLS, and under a full parallel run it let 8 and
        // 13 MiB more through in one clean-clone CI run, and 23 MiB in another (2026-12-05): its
        // six socket buffers, which loopback grows to several MiB each, hold that much without the
        // engine reading a byte. Through SOCKS5 (danted) a clean-clone CI run let 16.5 MiB more
        // through (2026-12-07). Through any proxy the bound is 32 MiB (half the body, a quarter
        // through the `https://` proxy); the whole-body bound below (``heldBackBound(_:)``) is
        // what fails an engine that keeps reading, which takes it all.
        let little = transport.isProxied ? 32 << 20 : 4 << 20
        #expect(server.streamedBodyBytesWritten - written < little, "the server could write little more (\(written) then \(server.streamedBodyBytesWritten))")
        #expect(server.streamedBodyBytesWritten < Self.heldBackBound(transport), "held back after \(written) bytes, \(delivered) delivered")
        if exact {
            #expect(received() == delivered, "nothing is delivered while the consumer waits")
        } else {
            #expect(received() - delivered < 1 << 20, "little is delivered while the consumer waits")
        }
        #expect(delivered < Int64(Self.size(transport) / 2))
    }

    @Test(arguments: Transport.allCases)
    func aSuspendedTaskStopsReading(_ transport: Transport) async throws {
        try await transport.run(wrapEngine: { EventRecordingEngine(base: $0) }) { server, manager in
            let engine = try #require(manager.engine as? EventRecordingEngine)
            let suspendedOnce = Recorder<Void>()
            var hooks = SessionManager.Hooks()
            hooks.dataTaskDidReceiveData = { _, task, _ in
                if suspendedOnce.count == 0 {
                    task.suspend()
                    // After the suspension: the test waits on this append for it.
                    suspendedOnce.append(())
                }
            }
            manager.hooks = hooks
            manager.responseSerializer = HTTPResponseSerializer()
            let finished = Recorder<CourierError?>()
            let task = manager.dataTask(with: Request(url: server.url("/courier/big/\(Self.size(transport))"))) { _, _, error in finished.append(error) }
            task.resume()
            #expect(await suspendedOnce.wait { _ in task.state == .suspended })
            // The suspension reaches the exchange, and the server sees the window fill.
            #expect(await engine.wait { $0.contains(.suspend) }, "the suspension never reached the exchange")
            try await Self.expectHeldBack(server, exact: true, transport: transport) { task.countOfBytesReceived }
            #expect(finished.count == 0)
            task.resume()
            // The rest of the body, in a debug build on a machine that may be busy with the
            // whole suite: generous, as the point is that it finishes at all.
            #expect(await finished.wait(within: Self.wholeTransferGuard) { $0.count == 1 })
            #expect(finished.all.count == 1 && finished.all.first! == nil, "completed once, without an error")
            #expect(task.countOfBytesReceived == Int64(Self.size(transport)))
            #expect(server.streamedResponsesWaitingForWritability == 0)
            #expect(engine.mostChunksWhileSuspended <= 1, "chunks delivered to a suspended exchange")
            #expect(!engine.completedWhileSuspended)
        }
    }

    @Test(arguments: Transport.allCases)
    func anUnreadStreamStopsReading(_ transport: Transport) async throws {
        try await transport.run(wrapEngine: { EventRecordingEngine(base: $0) }) { server, manager in
            let engine = try #require(manager.engine as? EventRecordingEngine)
            let stream = try await manager.stream(Request(url: server.url("/courier/big/\(Self.size(transport))")))
            var iterator = stream.body.makeAsyncIterator()
            var received = try await iterator.next()?.readableBytes ?? 0
            // Once the consumer stops reading, the task asks its exchange to stop: only when more
            // than the high watermark's bytes wait unread, however small the transport's chunks.
            #expect(await engine.wait { $0.contains(.suspend) }, "the unread body never stopped the exchange")
            // The first chunk may still have waited unread when the bound was passed (the consumer
            // took it after), so it may count towards the high watermark too.
            #expect(stream.task.countOfBytesReceived > Int64(UnreadBytesWatermark.highWatermark), "received \(received) first")
            try await Self.expectHeldBack(server, exact: false, transport: transport) { stream.task.countOfBytesReceived }
            while let chunk = try await iterator.next() { received += chunk.readableBytes }
            #expect(received == Self.size(transport))
            #expect(server.streamedResponsesWaitingForWritability == 0)
            #expect(engine.mostChunksWhileSuspended <= 1, "chunks delivered to a suspended exchange")
        }
    }

    /// A streamed task's handler that does not return holds the next piece back, and with it the
    /// connection, as an unread `async` stream does.
    @Test(arguments: Transport.allCases)
    func aStreamTaskWhoseHandlerWaitsStopsReading(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            // A queue of its own: the handler blocks it.
            manager.completionQueue = DispatchQueue(label: "back-pressure-handler")
            let release = DispatchSemaphore(value: 0)
            let received = NIOLockedValueBox(0)
            let ended = Recorder<CourierError?>()
            let task = manager.streamTask(with: Request(url: server.url("/courier/big/\(Self.size(transport))"))) { event in
                switch event {
                case .response: break
                case .data(let piece):
                    let first = received.withLockedValue { total -> Bool in
                        total += piece.count
                        return total == piece.count
                    }
                    if first { release.wait() }
                case .completion(let error): ended.append(error)
                }
            }
            task.resume()
            try await Self.expectHeldBack(server, exact: false, transport: transport) { task.countOfBytesReceived }
            release.signal()
            #expect(await ended.wait(within: Self.wholeTransferGuard) { $0.count == 1 })
            #expect(ended.all.first == .some(nil))
            #expect(received.withLockedValue { $0 } == Self.size(transport))
        }
    }
}
