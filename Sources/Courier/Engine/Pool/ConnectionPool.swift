import Foundation
import Logging
import Metrics
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// Courier's own connections, for `http` and `https` URLs, directly or through a proxy
/// (``ProxyRoute``, part of the key: routes never share a connection): HTTP/1.1, and HTTP/2 where
/// a TLS server chooses it through ALPN (``HTTP2Connection``).
///
/// It replaced AsyncHTTPClient for these requests: AHC's per-request machinery (request
/// validation, a pool state machine, a request state machine, a thread hop per event when the
/// connection is not on the task's loop) cost about half again as much CPU per request; this pool
/// does the same work with one lock and no hop. A connection's events are handled on its own loop.
///
/// The pool is a thin driver of ``ConnectionPoolStateMachine``, which makes every decision (see
/// there: caps, HTTP/2 streams and connections across loops, GOAWAY and the limits it teaches,
/// idle connections, back-off after failed connects). Each event takes the pool's lock once, feeds
/// the machine, and the actions it returns (open a connection, run a hop on one, fail a hop, close
/// a connection, start a connection's idle clock, schedule the back-off timer) run after the lock
/// is released. No other lock is taken under the pool's: a hop's own state (its phase, its
/// cancellation) is marked after, by whoever runs it (``EngineHop/startsRunning(on:)``,
/// ``EngineHop/markWaiting(for:)``).
///
/// - `https`: TCP, then TLS through ``TLSConnector`` (the security policy evaluates the whole
///   chain inside the handshake), then what ALPN chose.
/// - A stream the server did not process (REFUSED_STREAM, or above GOAWAY's last stream) goes
///   again on another connection. So does a hop handed a stream just as the GOAWAY arrived (the
///   pool decides under its lock, the stream opens on the connection's loop, where the GOAWAY may
///   have been read meanwhile): swift-nio-http2 refuses its HEADERS, nothing went out, and the
///   connection carries on with the streams the server is finishing.
/// - An idle HTTP/1.1 connection is reused most-recently-released first (the least likely to have
///   been closed by the server meanwhile), on the caller's loop when one is idle there; one the
///   server said it would have closed by now (`Keep-Alive: timeout`) is closed instead. Idle
///   connections (HTTP/2: with no stream) close after ``NIOEngine/Configuration/connectionIdleTimeout``.
/// - A hop whose connection closed under it before any of the response arrived goes again as
///   ``ResendRule`` allows, on a new connection only: any kept-alive one, idle or just given
///   back, may be closing too (a server may close a connection right after a response that said
///   keep-alive). The close of the connection it lost makes room for one, and a new connection
///   goes first to such a hop (``ConnectionWaiters``); at the cap, the longest idle connection is
///   closed to make room too. A hop handed a connection that turned out closed goes elsewhere the
///   same way, a few times at most.
/// - A connection is reused only when both sides kept it alive and the request was sent whole.
/// - A request HTTP/2 cannot carry goes over HTTP/1.1, to the same origin's connections whose TLS
///   offers only `http/1.1` (``Key/http1Only``, pooled apart): one the server refused with
///   HTTP_1_1_REQUIRED (as ``ResendRule`` allows; the origin's later requests go there too), or
///   one whose header block does not fit in one of the server's frames (that request alone).
final class ConnectionPool: Sendable {
    typealias StateMachine = ConnectionPoolStateMachine<EngineHop, PooledConnection>

    /// Where connections go.
    struct Key: Hashable, Sendable, CustomStringConvertible {
        let host: String
        let port: Int
        /// Whether connections speak TLS (`https`).
        var tls = false
        /// How connections reach the origin: directly, or through which proxy and how. Requests on
        /// different routes never share a connection.
        var route = ProxyRoute.direct
        /// The Unix-domain socket connections go to instead of TCP to ``host`` and ``port``
        /// (``NIOEngine/Configuration/unixSocketPaths``); nil for TCP. Such a key's route is
        /// ``ProxyRoute/direct``.
        var socketPath: String?
        /// Whether TLS offers only HTTP/1.1 through ALPN: connections for requests HTTP/2 cannot
        /// carry (the server answered HTTP_1_1_REQUIRED, or the request's header block does not
        /// fit in one frame), pooled apart from the origin's others. Only for a TLS key.
        var http1Only = false

