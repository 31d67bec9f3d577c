import Synchronization

extension Mutex {
    /// Runs `body` with the value locked: `withLock` under the name the library's
    /// `NIOLockedValueBox`es use.
    ///
    /// A task's, an exchange's and a hop's state are kept in a `Mutex` inside their object rather
    /// than in a `NIOLockedValueBox`: one object fewer each, and the state is moved in when it is
    /// made (the box's initializer copied it, a retain of each of its references).
    @inline(__always)
    borrowing func withLockedValue<Result: Sendable, Failure: Error>(
        _ body: (inout Value) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try self.withLock { (value: inout sending Value) throws(Failure) -> sending Result in try body(&value) }
    }
}
