import Foundation
import NIOConcurrencyHelpers

/// A client measured by awaiting its requests: each worker sends one, awaits it, sends the next.
protocol AsyncBenchClient: Sendable {
    /// Sends one GET for the bench URL, reads the whole body and tells whether the status was 200.
    func fetch() async -> Bool
    /// Closes the client's connections and releases its threads.
    func shutdown() async
}

/// A client measured through completion callbacks: each chain starts its next request from the
/// previous one's callback, as callback code does.
protocol CallbackBenchClient: Sendable {
    /// Sends one GET for the bench URL; `completion` gets whether the status was 200 with a body.
    func fetch(_ completion: @escaping @Sendable (Bool) -> Void)
    /// Closes the client's connections and releases its threads.
    func shutdown() async
}

/// One measured client, in the shape its API has.
enum BenchClient: Sendable {
    case async(any AsyncBenchClient)
    case callback(any CallbackBenchClient)
    /// A client in a process of its own, which measures itself (Go's).
    case external(GoClient)

    /// A client of `kind` for `url`, allowed `connections` connections to the host; for an
    /// `https` URL it trusts CourierTesting's root CA (URLSession cannot: see `--tls`).
    static func make(_ kind: Arguments.ClientKind, url: URL, connections: Int, http2: Bool, unixSocket: String?) -> BenchClient {
        switch kind {
        case .courier: .async(CourierClient(url: url, connections: connections))
        case .courierCallback: .callback(CourierCallbackClient(url: url, connections: connections))
        case .ahc: .async(AHCClient(url: url, connections: connections))
        case .urlsession: .async(URLSessionClient(url: url, connections: connections))
        case .courierURLSession: .async(CourierClient(url: url, connections: connections, engine: .urlSession))
        case .courierObserved: .async(CourierClient(url: url, connections: connections, instrumentation: .emptyChainAndMonitor))
        case .courierAdapted: .async(CourierClient(url: url, connections: connections, instrumentation: .adapterAndMonitor))
        case .courierNoStores: .async(CourierClient(url: url, connections: connections, instrumentation: .noStores))
        case .courierLean: .async(CourierClient(url: url, connections: connections, instrumentation: .lean))
        case .courierEngine: .async(EngineClient(url: url, connections: connections))
        case .courierUnix: .async(CourierClient(url: url, connections: connections, unixSocket: Self.socket(unixSocket, for: kind)))
        case .courierEngineUnix: .async(EngineClient(url: url, connections: connections, unixSocket: Self.socket(unixSocket, for: kind)))
        case .openapiCourier: .async(OpenAPIBenchClient(url: url, connections: connections, transport: .courier))
        case .openapiCourierLean: .async(OpenAPIBenchClient(url: url, connections: connections, transport: .courierLean))
        case .openapiAHC: .async(OpenAPIBenchClient(url: url, connections: connections, transport: .ahc))
        case .go: Self.go(url: url, connections: connections, http2: http2)
        }
    }

    /// The server's Unix-domain socket, or the bench ends saying that `kind` needs one.
    private static func socket(_ path: String?, for kind: Arguments.ClientKind) -> String {
        guard let path else {
            FileHandle.standardError.write(Data("courier-bench: \(kind.rawValue) needs nginx started by the bench (its Unix socket)\n".utf8))
            exit(2)
        }
        return path
    }

    /// Go's client, or the bench ends with why it could not start.
    private static func go(url: URL, connections: Int, http2: Bool) -> BenchClient {
        do {
            return .external(try GoClient(url: url, connections: connections, http2: http2))
        } catch {
            FileHandle.standardError.write(Data("courier-bench: \(error)\n".utf8))
            exit(1)
        }
    }

    func shutdown() async {
        switch self {
        case .async(let client): await client.shutdown()
        case .callback(let client): await client.shutdown()
        case .external(let client): client.shutdown()
        }
    }
}

/// Why requests failed, gathered from every client and printed after each run: a count of
/// failures says nothing of their cause. Numbers (ports, stream IDs) are kept as they are.
enum FailureReasons {
    private static let reasons = NIOLockedValueBox<[String: Int]>([:])

    /// Counts one failed request.
    static func record(_ reason: String) {
        reasons.withLockedValue { $0[reason, default: 0] += 1 }
    }

    /// The reasons counted since the last call, most frequent first, and forgets them.
    static func take() -> [(reason: String, count: Int)] {
        let taken = reasons.withLockedValue { reasons in
            defer { reasons = [:] }
            return reasons
        }
        return taken.map { (reason: $0.key, count: $0.value) }.sorted { $0.count > $1.count }
    }
}
