import Foundation
import Testing

@testable import Courier

/// The test process's last check: when it exits, no session manager, engine, task, task delegate
/// or WebSocket task of Courier's may still be alive (``LiveObjectCensus``, a debug build's table
/// of live objects; the process-wide `HTTPSessionManager.shared` is not in it).
///
/// The per-test checks hold weak references to what a test made; this one covers every test at
/// once, including those that make their managers by hand, and finds what no test thought to look
/// for (counting live objects found a task's hooks that kept their task; this check, exchanges
/// that `EmbeddedChannel` tests left running with their engines, and a test helper that kept a
/// notification, and so its task, for 30 s after its test). Turned on
/// by the first test that starts a test server or makes an engine over an `EmbeddedChannel`
/// (objects made before are not counted). At exit the other threads still run, so an object
/// whose last release is on its way is waited for, up to 15 s; then the survivors are listed and
/// the process exits with status 1.
enum LiveObjectCheck {
    /// Evaluated once: starts the census and arranges the check at exit.
    static let installed: Bool = {
        LiveObjectCensus.start { Test.current?.id }
        atexit { LiveObjectCheck.verifyAtExit() }
        return true
    }()

    private static func verifyAtExit() {
        let survivors = LiveObjectCensus.waitUntilEmpty(before: Date(timeIntervalSinceNow: 15))
        guard !survivors.isEmpty else {
            FileHandle.standardError.write(Data("Live-object census at exit: no manager, engine or task of Courier's is alive.\n".utf8))
            return
        }
        let counts = LiveObjectCensus.Kind.allCases.map { kind in "\(survivors.filter { $0.kind == kind }.count) \(kind.rawValue)" }
        var report = "error: live-object census at exit: \(counts.joined(separator: ", ")) outlived their work"
        report += " (README.md, \"Contributing\", says how to find what keeps them):\n"
        for entry in survivors.prefix(100) { report += "  \(entry.kind.rawValue): \(entry.label), made in \(entry.madeIn)\n" }
        FileHandle.standardError.write(Data(report.utf8))
        _exit(1)
    }
}