        /// Whether connections may speak HTTP/2: TLS, with ALPN offering it.
        var offersHTTP2: Bool { self.tls && !self.http1Only }

        /// The same origin and route, over connections whose TLS offers only HTTP/1.1.
        var overHTTP1Only: Key {
            var key = self
            key.http1Only = true
            return key
        }

        /// The port the scheme implies, which a `Host` field leaves out.
        var defaultPort: Int { self.tls ? Self.httpsPort : Self.httpPort }
        private static let httpPort = URL.defaultPort(forScheme: "http") ?? 80
        private static let httpsPort = URL.defaultPort(forScheme: "https") ?? 443
        var description: String {
            var origin = "\(self.tls ? "https" : "http")://\(self.host):\(self.port)"
            if self.http1Only { origin += " (HTTP/1.1 only)" }
            if let socketPath = self.socketPath { origin += " (through the Unix socket \(socketPath))" }
            return self.route == .direct ? origin : "\(origin) (\(self.route))"
        }
    }

    struct Settings: Sendable {
        var connectTimeout: TimeAmount
        /// The proxies, if any.
        var proxy: ProxyConfiguration?
        /// The Unix-domain sockets that reach hosts, by lower-case host name.
        var unixSocketPaths: [String: String]
        /// How names are looked up: the configuration's table and resolver, else the system's.
        var hostLookup: HostLookup
        var idleTimeout: TimeAmount
        /// An idle HTTP/2 connection's PING interval and timeout, and its idle timeout.
        var http2: HTTP2ConnectionStateMachine.Configuration
        /// The state machine's caps and back-off.
        var stateMachine: StateMachine.Configuration
        /// How many times its compressed size a response body may grow to when decompressed
        /// (each response's ``ResponseInflater`` checks it), or nil for no decompression.
        var decompressionRatio: Int?
        /// Where the count of open connections goes (``OpenConnectionsMeter``).
        var openConnections: OpenConnectionsMeter
        /// When a request body waits for `100 Continue`, and for how long at most.
        var expectContinue: ExpectContinue
        /// The `User-Agent` of a request that names none (``NIOEngine/Configuration/userAgent``).
        var userAgent: String?

        init(_ configuration: NIOEngine.Configuration) {
            self.expectContinue = ExpectContinue(configuration)
            self.userAgent = configuration.userAgent
            self.connectTimeout = .seconds(clamping: configuration.connectTimeout, to: 0...1e9, nan: 10)
            self.idleTimeout = .seconds(clamping: configuration.connectionIdleTimeout, nan: 60)
            self.http2 = HTTP2ConnectionStateMachine.Configuration(configuration, idleTimeout: self.idleTimeout, connectTimeout: self.connectTimeout)
            let maximumConnections = max(1, configuration.maximumConnectionsPerHost)
            self.stateMachine = StateMachine.Configuration(
                maximumConnectionsPerHost: maximumConnections,
                http2MaximumConnectionsPerHost: min(maximumConnections, max(1, configuration.http2MaximumConnectionsPerHost)),
                http2MaximumStreamsPerConnection: max(1, configuration.http2MaximumStreamsPerConnection))
            self.proxy = configuration.proxy
            self.unixSocketPaths = Dictionary(
                configuration.unixSocketPaths.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { first, _ in first })
            self.hostLookup = HostLookup(table: HostAddressTable(configuration.hostAddresses), resolver: configuration.hostNameResolver)
            self.openConnections = OpenConnectionsMeter(factory: configuration.metricsFactory ?? MetricsSystem.factory)
            switch configuration.decompression {
            case .disabled:
                self.decompressionRatio = nil
            case .enabled(let ratio):
                self.decompressionRatio = max(1, ratio)
            }
        }
    }

    let settings: Settings
    /// Where connection events go (`.debug`), if anywhere.
    let logger: Logger?
    /// How many of this pool's connection objects are alive (a check that closed ones are freed).
    let liveConnections = Atomic<Int>(0)
    private let state: NIOLockedValueBox<StateMachine>

