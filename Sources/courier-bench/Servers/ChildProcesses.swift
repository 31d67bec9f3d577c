import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The child processes the bench started, stopped on SIGINT or SIGTERM so that an interrupted run
/// leaves no server (and no temporary directory) behind.
enum ChildProcesses {
    /// Each child with the directory to delete once it is gone.
    private static let children = Mutex<[pid_t: String]>([:])
    private static let sources = Mutex<[any DispatchSourceSignal]>([])

    static func register(_ pid: pid_t, directory: String) { Self.children.withLock { $0[pid] = directory } }

    static func unregister(_ pid: pid_t) { Self.children.withLock { _ = $0.removeValue(forKey: pid) } }

    /// Replaces the default action of SIGINT and SIGTERM: stop the children, then exit.
    static func installSignalHandlers() {
        // The sources live as long as the process; they are made inside the lock so that they
        // never leave it.
        Self.sources.withLock { sources in
            for number in [SIGINT, SIGTERM] {
                signal(number, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
                source.setEventHandler {
                    let children = Self.children.withLock { $0 }
                    for pid in children.keys { kill(pid, SIGTERM) }
                    // `exit` does not wait for the children; a moment lets nginx stop writing.
                    usleep(200_000)
                    for directory in children.values { try? FileManager.default.removeItem(atPath: directory) }
                    exit(128 + number)
                }
                source.resume()
                sources.append(source)
            }
        }
    }
}

extension ChildProcesses {
    /// Runs `courier-bench <subcommand> <arguments…>` (a measurement in a process of its own, so
    /// that its CPU time and peak memory are its own) and decodes the one line of JSON it prints;
    /// nil, said on standard error, when it could not start, failed or printed something else.
    static func measure<Measurement: Decodable>(_ subcommand: String, _ arguments: [String], as type: Measurement.Type) -> Measurement? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        process.arguments = [subcommand] + arguments
        let output = Pipe()
        process.standardOutput = output
        do {
            try process.run()
        } catch {
            FileHandle.standardError.write(Data("courier-bench: cannot start a child: \(error)\n".utf8))
            return nil
        }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            FileHandle.standardError.write(Data("courier-bench: \(subcommand) \(arguments.prefix(2).joined(separator: " ")) failed (exit \(process.terminationStatus))\n".utf8))
            return nil
        }
        return try? JSONDecoder().decode(Measurement.self, from: data)
    }
}
