import CourierTesting
import Foundation
import HTTPTypes
import NIOCore
import Testing

@testable import Courier

/// `DataStreamResponse.broadcast(to:)`: several readers of one streamed body, over sockets.
@Suite("Stream broadcast: several readers of one body")
struct StreamBroadcastTests {
    static func bytes(of reader: DataStreamResponse, upTo limit: Int = .max) async throws(CourierError) -> Data {
        var data = Data()
        for try await chunk in reader.body {
            data.append(contentsOf: chunk.readableBytesView)
            if data.count >= limit { break }
        }
        return data
    }

    @Test("Three readers on three tasks each read every byte, in order", arguments: Transport.allCases)
    func everyReaderReadsEverything(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            let log = TaskNotificationLog()
            let stream = try await manager.stream(Request(url: server.url("/bytes/1000000?seed=9")))
            let readers = stream.broadcast(to: 3)
            let bodies = try await withThrowingTaskGroup(of: Data.self) { group in
                for reader in readers { group.addTask { try await Self.bytes(of: reader) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(bodies.count == 3)
            #expect(bodies.allSatisfy { $0.count == 1_000_000 })
            #expect(Set(bodies).count == 1)
            #expect(await log.wait(for: .taskDidComplete, of: stream.task))
            #expect(stream.task.error == nil)
        }
    }

    @Test("Readers read one after the other on one task: the first's chunks wait for the second")
    func sequentialReaders() async throws {
        try await Transport.http1.run { server, manager in
            let stream = try await manager.stream(Request(url: server.url("/bytes/300000?seed=2")))
            let readers = stream.broadcast(to: 2)
            let first = try await Self.bytes(of: readers[0])
            let second = try await Self.bytes(of: readers[1])
            #expect(first.count == 300_000)
            #expect(first == second)
        }
    }

    @Test("A reader that stops early leaves the others reading; the request is not cancelled")
    func oneReaderStopsEarly() async throws {
        try await Transport.http1.run { server, manager in
            let log = TaskNotificationLog()
            let stream = try await manager.stream(Request(url: server.url("/bytes/500000?seed=5")))
            let readers = stream.broadcast(to: 2)
            let head = try await Self.bytes(of: readers[0], upTo: 1)
            #expect(!head.isEmpty)
            let whole = try await Self.bytes(of: readers[1])
            #expect(whole.count == 500_000)
            #expect(whole.starts(with: head))
            #expect(await log.wait(for: .taskDidComplete, of: stream.task))
            #expect(stream.task.error == nil)
        }
    }

    @Test("When every reader stopped early (one never iterated), the request is cancelled and nothing is left alive")
    func allReadersStopEarly() async throws {
        try await Transport.http1.run { server, manager in
            weak var weakBroadcast: StreamBroadcast?
            let log = TaskNotificationLog()
            let stream = try await manager.stream(Request(url: server.url("/courier/big/50000000")))
            do {
                let readers = stream.broadcast(to: 2)
                weakBroadcast = readers[0].body.broadcast
                #expect(weakBroadcast != nil)
                let head = try await Self.bytes(of: readers[0], upTo: 1)
                #expect(!head.isEmpty)
                #expect(stream.task.state == .running, "one reader is still there")
            }
            // The second reader was never iterated: letting go of it stopped it.
            #expect(await log.wait(for: .taskDidComplete, of: stream.task))
            #expect(stream.task.error?.code == .cancelled)
            #expect(weakBroadcast == nil)
        }
    }

    @Test("A failure mid-body reaches every reader after every byte that arrived", arguments: Transport.allCases)
    func aFailureReachesEveryReader(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            let stream = try await manager.stream(Request(url: server.url("/courier/truncated/100000")))
            let readers = stream.broadcast(to: 2)
            let outcomes = await withTaskGroup(of: (Int, CourierError?).self) { group in
                for reader in readers {
                    group.addTask {
                        var received = 0
                        do {
                            for try await chunk in reader.body { received += chunk.readableBytes }
                            return (received, nil)
                        } catch {
                            return (received, error as? CourierError)
                        }
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(outcomes.count == 2)
            for (received, error) in outcomes {
                #expect(received == 100_000)
                #expect(error?.code == .connectionClosed)
            }
        }
    }

    @Test("A body gathered whole before the call returned is broadcast too; a second iteration of a reader ends at once")
    func gatheredBodyAndSecondIteration() async throws {
        try await Transport.http1.run { server, manager in
            let stream = try await manager.stream(Request(url: server.url("/bytes/1000?seed=1")), gatheringBodiesUpTo: 1_000_000)
            let readers = stream.broadcast(to: 2)
            #expect(try await Self.bytes(of: readers[0]).count == 1000)
            #expect(try await Self.bytes(of: readers[1]).count == 1000)
            #expect(try await Self.bytes(of: readers[1]).isEmpty, "a body is read once")
        }
    }
}
