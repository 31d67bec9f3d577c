import Foundation
import Logging
import Metrics
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOHTTPCompression
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
/// - Connections per host are capped by ``NIOEngine/Configuration/maximumConnectionsPerHost``;
///   hops beyond the cap wait in order of arrival.
/// - `https`: TCP, then TLS through ``TLSConnector`` (the security policy evaluates the whole
///   chain inside the handshake), then what ALPN chose. Until a host's first TLS connection has
///   shown it speaks HTTP/1.1, one connection opens at a time, since an HTTP/2 one carries many
///   streams.
/// - HTTP/2: a hop takes a stream on a connection with room (the server's
///   `SETTINGS_MAX_CONCURRENT_STREAMS`, 100 until it says); when every connection is full another
///   opens within the cap. After GOAWAY a connection takes no new stream and closes once its
///   streams end; a stream the server did not process (REFUSED_STREAM, or above GOAWAY's last
///   stream) goes again on another connection. So does a hop handed a stream just as the GOAWAY
///   arrived (the pool decides under its lock, the stream opens on the connection's loop, where
///   the GOAWAY may have been read meanwhile): swift-nio-http2 refuses its HEADERS, nothing went
///   out, and the connection carries on with the streams the server is finishing.
/// - An idle HTTP/1.1 connection is reused most-recently-released first (the least likely to have
///   been closed by the server meanwhile), on the caller's loop when one is idle there; one the
///   server said it would have closed by now (`Keep-Alive: timeout`) is closed instead. Idle
///   connections (HTTP/2: with no stream) close after ``NIOEngine/Configuration/connectionIdleTimeout``.
/// - A hop whose connection closed under it before any of the response arrived goes again as
///   ``HTTP1ResendRule`` allows, on a new connection only: any kept-alive one, idle or just given
///   back, may be closing too (a server may close a connection right after a response that said
///   keep-alive). The close of the connection it lost makes room for one, and a new connection
///   goes first to such a hop; at the cap, the longest idle connection is closed to make room too.
/// - A connection is reused only when both sides kept it alive and the request was sent whole.
/// - A connection that fails to open fails the first waiting hop (no retries, as with AHC's
///   `retryConnectionEstablishment = false`).
///
/// Lock order: the pool's lock, then a hop's.
final class ConnectionPool: Sendable {
    /// Where connections go.
    struct Key: Hashable, Sendable, CustomStringConvertible {
        let host: String
        let port: Int
        /// Whether connections speak TLS (`https`).
        var tls = false
        /// How connections reach the origin: directly, or through which proxy and how. Requests on
        /// different routes never share a connection.
        var route = ProxyRoute.direct

        /// The port the scheme implies, which a `Host` field leaves out.
        var defaultPort: Int { self.tls ? 443 : 80 }
        var description: String {
            let origin = "\(self.tls ? "https" : "http")://\(self.host):\(self.port)"
            return self.route == .direct ? origin : "\(origin) (\(self.route))"
        }
    }

    struct Settings: Sendable {
        var connectTimeout: TimeAmount
        /// The proxies, if any.
        var proxy: ProxyConfiguration?
        var idleTimeout: TimeAmount
        /// An idle HTTP/2 connection's PING interval and timeout, and its idle timeout.
        var http2: HTTP2ConnectionStateMachine.Configuration
        var maximumConnectionsPerHost: Int
        /// The decompression limit, or nil for no decompression.
        var decompression: NIOHTTPDecompression.DecompressionLimit?
        /// The same limit as a ratio (an HTTP/2 stream's own inflater checks it), or nil for no
        /// decompression.
        var decompressionRatio: Int?
        /// Where the count of open connections goes (``OpenConnectionsMeter``).
        var openConnections: OpenConnectionsMeter
        /// When a request body waits for `100 Continue`, and for how long at most.
        var expectContinue: ExpectContinue

        init(_ configuration: NIOEngine.Configuration) {
            self.expectContinue = ExpectContinue(configuration)
            self.connectTimeout = .nanoseconds(Int64(min(configuration.connectTimeout, 1e9) * 1e9))
            self.idleTimeout = .nanoseconds(Int64(min(max(configuration.connectionIdleTimeout, 0.001), 1e9) * 1e9))
            self.http2 = HTTP2ConnectionStateMachine.Configuration(configuration, idleTimeout: self.idleTimeout)
            self.maximumConnectionsPerHost = max(1, configuration.maximumConnectionsPerHost)
            self.proxy = configuration.proxy
            self.openConnections = OpenConnectionsMeter(factory: configuration.metricsFactory ?? MetricsSystem.factory)
            switch configuration.decompression {
            case .disabled:
                self.decompression = nil
                self.decompressionRatio = nil
            case .enabled(let ratio):
                self.decompression = .ratio(max(1, ratio))
                self.decompressionRatio = max(1, ratio)
            }
        }
    }

    private struct Waiter {
        let hop: HTTP1Hop
        let preferredLoop: any EventLoop
    }

