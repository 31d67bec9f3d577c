import Synchronization

/// The session's hooks as a task took them when it was made, held until its task-did-complete
/// hook is taken (``takeDidComplete()``): a hook whose closure keeps tasks (in a list it
/// captures) then keeps them only while they run, as a manager's own blocks do in AFNetworking,
/// instead of through every task it ever made.
///
/// A task made while no hook is set has none (``TaskDelegate/hookTable`` is nil) and pays
/// nothing; one made with hooks reads each under this lock.
final class TaskHooks: Sendable {
    private let hooks: Mutex<SessionManager.Hooks>

    /// The table for `hooks`; nil when none is set. (Not a failable initializer: a class's
    /// allocates the object before its body can return nil.)
    static func make(_ hooks: SessionManager.Hooks) -> TaskHooks? {
        hooks.isEmpty ? nil : TaskHooks(hooks)
    }

    private init(_ hooks: SessionManager.Hooks) {
        self.hooks = Mutex(hooks)
    }

    /// The hook `read` picks, unless the table was let go of.
    @inline(__always)
    func read<Hook>(_ read: (borrowing SessionManager.Hooks) -> Hook?) -> Hook? {
        self.hooks.withLock { read($0) }
    }

    /// The task-did-complete hook, the last one a task calls; every hook is let go of.
    func takeDidComplete() -> (@Sendable (SessionManager, SessionTask, CourierError?) -> Void)? {
        self.hooks.withLock { hooks in
            defer { hooks = SessionManager.Hooks() }
            return hooks.taskDidComplete
        }
    }
}

extension SessionManager.Hooks {
    /// No hook is set.
    var isEmpty: Bool {
        self.taskDidComplete == nil && self.taskDidFinishCollectingMetrics == nil && self.dataTaskDidReceiveResponse == nil
            && self.dataTaskDidReceiveData == nil && self.taskWillPerformHTTPRedirection == nil && self.taskDidSendBodyData == nil
            && self.downloadTaskDidWriteData == nil && self.dataTaskWillCacheResponse == nil
            && self.taskDidReceiveAuthenticationChallenge == nil
    }
}
