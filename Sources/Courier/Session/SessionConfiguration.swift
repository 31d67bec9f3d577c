import Foundation
import HTTPTypes

/// How a session manager's engine behaves: timeouts, connection limits, HTTP versions,
/// decompression, redirects, proxy (URLSession's `URLSessionConfiguration`, as a value).
///
/// ```swift
/// var configuration = SessionConfiguration.default
/// configuration.timeoutIntervalForRequest = 10
/// configuration.httpMaximumConnectionsPerHost = 16
/// let manager = HTTPSessionManager(baseURL: URL(string: "https://api.example.com/v1"), configuration: configuration)
/// ```
public struct SessionConfiguration: Sendable {
    /// Which HTTP versions the engine may use (``NIOEngine/HTTPVersionPolicy``).
    public typealias HTTPVersionPolicy = NIOEngine.HTTPVersionPolicy
    /// Whether and how responses are decompressed (``NIOEngine/Decompression``).
    public typealias Decompression = NIOEngine.Decompression
    /// Whether redirects are followed (``NIOEngine/RedirectPolicy``).
    public typealias RedirectPolicy = NIOEngine.RedirectPolicy
    /// One proxy server, HTTP or SOCKS5 (``NIOEngine/Proxy``).
    public typealias Proxy = NIOEngine.Proxy

