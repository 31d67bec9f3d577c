import Courier
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOWebSocket
import WSClient

#if canImport(Glibc)
import Glibc
#endif

/// One measured WebSocket run in a process of its own (`courier-bench ws-child <scenario>
/// <client> <url> <messages> <size> <connections>`): every connection opens and warms up first,
/// then the clock and the process's CPU time are read, all connections go at once, and they are
/// read again when the last is done (closing is not measured). Prints one line of JSON.
enum WebSocketBenchChild {
    struct Measurement: Codable {
        var seconds: Double
        /// Round trips (echo) or messages sent (one way).
        var messages: Int
        var bytes: Int64
        var cpuMicroseconds: Int64
        var peakRSSKiB: Int64
    }

    /// What every connection of a run shares: the start, once all are warm, and the end.
    struct Run: Sendable {
        let ready: Latch
        let go = Latch(1)
        let done: Latch
        let scenario: String
        let messages: Int
        let size: Int

        init(scenario: String, connections: Int, messages: Int, size: Int) {
            self.ready = Latch(connections)
            self.done = Latch(connections)
            self.scenario = scenario
            self.messages = messages
            self.size = size
        }
    }

    static let warmup = 200

    static func run(_ arguments: [String]) async -> Int32 {
        guard arguments.count == 6, let total = Int(arguments[3]), let size = Int(arguments[4]), let connections = Int(arguments[5]),
            total > 0, size > 0, connections > 0
        else {
            FileHandle.standardError.write(Data("usage: courier-bench ws-child <scenario> <client> <url> <messages> <size> <connections>\n".utf8))
            return 2
        }
        let (scenario, client, url) = (arguments[0], arguments[1], arguments[2])
        let perConnection = max(1, total / connections)
        let run = Run(scenario: scenario, connections: connections, messages: perConnection, size: size)
        let failures = NIOLockedValueBox<[String]>([])
        let manager = SessionManager()
        // The connections run on a task of their own so that this one can wait for them all to be
        // ready and time the run; it is awaited below on every path (a failed connection releases
        // both gates), so it never outlives the child.
        let work = Task {
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<connections {
                    group.addTask {
                        do {
                            switch client {
                            case "courier": try await Self.courier(url, run: run, manager: manager)
                            default: try await Self.wsClient(url, run: run)
                            }
                        } catch {
                            failures.withLockedValue { $0.append("\(error)") }
                            // The run has failed: nobody waits for the others any longer.
                            run.ready.release()
                            run.done.release()
                        }
                    }
                }
            }
        }
        await run.ready.wait()
        let cpuBefore = ProcessCPU.sample()
        let started = ContinuousClock.now
        run.go.countDown()
        await run.done.wait()
        let elapsed = ContinuousClock.now - started
        let cpuAfter = ProcessCPU.sample()
        await work.value
        await manager.invalidate(cancelingTasks: true)
        if let failure = failures.withLockedValue({ $0.first }) {
            FileHandle.standardError.write(Data("courier-bench ws-child \(scenario) \(client): \(failure)\n".utf8))
            return 1
        }
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let messages = perConnection * connections
        let measurement = Measurement(
            seconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18,
            messages: messages, bytes: Int64(messages) * Int64(size),
            cpuMicroseconds: cpuAfter.microseconds - cpuBefore.microseconds, peakRSSKiB: Int64(usage.ru_maxrss))
        guard let json = try? JSONEncoder().encode(measurement) else { return 1 }
        print(String(decoding: json, as: UTF8.self))
        return 0
    }

    struct Mismatch: Error, CustomStringConvertible {
        let description: String
    }

    /// A message as the run checks it, whatever the client.
    enum Received: Equatable {
        case binary(count: Int)
        case text(String)
    }

    /// One connection's part of a run, whatever the client: warm up, wait for the start, do its
    /// share, count down `done` (closing is the caller's, after). The discard route drops binary
    /// messages and echoes text: once a text message comes back, the server read all before it.
    private static func drive(
        _ run: Run, send: () async throws -> Void, sendText: (String) async throws -> Void, receive: () async throws -> Received?
    ) async throws {
        func roundTrips(_ count: Int) async throws {
            for _ in 0..<count {
                try await send()
                guard try await receive() == .binary(count: run.size) else { throw Mismatch(description: "not the echo") }
            }
        }
        func oneWay(_ count: Int) async throws {
            for _ in 0..<count { try await send() }
            try await sendText("end")
            guard try await receive() == .text("end") else { throw Mismatch(description: "not the end's echo") }
        }
        func work(_ count: Int) async throws {
            if run.scenario == "oneway" { try await oneWay(count) } else { try await roundTrips(count) }
        }
        try await work(Self.warmup)
        run.ready.countDown()
        await run.go.wait()
        try await work(run.messages)
        run.done.countDown()
    }

    // MARK: Courier

    private static func courier(_ url: String, run: Run, manager: SessionManager) async throws {
        var configuration = WebSocketConfiguration()
        // TestServer's upgrader offers no compression either way; said so the two clients match.
        configuration.permessageDeflate = false
        let task = manager.webSocketTask(with: Request(url: URL(string: url)!), configuration: configuration)
        try await task.waitUntilOpen()
        var messages = task.messages.makeAsyncIterator()
        let payload = Courier.WebSocketMessage.binary(Data(repeating: 0x2A, count: run.size))
        try await Self.drive(
            run, send: { try await task.send(payload) }, sendText: { try await task.send(.text($0)) },
            receive: {
                switch try await messages.next() {
                case .binary(let data)?: .binary(count: data.count)
                case .text(let text)?: .text(text)
                case nil: nil
                }
            })
        await task.close()
    }

    // MARK: swift-websocket

    private static func wsClient(_ url: String, run: Run) async throws {
        let logger = Logger(label: "courier-bench.wsclient", factory: { _ in SwiftLogNoOpLogHandler() })
        let configuration = WebSocketClientConfiguration(maxFrameSize: 1 << 20)
        try await WebSocketClient.connect(url: url, configuration: configuration, logger: logger) { inbound, outbound, _ in
            var messages = inbound.messages(maxSize: 1 << 20).makeAsyncIterator()
            let payload = ByteBuffer(repeating: 0x2A, count: run.size)
            try await Self.drive(
                run, send: { try await outbound.write(.binary(payload)) }, sendText: { try await outbound.write(.text($0)) },
                receive: {
                    switch try await messages.next() {
                    case .binary(let buffer)?: .binary(count: buffer.readableBytes)
                    case .text(let text)?: .text(text)
                    case nil: nil
                    }
                })
            try await outbound.close(.normalClosure, reason: nil)
        }
    }
}

/// Counts down to zero once; `wait()` returns when it got there.
final class Latch: Sendable {
    private struct State {
        var count: Int
        var waiters: [CheckedContinuation<Void, Never>] = []
    }
    private let state: NIOLockedValueBox<State>

    init(_ count: Int) { self.state = NIOLockedValueBox(State(count: count)) }

    func countDown() { self.countDown(by: 1) }

    /// Goes to zero at once.
    func release() { self.countDown(by: .max) }

    private func countDown(by amount: Int) {
        let waiters = self.state.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
            guard state.count > 0 else { return [] }
            state.count = max(0, state.count - amount)
            guard state.count == 0 else { return [] }
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = self.state.withLockedValue { state -> Bool in
                if state.count == 0 { return true }
                state.waiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }
}
