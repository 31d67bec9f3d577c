import CourierTesting
import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import Courier

/// Seed 003's "#2672": the gathered body is handed to the serializer and dropped, never kept in
/// the task's delegate beside the serialized copy.
@Test func bodyBufferIsReleasedAfterCompletion() async throws {
    try await withTestServer { server in
        try await withManager(baseURL: server.baseURL) { manager in
            manager.responseSerializer = HTTPResponseSerializer()
            let task: SessionTask = await awaitCallback { finish in
                let box = Recorder<SessionTask>()
                let task = manager.dataTask(with: Request(url: server.url("/courier/big/200000"))) { _, object, _ in
                    #expect((object as? Data)?.count == 200_000)
                    finish(box.all[0])
                }
                box.append(task)
                task.resume()
            }
            #expect(task.delegate.state.withLockedValue { $0.body } == nil)
            #expect(task.delegate.state.withLockedValue { $0.machine.exchange } == nil)
            #expect(task.countOfBytesReceived == 200_000)
        }
    }
}
