import Foundation
import Synchronization

/// One measured run of one client on one scenario.
struct RunResult: Sendable, Codable {
    var scenario: String
    var client: String
    /// 1-based, among `--repeat` runs.
    var run: Int
    var concurrency: Int
    var summary: Summary
    /// The 1-minute load average when the run ended.
    var load: Double?
    /// The bench process's own CPU time (user and system, all threads; `getrusage`) over the
    /// measured run, per request, in microseconds. With nginx this is the client's alone; with
    /// `--server testserver` it includes the in-process server.
    var cpuMicrosecondsPerRequest: Double?
    /// The bench process's voluntary context switches over the measured run, per request: how
    /// many times a thread went to sleep, which is about how many times work hopped to a sleeping
    /// thread.
    var voluntarySwitchesPerRequest: Double?
}

/// Runs the scenarios: every client gets the same work against the same server, the clients
/// taking turns so that a change of machine load falls on all of them alike.
struct Runner {
    let arguments: Arguments
    let url: URL
    /// The server's Unix-domain socket, for the `-unix` clients.
    var unixSocketPath: String? = nil

    func runAll() async -> [RunResult] {
        var results: [RunResult] = []
        for scenario in self.arguments.scenarios {
            results += await self.run(scenario)
        }
        return results
    }

    private func run(_ scenario: Arguments.Scenario) async -> [RunResult] {
        let concurrency = self.arguments.concurrency(for: scenario)
        let requests = self.arguments.requestCount(for: scenario)
        // Fresh clients per scenario: the concurrent one starts from cold pools, then warms them up.
        // On Linux, URLSession cannot be told to trust a private root: it sits out `--tls` and an
        // https `--url`.
        let https = self.arguments.tls || self.url.scheme == "https"
        let kinds = self.arguments.clients.filter { !(https && $0 == .urlsession) }
        let clients = kinds.map {
            (kind: $0, client: BenchClient.make(
                $0, url: self.url, connections: self.arguments.concurrency, http2: self.arguments.http2, unixSocket: self.unixSocketPath))
        }
        var results: [RunResult] = []
        for run in 1...self.arguments.repeats {
            for (kind, client) in clients {
                if case .external(let external) = client {
                    // Measured in its own process, which counts its own CPU.
                    let result = Self.measure(external, kind: kind, scenario: scenario, run: run, warmup: self.arguments.warmup, requests: requests, concurrency: concurrency)
                    Report.progress(result)
                    results.append(result)
                    continue
                }
                if self.arguments.warmup > 0 {
                    _ = await Self.measure(client, requests: self.arguments.warmup, concurrency: concurrency)
                }
                let before = ProcessCPU.sample()
                let summary = await Self.measure(client, requests: requests, concurrency: concurrency)
                let after = ProcessCPU.sample()
                let count = Double(max(requests, 1))
                let result = RunResult(
                    scenario: scenario.rawValue, client: kind.rawValue, run: run, concurrency: concurrency,
                    summary: summary, load: MachineLoad.oneMinute(),
                    cpuMicrosecondsPerRequest: Double(after.microseconds - before.microseconds) / count,
                    voluntarySwitchesPerRequest: Double(after.voluntarySwitches - before.voluntarySwitches) / count)
                Report.progress(result)
                results.append(result)
            }
        }
        for (_, client) in clients { await client.shutdown() }
        return results
    }

    /// A run of a client in a process of its own (Go's): its warm-up, then the measured run with
    /// the CPU time and context switches it reports for itself.
    private static func measure(
        _ client: GoClient, kind: Arguments.ClientKind, scenario: Arguments.Scenario, run: Int, warmup: Int, requests: Int, concurrency: Int
    ) -> RunResult {
        let count = Double(max(requests, 1))
        do {
            if warmup > 0 { _ = try client.run(requests: warmup, concurrency: concurrency) }
            let measured = try client.run(requests: requests, concurrency: concurrency)
            return RunResult(
                scenario: scenario.rawValue, client: kind.rawValue, run: run, concurrency: concurrency,
                summary: measured.summary, load: MachineLoad.oneMinute(),
                cpuMicrosecondsPerRequest: Double(measured.cpuMicroseconds) / count,
                voluntarySwitchesPerRequest: Double(measured.voluntarySwitches) / count)
        } catch {
            FileHandle.standardError.write(Data("courier-bench: \(error)\n".utf8))
            exit(1)
        }
    }

    /// Sends `requests` requests with `concurrency` in flight and times them.
    static func measure(_ client: BenchClient, requests: Int, concurrency: Int) async -> Summary {
        let state = RunState(total: requests)
        let lanes = min(concurrency, requests)
        let start = Nanoseconds.now()
        switch client {
        case .async(let client): await Self.drive(client, state: state, lanes: lanes)
        case .callback(let client): await CallbackDriver.drive(client, state: state, lanes: lanes)
        case .external(let client):
            // Not driven from here (see measure(_:kind:scenario:run:warmup:requests:concurrency:)).
            if let run = try? client.run(requests: requests, concurrency: concurrency) { return run.summary }
        }
        return Summary(state: state, nanoseconds: Nanoseconds.now() - start)
    }

    /// `lanes` child tasks, each awaiting one request after another until all are handed out.
    private static func drive(_ client: any AsyncBenchClient, state: RunState, lanes: Int) async {
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<lanes {
                group.addTask {
                    while let slot = state.claim() {
                        let start = Nanoseconds.now()
                        let ok = await client.fetch()
                        state.record(slot, start: start, ok: ok)
                    }
                }
            }
        }
    }
}

/// `lanes` chains of callbacks: each completion records its request and sends the next one.
final class CallbackDriver: Sendable {
    private let client: any CallbackBenchClient
    private let state: RunState
    private let activeLanes: Atomic<Int>
    private let done: CheckedContinuation<Void, Never>

    private init(client: any CallbackBenchClient, state: RunState, lanes: Int, done: CheckedContinuation<Void, Never>) {
        self.client = client
        self.state = state
        self.activeLanes = Atomic(lanes)
        self.done = done
    }

    static func drive(_ client: any CallbackBenchClient, state: RunState, lanes: Int) async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let driver = CallbackDriver(client: client, state: state, lanes: lanes, done: done)
            for _ in 0..<lanes { driver.next() }
        }
    }

    private func next() {
        guard let slot = self.state.claim() else {
            // The last lane to run dry ends the run; by then every request has been recorded.
            if self.activeLanes.wrappingSubtract(1, ordering: .acquiringAndReleasing).newValue == 0 {
                self.done.resume()
            }
            return
        }
        let start = Nanoseconds.now()
        self.client.fetch { ok in
            self.state.record(slot, start: start, ok: ok)
            self.next()
        }
    }
}
