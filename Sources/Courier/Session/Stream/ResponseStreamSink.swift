import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Synchronization

/// The producing side of a streamed response body: the task's delegate yields chunks into it,
/// the consumer reads them from its ``ResponseBodyStream``.
///
/// Once more than ``UnreadBytesWatermark/highWatermark`` bytes wait unread, the exchange stops
/// reading (TCP flow control, or the HTTP/2 stream's window, then slows the server) until the
/// consumer has brought them down to ``UnreadBytesWatermark/lowWatermark``.
final class ResponseStreamSink: NIOAsyncSequenceProducerDelegate, Sendable {
    typealias Producer = NIOThrowingAsyncSequenceProducer<ByteBuffer, any Error, UnreadBytesWatermark, ResponseStreamSink>

    /// The sizes of the chunks waiting unread, for the back-pressure strategy.
    private let ledger = ChunkLedger()

    private struct State {
        var source: Producer.Source?
        var sequence: Producer?
        /// Whether the consumer asked for a pause that no `produceMore` has lifted.
        var wantsPause = false
        /// Counts `produceMore` calls, so that a pause decided before one is not applied after it.
        var produceMoreCount = 0
        /// Waiting for the response head, or for the failure that came instead.
        var headWaiter: CheckedContinuation<Void, any Error>?
        var headArrived = false
        var failureBeforeHead: CourierError?
        /// The task, for `didTerminate` to cancel; set by the task's delegate.
        weak var delegate: TaskDelegate?
        var isFinished = false
        /// A head held back because its attempt may be retried, and the body chunks that came
        /// with it, not yet the consumer's.
        var holdingHead = false
        var heldChunks: [ByteBuffer] = []
        var heldBytes = 0
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

    init() {
        let made = Producer.makeSequence(
            elementType: ByteBuffer.self,
            failureType: (any Error).self,
            backPressureStrategy: UnreadBytesWatermark(ledger: self.ledger),
            finishOnDeinit: false,
            delegate: self)
        self.state.withLockedValue {
            $0.source = made.source
            $0.sequence = made.sequence
        }
    }

    /// The consumer's sequence; handed out once.
    func takeSequence() -> Producer? {
        self.state.withLockedValue { state in
            defer { state.sequence = nil }
            return state.sequence
        }
    }

    func attach(_ delegate: TaskDelegate) {
        self.state.withLockedValue { $0.delegate = delegate }
    }

    /// Whether the exchange should stop reading.
    var wantsPause: Bool { self.state.withLockedValue { $0.wantsPause } }

    /// Whether the consumer has (or had) the response head.
    var consumerHasHead: Bool { self.state.withLockedValue { $0.headArrived } }

    /// Whether a caller waits in ``waitForHead()`` (for tests).
    var isWaitingForHead: Bool { self.state.withLockedValue { $0.headWaiter != nil } }

    /// Whether the body has ended (``finish(with:)``) (for tests).
    var hasFinished: Bool { self.state.withLockedValue { $0.isFinished } }

    // MARK: Head

    /// Waits until the response head arrived; throws the task's error if it ended first.
    func waitForHead() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
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
        let waiter = self.state.withLockedValue { state -> CheckedContinuation<Void, any Error>? in
            state.headArrived = true
            state.holdingHead = false
            state.heldChunks = []
            state.heldBytes = 0
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

    /// Holds a head back from the consumer (its attempt may be retried): a later attempt's head
    /// replaces it, the task's end hands it over (``finish(with:)``).
    func holdHead() {
        self.state.withLockedValue { state in
            state.holdingHead = true
            state.heldChunks = []
            state.heldBytes = 0
        }
    }

    /// Keeps a chunk of a held response, or says it is not held, or hands the head over once the
    /// held body is over ``heldBodyLimit``.
    func hold(_ chunk: ByteBuffer) -> Hold {
        let (hold, waiter) = self.state.withLockedValue { state -> (Hold, CheckedContinuation<Void, any Error>?) in
            guard state.holdingHead else { return (.notHolding, nil) }
            state.heldChunks.append(chunk)
            state.heldBytes += chunk.readableBytes
            guard state.heldBytes > Self.heldBodyLimit else { return (.held, nil) }
            let chunks = state.heldChunks
            state.holdingHead = false
            state.heldChunks = []
            state.heldBytes = 0
            state.headArrived = true
            defer { state.headWaiter = nil }
            return (.released(chunks), state.headWaiter)
        }
        waiter?.resume()
        return hold
    }

    // MARK: Body

    /// Hands a chunk to the consumer. Returns false when the consumer is gone.
    func yield(_ chunk: ByteBuffer) -> Bool {
        let (source, before) = self.state.withLockedValue { ($0.source, $0.produceMoreCount) }
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
        let (source, waiter, released) = self.state.withLockedValue {
            state -> (Producer.Source?, CheckedContinuation<Void, any Error>?, [ByteBuffer]?) in
            state.isFinished = true
            // A held head whose attempt turned out to be the last: now the consumer's, with its
            // body. With an error (a retrier failed the task), the caller gets the error instead.
            var released: [ByteBuffer]?
            if state.holdingHead, error == nil {
                state.headArrived = true
                released = state.heldChunks
            }
            state.holdingHead = false
            state.heldChunks = []
            state.heldBytes = 0
            if !state.headArrived { state.failureBeforeHead = failureBeforeHead }
            defer {
                state.source = nil
                state.headWaiter = nil
            }
            return (state.source, state.headWaiter, released)
        }
        if let released {
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
