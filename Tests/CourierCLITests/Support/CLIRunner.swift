import Courier
import CourierTesting
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What one run of the built `courier` binary printed, and how it exited.
struct CLIResult: Sendable {
    var status: Int32
    var standardOutput: Data
    var standardError: String
    /// With `holdingInputOpenFor`: whether standard input was still held open when the command
    /// exited (it did not wait for the input's end).
    var inputWasOpenAtExit = false

    var output: String { String(decoding: self.standardOutput, as: UTF8.self) }
    /// Standard error split into lines, without empty ones.
    var errorLines: [String] { self.standardError.split(separator: "\n").map(String.init) }
}

/// Runs the `courier` executable that `swift build`/`swift test` put beside the test bundle.
enum CLIRunner {
    /// The binary: `$COURIER_CLI`, else `courier` in the folder of the running test bundle.
    static var executable: URL {
        if let path = ProcessInfo.processInfo.environment["COURIER_CLI"] { return URL(fileURLWithPath: path) }
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var folder = bundle.deletingLastPathComponent()
        // On Apple platforms the runner is inside Something.xctest/Contents/MacOS.
        while folder.path != "/" {
            let candidate = folder.appendingPathComponent("courier")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            folder = folder.deletingLastPathComponent()
        }
        return bundle.deletingLastPathComponent().appendingPathComponent("courier")
    }

    /// Runs `courier arguments` with standard output and error on pipes, in `directory`, with the
    /// test's environment changed by `environment` (a nil value removes a variable).
    ///
    /// With `holdingInputOpenFor`, standard input stays open after `input` until the command exits
    /// or that long has passed (a command that waits for input's end then fails its test late
    /// rather than hanging it).
    ///
    /// With `inputDescriptor` (and no `input`), standard input is that descriptor of the caller's,
    /// shared with the command: an open regular file, as a shell's `< file` gives it.
    static func run(
        _ arguments: [String], in directory: URL? = nil, environment: [String: String?] = [:], input: String? = nil,
        holdingInputOpenFor hold: Duration? = nil, inputDescriptor: Int32? = nil
    ) async throws -> CLIResult {
        await ProcessSlots.shared.acquire()
        defer { ProcessSlots.shared.release() }
        var variables: [String: String]?
        if !environment.isEmpty {
            var merged = ProcessInfo.processInfo.environment
            for (name, value) in environment { merged[name] = value }
            variables = merged
        }
        let child = try ChildProcess.spawn(
            Self.executable.path, arguments, environment: variables, directory: directory?.path,
            standardInput: input != nil ? .pipe : inputDescriptor.map { ChildProcess.Stream.descriptor($0) } ?? .null, standardOutput: .pipe,
            standardError: .pipe)
        // Closed once: by the hold's end or after the exit, whichever comes first.
        let inputOpen = Mutex(child.standardInput)
        let closeInput = { @Sendable in inputOpen.withLock { descriptor in
            if let open = descriptor { close(open) }
            descriptor = nil
        } }
        if let input, let descriptor = child.standardInput {
            // Written whole (a large input as the command reads it), then the end of input.
            let bytes = Array(input.utf8)
            var offset = 0
            while offset < bytes.count {
                let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress! + offset, $0.count - offset) }
                if written > 0 { offset += written } else if written < 0, errno == EINTR { continue } else { break }
            }
            if hold == nil { closeInput() }
        }
        // The hold is a bound on a failing test, not what it waits for: a child task that closes
        // standard input when the hold ends, cancelled as soon as the command has exited.
        let (stdout, stderr, status) = await withTaskGroup(of: Void.self) { group in
            if let hold {
                group.addTask {
                    try? await Task.sleep(for: hold)
                    closeInput()
                }
            }
            async let outputBytes = Self.readAll(child.standardOutput!)
            async let errorBytes = Self.readAll(child.standardError!)
            let (stdout, stderr) = await (outputBytes, errorBytes)
            let status = await Self.waitForExit(child)
            let inputWasOpen = inputOpen.withLock { $0 != nil }
            group.cancelAll()
            return (stdout, stderr, (status, inputWasOpen))
        }
        closeInput()
        var result = CLIResult(status: status.0, standardOutput: stdout, standardError: String(decoding: stderr, as: UTF8.self))
        result.inputWasOpenAtExit = hold != nil && status.1
        return result
    }

    /// Runs `courier arguments` with standard output and error on one pseudo-terminal, as a user's
    /// shell would; returns everything the terminal received.
    static func runOnTerminal(_ arguments: [String], in directory: URL? = nil) async throws -> CLIResult {
        await ProcessSlots.shared.acquire()
        defer { ProcessSlots.shared.release() }
        let (master, name) = try PseudoTerminal.open()
        let slave = open(name, O_RDWR | O_NOCTTY)
        guard slave >= 0 else { throw CLITestError("cannot open \(name): errno \(errno)") }
        let child: ChildProcess
        do {
            child = try ChildProcess.spawn(
                Self.executable.path, arguments, directory: directory?.path,
                standardOutput: .descriptor(slave), standardError: .descriptor(slave))
        } catch {
            close(slave)
            close(master)
            throw error
        }
        close(slave)
        // Read until the last holder of the terminal's other side has closed it (EIO on Linux).
        let received = await Self.onOwnThread { Data(ChildProcess.readToEnd(master)) }
        let status = await Self.waitForExit(child)
        // A terminal turns "\n" into "\r\n"; undo that so tests read what the program wrote.
        let text = String(decoding: received, as: UTF8.self).replacingOccurrences(of: "\r\n", with: "\n")
        return CLIResult(status: status, standardOutput: Data(text.utf8), standardError: "")
    }

    /// Runs `courier arguments` with standard output on a pseudo-terminal and standard error on a
    /// pipe, as `courier … 2>log` in a user's shell: the command sees a terminal on standard output
    /// only. The result's standard output is what the terminal received (`\r\n` read as `\n`).
    static func runWithOutputOnTerminal(_ arguments: [String], in directory: URL? = nil) async throws -> CLIResult {
        await ProcessSlots.shared.acquire()
        defer { ProcessSlots.shared.release() }
        let (master, name) = try PseudoTerminal.open()
        let slave = open(name, O_RDWR | O_NOCTTY)
        guard slave >= 0 else {
            close(master)
            throw CLITestError("cannot open \(name): errno \(errno)")
        }
        let child: ChildProcess
        do {
            child = try ChildProcess.spawn(
                Self.executable.path, arguments, directory: directory?.path,
                standardOutput: .descriptor(slave), standardError: .pipe)
        } catch {
            close(slave)
            close(master)
            throw error
        }
        close(slave)
        // The terminal reads until the command's side is closed (EIO on Linux), the pipe to its end.
        async let terminalBytes = Self.onOwnThread { Data(ChildProcess.readToEnd(master)) }
        async let errorBytes = Self.readAll(child.standardError!)
        let (received, stderr) = await (terminalBytes, errorBytes)
        let status = await Self.waitForExit(child)
        let text = String(decoding: received, as: UTF8.self).replacingOccurrences(of: "\r\n", with: "\n")
        return CLIResult(status: status, standardOutput: Data(text.utf8), standardError: String(decoding: stderr, as: UTF8.self))
    }

    /// `waitForExit()` blocks its thread: give it one of its own.
    static func waitForExit(_ child: ChildProcess) async -> Int32 {
        await Self.onOwnThread { child.waitForExit() }
    }

    private static func readAll(_ descriptor: Int32) async -> Data {
        await Self.onOwnThread { Data(ChildProcess.readToEnd(descriptor)) }
    }

    /// Runs a blocking read on a thread of its own. Not on Dispatch's global queues: with two
    /// cores they have two threads, which the rest of the suite (completion queues) needs.
    static func onOwnThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            let thread = Thread { continuation.resume(returning: work()) }
            thread.start()
        }
    }
}

