import Foundation
import Metrics

extension NIOEngine {
    /// How a ``NIOEngine`` behaves: timeouts, connection limits, HTTP versions, decompression,
    /// redirects, proxies. The engine's own settings, apart from any session's; a
    /// ``SessionManager`` makes one from its ``SessionConfiguration``.
    ///
    /// A time is taken as at most 10⁹ seconds (`.infinity` for no limit is that), and a time that
    /// is not a number as the default.
    public struct Configuration: Sendable {
        /// Seconds an exchange may wait for the next bytes once its request head went out; a
        /// request's own ``RequestOptions/timeoutInterval`` overrides it. 60 by default.
        public var requestTimeout: TimeInterval = 60
        /// Seconds a whole exchange may take, redirects and body included. 7 days by default.
        public var resourceTimeout: TimeInterval = 7 * 24 * 3600
        /// Seconds to establish a connection: TCP, a proxy's tunnel and TLS. 10 by default.
        public var connectTimeout: TimeInterval = 10
        /// How many connections to one host may be open at once. 8 by default.
        public var maximumConnectionsPerHost: Int = 8
        /// How many HTTP/2 connections to one host may take new streams at once, within
        /// ``maximumConnectionsPerHost``. A host's requests share one connection while it has room;
        /// when every one is full (its streams at the server's `SETTINGS_MAX_CONCURRENT_STREAMS` or
        /// at ``http2MaximumStreamsPerConnection``), another opens, on an event loop none of the
        /// host's HTTP/2 connections uses when there is one, so that a busy host's streams spread
        /// over the loops. Connections draining after a GOAWAY do not count, nor those that opened
        /// every stream the host was seen to process on one connection and only finish them. 4 by
        /// default; at least 1.
        public var http2MaximumConnectionsPerHost: Int = 4
        /// How many streams one HTTP/2 connection carries at once, at most, whatever the server
        /// allows (its `SETTINGS_MAX_CONCURRENT_STREAMS` may allow fewer): past it a request takes
        /// a stream on another connection (``http2MaximumConnectionsPerHost``) or waits. 100 by
        /// default; at least 1.
        public var http2MaximumStreamsPerConnection: Int = 100
        /// Seconds an idle connection is kept. 60 by default.
        public var connectionIdleTimeout: TimeInterval = 60
        /// Seconds an HTTP/2 connection with no stream open may hear nothing from the server before
        /// it sends a PING to check the server is still there. 30 by default; at least a
        /// millisecond. At or above ``connectionIdleTimeout`` no PING is sent: the idle connection
        /// closes first. Keep it at seconds: servers limit how often they are pinged (a
        /// swift-nio-http2 server ends a connection that sends over 200 PINGs, SETTINGS and other
        /// control frames in 30 seconds; gRPC servers ask for minutes), and one answered PING after
        /// another on an idle connection, a tenth of a second apart, passes that in 20 seconds.
        public var http2PingInterval: TimeInterval = 30
        /// Seconds a PING may wait for the server's answer (or any other frame) before the HTTP/2
        /// connection counts as dead: it closes and leaves the pool, and the next request opens a
        /// new one. 10 by default; at least a millisecond.
        public var http2PingTimeout: TimeInterval = 10
        /// The ID an HTTP/2 connection's first stream gets: 1, but for tests that need a
        /// connection near the end of its stream IDs (2^31 - 1) without opening a billion streams.
        var http2FirstStreamID = 1
        /// Request bodies of at least this many bytes (a known length) are announced with
        /// `Expect: 100-continue` over HTTP/1.1 and held back until the server answers
        /// `100 Continue`, so that a server that refuses the request (a 401, a 413, a 417) answers
        /// before the body goes out, and the body is then not sent (RFC 9110 section 10.1.1), as
        /// curl does. 1 MiB by default; nil never asks. A body of unknown length (a stream without
        /// one) is never held back. Over HTTP/2 nothing is announced (many servers never answer
        /// `100 Continue` on a stream; a refusal comes at once anyway, and flow control bounds what
        /// was sent). A request that sets `Expect` itself is left as it is and waits the same way,
        /// over either.
        public var expectContinueThreshold: Int64? = 1 << 20
        /// Seconds to wait for `100 Continue` before sending the body anyway (a server that does not
        /// know the expectation never answers it), as curl does. 1 by default; at least a millisecond.
        public var expectContinueTimeout: TimeInterval = 1
        /// Which HTTP versions to use.
        public var httpVersion: HTTPVersionPolicy = .automatic
        /// Whether to decompress responses: gzip and deflate, with a ratio of 100 past 8 MiB by
        /// default (``NIOEngine/Decompression/ratioFreeSize``).
        public var decompression: Decompression = .enabled(ratio: 100)
        /// Whether to follow redirects. Up to 16 hops by default, a URL visited before included.
        public var redirectPolicy: RedirectPolicy = .follow(max: 16, allowCycles: true)
        /// The `User-Agent` value sent with a request that names none; nil (the default) sends
        /// none, as AsyncHTTPClient. It goes on the wire only: the request the task reports is
        /// the one given. A ``SessionManager`` sets ``SessionConfiguration/userAgent``.
        public var userAgent: String?
        /// Which proxy carries which request (per scheme, with hosts that bypass it); nil, or a
        /// configuration that names no proxy, for none.
        public var proxy: ProxyConfiguration?
        /// Hosts reached through a Unix-domain socket instead of TCP, by host name: the socket's
        /// path for each (empty by default). See ``SessionConfiguration/unixSocketPaths``.
        public var unixSocketPaths: [String: String] = [:]
        /// The IP addresses to connect to for host names, instead of asking the system (empty by
        /// default). See ``SessionConfiguration/hostAddresses``.
        public var hostAddresses: [String: [String]] = [:]
        /// What looks up the names ``hostAddresses`` does not give, instead of the system's
        /// resolver; nil (the default) for the system's. See ``SessionConfiguration/hostNameResolver``.
        public var hostNameResolver: (any HostNameResolver)?
        /// The swift-metrics backend the engine reports its open connections to: a `Meter`
        /// labelled `courier_open_connections`, dimension `protocol` (`http/1.1` or `h2`), raised
        /// when a connection is established (TCP, a proxy's tunnel and TLS done) and lowered when
        /// it closes for any reason. nil (the default) uses the backend bootstrapped in
        /// `MetricsSystem` (none: no cost). A ``SessionManager`` leaves it nil.
        public var metricsFactory: (any MetricsFactory)?

