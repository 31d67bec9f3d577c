import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix

/// How ``ConnectionPool`` opens a connection: TCP (to the proxy, if any), the proxy's tunnel,
/// TLS, then the pipeline of what ALPN chose; and HTTP/2's settings.
extension ConnectionPool {
    /// Opens connection `id` to `key` on `eventLoop` (the state machine's
    /// ``ConnectionPoolStateMachine/Action/createConnection(_:_:on:)``) and reports how it went.
    func connect(_ key: Key, id: PoolConnectionID, on eventLoop: any EventLoop) {
        let decompressionRatio = self.settings.decompressionRatio
        @Sendable func addHTTP1Handlers(to channel: any Channel) throws {
            let pipeline = channel.pipeline.syncOperations
            let readWatcher = HTTP1ReadWatcher()
            try pipeline.addHandler(readWatcher)
            // NIO's client handlers, with interim (1xx) heads forwarded: `100 Continue` releases
            // a body held back for it (`addHTTPClientHandlers()` would drop them).
            try pipeline.addHandlers([
                HTTPRequestEncoder(),
                ByteToMessageHandler(
                    HTTPResponseDecoder(
                        leftOverBytesStrategy: .dropBytes, informationalResponseStrategy: .forward, limitConfiguration: Self.http1HeadLimits)),
                NIOHTTPRequestHeadersValidator(),
            ])
            var counter: ResponseBodyCounter?
            if let decompressionRatio {
                // The decompressor counts the body as it came (the task metrics' wire count).
                let bodyCounter = ResponseBodyCounter()
                counter = bodyCounter
                try pipeline.addHandler(HTTP1ResponseDecompressor(ratio: decompressionRatio, counter: bodyCounter))
            }
            try pipeline.addHandler(HopHandler(readWatcher: readWatcher, bodyCounter: counter))
        }
        let tls = key.http1Only ? self.http1OnlyTLS : self.tls
        // How far a setup that failed went, for the transaction waiting for it.
        let failedSetup = NIOLockedValueBox<ConnectionEstablishment?>(nil)
        let keepFailedSetup: @Sendable (ConnectionEstablishment) -> Void = { setup in failedSetup.withLockedValue { $0 = setup } }
        let opened = self.openChannel(to: key, tls: tls, on: eventLoop, failedSetup: keepFailedSetup) { channel, applicationProtocol in
            switch applicationProtocol {
            case .http1_1: try addHTTP1Handlers(to: channel)
            case .http2: try Self.addHTTP2Handlers(to: channel, settings: self.settings.http2)
            }
        }
        opened.whenComplete { result in
            switch result {
            case .success((let channel, .http1_1, let establishment)):
                self.settings.openConnections.track(channel, speaking: .http1_1)
                do {
                    let handler = try channel.pipeline.syncOperations.handler(type: HopHandler.self)
                    let connection = HTTP1Connection(
                        id: id, channel: channel, key: key, pool: self, handler: handler, establishment: establishment)
                    handler.connection = connection
                    self.connectionOpened(connection)
                } catch {
                    channel.close(promise: nil)
                    self.connectionFailed(id, key: key, error: error, setup: establishment)
                }
            case .success((let channel, .http2, let establishment)):
                self.settings.openConnections.track(channel, speaking: .http2)
                do {
                    let pipeline = channel.pipeline.syncOperations
                    let handler = try pipeline.handler(type: HTTP2ConnectionHandler.self)
                    let connection = HTTP2Connection(
                        id: id, channel: channel, key: key, pool: self, handler: handler, establishment: establishment)
                    self.http2ConnectionOpened(connection)
                    // After the pool counts it: SETTINGS that came during the handshake's end go to it.
                    handler.attach(connection)
                } catch {
                    channel.close(promise: nil)
                    self.connectionFailed(id, key: key, error: error, setup: establishment)
                }
            case .failure(let error):
                self.connectionFailed(id, key: key, error: error, setup: failedSetup.withLockedValue { $0 })
            }
        }
    }

