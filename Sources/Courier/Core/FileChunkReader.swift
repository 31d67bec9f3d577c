import Foundation
import NIOCore
import NIOFileSystem

/// Reads a file that is sent as a body (a file body, a multipart form's file part) in large
/// chunks, opening it on the first read and closing it after the last, and checks that the file
/// still has the size that was declared for it (the request's `Content-Length`).
///
/// A body abandoned midway (a cancelled upload, a server that answered before the body was sent)
/// drops its reader with the file still open; `deinit` then closes the descriptor, since
/// NIOFileSystem traps on a handle dropped while open.
final class FileChunkReader {
    /// How much of a file one read takes: large enough that the hop to NIOFileSystem's threads
    /// and to the event loop is paid rarely (64 KiB chunks made a 1 GiB upload 0.62× raw AHC,
    /// 512 KiB 1.35×).
    static let defaultChunkLength = 512 * 1024

    private let url: URL
    private let expectedSize: Int64
    private let chunkLength: Int
    /// When `expectedSize` was read, for messages: "when it was appended to the form".
    private let sizeTakenWhen: String
    private var handle: ReadFileHandle?
    private var offset: Int64 = 0
    private var isFinished = false

    init(url: URL, expectedSize: Int64, chunkLength: Int, sizeTakenWhen: String = "when the request was made") {
        self.url = url
        self.sizeTakenWhen = sizeTakenWhen
        self.expectedSize = expectedSize
        self.chunkLength = chunkLength
    }

    deinit {
        if let handle = self.handle, let descriptor = try? handle.detachUnsafeFileDescriptor() {
            try? descriptor.close()
        }
    }

    /// The next chunk of the file, or nil after its last byte.
    /// - Throws: ``CourierError/Code/bodyReadFailed`` when the file is gone, is no longer a
    ///   regular file, cannot be read, or is not the size it was when it was appended.
    func nextChunk() async throws(CourierError) -> ByteBuffer? {
        if self.isFinished { return nil }
        let handle = try await self.openedHandle()
        let remaining = self.expectedSize - self.offset
        if remaining == 0 {
            try await self.finish(handle)
            return nil
        }
        let chunk: ByteBuffer
        do {
            chunk = try await handle.readChunk(fromAbsoluteOffset: self.offset, length: .bytes(min(Int64(self.chunkLength), remaining)))
        } catch {
            throw await self.failing(CourierError(.bodyReadFailed, "reading \(self.url.path) at offset \(self.offset) failed", underlyingError: error))
        }
        if chunk.readableBytes == 0 {
            throw await self.failing(self.sizeChangedError(now: self.offset, detail: "it ended early"))
        }
        self.offset += Int64(chunk.readableBytes)
        // The chunk that completes the declared length is handed over only once the file is
        // known not to have grown. Checked on the call after it, the check came once that chunk
        // had gone out: the server had the whole request (a body as long as declared) before the
        // client failed it, and may have acted on it.
        if self.offset == self.expectedSize {
            try await self.checkSizeUnchanged(handle)
        }
        return chunk
    }

    private func openedHandle() async throws(CourierError) -> ReadFileHandle {
        if let handle = self.handle { return handle }
        let handle: ReadFileHandle
        do {
            handle = try await FileSystem.shared.openFile(forReadingAt: FilePath(self.url.path), options: OpenOptions.Read())
        } catch {
            throw CourierError(.bodyReadFailed, "cannot open \(self.url.path) to send it: it was removed or is unreadable", underlyingError: error)
        }
        self.handle = handle
        let info: FileInfo
        do {
            info = try await handle.info()
        } catch {
            throw await self.failing(CourierError(.bodyReadFailed, "cannot examine \(self.url.path) to send it", underlyingError: error))
        }
        guard info.type == .regular else {
            throw await self.failing(CourierError(.bodyReadFailed, "\(self.url.path) is no longer a regular file (it is a \(info.type))"))
        }
        guard info.size == self.expectedSize else {
            throw await self.failing(self.sizeChangedError(now: info.size, detail: nil))
        }
        return handle
    }

    /// Checks that the file still has the declared size (it did not grow while it was read), before
    /// its last chunk is handed over.
    private func checkSizeUnchanged(_ handle: ReadFileHandle) async throws(CourierError) {
        let size: Int64
        do {
            size = try await handle.info().size
        } catch {
            throw await self.failing(CourierError(.bodyReadFailed, "cannot examine \(self.url.path) while sending it", underlyingError: error))
        }
        if size != self.expectedSize {
            throw await self.failing(self.sizeChangedError(now: size, detail: nil))
        }
    }

    /// Closes the file after its last chunk, whose read checked its size.
    private func finish(_ handle: ReadFileHandle) async throws(CourierError) {
        self.isFinished = true
        self.handle = nil
        do {
            try await Self.close(handle)
        } catch {
            throw CourierError(.bodyReadFailed, "closing \(self.url.path) failed", underlyingError: error)
        }
    }

    /// Closes the file, if open, and hands back `error` to throw.
    private func failing(_ error: CourierError) async -> CourierError {
        self.isFinished = true
        if let handle = self.handle {
            self.handle = nil
            try? await Self.close(handle)
        }
        return error
    }

    /// Closes `handle` whatever happens. NIOFileSystem's `close()` refuses in a cancelled task (the
    /// pump of a cancelled upload reads in one), and NIOFileSystem traps on a handle dropped while
    /// open: when `close()` throws, the descriptor is detached and closed directly.
    static func close(_ handle: ReadFileHandle) async throws {
        do {
            try await handle.close()
        } catch {
            if let descriptor = try? handle.detachUnsafeFileDescriptor() {
                try? descriptor.close()
            }
            throw error
        }
    }

    private func sizeChangedError(now size: Int64, detail: String?) -> CourierError {
        let what = detail.map { "; \($0)" } ?? ""
        return CourierError(
            .bodyReadFailed,
            "\(self.url.path) was \(self.expectedSize) bytes \(self.sizeTakenWhen) and is \(size) bytes now\(what); "
                + "the body's declared length would be wrong, so it is not sent")
    }
}

/// A file's chunks, read by a ``FileChunkReader`` and checked against `size`: iterating twice
/// reads the file twice.
struct FileChunks: AsyncSequence, Sendable {
    let url: URL
    let size: Int64
    var chunkLength = FileChunkReader.defaultChunkLength

    func makeAsyncIterator() -> Iterator {
        Iterator(reader: FileChunkReader(url: self.url, expectedSize: self.size, chunkLength: self.chunkLength))
    }

    struct Iterator: AsyncIteratorProtocol {
        let reader: FileChunkReader
        func next() async throws -> ByteBuffer? { try await self.reader.nextChunk() }
    }
}
