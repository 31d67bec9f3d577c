import Courier
import CourierOpenAPI
import CourierTesting
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import OpenAPIRuntime
import Testing

/// A server the generated client runs against: always the in-process TestServer, and a real
/// httpbin when `COURIER_HTTPBIN_URL` names one (`.ci/run` starts PyPI's httpbin under gunicorn).
enum Peer: Sendable, CustomTestStringConvertible {
    case testServer
    case httpbin(URL)

    static var all: [Peer] {
        var peers: [Peer] = [.testServer]
        if let value = ProcessInfo.processInfo.environment["COURIER_HTTPBIN_URL"], let url = URL(string: value) {
            peers.append(.httpbin(url))
        }
        return peers
    }

    var testDescription: String {
        switch self {
        case .testServer: "TestServer"
        case .httpbin(let url): "httpbin at \(url.absoluteString)"
        }
    }

    /// Runs `body` with a generated client on a `CourierTransport` over a new manager, against
    /// this peer; the manager is invalidated (and its engine shut down) afterwards.
    func withClient<T: Sendable>(
        configuration: CourierTransport.Configuration = .init(),
        _ body: (Client, SessionManager) async throws -> T
    ) async throws -> T {
        switch self {
        case .testServer:
            try await TestServer.withServer { server in
                try await withGeneratedClient(baseURL: server.baseURL, configuration: configuration, body)
            }
        case .httpbin(let url):
            try await withGeneratedClient(baseURL: url, configuration: configuration, body)
        }
    }
}

/// Runs `body` with a generated client for `baseURL` over a new manager, which is invalidated
/// afterwards whatever `body` does.
func withGeneratedClient<T: Sendable>(
    baseURL: URL,
    configuration: CourierTransport.Configuration = .init(),
    manager: SessionManager = SessionManager(),
    _ body: (Client, SessionManager) async throws -> T
) async throws -> T {
    let client = Client(serverURL: baseURL, transport: CourierTransport(manager: manager, configuration: configuration))
    do {
        let result = try await body(client, manager)
        await manager.invalidate(cancelingTasks: true)
        return result
    } catch {
        await manager.invalidate(cancelingTasks: true)
        throw error
    }
}

/// What a manager's hooks said as its tasks ended: each task's error (nil for success) and
/// metrics, in order, awaitable.
final class CompletionRecorder: Sendable {
    private let state = NIOLockedValueBox<(errors: [CourierError?], metrics: [TaskMetrics], waiters: [(Int, @Sendable (Bool) -> Void)])>(([], [], []))

    /// Installs the hooks on `manager`.
    init(_ manager: SessionManager) {
        var hooks = manager.hooks
        hooks.taskDidComplete = { [self] _, _, error in
            self.record { $0.errors.append(error) }
        }
        hooks.taskDidFinishCollectingMetrics = { [self] _, _, metrics in
            self.state.withLockedValue { $0.metrics.append(metrics) }
        }
        manager.hooks = hooks
    }

    private func record(_ change: (inout (errors: [CourierError?], metrics: [TaskMetrics], waiters: [(Int, @Sendable (Bool) -> Void)])) -> Void) {
        let ready = self.state.withLockedValue { state -> [@Sendable (Bool) -> Void] in
            change(&state)
            let count = state.errors.count
            let ready = state.waiters.filter { $0.0 <= count }.map(\.1)
            state.waiters.removeAll { $0.0 <= count }
            return ready
        }
        for waiter in ready { waiter(true) }
    }

    /// The errors the tasks completed with, so far.
    var errors: [CourierError?] { self.state.withLockedValue { $0.errors } }
    /// The metrics the tasks finished collecting, so far.
    var metrics: [TaskMetrics] { self.state.withLockedValue { $0.metrics } }

    /// Returns once `count` tasks have completed; records an issue and returns if they have not
    /// within the hang guard of `boundedWait(within:_:)`.
    func wait(for count: Int, sourceLocation: SourceLocation = #_sourceLocation) async {
        let completed = await boundedWait { settle in
            let done = self.state.withLockedValue { state -> Bool in
                if state.errors.count >= count { return true }
                state.waiters.append((count, settle))
                return false
            }
            if done { settle(true) }
        }
        if !completed { Issue.record("\(count) tasks did not complete within the hang guard", sourceLocation: sourceLocation) }
    }
}

