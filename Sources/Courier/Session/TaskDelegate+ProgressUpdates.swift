import NIOConcurrencyHelpers

/// One `progressUpdates(for:)` consumer.
struct ProgressObserver: Sendable {
    /// Which of the task's consumers it is, to leave the list when its consumer stops.
    let id: Int
    let direction: ProgressSnapshot.Direction
    let continuation: AsyncStream<ProgressSnapshot>.Continuation
    /// The last fraction handed out: later snapshots never go below it.
    var lastFraction: Double = 0
}

extension TaskDelegate {
    /// A new sequence of snapshots for `direction`: the current one at once, then one per change
    /// (the newest only, when the consumer is slower), finishing after the task ends. A consumer
    /// that stops iterating (or is cancelled) leaves at once: a long task polled by short-lived
    /// consumers kept one entry, and a snapshot at every change, for each until the task ended.
    func progressUpdates(for direction: ProgressSnapshot.Direction) -> AsyncStream<ProgressSnapshot> {
        let (stream, continuation) = AsyncStream.makeStream(of: ProgressSnapshot.self, bufferingPolicy: .bufferingNewest(1))
        let (snapshot, joined) = self.state.withLockedValue { $0.progress.join(direction, continuation: continuation) }
        continuation.yield(snapshot)
        guard let id = joined else {
            continuation.finish()
            return stream
        }
        // Set outside the lock (the handler takes it). Only a consumer that stopped leaves here
        // (its sequence and iterators dropped, or its task cancelled); the task's end takes
        // every consumer off the list itself.
        continuation.onTermination = { [weak self] termination in
            guard case .cancelled = termination, let self else { return }
            self.state.withLockedValue { $0.progress.observers.removeAll { $0.id == id } }
        }
        return stream
    }

    /// Hands out snapshots taken under the state's lock (see ``TransferProgress/deliveries(_:)``).
    func deliver(_ deliveries: [ProgressDelivery]) {
        for delivery in deliveries { delivery.continuation.yield(delivery.snapshot) }
    }

    /// The task ended: a last snapshot each (at 1.0 on success, taken under the task's lock by
    /// ``TransferProgress/finishObservers(failed:)``), then the sequences finish.
    func finishProgressUpdates(_ observers: [(ProgressObserver, ProgressSnapshot)]) {
        for (observer, snapshot) in observers {
            observer.continuation.yield(snapshot)
            observer.continuation.finish()
        }
    }
}

/// A snapshot for one consumer, taken under the task's lock and handed out after it.
struct ProgressDelivery {
    let continuation: AsyncStream<ProgressSnapshot>.Continuation
    let snapshot: ProgressSnapshot
}