    /// Opens a channel to `key` on `eventLoop`: TCP (to the proxy, if any), the proxy's tunnel
    /// when the route makes one, TLS through `tls` for a secure key (its handshake timeout bounds
    /// it), then `configure` adds the handlers for the protocol agreed (HTTP/1.1 without TLS).
    /// Returns the channel, that protocol and the setup's times for the metrics of the
    /// transaction the connection was opened for. The pool's connections (``connect(_:id:on:)``) and WebSockets' (which are never
    /// pooled) open this one way. When the setup fails after it began, `failedSetup` is given its
    /// times as far as it went (the lookup, the connect's and the TLS handshake's starts), before
    /// the future fails.
    func openChannel(
        to key: Key,
        tls: TLSConnector?,
        on eventLoop: any EventLoop,
        failedSetup: (@Sendable (ConnectionEstablishment) -> Void)? = nil,
        configure: @escaping @Sendable (any Channel, TLSConnector.ApplicationProtocol) throws -> Void
    ) -> EventLoopFuture<(any Channel, TLSConnector.ApplicationProtocol, ConnectionEstablishment)> {
        let route = key.route
        let address = route.connectionAddress(host: key.host, port: key.port)
        // A proxy's port is the configuration's, unchecked until here (a server's is checked with
        // its URL, ``ConnectionPool/key(for:)``): no socket address holds 99999 (SwiftNIO traps).
        if key.socketPath == nil, !Self.portRange.contains(address.port) {
            return eventLoop.makeFailedFuture(
                CourierError(.invalidRequest, "\(key): \(address.host):\(address.port): \(address.port) is not a TCP port (0 to 65535)"))
        }
        // An `https://` proxy: TLS to it first, offering HTTP/1.1 only (a proxy speaks it).
        var proxyTLS: TLSConnector?
        if let proxy = route.proxy, proxy.usesTLS {
            guard let connector = self.http1OnlyTLS else {
                return eventLoop.makeFailedFuture(CourierError(.unsupportedScheme, "\(key): this engine has no TLS for the \(proxy.displayName)"))
            }
            proxyTLS = connector
        }
        if key.tls, tls == nil {
            return eventLoop.makeFailedFuture(CourierError(.unsupportedScheme, "\(key): this engine has no TLS"))
        }
        // The setup's times: filled in on the loop. A Unix socket has no name to look up (and a
        // resolver never asked would leave its promises unfulfilled: so it is made only once
        // nothing above can return before the connect asks it).
        let resolver = key.socketPath == nil ? TimedResolver(loop: eventLoop, lookup: self.settings.hostLookup) : nil
        let setup = NIOLockedValueBox(ConnectionEstablishment(connectStart: .now, isProxyConnection: key.route != .direct))
        let connectTimeout = self.settings.connectTimeout
        // A function, not a value: a proxy that closes the connection its Digest challenge came
        // on is connected to again (``tunnel(to:with:proxyTLS:key:on:timeout:challenges:answering:)``).
        let bootstrap: @Sendable () -> ClientBootstrap = {
            let bootstrap = ClientBootstrap(group: eventLoop)
                .connectTimeout(connectTimeout)
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
            return resolver.map { bootstrap.resolver($0) } ?? bootstrap
        }
        let opened: EventLoopFuture<(any Channel, TLSConnector.ApplicationProtocol)>
        if key.tls, let tls {
            // TCP (to the proxy, if any), the proxy's tunnel, then TLS, then what ALPN chose.
            opened = Self.tunnel(
                to: address, with: bootstrap, proxyTLS: proxyTLS, key: key, on: eventLoop, timeout: connectTimeout,
                challenges: self.proxyDigestChallenges, lookup: self.settings.hostLookup, userAgent: self.settings.userAgent
            ).flatMap { channel in
                setup.withLockedValue { $0.secureConnectionStart = .now }
                return tls.startTLS(on: channel, host: key.host, port: key.port) { agreed, channel in
                    setup.withLockedValue { setup in
                        setup.secureConnectionEnd = .now
                        setup.tlsVersion = agreed.tlsVersion
                        setup.tlsCipherSuite = agreed.cipherSuite
                    }
                    try configure(channel, agreed.applicationProtocol)
                }.map { agreed in (channel, agreed.applicationProtocol) }
            }
        } else if route != .direct {
            // TCP to the proxy, its tunnel when it makes one (a forwarding proxy takes the
            // request in absolute form on this connection), then HTTP/1.1.
            opened = Self.tunnel(
                to: address, with: bootstrap, proxyTLS: proxyTLS, key: key, on: eventLoop, timeout: connectTimeout,
                challenges: self.proxyDigestChallenges, lookup: self.settings.hostLookup, userAgent: self.settings.userAgent
            ).flatMapThrowing { channel in
                do {
                    try configure(channel, .http1_1)
                } catch {
                    channel.close(promise: nil)
                    throw error
                }
                return (channel, .http1_1)
            }
        } else {
            opened = Self.connect(
                bootstrap().channelInitializer { channel in channel.eventLoop.makeCompletedFuture { try configure(channel, .http1_1) } },
                to: address, of: key
            ).map { channel in (channel, .http1_1) }
        }
        // The setup's times once it ended, well or not.
        @Sendable func times() -> ConnectionEstablishment {
            setup.withLockedValue { setup in
                let lookup = resolver?.times ?? TimedResolver.Times()
                setup.domainLookupStart = lookup.start
                setup.domainLookupEnd = lookup.end
                // The TCP connect began once the lookup ended, if it found an address.
                if let end = lookup.end { setup.connectStart = end }
                setup.connectBegan = !lookup.failed && (lookup.start == nil || lookup.end != nil)
                return setup
            }
        }
        return opened.map { channel, applicationProtocol in
            var connected = times()
            connected.connectEnd = .now
            // Read once here, on the channel's loop, for every transaction the connection carries.
            connected.localAddress = channel.localAddress
            connected.remoteAddress = channel.remoteAddress
            return (channel, applicationProtocol, connected)
        }.flatMapErrorThrowing { error in
            failedSetup?(times())
            throw error
        }
    }