    /// TLS for `https` keys; nil for a pool that carries cleartext only.
    let tls: TLSConnector?
    /// The Digest challenges of forwarding proxies, answered by later requests through them.
    let proxyDigestChallenges = ProxyDigestChallenges()
    /// TLS like ``tls`` with ALPN offering only HTTP/1.1, made the first time a key needs it
    /// (``http1OnlyTLS``).
    private let http1OnlyTLSConnector = NIOLockedValueBox<TLSConnector?>(nil)

    /// - Parameter loops: The event loops connections may open on (a host's second HTTP/2
    ///   connection goes to another loop than its first); none: each on its request's loop.
    init(settings: Settings, tls: TLSConnector? = nil, logger: Logger? = nil, loops: [any EventLoop] = []) {
        self.settings = settings
        self.state = NIOLockedValueBox(StateMachine(configuration: settings.stateMachine, loops: loops))
        self.tls = tls
        self.logger = logger
    }

    /// TLS like ``tls`` whose ALPN offers only HTTP/1.1: for keys that go over HTTP/1.1 only
    /// (``Key/http1Only``) and for WebSockets (the upgrade is an HTTP/1.1 request). Made the first
    /// time one needs it (a context per policy); ``tls`` itself when it offers only HTTP/1.1.
    var http1OnlyTLS: TLSConnector? {
        guard let tls = self.tls else { return nil }
        if tls.applicationProtocols == [.http1_1] { return tls }
        return self.http1OnlyTLSConnector.withLockedValue { connector in
            if let connector { return connector }
            let made = tls.offering([.http1_1])
            connector = made
            return made
        }
    }

    /// Where requests for `url` go: `http` (or `https` when the pool has TLS) with a host; nil
    /// for other URLs.
    func key(for url: URL) -> Key? {
        guard var key = Self.key(for: url), !key.tls || self.tls != nil else { return nil }
        // An `http+unix` URL names its socket itself: no map, no proxy.
        guard key.socketPath == nil else { return key }
        if !self.settings.unixSocketPaths.isEmpty,
            let path = self.settings.unixSocketPaths[key.host.lowercased()] ?? self.settings.unixSocketPaths["*"]
        {
            // The host's Unix-domain socket reaches it itself: no proxy.
            key.socketPath = path
        } else {
            key.route = self.settings.proxy?.route(for: url) ?? .direct
        }
        return key
    }

    /// The ports a TCP connection can reach: Foundation parses `http://host:99999/` (a `Location`
    /// a server sends, or a caller's URL), which no socket address can hold.
    static let portRange = 0...65535

    /// The host name of a request to an `http+unix` or `https+unix` URL.
    static let unixSocketHost = "localhost"

    /// Where requests for `url` go: `http` and `https` URLs with a host, and `http+unix` and
    /// `https+unix` URLs with a socket path (`URL(unixSocketPath:target:tls:webSocket:)`);
    /// nil for others.
    static func key(for url: URL) -> Key? {
        // Every hop's. A plain URL is read in one pass over its string (``HTTPURLParts``).
        if let origin = HTTPURLParts.origin(of: url) { return Key(host: origin.host, port: origin.port, tls: origin.isHTTPS) }
        return Self.keyReadByFoundation(for: url)
    }

    /// ``key(for:)`` read with Foundation's accessors: for any URL (a test checks both ways agree
    /// on the plain ones).
    static func keyReadByFoundation(for url: URL) -> Key? {
        // Each part of the URL is read once (each read makes a new string of it), and
        // the port comes from the library's one origin rule (`URL.defaultPort(forScheme:)`).
        if let socket = url.unixSocketTarget {
            // The socket reaches the server; the name it is known by there is `localhost` (in
            // `Host`, `:authority` and TLS's server name), as curl and Go's Docker clients send.
            let port = URL.defaultPort(forScheme: socket.tls ? "https" : "http") ?? 80
            return Key(host: Self.unixSocketHost, port: port, tls: socket.tls, socketPath: socket.path)
        }
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let port = url.port ?? URL.defaultPort(forScheme: scheme), Self.portRange.contains(port),
            let host = url.requestHost, !host.isEmpty
        else {
            return nil
        }
        return Key(host: host, port: port, tls: scheme == "https")
    }

