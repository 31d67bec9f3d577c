import Courier
import CourierTesting
import Foundation
import NIOConcurrencyHelpers
import Testing

/// The transports every engine behaviour is tested over ("one test body, every transport", issue
/// 16's item 8): each test in this folder takes one as its argument, starts its ``TestServer``
/// and a manager set up for it with ``run(identity:configure:wrapEngine:sourceLocation:_:)``,
/// and runs the same body on each.
///
/// A transport is a wire (``Wire``: HTTP/1.1 in cleartext, HTTP/1.1 over TLS, HTTP/2 over TLS)
/// and a route (``Route``): directly, or through one of the real proxies `.ci/run` starts
/// (`.ci/proxies.sh`): Debian's tinyproxy, an HTTP proxy (``Route/httpProxy``: `http` URLs as
/// absolute-form requests, `https` URLs through `CONNECT` with `Proxy-Authorization: Basic`),
/// the same behind stunnel (``Route/httpsProxy``: an `https://` proxy, the server's TLS inside
/// the proxy's), and Dante's danted (``Route/socks5``). ``allCases`` is every wire directly, plus
/// - HTTP/1.1 via the HTTP proxy (absolute form),
/// - HTTP/1.1 over TLS via `CONNECT`, HTTP/2 via `CONNECT`,
/// - HTTP/1.1 over TLS and HTTP/2 via `CONNECT` inside TLS to the `https://` proxy,
/// - HTTP/1.1 via SOCKS5, HTTP/2 via SOCKS5,
///
/// each only when its proxy's variable (`COURIER_HTTP_PROXY_URL`, `COURIER_HTTPS_PROXY_URL`,
/// `COURIER_SOCKS_PROXY_URL`) is set: without them the proxied routes are left out and
/// `TransportRouteTests` says, as skipped tests, that they were and why. Every behaviour in this folder runs over every route
/// (redirects, cross-origin and cleartext to TLS included; timeouts; suspension and
/// back-pressure; progress; downloads and resume; cancellation; errors; streams;
/// decompression; task metrics; the stale-connection resend, over the HTTP/1.1 wires), but for
/// the two that fail over one route, left out with
/// ``allCases(except:)`` and listed in `PENDING.md`. The whole folder takes about 20 s (15 s
/// without the proxies) on two busy cores: every test case runs in parallel.
///
/// Which protocol carried the requests is checked from the server's side:
/// ``run(identity:configure:wrapEngine:sourceLocation:_:)`` expects every request the server
/// received to have come over ``httpVersion``; and which way they went from the client's side:
/// every transaction's ``TransactionMetrics/isProxyConnection`` says whether a proxy carried it,
/// and a proxied one's remote port is the proxy's (`TransportMetricsTests` checks the rest of
/// `TransactionMetrics`).
struct Transport: Hashable, Sendable, CustomTestStringConvertible {
    /// What goes over the wire to the server.
    enum Wire: Hashable, Sendable {
        /// HTTP/1.1 in cleartext.
        case http1
        /// HTTP/1.1 over TLS: the server offers `h2` and `http/1.1`, the session allows only HTTP/1.1.
        case http1TLS
        /// HTTP/2 over TLS, negotiated through ALPN.
        case http2
    }

    /// How the client reaches the server.
    enum Route: Hashable, Sendable {
        /// A connection to the server itself.
        case direct
        /// Through the HTTP proxy in `COURIER_HTTP_PROXY_URL` (tinyproxy under `.ci/run`):
        /// absolute-form requests for `http`, a `CONNECT` tunnel for `https`.
        case httpProxy
        /// Through the `https://` proxy in `COURIER_HTTPS_PROXY_URL` (stunnel in front of
        /// tinyproxy under `.ci/run`): TLS to the proxy, a `CONNECT` tunnel inside it.
        case httpsProxy
        /// Through the SOCKS5 proxy in `COURIER_SOCKS_PROXY_URL` (danted under `.ci/run`).
        case socks5
    }

    let wire: Wire
    let route: Route

    init(_ wire: Wire, _ route: Route = .direct) {
        self.wire = wire
        self.route = route
    }

    /// HTTP/1.1 in cleartext, directly.
    static let http1 = Transport(.http1)
    /// HTTP/1.1 over TLS, directly.
    static let http1TLS = Transport(.http1TLS)
    /// HTTP/2 over TLS, directly.
    static let http2 = Transport(.http2)

    /// Every wire directly.
    static let direct: [Transport] = [.http1, .http1TLS, .http2]
    /// Every proxied transport, whether its proxy is there or not.
    static let proxied: [Transport] = [
        Transport(.http1, .httpProxy), Transport(.http1TLS, .httpProxy), Transport(.http2, .httpProxy),
        Transport(.http1TLS, .httpsProxy), Transport(.http2, .httpsProxy),
        Transport(.http1, .socks5), Transport(.http2, .socks5),
    ]

