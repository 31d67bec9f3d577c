import NIOCore
import NIOSSL

/// TLS for Courier's own connections: what a connection pool calls for an `https` connection.
///
/// ``startTLS(on:host:port:configurePipeline:)`` adds swift-nio-ssl's `NIOSSLClientHandler` to a
/// connected channel (directly, or through a proxy's tunnel) with SNI, ALPN, the policy's client
/// identity and minimum TLS version, and a custom verification callback that hands the whole
/// presented chain to ``SecurityPolicyEvaluator`` (the policy ``ServerTrustPolicies`` gives the
/// host), so that a refused server fails inside the one handshake, before any request byte, with a
/// ``ServerTrustFailure`` naming the host, the policy and the reason. BoringSSL still proves that
/// the server holds the leaf's private key; only the chain and name checks are Courier's.
///
/// One connector serves every host: a policy per host needs no client per host.
struct TLSConnector: Sendable {
    /// An application protocol offered through ALPN.
    enum ApplicationProtocol: String, Sendable, Hashable, CustomStringConvertible {
        case http2 = "h2"
        case http1_1 = "http/1.1"

        var description: String { self == .http2 ? "HTTP/2" : "HTTP/1.1" }

        /// What a session offers: HTTP/2 first, then HTTP/1.1, unless it keeps to HTTP/1.1.
        static func offered(for version: NIOEngine.HTTPVersionPolicy) -> [ApplicationProtocol] {
            version == .http1Only ? [.http1_1] : [.http2, .http1_1]
        }
    }

    /// What one distinct policy needs on a connection.
    private struct PolicyTLS: Sendable {
        let evaluator: SecurityPolicyEvaluator
        /// The context, or why it could not be made (a client identity BoringSSL refuses).
        let context: Result<NIOSSLContext, CourierError>
    }

    /// The policy per host.
    let serverTrust: ServerTrustPolicies
    /// The protocols offered, in order of preference.
    let applicationProtocols: [ApplicationProtocol]
    /// How long a handshake may take, from the moment TLS starts on a connected channel.
    let handshakeTimeout: TimeAmount
    private let policies: [SecurityPolicy: PolicyTLS]
    /// What stands for the system's roots (read before the first handshake that needs them).
    private let trustStore: TrustStore

    /// A connector for `serverTrust`'s policies.
    /// - Parameters:
    ///   - serverTrust: The policy per host.
    ///   - applicationProtocols: What ALPN offers, preferred first (``ApplicationProtocol/offered(for:)``).
    ///   - handshakeTimeout: The bound on one handshake; past it the connection fails with
    ///     ``CourierError/Code/timedOut`` and is closed.
    ///   - trustStore: What stands for the system's roots; ``TrustStore/system`` unless a test
    ///     brings its own. Nothing is read here: the first connection whose policy consults them
    ///     reads them, on NIO's thread pool, before its handshake starts.
    init(
        serverTrust: ServerTrustPolicies,
        applicationProtocols: [ApplicationProtocol] = [.http2, .http1_1],
        handshakeTimeout: TimeAmount = .seconds(10),
        trustStore: TrustStore = .system
    ) {
        self.serverTrust = serverTrust
        self.applicationProtocols = applicationProtocols
        self.handshakeTimeout = handshakeTimeout
        self.trustStore = trustStore
        var policies: [SecurityPolicy: PolicyTLS] = [:]
        for policy in serverTrust.distinctPolicies {
            policies[policy] = PolicyTLS(
                evaluator: SecurityPolicyEvaluator(policy: policy, trustStore: trustStore),
                context: Self.makeContext(policy, applicationProtocols: applicationProtocols)
            )
        }
        self.policies = policies
    }

    /// A connector with the same policies, timeout and roots that offers `applicationProtocols`.
    func offering(_ applicationProtocols: [ApplicationProtocol]) -> TLSConnector {
        TLSConnector(
            serverTrust: self.serverTrust, applicationProtocols: applicationProtocols, handshakeTimeout: self.handshakeTimeout,
            trustStore: self.trustStore)
    }

    /// How long a closing connection waits for the server's TLS close_notify.
    static let closeNotifyWait = TimeAmount.milliseconds(100)

    /// swift-nio-ssl's context for a policy: the policy's client identity and minimum version, the
    /// offered protocols, and verification left to the custom callback (`.noHostnameVerification`,
    /// so that swift-nio-ssl neither skips the callback, as it would with `.none`, nor checks the
    /// name again after it, as it would with `.fullVerification`; no trust roots loaded).
    static func makeContext(_ policy: SecurityPolicy, applicationProtocols: [ApplicationProtocol]) -> Result<NIOSSLContext, CourierError> {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = policy.minimumTLSVersion.nio
        tls.certificateVerification = .noHostnameVerification
        tls.trustRoots = .certificates([])
        tls.applicationProtocols = applicationProtocols.map(\.rawValue)
        // A close sends close_notify and waits this long for the server's (RFC 8446 6.1 does not
        // ask the closing side to wait at all) before closing the socket. swift-nio-ssl's 5 s held
        // every close to a server that does not answer it (Go's, or one that stopped reading), and
        // so the end of `invalidate` and of the engine's shutdown.
        tls.shutdownTimeout = Self.closeNotifyWait
        do {
            if let identity = policy.clientIdentity {
                let (chain, key) = try identity.nioChainAndKey()
                tls.certificateChain = chain
                tls.privateKey = key
            }
            return .success(try NIOSSLContext(configuration: tls))
        } catch {
            return .failure(
                ServerTrustFailure(.invalidPolicy, policy: policy, detail: "swift-nio-ssl cannot use this policy's TLS settings (\(error))")
                    .courierError()
            )
        }
    }

