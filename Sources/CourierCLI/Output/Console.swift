import Foundation

/// Standard output or standard error: raw writes, and whether a terminal is on the other end.
struct Console: Sendable {
    let descriptor: Int32

    static let standardOutput = Console(descriptor: STDOUT_FILENO)
    static let standardError = Console(descriptor: STDERR_FILENO)

    /// Whether the stream is a terminal (`isatty`).
    var isTerminal: Bool { isatty(self.descriptor) == 1 }

    /// Writes all of `bytes`, retrying short writes; a reader that has gone ends the process quietly
    /// (status 0), as `cat` ends on a closed pipe.
    func write(_ bytes: some Sequence<UInt8>) {
        var buffer = Array(bytes)
        var offset = 0
        while offset < buffer.count {
            let written = buffer.withUnsafeMutableBytes { raw in
                Foundation.write(self.descriptor, raw.baseAddress! + offset, raw.count - offset)
            }
            if written < 0 {
                if errno == EINTR { continue }
                // The reader has gone (`courier … | head`): there is nobody left to write for.
                if errno == EPIPE { exit(0) }
                return
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
