import Courier
import CourierTesting
import Dispatch
import Foundation
import NIOCore
import Synchronization

/// `courier-bench soak-mixed`: one long-lived manager running every kind of task Courier has,
/// the ones that fail and the ones cancelled included, against the in-process ``TestServer``,
/// printing after each round what the process holds: resident memory, open file descriptors,
/// files left in the download directory. A task kind whose ending leaks shows as a column that
/// grows round after round instead of settling.
///
/// The successful `GET`s of `courier-bench soak` never take the paths that end early (a
/// connection reset, a body cut short, a timeout, a cancel mid-body or before resume, a WebSocket
/// closed), and those are where a long-running server meets leaks.
enum MixedSoakBench {
    struct Options: Sendable {
        var rounds = 10
        var perRound = 2_000
        var concurrency = 16
        var transport = Transport.http
    }

    enum Transport: String, Sendable {
        case http, https, http2
    }

    static let usage = """
        usage: courier-bench soak-mixed [--rounds K] [--per-round N] [--concurrency N] [--transport http|https|http2]

          --rounds       rounds of the mix (default 10); what the process holds is printed after each
          --per-round    tasks in a round (default 2000), spread over the kinds below
          --concurrency  tasks in flight (default 16)
          --transport    http (default), https (HTTP/1.1 over TLS) or http2 (TLS with h2)

        Kinds, in turn: async GET, callback GET, POST JSON, streamed upload, download to a file,
        a body cut short, a reset, an idle timeout, a stream cancelled after its first chunk,
        redirects, a 503 retried once, server-sent events, a task cancelled before resume, a
        caller's Swift task cancelled mid-body, gzip, and (HTTP/1.1 only) a WebSocket echo.
        """

    /// What the lanes share: the round's next task to claim, and every round's unexpected endings.
    private final class Tally: Sendable {
        let claimed = Atomic<Int>(0)
        let unexpected = Mutex<[String: Int]>([:])
    }

    /// What a kind's task ended as, against what it should.
    private enum Verdict { case expected, unexpected(String) }

    /// The kinds of task, run in this order.
    private enum Kind: String, CaseIterable {
        case asyncGET = "async GET", callbackGET = "callback GET", postJSON = "POST JSON"
        case streamedUpload = "streamed upload", download, cutShort = "cut short", reset
        case idleTimeout = "idle timeout", streamCancelled = "stream cancelled", redirects
        case retried503 = "503 retried", events, cancelledBeforeResume = "cancel before resume"
        case callerCancelled = "caller cancelled", gzip, webSocket = "WebSocket"
    }

    static func run(_ arguments: [String]) async -> Int32 {
        let options: Options
        do {
            options = try Self.parse(arguments)
        } catch {
            FileHandle.standardError.write(Data("courier-bench soak-mixed: \(error)\n\(Self.usage)\n".utf8))
            return 2
        }
        var serverConfiguration = options.transport == .http ? TestServer.Configuration() : .https()
        serverConfiguration.http2 = options.transport == .http2
        let server: TestServer
        do {
            server = try await TestServer.start(serverConfiguration)
        } catch {
            FileHandle.standardError.write(Data("courier-bench soak-mixed: the server did not start: \(error)\n".utf8))
            return 1
        }
        let downloads = FileManager.default.temporaryDirectory.appendingPathComponent("courier-soak-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: downloads, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: downloads) }

        var configuration = SessionConfiguration.default
        configuration.httpMaximumConnectionsPerHost = options.concurrency
        configuration.downloadDirectory = downloads
        let manager = HTTPSessionManager(
            baseURL: server.baseURL, configuration: configuration,
            securityPolicy: options.transport == .http ? .default : CourierSetup.trustingTestRoot)
        manager.completionQueue = DispatchQueue(label: "courier-bench.soak-mixed", attributes: .concurrent)

        // TestServer upgrades WebSockets over HTTP/1.1 only.
        let kinds = Kind.allCases.filter { $0 != .webSocket || options.transport != .http2 }
        print("server: TestServer, \(options.transport.rawValue); \(options.concurrency) in flight; \(kinds.count) kinds")
        print("start: RSS \(SoakBench.format(SoakBench.residentMiB())), \(Self.openDescriptors()) descriptors")
        let tally = Tally()
        let started = ContinuousClock.now
        for round in 1...options.rounds {
            tally.claimed.store(0, ordering: .relaxed)
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<options.concurrency {
                    group.addTask {
                        while true {
                            let index = tally.claimed.wrappingAdd(1, ordering: .relaxed).oldValue
                            guard index < options.perRound else { return }
                            let kind = kinds[index % kinds.count]
                            if case .unexpected(let what) = await Self.runKind(kind, manager: manager, server: server) {
                                tally.unexpected.withLock { $0["\(kind.rawValue): \(what)", default: 0] += 1 }
                            }
                        }
                    }
                }
            }
            let seconds = (ContinuousClock.now - started).seconds
            print(
                "round \(round): RSS \(SoakBench.format(SoakBench.residentMiB())), \(Self.openDescriptors()) descriptors, "
                    + "\(Self.files(in: downloads)) files in the download directory, \(Int(Double(round * options.perRound) / seconds)) tasks/s")
        }
        await manager.invalidate(cancelingTasks: false)
        print("manager invalidated: RSS \(SoakBench.format(SoakBench.residentMiB())), \(Self.openDescriptors()) descriptors")
        try? await server.shutdown()
        print("server shut down: RSS \(SoakBench.format(SoakBench.residentMiB())), \(Self.openDescriptors()) descriptors")
        let failures = tally.unexpected.withLock { $0 }
        for (what, count) in failures.sorted(by: { $0.key < $1.key }) { print("unexpected: \(what) ×\(count)") }
        print("unexpected endings: \(failures.values.reduce(0, +))")
        return failures.isEmpty ? 0 : 3
    }