    /// HTTP/1.1 in cleartext, forwarded by the HTTP proxy in absolute form.
    static let http1ViaHTTPProxy = Transport(.http1, .httpProxy)

    /// Every wire directly, and every proxied transport whose proxy's variable is set.
    static let allCases: [Transport] = Self.direct + Self.proxied.filter { $0.proxy != nil }

    /// ``allCases`` but `excluded`: for a test that fails over them (each listed, with its failure,
    /// in `PENDING.md`).
    static func allCases(except excluded: Set<Transport>) -> [Transport] {
        Self.allCases.filter { !excluded.contains($0) }
    }

    /// The transports over TLS.
    static let secure: [Transport] = Self.allCases.filter(\.isSecure)

    var testDescription: String {
        let wire =
            switch self.wire {
            case .http1: "HTTP/1.1"
            case .http1TLS: "HTTP/1.1 over TLS"
            case .http2: "HTTP/2"
            }
        switch self.route {
        case .direct: return wire
        case .httpProxy: return self.isSecure ? "\(wire) via CONNECT" : "\(wire) via HTTP proxy (absolute-form)"
        case .httpsProxy: return "\(wire) via CONNECT inside TLS to an https:// proxy"
        case .socks5: return "\(wire) via SOCKS5"
        }
    }

    var isSecure: Bool { self.wire != .http1 }
    var isHTTP2: Bool { self.wire == .http2 }
    var isProxied: Bool { self.route != .direct }

    /// Whether the proxy closes the client's connection after each answer and opens one to the
    /// server per request: HTTP/1.1 forwarded by tinyproxy (1.11), which sends `Connection: close`
    /// upstream and closes the client's connection after the answer without saying so (RFC 9112,
    /// 9.6 asks for `Connection: close` in the answer). Courier then finds the kept-alive
    /// connection closed when it reuses it, and sends an idempotent request again on a new one.
    var proxyClosesEachConnection: Bool { self == .http1ViaHTTPProxy }

    /// Whether the route's proxy is addressed by a name Courier looks up (the `https://` proxy's
    /// `localhost`, which its certificate names), rather than by an address (127.0.0.1, the
    /// others under `.ci/run`).
    var proxyHasAName: Bool {
        guard let host = self.proxy?.host else { return false }
        return host.contains(where: \.isLetter) && !host.contains(":")
    }

    /// `http` or `https`.
    var scheme: String { self.isSecure ? "https" : "http" }

    /// The version the server must see every request come over (``TestServer/Request/httpVersion``).
    var httpVersion: String { self.isHTTP2 ? "HTTP/2" : "HTTP/1.1" }

    /// What ``TransactionMetrics/networkProtocolName`` says.
    var protocolName: String { self.isHTTP2 ? "h2" : "http/1.1" }

    /// The real proxy of this route, from the environment `.ci/run` sets; nil directly, or when
    /// the variable is not set.
    var proxy: NIOEngine.Proxy? {
        switch self.route {
        case .direct: nil
        case .httpProxy: RealProxies.http
        case .httpsProxy: RealProxies.https
        case .socks5: RealProxies.socks
        }
    }

    /// A recording server for this transport, presenting `identity` when it speaks TLS.
    func serverConfiguration(_ identity: TestServer.Identity = .localhost) -> TestServer.Configuration {
        var configuration = self.isSecure ? TestServer.Configuration.https(identity) : TestServer.Configuration()
        configuration.recordsRequests = true
        return configuration
    }

    /// `base` with this transport's HTTP versions, its proxy for every `http` and `https` URL, and
    /// no response cache: every request must reach the server.
    func sessionConfiguration(_ base: SessionConfiguration = .default) -> SessionConfiguration {
        var configuration = base
        configuration.httpVersion = self.wire == .http1TLS ? .http1Only : .automatic
        configuration.responseCache = nil
        if self.isProxied {
            // Loopback too: nothing bypasses the proxy.
            configuration.proxy = ProxyConfiguration(proxy: self.proxy)
        }
        return configuration
    }

    /// The default policy, also trusting ``TestCertificates/rootCA`` and, when `.ci/run` made
    /// it, the CA of the `https://` proxy's certificate (`COURIER_HTTPS_PROXY_CA`).
    static func trustingTestRoot() throws -> SecurityPolicy {
        var policy = SecurityPolicy.default
        policy.additionalTrustedCertificates = try Certificate.certificates(pemEncoded: TestCertificates.rootCA) + Self.proxyRoots()
        return policy
    }

    /// The CA of the `https://` proxy's certificate (`COURIER_HTTPS_PROXY_CA`), when `.ci/run`
    /// made it: a manager of its own that runs over ``allCases`` trusts it beside its server's.
    static func proxyRoots() throws -> [Certificate] {
        guard let path = RealProxies.httpsCA else { return [] }
        return try Certificate.certificates(pemEncoded: String(contentsOfFile: path, encoding: .utf8))
    }

