import NIOCore

/// A connection's name in the pool, given by ``ConnectionPoolStateMachine`` when it decides to open
/// one (``ConnectionPoolStateMachine/Action/createConnection(_:_:on:)``).
struct PoolConnectionID: Hashable, Sendable, CustomStringConvertible {
    let rawValue: Int

    /// The name of a connection the pool did not open (a test's): the machine knows nothing of it.
    static let unpooled = PoolConnectionID(rawValue: -1)

    var description: String { "#\(self.rawValue)" }
}

/// What ``ConnectionPoolStateMachine`` needs to know of a connection: its name and its loop.
protocol PoolConnection {
    var id: PoolConnectionID { get }
    var eventLoop: any EventLoop { get }
}

/// Every decision of ``ConnectionPool``, apart from its I/O: which connection carries which
/// request, when connections open and close, who waits, and what the pool learned of each host.
///
/// A value with no channel, lock or clock, modelled on AsyncHTTPClient's
/// `HTTPConnectionPool.StateMachine`: the pool feeds it events under its lock (a request, a
/// connection created or failed, a connection given back or closed, an HTTP/2 connection's
/// SETTINGS, GOAWAY and streams, a timer, a cancelled waiter, shutdown) and runs the ``Action``s
/// each returns after releasing the lock. `Request` is the pool's hop and `Connection` its
/// connection; the tests use stand-ins (`ConnectionPoolStateMachineTests`).
///
/// Per host key (``ConnectionPool/Key``, a ``Host``): the HTTP/1.1 connections (idle, most
/// recently given back last, or leased), the HTTP/2 connections with their streams, the
/// connections opening, the waiting requests (``ConnectionWaiters``), what the host was seen to
/// speak, how many streams it processes on one HTTP/2 connection, and the back-off after failed
/// connects.
///
/// - Connections per host are capped by ``Configuration/maximumConnectionsPerHost``; requests
///   beyond the cap wait in order of arrival.
/// - Over TLS, until a connection has shown the host speaks HTTP/1.1, one connection opens at a
///   time: an HTTP/2 one carries many streams (not for a key whose ALPN offers only HTTP/1.1).
/// - A request HTTP/2 cannot carry goes over connections whose ALPN offers only HTTP/1.1, a key
///   of their own (``ConnectionPool/Key/http1Only``, ``destination(of:http1Only:)``); an origin
///   whose server answered HTTP_1_1_REQUIRED sends all its later requests there
///   (``originRequiresHTTP1(_:)``).
/// - HTTP/2: a request takes a stream on a connection with room: fewer streams open than the
///   server's `SETTINGS_MAX_CONCURRENT_STREAMS` (100 until it says) and than
///   ``Configuration/http2MaximumStreamsPerConnection``, and fewer opened in all than the host
///   processes on one connection. When every connection is full another opens, on an event loop
///   none of the host's HTTP/2 connections uses when there is one, up to
///   ``Configuration/http2MaximumConnectionsPerHost`` usable connections.
/// - A GOAWAY drains its connection: no new stream, closed once its streams end. When it left
///   streams Courier had opened unprocessed, the host's limit is learned: new connections open no
///   more streams than the server processed; a connection that opened that many and closes
///   without a GOAWAY doubles it.
/// - A host with nothing left in the pool (no connection, open or opening, no waiter, no
///   back-off) leaves ``hosts``; what it learned (protocol, streams a connection, failed connects)
///   is kept in ``remembered``, for at most ``Configuration/rememberedHostsLimit`` hosts, and a
///   host that comes back starts from it. A process that talks to ever new hosts keeps nothing for
///   each beyond that bound.
/// - A connection that failed to open fails the first waiting request. Requests still waiting get
///   connections of their own: at once after one failure, after a back-off once connects failed
///   twice in a row (``Configuration/backoff(afterFailures:)``), until a connect succeeds.
struct ConnectionPoolStateMachine<Request: AnyObject, Connection: PoolConnection> {
    typealias Key = ConnectionPool.Key