    // MARK: Hops

    /// Runs `hop` on a stream of an HTTP/2 connection with room, an idle connection to its key,
    /// else on a new one when the cap allows, else when a connection comes free. A hop that goes
    /// over HTTP/1.1 only, or whose origin wants HTTP/1.1, goes to that origin's connections that
    /// offer only HTTP/1.1 (``ConnectionPoolStateMachine/destination(of:http1Only:)``).
    func execute(_ hop: EngineHop, preferredLoop: any EventLoop) {
        let (cancellation, needsNewConnection, http1Only) = hop.state.withLockedValue {
            ($0.cancellation, $0.needsNewConnection, $0.http1Only)
        }
        if let cancellation {
            hop.end(.failure(cancellation))
            return
        }
        let now = NIODeadline.now()
        let (actions, key) = self.state.withLockedValue { machine in
            let key = machine.destination(of: hop.key, http1Only: http1Only)
            return (machine.executeRequest(hop, key: key, preferredLoop: preferredLoop, needsNewConnection: needsNewConnection, now: now), key)
        }
        // Queued (unless a connection took it or it ended by now): a cancellation that came
        // meanwhile saw no waiting hop, so it is taken out of the queue here. A hop these actions
        // ran or failed was not queued.
        if !self.run(actions, handingOver: hop), let cancellation = hop.markWaiting(for: key), self.removeWaiter(hop, key: key) {
            hop.end(.failure(cancellation))
        }
    }

    /// How many hops wait for a connection, all hosts together.
    var waitingHopCount: Int {
        self.state.withLockedValue { $0.waitingCount }
    }

    /// How many connections carry nothing (idle HTTP/1.1 ones, ready HTTP/2 ones with no stream),
    /// all hosts together, for tests and diagnostics.
    var idleConnectionCount: Int {
        self.state.withLockedValue { $0.idleCount }
    }

    /// How many hosts the pool holds anything for (a connection, open or opening, a waiting hop or
    /// a back-off), for tests and diagnostics: a host with none of these leaves the pool.
    var hostCount: Int {
        self.state.withLockedValue { $0.hosts.count }
    }

    /// The HTTP/2 connections to `key` (starting, active or draining), for tests and diagnostics.
    func http2Connections(to key: Key) -> [HTTP2Connection] {
        self.state.withLockedValue { machine in
            machine.hosts[key]?.http2.compactMap { entry in
                if case .http2(let connection) = entry.connection { connection } else { nil }
            } ?? []
        }
    }

    /// Takes a cancelled hop out of the queue of `key`, where it waits; false when it was not
    /// waiting any more.
    func removeWaiter(_ hop: EngineHop, key: Key) -> Bool {
        self.state.withLockedValue { $0.cancelWaiter(hop, key: key) }
    }

    /// An HTTP/1.1 connection finished a hop and may carry another: a waiter gets it, else it
    /// idles (or it closes, when the pool is shut down). One that finished a hop never goes to a
    /// hop that goes only on a new connection (``ConnectionWaiters``).
    func release(_ connection: HTTP1Connection) {
        let reusableUntil = connection.reusableUntil
        self.run(self.state.withLockedValue { $0.connectionReleased(.http1(connection), key: connection.key, reusableUntil: reusableUntil) })
    }

    /// An idle connection wants to close after its idle timeout; false when it was leased meanwhile.
    func removeIdle(_ connection: HTTP1Connection) -> Bool {
        self.state.withLockedValue { $0.idleTimeoutReached(connection.id, key: connection.key) }
    }

