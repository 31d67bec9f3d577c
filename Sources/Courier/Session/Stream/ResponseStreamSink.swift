import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Synchronization

/// The producing side of a streamed response body: the task's delegate yields chunks into it,
/// the consumer reads them from its ``ResponseBodyStream``.
///
/// A sink made with a gathering limit (``init(gatheringUpTo:)``) reads a body whose
/// `Content-Length` is within it whole before the caller gets the head, and the consumer then
/// reads it from memory: no sequence is made for it, nothing waits on back-pressure, and the
/// caller is woken once instead of for the head and again for the body. A body that turns out
/// longer than the limit (decompressed, say) is streamed from there on, what was gathered first.
///
/// Once more than ``UnreadBytesWatermark/highWatermark`` bytes wait unread, the exchange stops
/// reading (TCP flow control, or the HTTP/2 stream's window, then slows the server) until the
/// consumer has brought them down to ``UnreadBytesWatermark/lowWatermark``.
final class ResponseStreamSink: NIOAsyncSequenceProducerDelegate, Sendable {
    typealias Producer = NIOThrowingAsyncSequenceProducer<ByteBuffer, any Error, UnreadBytesWatermark, ResponseStreamSink>

    /// The sizes of the chunks waiting unread, for the back-pressure strategy.
    private let ledger = ChunkLedger()
    /// Whether the consumer's body made its one iterator (``claimIterator()``).
    private let iteratorMade = Atomic<Bool>(false)

    /// True the first time only: SwiftNIO's producer allows one iterator and stops the process at
    /// a second (the consumer's body iterated twice); a later one ends at once.
    func claimIterator() -> Bool {
        !self.iteratorMade.exchange(true, ordering: .relaxed)
    }

    private struct State {
        var source: Producer.Source?
        var sequence: Producer?
        /// Whether the consumer asked for a pause that no `produceMore` has lifted.
        var wantsPause = false
        /// Counts `produceMore` calls, so that a pause decided before one is not applied after it.
        var produceMoreCount = 0
        /// Waiting for the response head, or for the failure that came instead. Unchecked (a
        /// checked one allocates per call): it is only ever resumed by whoever takes it out of
        /// this field under the lock, so once.
        var headWaiter: UnsafeContinuation<Void, any Error>?
        var headArrived = false
        var failureBeforeHead: CourierError?
        /// The task, for `didTerminate` to cancel; set by the task's delegate.
        weak var delegate: TaskDelegate?
        var isFinished = false
        /// A head that has arrived but is not the consumer's yet, and the body that came with it.
        var kept = Kept.nothing
        /// The whole body, gathered: the consumer's, read from memory (``takeBody()``).
        var completeBody: ByteBuffer??
        /// A copy of the final response's body for the session's cache, kept while the response
        /// may be stored (``recordHead(_:copy:)``); nil when none is kept.
        var cacheCopy: CacheCopy?
        /// The last response head that arrived (a retried attempt's replaces an earlier one's):
        /// once the consumer is woken, its response (``response``).
        var head: HTTPResponse?
        /// Whether the task was released without being resumed (``abandon()``).
        var abandoned = false

        /// The source chunks are yielded to, made on first use: a gathered body needs none.
        /// Once the body ended there is none to make (the sequence made before, if any, stays
        /// the consumer's).
        mutating func source(for sink: ResponseStreamSink) -> Producer.Source? {
            if let source = self.source { return source }
            guard !self.isFinished else { return nil }
            let made = Producer.makeSequence(
                elementType: ByteBuffer.self,
                failureType: (any Error).self,
                backPressureStrategy: UnreadBytesWatermark(ledger: sink.ledger),
                finishOnDeinit: false,
                delegate: sink)
            self.source = made.source
            self.sequence = made.sequence
            self.madeSequence = true
            return made.source
        }

        /// Whether a sequence was made (for tests: a gathered body needs none).
        var madeSequence = false
    }

    /// What the sink keeps from the consumer: one of the two at most, so each replaces the other.
    private enum Kept {
        case nothing
        /// A head held back because its attempt may be retried, and the chunks that came with it.
        case heldForRetry(chunks: [ByteBuffer], bytes: Int)
        /// A head kept until its small body, gathered so far, is whole (``init(gatheringUpTo:)``).
        case gathering(ByteBuffer?)

        var isGathering: Bool {
            if case .gathering = self { return true }
            return false
        }

        /// The gathered body with `chunk` appended, taken out (`self` is then ``nothing``), so that
        /// it grows in place; nil when nothing is gathered.
        mutating func takeGathered(appending chunk: ByteBuffer) -> ByteBuffer? {
            guard self.isGathering, case .gathering(var body) = self.take() else { return nil }
            if body == nil { body = chunk } else { body!.writeImmutableBuffer(chunk) }
            return body
        }

