import Dispatch
import NIOConcurrencyHelpers

/// Delivers events to a session's monitors, each on its own queue and in order, as they happen.
///
/// Events are queued per monitor under a lock and drained by one block on the monitor's queue at
/// a time. The first event that finds no drain under way puts one on the queue at once; events
/// that arrive while it is on its way or running join its batch, so a busy session's events
/// cost one queue hop a batch, not one each, and none waits for a timer. A concurrent queue still
/// sees the events in order: only one drain runs.
final class EventMonitorGroup: Sendable {
    typealias Event = @Sendable (any EventMonitor) -> Void

    private final class Lane: Sendable {
        let monitor: any EventMonitor
        let queue: DispatchQueue
        private struct Pending {
            var events: [Event] = []
            /// A drain block is on its way to the queue, or running.
            var scheduled = false
        }
        private let pending = NIOLockedValueBox(Pending())

        init(_ monitor: any EventMonitor) {
            self.monitor = monitor
            self.queue = monitor.queue
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
                for event in batch { event(self.monitor) }
            }
        }
    }

    private let lanes: [Lane]

    init(_ monitors: [any EventMonitor]) {
        self.lanes = monitors.map { Lane($0) }
    }

    private init(lanes: [Lane]) {
        self.lanes = lanes
    }

    /// A group that hands events to `group`'s monitors through `group`'s own lanes (so a
    /// session's monitor still sees all of its tasks' events in order), then to `monitors`
    /// through new ones: a task's group when its request brings monitors of its own.
    static func adding(_ monitors: [any EventMonitor], to group: EventMonitorGroup?) -> EventMonitorGroup {
        EventMonitorGroup(lanes: (group?.lanes ?? []) + monitors.map { Lane($0) })
    }

    /// Whether there is no monitor (events need not even be made).
    var isEmpty: Bool { self.lanes.isEmpty }

    /// Hands `event` to every monitor.
    func emit(_ event: @escaping Event) {
        for lane in self.lanes { lane.enqueue(event) }
    }
}
