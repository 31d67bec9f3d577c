import Courier
import Foundation
import NIOCore
import NIOFileSystem
import NIOFoundationCompat

/// Reads a streamed request body whole, so that `URLSession` can send it: its upload tasks take
/// bytes in memory or a file, not an asynchronous sequence.
///
/// A body whose length is known and within ``memoryLimit`` is gathered in memory. A longer one,
/// and one of unknown length once it passes the limit, goes to a new file in ``directory``
/// (what was gathered first included), readable by this user alone, which the exchange removes
/// when `URLSession` is done with it. A body that fails, gives more or fewer bytes than it declared, or whose reading is
/// cancelled leaves no file behind.
struct BodySpool: Sendable {
    /// What was read.
    enum Spooled: Sendable {
        case data(Data)
        case file(URL)
    }

    /// The most bytes gathered in memory.
    let memoryLimit: Int
    /// Where longer bodies are written.
    let directory: URL

    /// Reads `request`'s body to its end.
    /// - Throws: the body's own `CourierError`, or ``CourierError/Code/bodyReadFailed`` when its
    ///   sequence throws anything else or its length is not the one it declared;
    ///   ``CourierError/Code/fileSystemFailure`` when the file cannot be written;
    ///   ``CourierError/Code/cancelled`` when the reading task is cancelled.
    func read(_ request: Request) async throws(CourierError) -> Spooled {
        let declared = request.body.knownLength
        var chunks = request.body.makeChunks().makeAsyncIterator()
        var gathered = Data()
        if declared.map({ $0 <= Int64(self.memoryLimit) }) ?? true {
            while gathered.count <= self.memoryLimit {
                guard let chunk = try await Self.next(&chunks, request: request) else {
                    try Self.check(Int64(gathered.count), declared: declared, request: request)
                    return .data(gathered)
                }
                gathered.append(contentsOf: chunk.readableBytesView)
                if let declared, Int64(gathered.count) > declared {
                    try Self.check(Int64(gathered.count), declared: declared, request: request)
                }
            }
        }
        let file = self.directory.appendingPathComponent("courier-body-\(UUID().uuidString)")
        do {
            let written = try await FileSystem.shared.withFileHandle(forWritingAt: FilePath(file.path), options: .newFile(replaceExisting: false, permissions: .ownerReadWrite)) {
                handle in
                var offset: Int64 = 0
                if !gathered.isEmpty {
                    offset += try await handle.write(contentsOf: ByteBuffer(data: gathered), toAbsoluteOffset: 0)
                    gathered = Data()
                }
                while let chunk = try await Self.next(&chunks, request: request) {
                    offset += try await handle.write(contentsOf: chunk, toAbsoluteOffset: offset)
                    if let declared, offset > declared { try Self.check(offset, declared: declared, request: request) }
                }
                return offset
            }
            try Self.check(written, declared: declared, request: request)
            return .file(file)
        } catch {
            try? FileManager.default.removeItem(at: file)
            if let error = error as? CourierError { throw error }
            throw CourierError(
                .fileSystemFailure, "\(request.summary): cannot write the streamed body to \(self.directory.path) before sending it: \(error)",
                request: request, underlyingError: error)
        }
    }

    /// The next chunk; a cancelled reader stops between chunks.
    private static func next(_ chunks: inout any AsyncIteratorProtocol<ByteBuffer, any Error>, request: Request) async throws(CourierError)
        -> ByteBuffer?
    {
        do {
            try Task.checkCancellation()
            return try await chunks.next()
        } catch is CancellationError {
            throw CourierError(.cancelled, "\(request.summary): cancelled while reading the streamed body", request: request)
        } catch let error as CourierError {
            throw error
        } catch {
            throw CourierError(.bodyReadFailed, "\(request.summary): the body stream failed", request: request, underlyingError: error)
        }
    }

    /// A body must give the length it declared (NIOEngine's rule).
    private static func check(_ length: Int64, declared: Int64?, request: Request) throws(CourierError) {
        guard let declared, length != declared else { return }
        throw CourierError(.bodyReadFailed, "\(request.summary): the body declared \(declared) bytes and gave \(length)", request: request)
    }
}