    /// An HTTP/2 connection and the streams open on it.
    private struct HTTP2Entry {
        let connection: HTTP2Connection
        var openStreams = 0
        /// The server's `SETTINGS_MAX_CONCURRENT_STREAMS` (100 until it says, or if it never does).
        var maximumStreams = 100
        /// The server's first SETTINGS arrived: streams may open.
        var isReady = false
        /// GOAWAY arrived: no new stream; the connection closes once its streams are done.
        var isDraining = false
        /// Streams opened on the connection in all its life.
        var streamsOpened = 0
        /// How many streams the connection may open in all its life: what the host was seen to
        /// process on one connection (``HostState/learnedStreamsPerConnection``), else no limit.
        var lifetimeLimit = Int.max

        var hasRoom: Bool {
            self.isReady && !self.isDraining && self.openStreams < self.maximumStreams && self.streamsOpened < self.lifetimeLimit
        }

        /// Counts a stream that opens on the connection.
        mutating func openStream() {
            self.openStreams += 1
            self.streamsOpened += 1
        }

        /// The connection opened all the streams it may: it takes no more, and closes once they end.
        var isSpent: Bool { self.streamsOpened >= self.lifetimeLimit }
    }

    private struct HostState {
        /// Idle connections, the most recently released last.
        var idle: [HTTP1Connection] = []
        /// HTTP/2 connections (opened, ready or draining).
        var http2: [HTTP2Entry] = []
        /// Connections opening or open (idle or running a hop).
        var openCount = 0
        /// Connections opening (an HTTP/2 one until the server's first SETTINGS).
        var connectingCount = 0
        /// Hops waiting for a connection, in order of arrival (a hop sent again arrives again),
        /// and which of them go only on a new connection.
        var waiters = ConnectionWaiters<Waiter>()
        /// What the host's last new TLS connection spoke (ALPN), once one opened.
        var learnedProtocol: TLSConnector.ApplicationProtocol?
        /// How many streams the host processes on one HTTP/2 connection, learned from a GOAWAY that
        /// left streams Courier had opened unprocessed (a server's `keepalive_requests`); nil until
        /// one did. New connections open no more streams than this in their life, so that requests
        /// are not sent to be dropped. Doubled when a connection that opened that many closes
        /// without a GOAWAY (the server would have taken more).
        var learnedStreamsPerConnection: Int?

        /// A GOAWAY on the connection at `index` named `lastStreamID`: if streams Courier opened
        /// were left unprocessed, the host's limit is what the server did process (at least one),
        /// for its other connections too. Returns those it leaves spent with no stream open, to
        /// close (they would otherwise wait for their idle timeout, taking a place under the cap).
        mutating func learn(fromGoAwayOn index: Int, lastStreamID: Int) -> [HTTP2Connection] {
            // Client streams are odd: 1, 3, 5… `lastStreamID` is the last the server processed.
            let processed = max(0, (lastStreamID + 1) / 2)
            guard processed < self.http2[index].streamsOpened else { return [] }
            let limit = max(1, min(processed, self.learnedStreamsPerConnection ?? .max))
            self.learnedStreamsPerConnection = limit
            var spent: [HTTP2Connection] = []
            for other in self.http2.indices {
                self.http2[other].lifetimeLimit = min(self.http2[other].lifetimeLimit, limit)
                let entry = self.http2[other]
                if other != index, entry.isReady, !entry.isDraining, entry.isSpent, entry.openStreams == 0 {
                    self.http2[other].isDraining = true
                    spent.append(entry.connection)
                }
            }
            return spent
        }

        /// Whether another connection should open: some waiter has none coming and the cap allows.
        /// Over TLS, until a connection has shown the host speaks HTTP/1.1, one opens at a time: an
        /// HTTP/2 connection carries many streams, and another opens only when every one is full.
        func needsConnection(maximum: Int, tls: Bool) -> Bool {
            guard self.waiters.count > self.connectingCount, self.openCount < maximum else { return false }
            if tls, self.learnedProtocol != .http1_1 {
                return self.connectingCount == 0 && !self.http2.contains(where: \.hasRoom)
            }
            return true
        }

        /// The loops to open connections on, each counted as opening, while waiters need them.
        mutating func connectionsNeeded(maximum: Int, tls: Bool) -> [any EventLoop] {
            var loops: [any EventLoop] = []
            while self.needsConnection(maximum: maximum, tls: tls) {
                // The waiters without a connection coming, in order.
                let waiter = self.waiters[offset: self.connectingCount]
                self.startConnecting()
                loops.append(waiter.preferredLoop)
            }
            return loops
        }

        /// Hands waiting hops, in order, to streams of the HTTP/2 connection at `index` while it has
        /// room (at most `limit`), counting each stream.
        mutating func takeStreams(on index: Int, limit: Int = .max) -> [HTTP1Hop] {
            let connection = self.http2[index].connection
            var hops: [HTTP1Hop] = []
            while hops.count < limit, self.http2[index].hasRoom, let waiter = self.waiters.popFirst() {
                self.http2[index].openStream()
                waiter.hop.state.withLockedValue { $0.phase = .running(connection) }
                hops.append(waiter.hop)
            }
            return hops
        }

        /// Counts a connection that starts opening.
        mutating func startConnecting() {
            self.openCount += 1
            self.connectingCount += 1
        }