        /// The defaults described on each property.
        public init() {}
    }

    /// Which HTTP versions an engine may use.
    public struct HTTPVersionPolicy: Sendable, Hashable, CustomStringConvertible {
        enum Base: Sendable, Hashable { case http1Only, automatic }
        let base: Base
        /// HTTP/1.1 only, even when a TLS server offers HTTP/2.
        public static let http1Only = HTTPVersionPolicy(base: .http1Only)
        /// HTTP/2 when a TLS server offers it through ALPN, else HTTP/1.1 (the default). A request
        /// HTTP/2 cannot carry goes over HTTP/1.1: one the server refuses with
        /// `HTTP_1_1_REQUIRED` (and the origin's later requests), or one whose header block does
        /// not fit in one of the server's frames.
        public static let automatic = HTTPVersionPolicy(base: .automatic)
        public var description: String { self.base == .automatic ? "automatic" : "http1Only" }
    }

    /// Whether and how responses are decompressed.
    public enum Decompression: Sendable, Hashable {
        /// Bodies are delivered as the server sent them; no `Accept-Encoding` is added.
        case disabled
        /// `gzip` (and `x-gzip`) and `deflate` bodies are decompressed. Past
        /// ``ratioFreeSize`` (8 MiB) of output, a body may grow to at most `ratio` times its
        /// compressed size (a guard against decompression bombs, failing with
        /// ``CourierError/Code/responseTooLarge``; `.max` sets no limit). The engine
        /// adds `Accept-Encoding: deflate, gzip` to a request that names none and asks no `Range`;
        /// a request whose own `Accept-Encoding` refuses both codings gets its body as it came.
        case enabled(ratio: Int)