/// Waits until `register`'s `settle` is called with true: true then; false when it has not been
/// within `limit` (a hang guard, 120 s: the suite's slowest waits are a fraction of that) or
/// the waiting task is cancelled. A wait without a bound for an event an earlier step was to
/// cause hung the whole test run when that step failed (a connection timed out on a slow machine);
/// this one lets the test go on and fail.
func boundedWait(within limit: Duration = .seconds(120), _ register: (@escaping @Sendable (Bool) -> Void) -> Void) async -> Bool {
    let pending = NIOLockedValueBox<CheckedContinuation<Bool, Never>?>(nil)
    let settle: @Sendable (Bool) -> Void = { value in pending.withLockedValue { $0.take() }?.resume(returning: value) }
    return await withTaskCancellationHandler {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            pending.withLockedValue { $0 = continuation }
            if Task.isCancelled { settle(false) }
            register(settle)
            let (seconds, attoseconds) = limit.components
            let nanoseconds = Int(clamping: seconds) &* 1_000_000_000 &+ Int(attoseconds / 1_000_000_000)
            DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { settle(false) }
        }
    } onCancel: {
        settle(false)
    }
}

/// A one-shot signal a test awaits: a server route fires it when a request arrived, or a test
/// fires it to let a held route answer.
final class Signal: Sendable {
    private let state = NIOLockedValueBox<(fired: Bool, waiters: [@Sendable (Bool) -> Void])>((false, []))

    func fire() {
        let waiters = self.state.withLockedValue { state -> [@Sendable (Bool) -> Void] in
            state.fired = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter(true) }
    }

    /// Waits until the signal fires: true then; false when it has not within the hang guard
    /// (`boundedWait(within:_:)`) or the waiting task was cancelled.
    @discardableResult
    func wait() async -> Bool {
        await boundedWait { settle in
            let fired = self.state.withLockedValue { state -> Bool in
                if !state.fired { state.waiters.append(settle) }
                return state.fired
            }
            if fired { settle(true) }
        }
    }
}

/// Keeps the metadata of every message logged through it.
struct MetadataLogHandler: LogHandler {
    let records: NIOLockedValueBox<[Logger.Metadata]>
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { self.metadata[key] }
        set { self.metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        self.records.withLockedValue { $0.append(self.metadata.merging(event.metadata ?? [:]) { $1 }) }
    }
}

/// `count` bytes of a repeating pattern, made one chunk at a time as they are asked for (never
/// held whole), then, when `failure` is given, that error instead of the end.
struct PatternChunks: AsyncSequence, Sendable {
    typealias Element = ArraySlice<UInt8>
    typealias Failure = any Error

    let count: Int
    var chunkSize = 64 * 1024
    var failure: (any Error & Sendable)? = nil
    /// Counts the chunks made, for tests that check how far the producer ran.
    var made: NIOLockedValueBox<Int>? = nil

    static func byte(at offset: Int) -> UInt8 { UInt8(truncatingIfNeeded: offset &* 31 &+ offset >> 8) }

    /// The pattern repeats every 64 KiB; two periods, made once, so that any chunk of up to a
    /// period is one slice (a debug build made each chunk byte by byte, a second of the suite's time).
    static let twoPeriods: [UInt8] = {
        let period = (0..<65_536).map(PatternChunks.byte(at:))
        return period + period
    }()

    /// The bytes from `start` to `end` of the pattern.
    static func bytes(from start: Int, to end: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(end - start)
        var offset = start
        while offset < end {
            let count = Swift.min(end - offset, 65_536)
            let from = offset % 65_536
            bytes.append(contentsOf: Self.twoPeriods[from..<(from + count)])
            offset += count
        }
        return bytes
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        let sequence: PatternChunks
        var offset = 0

        mutating func next() async throws -> ArraySlice<UInt8>? {
            guard self.offset < self.sequence.count else {
                if let failure = self.sequence.failure { throw failure }
                return nil
            }
            let end = Swift.min(self.offset + self.sequence.chunkSize, self.sequence.count)
            let chunk = PatternChunks.bytes(from: self.offset, to: end)
            self.offset = end
            self.sequence.made?.withLockedValue { $0 += 1 }
            return chunk[...]
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(sequence: self) }
}

/// The CRC-32 of `PatternChunks(count:)`'s bytes, as `/courier/upload` reports it.
func patternCRC(count: Int) -> String {
    var crc = CRC32()
    for start in stride(from: 0, to: count, by: 64 * 1024) {
        crc.update(PatternChunks.bytes(from: start, to: min(start + 64 * 1024, count)))
    }
    return crc.hex
}

/// The error a failing upload stream throws.
struct UploadStreamFailure: Error, Equatable, Sendable {
    let reason: String
}