    /// TCP to `address` (the proxy's, when `key`'s route has one), TLS to an `https://` proxy
    /// through `proxyTLS`, then the proxy's tunnel when the route makes one: the channel, ready
    /// for TLS or HTTP. A proxy that closes the connection its Digest challenge came on
    /// (``ProxyTunnel/DigestAnswer``) is connected to again with the answer, as often as the
    /// tunnel may answer (twice: a stale nonce). `challenges` are the pool's: a proxy's Digest
    /// challenge, once answered, is answered at once by the next tunnel's `CONNECT`.
    static func tunnel(
        to address: (host: String, port: Int),
        with bootstrap: @escaping @Sendable () -> ClientBootstrap,
        proxyTLS: TLSConnector?,
        key: Key,
        on eventLoop: any EventLoop,
        timeout: TimeAmount,
        challenges: ProxyDigestChallenges,
        lookup: HostLookup,
        userAgent: String? = nil,
        answering answer: ProxyTunnel.DigestAnswer? = nil
    ) -> EventLoopFuture<any Channel> {
        Self.connect(bootstrap(), to: address, of: key).flatMap { channel in
            Self.secureToProxy(channel, of: key.route, with: proxyTLS).flatMap {
                ProxyTunnel.establish(
                    on: channel, target: key.host, port: key.port, route: key.route, timeout: timeout, answering: answer,
                    challenges: challenges, lookup: lookup, userAgent: userAgent)
            }.map { channel }
        }.flatMapError { error in
            guard let next = (error as? CourierError)?.underlyingError as? ProxyTunnel.DigestAnswer,
                next.answers > (answer?.answers ?? 0), next.answers <= HTTPConnectStateMachine.maximumDigestAnswers
            else { return eventLoop.makeFailedFuture(error) }
            return Self.tunnel(
                to: address, with: bootstrap, proxyTLS: proxyTLS, key: key, on: eventLoop, timeout: timeout, challenges: challenges,
                lookup: lookup, userAgent: userAgent, answering: next)
        }
    }

    /// Connects `bootstrap` to `address` over TCP, or to `key`'s Unix-domain socket when it has one
    /// (``Key/socketPath``), whose failure names the socket.
    private static func connect(_ bootstrap: ClientBootstrap, to address: (host: String, port: Int), of key: Key) -> EventLoopFuture<any Channel> {
        guard let path = key.socketPath else { return bootstrap.connect(host: address.host, port: address.port) }
        return bootstrap.connect(unixDomainSocketPath: path).flatMapErrorThrowing { error in
            throw UnixSocketConnectFailure(path: path, underlying: error)
        }
    }