        /// How many decompressed bytes a body may reach whatever its ratio: 8 MiB.
        ///
        /// Small bodies that compress better than any sensible ratio are common and valid (a JSON
        /// array of zeros, a repetitive page: nginx and Caddy send them at 200 to 1,000 to 1), and
        /// URLSession, OkHttp and curl decode them. A bomb is dangerous for its gigabytes, which
        /// the ratio still refuses past this size.
        public static let ratioFreeSize = 8 << 20
    }

    /// Whether redirects are followed.
    public enum RedirectPolicy: Sendable, Hashable {
        /// Redirects are not followed: the 3xx response is the final response.
        case disallow
        /// Redirects are followed up to `max` hops; a redirect to a URL the exchange visited
        /// before fails unless `allowCycles` (the default policy allows it, as URLSession does).
        case follow(max: Int, allowCycles: Bool)
    }

    /// One proxy server: an HTTP proxy (absolute-form requests for `http` URLs, `CONNECT` for
    /// `https` URLs), with credentials if it wants them (Basic, or Digest when it asks), or a
    /// SOCKS5 proxy, with a user name and password if it wants them. A
    /// ``ProxyConfiguration`` says which URLs it carries.
    public struct Proxy: Sendable, Hashable {
        enum Kind: Sendable, Hashable {
            case http
            /// An HTTP proxy reached over TLS (`https://`).
            case https
            case socks
        }
        let kind: Kind
        /// The proxy's host.
        public var host: String
        /// The proxy's port.
        public var port: Int
        /// The user name the proxy wants, if any: sent to an HTTP proxy as Basic credentials
        /// (`Proxy-Authorization`) until it sends a Digest challenge, which they then answer
        /// (RFC 7616); to a SOCKS5 proxy by RFC 1929's username/password method (1 to 255 bytes
        /// of UTF-8 there).
        public var username: String?
        /// The password that goes with ``username`` (at most 255 bytes for a SOCKS5 proxy).
        public var password: String?
        /// For a SOCKS5 proxy: whether Courier looks the target's host name up itself and sends
        /// the proxy an IP address (`socks5://`, as curl does), rather than sending the name for
        /// the proxy to resolve (`socks5h://`). An IP address in the URL is sent as it is either
        /// way. Ignored for an HTTP proxy, which is always sent the name.
        public var resolvesHostNamesLocally = false

        /// An HTTP proxy (CONNECT for https URLs), with credentials if it wants them: Basic up
        /// front, Digest when it asks.
        public static func http(host: String, port: Int, username: String? = nil, password: String? = nil) -> Proxy {
            Proxy(kind: .http, host: host, port: port, username: username, password: password)
        }

        /// An HTTP proxy reached over TLS (an `https://` proxy, as curl and Go's client reach
        /// one): the connection to it is TLS, its certificate checked as any server's is (the
        /// session's policy for the proxy's host name, SNI naming it); inside it, requests for
        /// `http` URLs in absolute form, and a `CONNECT` tunnel, then TLS to the server, for
        /// `https` URLs. Credentials as for ``http(host:port:username:password:)``.
        public static func https(host: String, port: Int, username: String? = nil, password: String? = nil) -> Proxy {
            Proxy(kind: .https, host: host, port: port, username: username, password: password)
        }

        /// A SOCKS5 proxy, with a user name and password if it wants them.
        ///
        /// Courier offers the proxy "no authentication", and "username/password" (RFC 1929) as
        /// well when `username` is given; the proxy chooses.
        /// - Parameters:
        ///   - host: The proxy's host.
        ///   - port: The proxy's port.
        ///   - username: The user name, if the proxy wants one (1 to 255 bytes of UTF-8).
        ///   - password: Its password (at most 255 bytes; none is sent as an empty one).
        ///   - resolvesHostNamesLocally: Whether Courier resolves the target's host name and
        ///     sends the proxy its address (`socks5://`); by default the proxy gets the name and
        ///     resolves it (`socks5h://`).
        public static func socks(
            host: String, port: Int, username: String? = nil, password: String? = nil, resolvesHostNamesLocally: Bool = false
        ) -> Proxy {
            Proxy(kind: .socks, host: host, port: port, username: username, password: password, resolvesHostNamesLocally: resolvesHostNamesLocally)
        }
    }
}
