import Foundation

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
enum StandardInput {
    /// The bytes standard input holds when it is not a terminal, read to its end; nil when it is
    /// a terminal, or empty.
    /// - Throws: ``CLIFailure`` (unreadable input) when reading fails.
    static func body(descriptor: Int32 = STDIN_FILENO) throws(CLIFailure) -> Data? {
        guard Self.isRedirected(descriptor) else { return nil }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count > 0 {
                data.append(contentsOf: buffer[..<count])
            } else if count == 0 {
                break
            } else if errno != EINTR {
                throw CLIFailure(.unreadableInput, "cannot read standard input: \(String(cString: strerror(errno)))")
            }
        }
        return data.isEmpty ? nil : data
    }

    /// Whether `descriptor` is redirected: anything but a terminal.
    static func isRedirected(_ descriptor: Int32) -> Bool {
        isatty(descriptor) == 0
    }
}