        /// What is kept, moved out (no retain): `self` is then ``nothing``.
        mutating func take() -> Kept {
            var taken = Kept.nothing
            swap(&taken, &self)
            return taken
        }
    }

    /// The body kept for the cache: every chunk of the final response, until it is longer than the
    /// cache keeps, or all streams together keep more than the cache allows them
    /// (``ResponseCache/reserveStreamCopy(_:)``): then nothing more is kept, and the response is
    /// not stored. What it reserved is given back when it is dropped (``drop()``).
    struct CacheCopy {
        let cache: ResponseCache
        let limit: Int
        /// The buffer's first capacity: the announced length, when there is one within `limit`.
        let capacity: Int
        var body: ByteBuffer?
        var outgrewLimit = false

        /// A copy of at most `limit` bytes for `cache`, of a body of `expected` bytes (-1: unknown).
        init(cache: ResponseCache, limit: Int, expected: Int64 = -1) {
            self.cache = cache
            // No buffer holds more than ``MemoryBodySink/largestBody`` (a cache of 86 GB has larger entries).
            self.limit = min(limit, MemoryBodySink.largestBody)
            self.capacity = expected > 0 ? Int(min(expected, Int64(self.limit))) : 0
        }

        /// The bytes kept, and reserved in the cache's budget.
        var bytes: Int { self.body?.readableBytes ?? 0 }

        mutating func append(_ chunk: ByteBuffer) {
            guard !self.outgrewLimit else { return }
            let length = chunk.readableBytes
            guard self.bytes + length <= self.limit, self.cache.reserveStreamCopy(length) else {
                self.drop()
                self.outgrewLimit = true
                return
            }
            if self.body == nil {
                // Copied, not kept as it came: a chunk is often a slice of a much larger read
                // buffer, which it would keep alive past the consumer's reading.
                var body = ByteBufferAllocator().buffer(capacity: max(self.capacity, length))
                body.writeImmutableBuffer(chunk)
                self.body = body
            } else {
                self.body!.writeImmutableBuffer(chunk)
            }
        }

        /// Lets go of the body and of what it reserved.
        mutating func drop() {
            self.cache.releaseStreamCopy(self.bytes)
            self.body = nil
        }
    }

    /// The most body a held-back response keeps before it goes to the consumer anyway (and its
    /// attempt is no longer retried): error bodies are small; a large one is not held.
    static let heldBodyLimit = 256 * 1024

    /// What ``hold(_:)`` did with a chunk.
    enum Hold {
        /// No head is held: deliver the chunk.
        case notHolding
        /// Kept with the held head.
        case held
        /// The held body went over ``heldBodyLimit``: the head went to the consumer, and these
        /// chunks (the one given last) are to be delivered.
        case released([ByteBuffer])
    }

    private let state = Mutex(State())

    /// The most body, in bytes, gathered whole before the caller gets the head; 0 streams every
    /// body from its head.
    let gatheringLimit: Int

    /// A sink for a body streamed from its head, or, with a `gatheringLimit` above 0, gathered
    /// whole first when its `Content-Length` is at most that many bytes.
    init(gatheringUpTo gatheringLimit: Int = 0) {
        self.gatheringLimit = gatheringLimit
        // A body streamed from its head in any case gets its sequence at once, as before.
        guard gatheringLimit <= 0 else { return }
        self.state.withLockedValue { _ = $0.source(for: self) }
    }

    /// The consumer's sequence (made now if no chunk came yet); handed out once.
    func takeSequence() -> Producer? {
        self.state.withLockedValue { state in
            _ = state.source(for: self)
            defer { state.sequence = nil }
            return state.sequence
        }
    }

    /// The consumer's body: read from memory when it was gathered whole, else the sequence.
    func takeBody() -> ResponseBodyStream? {
        let complete = self.state.withLockedValue { state -> ByteBuffer?? in
            defer { state.completeBody = nil }
            return state.completeBody
        }
        if let complete { return ResponseBodyStream(complete: complete) }
        return self.takeSequence().map { ResponseBodyStream(base: $0, claimedThrough: self) }
    }

    func attach(_ delegate: TaskDelegate) {
        self.state.withLockedValue { $0.delegate = delegate }
    }

    /// Whether the exchange should stop reading.
    var wantsPause: Bool { self.state.withLockedValue { $0.wantsPause } }

    /// Whether the consumer has (or had) the response head, or will have it with its gathered
    /// body: either way, the attempt that got it is the one the caller reads.
    var consumerHasHead: Bool { self.state.withLockedValue { $0.headArrived || $0.kept.isGathering } }

    /// Whether a caller waits in ``waitForHead()`` (for tests).
    var isWaitingForHead: Bool { self.state.withLockedValue { $0.headWaiter != nil } }

