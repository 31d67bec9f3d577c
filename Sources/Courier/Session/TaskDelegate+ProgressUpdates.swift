import NIOConcurrencyHelpers

/// One `progressUpdates(for:)` consumer.
struct ProgressObserver: Sendable {
    let direction: ProgressSnapshot.Direction
    let continuation: AsyncStream<ProgressSnapshot>.Continuation
    /// The last fraction handed out: later snapshots never go below it.
    var lastFraction: Double = 0
}

extension TaskDelegate {
    /// A new sequence of snapshots for `direction`: the current one at once, then one per change
    /// (the newest only, when the consumer is slower), finishing after the task ends.
    func progressUpdates(for direction: ProgressSnapshot.Direction) -> AsyncStream<ProgressSnapshot> {
        let (stream, continuation) = AsyncStream.makeStream(of: ProgressSnapshot.self, bufferingPolicy: .bufferingNewest(1))
        let (snapshot, finished) = self.state.withLockedValue { state -> (ProgressSnapshot, Bool) in
            let finished = state.lifecycle == .completed && state.progressUpdatesFinished
            let snapshot = Self.snapshot(direction, state, finished: finished, floor: 0)
            if !finished { state.progressObservers.append(ProgressObserver(direction: direction, continuation: continuation, lastFraction: snapshot.fractionCompleted)) }
            return (snapshot, finished)
        }
        continuation.yield(snapshot)
        if finished { continuation.finish() }
        return stream
    }

    /// Tells the consumers of `direction` about a change.
    func publishProgress(_ direction: ProgressSnapshot.Direction) {
        let deliveries = self.state.withLockedValue { state -> [(AsyncStream<ProgressSnapshot>.Continuation, ProgressSnapshot)] in
            guard !state.progressObservers.isEmpty else { return [] }
            var deliveries: [(AsyncStream<ProgressSnapshot>.Continuation, ProgressSnapshot)] = []
            for index in state.progressObservers.indices where state.progressObservers[index].direction == direction {
                let snapshot = Self.snapshot(direction, state, finished: false, floor: state.progressObservers[index].lastFraction)
                state.progressObservers[index].lastFraction = snapshot.fractionCompleted
                deliveries.append((state.progressObservers[index].continuation, snapshot))
            }
            return deliveries
        }
        for (continuation, snapshot) in deliveries { continuation.yield(snapshot) }
    }

    /// The task ended: a last snapshot each (at 1.0 on success), then the sequences finish.
    func finishProgressUpdates(succeeded: Bool) {
        let observers = self.state.withLockedValue { state -> [(ProgressObserver, ProgressSnapshot)] in
            state.progressUpdatesFinished = true
            defer { state.progressObservers = [] }
            return state.progressObservers.map { observer in
                var snapshot = Self.snapshot(observer.direction, state, finished: true, floor: observer.lastFraction)
                if succeeded { snapshot.fractionCompleted = 1 }
                return (observer, snapshot)
            }
        }
        for (observer, snapshot) in observers {
            observer.continuation.yield(snapshot)
            observer.continuation.finish()
        }
    }

    private static func snapshot(_ direction: ProgressSnapshot.Direction, _ state: TaskState, finished: Bool, floor: Double) -> ProgressSnapshot {
        let (completed, total) = switch direction {
        case .upload: (state.countOfBytesSent, state.countOfBytesExpectedToSend)
        case .download: (state.countOfBytesReceived, state.countOfBytesExpectedToReceive)
        }
        var fraction = total > 0 ? min(1, Double(completed) / Double(total)) : 0
        if finished, state.error == nil { fraction = 1 }
        return ProgressSnapshot(
            completedUnitCount: completed, totalUnitCount: total, fractionCompleted: max(floor, fraction), isFinished: finished)
    }
}
