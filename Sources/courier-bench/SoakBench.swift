import Courier
import Dispatch
import Foundation
import Synchronization

/// `courier-bench soak`: a long run of requests in one process, printing resident memory as it
/// goes, to see that Courier's memory plateaus instead of growing with the number of requests.
///
/// Two phases, one request at a time then `--concurrency` in flight, each `--requests` long, half
/// through the `async` verbs and half through AFNetworking's callback verbs; `--rounds K` gives
/// each phase K fresh managers in turn (each invalidated and dropped at the end of its round).
/// Resident memory is printed every `--every` requests and once more after each phase's last
/// manager is gone.
enum SoakBench {
    struct Options: Sendable {
        var requests = 1_000_000
        var concurrency = 64
        var every = 100_000
        var rounds = 1
        var server = Arguments.ServerChoice.auto
        /// HTTPS (nginx only), and with `h2` offered.
        var tls = false
        var http2 = false
    }

    static let usage = """
        usage: courier-bench soak [--requests N] [--concurrency N] [--every N] [--rounds K] [--server nginx|testserver|auto] [--tls|--http2]

          --requests     requests per phase (sequential, then concurrent; default 1000000)
          --concurrency  requests in flight in the concurrent phase (default 64)
          --every        print resident memory every N requests (default 100000)
          --rounds       fresh managers per phase, each invalidated and dropped after its share (default 1)
          --server       the server to start (default: nginx when installed, else TestServer)
          --tls          HTTPS (nginx), HTTP/1.1 over TLS
          --http2        HTTPS (nginx) with h2 offered: the requests share HTTP/2 connections
        """

    static func run(_ arguments: [String]) async -> Int32 {
        let options: Options
        do {
            options = try Self.parse(arguments)
        } catch {
            FileHandle.standardError.write(Data("courier-bench soak: \(error)\n\(Self.usage)\n".utf8))
            return 2
        }
        var benchArguments = Arguments()
        benchArguments.server = options.server
        benchArguments.tls = options.tls || options.http2
        benchArguments.http2 = options.http2
        let server: any BenchServer
        do {
            server = try await ServerLauncher.start(benchArguments)
        } catch {
            FileHandle.standardError.write(Data("courier-bench: \(error)\n".utf8))
            return 1
        }
        print("server: \(server.summary)")
        print("start: RSS \(Self.format(Self.residentMiB()))")
        var failures = 0
        for (phase, lanes) in [("sequential", 1), ("concurrent", options.concurrency)] {
            failures += await Self.phase(phase, lanes: lanes, options: options, url: server.url)
            print("\(phase): done, every manager released: RSS \(Self.format(Self.residentMiB()))")
        }
        await server.stop()
        print("failures: \(failures)")
        return failures == 0 ? 0 : 3
    }

    /// Counts shared by a phase's lanes.
    private final class Counters: Sendable {
        let sent = Atomic<Int>(0)
        let failed = Atomic<Int>(0)
        let claimed = Atomic<Int>(0)
    }

    /// Runs one phase's requests over its rounds; returns how many failed.
    private static func phase(_ name: String, lanes: Int, options: Options, url: URL) async -> Int {
        let perRound = options.requests / options.rounds
        let every = options.every
        let counters = Counters()
        let started = ContinuousClock.now
        for _ in 0..<options.rounds {
            let (manager, path) = CourierSetup.manager(url: url, connections: options.concurrency)
            manager.responseSerializer = DataResponseSerializer()
            manager.completionQueue = DispatchQueue(label: "courier-bench.soak", attributes: .concurrent)
            counters.claimed.store(0, ordering: .relaxed)
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<lanes {
                    group.addTask {
                        while counters.claimed.wrappingAdd(1, ordering: .relaxed).oldValue < perRound {
                            let index = counters.sent.wrappingAdd(1, ordering: .relaxed).newValue
                            let ok = index.isMultiple(of: 2) ? await Self.asyncGet(manager, path) : await Self.callbackGet(manager, path)
                            if !ok { counters.failed.add(1, ordering: .relaxed) }
                            if index.isMultiple(of: every) {
                                let seconds = (ContinuousClock.now - started).seconds
                                print("\(name): \(index) requests, RSS \(Self.format(Self.residentMiB())), \(Int(Double(index) / seconds)) requests/s")
                            }
                        }
                    }
                }
            }
            await manager.invalidate(cancelingTasks: false)
        }
        return counters.failed.load(ordering: .relaxed)
    }

    private static func asyncGet(_ manager: HTTPSessionManager, _ path: String) async -> Bool {
        (try? await manager.response(method: .get, urlString: path, serializer: DataResponseSerializer()))?.response.status.code == 200
    }

    private static func callbackGet(_ manager: HTTPSessionManager, _ path: String) async -> Bool {
        await withCheckedContinuation { continuation in
            manager.get(path, success: { _, _ in continuation.resume(returning: true) }, failure: { _, _ in continuation.resume(returning: false) })
        }
    }

    /// Resident memory now, in MiB (`VmRSS` of `/proc/self/status`).
    static func residentMiB() -> Double {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kib = Double(line.split(separator: " ").dropFirst().first ?? "")
        else { return .nan }
        return kib / 1024
    }

    static func format(_ mebibytes: Double) -> String { String(format: "%.1f MiB", mebibytes) }

    private struct Failure: Error, CustomStringConvertible { let description: String }

    private static func parse(_ arguments: [String]) throws -> Options {
        var options = Options()
        var remaining = arguments[...]
        func number(_ option: String) throws -> Int {
            guard let text = remaining.popFirst(), let value = Int(text), value > 0 else {
                throw Failure(description: "\(option) needs a positive integer")
            }
            return value
        }
        while let option = remaining.popFirst() {
            switch option {
            case "--requests": options.requests = try number(option)
            case "--concurrency": options.concurrency = try number(option)
            case "--every": options.every = try number(option)
            case "--rounds": options.rounds = try number(option)
            case "--server":
                guard let text = remaining.popFirst(), let choice = Arguments.ServerChoice(rawValue: text) else {
                    throw Failure(description: "--server needs nginx, testserver or auto")
                }
                options.server = choice
            case "--tls": options.tls = true
            case "--http2": options.http2 = true
            default: throw Failure(description: "unknown option '\(option)'")
            }
        }
        return options
    }
}

extension Duration {
    /// The duration in seconds.
    var seconds: Double { Double(self.components.seconds) + Double(self.components.attoseconds) / 1e18 }
}
