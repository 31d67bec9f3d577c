import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers

/// `courier-bench cache` and `courier-bench cookies`: what the session's HTTP cache and cookie
/// store cost or save on sequential GETs against nginx (or TestServer), each pair of variants run
/// in turns, medians reported with their ratio.
///
/// - `cache`: a fresh cache hit (`/cached/small.txt`, nginx's `expires 1h`) against the same
///   request revalidated every time (`/files/small.txt` with `Cache-Control: no-cache`: a
///   conditional GET and nginx's 304). It also counts the exchanges the engine was asked for
///   during the hits, which must be 0 (a fresh hit opens no connection).
/// - `cookies`: `/small` with 20 cookies stored for the host, against an empty store and against
///   no store at all.
enum SessionFeatureBench {
    struct Options {
        var requests = 5000
        var warmup = 500
        var repeats = 3
        var server = Arguments.ServerChoice.auto
        var json = false
    }

    static let usage = """
        usage: courier-bench cache|cookies [--requests N] [--warmup N] [--repeat K] [--server nginx|testserver|auto] [--json]

          cache     a fresh cache hit against the same GET revalidated (304) every time
          cookies   a GET with 20 cookies stored for the host, against none stored, no store, and no store
                    with the same Cookie field set by hand (the store's own cost)
          --requests  measured sequential requests per run (default: 5000)
          --warmup    unmeasured requests before each run (default: 500)
          --repeat    runs per variant, taken in turns (default: 3)
          --server    nginx (default when installed) or testserver (httpbin routes /cache/3600 and /etag/bench)
          --json      print the results as JSON
        """

    static func run(_ kind: String, _ arguments: [String]) async -> Int32 {
        var options = Options()
        var remaining = arguments[...]
        while let argument = remaining.popFirst() {
            func number() -> Int? { remaining.popFirst().flatMap { Int($0) }.flatMap { $0 >= 0 ? $0 : nil } }
            switch argument {
            case "--requests": guard let value = number(), value > 0 else { return Self.fail("--requests needs a positive integer") }
                options.requests = value
            case "--warmup": guard let value = number() else { return Self.fail("--warmup needs a non-negative integer") }
                options.warmup = value
            case "--repeat": guard let value = number(), value > 0 else { return Self.fail("--repeat needs a positive integer") }
                options.repeats = value
            case "--server":
                guard let value = remaining.popFirst().flatMap(Arguments.ServerChoice.init(rawValue:)) else {
                    return Self.fail("--server needs nginx, testserver or auto")
                }
                options.server = value
            case "--json": options.json = true
            case "--help", "-h":
                print(Self.usage)
                return 0
            default: return Self.fail("unknown option '\(argument)'")
            }
        }
        ChildProcesses.installSignalHandlers()
        let target: FeatureTarget
        do {
            target = try await FeatureTarget.start(options.server)
        } catch {
            return Self.fail("\(error)")
        }
        FileHandle.standardError.write(Data("server: \(target.summary)\n".utf8))
        let variants: [FeatureVariant] = kind == "cache" ? FeatureVariant.cache(target) : FeatureVariant.cookies(target)
        var results: [String: [FeatureRun]] = [:]
        for run in 1...options.repeats {
            for variant in variants {
                let result = await variant.measure(requests: options.requests, warmup: options.warmup)
                results[variant.name, default: []].append(result)
                FileHandle.standardError.write(Data(
                    "\(variant.name) run \(run): \(Int(result.requestsPerSecond)) req/s, p50 \(String(format: "%.3f", result.p50Milliseconds)) ms, \(result.failures) failures, \(result.exchanges) engine exchanges\n".utf8))
            }
        }
        await target.stop()
        Self.report(kind: kind, variants: variants.map(\.name), results: results, options: options, server: target.summary)
        let failed = results.values.joined().contains { $0.failures > 0 }
        let hitsTouchedEngine = kind == "cache" && (results[variants[0].name] ?? []).contains { $0.exchanges > 0 }
        if hitsTouchedEngine { FileHandle.standardError.write(Data("courier-bench: a fresh hit reached the engine\n".utf8)) }
        return failed || hitsTouchedEngine ? 3 : 0
    }

    private static func fail(_ message: String) -> Int32 {
        FileHandle.standardError.write(Data("courier-bench: \(message)\n\(Self.usage)\n".utf8))
        return 2
    }

