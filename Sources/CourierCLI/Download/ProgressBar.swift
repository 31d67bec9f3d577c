import Foundation

/// A one-line progress display on a terminal: percentage, bar, bytes, rate and time left, redrawn
/// at most ten times a second.
struct ProgressBar {
    let console: Console
    let total: Int64?
    private(set) var done: Int64
    private let startOffset: Int64
    private let start = ContinuousClock.now
    private var lastDraw: ContinuousClock.Instant?
    private var lastWidth = 0

    init(console: Console, total: Int64?, alreadyDone: Int64) {
        self.console = console
        self.total = total
        self.done = alreadyDone
        self.startOffset = alreadyDone
    }

    mutating func advance(by count: Int) {
        self.done += Int64(count)
        let now = ContinuousClock.now
        if let lastDraw, now - lastDraw < .milliseconds(100) { return }
        self.lastDraw = now
        self.draw()
    }

    /// Draws the final state and ends the line.
    mutating func finish() {
        self.draw()
        self.console.write("\n")
    }

    private mutating func draw() {
        let line = Self.line(done: self.done, total: self.total, transferred: self.done - self.startOffset, elapsed: ContinuousClock.now - self.start)
        let padding = String(repeating: " ", count: max(0, self.lastWidth - line.count))
        self.lastWidth = line.count
        self.console.write("\r" + line + padding)
    }

    /// `" 45% [#########           ] 12.0 MiB / 26.7 MiB  3.1 MiB/s  ETA 0:04"`, or without
    /// percentage, bar and ETA when the total is unknown.
    static func line(done: Int64, total: Int64?, transferred: Int64, elapsed: Duration) -> String {
        let seconds = elapsed.seconds
        let rate = seconds > 0 ? Double(transferred) / seconds : 0
        let rateText = ByteCount.rate(transferred, over: elapsed)
        guard let total, total > 0 else {
            return ByteCount.format(done) + "  " + rateText
        }
        let fraction = min(1, Double(done) / Double(total))
        let width = 20
        let filled = Int(fraction * Double(width))
        let bar = "[" + String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled) + "]"
        let percent = String(format: "%3d%%", Int(fraction * 100))
        var eta = "--:--"
        if rate > 0 {
            // At most 99,999 minutes: a huge length at a slow rate is no `Int` (and traps).
            let left = Int(min((Double(max(0, total - done)) / rate).rounded(.up), 99_999 * 60))
            eta = String(format: "%d:%02d", left / 60, left % 60)
        }
        return "\(percent) \(bar) \(ByteCount.format(done)) / \(ByteCount.format(total))  \(rateText)  ETA \(eta)"
    }
}

/// Byte counts for people: `512 B`, `1.5 KiB`, `12.0 MiB`, `1.2 GiB`.
enum ByteCount {
    static func format(_ count: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(count)
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(count) B" : String(format: "%.1f", value) + " " + units[unit]
    }

    /// `3.1 MiB/s`: `count` bytes over `elapsed` (`0 B/s` for no time yet).
    static func rate(_ count: Int64, over elapsed: Duration) -> String {
        let seconds = elapsed.seconds
        return Self.format(seconds > 0 ? Int64(Double(count) / seconds) : 0) + "/s"
    }
}

extension Duration {
    /// The duration in seconds, fractions included.
    var seconds: Double {
        Double(self.components.seconds) + Double(self.components.attoseconds) / 1e18
    }
}