    /// Seconds a request may wait for the next bytes, counted from when its head goes out
    /// (connecting and waiting for a pooled connection excepted; a suspended task is never idle),
    /// before it fails with ``CourierError/Code/timedOut``. 60 by default. A request's own
    /// ``RequestOptions/timeoutInterval`` overrides it. ``NIOEngine`` checks its deadlines every
    /// twentieth of the shorter of this and ``timeoutIntervalForResource`` (5–50 ms), so a
    /// deadline fires up to that much late.
    public var timeoutIntervalForRequest: TimeInterval = 60
    /// Seconds a whole exchange may take, redirects and body included. 7 days by default.
    public var timeoutIntervalForResource: TimeInterval = 7 * 24 * 3600
    /// Seconds to establish a connection (TCP and TLS). 10 by default.
    public var timeoutIntervalForConnect: TimeInterval = 10
    /// Header fields added to every request that does not set them itself.
    public var httpAdditionalHeaders: HTTPFields = [:]
    /// The `User-Agent` sent with a request that names none, as URLSession sends its own (and
    /// Alamofire's, OkHttp's, curl's and Go's clients theirs): some servers refuse a request
    /// without one. By default AFNetworking's form for this process, `name/version (platform;
    /// OS version)`, the value ``HTTPRequestSerializer`` sets; nil sends none.
    ///
    /// It is added as the request's head is written, like `Host`: ``SessionTask/currentRequest``
    /// and ``SessionTask/originalRequest`` are the request as given, and a request (or
    /// ``httpAdditionalHeaders``) that names `User-Agent` is sent as it is. A WebSocket task's
    /// handshake carries it too. A `URLSessionEngine` (CourierURLSession) sends URLSession's own instead.
    public var userAgent: String? = DefaultHeaders.currentUserAgent
    /// How many connections to one host may be open at once. 8 by default. A request that finds
    /// them all busy (over HTTP/2, each at the server's limit of streams) waits for one, and that
    /// wait is bounded only by ``timeoutIntervalForResource`` and cancellation, as an asynchronous
    /// call's wait in OkHttp's dispatcher: long-lived streams to one host (event streams, long
    /// polls, bodies left unread) can hold every connection, so give them a session of their own.
    public var httpMaximumConnectionsPerHost: Int = 8
    /// Seconds an idle pooled connection is kept. 60 by default.
    public var connectionIdleTimeout: TimeInterval = 60
    /// Seconds an HTTP/2 connection with no stream open may hear nothing before it sends a PING.
    /// 30 by default. See ``NIOEngine/Configuration/http2PingInterval``.
    public var http2PingInterval: TimeInterval = 30
    /// Seconds a PING may wait for an answer before the HTTP/2 connection is closed and a new one
    /// opens for the next request. 10 by default. See ``NIOEngine/Configuration/http2PingTimeout``.
    public var http2PingTimeout: TimeInterval = 10
    /// Request bodies of at least this many bytes are sent with `Expect: 100-continue` over
    /// HTTP/1.1 (over HTTP/2 none is added) and go out once the server says `100 Continue` (or
    /// after ``expectContinueTimeout``); a server that refuses first gets no body. 1 MiB by
    /// default; nil never asks. See ``NIOEngine/Configuration/expectContinueThreshold``.
    public var expectContinueThreshold: Int64? = 1 << 20
    /// Seconds to wait for `100 Continue` before sending the body anyway. 1 by default. See
    /// ``NIOEngine/Configuration/expectContinueTimeout``.
    public var expectContinueTimeout: TimeInterval = 1
    /// Which HTTP versions to use.
    public var httpVersion: HTTPVersionPolicy = .automatic
    /// Whether to decompress responses: gzip and deflate, with a ratio of 100 past 8 MiB by default
    /// (``NIOEngine/Decompression/ratioFreeSize``).
    public var decompression: Decompression = .enabled(ratio: 100)
    /// Whether to follow redirects. Up to 16 hops by default, a URL visited before included
    /// (URLSession's rule: a login bounce comes back to the first URL with a new cookie; the hop
    /// limit ends a real loop).
    public var redirectPolicy: RedirectPolicy = .follow(max: 16, allowCycles: true)
    /// Which proxy carries which request: nil (the default) for none. `.http(host:port:)` or
    /// `.socks(host:port:)` for one proxy for every request, ``ProxyConfiguration/fromEnvironment(_:)``
    /// for curl's `http_proxy`, `https_proxy`, `all_proxy` and `no_proxy`, or a
    /// ``ProxyConfiguration`` built by hand. Courier never reads the environment unless asked.
    public var proxy: ProxyConfiguration?
    /// Hosts reached through a Unix-domain socket instead of TCP, by host name: the path of the
    /// socket for each (empty by default), as curl's `--unix-socket` and Go's `DialContext` do.
    ///
    /// A request's URL stays an ordinary `http` or `https` URL: its host names the server (in
    /// `Host`, `:authority`, cookies, the cache and TLS's server name and certificate check) and
    /// the socket reaches it, whatever the URL's port. Such a host never goes through
    /// ``proxy``. Connections to it are pooled apart from any TCP connection to the same name,
    /// and speak HTTP/1.1, TLS, or HTTP/2 when TLS agrees on it, as any connection does.
    ///
    /// ```swift
    /// configuration.unixSocketPaths = ["docker": "/var/run/docker.sock"]
    /// let info = try await manager.get("http://docker/v1.43/info")
    /// ```
    ///
    /// Names are compared without regard to case. The name `*` stands for every host the map does
    /// not name: `["*": path]` sends every request of the session, a redirect's to another host
    /// included, through that socket, as curl's `--unix-socket` does. A socket that does not
    /// exist or that nothing listens on fails the request with
    /// ``CourierError/Code/connectionFailed``, naming its path. A URL can also name its socket
    /// itself, with no map: `http+unix://%2Fvar%2Frun%2Fdocker.sock/…`
    /// (`URL(unixSocketPath:target:tls:webSocket:)`).
    public var unixSocketPaths: [String: String] = [:]
    /// The IP addresses to connect to for host names, instead of asking the system (empty by
    /// default): curl's `--resolve`, a fixed table in OkHttp's `Dns`. For a test against a
    /// staging server under the production name, a service whose address comes from elsewhere,
    /// or a name `/etc/hosts` does not know.
    ///
    /// ```swift
    /// configuration.hostAddresses = ["api.example.com": ["10.0.0.7", "2001:db8::7"]]
    /// configuration.hostAddresses = ["api.example.com:8443": ["127.0.0.1"]]  // that port only
    /// ```
    ///
    /// The URL keeps its name: it goes in `Host` or `:authority`, TLS's server name and
    /// certificate check, cookies and the cache, as without the table; only the addresses the
    /// connection tries change, in the order given (IPv6 and IPv4 raced as usual). A `host:port`
    /// entry applies to that port only and wins over a `host` entry; names compare without
    /// regard to case or a final dot, a Unicode name as its IDNA form (`bücher.example` is
    /// `xn--bcher-kva.example`). The table answers every name the engine looks up itself:
    /// a proxy's host, and with a `socks5://` proxy the server's (a `socks5h://` or HTTP proxy
    /// looks the server's name up on its side, where the table does not reach). An entry that
    /// is not an IP address, or an empty list, fails the request with
    /// ``CourierError/Code/connectionFailed`` naming the host and the entry; a name not in the
    /// table is looked up as usual.
    public var hostAddresses: [String: [String]] = [:]
    /// What looks up host names instead of the system's resolver (OkHttp's `Dns`), for the names
    /// ``hostAddresses`` does not give; nil (the default) for the system's `getaddrinfo`. Asked
    /// once a new connection, for the server's name, a proxy's, and a `socks5://` proxy's target;
    /// see ``HostNameResolver``.
    public var hostNameResolver: (any HostNameResolver)?
    /// The largest response body a data task keeps in memory, in bytes; larger bodies fail with
    /// ``CourierError/Code/responseTooLarge``. `nil` (the default) sets no limit of the session's:
    /// a body in memory holds at most 4 GiB (2³² − 1 bytes), the most a `ByteBuffer` holds, so a
    /// longer one fails in the same way whatever this says (download it to a file, or stream it).
    public var maximumResponseBodySize: Int?
    /// Where download tasks write bodies as they arrive; nil (the default) is the system's
    /// temporary directory. Choose a folder on the destination's file system to make the final
    /// move a rename rather than a copy.
    public var downloadDirectory: URL?
    /// Where the session keeps cookies: a new ``MemoryCookieStorage`` for each configuration by
    /// default (configurations copied from one another share it). A ``FileCookieStorage`` keeps
    /// them in a cookies.txt file. `nil`: no cookie is stored or sent by the session (a `Cookie`
    /// field the caller sets still goes out).
    public var httpCookieStorage: (any CookieStorage)? = MemoryCookieStorage()
    /// Whether requests send the cookies of ``httpCookieStorage`` and store the cookies their
    /// responses set, on every hop (redirects included). True by default; a request's own
    /// ``RequestOptions/httpShouldHandleCookies`` overrides it.
    public var httpShouldHandleCookies: Bool = true
    /// The HTTP cache data tasks and streams consult (RFC 9111, private): a new in-memory
    /// ``ResponseCache`` of 4 MiB for each configuration by default; give it one with a disk
    /// folder to keep responses across runs, or `nil` for none.
    public var responseCache: ResponseCache? = ResponseCache()
    /// How requests use ``responseCache`` unless they set their own
    /// ``RequestOptions/cachePolicy``: by the protocol's rules by default.
    public var requestCachePolicy: RequestOptions.CachePolicy = .useProtocolCachePolicy
    /// Whether requests may go over a cellular (WWAN) interface. True by default; a request's
    /// own ``RequestOptions/allowsCellularAccess`` overrides it. When false, a request fails with
    /// ``CourierError/Code/cellularAccessDenied`` while the session's
    /// ``SessionManager/reachabilityManager`` reports ``NetworkReachabilityStatus/reachableViaWWAN``,
    /// and with ``CourierError/Code/unsupportedOption`` while that manager is not monitoring
    /// (Courier cannot tell the interface then).
    public var allowsCellularAccess: Bool = true
    /// Whether the session's tasks post AFNetworking's notifications (``Foundation/NSNotification/Name/taskDidResume``,
    /// ``Foundation/NSNotification/Name/taskDidSuspend``, ``Foundation/NSNotification/Name/taskDidComplete``,
    /// ``Foundation/NSNotification/Name/downloadTaskDidMoveFile`` and
    /// ``Foundation/NSNotification/Name/downloadTaskDidFailToMoveFile``). True by default, because code
    /// written against AFNetworking observes them; Courier cannot tell whether anything does.
    ///
    /// Posting costs a task whether or not anything observes: on this project's machine about a
    /// fifth of what the session layer itself costs a small request (two posts, about 25 retains and
    /// 2 mallocs, 0.6 µs; see "What a request costs" in <doc:SessionAndEngine>). A session whose
    /// code observes none of them can set this to false. ``Foundation/NSNotification/Name/sessionDidInvalidate``,
    /// posted once per session, is posted either way.
    public var postsTaskNotifications: Bool = true
    /// Whether the session's data, upload, download and stream tasks gather ``TaskMetrics``. True by
    /// default (URLSession and AFNetworking always gather them).
    ///
    /// When false, a task gathers them only if something that reads them is set when it is made:
    /// an event monitor (``SessionManager/eventMonitors``, ``MetricsMonitor`` among them) or the
    /// ``SessionManager/Hooks/taskDidFinishCollectingMetrics`` hook. Without either, no clock is
    /// read for them and none are made: ``SessionTask/metrics``, ``DataResponse/metrics`` and
    /// ``DownloadResponse/metrics`` are `nil`, and ``TaskDidCompleteKey/metrics`` is left out of
    /// `.taskDidComplete`. On this project's machine that is about 10 retains, a malloc and
    /// 0.45 µs of a small request (see "What a request costs" in <doc:SessionAndEngine>). A
    /// WebSocket task gathers its handshake's metrics either way.
    public var collectsTaskMetrics: Bool = true
    /// Whether the session keeps nothing on disk and shares no state with other sessions: its
    /// cookie store and cache live in memory. A task of an ephemeral session whose
    /// ``httpCookieStorage`` or ``responseCache`` writes to disk fails with
    /// ``CourierError/Code/unsupportedOption``.
    public private(set) var isEphemeral: Bool = false

