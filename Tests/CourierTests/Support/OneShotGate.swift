import NIOConcurrencyHelpers

/// Opens once; closures waiting for it run then (or at once when it is already open).
final class OneShotGate: Sendable {
    private let state = NIOLockedValueBox<(open: Bool, waiting: [@Sendable () -> Void])>((false, []))

    var isOpen: Bool { self.state.withLockedValue { $0.open } }

    func open() {
        let waiting = self.state.withLockedValue { state -> [@Sendable () -> Void] in
            guard !state.open else { return [] }
            state.open = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for action in waiting { action() }
    }

    func whenOpen(_ action: @escaping @Sendable () -> Void) {
        let now = self.state.withLockedValue { state -> Bool in
            if state.open { return true }
            state.waiting.append(action)
            return false
        }
        if now { action() }
    }

    /// Waits until the gate opens: true then; false if it has not within `limit` (a hang guard,
    /// as ``Changes/wait(within:sourceLocation:until:)``'s) or the waiting task is cancelled.
    ///
    /// A gate that a test's earlier step opens stays shut when that step failed (a connection
    /// timed out on a slow machine): a wait without a bound then hung the whole test run, where
    /// this one lets the test go on and fail. Each caller says what a false means.
    func wait(within limit: Duration = Changes.hangGuard) async -> Bool {
        let pending = NIOLockedValueBox<CheckedContinuation<Bool, Never>?>(nil)
        let settle: @Sendable (Bool) -> Void = { opened in pending.withLockedValue { $0.take() }?.resume(returning: opened) }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                pending.withLockedValue { $0 = continuation }
                if Task.isCancelled { settle(false) }
                self.whenOpen { settle(true) }
                Changes.after(limit) { settle(false) }
            }
        } onCancel: {
            settle(false)
        }
    }
}
