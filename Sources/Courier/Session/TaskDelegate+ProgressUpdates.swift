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
        let (snapshot, joined) = self.state.withLockedValue { state -> (ProgressSnapshot, Int?) in
            let finished = state.progressUpdatesFinished
            let snapshot = state.progressSnapshot(direction, finished: finished, floor: 0)
            guard !finished else { return (snapshot, nil) }
            state.progressObserversJoined += 1
            let id = state.progressObserversJoined
            state.progressObservers.append(ProgressObserver(id: id, direction: direction, continuation: continuation, lastFraction: snapshot.fractionCompleted))
            return (snapshot, id)
        }
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
            self.state.withLockedValue { $0.progressObservers.removeAll { $0.id == id } }
        }
        return stream
    }

    /// Hands out snapshots taken under the state's lock (see ``TaskState/progressDeliveries(_:)``).
    func deliver(_ deliveries: [ProgressDelivery]) {
        for delivery in deliveries { delivery.continuation.yield(delivery.snapshot) }
    }

    /// The task ended: a last snapshot each (at 1.0 on success, taken under the task's lock by
    /// ``TaskState/finishProgressObservers(succeeded:)``), then the sequences finish.
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

extension TaskState {
    /// The task ended: no consumer joins from now on, and each one's last snapshot (at 1.0 on
    /// success) is returned with it, to be handed out after the lock.
    mutating func finishProgressObservers(succeeded: Bool) -> [(ProgressObserver, ProgressSnapshot)] {
        self.progressUpdatesFinished = true
        // Nobody listens: the common case.
        guard !self.progressObservers.isEmpty else { return [] }
        let listening = self.progressObservers
        self.progressObservers = []
        return listening.map { observer in
            var snapshot = self.progressSnapshot(observer.direction, finished: true, floor: observer.lastFraction)
            if succeeded { snapshot.fractionCompleted = 1 }
            return (observer, snapshot)
        }
    }

    /// The snapshots owed to the consumers of `direction` after a change; none (and no work) when
    /// nobody listens, which is the common case on the hot path.
    mutating func progressDeliveries(_ direction: ProgressSnapshot.Direction) -> [ProgressDelivery] {
        guard !self.progressObservers.isEmpty else { return [] }
        var deliveries: [ProgressDelivery] = []
        for index in self.progressObservers.indices where self.progressObservers[index].direction == direction {
            let snapshot = self.progressSnapshot(direction, finished: false, floor: self.progressObservers[index].lastFraction)
            self.progressObservers[index].lastFraction = snapshot.fractionCompleted
            deliveries.append(ProgressDelivery(continuation: self.progressObservers[index].continuation, snapshot: snapshot))
        }
        return deliveries
    }

    func progressSnapshot(_ direction: ProgressSnapshot.Direction, finished: Bool, floor: Double) -> ProgressSnapshot {
        let (completed, total) = switch direction {
        case .upload: (self.countOfBytesSent, self.countOfBytesExpectedToSend)
        case .download: (self.countOfBytesReceived, self.countOfBytesExpectedToReceive)
        }
        var fraction = total > 0 ? min(1, Double(completed) / Double(total)) : 0
        if finished, self.error == nil { fraction = 1 }
        return ProgressSnapshot(
            completedUnitCount: completed, totalUnitCount: total, fractionCompleted: max(floor, fraction), isFinished: finished)
    }
}