    /// The defaults described on each property.
    public init() {}

    /// The default configuration.
    public static var `default`: SessionConfiguration { SessionConfiguration() }

    /// A configuration that persists nothing: cookies and cached responses live in memory, in
    /// stores of its own, and die with the session.
    public static var ephemeral: SessionConfiguration {
        var configuration = SessionConfiguration()
        configuration.isEphemeral = true
        return configuration
    }
}

/// A session's configuration shared by reference: its manager and each of its tasks hold the one
/// copy, instead of each task copying the whole configuration (and retaining each of its stores)
/// when it is made.
final class SessionConfigurationReference: Sendable {
    let value: SessionConfiguration

    init(_ value: SessionConfiguration) {
        self.value = value
    }

    /// Posts one of AFNetworking's task notifications for `task`, unless the session turned them
    /// off (``SessionConfiguration/postsTaskNotifications``). `.taskDidComplete`, whose user info
    /// is only built when it is posted, reads the setting itself first. The task is taken as
    /// itself, not as `Any`: an `Any` parameter is one more copy (a retain) of its box on the way
    /// to Foundation, on every task's resume.
    func postTaskNotification(_ name: Notification.Name, object task: SessionTask, userInfo: [AnyHashable: Any]? = nil) {
        guard self.value.postsTaskNotifications else { return }
        NotificationCenter.default.post(name: name, object: task, userInfo: userInfo)
    }
}