    /// TLS to `route`'s proxy when it is an `https://` one, through `tls` (the proxy's certificate
    /// checked by the policy for its host name, SNI naming it); at once otherwise. What comes
    /// after (the tunnel, TLS to the server) goes inside it.
    private static func secureToProxy(_ channel: any Channel, of route: ProxyRoute, with tls: TLSConnector?) -> EventLoopFuture<Void> {
        guard let proxy = route.proxy, proxy.usesTLS, let tls else { return channel.eventLoop.makeSucceededVoidFuture() }
        return tls.startTLS(on: channel, host: proxy.host, port: proxy.port) { _, _ in }.map { _ in }.flatMapErrorThrowing { error in
            // Its code as any handshake's, its message naming the proxy (not the request's server).
            switch error {
            case let failure as ServerTrustFailure:
                throw CourierError(failure.code, "\(proxy.displayName): \(failure.summary)", underlyingError: failure)
            case var failure as CourierError:
                failure.message = "\(proxy.displayName): \(failure.message)"
                throw failure
            default:
                throw error
            }
        }
    }

    /// The flow-control window of each HTTP/2 stream: how much of a paused download the server may
    /// send before it must wait.
    static let http2StreamWindow = 256 * 1024
    /// The flow-control window of a whole HTTP/2 connection.
    static let http2ConnectionWindow = 4 * 1024 * 1024

    /// The largest response header list (RFC 9113 6.5.2: names, values and 32 bytes a field)
    /// Courier's HTTP/2 connections take, advertised as `SETTINGS_MAX_HEADER_LIST_SIZE` (the
    /// setting's initial value is unbounded) and enforced by swift-nio-http2's header decoder once
    /// the server has acknowledged it (16 KiB before).
    ///
    /// 256 KiB, as browsers take. swift-nio-http2's default, 16 KiB, is below what real servers
    /// send now and then (large cookies, policies, debugging headers), and the limit is advisory:
    /// Go's server and hypercorn send larger lists whatever the client advertised, and curl takes
    /// them. A list past the limit cannot be skipped, as the header compression's state would be
    /// lost with it: the connection closes, with every stream on it, and the error names the
    /// limit.
    static let http2MaximumHeaderListSize = 256 * 1024

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

    /// How large a response head may be over HTTP/1.1: what HTTP/2 takes
    /// (``http2MaximumHeaderListSize``), for the field and the whole head, so that a server's
    /// response reads the same over either (NIO's default, 80 KiB, refused over HTTP/1.1 what
    /// HTTP/2 took; curl takes 100 KiB, 300 KiB in newer versions).
    static let http1HeadLimits: NIOHTTPDecoderLimitConfiguration = {
        var limits = NIOHTTPDecoderLimitConfiguration()
        limits.maxHeaderFieldSize = ConnectionPool.http2MaximumHeaderListSize
        limits.maxHeaderListSize = ConnectionPool.http2MaximumHeaderListSize
        return limits
    }()

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
    static func addHTTP2Handlers(to channel: any Channel, settings: HTTP2ConnectionStateMachine.Configuration) throws {
        var connection = NIOHTTP2Handler.ConnectionConfiguration()
        connection.initialSettings = [
            HTTP2Setting(parameter: .enablePush, value: 0),
            HTTP2Setting(parameter: .maxConcurrentStreams, value: 0),
            HTTP2Setting(parameter: .initialWindowSize, value: Self.http2StreamWindow),
            HTTP2Setting(parameter: .maxHeaderListSize, value: Self.http2MaximumHeaderListSize),
        ]
        connection.maximumRecentlyResetStreams = Self.http2RememberedResets
        // Empty DATA frames are legal (RFC 9113 6.1), and swift-nio-http2's count of them (a
        // server's defence, default 1) runs across the connection's streams until a HEADERS or
        // END_STREAM, so two in one streamed response ended the connection. A server flooding a
        // client gains nothing from empty frames that one-byte frames, never limited, would not
        // give it: no limit.
        connection.maximumSequentialEmptyDataFrames = Int.max
        // A list of up to the limit above, in frames of the default 16 KiB (servers split a block
        // at the frame size Courier allows): a HEADERS frame and this many CONTINUATION frames.
        // swift-nio-http2's default, 5, is a bound against CONTINUATION floods that a list past
        // 96 KiB already passes; this one stays a bound.
        connection.maximumSequentialContinuationFrames = Self.http2MaximumHeaderListSize / (16 * 1024) + 1
        // Off in both directions (its one switch): the server's blocks are checked by each
        // stream (`HTTP2StreamStateMachine.check`), Courier's by how they are made
        // (`HopHandler.headerBlock`). On, it was 9 % of a busy connection's loop, more than half
        // of it spent on Courier's own requests.
        connection.headerBlockValidation = .disabled
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
}
