import Foundation
import NIOCore
import Testing

@testable import Courier

/// A file body's reader (``FileChunkReader``) closes its file however the read ends.
@Suite("File chunk reader")
struct FileChunkReaderTests {
    /// The pump of a cancelled upload reads in a cancelled task: NIOFileSystem then refuses the
    /// read and the `close()`, and traps on a handle dropped while open. The reader must close
    /// the descriptor itself (this trapped the test process before).
    @Test func aReadInACancelledTaskClosesTheFileAndFails() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("courier-chunks-\(UUID().uuidString)")
        try Data(repeating: 7, count: 300_000).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        // A task of its own, awaited here: the read must run in a task that gets cancelled, and
        // cancelling the test's own task would end the test.
        let outcome = await Task {
            let reader = FileChunkReader(url: file, expectedSize: 300_000, chunkLength: 100_000)
            // The first chunk opens the file; then the task is cancelled mid-body.
            let first = try await reader.nextChunk()
            withUnsafeCurrentTask { $0?.cancel() }
            let second = try await reader.nextChunk()
            return (first?.readableBytes, second?.readableBytes)
        }.result
        switch outcome {
        case .success(let (first, second)):
            // A file system that ignored cancellation would read on.
            #expect(first == 100_000)
            #expect(second == 100_000)
        case .failure(let error):
            #expect((error as? CourierError)?.code == .bodyReadFailed, "\(error)")
        }
    }

    /// A file that grew while it was read fails on the read of the chunk that completes its
    /// declared length, and that chunk is not handed over: a request carrying it is still
    /// incomplete when it fails. The growth was found on the call after the last chunk, once that
    /// chunk had gone out.
    @Test func aFileThatGrewFailsBeforeItsLastChunkIsHandedOver() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("courier-chunks-\(UUID().uuidString)")
        try Data(repeating: 7, count: 300_000).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let reader = FileChunkReader(url: file, expectedSize: 300_000, chunkLength: 100_000)
        let first = try await reader.nextChunk()
        #expect(first?.readableBytes == 100_000)
        let handle = try FileHandle(forWritingTo: file)
        _ = try handle.seekToEnd()
        try handle.write(contentsOf: Data(repeating: 8, count: 10))
        try handle.close()
        // Not the last chunk: the size is not checked yet.
        let second = try await reader.nextChunk()
        #expect(second?.readableBytes == 100_000)
        do throws(CourierError) {
            let last = try await reader.nextChunk()
            Issue.record("the last chunk was handed over: \(String(describing: last?.readableBytes)) bytes")
        } catch {
            #expect(error.code == .bodyReadFailed)
            #expect(error.message.contains("300010"), "\(error.message)")
        }
        // The failure ended the reader.
        #expect(try await reader.nextChunk() == nil)
    }
}
