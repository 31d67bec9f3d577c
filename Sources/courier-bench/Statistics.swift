import Dispatch
import Foundation
import Synchronization

/// Monotonic time in nanoseconds (`DispatchTime`, `CLOCK_MONOTONIC` on Linux), cheap enough to
/// read around every request.
enum Nanoseconds {
    static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }
}

/// The shared state of one run: which request comes next, each request's latency, the failures.
///
/// Latencies go into a buffer allocated before the run, one slot per request; a slot is handed out
/// once by ``claim()``, so no two writers share one and the hot path takes no lock.
final class RunState: @unchecked Sendable {
    // @unchecked: `latencies` is written only at slots claimed through the atomic `next`, each by
    // exactly one writer, and read only after every writer has finished (the run awaited them).
    let total: Int
    private let next = Atomic<Int>(0)
    private let failureCount = Atomic<Int>(0)
    private let latencies: UnsafeMutableBufferPointer<UInt64>

    init(total: Int) {
        self.total = total
        self.latencies = .allocate(capacity: total)
        self.latencies.initialize(repeating: 0)
    }

    deinit { self.latencies.deallocate() }

    /// The index of the next request to send, or nil when all were handed out.
    func claim() -> Int? {
        let slot = self.next.wrappingAdd(1, ordering: .relaxed).oldValue
        return slot < self.total ? slot : nil
    }

    /// Records request `slot`, started at `start`; a request that was not a 200 counts as a failure.
    func record(_ slot: Int, start: UInt64, ok: Bool) {
        self.latencies[slot] = Nanoseconds.now() &- start
        if !ok { self.failureCount.wrappingAdd(1, ordering: .relaxed) }
    }

    var failures: Int { self.failureCount.load(ordering: .relaxed) }

    /// The latencies, sorted; call once the run is over.
    func sortedLatencies() -> [UInt64] {
        Array(self.latencies).sorted()
    }
}

/// Summary figures of one measured run.
struct Summary: Sendable, Codable {
    var requests: Int
    var seconds: Double
    var requestsPerSecond: Double
    var p50Milliseconds: Double
    var p99Milliseconds: Double
    var failures: Int

    /// A run measured elsewhere (another process: the Go client).
    init(requests: Int, nanoseconds: UInt64, p50Milliseconds: Double, p99Milliseconds: Double, failures: Int) {
        self.requests = requests
        self.seconds = Double(nanoseconds) / 1e9
        self.requestsPerSecond = Double(requests) / self.seconds
        self.p50Milliseconds = p50Milliseconds
        self.p99Milliseconds = p99Milliseconds
        self.failures = failures
    }

    init(state: RunState, nanoseconds: UInt64) {
        let sorted = state.sortedLatencies()
        self.requests = state.total
        self.seconds = Double(nanoseconds) / 1e9
        self.requestsPerSecond = Double(state.total) / self.seconds
        self.p50Milliseconds = Self.percentile(0.50, of: sorted)
        self.p99Milliseconds = Self.percentile(0.99, of: sorted)
        self.failures = state.failures
    }

    /// The nearest-rank percentile of sorted nanoseconds, in milliseconds.
    static func percentile(_ fraction: Double, of sorted: [UInt64]) -> Double {
        guard !sorted.isEmpty else { return 0 }
        let rank = Int((fraction * Double(sorted.count)).rounded(.up)) - 1
        return Double(sorted[min(max(rank, 0), sorted.count - 1)]) / 1e6
    }
}

/// The CPU time this process has used, user and system, all its threads, and how often its
/// threads were switched out.
enum ProcessCPU {
    struct Sample {
        /// User and system CPU time, in microseconds.
        var microseconds: Int64
        /// Voluntary context switches: a thread blocked (a futex wait, an `epoll_wait` with
        /// nothing ready). Each hop of work to a sleeping thread costs one on the way back to sleep.
        var voluntarySwitches: Int64
    }

    static func sample() -> Sample {
        var usage = rusage()
        guard getrusage(RUSAGE_SELF.rawValue, &usage) == 0 else { return Sample(microseconds: 0, voluntarySwitches: 0) }
        func micro(_ time: timeval) -> Int64 { Int64(time.tv_sec) * 1_000_000 + Int64(time.tv_usec) }
        return Sample(microseconds: micro(usage.ru_utime) + micro(usage.ru_stime), voluntarySwitches: Int64(usage.ru_nvcsw))
    }
}

/// The 1-minute load average from `/proc/loadavg` (nil where there is none).
enum MachineLoad {
    static func current() -> String? {
        guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) else { return nil }
        return text.split(separator: " ").prefix(3).joined(separator: " ")
    }

    static func oneMinute() -> Double? {
        self.current().flatMap { $0.split(separator: " ").first }.flatMap { Double($0) }
    }
}

extension Array where Element == Double {
    /// The median, or 0 for an empty array.
    var median: Double {
        guard !self.isEmpty else { return 0 }
        let sorted = self.sorted()
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }
}
