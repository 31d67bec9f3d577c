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
enum AtomicFile {
    /// The prefix of temporary files, which readers of a folder skip (and may delete).
    static let temporaryPrefix = "."
    static let temporaryMarker = ".tmp-"

    /// Writes `data` to `url` atomically with the given permissions.
    /// - Throws: ``CourierError`` with ``CourierError/Code/fileSystemFailure``.
    static func write(_ data: Data, to url: URL, permissions: mode_t = 0o600) throws {
        let directory = url.deletingLastPathComponent()
        let temporary = directory.appendingPathComponent(
            "\(self.temporaryPrefix)\(url.lastPathComponent)\(self.temporaryMarker)\(UInt64.random(in: 0...UInt64.max))")
        let descriptor = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, permissions)
        guard descriptor >= 0 else {
            throw Self.failure("cannot create \(temporary.path)", errno)
        }
        var written = 0
        let failure: Int32? = data.withUnsafeBytes { raw -> Int32? in
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
        close(descriptor)
        if let failure {
            unlink(temporary.path)
            throw Self.failure("cannot write \(temporary.path)", failure)
        }
        guard rename(temporary.path, url.path) == 0 else {
            let code = errno
            unlink(temporary.path)
            throw Self.failure("cannot move \(temporary.lastPathComponent) to \(url.path)", code)
        }
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
