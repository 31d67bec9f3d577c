import Foundation
import NIOCore
import NIOFileSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Streams a request body into a file, all or nothing: the bytes go to a temporary file in the
/// destination's folder, which is moved into place only once every byte is written.
enum RequestBodyFileWriter {
    /// Writes `body` to `fileURL` and returns how many bytes were written.
    /// - Throws: ``CourierError/Code/fileSystemFailure`` when the file cannot be created, written
    ///   or moved into place; ``CourierError/Code/bodyReadFailed`` when the body cannot be read.
    static func write(_ body: RequestBody, to fileURL: URL) async throws(CourierError) -> Int64 {
        guard fileURL.isFileURL else {
            throw CourierError(.fileSystemFailure, "cannot write the body to \(fileURL.absoluteString): it is not a file URL")
        }
        let destination = FilePath(fileURL.path)
        try await Self.checkReplaceable(destination)
        let temporary = Self.temporaryPath(beside: fileURL)
        do {
            let written = try await FileSystem.shared.withFileHandle(
                forWritingAt: temporary, options: .newFile(replaceExisting: false)
            ) { handle in
                try await Self.copy(body, into: handle, path: destination)
            }
            // One rename(2): the old file is replaced at once or stays, and a folder that appeared
            // meanwhile refuses it. (NIOFileSystem's `replaceItem` removes the destination,
            // recursively, then moves the file: a cancel or a crash between the two lost both.)
            if rename(temporary.string, destination.string) != 0 {
                let code = errno
                let reason = String(cString: strerror(code))
                throw CourierError(
                    .fileSystemFailure, "cannot move the body into place at \(destination): \(reason)",
                    underlyingError: POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO))
            }
            return written
        } catch {
            // Removed even when the calling task was cancelled (NIOFileSystem's own `removeItem`
            // then refuses to run, and the hidden file would stay beside the destination).
            try? FileManager.default.removeItem(atPath: temporary.string)
            throw error.asCourierError(.fileSystemFailure, "cannot create \(destination) to write the body: \(Self.reason(error))")
        }
    }

    /// Writes each chunk of `body` at the end of the file; returns the length.
    private static func copy(_ body: RequestBody, into handle: WriteFileHandle, path: FilePath) async throws -> Int64 {
        var offset: Int64 = 0
        var chunks = body.makeChunks().makeAsyncIterator()
        while let chunk = try await chunks.next() {
            do {
                offset += try await handle.write(contentsOf: chunk, toAbsoluteOffset: offset)
            } catch {
                throw CourierError(
                    .fileSystemFailure, "writing the body to \(path) failed after \(offset) bytes: \(Self.reason(error))",
                    underlyingError: error)
            }
        }
        return offset
    }

    /// Refuses to replace anything but a regular file (a folder, a device).
    private static func checkReplaceable(_ path: FilePath) async throws(CourierError) {
        let info: FileInfo?
        do {
            info = try await FileSystem.shared.info(forFileAt: path, infoAboutSymbolicLink: false)
        } catch {
            throw CourierError(.fileSystemFailure, "cannot examine \(path) to write the body there: \(Self.reason(error))", underlyingError: error)
        }
        if let info, info.type != .regular {
            throw CourierError(.fileSystemFailure, "cannot write the body to \(path): it is a \(info.type), not a regular file")
        }
    }

    /// A name for the file being written, hidden, beside the destination.
    private static func temporaryPath(beside fileURL: URL) -> FilePath {
        let folder = fileURL.deletingLastPathComponent()
        // Not built on the destination's name, which may be near the file system's limit.
        let name = ".courier-" + String(UInt64.random(in: .min ... .max), radix: 36) + ".partial"
        return FilePath(folder.appendingPathComponent(name).path)
    }

    /// A file-system error's short reason (`notFound`, `permissionDenied`…) for messages.
    private static func reason(_ error: any Error) -> String {
        if let error = error as? FileSystemError { return "\(error.code)" }
        return "\(error)"
    }
}