    /// Sends `hop` again (``ResendRule/Reason``): on a new connection when its connection closed
    /// under it before any of the response arrived (``ResendRule`` said it may go again; any other
    /// kept-alive one may be closing too) or an HTTP/2 server said it did not process it; over
    /// HTTP/1.1 when the HTTP/2 server answered HTTP_1_1_REQUIRED (the origin's later requests go
    /// so too) or its header block does not fit in one of the server's frames.
    func resend(_ hop: EngineHop, reason: ResendRule.Reason = .closed) {
        switch reason {
        case .closed, .notProcessed, .notProcessedWithError:
            self.logger?.debug("courier: sending again on another connection", metadata: ["request": "\(hop.request.summary)"])
        case .http1Required:
            self.logger?.debug("courier: the server wants HTTP/1.1, sending again so", metadata: ["request": "\(hop.request.summary)"])
            self.originRequiresHTTP1(hop.key)
        case .headTooLargeForHTTP2:
            self.logger?.debug("courier: header fields too large for an HTTP/2 frame, sending over HTTP/1.1", metadata: ["request": "\(hop.request.summary)"])
        }
        do {
            try hop.prepareResend(reason)
        } catch {
            hop.end(.failure(error))
            return
        }
        hop.exchange.hopWillBeSentAgain()
        self.execute(hop, preferredLoop: hop.exchange.eventLoop)
    }

    /// The server of `key` answered HTTP_1_1_REQUIRED: its later requests go over connections
    /// that offer only HTTP/1.1, for the pool's life.
    func originRequiresHTTP1(_ key: Key) {
        self.logger?.debug("courier: the server wants HTTP/1.1; its requests go so from now on", metadata: ["origin": "\(key)"])
        self.state.withLockedValue { $0.originRequiresHTTP1(key) }
    }

    // MARK: Connections

    /// Runs what the state machine decided, after the pool's lock was released. Returns whether
    /// the actions ran or failed `watched`. `failedSetup`: the actions are a failed connect's,
    /// whose times go to the transactions of the hops it fails.
    @discardableResult
    private func run(
        _ actions: consuming StateMachine.Actions, handingOver watched: EngineHop? = nil, failedSetup: ConnectionEstablishment? = nil
    ) -> Bool {
        var handedOver = false
        for action in actions {
            switch action {
            case .createConnection(let id, let key, let loop):
                self.connect(key, id: id, on: loop)
            case .run(let hop, let connection, let carriesSetup):
                handedOver = handedOver || hop === watched
                self.start(hop, on: connection, becomingBusy: false, carriesSetup: carriesSetup)
            case .runStream(let hop, let connection, let becomingBusy, let carriesSetup):
                handedOver = handedOver || hop === watched
                self.start(hop, on: connection, becomingBusy: becomingBusy, carriesSetup: carriesSetup)
            case .fail(let hop, let error):
                handedOver = handedOver || hop === watched
                if let failedSetup { hop.recordFailedSetup(failedSetup) }
                hop.end(.failure(error))
            case .close(let connection):
                connection.channel.close(promise: nil)
            case .startIdleClock(.http1(let connection)):
                connection.startIdleClock()
            case .startIdleClock(.http2(let connection)):
                connection.becameIdle()
            case .scheduleBackoffTimer(let key, let delay):
                self.logger?.debug("courier: connects failed, backing off", metadata: ["origin": "\(key)", "delay": "\(delay)"])
                let loop = self.backoffLoop
                loop.scheduleTask(in: delay) { self.run(self.state.withLockedValue { $0.backoffEnded(key: key) }) }
            }
        }
        return handedOver
    }

    /// Starts `hop` on `connection` (an HTTP/2 one opens a stream for it), unless it was cancelled
    /// meanwhile: the connection then ends it with its cancellation. `carriesSetup`: the
    /// connection goes to it straight from opening (its transaction may report the setup).
    private func start(_ hop: EngineHop, on connection: PooledConnection, becomingBusy: Bool, carriesSetup: Bool) {
        switch connection {
        case .http1(let connection):
            hop.startsRunning(on: connection)
            connection.run(hop, carriesSetup: carriesSetup)
        case .http2(let connection):
            hop.startsRunning(on: connection)
            connection.run(hop, becomingBusy: becomingBusy, carriesSetup: carriesSetup)
        }
    }

