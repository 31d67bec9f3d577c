import NIOCore

extension ConnectionPoolStateMachine {
    /// What the pool knows of one host key: its connections, its waiters, what it learned.
    struct Host {
        struct Waiter {
            let request: Request
            let preferredLoop: any EventLoop
        }

        /// An idle HTTP/1.1 connection, and until when its server promised to keep it
        /// (`Keep-Alive: timeout`), if it did.
        struct IdleEntry {
            let connection: Connection
            let reusableUntil: NIODeadline?
        }

        /// An HTTP/2 connection and the streams open on it.
        struct HTTP2Entry {
            enum Phase: Equatable {
                /// Open, waiting for the server's first SETTINGS: it counts as opening.
                case starting
                /// Closing before the server's first SETTINGS (it failed, or went inactive): it
                /// still counts as opening, and its close is a failed connect.
                case closingBeforeSettings
                /// Streams may open.
                case active
                /// GOAWAY came, or it is closing or idle past its timeout: no new stream; it closes
                /// once its streams end.
                case draining
            }

            let connection: Connection
            var phase = Phase.starting
            var openStreams = 0
            /// The server's `SETTINGS_MAX_CONCURRENT_STREAMS` (100 until it says, or if it never does).
            var maximumStreams = 100
            /// Streams opened on the connection in all its life.
            var streamsOpened = 0
            /// How many streams the connection may open in all its life: what the host was seen to
            /// process on one connection (``Host/Learned/streamsPerConnection``), else no limit.
            var lifetimeLimit: Int

            init(connection: Connection, lifetimeLimit: Int) {
                self.connection = connection
                self.lifetimeLimit = lifetimeLimit
            }

            /// Whether it counts as opening: the server's first SETTINGS has not come.
            var isOpening: Bool { self.phase == .starting || self.phase == .closingBeforeSettings }

            /// Whether it may carry new streams, now or once the server's SETTINGS come.
            var isUsable: Bool { self.phase == .starting || self.phase == .active }

            func hasRoom(_ configuration: Configuration) -> Bool {
                self.phase == .active && self.openStreams < min(self.maximumStreams, configuration.http2MaximumStreamsPerConnection)
                    && self.streamsOpened < self.lifetimeLimit
            }

            /// Counts a stream that opens on the connection.
            mutating func openStream() {
                self.openStreams += 1
                self.streamsOpened += 1
            }

            /// The connection opened all the streams it may: it takes no more, and closes once they end.
            var isSpent: Bool { self.streamsOpened >= self.lifetimeLimit }
        }

        /// Open HTTP/1.1 connections, idle or leased.
        var http1: [PoolConnectionID: Connection] = [:]
        /// Idle HTTP/1.1 connections, the most recently given back last.
        var idle: [IdleEntry] = []
        /// HTTP/2 connections (starting, active or draining).
        var http2: [HTTP2Entry] = []
        /// Connections opening (before TCP, TLS and ALPN are done), and on which loop.
        var starting: [PoolConnectionID: any EventLoop] = [:]
        /// Requests waiting for a connection, in order of arrival (one sent again arrives again),
        /// and which of them go only on a new connection.
        var waiters = ConnectionWaiters<Waiter>()
        /// What the host taught the pool, kept when it has nothing else there
        /// (``ConnectionPoolStateMachine/remembered``).
        var learned = Learned()
        /// A back-off timer runs: no connection opens until it ends.
        var isBackingOff = false

        /// What a host taught the pool that outlives its connections.
        struct Learned: Equatable {
            /// What the host's last new TLS connection spoke (ALPN), once one opened.
            var applicationProtocol: TLSConnector.ApplicationProtocol?
            /// How many streams the host processes on one HTTP/2 connection, learned from a
            /// GOAWAY that left streams Courier had opened unprocessed (a server's
            /// `keepalive_requests`); nil until one did. New connections open no more streams than
            /// this in their life, so that requests are not sent to be dropped. Doubled when a
            /// connection that opened that many closes without a GOAWAY (the server would have
            /// taken more).
            var streamsPerConnection: Int?
            /// Connects that failed in a row (a connect that succeeds resets it).
            var failedConnects = 0
        }

        /// Whether the pool has nothing of it but what it learned: no connection, open or opening,
        /// no waiter, no back-off. It then leaves the pool's hosts (``ConnectionPoolStateMachine/remembered``
        /// keeps what it learned).
        var isAtRest: Bool {
            self.http1.isEmpty && self.http2.isEmpty && self.starting.isEmpty && self.waiters.isEmpty && !self.isBackingOff
        }

        /// Connections opening or open, idle or not, whatever they speak.
        var openCount: Int { self.http1.count + self.http2.count + self.starting.count }

