import Foundation
import NIOConcurrencyHelpers

/// The upload step's progress, as the marks it passed (25 %, 50 %, 75 %, 100 %).
final class ProgressMarks: Sendable {
    private let passed = NIOLockedValueBox<[Int]>([])

    func record(_ fraction: Double) {
        let mark = Int(fraction * 4) * 25
        self.passed.withLockedValue { marks in
            if mark > 0, marks.last ?? 0 < mark { marks.append(mark) }
        }
    }

    var summary: String {
        let marks = self.passed.withLockedValue { $0 }
        return marks.isEmpty ? "(no report)" : marks.map { "\($0)%" }.joined(separator: " → ")
    }
}

/// The download step's bar: a ``ProgressBar`` on a terminal, nothing otherwise.
final class DemoProgress: Sendable {
    private let bar: NIOLockedValueBox<ProgressBar?>

    init(console: Console, total: Int64, enabled: Bool) {
        self.bar = NIOLockedValueBox(enabled ? ProgressBar(console: console, total: total, alreadyDone: 0) : nil)
    }

    func update(_ completed: Int64) {
        self.bar.withLockedValue { bar in
            guard var current = bar else { return }
            current.advance(by: Int(completed - current.done))
            bar = current
        }
    }

    func finish() {
        self.bar.withLockedValue { bar in
            bar?.finish()
        }
    }
}
