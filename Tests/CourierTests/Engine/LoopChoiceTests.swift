@testable import Courier
import CourierTesting
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

@Suite("NIOEngine's choice of event loop")
struct LoopChoiceTests {
    @Test func leastBusyLoopFirstOnATie() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 3)
        let engine = NIOEngine(eventLoopGroup: group)
        #expect(engine.loops.count == 3)
        #expect(engine.acquireLoop() == 0)
        #expect(engine.acquireLoop() == 1)
        #expect(engine.acquireLoop() == 2)
        #expect(engine.acquireLoop() == 0)
        engine.releaseLoop(1)
        #expect(engine.acquireLoop() == 1)
        engine.releaseLoop(0)
        engine.releaseLoop(0)
        engine.releaseLoop(1)
        engine.releaseLoop(2)
        // Idle again: a sequential caller stays on the first loop.
        #expect(engine.acquireLoop() == 0)
        engine.releaseLoop(0)
        #expect(engine.acquireLoop() == 0)
        engine.releaseLoop(0)
        try await engine.shutdown()
        try await group.shutdownGracefully()
    }

    @Test func finishedExchangesGiveTheirLoopBack() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let engine = NIOEngine(eventLoopGroup: group)
        try await withTestServer { server in
            let manager = HTTPSessionManager(baseURL: server.baseURL, engine: engine)
            manager.completionQueue = TestQueues.completion
            for _ in 0..<10 {
                _ = try await manager.get("get")
            }
            _ = try? await manager.get("status/500")
            await withTaskGroup(of: Void.self) { tasks in
                for _ in 0..<8 {
                    tasks.addTask { _ = try? await manager.get("delay/0.05") }
                }
            }
            #expect(engine.exchangesPerLoop.withLockedValue { $0 } == [0, 0])
            await manager.invalidate(cancelingTasks: true)
        }
        try await group.shutdownGracefully()
    }
}