        /// Takes the idle connection to reuse: the most recently released, on `loop` if one is
        /// idle there. Connections found closed, or past what the server promised
        /// (``HTTP1Connection/reusableUntil``), leave the idle list and come back in `expired`
        /// for the caller to close.
        mutating func takeIdle(preferring loop: any EventLoop, now: NIODeadline) -> (HTTP1Connection?, expired: [HTTP1Connection]) {
            var expired: [HTTP1Connection] = []
            self.idle.removeAll { connection in
                let stale = !connection.channel.isActive || connection.reusableUntil.map { $0 <= now } == true
                if stale { expired.append(connection) }
                return stale
            }
            guard !self.idle.isEmpty else { return (nil, expired) }
            let index = self.idle.lastIndex { $0.channel.eventLoop === loop } ?? self.idle.count - 1
            return (self.idle.remove(at: index), expired)
        }

        /// After a connection failed or closed: the loop to open another one on, counted as
        /// opening, when a waiter has none coming and the cap allows; else nil.
        mutating func replacementLoop(maximum: Int, tls: Bool) -> (any EventLoop)? {
            guard let next = self.waiters.first, self.needsConnection(maximum: maximum, tls: tls) else { return nil }
            self.startConnecting()
            return next.preferredLoop
        }
    }

    private struct State {
        var hosts: [Key: HostState] = [:]
        /// Every open connection's channel, to close at shutdown.
        var connections: [ObjectIdentifier: any Channel] = [:]
        var isShutDown = false

        /// Runs `body` on `key`'s state in place (a copy would copy its arrays on every change).
        mutating func withHost<T>(_ key: Key, _ body: (inout HostState) -> T) -> T {
            body(&self.hosts[key, default: HostState()])
        }

        /// Runs `body` on the entry of `connection`, if the pool still has it.
        mutating func withHTTP2<T>(_ connection: HTTP2Connection, _ body: (inout HostState, Int) -> T) -> T? {
            self.withHost(connection.key) { host in
                guard let index = host.http2.firstIndex(where: { $0.connection === connection }) else { return nil }
                return body(&host, index)
            }
        }
    }

    let settings: Settings
    /// Where connection events go (`.debug`), if anywhere.
    let logger: Logger?
    /// How many of this pool's connection objects are alive (a check that closed ones are freed).
    let liveConnections = Atomic<Int>(0)
    private let state = NIOLockedValueBox(State())

    /// TLS for `https` keys; nil for a pool that carries cleartext only.
    let tls: TLSConnector?

    init(settings: Settings, tls: TLSConnector? = nil, logger: Logger? = nil) {
        self.settings = settings
        self.tls = tls
        self.logger = logger
    }

    /// Where requests for `url` go: `http` (or `https` when the pool has TLS) with a host; nil
    /// for other URLs.
    func key(for url: URL) -> Key? {
        guard var key = Self.key(for: url), !key.tls || self.tls != nil else { return nil }
        key.route = self.settings.proxy?.route(for: url) ?? .direct
        return key
    }

