import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOFileSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes a download's body to its file, in arrival order, on a task of its own so that disk
/// writes never run on an event loop.
///
/// Chunks wait in memory only while the disk is behind: once the chunks queued or being written
/// hold ``highWater`` bytes of memory the writer asks its owner to stop reading, and once writing
/// has brought them under ``lowWater`` it asks to go on, so a download of any size holds about
/// ``highWater`` bytes of body (plus one read) at most, and ``stagingCapacity`` more for small
/// chunks gathered into one write.
///
/// A chunk is charged for the whole buffer it lives in, not only its bytes: a TLS connection
/// decrypts into buffers that keep the capacity of the largest read so far, so a chunk of a few
/// kilobytes may keep hundreds alive. Consecutive chunks cut from one buffer (HTTP/2 frames) are
/// charged once.
///
/// Chunks of at least ``directWriteMinimum`` bytes go to the file from their own buffers (no
/// copy); smaller ones (HTTP/2 frames, short reads) are copied into one staging buffer that is
/// written once it holds ``stagingCapacity`` bytes, so that a body of small chunks does not cost
/// one trip to the file system's threads per chunk. Each batch of queued chunks is written in one
/// such trip.
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

    /// Pause reading when the chunks queued or being written hold this many bytes of memory.
    static let highWater = 2 << 20
    /// Read on when writing has brought them under this many.
    static let lowWater = 1 << 20
    /// Chunks this large are written from their own buffers; smaller ones are gathered.
    static let directWriteMinimum = 64 << 10
    /// Small chunks are gathered into a buffer of this size before they are written.
    static let stagingCapacity = 256 << 10

    /// The file written.
    let url: URL
    /// Where writing began: 0 for a new file, the bytes kept when a download resumes.
    let startOffset: Int64
    private let state: NIOLockedValueBox<State>
    private let events: @Sendable (Event) -> Void
    private let writing: Task<Int64, any Error>

    /// Awaited before each write to the file: tests hold writes back with it to play a slow disk.
    typealias WriteGate = @Sendable () async -> Void

    /// A chunk waiting to be written and the memory it is charged for.
    private struct Queued {
        var chunk: ByteBuffer
        var charge: Int
    }

    private struct State {
        var pending = CircularBuffer<Queued>()
        /// Memory held by the chunks queued or taken by the writing task and not yet written.
        var heldBytes = 0
        /// The address of the buffer the newest chunk lives in (an identity only, never
        /// dereferenced), while that chunk is held.
        var lastStorage: UInt?
        var askedToPause = false
        var waiter: CheckedContinuation<Void, Never>?
        /// No more chunks will come: write what is left and close.
        var isFinishing = false
        /// Stop at once; what is left is dropped.
        var isAbandoned = false
        var hasFailed = false
        /// For a writer that continues a file and failed writing: how many bytes at the file's
        /// start are known good (see ``lengthKeptAfterFailure()``). Set before ``hasFailed``.
        var goodLength: Int64?
        /// The most ``heldBytes`` ever reached.
        var peakHeldBytes = 0
    }

    /// Opens (or creates) the file and starts writing. A file it creates is readable and writable
    /// by its owner only (0600, as ``AtomicFile`` makes its files): a download may be private.
    /// - Parameters:
    ///   - url: The file.
    ///   - offset: nil to write a new file from the start (an existing one is replaced); else keep
    ///     the file's first `offset` bytes (dropping anything after them) and append.
    ///   - writeGate: Awaited before each write to the file (tests only).
    ///   - events: Told when to pause and resume reading, and of a failure.
    init(url: URL, keepingFirst offset: Int64?, writeGate: WriteGate? = nil, events: @escaping @Sendable (Event) -> Void) {
        let state = NIOLockedValueBox(State())
        self.url = url
        self.startOffset = offset ?? 0
        self.state = state
        self.events = events
        let path = FilePath(url.path)
        self.writing = Task.detached {
            do {
                return try await Self.write(to: path, keepingFirst: offset, state: state, gate: writeGate, events: events)
            } catch {
                state.withLockedValue { $0.hasFailed = true }
                events(.failed(error))
                throw error
            }
        }
    }

    /// Whether the owner should stop reading now.
    var wantsPause: Bool { self.state.withLockedValue { $0.askedToPause } }

    /// Whether writing failed (it is not waited for).
    var hasFailed: Bool { self.state.withLockedValue { $0.hasFailed } }

    /// Memory held by the chunks queued or being written now, and the most there ever was.
    var backlog: (now: Int, peak: Int) {
        self.state.withLockedValue { ($0.heldBytes, $0.peakHeldBytes) }
    }

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
            let storage = chunk.withUnsafeReadableBytesWithStorageManagement { UInt(bitPattern: $1.toOpaque()) }
            let charge = storage == state.lastStorage ? 0 : chunk.storageCapacity
            state.lastStorage = storage
            state.pending.append(Queued(chunk: chunk, charge: charge))
            state.heldBytes += charge
            state.peakHeldBytes = max(state.peakHeldBytes, state.heldBytes)
            let waiter = state.waiter
            state.waiter = nil
            if state.heldBytes >= Self.highWater, !state.askedToPause {
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

    /// For a writer that continued a file (`keepingFirst` was given) and failed writing it (a full
    /// disk): how many bytes at the file's start are known good, the bytes it kept and those of
    /// each write that reached the file before the failure. The file was cut back to them, so that
    /// a write the disk refused halfway leaves nothing of itself. Nil when writing has not failed
    /// (it is not waited for), when the writer began a new file, or when it failed before it had
    /// checked the bytes it kept; the file is then as ``abandon(removingFile:)`` finds it (a new
    /// file that failed was never made visible: a file it was to replace is as it was).
    func lengthKeptAfterFailure() async -> Int64? {
        guard self.state.withLockedValue({ $0.hasFailed }) else { return nil }
        _ = try? await self.writing.value
        return self.state.withLockedValue { $0.goodLength }
    }

    /// Stops writing, drops what is queued, closes the file and removes it; with `removingFile`
    /// false the file is left as it was before this writer (a new file is never made visible),
    /// apart from the bytes a writer that continues it wrote after the kept ones.
    func abandon(removingFile: Bool = true) async {
        let waiter = self.state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
            state.isAbandoned = true
            state.pending.removeAll()
            state.heldBytes = 0
            state.lastStorage = nil
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
        _ = try? await self.writing.value
        if removingFile { try? FileManager.default.removeItem(at: self.url) }
    }

    // MARK: The writing task

    private static func write(
        to path: FilePath,
        keepingFirst offset: Int64?,
        state: NIOLockedValueBox<State>,
        gate: WriteGate?,
        events: @escaping @Sendable (Event) -> Void
    ) async throws -> Int64 {
        let handle: WriteFileHandle
        if let offset {
            handle = try await FileSystem.shared.openFile(forWritingAt: path, options: .modifyFile(createIfNecessary: false))
            do {
                let size = try await handle.info().size
                guard size >= offset else {
                    throw CourierError(.fileSystemFailure, "the partial download \(path) holds \(size) bytes, not the \(offset) its resume data names")
                }
                try await handle.resize(to: .bytes(offset))
            } catch {
                // Closed on every way out: NIOFileSystem stops the process when an open handle is
                // released (a file system that refuses `ftruncate`, an I/O error in `fstat`).
                try? await handle.close()
                throw error
            }
        } else {
            handle = try await FileSystem.shared.openFile(
                forWritingAt: path, options: .newFile(replaceExisting: true, permissions: .ownerReadWrite))
        }
        var file = FileOutput(handle: handle, offset: offset ?? 0, gate: gate)
        do {
            while var batch = await Self.nextBatch(state) {
                let charge = batch.reduce(0) { $0 + $1.charge }
                var chunks = batch.map(\.chunk)
                batch.removeAll()
                try await file.write(&chunks)
                // Released before they are uncharged, so that the memory counted is never less than
                // the memory held while the writer waits for the next batch.
                chunks.removeAll()
                Self.wrote(charge, state: state, events: events)
            }
            if state.withLockedValue({ $0.isAbandoned }) {
                // Never made visible: a new file over the partial one of resume data (a 200 that
                // rewrites it) leaves that one as it was.
                try await handle.close(makeChangesVisible: false)
                return file.offset
            }
            try await file.flush()
            try await handle.close()
            return file.offset
        } catch {
            if offset != nil {
                // A continuation's file holds the caller's bytes from before: it keeps them, and
                // those written after them, cut back to the end of the last write that reached
                // it (a write the disk refused may have left part of itself). Should the cut fail,
                // the bytes up to there are still good, and a continuation cuts the file back to
                // the bytes its resume data names before it appends.
                try? await handle.resize(to: .bytes(file.written))
                state.withLockedValue { [written = file.written] in $0.goodLength = written }
            }
            // A new file is never made visible: a 200 that rewrites the partial file of resume
            // data leaves that one as it was (the flag is ignored for a continued file).
            try? await handle.close(makeChangesVisible: false)
            throw error
        }
    }

    /// The file and where its next byte goes; small chunks wait in `staging` until it is full.
    private struct FileOutput {
        let handle: WriteFileHandle
        /// Bytes written to the file, plus those staged.
        var offset: Int64
        /// Where the last write that reached the file ended (where writing began, before any):
        /// the file's bytes up to here are the body's.
        var written: Int64
        let gate: WriteGate?
        var staging = ByteBuffer()
        /// Where the staged bytes go.
        var stagingOffset: Int64 = 0

        init(handle: WriteFileHandle, offset: Int64, gate: WriteGate?) {
            self.handle = handle
            self.offset = offset
            self.written = offset
            self.gate = gate
        }

        /// One write to the file: a chunk's own buffer, or the staging buffer.
        private struct Write: Sendable {
            var buffer: ByteBuffer
            var offset: Int64
            var isStaged: Bool
        }

        /// Writes a batch: large chunks from their own buffers, small ones through `staging`,
        /// which is written once nearly full, or before a large chunk so that the file keeps
        /// their order. One trip to the file system's threads per batch, and one more each time
        /// `staging` fills, so that at most one full staging buffer exists at a time.
        mutating func write(_ batch: inout [ByteBuffer]) async throws {
            var out: [Write] = []
            for chunk in batch where chunk.readableBytes > 0 {
                if chunk.readableBytes >= DownloadFileWriter.directWriteMinimum {
                    if self.staging.readableBytes > 0 { out.append(self.takeStaging()) }
                    out.append(Write(buffer: chunk, offset: self.offset, isStaged: false))
                    self.offset += Int64(chunk.readableBytes)
                    continue
                }
                if self.staging.readableBytes == 0 {
                    self.stagingOffset = self.offset
                    self.staging.reserveCapacity(DownloadFileWriter.stagingCapacity)
                }
                self.staging.writeImmutableBuffer(chunk)
                self.offset += Int64(chunk.readableBytes)
                if self.staging.readableBytes > DownloadFileWriter.stagingCapacity - DownloadFileWriter.directWriteMinimum {
                    out.append(self.takeStaging())
                    try await self.send(&out)
                }
            }
            try await self.send(&out)
        }

        /// Writes what is staged.
        mutating func flush() async throws {
            guard self.staging.readableBytes > 0 else { return }
            var out = [self.takeStaging()]
            try await self.send(&out)
        }

        /// The staged bytes and where they go; `staging` is left empty.
        private mutating func takeStaging() -> Write {
            defer { self.staging = ByteBuffer() }
            return Write(buffer: self.staging, offset: self.stagingOffset, isStaged: true)
        }

        /// Writes `writes` in order, in one trip, and empties it. A staging buffer sent becomes
        /// `staging` again (emptied), so that its memory is reused rather than allocated anew.
        private mutating func send(_ writes: inout [Write]) async throws {
            guard !writes.isEmpty else { return }
            if let gate { await gate() }
            try await Self.perform(writes, on: self.handle)
            // In order, each after the one before: the last ends the bytes written.
            if let last = writes.last { self.written = last.offset + Int64(last.buffer.readableBytes) }
            guard let index = writes.lastIndex(where: \.isStaged), self.staging.readableBytes == 0 else {
                writes.removeAll()
                return
            }
            var reused = writes[index].buffer
            writes.removeAll()
            reused.clear()
            self.staging = reused
        }

        private static func perform(_ writes: [Write], on handle: WriteFileHandle) async throws {
            try await handle.withUnsafeDescriptor { descriptor in
                for write in writes {
                    try Self.writeAll(write.buffer, at: write.offset, to: descriptor.rawValue)
                }
            }
        }

        /// `pwrite` until the whole buffer is written; an interrupted call is tried again.
        private static func writeAll(_ buffer: ByteBuffer, at offset: Int64, to descriptor: CInt) throws {
            try buffer.withUnsafeReadableBytes { bytes in
                var done = 0
                while done < bytes.count {
                    let result = pwrite(descriptor, bytes.baseAddress! + done, bytes.count - done, off_t(offset + Int64(done)))
                    if result < 0 {
                        if errno == EINTR { continue }
                        throw IOError(errnoCode: errno, reason: "pwrite")
                    }
                    done += result
                }
            }
        }
    }

    /// Chunks charged `bytes` reached the file (or the staging buffer): once the chunks still
    /// held are charged less than ``lowWater``, a paused owner is asked to read on.
    private static func wrote(_ bytes: Int, state: NIOLockedValueBox<State>, events: @Sendable (Event) -> Void) {
        let resume = state.withLockedValue { state -> Bool in
            state.heldBytes = max(0, state.heldBytes - bytes)
            // Nothing is held: the newest chunk's buffer may be freed, and its address reused.
            if state.heldBytes == 0 && state.pending.isEmpty { state.lastStorage = nil }
            guard state.askedToPause, state.heldBytes < Self.lowWater else { return false }
            state.askedToPause = false
            return true
        }
        if resume { events(.backlogChanged) }
    }

    /// Waits for chunks; returns all that are queued, or nil once finishing with nothing left or
    /// abandoned. They stay charged until ``wrote(_:state:events:)``.
    private static func nextBatch(_ state: NIOLockedValueBox<State>) async -> [Queued]? {
        while true {
            enum Step { case batch([Queued]), end, wait }
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
