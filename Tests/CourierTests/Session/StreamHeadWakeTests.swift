@testable import Courier
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

/// A streamed task's caller is woken for the response head once the event loop that delivered it
/// has handed on the rest of the same read, so that a small body and its end wait for it instead
/// of costing it a second wake-up; a head that comes alone still reaches it at the end of that
/// loop iteration. The sink driven on a real event loop, without sockets.
@Suite("Streamed bodies: the caller's wake-up for the head")
struct StreamHeadWakeTests {
    @Test func aCallerWokenForTheHeadFindsTheBodyAndItsEndOfTheSameReadWaiting() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let sink = ResponseStreamSink()
        let sequence = try #require(sink.takeSequence())
        // Opened by the caller as soon as it is woken: the loop's work waits for it for a while
        // after the head, so that a caller woken at the head itself would see no end yet.
        let woken = ConditionLock(value: 0)
        // The caller waits on a task of its own so that this one can drive the loop meanwhile;
        // it is awaited below (the loop's work always ends the body, so it always returns).
        let caller = Task {
            try await sink.waitForHead()
            let endedBeforeWake = sink.hasFinished
            woken.lock()
            woken.unlock(withValue: 1)
            return endedBeforeWake
        }
        #expect(await eventually { sink.isWaitingForHead })
        group.next().execute {
            sink.headArrived()
            // Times out when the caller is (rightly) not woken yet; any timeout passes then.
            if woken.lock(whenValue: 1, timeoutSeconds: 0.2) { woken.unlock() }
            _ = sink.yield(ByteBuffer(string: "small body"))
            sink.finish(with: nil)
        }
        let endedBeforeWake = try await caller.value
        #expect(endedBeforeWake, "the caller was woken before the loop handed on the body and its end")
        let body = sequence.makeAsyncIterator()
        #expect(try await body.next() == ByteBuffer(string: "small body"))
        #expect(try await body.next() == nil)
        try await group.shutdownGracefully()
    }

    @Test func aHeadThatComesAloneReachesTheCallerAtTheEndOfItsLoopIteration() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let sink = ResponseStreamSink()
        let sequence = try #require(sink.takeSequence())
        // As above: a task of its own so that this one drives the loop; awaited below.
        let caller = Task {
            try await sink.waitForHead()
            return sink.hasFinished
        }
        #expect(await eventually { sink.isWaitingForHead })
        group.next().execute { sink.headArrived() }
        let endedBeforeWake = try await caller.value
        #expect(!endedBeforeWake)
        group.next().execute {
            _ = sink.yield(ByteBuffer(string: "later"))
            sink.finish(with: nil)
        }
        let body = sequence.makeAsyncIterator()
        #expect(try await body.next() == ByteBuffer(string: "later"))
        #expect(try await body.next() == nil)
        try await group.shutdownGracefully()
    }
}