    struct Configuration {
        /// Connections per host, opening or open, whatever they speak.
        var maximumConnectionsPerHost: Int
        /// Usable (not draining) HTTP/2 connections per host.
        var http2MaximumConnectionsPerHost: Int
        /// Streams open at once on one HTTP/2 connection, whatever the server allows.
        var http2MaximumStreamsPerConnection: Int
        /// The first back-off after failed connects, doubled for each further failure.
        var backoffBase: TimeAmount = .milliseconds(10)
        /// The longest back-off.
        var backoffMaximum: TimeAmount = .milliseconds(200)
        /// How many hosts with nothing left in the pool (no connection, no waiter) are remembered
        /// for what they taught it (``Host/Learned``); beyond it an arbitrary one is forgotten.
        var rememberedHostsLimit = 1024

        /// How long requests still waiting wait for their next connect after `failures` failed
        /// connects in a row: none after one (the next connect may succeed), then
        /// ``backoffBase`` doubled for each further failure, at most ``backoffMaximum``.
        func backoff(afterFailures failures: Int) -> TimeAmount? {
            guard failures >= 2 else { return nil }
            let doublings = min(failures - 2, 20)
            return min(self.backoffBase * Int64(1 << doublings), self.backoffMaximum)
        }
    }

    /// What the pool does after releasing its lock.
    enum Action {
        /// Open a connection to `key` on `loop`, to be reported as ``connectionCreated(_:key:speaking:)``
        /// or ``connectionFailed(_:key:error:)``.
        case createConnection(PoolConnectionID, Key, on: any EventLoop)
        /// Run the request on the HTTP/1.1 connection. `carriesSetup` when the connection goes to
        /// it straight from opening, before carrying or idling: its transaction may then report
        /// the connection's setup (``ConnectionEstablishment/apply(to:carriesSetup:channel:)``).
        case run(Request, on: Connection, carriesSetup: Bool)
        /// Open a stream for the request on the HTTP/2 connection; `becomingBusy` when it is the
        /// connection's only open stream (its idle clock stops); `carriesSetup` for the first
        /// stream the server's first SETTINGS lets open (as for ``run(_:on:carriesSetup:)``).
        case runStream(Request, on: Connection, becomingBusy: Bool, carriesSetup: Bool)
        /// End the request with an error.
        case fail(Request, any Error)
        /// Close the connection.
        case close(Connection)
        /// The connection has nothing to carry: its idle clock starts.
        case startIdleClock(Connection)
        /// Call ``backoffEnded(key:)`` after the delay (after shutdown it does nothing).
        case scheduleBackoffTimer(Key, after: TimeAmount)
    }

    /// What every host's decisions share, beside the hosts (so that both change in place at once).
    struct Shared {
        let configuration: Configuration
        /// The event loops connections may open on (a second HTTP/2 connection goes to another).
        let loops: [any EventLoop]
        var isShutDown = false
        var nextConnectionID = 0
    }

    private(set) var shared: Shared
    /// The hosts with connections, connections opening, waiters or a back-off: a host with none of
    /// these leaves (``Host/isAtRest``), so that a process that talks to ever new hosts for months
    /// does not keep one entry, and its collections' storage, for each.
    private(set) var hosts: [Key: Host] = [:]
    /// What hosts that left ``hosts`` had learned, at most ``Configuration/rememberedHostsLimit``
    /// of them: a host that comes back starts from it.
    private(set) var remembered: [Key: Host.Learned] = [:]
    /// The origins (TLS keys whose ALPN offers HTTP/2) whose server answered HTTP_1_1_REQUIRED: their
    /// requests go over connections that offer only HTTP/1.1 (``destination(of:http1Only:)``), for
    /// the pool's life, at most ``Configuration/rememberedHostsLimit`` of them. Empty but for such
    /// servers, so that the look-up a request makes costs no hashing.
    private(set) var http1Required: Set<Key> = []

    var configuration: Configuration { self.shared.configuration }
    var loops: [any EventLoop] { self.shared.loops }
    var isShutDown: Bool { self.shared.isShutDown }

