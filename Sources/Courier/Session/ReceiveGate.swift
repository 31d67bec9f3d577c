import NIOConcurrencyHelpers

/// Applies "pause or read on" to an exchange when more than one party decides it (the caller's
/// `suspend()`/`resume()`, a download's file writer), from more than one thread.
///
/// Each call reads the wish after taking a new version number and, once it has applied that wish,
/// applies the newest wish again if anyone decided meanwhile: whatever the order in which the
/// threads reach the exchange, the last wish wins, and no exchange stays paused by a stale call.
/// No lock is held while the exchange is called, so a call that makes the exchange deliver bytes
/// at once may re-enter.
final class ReceiveGate: Sendable {
    private let version = NIOLockedValueBox(0)

    /// Makes `exchange` pause when `shouldPause()` says so, else read on.
    func apply(to exchange: any Exchange, shouldPause: () -> Bool) {
        var mine = self.version.withLockedValue { version -> Int in
            version += 1
            return version
        }
        while true {
            if shouldPause() {
                exchange.suspendReceiving()
            } else {
                exchange.resumeReceiving()
            }
            let newer = self.version.withLockedValue { version -> Int? in
                guard version != mine else { return nil }
                version += 1
                return version
            }
            guard let newer else { return }
            mine = newer
        }
    }
}