        /// Connections opening: before ALPN, and HTTP/2 ones until the server's first SETTINGS.
        var connectingCount: Int {
            var count = self.starting.count
            for entry in self.http2 where entry.isOpening { count += 1 }
            return count
        }

        /// Whether another connection should open: some waiter has none coming, no back-off runs and
        /// the caps allow. Where ALPN offers HTTP/2 (`offersHTTP2`), until a connection has shown
        /// the host speaks HTTP/1.1, one opens at a time: an HTTP/2 connection carries many streams,
        /// and another opens only when every one is full, within the HTTP/2 cap.
        func needsConnection(_ configuration: Configuration, offersHTTP2: Bool) -> Bool {
            let connecting = self.connectingCount
            guard self.waiters.count > connecting, !self.isBackingOff, self.openCount < configuration.maximumConnectionsPerHost else {
                return false
            }
            guard offersHTTP2, self.learned.applicationProtocol != .http1_1 else { return true }
            // A spent connection (``HTTP2Entry/isSpent``) takes no stream again: it counts under
            // the cap on sockets above, not under this one, or requests would wait for its streams.
            return connecting == 0 && !self.http2.contains { $0.hasRoom(configuration) }
                && self.http2.count(where: { $0.isUsable && !$0.isSpent }) < configuration.http2MaximumConnectionsPerHost
        }

        /// Hands waiting requests, in order, to streams of the HTTP/2 connection at `index` while
        /// it has room (at most `limit`), counting each stream. `firstCarriesSetup`: the connection
        /// just became ready, and the first request may report its setup
        /// (``ConnectionPoolStateMachine/Action/runStream(_:on:becomingBusy:carriesSetup:)``).
        mutating func takeStreams(on index: Int, _ configuration: Configuration, limit: Int = .max, firstCarriesSetup: Bool = false) -> Actions {
            var actions = Actions()
            while actions.count < limit, self.http2[index].hasRoom(configuration), let waiter = self.waiters.popFirst() {
                self.http2[index].openStream()
                actions.append(.runStream(
                    waiter.request, on: self.http2[index].connection, becomingBusy: self.http2[index].openStreams == 1,
                    carriesSetup: firstCarriesSetup && actions.isEmpty))
            }
            return actions
        }

        /// Takes the idle connection to reuse: the most recently given back, on `loop` if one is
        /// idle there. Those past what their server promised leave the idle list and close.
        mutating func takeIdle(preferring loop: any EventLoop, now: NIODeadline, expired: inout Actions) -> Connection? {
            if self.idle.contains(where: { $0.reusableUntil.map { $0 <= now } == true }) {
                self.idle.removeAll { entry in
                    guard let until = entry.reusableUntil, until <= now else { return false }
                    expired.append(.close(entry.connection))
                    return true
                }
            }
            guard !self.idle.isEmpty else { return nil }
            let index = self.idle.lastIndex { $0.connection.eventLoop === loop } ?? self.idle.count - 1
            return self.idle.remove(at: index).connection
        }

        /// A GOAWAY on the connection at `index` named `lastStreamID`: if streams Courier opened
        /// were left unprocessed, the host's limit is what the server did process (at least one),
        /// for its other connections too. Those it leaves spent with no stream open close (they
        /// would otherwise wait for their idle timeout, taking a place under the cap).
        mutating func learn(fromGoAwayOn index: Int, lastStreamID: Int) -> Actions {
            // Client streams are odd: 1, 3, 5… `lastStreamID` is the last the server processed.
            let processed = max(0, (lastStreamID + 1) / 2)
            guard processed < self.http2[index].streamsOpened else { return Actions() }
            let limit = max(1, min(processed, self.learned.streamsPerConnection ?? .max))
            self.learned.streamsPerConnection = limit
            var spent = Actions()
            for other in self.http2.indices {
                self.http2[other].lifetimeLimit = min(self.http2[other].lifetimeLimit, limit)
                let entry = self.http2[other]
                if other != index, entry.phase == .active, entry.isSpent, entry.openStreams == 0 {
                    self.http2[other].phase = .draining
                    spent.append(.close(entry.connection))
                }
            }
            return spent
        }
    }
}

extension ConnectionPoolStateMachine.Host: Sendable where Request: Sendable, Connection: Sendable {}
extension ConnectionPoolStateMachine.Host.Waiter: Sendable where Request: Sendable, Connection: Sendable {}
extension ConnectionPoolStateMachine.Host.IdleEntry: Sendable where Request: Sendable, Connection: Sendable {}
extension ConnectionPoolStateMachine.Host.HTTP2Entry: Sendable where Request: Sendable, Connection: Sendable {}
extension ConnectionPoolStateMachine.Host.Learned: Sendable where Request: Sendable, Connection: Sendable {}