    /// Runs `body` with a fresh server for this transport and a manager on it (trusting the test
    /// root, with this transport's HTTP versions, no cache, and `configure`'s changes), then
    /// expects every request the server received to have come over ``httpVersion``, and the
    /// manager and its engine, invalidated, to be gone.
    /// - Parameters:
    ///   - host: The address the server listens on (`::1` for IPv6); its ``TestServer/baseURL``
    ///     names it.
    ///   - wrapEngine: Puts the manager's `NIOEngine` inside another engine (an
    ///     `EventRecordingEngine`); the manager's `engine` is what it returns.
    @discardableResult
    func run<T>(
        identity: TestServer.Identity = .localhost,
        host: String = "127.0.0.1",
        configure: (inout SessionConfiguration) -> Void = { _ in },
        wrapEngine: ((NIOEngine) -> any Engine)? = nil,
        sourceLocation: SourceLocation = #_sourceLocation,
        _ body: (TestServer, HTTPSessionManager) async throws -> T
    ) async throws -> T {
        var serverConfiguration = self.serverConfiguration(identity)
        serverConfiguration.host = host
        return try await withTestServer(serverConfiguration) { server in
            var configuration = self.sessionConfiguration()
            configure(&configuration)
            let policy = try Self.trustingTestRoot()
            let transactions = NIOLockedValueBox<[TransactionMetrics]>([])
            var monitor = ClosureEventMonitor()
            monitor.taskDidFinishCollectingMetrics = { _, metrics in
                transactions.withLockedValue { $0 += metrics.transactions }
            }
            let result = try await withManagerThatEnds({ () -> HTTPSessionManager in
                let manager: HTTPSessionManager
                if let wrapEngine {
                    let engine = NIOEngine(configuration: NIOEngine.Configuration(configuration), securityPolicy: policy)
                    manager = HTTPSessionManager(baseURL: server.baseURL, engine: wrapEngine(engine), configuration: configuration)
                } else {
                    manager = HTTPSessionManager(baseURL: server.baseURL, configuration: configuration, securityPolicy: policy)
                }
                manager.eventMonitors.append(monitor)
                return manager
            }, sourceLocation: sourceLocation) { manager in try await body(server, manager) }
            self.expectCarried(server, sourceLocation: sourceLocation)
            // Every task has completed: its metrics were queued to the monitor before that.
            monitor.queue.sync {}
            self.expectRouted(transactions.withLockedValue { $0 }, sourceLocation: sourceLocation)
            return result
        }
    }

    /// Expects the requests `server` received so far all to have come over ``httpVersion``.
    func expectCarried(_ server: TestServer, sourceLocation: SourceLocation = #_sourceLocation) {
        let versions = server.requestCountsByHTTPVersion
        if !versions.isEmpty {
            #expect(Set(versions.keys) == [self.httpVersion], "requests came over \(versions), not only \(self.httpVersion)", sourceLocation: sourceLocation)
        }
    }

    /// Expects `transactions` to have gone this transport's way: each through a proxy or none as
    /// ``route`` says, and a proxied one that got a connection to the proxy's port; one over TLS
    /// names its cipher suite.
    func expectRouted(_ transactions: [TransactionMetrics], sourceLocation: SourceLocation = #_sourceLocation) {
        for transaction in transactions {
            #expect(
                transaction.isProxyConnection == self.isProxied,
                "\(transaction.request.method) \(transaction.request.url) went \(transaction.isProxyConnection ? "through a proxy" : "directly")",
                sourceLocation: sourceLocation)
            // Through a proxy's tunnel too, the TLS handshake's suite was read from its ServerHello.
            #expect(
                (transaction.tlsCipherSuite != nil) == (transaction.tlsProtocolVersion != nil),
                "TLS \(transaction.tlsProtocolVersion.map { "\($0)" } ?? "none") with suite \(transaction.tlsCipherSuite.map { "\($0)" } ?? "none")",
                sourceLocation: sourceLocation)
            if let proxy = self.proxy, let port = transaction.remotePort {
                #expect(port == proxy.port, "connected to port \(port), not the proxy's \(proxy.port)", sourceLocation: sourceLocation)
            }
        }
    }

    /// The port a transaction's connection went to: the proxy's, or (direct) `server`'s.
    func remotePort(for server: TestServer) -> Int? {
        self.isProxied ? self.proxy?.port : server.port
    }

    /// A URL on loopback with nothing listening, in this transport's scheme.
    func refusingURL(_ path: String = "get") -> URL {
        URL(string: "\(self.scheme)://127.0.0.1:\(closedPort())/\(path)")!
    }
}
