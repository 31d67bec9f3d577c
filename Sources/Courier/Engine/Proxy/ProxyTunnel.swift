import NIOCore
import NIOPosix
import NIOSOCKS

/// Opens tunnels through proxies on channels already connected (TCP) to them: what the
/// connection pool calls between connecting and adding TLS or HTTP handlers. Both entry points
/// may be called from any thread; they run on the channel's event loop, add their handlers at the
/// end of the pipeline, and return a future that succeeds once the tunnel is up with every handler
/// they added removed, or fails with a ``CourierError`` naming the proxy, the target and what
/// happened, the channel then closed:
///
/// | what happened | code |
/// |---|---|
/// | 407 (or 401, as tinyproxy answers); a SOCKS5 proxy accepts no offered method, or refuses the credentials | ``CourierError/Code/proxyAuthenticationRequired`` |
/// | another non-2xx answer (403, 502…); a SOCKS5 error reply | ``CourierError/Code/proxyRefused`` |
/// | not HTTP / not SOCKS5, a head over 16 KiB, bytes after the answer | ``CourierError/Code/invalidResponse`` |
/// | the proxy closed or reset the connection first | ``CourierError/Code/connectionClosed`` |
/// | an `https://` proxy's TLS failed meanwhile (a TLS 1.3 proxy refusing the client certificate) | ``CourierError/Code/tlsFailure`` |
/// | no answer within `timeout` | ``CourierError/Code/timedOut`` |
/// | the tunnel cannot be asked for (credentials or a target SOCKS5 cannot carry) | ``CourierError/Code/invalidProxyConfiguration`` |
/// | a `socks5://` proxy's target name has no address | ``CourierError/Code/connectionFailed`` |
///
/// A refusal's ``CourierError/response`` holds the proxy's status and fields
/// (`Proxy-Authenticate` for a 407, `WWW-Authenticate` for tinyproxy's 401); the pool adds the request with ``CourierError/adding(request:response:data:metrics:)``.
enum ProxyTunnel {
    /// The pool's one call between TCP connect and TLS or HTTP handlers: opens the tunnel `route`
    /// needs to `host`:`port` on `channel` (connected to ``ProxyRoute/connectionAddress(host:port:)``),
    /// a `CONNECT` for ``ProxyRoute/connectTunnel(_:)``, SOCKS5 for ``ProxyRoute/socksTunnel(_:)``,
    /// and succeeds at once for ``ProxyRoute/direct`` and ``ProxyRoute/forward(_:)``. On success
    /// the pipeline is as it was (every handler added is gone) and the next byte written goes to
    /// the server; on failure the channel is closed and the error is a ``CourierError`` naming the
    /// proxy and the target (see the table above). Credentials are sent up front
    /// (`Proxy-Authorization: Basic` on the `CONNECT`); a 407 (or 401) with a Digest challenge is
    /// answered (``HTTPConnectStateMachine``), on the same connection when the proxy keeps it open,
    /// else the future fails with a ``DigestAnswer`` as the error's ``CourierError/underlyingError``
    /// for the caller to connect again and call this with it; any other 407 is not retried. With
    /// `challenges`, a proxy that sent a Digest challenge for an earlier tunnel gets the answer to
    /// it (its nonce counted on) instead of Basic, and the challenge a tunnel answered is kept there
    /// once it opens.
    /// - Parameters:
    ///   - channel: A channel connected to the proxy, nothing in its pipeline that reads bytes.
    ///   - host: The server's host: the URL's (an IPv6 address with or without brackets).
    ///   - port: The server's port (the URL's, or the scheme's default).
    ///   - route: The route, from ``ProxyConfiguration/route(for:)``.
    ///   - timeout: How long the proxy may take to open the tunnel (the connect timeout).
    ///   - answer: The answer to a Digest challenge the proxy sent on a connection it then
    ///     closed (a ``DigestAnswer`` the last call failed with): the `CONNECT` carries it.
    ///   - challenges: The Digest challenges proxies sent for earlier tunnels and requests (the
    ///     pool's), or nil to answer each tunnel's afresh.
    ///   - lookup: How the configuration has names looked up: a `socks5://` proxy is sent the
    ///     first address it gives the server's name.
    ///   - userAgent: The `User-Agent` a `CONNECT` carries (the engine's
    ///     ``NIOEngine/Configuration/userAgent``), as curl's, Go's and OkHttp's do: a proxy that
    ///     sorts clients by it sees the same for `https` as for `http`.
    /// - Returns: A future that succeeds once the tunnel is open (or none is needed).
    static func establish(
        on channel: any Channel,
        target host: String,
        port: Int,
        route: ProxyRoute,
        timeout: TimeAmount,
        answering answer: DigestAnswer? = nil,
        challenges: ProxyDigestChallenges? = nil,
        lookup: HostLookup = .system,
        userAgent: String? = nil
    ) -> EventLoopFuture<Void> {
        switch route {
        case .direct, .forward:
            return channel.eventLoop.makeSucceededVoidFuture()
        case .connectTunnel(let proxy):
            return Self.connect(
                on: channel, through: proxy, to: Self.unbracketed(host), port: port, timeout: timeout, answering: answer,
                challenges: challenges, userAgent: userAgent)
        case .socksTunnel(let proxy):
            return Self.socks(on: channel, through: proxy, to: Self.unbracketed(host), port: port, timeout: timeout, lookup: lookup)
        }
    }

