import Foundation

#if canImport(Glibc)
import Glibc
private let systemWrite = Glibc.write
#elseif canImport(Musl)
import Musl
private let systemWrite = Musl.write
#elseif canImport(Darwin)
import Darwin
private let systemWrite = Darwin.write
#endif

/// Whole-file writes that either happen or leave the old file as it was: the bytes go to a new
/// temporary file beside the target, which is then renamed over it. A process that dies half way
/// leaves at worst a temporary file (named `.<name>.tmp-<random>`), never a torn target.
///
/// The temporary file is synced to the disk (`fsync`) before the rename, and its folder after
/// it, so that a power loss just after a write leaves the old file or the new one: ext4 and XFS
/// may otherwise make the rename durable before the bytes, leaving an empty or partial file in
/// the target's place. (On Darwin `fsync` hands the bytes to the drive, whose cache may still lose
/// them; `F_FULLFSYNC` would empty that cache too, a cost not worth paying for cookies and cache
/// entries.) The writes run on the cookie store's and the cache's own queues, once a burst of
/// cookie changes and once a stored cache entry, never on a request's path
/// (``FileCookieStorage/save()`` runs one on its caller's thread).
enum AtomicFile {
    /// The prefix of temporary files, which readers of a folder skip (and may delete).
    static let temporaryPrefix = "."
    static let temporaryMarker = ".tmp-"

    /// Writes `data` to `url` atomically and durably with the given permissions.
    /// - Throws: ``CourierError`` with ``CourierError/Code/fileSystemFailure``: the file left as
    ///   it was when the temporary file cannot be made, written, synced or renamed; the new file
    ///   in place, but perhaps not yet durable, when its folder cannot be synced.
    static func write(_ data: Data, to url: URL, permissions: mode_t = 0o600) throws {
        let directory = url.deletingLastPathComponent()
        let temporary = directory.appendingPathComponent(
            "\(self.temporaryPrefix)\(url.lastPathComponent)\(self.temporaryMarker)\(UInt64.random(in: 0...UInt64.max))")
        let descriptor = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, permissions)
        guard descriptor >= 0 else {
            throw Self.failure("cannot create \(temporary.path)", errno)
        }
        var written = 0
        var failure: Int32? = data.withUnsafeBytes { raw -> Int32? in
            while written < raw.count {
                let result = systemWrite(descriptor, raw.baseAddress! + written, raw.count - written)
                if result < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                written += result
            }
            return nil
        }
        // The bytes on the disk before the rename can make them the target's.
        var failedStep = "write"
        if failure == nil, let code = Self.sync(descriptor) {
            failure = code
            failedStep = "sync"
        }
        close(descriptor)
        if let failure {
            unlink(temporary.path)
            throw Self.failure("cannot \(failedStep) \(temporary.path)", failure)
        }
        guard rename(temporary.path, url.path) == 0 else {
            let code = errno
            unlink(temporary.path)
            throw Self.failure("cannot move \(temporary.lastPathComponent) to \(url.path)", code)
        }
        // The rename on the disk: it changed an entry of the folder. A folder this process may
        // write but not read (EACCES) cannot be opened to sync it, and some file systems cannot
        // sync a folder (EINVAL): the write stands, as it did before folders were synced.
        let folder = open(directory.path, O_RDONLY | O_CLOEXEC)
        guard folder >= 0 else {
            let code = errno
            if code == EACCES { return }
            throw Self.failure("cannot open \(directory.path) to sync it", code)
        }
        let code = Self.sync(folder)
        close(folder)
        if let code, code != EINVAL {
            throw Self.failure("cannot sync \(directory.path)", code)
        }
    }

    /// `fsync(2)` on `descriptor`, again when a signal interrupts it; the error number when it fails.
    private static func sync(_ descriptor: Int32) -> Int32? {
        while fsync(descriptor) != 0 {
            if errno == EINTR { continue }
            return errno
        }
        return nil
    }

    /// Whether a file name is one of ``write(_:to:permissions:)``'s temporary files.
    static func isTemporary(_ name: String) -> Bool {
        name.hasPrefix(self.temporaryPrefix) && name.contains(self.temporaryMarker)
    }

    private static func failure(_ message: String, _ code: Int32) -> CourierError {
        CourierError(.fileSystemFailure, "\(message): \(String(cString: strerror(code)))",
                     underlyingError: POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO))
    }
}
