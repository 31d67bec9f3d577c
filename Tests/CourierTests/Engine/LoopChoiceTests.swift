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
        // The loops counted from the engine's home loop.
        let home = engine.homeLoop
        func loop(_ offset: Int) -> Int { (home + offset) % 3 }
        #expect(engine.acquireLoop() == loop(0))
        #expect(engine.acquireLoop() == loop(1))
        #expect(engine.acquireLoop() == loop(2))
        #expect(engine.acquireLoop() == loop(0))
        engine.releaseLoop(loop(1))
        #expect(engine.acquireLoop() == loop(1))
        engine.releaseLoop(loop(0))
        engine.releaseLoop(loop(0))
        engine.releaseLoop(loop(1))
        engine.releaseLoop(loop(2))
        // Idle again: a sequential caller stays on the home loop.
        #expect(engine.acquireLoop() == loop(0))
        engine.releaseLoop(loop(0))
        #expect(engine.acquireLoop() == loop(0))
        engine.releaseLoop(loop(0))
        try await engine.shutdown()
        try await group.shutdownGracefully()
    }

    /// Engines made one after another on one group (every default session's, on NIO's
    /// singleton) start on its loops in turn: sessions that each run one request at a time spread
    /// over the loops instead of all running on the first. (Another test's engine may be made
    /// between two of these, so the three are compared with each other, not with fixed loops.)
    @Test func enginesOnOneGroupTakeItsLoopsInTurn() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 64)
        let engines = (0..<3).map { _ in NIOEngine(eventLoopGroup: group) }
        let homes = engines.map(\.homeLoop)
        #expect(Set(homes).count == 3, "\(homes)")
        for engine in engines {
            // An idle engine's first exchange runs on its home loop.
            #expect(engine.acquireLoop() == engine.homeLoop)
            engine.releaseLoop(engine.homeLoop)
            try await engine.shutdown()
        }
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
