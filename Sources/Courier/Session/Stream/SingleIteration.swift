import Synchronization

/// Whether a sequence that SwiftNIO's producer backs has had its iterator made: that producer
/// allows one iterator and stops the process at a second (`makeAsyncIterator()` twice on one
/// `messages` value; a response body asks its ``ResponseStreamSink`` instead, which it has
/// anyway). The first claim wins; a later iterator ends at once, as a second reader of a
/// broadcast branch does.
final class SingleIteration: Sendable {
    private let claimed = Atomic<Bool>(false)

    /// True the first time only.
    func claim() -> Bool {
        !self.claimed.exchange(true, ordering: .relaxed)
    }
}
