import Dispatch
import NIOConcurrencyHelpers

/// Delivers events to a session's monitors, each on its own queue and in order, as they happen.
///
/// Events are queued per queue (the monitors that share one queue share one lane, which hands
/// each event to them in the order they were given) under a lock and drained by one block on the
/// queue at a time. The first event that finds no drain under way puts one on the queue at once;
/// events that arrive while it is on its way or running join its batch, so a busy session's
/// events cost one queue hop a batch, not one each, and none waits for a timer. A concurrent
/// queue still sees the events in order: only one drain runs.
final class EventMonitorGroup: Sendable {
    typealias Event = @Sendable (any EventMonitor) -> Void

    private final class Lane: Sendable {
        /// The monitors on `queue`, in the order they were given.
        let monitors: [any EventMonitor]
        let queue: DispatchQueue
        private struct Pending {
            var events: [Event] = []
            /// A drain block is on its way to the queue, or running.
            var scheduled = false
        }
        private let pending = NIOLockedValueBox(Pending())

        init(_ monitors: [any EventMonitor], queue: DispatchQueue) {
            self.monitors = monitors
            self.queue = queue
        }

        func enqueue(_ event: @escaping Event) {
            let schedule = self.pending.withLockedValue { pending -> Bool in
                pending.events.append(event)
                if pending.scheduled { return false }
                pending.scheduled = true
                return true
            }
            if schedule { self.queue.async { self.drain() } }
        }

        private func drain() {
            while true {
                let batch = self.pending.withLockedValue { pending -> [Event]? in
                    if pending.events.isEmpty {
                        pending.scheduled = false
                        return nil
                    }
                    defer { pending.events = [] }
                    return pending.events
                }
                guard let batch else { return }
                for event in batch {
                    for monitor in self.monitors { event(monitor) }
                }
            }
        }
    }

    private let lanes: [Lane]

    init(_ monitors: [any EventMonitor]) {
        self.lanes = Self.lanes(for: monitors)
    }

    private init(lanes: [Lane]) {
        self.lanes = lanes
    }

    /// A lane per queue, in the order the queues first appear; each with its monitors in order.
    private static func lanes(for monitors: [any EventMonitor]) -> [Lane] {
        var queues: [(queue: DispatchQueue, monitors: [any EventMonitor])] = []
        for monitor in monitors {
            let queue = monitor.queue
            if let index = queues.firstIndex(where: { $0.queue === queue }) {
                queues[index].monitors.append(monitor)
            } else {
                queues.append((queue, [monitor]))
            }
        }
        return queues.map { Lane($0.monitors, queue: $0.queue) }
    }

    /// A group that hands events to `group`'s monitors through `group`'s own lanes (so a
    /// session's monitor still sees all of its tasks' events in order), then to `monitors`
    /// through new ones: a task's group when its request brings monitors of its own.
    static func adding(_ monitors: [any EventMonitor], to group: EventMonitorGroup?) -> EventMonitorGroup {
        EventMonitorGroup(lanes: (group?.lanes ?? []) + Self.lanes(for: monitors))
    }

    /// Whether there is no monitor (events need not even be made).
    var isEmpty: Bool { self.lanes.isEmpty }

    /// Hands `event` to every monitor.
    func emit(_ event: @escaping Event) {
        for lane in self.lanes { lane.enqueue(event) }
    }
}