    init(configuration: Configuration, loops: [any EventLoop]) {
        self.shared = Shared(configuration: configuration, loops: loops)
    }

    /// How many requests wait for a connection, all hosts together.
    var waitingCount: Int { self.hosts.values.reduce(0) { $0 + $1.waiters.count } }

    /// How many connections carry nothing, all hosts together: idle HTTP/1.1 ones, and ready
    /// HTTP/2 ones with no stream open.
    var idleCount: Int {
        self.hosts.values.reduce(0) { count, host in
            count + host.idle.count + host.http2.count(where: { $0.phase == .active && $0.openStreams == 0 })
        }
    }

    /// Runs `body` on `key`'s state in place (a copy would copy its collections on every change),
    /// with what the hosts share; a host the pool does not have starts from what it remembers of
    /// it, else empty. A host left at rest leaves.
    @inline(__always)
    private mutating func withHost<T>(_ key: Key, _ body: (inout Shared, inout Host) -> T) -> T {
        if let index = self.hosts.index(forKey: key) { return self.withHost(at: index, body) }
        self.hosts[key] = Host(learned: self.remembered.removeValue(forKey: key) ?? Host.Learned())
        return self.withHost(at: self.hosts.index(forKey: key)!, body)
    }

    /// Runs `body` on `key`'s state in place, with what the hosts share, if the pool has the host;
    /// nil if not. Reading a host through `hosts[key]` would copy it (its five collections, a
    /// retain each); this hashes the key once and copies nothing. A host left at rest leaves.
    @inline(__always)
    private mutating func withKnownHost<T>(_ key: Key, _ body: (inout Shared, inout Host) -> T) -> T? {
        guard let index = self.hosts.index(forKey: key) else { return nil }
        return self.withHost(at: index, body)
    }

    /// Runs `body` on the host at `index` in place; one it leaves at rest leaves the pool.
    @inline(__always)
    private mutating func withHost<T>(at index: [Key: Host].Index, _ body: (inout Shared, inout Host) -> T) -> T {
        var atRest = false
        let result = Self.lend(&self.shared, &self.hosts.values[index], atRest: &atRest, body)
        if atRest { self.rest(at: index) }
        return result
    }

    /// `body` on the host, which is then asked whether it is at rest while it is still lent in
    /// place: a read of it after would be a copy.
    @inline(__always)
    private static func lend<T>(
        _ shared: inout Shared, _ host: inout Host, atRest: inout Bool, _ body: (inout Shared, inout Host) -> T
    ) -> T {
        let result = body(&shared, &host)
        atRest = host.isAtRest
        return result
    }

    /// The host at `index` has nothing left in the pool: it leaves, and what it learned is kept
    /// (an arbitrary remembered host is forgotten to make room).
    private mutating func rest(at index: [Key: Host].Index) {
        let (key, host) = self.hosts.remove(at: index)
        // A host that taught nothing would come back as new anyway.
        guard host.learned != Host.Learned(), self.configuration.rememberedHostsLimit > 0 else { return }
        if self.remembered.count >= self.configuration.rememberedHostsLimit, self.remembered.index(forKey: key) == nil {
            self.remembered.remove(at: self.remembered.startIndex)
        }
        self.remembered[key] = host.learned
    }

    // MARK: Requests

    /// Where a request for `key` goes: over connections that offer only HTTP/1.1 (ALPN) when the
    /// request must (`http1Only`: its header block does not fit in an HTTP/2 frame, or the server
    /// wanted it so) or its origin answered HTTP_1_1_REQUIRED before
    /// (``originRequiresHTTP1(_:)``); else `key`. Keys without TLS are left as they are.
    func destination(of key: Key, http1Only: Bool) -> Key {
        guard key.offersHTTP2 else { return key }
        if http1Only || (!self.http1Required.isEmpty && self.http1Required.contains(key)) { return key.overHTTP1Only }
        return key
    }

