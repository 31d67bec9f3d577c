@testable import Courier
import NIOCore
import Testing

/// A streamed body's back-pressure counts unread bytes, not chunks: small chunks (HTTP/2 `DATA`
/// frames of a few KiB) must not stop the connection every few KiB, and one large chunk must not
/// get a free pass. First the strategy alone, fed the calls `NIOAsyncSequenceProducer` makes, then
/// the sink read through the public iterator, without I/O.
@Suite("Streamed bodies: back-pressure in bytes")
struct UnreadBytesWatermarkTests {
    static let high = UnreadBytesWatermark.highWatermark
    static let low = UnreadBytesWatermark.lowWatermark

    // MARK: The strategy

    @Test func smallChunksStopTheProducerOnlyPastTheHighWatermark() {
        let ledger = ChunkLedger()
        var strategy = UnreadBytesWatermark(ledger: ledger)
        let small = 1024
        for depth in 1...(Self.high / small) {
            ledger.record(small)
            let goesOn = strategy.didYield(bufferDepth: depth)
            #expect(goesOn, "stopped with \(depth) chunks of \(small) bytes unread")
        }
        ledger.record(1)
        let goesOnPastIt = strategy.didYield(bufferDepth: Self.high / small + 1)
        #expect(!goesOnPastIt, "one byte past the high watermark")
    }

    @Test func twoChunksMayWaitHoweverLargeThenTheByteBoundHolds() {
        let ledger = ChunkLedger()
        var strategy = UnreadBytesWatermark(ledger: ledger)
        ledger.record(Self.high * 2)
        let first = strategy.didYield(bufferDepth: 1)
        #expect(first, "one chunk may always wait")
        ledger.record(1)
        let second = strategy.didYield(bufferDepth: 2)
        #expect(!second)
    }

    @Test func aChunkHandedToAWaitingConsumerIsNotUnread() {
        let ledger = ChunkLedger()
        var strategy = UnreadBytesWatermark(ledger: ledger)
        // The consumer waits: the sequence hands the chunk over and its buffer stays empty.
        ledger.record(Self.high * 4)
        let handedOver = strategy.didYield(bufferDepth: 0)
        #expect(handedOver)
        ledger.record(Self.high / 2)
        let first = strategy.didYield(bufferDepth: 1)
        #expect(first)
        ledger.record(Self.high / 2)
        let second = strategy.didYield(bufferDepth: 2)
        #expect(second, "exactly the high watermark unread: the chunk handed over is not counted")
    }

    @Test func theProducerGoesOnOnlyOnceTheUnreadBytesAreDownToTheLowWatermark() {
        let ledger = ChunkLedger()
        var strategy = UnreadBytesWatermark(ledger: ledger)
        let size = 16 * 1024
        let count = Self.high / size + 2
        var answers: [Bool] = []
        for depth in 1...count {
            ledger.record(size)
            answers.append(strategy.didYield(bufferDepth: depth))
        }
        #expect(answers.last == false)
        for depth in stride(from: count - 1, through: 0, by: -1) {
            let unread = depth * size
            // Between the watermarks the answer stays what it was, stopped; an empty buffer, or one
            // down to the low watermark, asks for more.
            let goesOn = strategy.didConsume(bufferDepth: depth)
            #expect(goesOn == (depth == 0 || unread <= Self.low), "\(unread) bytes unread")
        }
    }

    @Test func aChunkRecordedWhileTheConsumerTakesOneIsCountedOnce() {
        let ledger = ChunkLedger()
        var strategy = UnreadBytesWatermark(ledger: ledger, lowWatermark: 10, highWatermark: 100)
        ledger.record(60)
        let first = strategy.didYield(bufferDepth: 1)
        #expect(first)
        ledger.record(30)
        let second = strategy.didYield(bufferDepth: 2)
        #expect(second)
        // The producer records the next chunk; before it is in, the consumer takes the oldest.
        ledger.record(50)
        let afterTaking = strategy.didConsume(bufferDepth: 1)
        #expect(afterTaking)
        // Unread now: 30 + 50. Had the ledger cut the 50 it had not yet seen go in, instead of
        // the 60, it would count 50 alone, and the next 30 would not pass the high watermark.
        let third = strategy.didYield(bufferDepth: 2)
        #expect(third)
        ledger.record(30)
        let fourth = strategy.didYield(bufferDepth: 3)
        #expect(!fourth, "30 + 50 + 30 bytes unread")
    }

    // MARK: The sink, read through the public iterator

    static func chunk(_ size: Int) -> ByteBuffer { ByteBuffer(repeating: 0x61, count: size) }

    static func body(of sink: ResponseStreamSink) throws -> ResponseBodyStream {
        ResponseBodyStream(base: try #require(sink.takeSequence()), claimedThrough: sink)
    }

    @Test func theSinkPausesPastTheHighWatermarkAndReadsOnAtTheLowOne() async throws {
        let sink = ResponseStreamSink()
        let body = try Self.body(of: sink)
        let size = 16 * 1024
        let count = Self.high / size + 2
        for index in 1...count {
            #expect(sink.yield(Self.chunk(size)))
            #expect(sink.wantsPause == (index * size > Self.high), "\(index) chunks of \(size) bytes unread")
        }
        var unread = count * size
        var iterator = body.makeAsyncIterator()
        for _ in 0..<count {
            let chunk = try #require(try await iterator.next())
            unread -= chunk.readableBytes
            #expect(sink.wantsPause == (unread > Self.low), "\(unread) bytes unread")
        }
        sink.finish(with: nil)
        #expect(try await iterator.next() == nil)
    }

    @Test func theSinkIsNotPausedAgainUntilTheHighWatermarkIsPassedAgain() async throws {
        let sink = ResponseStreamSink()
        let body = try Self.body(of: sink)
        #expect(sink.yield(Self.chunk(Self.high + 1)))
        #expect(!sink.wantsPause, "one chunk may always wait")
        #expect(sink.yield(Self.chunk(10)))
        #expect(sink.wantsPause)
        var iterator = body.makeAsyncIterator()
        _ = try await iterator.next()
        #expect(!sink.wantsPause, "10 bytes unread")
        #expect(sink.yield(Self.chunk(Self.high - 10)))
        #expect(!sink.wantsPause, "exactly the high watermark unread")
        #expect(sink.yield(Self.chunk(1)))
        #expect(sink.wantsPause)
        sink.finish(with: nil)
    }
}