    /// Whether a sequence was made for the consumer (for tests).
    var madeSequence: Bool { self.state.withLockedValue { $0.madeSequence } }

    /// Whether the body has ended (``finish(with:)``) (for tests).
    var hasFinished: Bool { self.state.withLockedValue { $0.isFinished } }

    /// The response head the consumer reads, once ``waitForHead()`` returned.
    var response: HTTPResponse? { self.state.withLockedValue { $0.head } }

    /// Whether the task was released without being resumed (``abandon()``).
    var wasAbandoned: Bool { self.state.withLockedValue { $0.abandoned } }

    /// The task was released without being resumed: nothing will come. The body ends, and a
    /// reader waiting for the head is told so (``wasAbandoned``), to hand nothing on.
    func abandon() {
        self.state.withLockedValue { $0.abandoned = true }
        self.finish(with: CourierError(.cancelled, "the task was released without being resumed"))
    }

    // MARK: Head

    /// Waits until the response head arrived; throws the task's error if it ended first.
    func waitForHead() async throws {
        try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
            let outcome = self.state.withLockedValue { state -> Result<Void, CourierError>? in
                if state.headArrived { return .success(()) }
                if let failure = state.failureBeforeHead { return .failure(failure) }
                state.headWaiter = continuation
                return nil
            }
            if let outcome { continuation.resume(with: outcome) }
        }
    }

    /// The head is the consumer's. The waiting caller is woken once the event loop that delivered
    /// the head has handed on the rest of what it read with it: a small body and its end usually
    /// come in the same read, and the caller then finds them waiting instead of sleeping again
    /// for them (a thread's wake-up a request, the larger part of a streamed request's cost). The
    /// head is not held longer than that: a server that sends the head and waits (events, a long
    /// poll) has it delivered at the end of that loop iteration. Off an event loop (a cached
    /// response, another engine), the caller is woken at once.
    func headArrived() {
        let waiter = self.state.withLockedValue { state -> UnsafeContinuation<Void, any Error>? in
            state.headArrived = true
            // The consumer takes the sequence once woken, even if the body ends first.
            _ = state.source(for: self)
            state.kept = .nothing
            defer { state.headWaiter = nil }
            return state.headWaiter
        }
        guard let waiter else { return }
        if let loop = MultiThreadedEventLoopGroup.currentEventLoop {
            loop.execute { waiter.resume() }
        } else {
            waiter.resume()
        }
    }

    /// Keeps the head from the consumer until its body, of at most ``gatheringLimit`` bytes, is
    /// whole (``finish(with:)``), or turns out longer (``yield(_:)``).
    func gatherBody() {
        // An earlier attempt's held head and body are not the consumer's.
        self.state.withLockedValue { $0.kept = .gathering(nil) }
    }

    /// Holds a head back from the consumer (its attempt may be retried): a later attempt's head
    /// replaces it, the task's end hands it over (``finish(with:)``).
    func holdHead() {
        self.state.withLockedValue { $0.kept = .heldForRetry(chunks: [], bytes: 0) }
    }

    // MARK: Cache

    /// Records the response head that just arrived, and starts `copy` of its body for the cache
    /// (``takeCacheCopy()``), or none (an earlier attempt's copy is dropped either way).
    func recordHead(_ head: HTTPResponse, copy: CacheCopy?) {
        self.state.withLockedValue { state in
            state.head = head
            state.cacheCopy?.drop()
            state.cacheCopy = copy
        }
    }

    /// Lets go of the copy for the cache (the task failed: nothing is stored).
    func dropCacheCopy() {
        self.state.withLockedValue { state in
            state.cacheCopy?.drop()
            state.cacheCopy = nil
        }
    }

    /// The whole body kept for the cache, taken out (what it reserved is given back): nil when
    /// none was kept or it outgrew its limit, an empty buffer for an empty body.
    func takeCacheCopy() -> ByteBuffer? {
        self.state.withLockedValue { state -> ByteBuffer? in
            guard var copy = state.cacheCopy else { return nil }
            state.cacheCopy = nil
            let body = copy.outgrewLimit ? nil : copy.body ?? ByteBuffer()
            copy.drop()
            return body
        }
    }

    deinit {
        // A copy never taken (the task failed, or its response was not stored after all).
        self.state.withLockedValue { $0.cacheCopy?.drop() }
    }

    // MARK: Body

    /// Keeps a chunk of a held response, or says it is not held, or hands the head over once the
    /// held body is over ``heldBodyLimit``. Every chunk of the final response passes here once:
    /// the cache's copy takes it here too.
    func hold(_ chunk: ByteBuffer) -> Hold {
        let (hold, waiter) = self.state.withLockedValue { state -> (Hold, UnsafeContinuation<Void, any Error>?) in
            if state.cacheCopy != nil { state.cacheCopy!.append(chunk) }
            guard case .heldForRetry = state.kept, case .heldForRetry(var chunks, let bytes) = state.kept.take() else {
                return (.notHolding, nil)
            }
            // Taken out while it grows, so that the array is not copied.
            chunks.append(chunk)
            guard bytes + chunk.readableBytes > Self.heldBodyLimit else {
                state.kept = .heldForRetry(chunks: chunks, bytes: bytes + chunk.readableBytes)
                return (.held, nil)
            }
            _ = state.source(for: self)
            state.headArrived = true
            defer { state.headWaiter = nil }
            return (.released(chunks), state.headWaiter)
        }
        waiter?.resume()
        return hold
    }

    /// Hands a chunk to the consumer, or gathers it. Returns false when the consumer is gone.
    func yield(_ chunk: ByteBuffer) -> Bool {
        enum Step {
            /// Kept with the gathered body.
            case gathered
            /// To the source, with the count of `produceMore` calls before it.
            case stream(Producer.Source?, Int)
            /// The gathered body went over the limit: it goes to the source, the waiter is woken.
            case overflow(Producer.Source?, Int, UnsafeContinuation<Void, any Error>?, ByteBuffer)
        }
        let step = self.state.withLockedValue { state -> Step in
            if let gathered = state.kept.takeGathered(appending: chunk) {
                guard gathered.readableBytes > self.gatheringLimit else {
                    state.kept = .gathering(gathered)
                    return .gathered
                }
                // Longer than announced (decompressed, say): streamed from here, with what came
                // so far as its first chunk.
                state.headArrived = true
                defer { state.headWaiter = nil }
                return .overflow(state.source(for: self), state.produceMoreCount, state.headWaiter, gathered)
            }
            return .stream(state.source(for: self), state.produceMoreCount)
        }
        switch step {
        case .gathered:
            return true
        case .overflow(let source, let before, let waiter, let gathered):
            waiter?.resume()
            return self.yield(gathered, to: source, before: before)
        case .stream(let source, let before):
            return self.yield(chunk, to: source, before: before)
        }
    }

    private func yield(_ chunk: ByteBuffer, to source: Producer.Source?, before: Int) -> Bool {
        guard let source else { return false }
        self.ledger.record(chunk.readableBytes)
        switch source.yield(chunk) {
        case .produceMore:
            return true
        case .stopProducing:
            self.state.withLockedValue { state in
                if state.produceMoreCount == before { state.wantsPause = true }
            }
            return true
        case .dropped:
            return false
        }
    }

    /// Ends the body: normally, or with the task's error. Before the head, the error goes to the
    /// caller still waiting for it.
    func finish(with error: CourierError?) {
        let failureBeforeHead = error ?? CourierError(.internalInconsistency, "the task ended with no response")
        let (source, waiter, headArrived, released) = self.state.withLockedValue {
            state -> (Producer.Source?, UnsafeContinuation<Void, any Error>?, Bool, [ByteBuffer]) in
            var released: [ByteBuffer] = []
            // What was kept is the consumer's now if the task succeeded: a held head whose attempt
            // turned out to be the last, with its body; a gathered body, whole, read from memory.
            // With an error (a retrier failed the task, the body broke off), the caller gets the
            // error instead.
            switch state.kept.take() {
            case .heldForRetry(let chunks, _) where error == nil:
                state.headArrived = true
                released = chunks
                _ = state.source(for: self)
            case .gathering(let body) where error == nil:
                state.headArrived = true
                state.completeBody = .some(body)
            case .nothing, .heldForRetry, .gathering:
                break
            }
            state.isFinished = true
            if !state.headArrived { state.failureBeforeHead = failureBeforeHead }
            defer {
                state.source = nil
                state.headWaiter = nil
            }
            return (state.source, state.headWaiter, state.headArrived, released)
        }
        if headArrived {
            waiter?.resume()
            for chunk in released {
                self.ledger.record(chunk.readableBytes)
                _ = source?.yield(chunk)
            }
        } else {
            waiter?.resume(throwing: failureBeforeHead)
        }
        if let error { source?.finish(error) } else { source?.finish() }
    }

    // MARK: NIOAsyncSequenceProducerDelegate

    func produceMore() {
        let delegate = self.state.withLockedValue { state -> TaskDelegate? in
            state.produceMoreCount += 1
            state.wantsPause = false
            return state.delegate
        }
        delegate?.applyReceiveWish()
    }

    func didTerminate() {
        // The consumer stopped reading (it was cancelled, or dropped the sequence): so does the task.
        let (finished, delegate) = self.state.withLockedValue { ($0.isFinished, $0.delegate) }
        if !finished { delegate?.cancel() }
    }
}
