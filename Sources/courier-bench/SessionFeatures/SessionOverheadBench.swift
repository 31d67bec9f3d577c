import Courier
import Foundation
import HTTPTypes
import NIOCore

/// `courier-bench session`: what the session layer alone costs per request, with no socket, no
/// event loop and no thread hop.
///
/// The manager runs on an engine that answers every request inside `execute` (the engine contract
/// allows a delegate to be called before `execute` returns): a `200` with the header fields and
/// body nginx sends for the request scenarios' `GET /small`, the body in one chunk, then the end.
/// So an `await` of Courier's API never suspends, and the CPU time per request is the session's
/// own: making, resuming and settling the task, the cookie store and cache lookups and stores,
/// serialization, the notifications. Run it under `perf record` to see where that goes without
/// the engine's and the kernel's samples.
///
/// Variants, taken in turns: `courier` (the defaults: response cache and cookie store),
/// `nostores` (neither), `quiet` (the defaults without task notifications), `lean` (the defaults
/// without task notifications and task metrics),
/// `callback` (the completion-handler API, waited on per request: its
/// processing and completion queues are two hops, so it measures those too).
enum SessionOverheadBench {
    /// Every variant, in the order they run by default.
    static let variants = ["courier", "nostores", "quiet", "lean", "callback"]

    struct Options {
        var requests = 200_000
        var repeats = 5
        var variants = SessionOverheadBench.variants
        /// KiB of memory written between requests (0: none), to see the session's cost with the
        /// caches cold, as it is when a thread wakes for one request between sleeps.
        var coldKiB = 0
    }

    static let usage = """
        usage: courier-bench session [--requests N] [--repeat K] [--variants \(variants.joined(separator: ","))] [--cold KiB]

          the session layer's own CPU per request, on an engine that answers inside execute
          --requests  measured requests per run (default: 200000)
          --repeat    runs per variant, taken in turns (default: 5); the best run is reported too
          --variants  which of \(variants.joined(separator: ", ")) to run
          --cold      write this many KiB of other memory before each request (not timed), so that it
                      finds the CPU caches cold, as a thread woken for one request does
        """

    static func run(_ arguments: [String]) async -> Int32 {
        var options = Options()
        var remaining = arguments[...]
        while let argument = remaining.popFirst() {
            switch argument {
            case "--requests":
                guard let value = remaining.popFirst().flatMap({ Int($0) }), value > 0 else { return Self.fail("--requests needs a positive integer") }
                options.requests = value
            case "--repeat":
                guard let value = remaining.popFirst().flatMap({ Int($0) }), value > 0 else { return Self.fail("--repeat needs a positive integer") }
                options.repeats = value
            case "--variants":
                let names = (remaining.popFirst() ?? "").split(separator: ",").map(String.init)
                guard !names.isEmpty, names.allSatisfy(Self.variants.contains) else {
                    return Self.fail("--variants takes \(Self.variants.joined(separator: ", "))")
                }
                options.variants = names
            case "--cold":
                guard let value = remaining.popFirst().flatMap({ Int($0) }), value >= 0 else { return Self.fail("--cold needs a number of KiB") }
                options.coldKiB = value
            case "--help", "-h":
                print(Self.usage)
                return 0
            default:
                return Self.fail("unknown argument \(argument)")
            }
        }
        var results: [String: [Double]] = [:]
        for run in 1...options.repeats {
            for variant in options.variants {
                let manager = Self.manager(variant: variant)
                // A first request outside the measurement: the caches of the type system and the
                // manager's first-use work (the cookie store, the cache) are not the point.
                guard await Self.fetch(manager, callback: false) else { return Self.fail("the first request failed") }
                var failures = 0
                var microseconds: Int64 = 0
                if options.coldKiB == 0 {
                    let before = ProcessCPU.sample()
                    for _ in 0..<options.requests {
                        if await !Self.fetch(manager, callback: variant == "callback") { failures += 1 }
                    }
                    microseconds = ProcessCPU.sample().microseconds - before.microseconds
                } else {
                    // The same writes without the requests, timed apart and taken off.
                    var scratch = [UInt8](repeating: 0, count: options.coldKiB * 1024)
                    let before = ProcessCPU.sample()
                    for index in 0..<options.requests {
                        Self.touch(&scratch, index)
                        if await !Self.fetch(manager, callback: variant == "callback") { failures += 1 }
                    }
                    let middle = ProcessCPU.sample()
                    for index in 0..<options.requests { Self.touch(&scratch, index) }
                    let after = ProcessCPU.sample()
                    microseconds = (middle.microseconds - before.microseconds) - (after.microseconds - middle.microseconds)
                }
                await manager.invalidate(cancelingTasks: true)
                let perRequest = Double(microseconds) / Double(options.requests)
                results[variant, default: []].append(perRequest)
                FileHandle.standardError.write(Data(
                    "session \(variant) run \(run): cpu \(Report.format(perRequest, 2)) µs/req, \(failures) failures\n".utf8))
                if failures > 0 { return Self.fail("\(failures) requests failed") }
            }
        }
        print("courier-bench session  (\(options.requests) requests per run, \(options.repeats) runs, load \(MachineLoad.current() ?? "?"))")
        for variant in options.variants {
            let values = results[variant] ?? []
            print("\(variant.padding(toLength: 9, withPad: " ", startingAt: 0))  median \(Report.format(values.median, 2)) µs/req  best \(Report.format(values.min() ?? 0, 2)) µs/req")
        }
        return 0
    }

