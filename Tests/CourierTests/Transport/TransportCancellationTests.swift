import Courier
import CourierTesting
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing

/// Cancelling before the connection, while waiting for the head, and in the middle of a body
/// either way.
@Suite("Transport: cancellation")
struct TransportCancellationTests {
    @Test(arguments: Transport.allCases)
    func cancellingBeforeResumeSendsNothing(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            let error: CourierError? = await awaitCallback { finish in
                let task = manager.dataTask(with: Request(url: server.url("/get"))) { _, _, error in finish(error) }
                task.cancel()
                task.resume()
            }
            #expect(error?.code == .cancelled)
            #expect(server.requestCount == 0)
            #expect(server.connectionCount == 0, "no connection was opened")
        }
    }

    /// An `async` call made from a Swift task that was cancelled already: the session task is
    /// cancelled before it is resumed, ends at once with `.cancelled`, sends nothing, and
    /// completes once (its caller waits on it only after it ended).
    @Test(arguments: Transport.allCases)
    func anAsyncCallFromACancelledTaskFailsAtOnceAndSendsNothing(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            let completions = NIOLockedValueBox(0)
            var hooks = manager.hooks
            hooks.taskDidComplete = { _, _, _ in completions.withLockedValue { $0 += 1 } }
            manager.hooks = hooks
            let url = server.url("/get")
            // A Swift task of its own, to be cancelled before its call: cancelled at once below,
            // and awaited.
            let caller = Task { () async -> Result<DataResponse<Data>, CourierError> in
                while !Task.isCancelled { await Task.yield() }
                do {
                    return .success(try await manager.data(for: Request(url: url)))
                } catch let error as CourierError {
                    return .failure(error)
                } catch {
                    return .failure(CourierError(.internalInconsistency, "not a CourierError: \(error)"))
                }
            }
            caller.cancel()
            let result = await caller.value
            #expect(throws: CourierError.self) { _ = try result.get() }
            if case .failure(let error) = result { #expect(error.code == .cancelled) }
            #expect(completions.withLockedValue { $0 } == 1)
            #expect(server.requestCount == 0)
            #expect(server.connectionCount == 0, "no connection was opened")
        }
    }

    @Test(arguments: Transport.allCases)
    func cancellingWhileWaitingForTheHeadFailsPromptly(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            // Cancels when the request reaches the server, which answers only 10 s later.
            let arrival = ArrivalAction()
            server.routeCallingOnArrival("/hold", arrival)
            let error: CourierError? = await awaitCallback { finish in
                let task = manager.dataTask(with: Request(url: server.url("/hold"))) { _, _, error in finish(error) }
                arrival.set { task.cancel() }
                task.resume()
            }
            // Without the cancel the task would succeed after 10 s: no clock needed.
            #expect(error?.code == .cancelled)
        }
    }

    @Test(arguments: Transport.allCases)
    func cancellingTheCallerWhileWaitingForTheHeadCancelsTheStream(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            let changes = Changes.progressAndEnds(of: manager)
            let arrived = Recorder<Void>()
            let arrival = ArrivalAction()
            arrival.set { arrived.append(()) }
            // Answered only after the hang guard: the caller is cancelled after the request
            // arrived, which a full CI run (every test held for about 36 s) could delay past 10 s.
            server.routeCallingOnArrival("/hold", delay: Changes.hangGuard, arrival)
            let waiting = Task { try await manager.stream(Request(url: server.url("/hold"))) }
            // Cancels once the request is waiting on the server for its head.
            #expect(await arrived.wait { $0.count == 1 })
            waiting.cancel()
            let result = await waiting.result
            #expect((try? result.get()) == nil)
            if case .failure(let error as CourierError) = result { #expect(error.code == .cancelled) }
            #expect(await changes.wait { manager.tasks.isEmpty })
        }
    }

    @Test(arguments: Transport.allCases)
    func stoppingAStreamMidBodyCancelsTheTask(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            let changes = Changes.progressAndEnds(of: manager)
            let stream = try await manager.stream(Request(url: server.url("/courier/big/\(64 << 20)")))
            for try await _ in stream.body { break }
            #expect(await changes.wait { stream.task.state == .completed })
            #expect(stream.task.error?.code == .cancelled)
            #expect(await changes.wait { manager.tasks.isEmpty })
        }
    }

    @Test(arguments: Transport.allCases)
    func cancellingMidDownloadRemovesThePartialFile(_ transport: Transport) async throws {
        try await withScratchDirectory { folder in
            try await transport.run(configure: { $0.downloadDirectory = folder }) { server, manager in
                let changes = Changes.progressAndEnds(of: manager)
                // 16 s at this rate: the cancel comes long before the end, however loaded the machine.
                let task = manager.downloadTask(
                    with: Request(url: server.url(TestServer.GeneratedFile(length: 1 << 20).path(["rate": "65536"]))), completionHandler: nil)
                task.resume()
                #expect(await changes.wait { task.countOfBytesReceived > 0 })
                task.cancel()
                #expect(await changes.wait { manager.tasks.isEmpty })
                #expect(task.error?.code == .cancelled)
                #expect(task.error?.resumeData == nil)
                #expect(await changes.wait { contents(of: folder).isEmpty })
            }
        }
    }

    @Test(arguments: Transport.allCases)
    func cancellingMidUploadEndsTheTask(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            let changes = Changes.progressAndEnds(of: manager)
            let chunks = AsyncThrowingStream<ByteBuffer, any Error> { continuation in
                // Feeds the upload slowly; cancelled when the stream ends (the task's cancel).
                let producer = Task {
                    for _ in 0..<1000 {
                        continuation.yield(ByteBuffer(repeating: 9, count: 64 << 10))
                        try await Task.sleep(for: .milliseconds(10))
                    }
                    continuation.finish()
                }
                continuation.onTermination = { _ in producer.cancel() }
            }
            let task = manager.uploadTask(
                withStreamedRequest: Request(method: .post, url: server.url("/courier/upload"), body: .stream(chunks, length: .unknown)),
                completionHandler: nil)
            task.resume()
            #expect(await changes.wait { task.countOfBytesSent > 0 })
            task.cancel()
            #expect(await changes.wait { manager.tasks.isEmpty })
            #expect(task.error?.code == .cancelled)
            #expect(server.requestCount == 0, "the server never saw the whole upload")
        }
    }

    /// A streamed body waiting for a chunk that never comes: cancelling the task stops the pump
    /// that waits on it (the stream sees its iteration end), rather than leaving it parked.
    @Test(arguments: Transport.allCases)
    func cancellingAnUploadStopsAPumpWaitingForItsStream(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            let changes = Changes.progressAndEnds(of: manager)
            let ended = Recorder<Void>()
            let held = NIOLockedValueBox<AsyncThrowingStream<ByteBuffer, any Error>.Continuation?>(nil)
            let chunks = AsyncThrowingStream<ByteBuffer, any Error> { continuation in
                continuation.onTermination = { _ in ended.append(()) }
                continuation.yield(ByteBuffer(repeating: 9, count: 1024))
                // Kept, unfinished: the stream never ends by itself.
                held.withLockedValue { $0 = continuation }
            }
            let task = manager.uploadTask(
                withStreamedRequest: Request(method: .post, url: server.url("/courier/upload"), body: .stream(chunks, length: .unknown)),
                completionHandler: nil)
            task.resume()
            #expect(await changes.wait { task.countOfBytesSent > 0 })
            task.cancel()
            #expect(await changes.wait { manager.tasks.isEmpty })
            #expect(await ended.wait { $0.count == 1 }, "the pump still waits for a chunk")
            held.withLockedValue { $0?.finish() }
        }
    }
}