struct CLITestError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A fresh temporary folder, removed by the caller.
func makeTemporaryFolder() throws -> URL {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-cli-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    return folder
}

/// Writes ``TestCertificates/rootCA`` (what TestServer's HTTPS chains come from) into `folder`,
/// for `--cacert`; returns the file.
func writeTestRoot(in folder: URL) throws -> URL {
    let root = folder.appendingPathComponent("root.pem")
    try Data(TestCertificates.rootCA.utf8).write(to: root)
    return root
}

/// Writes ``TestCertificates/clientCertificate`` and its key into `folder`, for `--cert` and
/// `--key`; returns the two files.
func writeClientIdentity(in folder: URL) throws -> (certificate: URL, key: URL) {
    let certificate = folder.appendingPathComponent("client.pem")
    try Data(TestCertificates.clientCertificate.utf8).write(to: certificate)
    let key = folder.appendingPathComponent("client.key")
    try Data(TestCertificates.clientKey.utf8).write(to: key)
    return (certificate, key)
}

/// The JSON object a piped run printed.
func jsonObject(_ result: CLIResult) throws -> [String: Any] {
    guard let object = try JSONSerialization.jsonObject(with: result.standardOutput) as? [String: Any] else {
        throw CLITestError("not a JSON object: \(result.output)")
    }
    return object
}

/// The body at `url`, fetched with the library (the reference the CLI's output is compared to).
func fetchWithLibrary(_ url: URL) async throws -> Data {
    let manager = SessionManager()
    defer { manager.invalidate(cancelingTasks: true) }
    let response = try await manager.response(for: Request(method: .get, url: url), serializer: DataResponseSerializer())
    return response.value
}

/// The pseudo-terminal calls of POSIX, looked up at run time: Swift's Glibc module does not
/// declare them (they need `_XOPEN_SOURCE`).
enum PseudoTerminal {
    private typealias OpenPT = @convention(c) (Int32) -> Int32
    private typealias Grant = @convention(c) (Int32) -> Int32
    private typealias Name = @convention(c) (Int32, UnsafeMutablePointer<CChar>?, Int) -> Int32

    /// A new pseudo-terminal: the controlling side's descriptor and the other side's path.
    static func open() throws -> (Int32, String) {
        guard let openSymbol = dlsym(nil, "posix_openpt"), let grantSymbol = dlsym(nil, "grantpt"),
            let unlockSymbol = dlsym(nil, "unlockpt"), let nameSymbol = dlsym(nil, "ptsname_r")
        else { throw CLITestError("the C library has no pseudo-terminal calls") }
        let openpt = unsafeBitCast(openSymbol, to: OpenPT.self)
        let grant = unsafeBitCast(grantSymbol, to: Grant.self)
        let unlock = unsafeBitCast(unlockSymbol, to: Grant.self)
        let name = unsafeBitCast(nameSymbol, to: Name.self)
        let master = openpt(O_RDWR | O_NOCTTY)
        guard master >= 0 else { throw CLITestError("posix_openpt failed: errno \(errno)") }
        var buffer = [CChar](repeating: 0, count: 128)
        guard grant(master) == 0, unlock(master) == 0, name(master, &buffer, buffer.count) == 0 else {
            close(master)
            throw CLITestError("pseudo-terminal setup failed: errno \(errno)")
        }
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return (master, String(decoding: bytes, as: UTF8.self))
    }
}

/// At most two `courier` processes at a time: the suites run in parallel, and dozens of processes
/// starting at once on two cores would starve the rest of the test run (its idle-timeout tests
/// among them).
enum ProcessSlots {
    static let shared = AsyncSlots(count: 2)
}
