import Foundation
import NIOConcurrencyHelpers

@testable import Courier

/// A clock for retry tests: time moves only when told, and sleeps return at once after moving it
/// (so a backoff of seconds takes none), recording what was asked for.
final class ManualRetryClock: RetryClock {
    private struct State {
        var now: Duration = .seconds(1000)
        var date = Date(timeIntervalSince1970: 1_700_000_000)
        var sleeps: [Duration] = []
    }

    private let state = NIOLockedValueBox(State())

    var now: Duration { self.state.withLockedValue { $0.now } }
    var date: Date { self.state.withLockedValue { $0.date } }
    /// Every sleep asked for, in order.
    var sleeps: [Duration] { self.state.withLockedValue { $0.sleeps } }

    func advance(by duration: Duration) {
        self.state.withLockedValue { state in
            state.now += duration
            state.date += duration.timeInterval
        }
    }

    func sleep(for duration: Duration) async throws {
        try Task.checkCancellation()
        self.state.withLockedValue { $0.sleeps.append(duration) }
        self.advance(by: duration)
    }
}

extension Duration {
    var timeInterval: TimeInterval {
        let (seconds, attoseconds) = self.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