    /// Where requests for `url` go: `http` and `https` URLs with a host; nil for others.
    static func key(for url: URL) -> Key? {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https", let host = url.host, !host.isEmpty else {
            return nil
        }
        let tls = scheme == "https"
        return Key(host: host, port: url.port ?? (tls ? 443 : 80), tls: tls)
    }

    // MARK: Hops

    /// Runs `hop` on an idle connection to its key, else on a new one when the cap allows, else
    /// when a connection comes free.
    func execute(_ hop: HTTP1Hop, preferredLoop: any EventLoop) {
        enum Action { case run(HTTP1Connection), runStream(HTTP2Connection, firstStream: Bool), connect, wait, fail(any Error) }
        let needsNewConnection = hop.state.withLockedValue { $0.needsNewConnection }
        let now = NIODeadline.now()
        var toClose: [HTTP1Connection] = []
        let action = self.state.withLockedValue { state -> Action in
            // Checked under the pool's lock: `HTTP1Hop.fail` takes it after recording a cancellation.
            if let cancellation = hop.cancellation { return .fail(cancellation) }
            if state.isShutDown { return .fail(ConnectionPoolError.shutDown) }
            return state.withHost(hop.key) { host in
                if let index = host.http2.firstIndex(where: \.hasRoom) {
                    host.http2[index].openStream()
                    let connection = host.http2[index].connection
                    hop.state.withLockedValue { $0.phase = .running(connection) }
                    return .runStream(connection, firstStream: host.http2[index].openStreams == 1)
                }
                if !needsNewConnection {
                    let (idle, expired) = host.takeIdle(preferring: preferredLoop, now: now)
                    toClose = expired
                    if let connection = idle {
                        hop.state.withLockedValue { $0.phase = .running(connection) }
                        return .run(connection)
                    }
                }
                host.waiters.append(Waiter(hop: hop, preferredLoop: preferredLoop), needsNewConnection: needsNewConnection)
                hop.state.withLockedValue { $0.phase = .waiting(hop.key) }
                if host.needsConnection(maximum: self.settings.maximumConnectionsPerHost, tls: hop.key.tls) {
                    host.startConnecting()
                    return .connect
                }
                if needsNewConnection, !host.idle.isEmpty, host.waiters.count > host.connectingCount {
                    // At the cap with idle connections that may be as stale as the one that just
                    // failed: close the longest idle; its close opens a new one for the waiter.
                    toClose.append(host.idle.removeFirst())
                }
                return .wait
            }
        }
        for connection in toClose { connection.channel.close(promise: nil) }
        switch action {
        case .run(let connection): connection.run(hop)
        case .runStream(let connection, let firstStream):
            connection.run(hop, becomingBusy: firstStream)
        case .connect: self.connect(hop.key, on: preferredLoop)
        case .wait: break
        case .fail(let error): hop.end(.failure(error))
        }
    }

    /// How many hops wait for a connection, all hosts together.
    var waitingHopCount: Int {
        self.state.withLockedValue { state in state.hosts.values.reduce(0) { $0 + $1.waiters.count } }
    }

    /// Takes a cancelled hop out of the queue; false when it was not waiting any more.
    func removeWaiter(_ hop: HTTP1Hop) -> Bool {
        self.state.withLockedValue { state in
            state.withHost(hop.key) { host in
                host.waiters.removeFirst { $0.hop === hop } != nil
            }
        }
    }

    /// A connection that has just opened (`isNew`), or finished a hop, may carry another: a waiter
    /// gets it, else it idles. A new one goes first to a hop that goes only on a new connection;
    /// one that finished a hop never does (``ConnectionWaiters``). Returns false when the pool is
    /// shut down (the caller closes the connection).
    func release(_ connection: HTTP1Connection, isNew: Bool = false) -> Bool {
        let next = self.state.withLockedValue { state -> HTTP1Hop?? in
            guard !state.isShutDown else { return .none }
            return state.withHost(connection.key) { host in
                guard let waiter = isNew ? host.waiters.takeForNewConnection() : host.waiters.takeForReusedConnection() else {
                    host.idle.append(connection)
                    return .some(nil)
                }
                waiter.hop.state.withLockedValue { $0.phase = .running(connection) }
                return .some(waiter.hop)
            }
        }
        switch next {
        case .none: return false
        case .some(let hop?): connection.run(hop)
        case .some(nil): break
        }
        return true
    }

    /// An idle connection wants to close after its idle timeout; false when it was leased meanwhile.
    func removeIdle(_ connection: HTTP1Connection) -> Bool {
        self.state.withLockedValue { state in
            state.withHost(connection.key) { host in
                guard let index = host.idle.firstIndex(where: { $0 === connection }) else { return false }
                host.idle.remove(at: index)
                return true
            }
        }
    }

    /// Sends `hop` again, on a new connection: its connection closed under it before any of the
    /// response arrived (``HTTP1ResendRule`` said it may go again), and any other kept-alive one
    /// may be closing too; or, `unprocessed`, an HTTP/2 server said it did not process it.
    func resend(_ hop: HTTP1Hop, unprocessed: Bool = false) {
        self.logger?.debug("courier: sending again on another connection", metadata: ["request": "\(hop.request.summary)"])
        do {
            try hop.prepareResend(unprocessed: unprocessed)
        } catch {
            hop.end(.failure(error))
            return
        }
        hop.exchange.hopWillBeSentAgain()
        self.execute(hop, preferredLoop: hop.exchange.eventLoop)
    }

    // MARK: Connections

    private func connect(_ key: Key, on eventLoop: any EventLoop) {
        let decompression = self.settings.decompression
        @Sendable func addHTTP1Handlers(to channel: any Channel) throws {
            let pipeline = channel.pipeline.syncOperations
            let readWatcher = HTTP1ReadWatcher()
            try pipeline.addHandler(readWatcher)
            // NIO's client handlers, with interim (1xx) heads forwarded: `100 Continue` releases
            // a body held back for it (`addHTTPClientHandlers()` would drop them).
            try pipeline.addHandlers([
                HTTPRequestEncoder(),
                ByteToMessageHandler(HTTPResponseDecoder(leftOverBytesStrategy: .dropBytes, informationalResponseStrategy: .forward)),
                NIOHTTPRequestHeadersValidator(),
            ])
            var counter: ResponseBodyCounter?
            if let decompression {
                // Counts the body as it came, before the decompressor (the task metrics' wire count).
                counter = ResponseBodyCounter()
                try pipeline.addHandler(counter!)
                try pipeline.addHandler(NIOHTTPResponseDecompressor(limit: decompression))
            }
            try pipeline.addHandler(HTTP1ConnectionHandler(readWatcher: readWatcher, bodyCounter: counter))
        }
        // The setup's times, for the first transaction's metrics: filled in on the loop.
        let resolver = TimedResolver(loop: eventLoop)
        let setup = NIOLockedValueBox(ConnectionEstablishment(connectStart: .now, isProxyConnection: key.route != .direct))
        let bootstrap = ClientBootstrap(group: eventLoop)
            .connectTimeout(self.settings.connectTimeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .resolver(resolver)
        let opened: EventLoopFuture<(any Channel, TLSConnector.ApplicationProtocol)>
        let route = key.route
        let address = route.connectionAddress(host: key.host, port: key.port)
        let connectTimeout = self.settings.connectTimeout
        if key.tls, let tls = self.tls {
            // TCP (to the proxy, if any), the proxy's tunnel, then TLS (the connector's handshake
            // timeout bounds it), then what ALPN chose.
            opened = bootstrap.connect(host: address.host, port: address.port).flatMap { channel in
                ProxyTunnel.establish(on: channel, target: key.host, port: key.port, route: route, timeout: connectTimeout).flatMap {
                    setup.withLockedValue { $0.secureConnectionStart = .now }
                    return tls.startTLS(on: channel, host: key.host, port: key.port) { agreed, channel in
                        setup.withLockedValue { setup in
                            setup.secureConnectionEnd = .now
                            setup.tlsVersion = agreed.tlsVersion
                            setup.tlsCipherSuite = agreed.cipherSuite
                        }
                        switch agreed.applicationProtocol {
                        case .http1_1: try addHTTP1Handlers(to: channel)
                        case .http2: try Self.addHTTP2Handlers(to: channel, settings: self.settings.http2)
                        }
                    }
                }.map { agreed in (channel, agreed.applicationProtocol) }
            }
        } else if route != .direct {
            // TCP to the proxy, its tunnel when it makes one (a forwarding proxy takes the
            // request in absolute form on this connection), then HTTP/1.1.
            opened = bootstrap.connect(host: address.host, port: address.port).flatMap { channel in
                ProxyTunnel.establish(on: channel, target: key.host, port: key.port, route: route, timeout: connectTimeout).flatMapThrowing {
                    do {
                        try addHTTP1Handlers(to: channel)
                    } catch {
                        channel.close(promise: nil)
                        throw error
                    }
                    return (channel, .http1_1)
                }
            }
        } else {
            opened = bootstrap
                .channelInitializer { channel in channel.eventLoop.makeCompletedFuture { try addHTTP1Handlers(to: channel) } }
                .connect(host: key.host, port: key.port)
                .map { channel in (channel, .http1_1) }
        }
        opened.whenComplete { result in
            let establishment = setup.withLockedValue { setup in
                let lookup = resolver.times
                setup.domainLookupStart = lookup.start
                setup.domainLookupEnd = lookup.end
                // The TCP connect began once the lookup ended.
                if let end = lookup.end { setup.connectStart = end }
                setup.connectEnd = .now
                return setup
            }
            switch result {
            case .success((let channel, .http1_1)):
                self.settings.openConnections.track(channel, speaking: .http1_1)
                do {
                    let handler = try channel.pipeline.syncOperations.handler(type: HTTP1ConnectionHandler.self)
                    let connection = HTTP1Connection(channel: channel, key: key, pool: self, handler: handler, establishment: establishment)
                    handler.connection = connection
                    self.connectionOpened(connection)
                } catch {
                    channel.close(promise: nil)
                    self.connectionFailed(key, error: error)
                }
            case .success((let channel, .http2)):
                self.settings.openConnections.track(channel, speaking: .http2)
                do {
                    let pipeline = channel.pipeline.syncOperations
                    let handler = try pipeline.handler(type: HTTP2ConnectionHandler.self)
                    let connection = HTTP2Connection(channel: channel, key: key, pool: self, handler: handler, establishment: establishment)
                    self.http2ConnectionOpened(connection)
                    // After the pool counts it: SETTINGS that came during the handshake's end go to it.
                    handler.attach(connection)
                } catch {
                    channel.close(promise: nil)
                    self.connectionFailed(key, error: error)
                }
            case .failure(let error):
                self.connectionFailed(key, error: error)
            }
        }
    }

    /// The flow-control window of each HTTP/2 stream: how much of a paused download the server may
    /// send before it must wait.
    static let http2StreamWindow = 256 * 1024
    /// The flow-control window of a whole HTTP/2 connection.
    static let http2ConnectionWindow = 4 * 1024 * 1024

    /// The largest response header list (RFC 9113 6.5.2: names, values and 32 bytes a field)
    /// Courier's HTTP/2 connections take: what swift-nio-http2's header decoder enforces by
    /// default (`HPACKDecoder.defaultMaxHeaderListSize`), advertised as
    /// `SETTINGS_MAX_HEADER_LIST_SIZE` so that the server knows it (the setting's initial value is
    /// unbounded).
    static let http2MaximumHeaderListSize = 16 * 1024

    /// How many of the streams Courier reset swift-nio-http2 remembers, to ignore the frames the
    /// server sent before it saw the reset (its default is 32).
    ///
    /// A frame for a reset stream it has forgotten is a connection error to swift-nio-http2 (it
    /// sends GOAWAY with STREAM_CLOSED), so the limit must exceed the streams Courier may reset at
    /// once: every stream open on a connection, when the requests on it are cancelled together
    /// (up to the server's `SETTINGS_MAX_CONCURRENT_STREAMS`: 100 to 250 for common servers). Its
    /// cost: four bytes a stream, kept from the start, and a look through them for a frame on a
    /// stream that is no longer open.
    static let http2RememberedResets = 1024

    /// How many RST_STREAM frames received in how long end a connection: in effect, none do.
    ///
    /// swift-nio-http2's default (more than 200 in 30 s: ENHANCE_YOUR_CALM) is a server's defence
    /// against clients that open streams and reset them at once (CVE-2023-44487, rapid reset). A
    /// server resets only streams the client opened (a reset of one never opened is a protocol
    /// error anyway), so its resets cost the client no more than its own requests; and a busy
    /// server may refuse or cancel many in a short time (REFUSED_STREAM under load, streams above
    /// a GOAWAY), which the pool sends again. swift-nio-http2 has no switch for the limit and keeps
    /// room for `maximumCount` times up front, so the window is zero instead: only resets received
    /// at the same instant would count together.
    static let http2ResetsReceivedLimit: NIOHTTP2Handler.StreamResetFrameRateLimitConfiguration = {
        var limit = NIOHTTP2Handler.StreamResetFrameRateLimitConfiguration()
        limit.windowLength = .zero
        return limit
    }()

    /// swift-nio-http2's handler in its frame mode (no stream channels; push is off, and a stream
    /// the server opens is a protocol error) and Courier's connection handler, which carries the
    /// streams.
    private static func addHTTP2Handlers(to channel: any Channel, settings: HTTP2ConnectionStateMachine.Configuration) throws {
        var connection = NIOHTTP2Handler.ConnectionConfiguration()
        connection.initialSettings = [
            HTTP2Setting(parameter: .enablePush, value: 0),
            HTTP2Setting(parameter: .maxConcurrentStreams, value: 0),
            HTTP2Setting(parameter: .initialWindowSize, value: Self.http2StreamWindow),
            HTTP2Setting(parameter: .maxHeaderListSize, value: Self.http2MaximumHeaderListSize),
        ]
        connection.maximumRecentlyResetStreams = Self.http2RememberedResets
        var stream = NIOHTTP2Handler.StreamConfiguration()
        stream.streamResetFrameRateLimit = Self.http2ResetsReceivedLimit
        let pipeline = channel.pipeline.syncOperations
        // Below swift-nio-http2's handler: one flush for what a batch of the loop's tasks wrote,
        // and what swift-nio-http2 sent (GOAWAY, resets), read on its way out.
        try pipeline.addHandler(HTTP2FlushCoalescer())
        let sentFrames = HTTP2SentFramesWatcher()
        try pipeline.addHandler(sentFrames)
        try pipeline.addHandler(NIOHTTP2Handler(mode: .client, connectionConfiguration: connection, streamConfiguration: stream))
        try pipeline.addHandler(
            HTTP2ConnectionHandler(
                configuration: settings, sentFrames: sentFrames, streamWindow: Self.http2StreamWindow,
                connectionWindow: Self.http2ConnectionWindow))
    }

    private func connectionOpened(_ connection: HTTP1Connection) {
        self.logger?.debug("courier: HTTP/1.1 connection opened", metadata: ["origin": "\(connection.key)"])
        let key = connection.key
        let (accepted, more) = self.state.withLockedValue { state -> (Bool, [any EventLoop]) in
            state.hosts[key]?.connectingCount -= 1
            guard !state.isShutDown else { return (false, []) }
            state.connections[ObjectIdentifier(connection)] = connection.channel
            // A TLS host that speaks HTTP/1.1 may now get its other connections at once.
            let more = state.withHost(key) { host -> [any EventLoop] in
                guard key.tls else { return [] }
                host.learnedProtocol = .http1_1
                // This connection serves the first waiter; the others need their own.
                host.connectingCount += 1
                defer { host.connectingCount -= 1 }
                return host.connectionsNeeded(maximum: self.settings.maximumConnectionsPerHost, tls: true)
            }
            return (true, more)
        }
        connection.channel.closeFuture.whenComplete { _ in self.connectionClosed(connection) }
        for loop in more { self.connect(key, on: loop) }
        guard accepted else {
            connection.channel.close(promise: nil)
            return
        }
        // Idle until a hop runs on it: when the hop that asked for it was cancelled meanwhile,
        // it must still close after the idle timeout.
        connection.startIdleClock()
        if !self.release(connection, isNew: true) {
            connection.channel.close(promise: nil)
        }
    }

    private func connectionFailed(_ key: Key, error: any Error) {
        self.logger?.debug("courier: HTTP/1.1 connection failed", metadata: ["origin": "\(key)", "error": "\(error)"])
        let (failed, reconnect) = self.state.withLockedValue { state -> (HTTP1Hop?, (any EventLoop)?) in
            let isShutDown = state.isShutDown
            return state.withHost(key) { host in
                host.openCount -= 1
                host.connectingCount -= 1
                let failed = host.waiters.popFirst()?.hop
                // Hops still waiting get connections of their own (each fails alone if the host is down).
                return (failed, isShutDown ? nil : host.replacementLoop(maximum: self.settings.maximumConnectionsPerHost, tls: key.tls))
            }
        }
        failed?.end(.failure(error))
        if let reconnect { self.connect(key, on: reconnect) }
    }

    private func connectionClosed(_ connection: HTTP1Connection) {
        self.logger?.debug("courier: HTTP/1.1 connection closed", metadata: ["origin": "\(connection.key)"])
        let reconnect = self.state.withLockedValue { state -> (any EventLoop)? in
            guard state.connections.removeValue(forKey: ObjectIdentifier(connection)) != nil else { return nil }
            let isShutDown = state.isShutDown
            return state.withHost(connection.key) { host in
                host.openCount -= 1
                host.idle.removeAll { $0 === connection }
                return isShutDown ? nil : host.replacementLoop(maximum: self.settings.maximumConnectionsPerHost, tls: connection.key.tls)
            }
        }
        if let reconnect { self.connect(connection.key, on: reconnect) }
    }

    // MARK: HTTP/2

    /// An HTTP/2 connection opened: it counts as opening until the server's first SETTINGS.
    private func http2ConnectionOpened(_ connection: HTTP2Connection) {
        self.logger?.debug("courier: HTTP/2 connection opened", metadata: ["origin": "\(connection.key)"])
        let accepted = self.state.withLockedValue { state -> Bool in
            guard !state.isShutDown else {
                state.hosts[connection.key]?.connectingCount -= 1
                state.hosts[connection.key]?.openCount -= 1
                return false
            }
            state.connections[ObjectIdentifier(connection)] = connection.channel
            state.withHost(connection.key) { host in
                var entry = HTTP2Entry(connection: connection)
                entry.lifetimeLimit = host.learnedStreamsPerConnection ?? .max
                host.http2.append(entry)
                host.learnedProtocol = .http2
            }
            return true
        }
        guard accepted else {
            connection.channel.close(promise: nil)
            return
        }
        connection.channel.closeFuture.whenComplete { _ in self.http2ConnectionClosed(connection) }
    }

    /// The server's SETTINGS: the first makes the connection ready; each may change how many
    /// streams it takes. Waiting hops go on it as far as there is room.
    func http2Settings(of connection: HTTP2Connection, maximumStreams: Int?) {
        let (hops, idle, more) = self.state.withLockedValue { state -> ([HTTP1Hop], Bool, [any EventLoop]) in
            guard !state.isShutDown else { return ([], false, []) }
            return state.withHTTP2(connection) { host, index in
                if let maximumStreams { host.http2[index].maximumStreams = max(0, maximumStreams) }
                let first = !host.http2[index].isReady
                if first {
                    host.http2[index].isReady = true
                    host.connectingCount -= 1
                }
                let hops = host.takeStreams(on: index)
                // Hops the connection has no room for get another connection.
                let more = host.connectionsNeeded(maximum: self.settings.maximumConnectionsPerHost, tls: true)
                return (hops, first && host.http2[index].openStreams == 0, more)
            } ?? ([], false, [])
        }
        for loop in more { self.connect(connection.key, on: loop) }
        if idle { connection.becameIdle() }
        for (index, hop) in hops.enumerated() { connection.run(hop, becomingBusy: index == 0) }
    }

    /// The server sent GOAWAY: no new stream on the connection; it closes once its streams end, and
    /// hops still waiting get another connection.
    func http2GoingAway(_ connection: HTTP2Connection, lastStreamID: Int) {
        var spent: [HTTP2Connection] = []
        let (close, reconnect) = self.state.withLockedValue { state -> (Bool, (any EventLoop)?) in
            let isShutDown = state.isShutDown
            return state.withHTTP2(connection) { host, index in
                spent = host.learn(fromGoAwayOn: index, lastStreamID: lastStreamID)
                host.http2[index].isDraining = true
                if !host.http2[index].isReady {
                    host.http2[index].isReady = true
                    host.connectingCount -= 1
                }
                let close = host.http2[index].openStreams == 0
                return (close, isShutDown ? nil : host.replacementLoop(maximum: self.settings.maximumConnectionsPerHost, tls: connection.key.tls))
            } ?? (false, nil)
        }
        self.logger?.debug("courier: HTTP/2 connection going away", metadata: ["origin": "\(connection.key)"])
        for other in spent { other.channel.close(promise: nil) }
        if close { connection.channel.close(promise: nil) }
        if let reconnect { self.connect(connection.key, on: reconnect) }
    }

    /// A later GOAWAY on a draining connection named a lower last stream: the host may process
    /// fewer streams a connection than the first GOAWAY said.
    func http2LastStreamIDLowered(on connection: HTTP2Connection, to lastStreamID: Int) {
        let spent = self.state.withLockedValue { state in
            state.withHTTP2(connection) { host, index in host.learn(fromGoAwayOn: index, lastStreamID: lastStreamID) } ?? []
        }
        for other in spent { other.channel.close(promise: nil) }
    }

    /// A stream of `connection` closed (or never opened): the next waiting hop takes its place.
    func streamClosed(on connection: HTTP2Connection) {
        enum Next { case none, run(HTTP1Hop), idle, close }
        let next = self.state.withLockedValue { state -> Next in
            let isShutDown = state.isShutDown
            return state.withHTTP2(connection) { host, index in
                host.http2[index].openStreams -= 1
                if host.http2[index].isDraining || isShutDown {
                    return host.http2[index].openStreams == 0 ? .close : .none
                }
                if host.http2[index].isSpent {
                    guard host.http2[index].openStreams == 0 else { return .none }
                    // Every stream it was allowed ended and no GOAWAY came: the server would have
                    // taken more. The next connections may open twice as many.
                    host.http2[index].isDraining = true
                    if let learned = host.learnedStreamsPerConnection {
                        host.learnedStreamsPerConnection = learned > Int.max / 2 ? nil : learned * 2
                    }
                    return .close
                }
                if let hop = host.takeStreams(on: index, limit: 1).first {
                    return .run(hop)
                }
                return host.http2[index].openStreams == 0 ? .idle : .none
            } ?? .none
        }
        switch next {
        case .none: break
        case .run(let hop): connection.run(hop)
        case .idle: connection.becameIdle()
        case .close: connection.channel.close(promise: nil)
        }
    }

    /// An HTTP/2 connection with no stream wants to close after its idle timeout; false when a
    /// stream opened on it meanwhile.
    func removeIdleHTTP2(_ connection: HTTP2Connection) -> Bool {
        self.state.withLockedValue { state in
            state.withHTTP2(connection) { host, index in
                guard host.http2[index].openStreams == 0 else { return false }
                host.http2[index].isDraining = true
                return true
            } ?? false
        }
    }

    /// An HTTP/2 connection that can take no new stream (closing, or closed but its close not
    /// processed yet): no hop is handed to it any more.
    func http2ConnectionUnusable(_ connection: HTTP2Connection) {
        self.state.withLockedValue { state in
            _ = state.withHTTP2(connection) { host, index in host.http2[index].isDraining = true }
        }
    }

    private func http2ConnectionClosed(_ connection: HTTP2Connection) {
        self.logger?.debug("courier: HTTP/2 connection closed", metadata: ["origin": "\(connection.key)"])
        let (failed, reconnect) = self.state.withLockedValue { state -> (HTTP1Hop?, (any EventLoop)?) in
            guard state.connections.removeValue(forKey: ObjectIdentifier(connection)) != nil else { return (nil, nil) }
            let isShutDown = state.isShutDown
            return state.withHost(connection.key) { host in
                host.openCount -= 1
                var failed: HTTP1Hop?
                if let index = host.http2.firstIndex(where: { $0.connection === connection }) {
                    if !host.http2[index].isReady {
                        // Closed before the server's SETTINGS: a failed connection for the first waiter.
                        host.connectingCount -= 1
                        failed = host.waiters.popFirst()?.hop
                    }
                    host.http2.remove(at: index)
                }
                return (failed, isShutDown ? nil : host.replacementLoop(maximum: self.settings.maximumConnectionsPerHost, tls: connection.key.tls))
            }
        }
        failed?.end(.failure(ConnectionPoolError.closedBeforeAnswering(attempts: 1)))
        if let reconnect { self.connect(connection.key, on: reconnect) }
    }

    // MARK: Shutdown

    /// Fails the waiting hops, closes every connection (a hop running on one fails as its
    /// connection closes) and refuses new hops.
    func shutdown() -> [EventLoopFuture<Void>] {
        let (waiters, connections) = self.state.withLockedValue { state -> ([HTTP1Hop], [any Channel]) in
            state.isShutDown = true
            var waiters: [HTTP1Hop] = []
            for key in state.hosts.keys { waiters += state.hosts[key]?.waiters.removeAll().map(\.hop) ?? [] }
            return (waiters, Array(state.connections.values))
        }
        for hop in waiters { hop.end(.failure(ConnectionPoolError.shutDown)) }
        return connections.map { channel in
            channel.close().recover { _ in }.flatMap { channel.closeFuture }
        }
    }
}

