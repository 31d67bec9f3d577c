import Foundation

/// Standard output or standard error: raw writes, and whether a terminal is on the other end.
struct Console: Sendable {
    let descriptor: Int32

    static let standardOutput = Console(descriptor: STDOUT_FILENO)
    static let standardError = Console(descriptor: STDERR_FILENO)

    /// Whether the stream is a terminal (`isatty`).
    var isTerminal: Bool { isatty(self.descriptor) == 1 }

    /// Writes all of `bytes`, retrying short writes. On standard output, a reader that has gone
    /// ends the process quietly (status 0), as `cat` ends on a closed pipe, and any other failure
    /// (a full disk, an I/O error) ends it with status 1 and a line on standard error: the output
    /// is not what the server sent, and a script must not take it for it (curl exits 23). A
    /// failure on standard error itself is passed over: there is nowhere left to say it, and the
    /// work (a download to `-o`) goes on.
    func write(_ bytes: some Sequence<UInt8>) {
        var buffer = Array(bytes)
        var offset = 0
        while offset < buffer.count {
            let written = buffer.withUnsafeMutableBytes { raw in
                Foundation.write(self.descriptor, raw.baseAddress! + offset, raw.count - offset)
            }
            if written < 0 {
                let failure = errno
                if failure == EINTR { continue }
                guard self.descriptor == STDOUT_FILENO else { return }
                // The reader has gone (`courier … | head`): there is nobody left to write for.
                if failure == EPIPE { exit(0) }
                Console.standardError.write(line: "courier: error: cannot write to standard output: \(String(cString: strerror(failure)))")
                exit(ExitStatus.failure.rawValue)
            }
            offset += written
        }
        buffer.removeAll()
    }

    func write(_ text: String) { self.write(Array(text.utf8)) }

    func write(line: String) { self.write(line + "\n") }

    /// Nothing is buffered here; kept so callers can say where output must be complete.
    func flush() {}
}
