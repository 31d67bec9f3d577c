import Courier
import Testing

/// Runs `body` with the manager `make()` returns, invalidates it (cancelling its tasks) whether or
/// not `body` throws, then expects that neither the manager nor its engine is alive: nothing
/// outlives its work.
func withManagerThatEnds<Manager: SessionManager>(
    _ make: () throws -> Manager, sourceLocation: SourceLocation = #_sourceLocation, _ body: (Manager) async throws -> Void
) async throws {
    weak var weakManager: Manager?
    weak var weakEngine: AnyObject?
    do {
        let manager = try make()
        weakManager = manager
        weakEngine = manager.engine as AnyObject
        do {
            try await body(manager)
        } catch {
            await manager.invalidate(cancelingTasks: true)
            throw error
        }
        await manager.invalidate(cancelingTasks: true)
    }
    #expect(await eventually { weakManager == nil && weakEngine == nil }, "the manager and its engine are gone", sourceLocation: sourceLocation)
}
