import Courier
import Dispatch
import NIOConcurrencyHelpers
import Testing

/// Wakes a test that waits for something to change, instead of polling for it: whatever changes
/// what the test waits for (a hook, a callback, a test server's event) calls ``signal()``, and
/// ``wait(within:until:)`` checks the test's condition again after each signal, and at no other
/// time. Tests wait for events, not time.
///
/// The condition must only become true by a change that is followed by a signal. A signal that
/// comes between the check and the wait is not lost: each wait is for a signal after the check.
///
/// The bound only guards against a hang: the wait fails when the event never comes. It is long
/// (the suite runs some 2,300 tests in parallel on two cores), and reaching it costs one timer,
/// not a wake-up every few milliseconds on the concurrency pool that the rest of the suite needs.
final class Changes: Sendable {
    /// How long a wait lasts by default before it fails: only a hang guard, long since waiting
    /// costs nothing (the full suite has stalled single requests for 20 s, and a 16 MiB download
    /// for 80 s). A suite's shorter time limit ends the wait first, failing the test.
    static let hangGuard: Duration = .seconds(120)

    private struct State {
        /// How many signals came so far.
        var signals = 0
        /// The waits parked until the next signal, by wait.
        var parked: [Int: CheckedContinuation<Bool, Never>] = [:]
        /// Waits past their bound or cancelled.
        var expired: Set<Int> = []
        var nextWait = 0
    }

    private let state = NIOLockedValueBox(State())

    init() {}

    /// Something the test may wait for changed: every parked wait checks its condition again.
    func signal() {
        let parked = self.state.withLockedValue { state -> [CheckedContinuation<Bool, Never>] in
            state.signals += 1
            defer { state.parked = [:] }
            return Array(state.parked.values)
        }
        for continuation in parked { continuation.resume(returning: true) }
    }

    /// Returns true as soon as `condition` holds, checking it now and after each ``signal()``;
    /// false if no signal made it hold within `limit` (a hang), or when the test is cancelled.
    /// Should it hold then all the same, a change was not signalled: that is recorded as an issue
    /// (the test's wiring is wrong, and would only pass slowly).
    func wait(
        within limit: Duration = Changes.hangGuard, sourceLocation: SourceLocation = #_sourceLocation, until condition: () -> Bool
    ) async -> Bool {
        let wait = self.state.withLockedValue { state -> Int in
            state.nextWait += 1
            return state.nextWait
        }
        defer { _ = self.state.withLockedValue { $0.expired.remove(wait) } }
        // The hang guard: one timer for the whole wait. Should it fire after the wait returned,
        // it finds nothing parked and leaves a number no later wait uses.
        Self.after(limit) { self.expire(wait) }
        while true {
            let seen = self.state.withLockedValue { $0.signals }
            if condition() { return true }
            guard await self.park(wait, untilSignalAfter: seen) else {
                if condition() {
                    Issue.record("the condition holds, but no signal said so before the hang guard ended the wait", sourceLocation: sourceLocation)
                }
                return false
            }
        }
    }

    /// Runs `work` once `limit` has passed, on a Dispatch queue: a hang guard's one timer.
    static func after(_ limit: Duration, _ work: @escaping @Sendable () -> Void) {
        let (seconds, attoseconds) = limit.components
        let nanoseconds = Int(clamping: seconds) &* 1_000_000_000 &+ Int(attoseconds / 1_000_000_000)
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds), execute: work)
    }

    /// Waits for a signal after the `seen`-th; false once `wait` has expired.
    private func park(_ wait: Int, untilSignalAfter seen: Int) async -> Bool {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let now = self.state.withLockedValue { state -> Bool? in
                    if state.expired.contains(wait) { return false }
                    if state.signals != seen { return true }
                    state.parked[wait] = continuation
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            self.expire(wait)
        }
    }

    /// Ends `wait`: past its bound, or its test cancelled.
    private func expire(_ wait: Int) {
        let parked = self.state.withLockedValue { state -> CheckedContinuation<Bool, Never>? in
            state.expired.insert(wait)
            return state.parked.removeValue(forKey: wait)
        }
        parked?.resume(returning: false)
    }
}

extension Changes {
    /// Signalled by `manager`'s hooks, chained to those it has, for every task it makes from now
    /// on: each body chunk sent (counted first), each download chunk received (counted and queued
    /// to the file first), and each task's end (once it has left ``SessionManager/tasks``, its
    /// state completed and a cancelled download's partial file removed).
    static func progressAndEnds(of manager: SessionManager) -> Changes {
        let changes = Changes()
        var hooks = manager.hooks
        let sent = hooks.taskDidSendBodyData
        hooks.taskDidSendBodyData = { manager, task, bytes, total, expected in
            sent?(manager, task, bytes, total, expected)
            changes.signal()
        }
        let written = hooks.downloadTaskDidWriteData
        hooks.downloadTaskDidWriteData = { manager, task, bytes, total, expected in
            written?(manager, task, bytes, total, expected)
            changes.signal()
        }
        let completed = hooks.taskDidComplete
        hooks.taskDidComplete = { manager, task, error in
            completed?(manager, task, error)
            changes.signal()
        }
        manager.hooks = hooks
        return changes
    }
}

/// A test server's state behind a lock, whose every change signals ``changes``: tests wait on
/// the server's counters (streams held, connections closed) by waiting on it.
struct ObservedBox<Value: Sendable>: Sendable {
    private let box: NIOLockedValueBox<Value>
    /// Signalled after each ``withLockedValue(_:)``.
    let changes: Changes

    /// - Parameter changes: To signal; several boxes of one server may share one.
    init(_ value: Value, changes: Changes = Changes()) {
        self.box = NIOLockedValueBox(value)
        self.changes = changes
    }

    /// Changes the value (or reads it where the server works), then signals ``changes``.
    func withLockedValue<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        defer { self.changes.signal() }
        return try self.box.withLockedValue(body)
    }

    /// Reads the value and signals nothing: what a waiting test's condition reads with, so that
    /// checking it does not wake the wait again.
    func read<T>(_ body: (Value) throws -> T) rethrows -> T {
        try self.box.withLockedValue { try body($0) }
    }
}