    // MARK: - The kinds

    private static func runKind(_ kind: Kind, manager: HTTPSessionManager, server: TestServer) async -> Verdict {
        do {
            switch kind {
            case .asyncGET:
                let response = try await manager.get("get", parameters: ["soak": "1"])
                return Self.status(response.response.status.code, 200)
            case .callbackGET:
                return await withCheckedContinuation { continuation in
                    manager.get(
                        "get", parameters: ["soak": "2"],
                        success: { _, _ in continuation.resume(returning: .expected) },
                        failure: { _, error in continuation.resume(returning: .unexpected("\(error.code)")) })
                }
            case .postJSON:
                let response = try await manager.post("post", parameters: ["name": "Ada", "tags": ["a", "b"]])
                return Self.status(response.response.status.code, 200)
            case .streamedUpload:
                let chunk = ByteBuffer(repeating: 0x61, count: 16_384)
                let body = RequestBody.stream(
                    AsyncThrowingStream<ByteBuffer, any Error> { continuation in
                        for _ in 0..<4 { continuation.yield(chunk) }
                        continuation.finish()
                    }, length: .known(65_536))
                let request = Request(method: .post, url: server.url("/courier/upload"), body: body)
                let response = try await manager.response(for: request, serializer: DataResponseSerializer())
                return Self.status(response.response.status.code, 200)
            case .download:
                let response = try await manager.download(Request(url: server.url("/courier/file/65536")))
                let size = (try? FileManager.default.attributesOfItem(atPath: response.fileURL.path)[.size] as? Int) ?? -1
                try? FileManager.default.removeItem(at: response.fileURL)
                return size == 65_536 ? .expected : .unexpected("\(size) bytes")
            case .cutShort:
                return await Self.expectFailure(manager, Request(url: server.url("/courier/truncated/1000")))
            case .reset:
                return await Self.expectFailure(manager, Request(url: server.url("/courier/reset")))
            case .idleTimeout:
                var request = Request(url: server.url("/courier/slow-body/3?interval=1"))
                request.options.timeoutInterval = 0.1
                return await Self.expectFailure(manager, request, .timedOut)
            case .streamCancelled:
                let stream = try await manager.stream(Request(url: server.url("/courier/big/4000000")))
                var iterator = stream.body.makeAsyncIterator()
                guard try await iterator.next() != nil else { return .unexpected("no first chunk") }
                stream.task.cancel()
                return .expected
            case .redirects:
                let response = try await manager.data(for: Request(url: server.url("/redirect/2")))
                return Self.status(response.response.status.code, 200)
            case .retried503:
                var request = Request(url: server.url("/status/503"))
                var policy = RetryPolicy(retryLimit: 1)
                policy.initialBackoff = .milliseconds(1)
                request.interceptor = policy
                return await Self.expectFailure(manager, request)
            case .events:
                var events = 0
                let stream = manager.eventStream(
                    Request(url: server.url("/courier/sse?count=3")), options: .init(maximumReconnectionsWithoutEvent: 0))
                for try await _ in stream {
                    events += 1
                    if events == 3 { break }
                }
                return events == 3 ? .expected : .unexpected("\(events) events")
            case .cancelledBeforeResume:
                // The completion runs once, cancelled, though the task never started (a hang here is a finding).
                return await withCheckedContinuation { continuation in
                    let task = manager.dataTask(with: Request(url: server.url("/get"))) { _, _, error in
                        continuation.resume(returning: error?.code == .cancelled ? .expected : .unexpected("ended with \(String(describing: error?.code))"))
                    }
                    task.cancel()
                }
            case .callerCancelled:
                // The caller's Swift task, cancelled once the first body bytes arrived (the event
                // this kind is about) and awaited here: it does not outlive this function.
                let (firstBytes, arrived) = AsyncStream<Void>.makeStream()
                let caller = Task {
                    defer { arrived.finish() }
                    return try await manager.response(
                        for: Request(url: server.url("/courier/slow-body/5?interval=0.05")), serializer: DataResponseSerializer(),
                        downloadProgress: { _ in arrived.yield() })
                }
                for await _ in firstBytes { break }
                caller.cancel()
                switch await caller.result {
                case .success: return .unexpected("finished although cancelled")
                case .failure(let error as CourierError) where error.code == .cancelled: return .expected
                case .failure(let error): return .unexpected("\(error)")
                }
            case .gzip:
                let response = try await manager.data(for: Request(url: server.url("/gzip")))
                return Self.status(response.response.status.code, 200)
            case .webSocket:
                var components = URLComponents(url: server.url("/courier/websocket/echo"), resolvingAgainstBaseURL: false)!
                components.scheme = components.scheme == "https" ? "wss" : "ws"
                let task = manager.webSocketTask(with: Request(url: components.url!))
                task.resume()
                try await task.send(.text("soak"))
                var iterator = task.messages.makeAsyncIterator()
                let message = try await iterator.next()
                await task.close()
                guard case .text("soak") = message else { return .unexpected("echo \(String(describing: message))") }
                return .expected
            }
        } catch {
            return .unexpected("\(error)")
        }
    }

