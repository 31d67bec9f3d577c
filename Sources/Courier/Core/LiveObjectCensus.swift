#if DEBUG
import Foundation
import Synchronization

/// Debug builds only: which of Courier's long-lived objects (managers, engines, tasks, task
/// delegates, WebSocket tasks) are alive, once a test run turned the census on.
///
/// Courier's test suite turns it on and, when its process ends, fails the run if any of them is
/// still alive (`HTTPSessionManager.shared` and its engine, alive by design, are not counted):
/// nothing may outlive its work, and a cycle that keeps an object (a hook or a handler that holds
/// its own task) shows up here even when no test held a weak reference to it. While the census
/// is off (every other program; release builds have no census at all), each counted object's
/// initializer and deinitializer read one atomic flag.
enum LiveObjectCensus {
    enum Kind: String, Sendable, CaseIterable {
        case manager, engine, task, taskDelegate, webSocketTask
    }

    /// One live object: its kind, what identifies it to a reader (its type, its URL) and where it
    /// was made (what the `context` given to ``start(context:)`` said then, described only when
    /// read).
    struct Entry: Sendable {
        let kind: Kind
        let label: String
        let context: (any Sendable)?
        var madeIn: String { self.context.map { "\($0)" } ?? "unknown" }
    }

    private static let isOn = Atomic<Bool>(false)
    private static let alive = Mutex<[ObjectIdentifier: Entry]>([:])
    private static let context = Mutex<@Sendable () -> (any Sendable)?>({ nil })
    /// Broadcast whenever the table becomes empty, for ``waitUntilEmpty(before:)``.
    private static let emptied = NSCondition()

    /// Counts the objects made from now on, each with what `context` says when it is made (the
    /// test suite's: the test running).
    static func start(context: @escaping @Sendable () -> (any Sendable)?) {
        Self.context.withLock { $0 = context }
        Self.isOn.store(true, ordering: .releasing)
    }

    /// `object` was made. `label` is only built while the census is on.
    @inline(__always)
    static func born(_ object: AnyObject, _ kind: Kind, _ label: @autoclosure () -> String) {
        guard Self.isOn.load(ordering: .acquiring) else { return }
        let entry = Entry(kind: kind, label: label(), context: Self.context.withLock { $0 }())
        Self.alive.withLock { $0[ObjectIdentifier(object)] = entry }
    }

    /// `object` is being freed (called from its `deinit`, before its memory can be reused).
    @inline(__always)
    static func died(_ object: AnyObject) {
        guard Self.isOn.load(ordering: .acquiring) else { return }
        let isEmpty = Self.alive.withLock { alive in
            alive.removeValue(forKey: ObjectIdentifier(object))
            return alive.isEmpty
        }
        guard isEmpty else { return }
        Self.emptied.lock()
        Self.emptied.broadcast()
        Self.emptied.unlock()
    }

    /// Waits until no counted object is alive, or `deadline`; returns the survivors then.
    static func waitUntilEmpty(before deadline: Date) -> [Entry] {
        Self.emptied.lock()
        defer { Self.emptied.unlock() }
        // Checked under the condition's lock, which `died` takes to broadcast: an emptying
        // between the check and the wait is not missed.
        while !Self.alive.withLock({ $0.isEmpty }), Self.emptied.wait(until: deadline) {}
        return Self.survivors
    }

    /// The objects made since ``start(context:)`` and still alive, sorted by kind and label.
    static var survivors: [Entry] {
        Self.alive.withLock { Array($0.values) }.sorted { ($0.kind.rawValue, $0.label) < ($1.kind.rawValue, $1.label) }
    }
}
#endif