    /// Starts TLS on a connected `channel` to `host`.
    ///
    /// The handlers go at the end of the pipeline. Once the server is trusted and the handshake
    /// is done, `configurePipeline` runs on the channel's event loop with what was agreed, to add
    /// the protocol's handlers; bytes the server sent meanwhile are held until it returns, then
    /// passed on. Callable from any thread.
    ///
    /// The first connection whose policy consults the system's roots
    /// (``SecurityPolicyEvaluator/consultsSystemRoots``) reads them on NIO's thread pool before
    /// the handlers are added, so that neither an event loop nor the handshake's timeout waits
    /// for the file; later connections find them loaded.
    ///
    /// - Parameters:
    ///   - channel: A connected channel with nothing after where TLS goes.
    ///   - host: The host the request names: SNI (unless an address), the policy, the name checked.
    ///   - port: The port, for messages.
    ///   - configurePipeline: Adds the handlers that speak the agreed protocol.
    /// - Returns: The result, after `configurePipeline` ran; or a ``CourierError`` naming the host
    ///   and the phase: ``CourierError/Code/serverTrustEvaluationFailed`` (the policy refused the
    ///   server), ``CourierError/Code/tlsFailure`` (the handshake failed: garbage instead of TLS, no
    ///   common version, a client certificate refused, the connection closed), or
    ///   ``CourierError/Code/timedOut``; the channel is then closed.
    func startTLS(
        on channel: any Channel,
        host: String,
        port: Int,
        configurePipeline: @escaping @Sendable (TLSHandshakeResult, any Channel) throws -> Void
    ) -> EventLoopFuture<TLSHandshakeResult> {
        // Once the roots are loaded, a connection costs this one check.
        if !self.trustStore.isLoaded, let tls = self.policies[self.serverTrust.policy(forHost: host)],
            tls.evaluator.consultsSystemRoots
        {
            return self.trustStore.loadOffTheEventLoops(notifying: channel.eventLoop)
                .flatMap { self.startTLSOnLoop(on: channel, host: host, port: port, configurePipeline: configurePipeline) }
        }
        return self.startTLSOnLoop(on: channel, host: host, port: port, configurePipeline: configurePipeline)
    }

    /// ``startTLS(on:host:port:configurePipeline:)`` once the roots it needs are at hand.
    private func startTLSOnLoop(
        on channel: any Channel,
        host: String,
        port: Int,
        configurePipeline: @escaping @Sendable (TLSHandshakeResult, any Channel) throws -> Void
    ) -> EventLoopFuture<TLSHandshakeResult> {
        channel.eventLoop.flatSubmit {
            do {
                let handshake = try self.addHandlers(to: channel, host: host, port: port, configurePipeline: configurePipeline)
                return handshake.result
            } catch {
                channel.close(promise: nil)
                return channel.eventLoop.makeFailedFuture(error)
            }
        }
    }

    /// Adds the TLS handlers to `channel`'s pipeline; on its event loop.
    func addHandlers(
        to channel: any Channel,
        host: String,
        port: Int,
        configurePipeline: @escaping @Sendable (TLSHandshakeResult, any Channel) throws -> Void
    ) throws -> TLSHandshakeHandler {
        let policy = self.serverTrust.policy(forHost: host)
        guard let tls = self.policies[policy] else {
            throw CourierError(.internalInconsistency, "\(host):\(port): no TLS settings for the policy \(policy)")
        }
        let context: NIOSSLContext
        switch tls.context {
        case .success(let made): context = made
        case .failure(var error):
            error.message = "\(host):\(port): \(error.message)"
            throw error
        }
        let handshake = TLSHandshakeHandler(
            host: host,
            port: port,
            policy: policy,
            timeout: self.handshakeTimeout,
            eventLoop: channel.eventLoop,
            configurePipeline: configurePipeline
        )
        let evaluator = tls.evaluator
        do {
            let ssl = try NIOSSLClientHandler(
                context: context,
                serverHostname: Self.serverNameIndication(for: host),
                customVerificationCallbackWithMetadata: { presented, promise in
                    handshake.verify(presented, with: evaluator, completing: promise)
                }
            )
            // Before the TLS handler: it reads the ServerHello's cipher suite, which swift-nio-ssl
            // does not tell, from the bytes on their way in, then leaves.
            let observer = ServerHelloObserver { suite in handshake.cipherSuite = suite }
            handshake.tlsHandler = ssl
            let pipeline = channel.pipeline.syncOperations
            try pipeline.addHandler(observer)
            try pipeline.addHandler(ssl)
            try pipeline.addHandler(handshake)
        } catch {
            // A peer that closed before the handlers went in (one that accepts and closes, a proxy
            // whose tunnel failed after its 200): the handshake's promise fails instead of being
            // dropped with the handler (which NIO's debug builds trap on as a leak).
            throw handshake.abandon(error)
        }
        return handshake
    }

    /// The name SNI carries for `host`: none for an IP address (RFC 6066; an IPv6 address with a
    /// zone, `fe80::1%eth0`, too, as Go's), no trailing dot, in lower case, a Unicode label in its
    /// ASCII form (`bücher.example` is `xn--bcher-kva.example`: RFC 6066 3's host name is ASCII).
    static func serverNameIndication(for host: String) -> String? {
        var name = host
        if name.hasPrefix("["), name.hasSuffix("]") { return nil }
        if name.hasSuffix(".") { name.removeLast() }
        guard !name.isEmpty, IPAddress(host: name) == nil else { return nil }
        // Host names are case-insensitive; servers match SNI against lower case (RFC 6066 3). A
        // Unicode host (a proxy's, which is not IDNA-encoded as a request's host is) went out as
        // its UTF-8 bytes, which no server's name matches.
        return Punycode.comparableHost(name)
    }
}
