import Foundation
import NIOConcurrencyHelpers
import Synchronization

extension SessionManager {
    /// Ends the manager (AFNetworking's `invalidateSessionCancelingTasks:`).
    ///
    /// With `cancelingTasks`, every task still running is cancelled; without it, running tasks
    /// (WebSocket tasks too) finish first, except that a task waiting to be retried (for the network,
    /// ``connectivityRetry``, or for a retrier's delay) ends at once with the failure it is
    /// waiting to retry, and an event stream waiting to reconnect
    /// (``eventStream(_:options:)``) fails at once with ``CourierError/Code/sessionInvalidated``.
    /// Either way, tasks resumed afterwards fail with
    /// ``CourierError/Code/sessionInvalidated``, and once no task runs and the last completion
    /// handler has run the engine shuts down and
    /// ``Foundation/NSNotification/Name/sessionDidInvalidate`` is posted. Returns at once.
    /// ``HTTPSessionManager/shared`` ignores this.
    public func invalidate(cancelingTasks: Bool) {
        let (delegates, webSockets, waiters) = self.registry.withLockedValue {
            registry -> ([TaskDelegate], [WebSocketTask], [CheckedContinuation<Void, Never>]) in
            guard !registry.isProcessWide else { return ([], [], []) }
            registry.isInvalidated = true
            self.invalidated.store(true, ordering: .sequentiallyConsistent)
            // Kept listed: a later invalidation that cancels still reaches the ones left running.
            let webSockets = registry.webSocketTasks.values.compactMap(\.task)
            defer { registry.invalidationWaiters = [:] }
            return (Array(registry.delegates.values), webSockets, Array(registry.invalidationWaiters.values))
        }
        // Event streams waiting to reconnect: they would be refused, so they stop waiting.
        for waiter in waiters { waiter.resume() }
        for delegate in delegates {
            if cancelingTasks { delegate.cancel() } else { delegate.abandonRetryWait() }
        }
        // WebSocket tasks: cancelled with the others; otherwise they run until they close (a
        // handshake waiting for its retry ends now, as a task's wait does).
        for task in webSockets {
            if cancelingTasks { task.cancel() } else { task.abandonRetryWait() }
        }
        self.shutDownEngineIfIdle()
    }

    /// Ends the manager as ``invalidate(cancelingTasks:)-7w13y`` does and returns once the engine has shut down.
    ///
    /// That is once every task has ended (without `cancelingTasks`, every running task finishes
    /// first, an open WebSocket task included) and every completion handler has run on its
    /// ``completionQueue`` (the main queue unless set: a process that never runs it waits for
    /// ever). Cancelling the caller does not end the wait.
    public func invalidate(cancelingTasks: Bool) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = self.registry.withLockedValue { registry -> Bool in
                if registry.engineIsDown || registry.isProcessWide { return true }
                registry.shutdownWaiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
            self.invalidate(cancelingTasks: cancelingTasks)
        }
    }

    /// Whether the manager was invalidated.
    public var isInvalidated: Bool { self.invalidated.load(ordering: .acquiring) }

    /// Waits `delay` on ``retryClock`` unless the manager is invalidated first (an event
    /// stream's wait before it reconnects, which invalidation ends as it ends a task's wait for a
    /// retry): true when the delay passed, false when the manager was or got invalidated. Throws
    /// `CancellationError` when the calling task is cancelled (and may then return false instead:
    /// the caller checks `Task.isCancelled`).
    func sleepUnlessInvalidated(for delay: Duration) async throws -> Bool {
        let clock = self.retryClock
        return try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                try await clock.sleep(for: delay)
                return true
            }
            group.addTask {
                await self.untilInvalidated()
                return false
            }
            // The first to end decides; the other is cancelled, and awaited before this returns.
            defer { group.cancelAll() }
            return try await group.next() ?? false
        }
    }

    /// Returns once the manager is invalidated (at once when it was), or the calling task is
    /// cancelled. A process-wide manager, never invalidated, returns only then.
    func untilInvalidated() async {
        let number = self.registry.withLockedValue { registry in
            defer { registry.nextInvalidationWaiter += 1 }
            return registry.nextInvalidationWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let waits = self.registry.withLockedValue { registry -> Bool in
                    guard !registry.isInvalidated, !Task.isCancelled else { return false }
                    registry.invalidationWaiters[number] = continuation
                    return true
                }
                if !waits { continuation.resume() }
            }
        } onCancel: {
            self.registry.withLockedValue { $0.invalidationWaiters.removeValue(forKey: number) }?.resume()
        }
    }

    /// A completion handler is on its way to its queue (counted before its task is settled).
    func beginDelivery() {
        self.deliveriesInFlight.add(1, ordering: .relaxed)
    }

    /// A completion handler and its notification ran: the last one lets an invalidated manager's
    /// engine stop. (The registry's lock is taken only once the manager is invalidated. Both this
    /// and ``invalidate(cancelingTasks:)-7w13y`` write one atomic and then read the other, in
    /// sequential consistency: one of the two sees that the engine may stop.)
    func endDelivery() {
        if self.deliveriesInFlight.subtract(1, ordering: .sequentiallyConsistent).newValue == 0,
            self.invalidated.load(ordering: .sequentiallyConsistent)
        {
            self.shutDownEngineIfIdle()
        }
    }

    /// Shuts the engine down once, when the manager is invalidated, no started task remains and
    /// no completion handler waits for its queue.
    func shutDownEngineIfIdle() {
        let shouldShutDown = self.registry.withLockedValue { registry -> Bool in
            guard registry.isInvalidated, !registry.engineShutDown, self.deliveriesInFlight.load(ordering: .sequentiallyConsistent) == 0 else {
                return false
            }
            let running =
                registry.delegates.values.contains { delegate in
                    delegate.state.withLockedValue { $0.machine.hasStarted }
                } || registry.webSocketTasks.values.contains { $0.task?.isRunning == true }
            if running { return false }
            registry.engineShutDown = true
            return true
        }
        guard shouldShutDown else { return }
        let engine = self.engine
        Task {
            try? await engine.shutdown()
            let waiters = self.registry.withLockedValue { registry -> [CheckedContinuation<Void, Never>] in
                registry.engineIsDown = true
                defer { registry.shutdownWaiters = [] }
                return registry.shutdownWaiters
            }
            // Every task has ended and its events are on the monitors' queues: this one is the last.
            self.settings.withLockedValue { $0.interception.monitorGroup }?.emit { $0.sessionDidInvalidate(self) }
            NotificationCenter.default.post(name: .sessionDidInvalidate, object: self)
            for waiter in waiters { waiter.resume() }
        }
    }
}