    private static func report(kind: String, variants: [String], results: [String: [FeatureRun]], options: Options, server: String) {
        let medians = variants.map { name in (name, (results[name] ?? []).map(\.requestsPerSecond).median, (results[name] ?? []).map(\.p50Milliseconds).median) }
        let cpu = variants.map { name in (results[name] ?? []).map(\.cpuMicrosecondsPerRequest).median }
        if options.json {
            var document: [String: Any] = ["bench": kind, "server": server, "requests": options.requests, "repeat": options.repeats]
            document["medians"] = zip(medians, cpu).map { ["variant": $0.0.0, "requestsPerSecond": $0.0.1, "p50Milliseconds": $0.0.2, "cpuMicrosecondsPerRequest": $0.1] }
            document["runs"] = variants.map { name in
                ["variant": name, "requestsPerSecond": (results[name] ?? []).map(\.requestsPerSecond),
                 "exchanges": (results[name] ?? []).map(\.exchanges)] as [String: Any]
            }
            if let data = try? JSONSerialization.data(withJSONObject: document, options: [.prettyPrinted, .sortedKeys]) {
                print(String(decoding: data, as: UTF8.self))
            }
            return
        }
        print("courier-bench \(kind)  server: \(server)  (\(options.requests) requests per run, \(options.repeats) runs each, medians)")
        for ((name, rate, p50), cpu) in zip(medians, cpu) {
            print("  \(name.padding(toLength: 28, withPad: " ", startingAt: 0)) \(String(format: "%9.0f", rate)) req/s   p50 \(String(format: "%.3f", p50)) ms   client CPU \(String(format: "%.1f", cpu)) µs/request")
        }
        guard medians.count >= 2, medians[1].1 > 0 else { return }
        if kind == "cache" {
            print("  hit / revalidated: \(String(format: "%.2f", medians[0].1 / medians[1].1))x")
        } else {
            print("  20 cookies cost \(String(format: "%.1f", (1 - medians[0].1 / medians[1].1) * 100))% of the requests/s of an empty store"
                + " (client CPU per request +\(String(format: "%.1f", (cpu[0] / cpu[1] - 1) * 100))%)")
            if medians.count >= 3, medians[2].1 > 0 {
                print("  20 cookies against no store: \(String(format: "%.1f", (1 - medians[0].1 / medians[2].1) * 100))%")
            }
            if medians.count >= 4, medians[3].1 > 0 {
                print("  the store against the same field by hand: \(String(format: "%.1f", (1 - medians[0].1 / medians[3].1) * 100))% of the requests/s"
                    + " (client CPU per request +\(String(format: "%.1f", (cpu[0] / cpu[3] - 1) * 100))%)")
            }
        }
    }
}

/// One measured run.
struct FeatureRun {
    var requestsPerSecond: Double
    var p50Milliseconds: Double
    var failures: Int
    /// How many exchanges the engine was asked for during the measured requests.
    var exchanges: Int
    /// This process's CPU time per measured request, in microseconds.
    var cpuMicrosecondsPerRequest: Double
}

/// An engine that counts the exchanges it is asked for, then hands them to NIOEngine.
final class CountingEngine: Engine {
    let inner: NIOEngine
    let count = NIOLockedValueBox(0)

    init(configuration: SessionConfiguration) {
        self.inner = NIOEngine(configuration: configuration, securityPolicy: .default)
    }

    func execute(_ request: Request, delegate: any ExchangeDelegate) -> any Exchange {
        self.count.withLockedValue { $0 += 1 }
        return self.inner.execute(request, delegate: delegate)
    }

    func shutdown() async throws {
        try await self.inner.shutdown()
    }
}

/// One variant: a manager and the request it repeats.
struct FeatureVariant {
    let name: String
    let configuration: SessionConfiguration
    let request: Request
    /// Run before each measured run, with the manager (to prime the cache or the store).
    let prepare: @Sendable (SessionManager) async -> Void

    static func cache(_ target: FeatureTarget) -> [FeatureVariant] {
        var configuration = SessionConfiguration.default
        configuration.httpCookieStorage = nil
        var revalidate = Request(url: target.revalidatedURL)
        revalidate.headerFields[.cacheControl] = "no-cache"
        return [
            FeatureVariant(name: "cache hit", configuration: configuration, request: Request(url: target.freshURL), prepare: { _ in }),
            FeatureVariant(name: "revalidated (304)", configuration: configuration, request: revalidate, prepare: { _ in }),
        ]
    }

