import CourierTesting
import Foundation
import HTTPTypes
import NIOCore
import NIOConcurrencyHelpers
import Testing

@testable import Courier

/// `DataStreamResponse.broadcast(to:)`: several readers of one streamed body, over sockets.
@Suite("Stream broadcast: several readers of one body")
struct StreamBroadcastTests {
    static func bytes(of reader: DataStreamResponse, upTo limit: Int = .max) async throws(CourierError) -> Data {
        var data = Data()
        for try await chunk in reader.body {
            data.append(contentsOf: chunk.readableBytesView)
            if data.count >= limit { break }
        }
        return data
    }

    @Test("Three readers on three tasks each read every byte, in order", arguments: Transport.allCases)
    func everyReaderReadsEverything(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            let log = TaskNotificationLog()
            let stream = try await manager.stream(Request(url: server.url("/bytes/1000000?seed=9")))
            let readers = stream.broadcast(to: 3)
            let bodies = try await withThrowingTaskGroup(of: Data.self) { group in
                for reader in readers { group.addTask { try await Self.bytes(of: reader) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(bodies.count == 3)
            #expect(bodies.allSatisfy { $0.count == 1_000_000 })
            #expect(Set(bodies).count == 1)
            #expect(await log.wait(for: .taskDidComplete, of: stream.task))
            #expect(stream.task.error == nil)
        }
    }

    /// The example of `broadcast(to:)`'s documentation, as written there.
    @Test("The documentation's example: bytes counted on one reader while another decodes")
    func documentationExample() async throws {
        struct Event: Decodable, Sendable { let id: Int }
        try await Transport.http1.run { server, manager in
            let url = server.url("/stream/4")
            var handled: [Int] = []
            func handle(_ event: Event) { handled.append(event.id) }

            let stream = try await manager.stream(Request(url: url))
            let readers = stream.broadcast(to: 2)
            async let raw = readers[0].body.reduce(0) { $0 + $1.readableBytes }
            for try await event in readers[1].decoded(Event.self) { handle(event) }

            #expect(handled == [0, 1, 2, 3])
            #expect(try await raw > 0)
        }
    }

    @Test("Readers read one after the other on one task: the first's chunks wait for the second")
    func sequentialReaders() async throws {
        try await Transport.http1.run { server, manager in
            let stream = try await manager.stream(Request(url: server.url("/bytes/300000?seed=2")))
            let readers = stream.broadcast(to: 2)
            let first = try await Self.bytes(of: readers[0])
            let second = try await Self.bytes(of: readers[1])
            #expect(first.count == 300_000)
            #expect(first == second)
        }
    }

    @Test("A reader that stops early leaves the others reading; the request is not cancelled")
    func oneReaderStopsEarly() async throws {
        try await Transport.http1.run { server, manager in
            let log = TaskNotificationLog()
            let stream = try await manager.stream(Request(url: server.url("/bytes/500000?seed=5")))
            let readers = stream.broadcast(to: 2)
            let head = try await Self.bytes(of: readers[0], upTo: 1)
            #expect(!head.isEmpty)
            let whole = try await Self.bytes(of: readers[1])
            #expect(whole.count == 500_000)
            #expect(whole.starts(with: head))
            #expect(await log.wait(for: .taskDidComplete, of: stream.task))
            #expect(stream.task.error == nil)
        }
    }

    /// A reader whose serializer fails stops alone: the other reads on to the end, and the request
    /// is not cancelled. (The failure cancelled the request, for every reader.) The server sends
    /// the bad line and holds the rest until that reader has failed.
    @Test("A reader whose decoding fails stops alone; the other reads every byte")
    func aReaderWhoseDecodingFailsStopsAlone() async throws {
        try await Transport.http1.run { server, manager in
            let (gate, release) = AsyncStream<Void>.makeStream()
            defer { release.finish() }
            let body = Data("not json\n".utf8) + Data(repeating: UInt8(ascii: "x"), count: 100_000)
            server.route("/bad-line-first") { _ in
                TestServer.Response(body: body, bodyHeldUntil: { for await _ in gate { break } }, bytesSentBeforeHold: 9)
            }
            let log = TaskNotificationLog()
            let stream = try await manager.stream(Request(url: server.url("/bad-line-first")))
            let readers = stream.broadcast(to: 2)
            let error = await #expect(throws: CourierError.self) {
                for try await _ in readers[1].decoded(Int.self) {}
            }
            #expect(error?.code == .responseSerializationFailed)
            #expect(stream.task.state == .running, "the other reader is still there")
            release.yield()
            let whole = try await Self.bytes(of: readers[0])
            #expect(whole.count == 100_009)
            #expect(whole == body)
            #expect(await log.wait(for: .taskDidComplete, of: stream.task))
            #expect(stream.task.error == nil)
        }
    }

    @Test("When every reader stopped early (one never iterated), the request is cancelled and nothing is left alive")
    func allReadersStopEarly() async throws {
        try await Transport.http1.run { server, manager in
            weak var weakBroadcast: StreamBroadcast?
            let log = TaskNotificationLog()
            let stream = try await manager.stream(Request(url: server.url("/courier/big/50000000")))
            do {
                let readers = stream.broadcast(to: 2)
                weakBroadcast = readers[0].body.broadcast
                #expect(weakBroadcast != nil)
                let head = try await Self.bytes(of: readers[0], upTo: 1)
                #expect(!head.isEmpty)
                #expect(stream.task.state == .running, "one reader is still there")
            }
            // The second reader was never iterated: letting go of it stopped it.
            #expect(await log.wait(for: .taskDidComplete, of: stream.task))
            #expect(stream.task.error?.code == .cancelled)
            #expect(weakBroadcast == nil)
        }
    }

    @Test("No readers: an empty broadcast, and the request is cancelled")
    func noReaders() async throws {
        // A precondition stopped the process.
        try await Transport.http1.run { server, manager in
            let log = TaskNotificationLog()
            let stream = try await manager.stream(Request(url: server.url("/courier/big/50000000")))
            #expect(stream.broadcast(to: 0).isEmpty)
            #expect(await log.wait(for: .taskDidComplete, of: stream.task))
            #expect(stream.task.error?.code == .cancelled)
        }
    }

    @Test("A failure mid-body reaches every reader after every byte that arrived", arguments: Transport.allCases)
    func aFailureReachesEveryReader(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            let stream = try await manager.stream(Request(url: server.url("/courier/truncated/100000")))
            let readers = stream.broadcast(to: 2)
            let outcomes = await withTaskGroup(of: (Int, CourierError?).self) { group in
                for reader in readers {
                    group.addTask {
                        var received = 0
                        do {
                            for try await chunk in reader.body { received += chunk.readableBytes }
                            return (received, nil)
                        } catch {
                            return (received, error as? CourierError)
                        }
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(outcomes.count == 2)
            for (received, error) in outcomes {
                #expect(received == 100_000)
                #expect(error?.code == .connectionClosed)
            }
        }
    }

    @Test("A body gathered whole before the call returned is broadcast too; a second iteration of a reader ends at once")
    func gatheredBodyAndSecondIteration() async throws {
        try await Transport.http1.run { server, manager in
            let stream = try await manager.stream(Request(url: server.url("/bytes/1000?seed=1")), gatheringBodiesUpTo: 1_000_000)
            let readers = stream.broadcast(to: 2)
            #expect(try await Self.bytes(of: readers[0]).count == 1000)
            #expect(try await Self.bytes(of: readers[1]).count == 1000)
            #expect(try await Self.bytes(of: readers[1]).isEmpty, "a body is read once")
        }
    }
}

/// The broadcast without I/O: a source the test feeds chunk by chunk.
@Suite("Stream broadcast: readers, waits, stops and failures, without I/O")
struct StreamBroadcastMachineTests {
    /// Chunks the test yields (or a failure it finishes with), read as a broadcast reads a body.
    struct FedSource: BroadcastSource {
        var iterator: AsyncThrowingStream<ByteBuffer, any Error>.Iterator
        mutating func next() async throws(CourierError) -> ByteBuffer? {
            do { return try await self.iterator.next() } catch { throw (error as? CourierError) ?? CourierError(.cancelled, "\(error)") }
        }
    }

    final class Abandons: Sendable {
        let count = NIOLockedValueBox(0)
    }

    static func make(readers: Int) -> (StreamBroadcast, AsyncThrowingStream<ByteBuffer, any Error>.Continuation, Abandons) {
        let (stream, feed) = AsyncThrowingStream<ByteBuffer, any Error>.makeStream()
        let abandons = Abandons()
        let broadcast = StreamBroadcast(source: FedSource(iterator: stream.makeAsyncIterator()), readers: readers) {
            abandons.count.withLockedValue { $0 += 1 }
        }
        return (broadcast, feed, abandons)
    }

    /// Yields until `condition` holds of the broadcast (a state another task reaches without an event to wait on).
    static func until(_ broadcast: StreamBroadcast, _ condition: ((buffered: Int, isReading: Bool, waiting: Int)) -> Bool) async {
        while !condition(broadcast.snapshot) { await Task.yield() }
    }

    @Test("Every reader gets every chunk in order; a chunk is dropped once every reader read it")
    func everyChunkToEveryReader() async throws {
        let (broadcast, feed, abandons) = Self.make(readers: 2)
        for text in ["a", "b", "c"] { feed.yield(ByteBuffer(string: text)) }
        feed.finish()
        #expect(try await broadcast.next(for: 0) == ByteBuffer(string: "a"))
        #expect(try await broadcast.next(for: 0) == ByteBuffer(string: "b"))
        #expect(broadcast.snapshot.buffered == 2, "reader 1 has read neither")
        #expect(try await broadcast.next(for: 1) == ByteBuffer(string: "a"))
        #expect(broadcast.snapshot.buffered == 1)
        #expect(try await broadcast.next(for: 1) == ByteBuffer(string: "b"))
        #expect(broadcast.snapshot.buffered == 0)
        #expect(try await broadcast.next(for: 1) == ByteBuffer(string: "c"))
        #expect(try await broadcast.next(for: 1) == nil)
        #expect(try await broadcast.next(for: 0) == ByteBuffer(string: "c"))
        #expect(try await broadcast.next(for: 0) == nil)
        #expect(broadcast.snapshot.buffered == 0)
        #expect(abandons.count.withLockedValue { $0 } == 0, "the body ended: nothing to cancel")
    }

    @Test("A reader waits for the chunk another is reading, and gets it")
    func aReaderWaitsForTheReader() async throws {
        let (broadcast, feed, _) = Self.make(readers: 2)
        async let first = broadcast.next(for: 0)
        await Self.until(broadcast) { $0.isReading }
        async let second = broadcast.next(for: 1)
        await Self.until(broadcast) { $0.waiting == 1 }
        feed.yield(ByteBuffer(string: "x"))
        #expect(try await first == ByteBuffer(string: "x"))
        #expect(try await second == ByteBuffer(string: "x"))
        feed.finish()
    }

    @Test("A waiting reader whose task is cancelled stops with .cancelled; the other reads on; nothing is cancelled")
    func aWaitingReaderIsCancelled() async throws {
        let (broadcast, feed, abandons) = Self.make(readers: 2)
        async let first = broadcast.next(for: 0)
        await Self.until(broadcast) { $0.isReading }
        // The waiting reader is the group's one child, so cancelling the group cancels it alone.
        let error = await withTaskGroup(of: CourierError?.self) { group in
            group.addTask {
                do throws(CourierError) {
                    _ = try await broadcast.next(for: 1)
                    return nil
                } catch {
                    return error
                }
            }
            await Self.until(broadcast) { $0.waiting == 1 }
            group.cancelAll()
            return await group.next() ?? nil
        }
        #expect(error?.code == .cancelled)
        #expect(broadcast.snapshot.waiting == 0)
        broadcast.stop(1)
        feed.yield(ByteBuffer(string: "x"))
        #expect(try await first == ByteBuffer(string: "x"))
        #expect(broadcast.snapshot.buffered == 0, "the stopped reader holds nothing")
        feed.finish()
        #expect(try await broadcast.next(for: 0) == nil)
        #expect(abandons.count.withLockedValue { $0 } == 0)
    }

    @Test("When every reader stopped before the end, the broadcast is abandoned once")
    func everyReaderStops() async throws {
        let (broadcast, feed, abandons) = Self.make(readers: 3)
        feed.yield(ByteBuffer(string: "a"))
        #expect(try await broadcast.next(for: 0) == ByteBuffer(string: "a"))
        broadcast.stop(0)
        broadcast.stop(1)
        broadcast.stop(1)
        #expect(abandons.count.withLockedValue { $0 } == 0)
        broadcast.stop(2)
        broadcast.stop(2)
        #expect(abandons.count.withLockedValue { $0 } == 1)
        #expect(broadcast.snapshot.buffered == 0)
        #expect(try await broadcast.next(for: 0) == nil, "a stopped reader reads nothing")
        feed.finish()
    }

    @Test("A failure reaches every reader after the chunks it had not read")
    func aFailureAfterTheChunks() async throws {
        let (broadcast, feed, _) = Self.make(readers: 2)
        feed.yield(ByteBuffer(string: "a"))
        feed.finish(throwing: CourierError(.connectionClosed, "closed"))
        #expect(try await broadcast.next(for: 0) == ByteBuffer(string: "a"))
        await #expect(throws: CourierError.self) { _ = try await broadcast.next(for: 0) }
        #expect(try await broadcast.next(for: 1) == ByteBuffer(string: "a"))
        let error = await #expect(throws: CourierError.self) { _ = try await broadcast.next(for: 1) }
        #expect(error?.code == .connectionClosed)
    }
}

/// `StreamBroadcast` without sockets: what it does with the body's iterator.
@Suite("Stream broadcast: the body's iterator")
struct StreamBroadcastSourceTests {
    /// Reads the broadcast when it goes, as a body's iterator whose end cancels the task (and so
    /// runs the task's hooks) can.
    final class Probe: @unchecked Sendable {  // Set once before use, read once in deinit, on one thread.
        weak var broadcast: StreamBroadcast?
        let seen: NIOLockedValueBox<Int?>
        init(seen: NIOLockedValueBox<Int?>) { self.seen = seen }
        deinit { self.seen.withLockedValue { $0 = self.broadcast?.snapshot.buffered } }
    }
    struct ProbedSource: BroadcastSource {
        let probe: Probe
        mutating func next() async throws(CourierError) -> ByteBuffer? { nil }
    }

    @Test func theLastReaderStoppingLetsGoOfTheIteratorOutsideTheLock() {
        // The iterator was dropped under the broadcast's lock: one whose end read the broadcast
        // stopped the process (a recursive lock).
        let seen = NIOLockedValueBox<Int?>(nil)
        let abandoned = NIOLockedValueBox(false)
        let broadcast = Self.broadcast(probing: seen) { abandoned.withLockedValue { $0 = true } }
        broadcast.stop(0)
        #expect(seen.withLockedValue { $0 } == 0, "the iterator went when the last reader stopped")
        #expect(abandoned.withLockedValue { $0 })
    }

    /// A broadcast to one reader whose iterator (its only owner of the probe) records what it
    /// reads of the broadcast when it goes.
    static func broadcast(probing seen: NIOLockedValueBox<Int?>, abandon: @escaping @Sendable () -> Void) -> StreamBroadcast {
        let probe = Probe(seen: seen)
        let broadcast = StreamBroadcast(source: ProbedSource(probe: probe), readers: 1, abandon: abandon)
        probe.broadcast = broadcast
        return broadcast
    }
}