    /// The server of `key` answered HTTP_1_1_REQUIRED (a reset or a GOAWAY): its later requests go
    /// over connections that offer only HTTP/1.1, as Chromium does. Its HTTP/2 connections carry
    /// on with the streams they have, and requests already waiting for them go as they were (each
    /// goes again over HTTP/1.1 if the server refuses it too).
    mutating func originRequiresHTTP1(_ key: Key) {
        guard key.offersHTTP2, !self.http1Required.contains(key) else { return }
        guard self.configuration.rememberedHostsLimit > 0 else { return }
        if self.http1Required.count >= self.configuration.rememberedHostsLimit {
            self.http1Required.remove(at: self.http1Required.startIndex)
        }
        self.http1Required.insert(key)
    }

    /// A request for `key`: a stream on an HTTP/2 connection with room, else an idle HTTP/1.1
    /// connection (unless it goes only on a new one), on `preferredLoop` when one is idle there;
    /// else it waits, and a connection opens for it when the cap allows. `now` tells which idle
    /// connections are past what their server promised (they close).
    mutating func executeRequest(
        _ request: Request, key: Key, preferredLoop: any EventLoop, needsNewConnection: Bool, now: NIODeadline
    ) -> Actions {
        if self.isShutDown { return Actions(.fail(request, ConnectionPoolError.shutDown)) }
        return self.withHost(key) { shared, host in
            if let index = host.http2.firstIndex(where: { $0.hasRoom(shared.configuration) }) {
                host.http2[index].openStream()
                return Actions(.runStream(
                    request, on: host.http2[index].connection, becomingBusy: host.http2[index].openStreams == 1, carriesSetup: false))
            }
            var actions = Actions()
            if !needsNewConnection {
                let idle = host.takeIdle(preferring: preferredLoop, now: now, expired: &actions)
                if let idle {
                    actions.append(.run(request, on: idle, carriesSetup: false))
                    return actions
                }
            }
            host.waiters.append(Host.Waiter(request: request, preferredLoop: preferredLoop), needsNewConnection: needsNewConnection)
            let before = actions.count
            shared.openConnectionsNeeded(for: key, host: &host, into: &actions)
            if actions.count == before, needsNewConnection, !host.idle.isEmpty, host.waiters.count > host.connectingCount {
                // At the cap with idle connections that may be as stale as the one that just
                // failed: close the longest idle; its close opens a new one for the waiter.
                actions.append(.close(host.idle.removeFirst().connection))
            }
            return actions
        }
    }

    /// A waiting request was cancelled: whether it was still waiting (it leaves the queue; the
    /// pool ends it). False when a connection took it meanwhile (that connection sees the
    /// cancellation) or it never queued.
    mutating func cancelWaiter(_ request: Request, key: Key) -> Bool {
        self.withKnownHost(key) { shared, host in host.waiters.removeFirst { $0.request === request } != nil } ?? false
    }

    // MARK: Connections

    /// The connection `connection.id` opened, speaking `version`. An HTTP/1.1 one takes a waiter
    /// (one that goes only on a new connection first) or idles; an HTTP/2 one still counts as
    /// opening until the server's first SETTINGS (``http2SettingsReceived(_:key:maximumStreams:)``).
    mutating func connectionCreated(_ connection: Connection, key: Key, speaking version: TLSConnector.ApplicationProtocol) -> Actions {
        guard !self.isShutDown else {
            _ = self.withKnownHost(key) { _, host in host.starting.removeValue(forKey: connection.id) }
            return Actions(.close(connection))
        }
        return self.withHost(key) { shared, host in
            host.starting.removeValue(forKey: connection.id)
            switch version {
            case .http2:
                host.learned.applicationProtocol = .http2
                host.http2.append(Host.HTTP2Entry(connection: connection, lifetimeLimit: host.learned.streamsPerConnection ?? .max))
                return Actions()
            case .http1_1:
                host.learned.failedConnects = 0
                host.http1[connection.id] = connection
                // Idle until a request runs on it: when the one that asked for it was cancelled
                // meanwhile, it must still close after the idle timeout.
                var actions = Actions(.startIdleClock(connection))
                // A TLS host that speaks HTTP/1.1 may now get its other connections at once.
                if key.tls { host.learned.applicationProtocol = .http1_1 }
                if let waiter = host.waiters.takeForNewConnection() {
                    // Straight from opening: the waiter's transaction may report the setup.
                    actions.append(.run(waiter.request, on: connection, carriesSetup: true))
                } else {
                    host.idle.append(Host.IdleEntry(connection: connection, reusableUntil: nil))
                }
                if key.tls { shared.openConnectionsNeeded(for: key, host: &host, into: &actions) }
                return actions
            }
        }
    }

