import NIOConcurrencyHelpers

/// A counting semaphore for async code: at most `count` holders at a time, the others waiting
/// in arrival order. The package's tests use it to bound how many child processes, or how many
/// test servers, exist at once.
///
/// Package access only: a helper for this package's tests, not part of `CourierTesting`'s API.
package final class AsyncSlots: Sendable {
    private struct State {
        var free: Int
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state: NIOLockedValueBox<State>

    /// Slots for `count` holders.
    package init(count: Int) {
        self.state = NIOLockedValueBox(State(free: count))
    }

    /// Waits for a slot and takes it; give it back with ``release()``.
    package func acquire() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let granted = self.state.withLockedValue { state -> Bool in
                if state.free > 0 {
                    state.free -= 1
                    return true
                }
                state.waiters.append(continuation)
                return false
            }
            if granted { continuation.resume() }
        }
    }

    /// Gives a slot back: to the longest waiter, if any.
    package func release() {
        let next = self.state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
            if state.waiters.isEmpty {
                state.free += 1
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.resume()
    }
}