    /// Where back-off timers run: the first loop connections may open on.
    private var backoffLoop: any EventLoop {
        self.state.withLockedValue { $0.loops.first } ?? MultiThreadedEventLoopGroup.singleton.any()
    }

    func connectionOpened(_ connection: HTTP1Connection) {
        self.logger?.debug("courier: HTTP/1.1 connection opened", metadata: ["origin": "\(connection.key)"])
        let actions = self.state.withLockedValue { $0.connectionCreated(.http1(connection), key: connection.key, speaking: .http1_1) }
        // After the machine counts it: a close that came already is reported now.
        connection.channel.closeFuture.whenComplete { _ in self.connectionClosed(.http1(connection)) }
        self.run(actions)
    }

    /// A connection to `key` could not be opened; `setup` says how far it went, for the
    /// transactions that fail with it.
    func connectionFailed(_ id: PoolConnectionID, key: Key, error: any Error, setup: ConnectionEstablishment? = nil) {
        self.logger?.debug("courier: connection failed", metadata: ["origin": "\(key)", "error": "\(error)"])
        self.run(self.state.withLockedValue { $0.connectionFailed(id, key: key, error: error) }, failedSetup: setup)
    }

    private func connectionClosed(_ connection: PooledConnection) {
        self.logger?.debug("courier: connection closed", metadata: ["origin": "\(connection.key)"])
        // What closed an HTTP/2 connection, if it failed: a TLS alert that came after the
        // handshake (TLS 1.3's refusal of a client certificate) is why its connect failed.
        var error: (any Error)?
        if case .http2(let http2) = connection { error = http2.closingError }
        self.run(self.state.withLockedValue { $0.connectionClosed(connection.id, key: connection.key, error: error) })
    }

    // MARK: HTTP/2

    /// An HTTP/2 connection opened: it counts as opening until the server's first SETTINGS.
    func http2ConnectionOpened(_ connection: HTTP2Connection) {
        self.logger?.debug("courier: HTTP/2 connection opened", metadata: ["origin": "\(connection.key)"])
        let actions = self.state.withLockedValue { $0.connectionCreated(.http2(connection), key: connection.key, speaking: .http2) }
        connection.channel.closeFuture.whenComplete { _ in self.connectionClosed(.http2(connection)) }
        self.run(actions)
    }

    /// The server's SETTINGS: the first makes the connection ready; each may change how many
    /// streams it takes. Waiting hops go on it as far as there is room.
    func http2Settings(of connection: HTTP2Connection, maximumStreams: Int?) {
        self.run(self.state.withLockedValue { $0.http2SettingsReceived(connection.id, key: connection.key, maximumStreams: maximumStreams) })
    }

    /// The server sent GOAWAY: no new stream on the connection; it closes once its streams end, and
    /// hops still waiting get another connection.
    func http2GoingAway(_ connection: HTTP2Connection, lastStreamID: Int, namedAnError: Bool) {
        self.logger?.debug("courier: HTTP/2 connection going away", metadata: ["origin": "\(connection.key)"])
        self.run(self.state.withLockedValue {
            $0.http2GoAwayReceived(connection.id, key: connection.key, lastStreamID: lastStreamID, namedAnError: namedAnError)
        })
    }

    /// A later GOAWAY on a draining connection named a lower last stream: the host may process
    /// fewer streams a connection than the first GOAWAY said.
    func http2LastStreamIDLowered(on connection: HTTP2Connection, to lastStreamID: Int, namedAnError: Bool) {
        self.run(self.state.withLockedValue {
            $0.http2LastStreamIDLowered(connection.id, key: connection.key, to: lastStreamID, namedAnError: namedAnError)
        })
    }

    /// A stream of `connection` closed (or never opened): the next waiting hop takes its place.
    func streamClosed(on connection: HTTP2Connection) {
        self.run(self.state.withLockedValue { $0.http2StreamClosed(connection.id, key: connection.key) })
    }

    /// An HTTP/2 connection with no stream wants to close after its idle timeout; false when a
    /// stream opened on it meanwhile.
    func removeIdleHTTP2(_ connection: HTTP2Connection) -> Bool {
        self.state.withLockedValue { $0.http2IdleTimeoutReached(connection.id, key: connection.key) }
    }