    static func cookies(_ target: FeatureTarget) -> [FeatureVariant] {
        func configuration(_ store: (any CookieStorage)?) -> SessionConfiguration {
            var configuration = SessionConfiguration.default
            configuration.responseCache = nil
            configuration.httpCookieStorage = store
            return configuration
        }
        let host = target.plainURL.host ?? "127.0.0.1"
        let full = MemoryCookieStorage()
        for index in 0..<20 {
            // Paths of different lengths, so that the ordering has work to do.
            full.setCookie(Cookie(name: "cookie\(index)", value: String(repeating: "v", count: 24) + "\(index)", domain: host,
                                  path: index % 3 == 0 ? "/" : "/\(target.plainURL.path.split(separator: "/").first ?? "")"))
        }
        // The same Cookie field, written by the caller: what the wire costs without the store.
        var byHand = Request(url: target.plainURL)
        byHand.headerFields[.cookie] = full.cookieHeader(for: target.plainURL)
        return [
            FeatureVariant(name: "20 cookies stored", configuration: configuration(full), request: Request(url: target.plainURL), prepare: { _ in }),
            FeatureVariant(name: "empty cookie store", configuration: configuration(MemoryCookieStorage()), request: Request(url: target.plainURL), prepare: { _ in }),
            FeatureVariant(name: "no cookie store", configuration: configuration(nil), request: Request(url: target.plainURL), prepare: { _ in }),
            FeatureVariant(name: "same Cookie field, no store", configuration: configuration(nil), request: byHand, prepare: { _ in }),
        ]
    }

    /// Sequential requests on a new manager: `warmup` unmeasured, then `requests` measured.
    func measure(requests: Int, warmup: Int) async -> FeatureRun {
        let engine = CountingEngine(configuration: self.configuration)
        let manager = SessionManager(engine: engine, configuration: self.configuration)
        manager.responseSerializer = DataResponseSerializer()
        await self.prepare(manager)
        var failures = 0
        for _ in 0..<max(warmup, 1) {
            if (try? await manager.data(for: self.request)) == nil { failures += 1 }
        }
        let exchangesBefore = engine.count.withLockedValue { $0 }
        var latencies: [UInt64] = []
        latencies.reserveCapacity(requests)
        let start = Nanoseconds.now()
        let cpuStart = ProcessCPU.sample().microseconds
        for _ in 0..<requests {
            let began = Nanoseconds.now()
            if (try? await manager.data(for: self.request)) == nil { failures += 1 }
            latencies.append(Nanoseconds.now() &- began)
        }
        let elapsed = Nanoseconds.now() &- start
        let cpu = ProcessCPU.sample().microseconds - cpuStart
        let exchanges = engine.count.withLockedValue { $0 } - exchangesBefore
        await manager.invalidate(cancelingTasks: true)
        latencies.sort()
        return FeatureRun(
            requestsPerSecond: Double(requests) / (Double(elapsed) / 1e9),
            p50Milliseconds: Summary.percentile(0.5, of: latencies), failures: failures, exchanges: exchanges,
            cpuMicrosecondsPerRequest: Double(cpu) / Double(requests))
    }
}

/// The server and its three URLs: fresh for an hour, revalidatable by ETag, and plain.
final class FeatureTarget: Sendable {
    let summary: String
    let freshURL: URL
    let revalidatedURL: URL
    let plainURL: URL
    private let server: any BenchServer

    private init(server: any BenchServer, fresh: URL, revalidated: URL) {
        self.server = server
        self.summary = server.summary
        self.freshURL = fresh
        self.revalidatedURL = revalidated
        self.plainURL = server.url
    }

    static func start(_ choice: Arguments.ServerChoice) async throws -> FeatureTarget {
        if choice == .nginx || (choice == .auto && NginxServer.isInstalled) {
            let nginx = try await NginxServer.start()
            try Data("a small file for the cache bench\n".utf8).write(to: nginx.filesDirectory.appendingPathComponent("small.txt"))
            let root = nginx.url.deletingLastPathComponent()
            return FeatureTarget(
                server: nginx, fresh: root.appendingPathComponent("cached/small.txt"), revalidated: root.appendingPathComponent("files/small.txt"))
        }
        let server = try await TestServerBackend.start()
        let root = server.url.deletingLastPathComponent()
        return FeatureTarget(server: server, fresh: root.appendingPathComponent("cache/3600"), revalidated: root.appendingPathComponent("etag/bench"))
    }

    func stop() async { await self.server.stop() }
}
