import Courier
import Foundation
import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Standard input as the request body: `courier POST URL < file.json` and
/// `producer | courier PUT URL` send its bytes (when ``RequestBuilder/readsStandardInput(command:invocation:)``
/// says so).
///
/// A terminal is someone typing, and is not read. Anything else is read to its end: a file, a
/// pipe, or `/dev/null` (what cron, CI jobs and most launchers give a command), which ends at
/// once. A pipe that is never closed would be waited on; `--ignore-stdin` leaves standard input
/// alone.
///
/// Up to ``inMemoryLimit`` bytes are read whole, as data: sent with `Content-Length`, again after a
/// 307 or 308 redirect or a Digest challenge, and shown by `--verbose`. A larger body is streamed
/// as it goes out (``StandardInputChunks``), never held whole: a regular file with
/// `Content-Length`, read again from its start for each send; anything else (a pipe) chunked,
/// read once (a 307 or 308 redirect or a Digest challenge is then not followed: its response is
/// the answer).
enum StandardInput {
    /// The largest body read whole into memory.
    static let inMemoryLimit = 1 << 20

    /// Standard input as the body when it is not a terminal, read to its end; nil when it is a
    /// terminal, or empty.
    /// - Parameter streaming: Whether a body over ``inMemoryLimit`` may be streamed; else (`--offline`,
    ///   `--curl`, which show it) it is read whole, whatever its size.
    /// - Throws: ``CLIFailure`` (unreadable input) when reading fails.
    static func body(streaming: Bool = true) throws(CLIFailure) -> RequestBody? {
        guard isatty(STDIN_FILENO) == 0 else { return nil }
        do {
            if streaming, let file = try Self.regularFileRest(), file.length > Int64(Self.inMemoryLimit) {
                // Read from where standard input stands, with `pread`, anew for each send.
                return .replayableStream(length: .known(file.length)) {
                    StandardInputChunks(prefix: Data(), fileStart: file.start, fileLength: file.length)
                }
            }
            var data = Data()
            while true {
                let limit = streaming ? Self.inMemoryLimit + 1 - data.count : StandardInputChunks.chunkLength
                guard limit > 0 else {
                    // More than fits in memory's share: what was read goes first, the rest as it comes.
                    return .stream(StandardInputChunks(prefix: data, fileStart: nil, fileLength: nil), length: .unknown)
                }
                let chunk = try StandardInputChunks.read(count: min(limit, StandardInputChunks.chunkLength), at: nil)
                if chunk.readableBytes == 0 { break }
                data.append(contentsOf: chunk.readableBytesView)
            }
            return data.isEmpty ? nil : .data(data)
        } catch {
            throw CLIFailure(.unreadableInput, "cannot read standard input: \(error)")
        }
    }

    /// Where standard input stands in the regular file it is, and how many bytes follow; nil for
    /// anything else (a pipe, a device, a socket).
    private static func regularFileRest() throws -> (start: Int64, length: Int64)? {
        var status = stat()
        guard fstat(STDIN_FILENO, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else { return nil }
        let start = lseek(STDIN_FILENO, 0, SEEK_CUR)
        guard start >= 0 else { return nil }
        return (Int64(start), max(0, Int64(status.st_size) - Int64(start)))
    }
}

/// Standard input's bytes in chunks of ``chunkLength``, each read (a read blocks) on one of
/// Dispatch's threads when the engine asks for the next: a pipe is read no faster than the body
/// goes out, and no more than a chunk or two of it is in memory at once.
struct StandardInputChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    typealias Failure = any Error

    /// How much one read takes.
    static let chunkLength = 256 * 1024

    /// Bytes already read from a pipe, sent first.
    let prefix: Data
    /// For a regular file: the offset its body starts at (read with `pread`, which leaves standard
    /// input's own offset alone), else nil (read with `read`).
    let fileStart: Int64?
    /// For a regular file: how many bytes are sent from `fileStart`.
    let fileLength: Int64?

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(prefix: self.prefix.isEmpty ? nil : self.prefix, offset: self.fileStart, remaining: self.fileLength)
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        typealias Failure = any Error

        var prefix: Data?
        var offset: Int64?
        var remaining: Int64?

        mutating func next() async throws -> ByteBuffer? {
            if let prefix = self.prefix {
                self.prefix = nil
                return ByteBuffer(bytes: prefix)
            }
            var length = StandardInputChunks.chunkLength
            if let remaining = self.remaining {
                guard remaining > 0 else { return nil }
                length = Int(Swift.min(Int64(length), remaining))
            }
            let (count, offset) = (length, self.offset)
            let chunk = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<ByteBuffer, any Error>) in
                DispatchQueue.global().async {
                    continuation.resume(with: Result(catching: { try StandardInputChunks.read(count: count, at: offset) }))
                }
            }
            guard chunk.readableBytes > 0 else {
                if let remaining = self.remaining {
                    throw StandardInputFailure(description: "standard input ended \(remaining) bytes before the size it had when the request was made")
                }
                return nil
            }
            if let offset { self.offset = offset + Int64(chunk.readableBytes) }
            if let remaining { self.remaining = remaining - Int64(chunk.readableBytes) }
            return chunk
        }
    }

    /// Up to `count` bytes of standard input, blocking: at `offset` with `pread`, else where it
    /// stands; empty at its end. Read straight into the buffer the body sends (no second copy).
    static func read(count: Int, at offset: Int64?) throws -> ByteBuffer {
        var buffer = ByteBufferAllocator().buffer(capacity: count)
        while true {
            var result = 0
            buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { bytes -> Int in
                if let offset {
                    result = pread(STDIN_FILENO, bytes.baseAddress, count, off_t(offset))
                } else {
                    #if canImport(Glibc)
                    result = Glibc.read(STDIN_FILENO, bytes.baseAddress, count)
                    #else
                    result = Darwin.read(STDIN_FILENO, bytes.baseAddress, count)
                    #endif
                }
                return Swift.max(result, 0)
            }
            if result >= 0 { return buffer }
            let code = errno
            guard code == EINTR else { throw StandardInputFailure(description: String(cString: strerror(code))) }
        }
    }
}

/// Standard input could not be read.
struct StandardInputFailure: Error, CustomStringConvertible {
    let description: String
}
