import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOFileSystem

/// Writes a download's body to its file, in arrival order, on a task of its own so that disk
/// writes never run on an event loop.
///
/// Chunks wait in memory only while the disk is behind: once ``highWater`` bytes are queued or
/// being written the writer asks its owner to stop reading, and once writing has brought them
/// under ``lowWater`` it asks to go on, so a download of any size holds about ``highWater`` bytes
/// of body (plus one read) at most.
final class DownloadFileWriter: Sendable {
    /// What the writer tells its owner. Delivered on the writer's task or the enqueuing thread,
    /// never while the writer's lock is held, so two changes may arrive out of order: the owner
    /// reads ``wantsPause`` for the current wish.
    enum Event: Sendable {
        /// ``wantsPause`` changed.
        case backlogChanged
        /// Writing failed; nothing more will be written.
        case failed(any Error)
    }

    /// Pause reading when this many bytes are queued or being written.
    static let highWater = 2 << 20
    /// Read on when writing has brought them under this many.
    static let lowWater = 1 << 20

    /// The file written.
    let url: URL
    /// Where writing began: 0 for a new file, the bytes kept when a download resumes.
    let startOffset: Int64
    private let state: NIOLockedValueBox<State>
    private let events: @Sendable (Event) -> Void
    private let writing: Task<Int64, any Error>

    private struct State {
        var pending = CircularBuffer<ByteBuffer>()
        /// Bytes queued or taken by the writing task and not yet written.
        var unwrittenBytes = 0
        var askedToPause = false
        var waiter: CheckedContinuation<Void, Never>?
        /// No more chunks will come: write what is left and close.
        var isFinishing = false
        /// Stop at once; what is left is dropped.
        var isAbandoned = false
        var hasFailed = false
    }

    /// Opens (or creates) the file and starts writing.
    /// - Parameters:
    ///   - url: The file.
    ///   - offset: nil to write a new file from the start (an existing one is replaced); else keep
    ///     the file's first `offset` bytes (dropping anything after them) and append.
    ///   - events: Told when to pause and resume reading, and of a failure.
    init(url: URL, keepingFirst offset: Int64?, events: @escaping @Sendable (Event) -> Void) {
        let state = NIOLockedValueBox(State())
        self.url = url
        self.startOffset = offset ?? 0
        self.state = state
        self.events = events
        let path = FilePath(url.path)
        self.writing = Task.detached {
            do {
                return try await Self.write(to: path, keepingFirst: offset, state: state, events: events)
            } catch {
                state.withLockedValue { $0.hasFailed = true }
                events(.failed(error))
                throw error
            }
        }
    }

    /// Whether the owner should stop reading now.
    var wantsPause: Bool { self.state.withLockedValue { $0.askedToPause } }

    /// What queueing a chunk leaves to do outside any lock: wake the writing task, tell the owner
    /// to pause.
    struct QueueEffects: Sendable {
        fileprivate let waiter: CheckedContinuation<Void, Never>?
        fileprivate let pause: Bool
    }

    /// Queues a chunk (never blocks) and calls nothing: safe under the caller's own lock. Pass what it returns
    /// to ``perform(_:)`` once that lock is released.
    func queue(_ chunk: ByteBuffer) -> QueueEffects {
        self.state.withLockedValue { state -> QueueEffects in
            guard !state.isFinishing, !state.isAbandoned, !state.hasFailed else { return QueueEffects(waiter: nil, pause: false) }
            state.pending.append(chunk)
            state.unwrittenBytes += chunk.readableBytes
            let waiter = state.waiter
            state.waiter = nil
            if state.unwrittenBytes >= Self.highWater, !state.askedToPause {
                state.askedToPause = true
                return QueueEffects(waiter: waiter, pause: true)
            }
            return QueueEffects(waiter: waiter, pause: false)
        }
    }

    /// Does what ``queue(_:)`` left to do.
    func perform(_ effects: QueueEffects) {
        effects.waiter?.resume()
        if effects.pause { self.events(.backlogChanged) }
    }

    /// Writes what is queued, closes the file and returns its size.
    /// - Throws: The write's or close's error.
    func finish() async throws -> Int64 {
        let waiter = self.state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
            state.isFinishing = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
        return try await self.writing.value
    }

    /// Stops writing, drops what is queued, closes the file and removes it.
    func abandon() async {
        let waiter = self.state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
            state.isAbandoned = true
            state.pending.removeAll()
            state.unwrittenBytes = 0
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
        _ = try? await self.writing.value
        try? FileManager.default.removeItem(at: self.url)
    }

    // MARK: The writing task

    private static func write(
        to path: FilePath,
        keepingFirst offset: Int64?,
        state: NIOLockedValueBox<State>,
        events: @escaping @Sendable (Event) -> Void
    ) async throws -> Int64 {
        let handle: WriteFileHandle
        if let offset {
            handle = try await FileSystem.shared.openFile(forWritingAt: path, options: .modifyFile(createIfNecessary: false))
            let size = try await handle.info().size
            guard size >= offset else {
                try? await handle.close()
                throw CourierError(.fileSystemFailure, "the partial download \(path) holds \(size) bytes, not the \(offset) its resume data names")
            }
            try await handle.resize(to: .bytes(offset))
        } else {
            handle = try await FileSystem.shared.openFile(forWritingAt: path, options: .newFile(replaceExisting: true))
        }
        var written = offset ?? 0
        do {
            var writer = handle.bufferedWriter(startingAtAbsoluteOffset: written, capacity: .mebibytes(1))
            while let batch = await Self.nextBatch(state) {
                for chunk in batch {
                    written += try await writer.write(contentsOf: chunk)
                    Self.wrote(chunk.readableBytes, state: state, events: events)
                }
            }
            if state.withLockedValue({ $0.isAbandoned }) {
                try await handle.close()
                return written
            }
            try await writer.flush()
            try await handle.close()
            return written
        } catch {
            try? await handle.close()
            throw error
        }
    }

    /// `bytes` reached the file (or the buffered writer's copy of them): once fewer than
    /// ``lowWater`` remain unwritten, a paused owner is asked to read on.
    private static func wrote(_ bytes: Int, state: NIOLockedValueBox<State>, events: @Sendable (Event) -> Void) {
        let resume = state.withLockedValue { state -> Bool in
            state.unwrittenBytes = max(0, state.unwrittenBytes - bytes)
            guard state.askedToPause, state.unwrittenBytes < Self.lowWater else { return false }
            state.askedToPause = false
            return true
        }
        if resume { events(.backlogChanged) }
    }

    /// Waits for chunks; returns all that are queued, or nil once finishing with nothing left or
    /// abandoned. Their bytes stay counted as unwritten until ``wrote(_:state:events:)``.
    private static func nextBatch(_ state: NIOLockedValueBox<State>) async -> [ByteBuffer]? {
        while true {
            enum Step { case batch([ByteBuffer]), end, wait }
            let step = state.withLockedValue { state -> Step in
                if state.isAbandoned { return .end }
                if !state.pending.isEmpty {
                    let batch = Array(state.pending)
                    state.pending.removeAll(keepingCapacity: true)
                    return .batch(batch)
                }
                return state.isFinishing ? .end : .wait
            }
            switch step {
            case .batch(let batch):
                return batch
            case .end:
                return nil
            case .wait:
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let ready = state.withLockedValue { state -> Bool in
                        if state.isAbandoned || state.isFinishing || !state.pending.isEmpty { return true }
                        state.waiter = continuation
                        return false
                    }
                    if ready { continuation.resume() }
                }
            }
        }
    }
}