    private static func status(_ code: Int, _ expected: Int) -> Verdict {
        code == expected ? .expected : .unexpected("status \(code)")
    }

    /// A request that must fail (with `code` when given).
    private static func expectFailure(
        _ manager: HTTPSessionManager, _ request: Request, _ code: CourierError.Code? = nil
    ) async -> Verdict {
        do {
            let response = try await manager.data(for: request)
            return .unexpected("succeeded with \(response.response.status.code)")
        } catch {
            if let code, error.code != code { return .unexpected("\(error.code), not \(code)") }
            return .expected
        }
    }

    // MARK: - What the process holds

    static func openDescriptors() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
    }

    private static func files(in directory: URL) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: directory.path).count) ?? -1
    }

    private struct Failure: Error, CustomStringConvertible { let description: String }

    private static func parse(_ arguments: [String]) throws -> Options {
        var options = Options()
        var index = 0
        func value(_ option: String) throws -> String {
            index += 1
            guard index < arguments.count else { throw Failure(description: "\(option) needs a value") }
            return arguments[index]
        }
        func number(_ option: String) throws -> Int {
            guard let number = Int(try value(option)), number > 0 else { throw Failure(description: "\(option) takes a positive number") }
            return number
        }
        while index < arguments.count {
            let option = arguments[index]
            switch option {
            case "--rounds": options.rounds = try number(option)
            case "--per-round": options.perRound = try number(option)
            case "--concurrency": options.concurrency = try number(option)
            case "--transport":
                let name = try value(option)
                guard let transport = Transport(rawValue: name) else { throw Failure(description: "--transport http|https|http2, not \(name)") }
                options.transport = transport
            default: throw Failure(description: "unknown option \(option)")
            }
            index += 1
        }
        return options
    }
}
