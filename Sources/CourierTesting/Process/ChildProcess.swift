#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A child process for the package's own tests (the CLI under test, `openssl`, `ip`), spawned
/// with `posix_spawn` and closed-from-3 descriptors.
///
/// Not Foundation's `Process`: on Linux its `run()` lists `/proc/self/fd` to close every inherited
/// descriptor and copies each directory entry's whole 256-byte name field. When a parallel test
/// run has more than about 1,360 descriptors open, the last entry of a full `readdir` buffer sits
/// at the buffer's end and the copy reads past it; a full run crashed with SIGSEGV in
/// `Process.run()` that way. It also adds one close action per open descriptor, thousands per
/// spawn. Here the child closes everything from 3 up with `posix_spawn_file_actions_addclosefrom_np`
/// (glibc 2.34 and later), starts with no signal blocked and SIGPIPE at its default, and runs in
/// `directory` through `posix_spawn_file_actions_addchdir_np` (glibc 2.29 and later).
///
/// Package access only: a helper for this package's tests, not part of `CourierTesting`'s API.
package final class ChildProcess: Sendable {
    /// Where one of the child's standard streams goes.
    package enum Stream: Sendable {
        /// `/dev/null`.
        case null
        /// A new pipe; its parent end is in ``standardInput``, ``standardOutput`` or
        /// ``standardError``, owned by the caller.
        case pipe
        /// A descriptor of the caller's, shared with the child (the caller still owns it).
        case descriptor(Int32)
    }

    /// A spawn that failed, with the step and `errno`.
    package struct SpawnError: Error, CustomStringConvertible {
        package let step: String
        package let code: Int32
        package var description: String { "\(step) failed: \(String(cString: strerror(code))) (errno \(code))" }
    }

    /// The child's process identifier.
    package let pid: pid_t
    /// The parent's (write) end of the child's standard input, with ``Stream/pipe``.
    package let standardInput: Int32?
    /// The parent's (read) end of the child's standard output, with ``Stream/pipe``.
    package let standardOutput: Int32?
    /// The parent's (read) end of the child's standard error, with ``Stream/pipe``.
    package let standardError: Int32?

    private init(pid: pid_t, standardInput: Int32?, standardOutput: Int32?, standardError: Int32?) {
        self.pid = pid
        self.standardInput = standardInput
        self.standardOutput = standardOutput
        self.standardError = standardError
    }

    /// Starts `executable` with `arguments` (not counting the program's name).
    ///
    /// - Parameters:
    ///   - environment: the child's whole environment; nil inherits the parent's.
    ///   - directory: the child's working directory; nil inherits the parent's.
    package static func spawn(
        _ executable: String,
        _ arguments: [String],
        environment: [String: String]? = nil,
        directory: String? = nil,
        standardInput: Stream = .null,
        standardOutput: Stream = .null,
        standardError: Stream = .null
    ) throws -> ChildProcess {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var parentEnds: [Int32?] = [nil, nil, nil]
        var childEnds: [Int32] = []
        defer { for descriptor in childEnds { close(descriptor) } }
        func fail(_ step: String, _ code: Int32) -> SpawnError {
            for case let descriptor? in parentEnds { close(descriptor) }
            return SpawnError(step: step, code: code)
        }

        for (target, stream) in [(Int32(0), standardInput), (1, standardOutput), (2, standardError)] {
            switch stream {
            case .null:
                let code = posix_spawn_file_actions_addopen(&actions, target, "/dev/null", target == 0 ? O_RDONLY : O_WRONLY, 0)
                guard code == 0 else { throw fail("addopen", code) }
            case .pipe:
                var ends: [Int32] = [-1, -1]
                // Close-on-exec for any other spawn; this child gets its end by dup2.
                guard pipe(&ends) == 0 else { throw fail("pipe", errno) }
                _ = fcntl(ends[0], F_SETFD, FD_CLOEXEC)
                _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)
                let (childEnd, parentEnd) = target == 0 ? (ends[0], ends[1]) : (ends[1], ends[0])
                parentEnds[Int(target)] = parentEnd
                childEnds.append(childEnd)
                let code = posix_spawn_file_actions_adddup2(&actions, childEnd, target)
                guard code == 0 else { throw fail("adddup2", code) }
            case .descriptor(let descriptor):
                let code = posix_spawn_file_actions_adddup2(&actions, descriptor, target)
                guard code == 0 else { throw fail("adddup2", code) }
            }
        }
        guard let closeFrom = SpawnExtensions.closeFrom else { throw fail("posix_spawn_file_actions_addclosefrom_np", ENOSYS) }
        var code = closeFrom(&actions, 3)
        guard code == 0 else { throw fail("addclosefrom", code) }
        if let directory {
            guard let changeDirectory = SpawnExtensions.changeDirectory else {
                throw fail("posix_spawn_file_actions_addchdir_np", ENOSYS)
            }
            code = directory.withCString { changeDirectory(&actions, $0) }
            guard code == 0 else { throw fail("addchdir", code) }
        }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // No signal blocked in the child (a test thread may block some) and SIGPIPE at its
        // default (the parent ignores it, and an ignored signal stays ignored across exec).
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGPIPE)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        let environmentStrings: [String]? = environment.map { $0.map { "\($0.key)=\($0.value)" } }
        let envp = environmentStrings.map { $0.map { strdup($0) } + [nil] }
        defer { for pointer in envp ?? [] { free(pointer) } }

        var pid = pid_t()
        code = argv.withUnsafeBufferPointer { arguments in
            if let envp {
                return envp.withUnsafeBufferPointer { posix_spawn(&pid, executable, &actions, &attributes, arguments.baseAddress!, $0.baseAddress!) }
            }
            return posix_spawn(&pid, executable, &actions, &attributes, arguments.baseAddress!, environ)
        }
        guard code == 0 else { throw fail("posix_spawn \(executable)", code) }
        return ChildProcess(pid: pid, standardInput: parentEnds[0], standardOutput: parentEnds[1], standardError: parentEnds[2])
    }

    /// Sends `signal` to the child.
    package func signal(_ signal: Int32 = SIGKILL) {
        _ = kill(pid, signal)
    }

    /// Blocks until the child exits; returns its exit status, or 128 plus the signal that ended
    /// it. Call once.
    @discardableResult
    package func waitForExit() -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { return -1 }
        }
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }

    /// Reads `descriptor` to its end and closes it.
    package static func readToEnd(_ descriptor: Int32) -> [UInt8] {
        defer { close(descriptor) }
        var result: [UInt8] = []
        while let chunk = Self.readSome(descriptor) { result += chunk }
        return result
    }

    /// The next bytes of `descriptor` (at most 64 KiB), or nil at its end or on an error other
    /// than EINTR (which is retried).
    package static func readSome(_ descriptor: Int32) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count > 0 { return Array(buffer[..<count]) }
            if count < 0 && errno == EINTR { continue }
            return nil
        }
    }
}

/// glibc's spawn extensions, which its headers declare only under `_GNU_SOURCE` and Swift's C
/// module therefore does not import: looked up once by name.
private enum SpawnExtensions {
    typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    typealias ChangeDirectory = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32

    static let closeFrom: CloseFrom? = lookup("posix_spawn_file_actions_addclosefrom_np")
    static let changeDirectory: ChangeDirectory? = lookup("posix_spawn_file_actions_addchdir_np")

    private static func lookup<T>(_ name: String) -> T? {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { return nil }
        return unsafeBitCast(symbol, to: T.self)
    }
}
