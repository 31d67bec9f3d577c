import NIOConcurrencyHelpers
import NIOCore

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
    }

    private let state = NIOLockedValueBox(State())

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

    func headArrived() {
        let waiter = self.state.withLockedValue { state -> CheckedContinuation<Void, any Error>? in
            state.headArrived = true
            defer { state.headWaiter = nil }
            return state.headWaiter
        }
        waiter?.resume()
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
        let (source, waiter) = self.state.withLockedValue { state -> (Producer.Source?, CheckedContinuation<Void, any Error>?) in
            state.isFinished = true
            if !state.headArrived { state.failureBeforeHead = failureBeforeHead }
            defer {
                state.source = nil
                state.headWaiter = nil
            }
            return (state.source, state.headWaiter)
        }
        waiter?.resume(throwing: failureBeforeHead)
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
