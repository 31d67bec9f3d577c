import NIOConcurrencyHelpers
import NIOCore

/// The back-pressure of a streamed body, in bytes: the producer is asked to stop once more than
/// ``highWatermark`` bytes wait in the sequence's buffer, and to go on once they are down to
/// ``lowWatermark`` or fewer. Two chunks may always wait, however large, as they could before
/// the bound counted bytes: the consumer has the next one at hand.
///
/// A bound in chunks cannot serve every transport: an HTTP/2 `DATA` frame is often 8 or 16 KiB, an
/// HTTP/1.1 body part over TLS up to 256 KiB, one over cleartext from a few KiB to 64 KiB. Two
/// chunks stopped an HTTP/2 download every 16 KiB for a thread hop and back. With 128 KiB, a 1 GiB download
/// over HTTP/2 runs at over twice the speed (BENCHMARKS.md, "Streamed bodies").
///
/// `NIOAsyncSequenceProducer` tells a strategy only how many elements its buffer holds; a
/// ``ChunkLedger`` shared with the producing side supplies their sizes. A chunk handed straight to
/// a consumer already waiting never enters the buffer, so it is never counted as unread.
struct UnreadBytesWatermark: NIOAsyncSequenceProducerBackPressureStrategy {
    /// Unread bytes at or below which a stopped producer is asked for more.
    static let lowWatermark = 32 * 1024
    /// Unread bytes above which the producer is asked to stop.
    static let highWatermark = 128 * 1024

    let ledger: ChunkLedger
    let lowWatermark: Int
    let highWatermark: Int
    private var wantsMore = true

    init(ledger: ChunkLedger, lowWatermark: Int = Self.lowWatermark, highWatermark: Int = Self.highWatermark) {
        precondition(lowWatermark <= highWatermark)
        self.ledger = ledger
        self.lowWatermark = lowWatermark
        self.highWatermark = highWatermark
    }

    mutating func didYield(bufferDepth: Int) -> Bool {
        let unread = self.ledger.didYield(bufferDepth: bufferDepth)
        if bufferDepth >= 2, unread > self.highWatermark { self.wantsMore = false }
        return self.wantsMore
    }

    mutating func didConsume(bufferDepth: Int) -> Bool {
        let unread = self.ledger.didConsume(bufferDepth: bufferDepth)
        if bufferDepth == 0 || unread <= self.lowWatermark { self.wantsMore = true }
        return self.wantsMore
    }
}

/// The sizes of the chunks in a streamed body's buffer, oldest first, and their sum.
///
/// The producer records a chunk's size just before it yields the chunk (``record(_:)``); the
/// sequence's next call of the strategy moves it into the buffer's list. The consumer takes
/// chunks from the front, so the list is cut from the front to the depth the sequence reports.
/// One producer at a time: a task's chunks come from its exchange, one after the other.
final class ChunkLedger: Sendable {
    private struct State {
        /// Recorded, not yet seen by `didYield`: at most one while a `yield` is under way.
        var pending = CircularBuffer<Int>()
        /// The sizes of the chunks in the buffer, oldest first.
        var buffered = CircularBuffer<Int>()
        var bufferedBytes = 0

        mutating func trim(to depth: Int) -> Int {
            while self.buffered.count > depth { self.bufferedBytes -= self.buffered.removeFirst() }
            return self.bufferedBytes
        }
    }

    private let state = NIOLockedValueBox(State())

    /// A chunk of `bytes` is about to be yielded.
    func record(_ bytes: Int) {
        self.state.withLockedValue { $0.pending.append(bytes) }
    }

    /// The chunk recorded last went in (or straight to a waiting consumer); returns the bytes now
    /// in the buffer.
    func didYield(bufferDepth: Int) -> Int {
        self.state.withLockedValue { state in
            if let bytes = state.pending.popFirst() {
                state.buffered.append(bytes)
                state.bufferedBytes += bytes
            }
            return state.trim(to: bufferDepth)
        }
    }

    /// The consumer took a chunk; returns the bytes still in the buffer.
    func didConsume(bufferDepth: Int) -> Int {
        self.state.withLockedValue { $0.trim(to: bufferDepth) }
    }
}