    /// `host` without the brackets of an IPv6 literal.
    private static func unbracketed(_ host: String) -> String {
        host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
    }

    /// The answer to a proxy's Digest challenge that came on a connection the proxy closed: the
    /// `Proxy-Authorization` of the next connection's `CONNECT`, and how many answers the tunnel
    /// gave with it. The ``CourierError/underlyingError`` of the failure that asks for it.
    struct DigestAnswer: Error, Sendable, Hashable {
        var authorization: String
        var answers: Int
        /// The challenge `authorization` answers (with nonce count 1), remembered once the tunnel
        /// opens.
        var challenge: HTTPAuthorization.DigestChallenge?
    }

    /// Opens an HTTP `CONNECT` tunnel to `host`:`port` through the HTTP proxy `channel` is
    /// connected to, with `Proxy-Authorization: Basic` when `proxy` has credentials (or
    /// `answer`), answering a Digest challenge with them.
    /// - Parameters:
    ///   - channel: A channel connected to the proxy, nothing in its pipeline that reads bytes.
    ///   - proxy: The proxy (for its credentials and the messages).
    ///   - host: The server's host: a name, or an IP address (IPv6 without brackets).
    ///   - port: The server's port.
    ///   - timeout: How long the proxy may take to answer.
    ///   - answer: A Digest answer for the first `CONNECT`, from an earlier connection's challenge.
    ///   - challenges: Where the proxy's earlier Digest challenge is, to answer at once (without
    ///     `answer`), and where the challenge this tunnel answers goes once it opens.
    /// - Returns: A future that succeeds once the tunnel is open and the handler gone.
    static func connect(
        on channel: any Channel,
        through proxy: NIOEngine.Proxy,
        to host: String,
        port: Int,
        timeout: TimeAmount,
        answering answer: DigestAnswer? = nil,
        challenges: ProxyDigestChallenges? = nil,
        userAgent: String? = nil
    ) -> EventLoopFuture<Void> {
        Self.onLoop(of: channel) {
            let promise = channel.eventLoop.makePromise(of: Void.self)
            let target = NIOEngine.Proxy.authority(host: host, port: port)
            // A challenge remembered from an earlier tunnel is answered up front; a 407 to that
            // answer (its nonce gone stale, or forgotten) is answered afresh, as a first one.
            let remembered = answer == nil ? challenges?.authorization(for: proxy, method: "CONNECT", uri: target) : nil
            let handshake = HTTPConnectStateMachine(
                host: host, port: port, authorization: answer?.authorization ?? remembered ?? proxy.basicAuthorization,
                credential: proxy.credential, digestAnswers: answer?.answers ?? 0, answered: answer?.challenge, userAgent: userAgent)
            let handler = HTTPConnectHandler(handshake, proxy: proxy, target: target, timeout: timeout, promise: promise) { handshake in
                if let challenge = handshake.learnedChallenge { challenges?.record(challenge, for: proxy, nonceCount: 1) }
            }
            try channel.pipeline.syncOperations.addHandler(handler)
            return promise.futureResult
        }
    }