    static func manager(variant: String) -> HTTPSessionManager {
        var configuration = CourierSetup.configuration(stores: variant != "nostores", lean: variant == "lean")
        if variant == "quiet" { configuration.postsTaskNotifications = false }
        let manager = HTTPSessionManager(baseURL: URL(string: "http://127.0.0.1:8080/"), engine: InstantEngine(), configuration: configuration)
        // The callback variant's object is the body, as courier-callback's is.
        manager.responseSerializer = DataResponseSerializer()
        return manager
    }

    /// Writes one byte in every cache line of `scratch`.
    @inline(never)
    static func touch(_ scratch: inout [UInt8], _ index: Int) {
        scratch.withUnsafeMutableBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                bytes[offset] = UInt8(truncatingIfNeeded: index)
                offset += 64
            }
        }
    }

    static func fetch(_ manager: HTTPSessionManager, callback: Bool) async -> Bool {
        if callback {
            return await withCheckedContinuation { continuation in
                manager.get(
                    "small",
                    success: { _, object in continuation.resume(returning: (object as? Data)?.count == InstantEngine.body.readableBytes) },
                    failure: { _, _ in continuation.resume(returning: false) })
            }
        }
        do {
            let response = try await manager.response(method: .get, urlString: "small", serializer: DataResponseSerializer())
            return response.value.count == InstantEngine.body.readableBytes
        } catch {
            return false
        }
    }

    private static func fail(_ message: String) -> Int32 {
        FileHandle.standardError.write(Data("courier-bench session: \(message)\n\(Self.usage)\n".utf8))
        return 2
    }
}

/// An engine that answers every request inside `execute`: nginx's answer to `GET /small`, the body
/// in one chunk, the end.
final class InstantEngine: Engine {
    static let body = ByteBuffer(string: ServerLauncher.body)

    /// What nginx answers for the request scenarios' `GET /small`: no validator and no lifetime,
    /// so the cache keeps nothing it may answer with and every request reaches the engine, as
    /// there.
    static let head: HTTPResponse = {
        var fields = HTTPFields()
        fields[.server] = "nginx/1.22.1"
        fields[.date] = "Wed, 25 Nov 2026 00:00:00 GMT"
        fields[.contentType] = "text/plain"
        fields[.contentLength] = "\(ServerLauncher.body.utf8.count)"
        fields[.connection] = "keep-alive"
        return HTTPResponse(status: .ok, headerFields: fields)
    }()

    func execute(_ request: Request, delegate: any ExchangeDelegate) -> any Exchange {
        if delegate.exchange(didReceive: Self.head, url: request.url) == .allow {
            delegate.exchange(didReceive: Self.body)
            delegate.exchange(didCompleteWith: nil)
        } else {
            delegate.exchange(didCompleteWith: CourierError(.cancelled, "cancelled by the delegate", request: request))
        }
        return Done()
    }

    func shutdown() async throws {}

    /// The handle of an exchange that has already ended.
    private final class Done: Exchange {
        func cancel(with error: CourierError) {}
        func suspendReceiving() {}
        func resumeReceiving() {}
    }
}
