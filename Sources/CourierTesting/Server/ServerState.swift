import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore

/// What a ``TestServer`` shares with its connections: custom routes, the request log and counter,
/// and the open connections (so that shutdown can close them).
///
/// Each piece has its own lock, taken once per request at most; connections are added and removed
/// once per connection.
final class ServerState: Sendable {
    struct Route: Sendable {
        var methods: Set<HTTPRequest.Method>?
        var handler: TestServer.Handler
    }

    let recordsRequests: Bool
    private let routes = NIOLockedValueBox<[String: [Route]]>([:])
    private let log = NIOLockedValueBox<[TestServer.Request]>([])
    private let counter = NIOLockedValueBox(0)
    private let versions = NIOLockedValueBox<[String: Int]>([:])
    private let streaming = NIOLockedValueBox<(waiting: Int, written: Int)>((0, 0))
    private let webSocketPings = NIOLockedValueBox(0)
    private let webSocketCloseCodes = NIOLockedValueBox<[UInt16]>([])
    /// Opening handshakes refused so far with `unavailable=` (``WebSocketRoute``), by request target.
    private let webSocketRefusals = NIOLockedValueBox<[String: Int]>([:])
    private let connections = NIOLockedValueBox<(open: [ObjectIdentifier: any Channel], accepted: Int, closed: Bool)>(([:], 0, false))

    init(recordsRequests: Bool) {
        self.recordsRequests = recordsRequests
    }

    // MARK: Routes

    func addRoute(_ path: String, methods: Set<HTTPRequest.Method>?, handler: @escaping TestServer.Handler) {
        self.routes.withLockedValue { routes in
            // A later registration for the same methods wins: put it first.
            routes[path, default: []].insert(Route(methods: methods, handler: handler), at: 0)
        }
    }

    enum RouteMatch {
        case none
        case handler(TestServer.Handler)
        case wrongMethod(allowed: [String])
    }

    func route(path: Substring, method: String) -> RouteMatch {
        guard let candidates = self.routes.withLockedValue({ $0[String(path)] }), !candidates.isEmpty else { return .none }
        let method = HTTPRequest.Method(method)
        for route in candidates where route.methods == nil || method.map({ route.methods!.contains($0) }) == true {
            return .handler(route.handler)
        }
        let allowed = Set(candidates.flatMap { $0.methods ?? [] }).map(\.rawValue).sorted()
        return .wrongMethod(allowed: allowed)
    }

    // MARK: Requests

    func didReceive(_ request: @autoclosure () -> TestServer.Request, version: String) {
        self.counter.withLockedValue { $0 += 1 }
        self.versions.withLockedValue { $0[version, default: 0] += 1 }
        if self.recordsRequests {
            let request = request()
            self.log.withLockedValue { $0.append(request) }
        }
    }

    var requestCount: Int { self.counter.withLockedValue { $0 } }

    var requestCountsByVersion: [String: Int] { self.versions.withLockedValue { $0 } }

    // MARK: Streamed bodies

    /// A streamed body started (`true`) or stopped (`false`) waiting for its channel to become writable.
    func streamedBodyWaits(_ waiting: Bool) {
        self.streaming.withLockedValue { $0.waiting += waiting ? 1 : -1 }
    }

    /// `count` more bytes of a streamed body were written.
    func streamedBodyWrote(_ count: Int) {
        self.streaming.withLockedValue { $0.written += count }
    }

    var streamedBodiesWaitingForWritability: Int { self.streaming.withLockedValue { $0.waiting } }

    var streamedBodyBytesWritten: Int { self.streaming.withLockedValue { $0.written } }

    var receivedRequests: [TestServer.Request] { self.log.withLockedValue { $0 } }

    // MARK: WebSockets

    /// A WebSocket route received a PING (and answered it, unless its mode is `silent`).
    func webSocketPingReceived() {
        self.webSocketPings.withLockedValue { $0 += 1 }
    }

    var webSocketPingsReceived: Int { self.webSocketPings.withLockedValue { $0 } }

    /// A WebSocket route received a client's close frame with `code` (1005 when it had none).
    func webSocketCloseReceived(_ code: UInt16) {
        self.webSocketCloseCodes.withLockedValue { $0.append(code) }
    }

    var webSocketCloseCodesReceived: [UInt16] { self.webSocketCloseCodes.withLockedValue { $0 } }

    /// Counts a refusal of an opening handshake to `target` when fewer than `limit` were refused;
    /// returns whether it refused.
    func refuseWebSocketUpgrade(to target: String, limit: Int) -> Bool {
        self.webSocketRefusals.withLockedValue { refusals in
            guard refusals[target, default: 0] < limit else { return false }
            refusals[target, default: 0] += 1
            return true
        }
    }

    func clearLog() {
        self.log.withLockedValue { $0.removeAll() }
        self.counter.withLockedValue { $0 = 0 }
        self.versions.withLockedValue { $0.removeAll() }
    }

    // MARK: Connections

    /// Tracks `channel` until it closes; returns false (and closes it) once the server is shutting down.
    func register(_ channel: any Channel) {
        let id = ObjectIdentifier(channel)
        let accepted = self.connections.withLockedValue { state -> Bool in
            guard !state.closed else { return false }
            state.open[id] = channel
            state.accepted += 1
            return true
        }
        guard accepted else {
            channel.close(promise: nil)
            return
        }
        channel.closeFuture.whenComplete { _ in
            self.connections.withLockedValue { _ = $0.open.removeValue(forKey: id) }
        }
    }

    /// How many connections were accepted so far.
    var connectionCount: Int { self.connections.withLockedValue { $0.accepted } }

    /// How many connections are open now.
    var openConnectionCount: Int { self.connections.withLockedValue { $0.open.count } }

    /// Stops accepting connections and returns the open ones.
    func closeAll() -> [any Channel] {
        self.connections.withLockedValue { state in
            state.closed = true
            return Array(state.open.values)
        }
    }
}