    /// The connection `id` failed to open: the first waiter fails with `error`; the others get
    /// connections of their own, after a back-off once connects failed twice in a row.
    mutating func connectionFailed(_ id: PoolConnectionID, key: Key, error: any Error) -> Actions {
        self.withKnownHost(key) { shared, host in
            guard host.starting.removeValue(forKey: id) != nil else { return Actions() }
            return shared.connectFailed(to: key, host: &host, error: error)
        } ?? Actions()
    }
}

extension ConnectionPoolStateMachine.Shared {
    typealias Key = ConnectionPool.Key
    typealias Host = ConnectionPoolStateMachine.Host
    typealias Action = ConnectionPoolStateMachine.Action
    typealias Actions = ConnectionPoolStateMachine.Actions

    /// A connect to `key` failed (or an HTTP/2 connection closed before the server's first
    /// SETTINGS): the first waiter fails; the others get a connection at once after one failure,
    /// after a back-off once connects failed twice in a row. Once they failed twice in a row with
    /// no connection of the host left, open or opening, the host is down: every waiter fails now,
    /// as each would with a connect of its own (URLSession, Go and curl dial per request), instead
    /// of one a back-off (200 ms at most) while the rest wait.
    mutating func connectFailed(to key: Key, host: inout Host, error: any Error) -> Actions {
        host.learned.failedConnects += 1
        var actions = Actions()
        if host.learned.failedConnects >= 2, host.openCount == 0 {
            while let waiter = host.waiters.popFirst() { actions.append(.fail(waiter.request, error)) }
            return actions
        }
        if let first = host.waiters.popFirst() { actions.append(.fail(first.request, error)) }
        guard !self.isShutDown, !host.isBackingOff else { return actions }
        if let delay = self.configuration.backoff(afterFailures: host.learned.failedConnects) {
            if host.needsConnection(self.configuration, offersHTTP2: key.offersHTTP2) {
                host.isBackingOff = true
                actions.append(.scheduleBackoffTimer(key, after: delay))
            }
        } else {
            self.openReplacement(for: key, host: &host, into: &actions)
        }
        return actions
    }
}

extension ConnectionPoolStateMachine {
    /// The back-off after failed connects to `key` ended: waiting requests get connections.
    mutating func backoffEnded(key: Key) -> Actions {
        self.withKnownHost(key) { shared, host in
            guard host.isBackingOff else { return Actions() }
            host.isBackingOff = false
            var actions = Actions()
            if !shared.isShutDown { shared.openConnectionsNeeded(for: key, host: &host, into: &actions) }
            return actions
        } ?? Actions()
    }

    /// An HTTP/1.1 connection finished a hop and may carry another: a waiter that may take a
    /// reused connection gets it, else it idles until `reusableUntil` at most (what its server
    /// promised, if anything). A connection the pool does not know is left as it is.
    mutating func connectionReleased(_ connection: Connection, key: Key, reusableUntil: NIODeadline?) -> Actions {
        if self.isShutDown { return Actions(.close(connection)) }
        return self.withKnownHost(key) { shared, host in
            guard host.http1[connection.id] != nil else { return Actions() }
            if let waiter = host.waiters.takeForReusedConnection() {
                return Actions(.run(waiter.request, on: connection, carriesSetup: false))
            }
            host.idle.append(Host.IdleEntry(connection: connection, reusableUntil: reusableUntil))
            return Actions()
        } ?? Actions()
    }

