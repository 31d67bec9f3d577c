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
    static func body() throws(CLIFailure) -> Data? {
        guard isatty(STDIN_FILENO) == 0 else { return nil }
        let data: Data?
        do {
            data = try FileHandle.standardInput.readToEnd()
        } catch {
            throw CLIFailure(.unreadableInput, "cannot read standard input: \(error.localizedDescription)")
        }
        return data.flatMap { $0.isEmpty ? nil : $0 }
    }
}