    /// An HTTP/2 connection that can take no new stream (closing, or closed but its close not
    /// processed yet): no hop is handed to it any more.
    func http2ConnectionUnusable(_ connection: HTTP2Connection) {
        self.state.withLockedValue { $0.http2ConnectionUnusable(connection.id, key: connection.key) }
    }

    // MARK: Shutdown

    /// Fails the waiting hops, closes every connection (a hop running on one fails as its
    /// connection closes) and refuses new hops.
    func shutdown() -> [EventLoopFuture<Void>] {
        let actions = self.state.withLockedValue { $0.shutdown() }
        var closed: [EventLoopFuture<Void>] = []
        for action in actions {
            if case .close(let connection) = action {
                let channel = connection.channel
                closed.append(channel.close().recover { _ in }.flatMap { channel.closeFuture })
            } else {
                self.run(StateMachine.Actions(action))
            }
        }
        return closed
    }
}

/// A connection of the pool, as its state machine holds it.
enum PooledConnection: PoolConnection, Sendable {
    case http1(HTTP1Connection)
    case http2(HTTP2Connection)

    var id: PoolConnectionID {
        switch self {
        case .http1(let connection): connection.id
        case .http2(let connection): connection.id
        }
    }

    var channel: any Channel {
        switch self {
        case .http1(let connection): connection.channel
        case .http2(let connection): connection.channel
        }
    }

    var key: ConnectionPool.Key {
        switch self {
        case .http1(let connection): connection.key
        case .http2(let connection): connection.key
        }
    }

    var eventLoop: any EventLoop { self.channel.eventLoop }
}


/// Why Courier's HTTP/1.1 path could not carry a hop.
enum ConnectionPoolError: Error, Hashable, CustomStringConvertible {
    /// The engine was shut down.
    case shutDown
    /// The server closed the connection before the response was complete.
    case closedBeforeResponseComplete
    /// The connection closed before any of the response arrived, on every one of `attempts`
    /// sends (``ResendRule``'s bound was reached).
    case closedBeforeAnswering(attempts: Int)
    /// An HTTP/2 server did not process the request (a GOAWAY naming an earlier stream as its last,
    /// or REFUSED_STREAM) on every one of `attempts` sends (``ResendRule``'s bound for those
    /// was reached).
    case notProcessed(attempts: Int)
    /// A streamed body's length differed from its declared length.
    case bodyLengthMismatch(declared: Int64, sent: Int64)
    /// The HTTP/2 server's SETTINGS allowed no stream (`SETTINGS_MAX_CONCURRENT_STREAMS` 0) on a
    /// connection with none open, and the host had no other connection that could take one.
    case noStreamsAllowed
    /// A kept-alive connection closed as the request went out, before any of the response (most
    /// often the server's idle timeout meeting the request): it was not sent again, its method
    /// (`method`) not being idempotent. `overHTTP2`: an HTTP/2 connection, which closed without a
    /// GOAWAY that could have said whether the server processed the request.
    case closedOnReuseNotResent(method: String, overHTTP2: Bool = false, reset: Bool = false)

    var description: String {
        switch self {
        case .shutDown: "the engine was shut down"
        case .closedBeforeResponseComplete: "the server closed the connection before the response was complete"
        case .closedBeforeAnswering(let attempts):
            attempts == 1
                ? "the server closed the connection before answering"
                : "the server closed the connection before answering, \(attempts) times in a row (the request was sent on a new connection each time after the first)"
        case .notProcessed(let attempts):
            "the server did not process the request (GOAWAY or REFUSED_STREAM), \(attempts) times in a row"
        case .bodyLengthMismatch(let declared, let sent): "the body declared \(declared) bytes and gave \(sent)"
        case .noStreamsAllowed:
            "the server allows no HTTP/2 streams (its SETTINGS_MAX_CONCURRENT_STREAMS is 0), so the request was not sent"
        case .closedOnReuseNotResent(let method, let overHTTP2, let reset):
            (overHTTP2
                ? "the server \(reset ? "reset" : "closed") the HTTP/2 connection, with no GOAWAY to say which requests it processed, as the request went out, before answering"
                : "the server \(reset ? "reset" : "closed") the kept-alive connection as the request went out, before answering (most often its idle timeout)")
                + "; \(method) is not idempotent, so Courier did not send it again, as the server may have processed it (an Idempotency-Key field, or a retrier that allows \(method), sends it again)"
        }
    }
}