    /// An idle HTTP/1.1 connection reached its idle timeout: whether it closes (false when it
    /// was leased meanwhile). One the pool does not know closes.
    mutating func idleTimeoutReached(_ id: PoolConnectionID, key: Key) -> Bool {
        self.withKnownHost(key) { shared, host in
            guard host.http1[id] != nil else { return true }
            guard let index = host.idle.firstIndex(where: { $0.connection.id == id }) else { return false }
            host.idle.remove(at: index)
            return true
        } ?? true
    }

    /// A connection closed (HTTP/1.1 or HTTP/2). An HTTP/2 one closed before the server's first
    /// SETTINGS failed to open (a TLS 1.3 server refusing the client's certificate closes it just
    /// after the handshake): a failed connect, with `error` (what closed it, when something
    /// failed: that TLS alert) as its failure. A waiter with no connection coming gets one when the
    /// cap allows.
    mutating func connectionClosed(_ id: PoolConnectionID, key: Key, error: (any Error)? = nil) -> Actions {
        self.withKnownHost(key) { shared, host in
            if host.http1.removeValue(forKey: id) != nil {
                host.idle.removeAll { $0.connection.id == id }
            } else if let index = host.http2.firstIndex(where: { $0.connection.id == id }) {
                if host.http2.remove(at: index).isOpening {
                    // The error that closed it, if one did (a TLS alert after the handshake), is
                    // the connect's failure.
                    return shared.connectFailed(to: key, host: &host, error: error ?? ConnectionPoolError.closedBeforeAnswering(attempts: 1))
                }
            } else {
                return Actions()
            }
            var actions = Actions()
            if !shared.isShutDown { shared.openReplacement(for: key, host: &host, into: &actions) }
            return actions
        } ?? Actions()
    }

    // MARK: HTTP/2

    /// The server's SETTINGS on an HTTP/2 connection: the first makes it ready; each may change
    /// how many streams it takes. Waiting requests take streams as far as there is room; those
    /// left over get another connection.
    mutating func http2SettingsReceived(_ id: PoolConnectionID, key: Key, maximumStreams: Int?) -> Actions {
        guard !self.isShutDown else { return Actions() }
        return self.withHTTP2(id, key: key) { shared, host, index in
            guard host.http2[index].phase != .closingBeforeSettings else { return Actions() }
            if let maximumStreams { host.http2[index].maximumStreams = max(0, maximumStreams) }
            let first = host.http2[index].phase == .starting
            if first {
                // The connect succeeded only now: a server may close at once what TLS accepted.
                host.http2[index].phase = .active
                host.learned.failedConnects = 0
            }
            if host.http2[index].maximumStreams == 0, host.http2[index].openStreams == 0, host.http2[index].phase == .active {
                return Self.refuseForNoStreams(index, host: &host)
            }
            // The first stream opened as the connection becomes ready may report its setup; one
            // opened after it idled may not.
            var actions = host.takeStreams(on: index, shared.configuration, firstCarriesSetup: first)
            shared.openConnectionsNeeded(for: key, host: &host, into: &actions)
            if first, host.http2[index].openStreams == 0 { actions.append(.startIdleClock(host.http2[index].connection)) }
            return actions
        } ?? Actions()
    }

    /// A connection whose server allows no stream (`SETTINGS_MAX_CONCURRENT_STREAMS` 0) while
    /// none is open on it: RFC 9113 5.1.2 asks servers to say 0 only briefly and to close a
    /// connection they will not serve. Waiting on it would hang the host's requests, and opening
    /// others in its place churned connections (nghttpd and Node with a limit of 0: four at a
    /// time, for ever). It closes, and unless another connection of the host is opening or can
    /// take streams, the waiting requests fail at once with ``ConnectionPoolError/noStreamsAllowed``
    /// (curl gives up at once too).
    private static func refuseForNoStreams(_ index: Int, host: inout Host) -> Actions {
        host.http2[index].phase = .draining
        var actions = Actions(.close(host.http2[index].connection))
        let othersMayServe = !host.starting.isEmpty || host.http2.indices.contains { other in
            other != index && host.http2[other].isUsable && (host.http2[other].isOpening || host.http2[other].maximumStreams > 0)
        }
        if !othersMayServe {
            for waiter in host.waiters.removeAll() { actions.append(.fail(waiter.request, ConnectionPoolError.noStreamsAllowed)) }
        }
        return actions
    }

