import Courier
import Testing

/// Runs `body` with the manager `make()` returns, its completion handlers on
/// ``TestQueues/completion``; invalidates it (cancelling its tasks) whether or not `body` throws,
/// then expects that neither the manager nor its engine is alive: nothing outlives its work.
/// `body`'s result must not hold the manager.
@discardableResult
func withManagerThatEnds<Manager: SessionManager, Result>(
    _ make: () throws -> Manager, sourceLocation: SourceLocation = #_sourceLocation, _ body: (Manager) async throws -> Result
) async throws -> Result {
    weak var weakManager: Manager?
    weak var weakEngine: AnyObject?
    let result: Result
    do {
        let manager = try make()
        manager.completionQueue = TestQueues.completion
        weakManager = manager
        weakEngine = manager.engine as AnyObject
        do {
            result = try await body(manager)
        } catch {
            await manager.invalidate(cancelingTasks: true)
            throw error
        }
        await manager.invalidate(cancelingTasks: true)
    }
    #expect(
        await eventually { weakManager == nil && weakEngine == nil },
        "the manager and its engine are gone (manager alive: \(weakManager != nil), engine alive: \(weakEngine != nil))",
        sourceLocation: sourceLocation)
    return result
}