/// Why Courier's HTTP/1.1 path could not carry a hop.
enum ConnectionPoolError: Error, Hashable, CustomStringConvertible {
    /// The engine was shut down.
    case shutDown
    /// The server closed the connection before the response was complete.
    case closedBeforeResponseComplete
    /// The connection closed before any of the response arrived, on every one of `attempts`
    /// sends (``HTTP1ResendRule``'s bound was reached).
    case closedBeforeAnswering(attempts: Int)
    /// An HTTP/2 server did not process the request (a GOAWAY naming an earlier stream as its last,
    /// or REFUSED_STREAM) on every one of `attempts` sends (``HTTP1ResendRule``'s bound for those
    /// was reached).
    case notProcessed(attempts: Int)
    /// A streamed body's length differed from its declared length.
    case bodyLengthMismatch(declared: Int64, sent: Int64)

    var description: String {
        switch self {
        case .shutDown: "the engine was shut down"
        case .closedBeforeResponseComplete: "the server closed the connection before the response was complete"
        case .closedBeforeAnswering(let attempts):
            "the server closed the connection before answering, \(attempts) times in a row (the request was sent on a new connection each time after the first)"
        case .notProcessed(let attempts):
            "the server did not process the request (GOAWAY or REFUSED_STREAM), \(attempts) times in a row"
        case .bodyLengthMismatch(let declared, let sent): "the body declared \(declared) bytes and gave \(sent)"
        }
    }
}