    /// The server's first GOAWAY on an HTTP/2 connection: it takes no new stream and closes once
    /// its streams end; the host's limit is learned if streams were left unprocessed, unless a
    /// GOAWAY of the connection named an error (`namedAnError`: a connection error, ENHANCE_YOUR_CALM
    /// or PROTOCOL_ERROR with a last stream of 0, says nothing of how many requests the host takes
    /// a connection, and made it one for every connection of the host); a waiter with no
    /// connection coming gets one.
    mutating func http2GoAwayReceived(_ id: PoolConnectionID, key: Key, lastStreamID: Int, namedAnError: Bool = false) -> Actions {
        self.withHTTP2(id, key: key) { shared, host, index in
            var actions = namedAnError ? Actions() : host.learn(fromGoAwayOn: index, lastStreamID: lastStreamID)
            host.http2[index].phase = .draining
            if host.http2[index].openStreams == 0 { actions.append(.close(host.http2[index].connection)) }
            if !shared.isShutDown { shared.openReplacement(for: key, host: &host, into: &actions) }
            return actions
        } ?? Actions()
    }

    /// A later GOAWAY named a lower last stream: the host may process fewer streams a connection.
    mutating func http2LastStreamIDLowered(_ id: PoolConnectionID, key: Key, to lastStreamID: Int, namedAnError: Bool = false) -> Actions {
        guard !namedAnError else { return Actions() }
        return self.withHTTP2(id, key: key) { shared, host, index in host.learn(fromGoAwayOn: index, lastStreamID: lastStreamID) } ?? Actions()
    }

    /// A stream of an HTTP/2 connection closed (or never opened): the next waiter takes its place;
    /// a draining connection closes with its last stream; one with none left idles.
    mutating func http2StreamClosed(_ id: PoolConnectionID, key: Key) -> Actions {
        let isShutDown = self.isShutDown
        return self.withHTTP2(id, key: key) { shared, host, index -> Actions in
            host.http2[index].openStreams -= 1
            // Read in place: a copy of the entry is a retain of its connection.
            let openStreams = host.http2[index].openStreams
            if host.http2[index].phase != .active || isShutDown {
                return openStreams == 0 ? Actions(.close(host.http2[index].connection)) : Actions()
            }
            if host.http2[index].isSpent {
                guard openStreams == 0 else { return Actions() }
                // Every stream it was allowed ended and no GOAWAY came: the server would have
                // taken more. The next connections may open twice as many.
                host.http2[index].phase = .draining
                if let learned = host.learned.streamsPerConnection {
                    host.learned.streamsPerConnection = learned > Int.max / 2 ? nil : learned * 2
                }
                return Actions(.close(host.http2[index].connection))
            }
            let next = host.takeStreams(on: index, shared.configuration, limit: 1)
            if !next.isEmpty { return next }
            return openStreams == 0 ? Actions(.startIdleClock(host.http2[index].connection)) : Actions()
        } ?? Actions()
    }

    /// An HTTP/2 connection with no stream reached its idle timeout: whether it closes (false
    /// when a stream opened on it meanwhile).
    mutating func http2IdleTimeoutReached(_ id: PoolConnectionID, key: Key) -> Bool {
        self.withHTTP2(id, key: key) { shared, host, index in
            guard host.http2[index].openStreams == 0 else { return false }
            host.http2[index].phase = .draining
            return true
        } ?? false
    }

    /// An HTTP/2 connection can take no new stream (closing: its PING went unanswered, an error,
    /// a stream timed out, or closed and its close not yet reported): it is no longer handed out.
    /// Before the server's first SETTINGS it still counts as opening, until it closes.
    mutating func http2ConnectionUnusable(_ id: PoolConnectionID, key: Key) {
        _ = self.withHTTP2(id, key: key) { shared, host, index in
            switch host.http2[index].phase {
            case .starting: host.http2[index].phase = .closingBeforeSettings
            case .active: host.http2[index].phase = .draining
            case .closingBeforeSettings, .draining: break
            }
        }
    }