    /// Opens a SOCKS5 tunnel (the `CONNECT` command) to `host`:`port` through the SOCKS5 proxy
    /// `channel` is connected to, with ``SOCKS5StateMachine``: no authentication, or the proxy's
    /// user name and password (RFC 1929) when it has them and asks for them. An IP address goes
    /// to the proxy as an address; a host name goes as a name (the proxy resolves it, `socks5h://`),
    /// or, when the proxy ``NIOEngine/Proxy/resolvesHostNamesLocally`` (`socks5://`), is first
    /// looked up (``HostLookup``: the configuration's table or resolver, else the system's) and its first address sent
    /// (as curl does). A name without an address fails with
    /// ``CourierError/Code/connectionFailed`` before the proxy is asked.
    /// - Parameters:
    ///   - channel: A channel connected to the proxy, nothing in its pipeline that reads bytes.
    ///   - proxy: The proxy (its credentials, and for the messages).
    ///   - host: The server's host: a name, or an IP address (IPv6 without brackets).
    ///   - port: The server's port.
    ///   - timeout: How long the proxy may take to open the tunnel.
    ///   - lookup: How the configuration has names looked up.
    /// - Returns: A future that succeeds once the tunnel is open and the handler gone.
    static func socks(
        on channel: any Channel,
        through proxy: NIOEngine.Proxy,
        to host: String,
        port: Int,
        timeout: TimeAmount,
        lookup: HostLookup = .system
    ) -> EventLoopFuture<Void> {
        let target = NIOEngine.Proxy.authority(host: host, port: port)
        return Self.onLoop(of: channel) {
            let address: SOCKSAddress
            do throws(ProxyTunnelFailure) {
                address = try Self.socksAddress(host: host, port: port)
            } catch {
                throw error.courierError(proxy: proxy, target: target)
            }
            // Made for the name too, so that credentials SOCKS5 cannot carry fail before a lookup.
            let machine = try Self.handshake(to: address, through: proxy, target: target)
            guard proxy.resolvesTargetLocally, case .domain(let name, _) = address else {
                return try Self.startSOCKS(on: channel, through: proxy, machine: machine, target: target, timeout: timeout)
            }
            // `socks5://`: the name is looked up here (the configuration's table or resolver, else
            // the system's, blocking, off the loop), its first address sent. The timeout bounds
            // the lookup and the handshake together, as a direct connection's bounds its lookup
            // and connect: a resolver that never answers would otherwise hold the request and the
            // proxy's connection until the resource timeout. (Closing the channel cancels it.)
            // Both the timer and the lookup's answer complete the promise on the channel's loop;
            // the later of the two is ignored (a promise keeps its first result).
            let start = NIODeadline.now()
            let resolved = channel.eventLoop.makePromise(of: SocketAddress.self)
            let timer = channel.eventLoop.scheduleTask(in: timeout) {
                resolved.fail(ProxyTunnelFailure.timedOut(timeout).courierError(proxy: proxy, target: target))
            }
            lookup.firstAddress(of: name, port: port, over: channel).whenComplete { result in
                timer.cancel()
                resolved.completeWith(
                    result.mapError { error -> any Error in
                        ProxyTunnelFailure.nameLookup("\(error)").courierError(proxy: proxy, target: target, underlyingError: error)
                    })
            }
            return resolved.futureResult.flatMap { resolved in
                Self.onLoop(of: channel) {
                    let machine = try Self.handshake(to: .address(resolved), through: proxy, target: target)
                    // What is left of the timeout (the lookup took the rest).
                    let left = max(timeout - (NIODeadline.now() - start), .milliseconds(1))
                    return try Self.startSOCKS(on: channel, through: proxy, machine: machine, target: target, timeout: left)
                }
            }.flatMapErrorThrowing { error in
                channel.close(promise: nil)
                throw error
            }
        }
    }

    /// The SOCKS5 handshake for `address` with `proxy`'s credentials; what it cannot carry is
    /// told as a ``CourierError`` naming the proxy and `target`.
    private static func handshake(
        to address: SOCKSAddress, through proxy: NIOEngine.Proxy, target: String
    ) throws(CourierError) -> SOCKS5StateMachine {
        do throws(ProxyTunnelFailure) {
            return try SOCKS5StateMachine(target: address, username: proxy.username, password: proxy.password)
        } catch {
            throw error.courierError(proxy: proxy, target: target)
        }
    }

    /// Adds a ``ProxyHandshakeHandler`` for `machine` to `channel`'s pipeline (on its loop): the
    /// handshake starts at once.
    private static func startSOCKS(
        on channel: any Channel,
        through proxy: NIOEngine.Proxy,
        machine: SOCKS5StateMachine,
        target: String,
        timeout: TimeAmount
    ) throws -> EventLoopFuture<Void> {
        let promise = channel.eventLoop.makePromise(of: Void.self)
        let handler = SOCKSTunnelHandler(machine, proxy: proxy, target: target, timeout: timeout, promise: promise)
        try channel.pipeline.syncOperations.addHandler(handler)
        return promise.futureResult
    }

    /// The SOCKS5 form of the target: an address for an IP literal, else the name.
    static func socksAddress(host: String, port: Int) throws(ProxyTunnelFailure) -> SOCKSAddress {
        guard (1...65535).contains(port) else { throw .unusable("the port \(port) is not between 1 and 65535") }
        var name = host
        if name.hasPrefix("["), name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        if IPAddress(name) != nil, let address = try? SocketAddress(ipAddress: name, port: port) {
            return .address(address)
        }
        guard !name.isEmpty, name.utf8.count <= 255 else {
            throw .unusable("SOCKS5 carries host names of 1 to 255 bytes")
        }
        return .domain(name, port: port)
    }

    /// Runs `body` on `channel`'s event loop (now, when called there); a thrown error closes the
    /// channel and fails the future.
    private static func onLoop(
        of channel: any Channel,
        _ body: @escaping @Sendable () throws -> EventLoopFuture<Void>
    ) -> EventLoopFuture<Void> {
        let run: @Sendable () -> EventLoopFuture<Void> = {
            do {
                return try body()
            } catch {
                channel.close(promise: nil)
                return channel.eventLoop.makeFailedFuture(error)
            }
        }
        if channel.eventLoop.inEventLoop { return run() }
        return channel.eventLoop.flatSubmit(run)
    }
}

extension ProxyTunnelFailure: Error {}
