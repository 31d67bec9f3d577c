import Dispatch
import NIOConcurrencyHelpers

/// Delivers events to a session's monitors, each on its own queue and in order.
///
/// Events are queued per monitor under a lock and drained by one block on the monitor's queue at
/// a time, so a burst of events (a response head and its body) costs one queue hop, not one each,
/// and a concurrent queue still sees them in order.
final class EventMonitorGroup: Sendable {
    typealias Event = @Sendable (any EventMonitor) -> Void

    private final class Lane: Sendable {
        let monitor: any EventMonitor
        let queue: DispatchQueue
        let pending = NIOLockedValueBox<(events: [Event], draining: Bool)>(([], false))

        init(_ monitor: any EventMonitor) {
            self.monitor = monitor
            self.queue = monitor.queue
        }

        func enqueue(_ event: @escaping Event) {
            let schedule = self.pending.withLockedValue { pending -> Bool in
                pending.events.append(event)
                if pending.draining { return false }
                pending.draining = true
                return true
            }
            if schedule { self.queue.async { self.drain() } }
        }

        private func drain() {
            while true {
                let batch = self.pending.withLockedValue { pending -> [Event] in
                    if pending.events.isEmpty { pending.draining = false }
                    defer { pending.events = [] }
                    return pending.events
                }
                if batch.isEmpty { return }
                for event in batch { event(self.monitor) }
            }
        }
    }

    private let lanes: [Lane]

    init(_ monitors: [any EventMonitor]) {
        self.lanes = monitors.map(Lane.init)
    }

    /// Whether there is no monitor (events need not even be made).
    var isEmpty: Bool { self.lanes.isEmpty }

    /// Hands `event` to every monitor.
    func emit(_ event: @escaping Event) {
        for lane in self.lanes { lane.enqueue(event) }
    }
}
