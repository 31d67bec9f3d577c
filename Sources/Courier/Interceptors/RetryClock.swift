import Foundation

/// Time as retries see it: sessions sleep through it before a retry (backoff, `Retry-After`) and
/// before an event stream reconnects, and time the connectivity retry's wait for the network on
/// it, and retry budgets, retry policies and refresh windows read it.
///
/// ``SystemRetryClock`` (`.system`) is the real one. Tests inject their own so that a backoff
/// of seconds takes none, and so that what was asked for can be checked.
public protocol RetryClock: Sendable {
    /// A monotonic reading since an arbitrary origin.
    var now: Duration { get }
    /// The wall-clock date (for `Retry-After` given as an HTTP date).
    var date: Date { get }
    /// Returns after `duration`; throws `CancellationError` when the calling task is cancelled first.
    func sleep(for duration: Duration) async throws
}

extension RetryClock where Self == SystemRetryClock {
    /// The system's clocks: `ContinuousClock` and `Date()`.
    public static var system: SystemRetryClock { SystemRetryClock() }
}

/// The system's clocks: a monotonic `ContinuousClock` for durations, `Date()` for dates.
public struct SystemRetryClock: RetryClock {
    private static let origin = ContinuousClock.now

    /// The system clock.
    public init() {}

    public var now: Duration { ContinuousClock.now - Self.origin }
    public var date: Date { Date() }

    public func sleep(for duration: Duration) async throws {
        guard duration > .zero else { return try Task.checkCancellation() }
        try await Task.sleep(for: duration)
    }
}
