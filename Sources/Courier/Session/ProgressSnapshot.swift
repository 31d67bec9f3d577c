/// A task's progress in one direction at one moment, as a value (for ``SessionTask/progressUpdates(for:)``).
public struct ProgressSnapshot: Sendable, Hashable {
    /// Which way bytes go.
    public enum Direction: Sendable, Hashable {
        /// The request body.
        case upload
        /// The response body.
        case download
    }

    /// Bytes done.
    public var completedUnitCount: Int64
    /// Bytes in all, or -1 while unknown.
    public var totalUnitCount: Int64
    /// From 0 to 1: completed over total, 0 while the total is unknown, 1 once the task succeeded.
    public var fractionCompleted: Double
    /// Whether the task has ended; the last snapshot has this set.
    public var isFinished: Bool

    /// A snapshot.
    public init(completedUnitCount: Int64, totalUnitCount: Int64, fractionCompleted: Double, isFinished: Bool) {
        self.completedUnitCount = completedUnitCount
        self.totalUnitCount = totalUnitCount
        self.fractionCompleted = fractionCompleted
        self.isFinished = isFinished
    }
}