extension URL {
    /// The host requests go to, as DNS, `Host` and a proxy's request line name it: Foundation's
    /// `host` (IDNA-encoded for a Unicode host), with a host that was percent-encoded in the URL
    /// (`b%C3%BCcher.example`, which Foundation decodes to UTF-8) encoded as IDNA too. Raw UTF-8
    /// went out in `Host`, which Go's server refuses with 400.
    ///
    /// Nil when the host, percent-decoded, holds a byte no host can
    /// (``isAcceptableDecodedHost(_:ipLiteral:)``): `https://x%0D%0AGET%20…/` decodes to a host
    /// with a line break, which would have ended the line of a proxy's `CONNECT` request.
    var requestHost: String? {
        // The host as the URL holds it is Foundation's `host` unless it has a percent sign (the
        // encoded form of a percent-encoded or Unicode host): decoding is only done then, not on
        // every request's ASCII host (Foundation's parser takes only a host's own characters).
        guard let encoded = self.host(percentEncoded: true) else { return nil }
        var host = encoded
        if encoded.utf8.contains(UInt8(ascii: "%")) {
            // Foundation gives an IP literal without its brackets; a colon can be in no other
            // encoded host (a decoded one is `%3A`).
            guard let decoded = self.host, Self.isAcceptableDecodedHost(decoded, ipLiteral: encoded.utf8.contains(UInt8(ascii: ":")))
            else { return nil }
            host = decoded
        }
        if host.utf8.allSatisfy({ $0 < 0x80 }) { return host }
        return Punycode.asciiHost(host) ?? host
    }

    /// Whether a percent-decoded host holds only what a host can: no control character, space or
    /// DEL, none of `#/<>?@[\]^|` (the WHATWG URL standard's forbidden host code points) nor the
    /// quote, backquote and braces (which curl refuses in a host name too), and no `:` or `%`
    /// outside an IPv6 literal (its colons and zone identifier, `fe80::1%eth0`). Letters beyond
    /// ASCII are left to IDNA.
    static func isAcceptableDecodedHost(_ host: String, ipLiteral: Bool) -> Bool {
        host.utf8.allSatisfy { byte in
            switch byte {
            case 0...0x20, 0x7F, UInt8(ascii: "\""), UInt8(ascii: "#"), UInt8(ascii: "/"), UInt8(ascii: "<"),
                UInt8(ascii: ">"), UInt8(ascii: "?"), UInt8(ascii: "@"), UInt8(ascii: "["), UInt8(ascii: "\\"),
                UInt8(ascii: "]"), UInt8(ascii: "^"), UInt8(ascii: "`"), UInt8(ascii: "{"), UInt8(ascii: "|"),
                UInt8(ascii: "}"):
                false
            case UInt8(ascii: ":"), UInt8(ascii: "%"): ipLiteral
            default: true
            }
        }
    }

    /// Whether the URL is an `http`, `https`, `ws` or `wss` one whose host, percent-decoded, holds
    /// a byte no host can (``requestHost`` is nil for it): for the error that names why such a URL
    /// cannot be requested. (A `+unix` URL's host is its socket's path, slashes and all.)
    var hasUnacceptableHost: Bool {
        guard let scheme = self.scheme?.lowercased(), ["http", "https", "ws", "wss"].contains(scheme),
            let encoded = self.host(percentEncoded: true), encoded.utf8.contains(UInt8(ascii: "%"))
        else { return false }
        return self.requestHost == nil
    }

    /// What an error says of a URL whose ``hasUnacceptableHost`` is true.
    static let unacceptableHostProblem = "the URL's host, percent-decoded, holds a control character, a space or a delimiter no host name can"
}
