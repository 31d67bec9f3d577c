import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The child processes the bench started, stopped on SIGINT or SIGTERM so that an interrupted run
/// leaves no server behind.
enum ChildProcesses {
    private static let pids = Mutex<Set<pid_t>>([])
    private static let sources = Mutex<[any DispatchSourceSignal]>([])

    static func register(_ pid: pid_t) { Self.pids.withLock { _ = $0.insert(pid) } }

    static func unregister(_ pid: pid_t) { Self.pids.withLock { _ = $0.remove(pid) } }

    /// Replaces the default action of SIGINT and SIGTERM: stop the children, then exit.
    static func installSignalHandlers() {
        // The sources live as long as the process; they are made inside the lock so that they
        // never leave it.
        Self.sources.withLock { sources in
            for number in [SIGINT, SIGTERM] {
                signal(number, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
                source.setEventHandler {
                    let pids = Self.pids.withLock { $0 }
                    for pid in pids { kill(pid, SIGTERM) }
                    // `exit` does not wait for the children; a moment lets nginx release its port.
                    usleep(100_000)
                    exit(128 + number)
                }
                source.resume()
                sources.append(source)
            }
        }
    }
}