    /// Runs `body` on the host of `key` and the index of its HTTP/2 connection `id`, if it has one.
    private mutating func withHTTP2<T>(_ id: PoolConnectionID, key: Key, _ body: (inout Shared, inout Host, Int) -> T) -> T? {
        self.withKnownHost(key) { shared, host -> T? in
            guard let index = host.http2.firstIndex(where: { $0.connection.id == id }) else { return nil }
            return body(&shared, &host, index)
        } ?? nil
    }

    // MARK: Shutdown

    /// Fails every waiting request, closes every connection and ends the back-offs;
    /// later requests fail, and connections that open later close.
    mutating func shutdown() -> Actions {
        self.shared.isShutDown = true
        var actions = Actions()
        for key in self.hosts.keys {
            self.withHost(key) { shared, host in
                for waiter in host.waiters.removeAll() { actions.append(.fail(waiter.request, ConnectionPoolError.shutDown)) }
                for connection in host.http1.values { actions.append(.close(connection)) }
                for entry in host.http2 { actions.append(.close(entry.connection)) }
                host.isBackingOff = false
            }
        }
        return actions
    }

}

extension ConnectionPoolStateMachine.Shared {
    // MARK: Opening connections

    /// Opens connections while waiters need them and the cap allows, each on the loop
    /// ``loop(forNewConnectionTo:preferred:)`` picks for the first waiter without one coming.
    mutating func openConnectionsNeeded(for key: Key, host: inout Host, into actions: inout Actions) {
        while host.needsConnection(self.configuration, offersHTTP2: key.offersHTTP2) {
            let waiter = host.waiters[offset: host.connectingCount]
            actions.append(self.startConnecting(key, host: &host, preferred: waiter.preferredLoop))
        }
    }

    /// After a connection failed or closed: one connection for the first waiter, when one has
    /// none coming and the cap allows.
    mutating func openReplacement(for key: Key, host: inout Host, into actions: inout Actions) {
        guard let first = host.waiters.first, host.needsConnection(self.configuration, offersHTTP2: key.offersHTTP2) else { return }
        actions.append(self.startConnecting(key, host: &host, preferred: first.preferredLoop))
    }

    private mutating func startConnecting(_ key: Key, host: inout Host, preferred: any EventLoop) -> Action {
        let id = PoolConnectionID(rawValue: self.nextConnectionID)
        self.nextConnectionID += 1
        let loop = self.loop(forNewConnectionTo: host, preferred: preferred)
        host.starting[id] = loop
        return .createConnection(id, key, on: loop)
    }

    /// The waiter's loop, except for a host that speaks HTTP/2: there a new connection goes to a
    /// loop none of its HTTP/2 connections (open or opening) uses, so that the host's streams
    /// spread over the loops; the waiter's when every loop has one.
    func loop(forNewConnectionTo host: Host, preferred: any EventLoop) -> any EventLoop {
        guard host.learned.applicationProtocol == .http2, !self.loops.isEmpty else { return preferred }
        func isUsed(_ loop: any EventLoop) -> Bool {
            host.http2.contains { $0.isUsable && $0.connection.eventLoop === loop } || host.starting.values.contains { $0 === loop }
        }
        guard isUsed(preferred) else { return preferred }
        let start = self.loops.firstIndex { $0 === preferred } ?? 0
        for offset in 1..<max(self.loops.count, 1) {
            let loop = self.loops[(start + offset) % self.loops.count]
            if !isUsed(loop) { return loop }
        }
        return preferred
    }
}

extension ConnectionPoolStateMachine: Sendable where Request: Sendable, Connection: Sendable {}
extension ConnectionPoolStateMachine.Configuration: Sendable {}
extension ConnectionPoolStateMachine.Shared: Sendable {}
