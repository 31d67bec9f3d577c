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
}
