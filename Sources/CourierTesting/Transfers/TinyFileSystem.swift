import Foundation
import NIOConcurrencyHelpers

/// The small file system `.ci/run` mounts for the full-disk tests (a 1 MiB tmpfs, named by the
/// `COURIER_TINY_FS` environment variable), shared by every test target of the test process.
///
/// A test that fills it and one that needs room on it again must not run at once: both take it
/// with ``withExclusiveUse(_:)``, which lets one caller in at a time, the others waiting in turn
/// (an event, not a retry on a timer).
public enum TinyFileSystem {
    /// Where it is mounted; nil where there is none (its tests are then skipped, saying so).
    public static var url: URL? {
        ProcessInfo.processInfo.environment["COURIER_TINY_FS"].map { URL(fileURLWithPath: $0) }
    }

    /// Runs `body` while no other caller of this method runs.
    /// - Parameter body: The work that fills the file system or needs room on it.
    /// - Returns: What `body` returns.
    public static func withExclusiveUse<Result>(_ body: () async throws -> Result) async rethrows -> Result {
        await self.turns.take()
        defer { self.turns.pass() }
        return try await body()
    }

    private static let turns = Turns()

    /// One holder at a time; the waiters in the order they came.
    private final class Turns: Sendable {
        private struct State {
            var isHeld = false
            var waiters: [CheckedContinuation<Void, Never>] = []
        }

        private let state = NIOLockedValueBox(State())

        func take() async {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let granted = self.state.withLockedValue { state -> Bool in
                    if state.isHeld {
                        state.waiters.append(continuation)
                        return false
                    }
                    state.isHeld = true
                    return true
                }
                if granted { continuation.resume() }
            }
        }

        /// Hands the turn to the next waiter, or frees it.
        func pass() {
            let next = self.state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
                guard !state.waiters.isEmpty else {
                    state.isHeld = false
                    return nil
                }
                return state.waiters.removeFirst()
            }
            next?.resume()
        }
    }
}
