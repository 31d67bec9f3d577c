import Dispatch
import NIOConcurrencyHelpers

/// Delivers events to a session's monitors, each on its own queue and in order.
///
/// Events are queued per monitor under a lock and drained by one block on the monitor's queue at
/// a time. A drain is scheduled ``coalescingDelay`` after the first event that finds none
/// pending, so the events of many tasks in that window (a response head, its body, the next
/// task's start) cost one queue hop, not one each: waking the queue's thread per event cost a
/// sequential request a third more CPU. ``flush()`` schedules a drain at once; the session calls
/// it when its engine has shut down, so every event is on the monitors' queues when
/// `invalidate()` returns. A concurrent queue still sees the events in order: only one drain runs.
final class EventMonitorGroup: Sendable {
    typealias Event = @Sendable (any EventMonitor) -> Void

    /// How long the first event of a burst waits for others before the monitor's queue is woken.
    static let coalescingDelay = DispatchTimeInterval.milliseconds(2)

    private final class Lane: Sendable {
        let monitor: any EventMonitor
        let queue: DispatchQueue
        let delay: DispatchTimeInterval
        private struct Pending {
            var events: [Event] = []
            /// A drain block is on its way to the queue, or running.
            var scheduled = false
            /// A drain is running its batch (a flush's extra drain then leaves the events to it).
            var running = false
        }
        private let pending = NIOLockedValueBox(Pending())

        init(_ monitor: any EventMonitor, delay: DispatchTimeInterval) {
            self.monitor = monitor
            self.queue = monitor.queue
            self.delay = delay
        }

        func enqueue(_ event: @escaping Event) {
            let schedule = self.pending.withLockedValue { pending -> Bool in
                pending.events.append(event)
                if pending.scheduled { return false }
                pending.scheduled = true
                return true
            }
            if schedule { self.queue.asyncAfter(deadline: .now() + self.delay) { self.drain() } }
        }

        /// Puts a drain on the queue now if events wait.
        func flush() {
            let waiting = self.pending.withLockedValue { pending -> Bool in
                guard !pending.events.isEmpty else { return false }
                pending.scheduled = true
                return true
            }
            if waiting { self.queue.async { self.drain() } }
        }

        private func drain() {
            while true {
                let batch = self.pending.withLockedValue { pending -> [Event]? in
                    // Another drain is running its batch: it takes these after.
                    if pending.running { return nil }
                    if pending.events.isEmpty {
                        pending.scheduled = false
                        return nil
                    }
                    pending.running = true
                    defer { pending.events = [] }
                    return pending.events
                }
                guard let batch else { return }
                for event in batch { event(self.monitor) }
                self.pending.withLockedValue { $0.running = false }
            }
        }
    }

    private let lanes: [Lane]

    /// - Parameter delay: How long a burst's first event waits (``coalescingDelay``; tests
    ///   lengthen it to see ``flush()`` at work).
    init(_ monitors: [any EventMonitor], delay: DispatchTimeInterval = EventMonitorGroup.coalescingDelay) {
        self.lanes = monitors.map { Lane($0, delay: delay) }
    }

    /// Whether there is no monitor (events need not even be made).
    var isEmpty: Bool { self.lanes.isEmpty }

    /// Hands `event` to every monitor.
    func emit(_ event: @escaping Event) {
        for lane in self.lanes { lane.enqueue(event) }
    }

    /// Puts every waiting event on its monitor's queue now, without waiting for the coalescing
    /// delay.
    func flush() {
        for lane in self.lanes { lane.flush() }
    }
}
