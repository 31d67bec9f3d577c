import Foundation
import HTTPTypes
import NIOCore

/// One request-response transaction of a task, as the engine carried it (URLSession's
/// `URLSessionTaskTransactionMetrics`): a task has one per redirect hop, in
/// ``TaskMetrics/Attempt/transactions``.
///
/// Times are instants of the continuous (monotonic) clock; ``TaskMetrics/offset(of:)`` turns one
/// into an offset from the task's start. A time is nil when its phase did not happen: no name
/// lookup, connect or TLS on a reused connection, no TLS for `http`, no lookup for an IP address,
/// no response after a failure. A transaction that failed because its connection could not be
/// opened (refused, a name with no address, a TLS handshake that failed) keeps the setup's times
/// as far as it went, as URLSession's do: when the lookup, the connect and the TLS handshake began,
/// and the ends of those that ended.
public struct TransactionMetrics: Sendable {
    /// The transaction's fields, behind one reference: the engine hands a transaction to the
    /// task, which keeps it in its metrics, and a copy is then a retain instead of several hundred
    /// bytes. Copy-on-write: a change copies the fields first when they are shared.
    ///
    /// `@unchecked Sendable`: the fields are only changed through a uniquely referenced instance
    /// (`uniqueStorage()`), as a copy-on-write array's buffer is, so no
    /// instance another thread can reach is ever changed.
    private final class Storage: @unchecked Sendable {
        // Not checked for exclusive access at run time (each access to a class's stored `var`
        // otherwise is, and the engine sets a hop's fields as the hop runs): the fields change
        // only through `uniqueStorage()`, in a mutation of the one `TransactionMetrics` that
        // holds this instance, which Swift already makes exclusive.
        @exclusivity(unchecked) var request: Request
        @exclusivity(unchecked) var response: HTTPResponse?
        @exclusivity(unchecked) var fetchStart: ContinuousClock.Instant
        @exclusivity(unchecked) var domainLookupStart: ContinuousClock.Instant?
        @exclusivity(unchecked) var domainLookupEnd: ContinuousClock.Instant?
        @exclusivity(unchecked) var connectStart: ContinuousClock.Instant?
        @exclusivity(unchecked) var connectEnd: ContinuousClock.Instant?
        @exclusivity(unchecked) var secureConnectionStart: ContinuousClock.Instant?
        @exclusivity(unchecked) var secureConnectionEnd: ContinuousClock.Instant?
        @exclusivity(unchecked) var requestStart: ContinuousClock.Instant?
        @exclusivity(unchecked) var requestEnd: ContinuousClock.Instant?
        @exclusivity(unchecked) var responseStart: ContinuousClock.Instant?
        @exclusivity(unchecked) var responseEnd: ContinuousClock.Instant?
        @exclusivity(unchecked) var networkProtocolName: String?
        @exclusivity(unchecked) var isReusedConnection: Bool = false
        @exclusivity(unchecked) var isProxyConnection: Bool = false
        @exclusivity(unchecked) var localSocketAddress: SocketAddress?
        @exclusivity(unchecked) var remoteSocketAddress: SocketAddress?
        @exclusivity(unchecked) var tlsProtocolVersion: SecurityPolicy.TLSVersion?
        @exclusivity(unchecked) var tlsCipherSuite: TLSCipherSuite?
        @exclusivity(unchecked) var countOfRequestHeaderBytesSent: Int64 = 0
        @exclusivity(unchecked) var countOfRequestBodyBytesSent: Int64 = 0
        @exclusivity(unchecked) var countOfResponseHeaderBytesReceived: Int64 = 0
        @exclusivity(unchecked) var countOfResponseBodyBytesReceived: Int64 = 0
        @exclusivity(unchecked) var countOfResponseBodyBytesAfterDecoding: Int64 = 0

        init(request: Request, fetchStart: ContinuousClock.Instant) {
            self.request = request
            self.fetchStart = fetchStart
        }

        func copy() -> Storage {
            let copy = Storage(request: self.request, fetchStart: self.fetchStart)
            copy.response = self.response
            copy.domainLookupStart = self.domainLookupStart
            copy.domainLookupEnd = self.domainLookupEnd
            copy.connectStart = self.connectStart
            copy.connectEnd = self.connectEnd
            copy.secureConnectionStart = self.secureConnectionStart
            copy.secureConnectionEnd = self.secureConnectionEnd
            copy.requestStart = self.requestStart
            copy.requestEnd = self.requestEnd
            copy.responseStart = self.responseStart
            copy.responseEnd = self.responseEnd
            copy.networkProtocolName = self.networkProtocolName
            copy.isReusedConnection = self.isReusedConnection
            copy.isProxyConnection = self.isProxyConnection
            copy.localSocketAddress = self.localSocketAddress
            copy.remoteSocketAddress = self.remoteSocketAddress
            copy.tlsProtocolVersion = self.tlsProtocolVersion
            copy.tlsCipherSuite = self.tlsCipherSuite
            copy.countOfRequestHeaderBytesSent = self.countOfRequestHeaderBytesSent
            copy.countOfRequestBodyBytesSent = self.countOfRequestBodyBytesSent
            copy.countOfResponseHeaderBytesReceived = self.countOfResponseHeaderBytesReceived
            copy.countOfResponseBodyBytesReceived = self.countOfResponseBodyBytesReceived
            copy.countOfResponseBodyBytesAfterDecoding = self.countOfResponseBodyBytesAfterDecoding
            return copy
        }
    }

    private var storage: Storage

    private mutating func uniqueStorage() -> Storage {
        if !isKnownUniquelyReferenced(&self.storage) { self.storage = self.storage.copy() }
        return self.storage
    }

    /// The request as the engine sent it (after the task's adapters, cookies and redirects).
    public var request: Request {
        get { self.storage.request }
        _modify { yield &self.uniqueStorage().request }
    }
    /// The response head, when one arrived.
    public var response: HTTPResponse? {
        get { self.storage.response }
        _modify { yield &self.uniqueStorage().response }
    }

    /// When the engine took the request and began looking for a connection.
    public var fetchStart: ContinuousClock.Instant {
        get { self.storage.fetchStart }
        _modify { yield &self.uniqueStorage().fetchStart }
    }
    /// When the lookup of the name the connection went to began (the proxy's, through a proxy).
    public var domainLookupStart: ContinuousClock.Instant? {
        get { self.storage.domainLookupStart }
        _modify { yield &self.uniqueStorage().domainLookupStart }
    }
    /// When that lookup ended.
    public var domainLookupEnd: ContinuousClock.Instant? {
        get { self.storage.domainLookupEnd }
        _modify { yield &self.uniqueStorage().domainLookupEnd }
    }
    /// When the TCP connect began.
    public var connectStart: ContinuousClock.Instant? {
        get { self.storage.connectStart }
        _modify { yield &self.uniqueStorage().connectStart }
    }
    /// When the connection was ready for the request: TCP, a proxy's tunnel and TLS done.
    public var connectEnd: ContinuousClock.Instant? {
        get { self.storage.connectEnd }
        _modify { yield &self.uniqueStorage().connectEnd }
    }
    /// When the TLS handshake began.
    public var secureConnectionStart: ContinuousClock.Instant? {
        get { self.storage.secureConnectionStart }
        _modify { yield &self.uniqueStorage().secureConnectionStart }
    }
    /// When the TLS handshake ended (the server trusted, the protocol agreed).
    public var secureConnectionEnd: ContinuousClock.Instant? {
        get { self.storage.secureConnectionEnd }
        _modify { yield &self.uniqueStorage().secureConnectionEnd }
    }
    /// When the request head was handed to the connection.
    public var requestStart: ContinuousClock.Instant? {
        get { self.storage.requestStart }
        _modify { yield &self.uniqueStorage().requestStart }
    }
    /// When the last byte of the request was handed to the connection.
    public var requestEnd: ContinuousClock.Instant? {
        get { self.storage.requestEnd }
        _modify { yield &self.uniqueStorage().requestEnd }
    }
    /// When the response head arrived.
    public var responseStart: ContinuousClock.Instant? {
        get { self.storage.responseStart }
        _modify { yield &self.uniqueStorage().responseStart }
    }
    /// When the last byte of the response arrived.
    public var responseEnd: ContinuousClock.Instant? {
        get { self.storage.responseEnd }
        _modify { yield &self.uniqueStorage().responseEnd }
    }

    /// The protocol the response came over, as ALPN names it: `"h2"`, `"http/1.1"` or
    /// `"http/1.0"` (the version an HTTP/1 server answered with); nil when no response arrived.
    public var networkProtocolName: String? {
        get { self.storage.networkProtocolName }
        _modify { yield &self.uniqueStorage().networkProtocolName }
    }
    /// Whether the transaction went on a connection that was not opened for it: one that had
    /// carried an earlier transaction, one that sat idle before this one took it, or one that
    /// began opening (for another request) before this one began. False exactly when
    /// the transaction reports the connection's setup (``domainLookupStart``, ``connectStart``,
    /// ``secureConnectionStart`` and their ends, as far as they happened), as URLSession leaves
    /// those nil when a persistent connection was used.
    public var isReusedConnection: Bool {
        get { self.storage.isReusedConnection }
        _modify { yield &self.uniqueStorage().isReusedConnection }
    }
    /// Whether the connection goes through a proxy (forwarding, CONNECT or SOCKS); for a
    /// transaction that never got a connection (a tunnel the proxy refused), whether its route
    /// went through one.
    public var isProxyConnection: Bool {
        get { self.storage.isProxyConnection }
        _modify { yield &self.uniqueStorage().isProxyConnection }
    }

    /// The connection's local end, when it had one.
    public var localSocketAddress: SocketAddress? {
        get { self.storage.localSocketAddress }
        _modify { yield &self.uniqueStorage().localSocketAddress }
    }
    /// The connection's remote end (the proxy, through a proxy), when it had one.
    public var remoteSocketAddress: SocketAddress? {
        get { self.storage.remoteSocketAddress }
        _modify { yield &self.uniqueStorage().remoteSocketAddress }
    }

    /// The TLS version agreed, for `https`.
    public var tlsProtocolVersion: SecurityPolicy.TLSVersion? {
        get { self.storage.tlsProtocolVersion }
        _modify { yield &self.uniqueStorage().tlsProtocolVersion }
    }

    /// The cipher suite the server chose, for `https` (read from its `ServerHello`).
    public var tlsCipherSuite: TLSCipherSuite? {
        get { self.storage.tlsCipherSuite }
        _modify { yield &self.uniqueStorage().tlsCipherSuite }
    }

    /// The size of the request head, counted as HTTP/1.1 text (request line, fields, blank line).
    /// Over HTTP/2 the wire carries it HPACK-compressed, so fewer bytes went out.
    public var countOfRequestHeaderBytesSent: Int64 {
        get { self.storage.countOfRequestHeaderBytesSent }
        _modify { yield &self.uniqueStorage().countOfRequestHeaderBytesSent }
    }
    /// Request body bytes handed to the connection.
    public var countOfRequestBodyBytesSent: Int64 {
        get { self.storage.countOfRequestBodyBytesSent }
        _modify { yield &self.uniqueStorage().countOfRequestBodyBytesSent }
    }
    /// The size of the response head, counted as HTTP/1.1 text (status line, fields, blank line).
    public var countOfResponseHeaderBytesReceived: Int64 {
        get { self.storage.countOfResponseHeaderBytesReceived }
        _modify { yield &self.uniqueStorage().countOfResponseHeaderBytesReceived }
    }
    /// Response body bytes as they came off the connection, before decompression (without
    /// HTTP/1.1's chunk framing).
    public var countOfResponseBodyBytesReceived: Int64 {
        get { self.storage.countOfResponseBodyBytesReceived }
        _modify { yield &self.uniqueStorage().countOfResponseBodyBytesReceived }
    }
    /// Response body bytes after decompression (equal to the received count when the body was
    /// not compressed).
    public var countOfResponseBodyBytesAfterDecoding: Int64 {
        get { self.storage.countOfResponseBodyBytesAfterDecoding }
        _modify { yield &self.uniqueStorage().countOfResponseBodyBytesAfterDecoding }
    }

    /// A transaction that began (``fetchStart``) at `fetchStart`; every other field empty.
    public init(request: Request, fetchStart: ContinuousClock.Instant) {
        self.storage = Storage(request: request, fetchStart: fetchStart)
    }

    /// The remote end as text (`"127.0.0.1"`, `"::1"`), when there was one: nil for a Unix-domain
    /// socket, whose path is ``remoteSocketAddress``'s `pathname`.
    public var remoteAddress: String? { self.remoteSocketAddress?.ipAddress }
    /// The remote port, when there was one.
    public var remotePort: Int? { self.remoteSocketAddress?.port }
    /// The local end as text, when there was one.
    public var localAddress: String? { self.localSocketAddress?.ipAddress }
    /// The local port, when there was one.
    public var localPort: Int? { self.localSocketAddress?.port }

    /// How the response's protocol is written in a status line: `"HTTP/2"`, `"HTTP/1.1"`,
    /// `"HTTP/1.0"`; nil when no response arrived.
    public var httpVersionDescription: String? {
        switch self.networkProtocolName {
        case "h2": "HTTP/2"
        case "http/1.1": "HTTP/1.1"
        case "http/1.0": "HTTP/1.0"
        case let other?: other.uppercased()
        case nil: nil
        }
    }
}

extension TransactionMetrics: CustomStringConvertible {
    /// A multi-line summary: protocol, connection, phase durations and byte counts.
    public var description: String {
        func span(_ start: ContinuousClock.Instant?, _ end: ContinuousClock.Instant?) -> String {
            guard let start, let end else { return "-" }
            return Self.milliseconds(end - start)
        }
        var lines: [String] = []
        let url = Request.redacted(self.request.url)
        let status = self.response.map { " \($0.status.code)" } ?? ""
        lines.append("\(self.request.method.rawValue) \(url)\(status) over \(self.httpVersionDescription ?? "no response")")
        var connection = self.isReusedConnection ? "reused connection" : "new connection"
        if self.isProxyConnection { connection += " through a proxy" }
        // An IPv6 address in brackets before its port, as in a URL (`[::1]:8080`).
        func endpoint(_ address: String, _ port: Int) -> String { address.contains(":") ? "[\(address)]:\(port)" : "\(address):\(port)" }
        if let remote = self.remoteAddress, let port = self.remotePort { connection += " to \(endpoint(remote, port))" }
        if let path = self.remoteSocketAddress?.pathname { connection += " to the Unix socket \(path)" }
        if let local = self.localAddress, let port = self.localPort { connection += " from \(endpoint(local, port))" }
        if let tls = self.tlsProtocolVersion { connection += ", \(tls)" }
        if let suite = self.tlsCipherSuite { connection += " \(suite)" }
        lines.append(connection)
        lines.append(
            "lookup \(span(self.domainLookupStart, self.domainLookupEnd)), connect \(span(self.connectStart, self.connectEnd)), "
                + "TLS \(span(self.secureConnectionStart, self.secureConnectionEnd)), "
                + "request \(span(self.requestStart, self.requestEnd)), wait \(span(self.requestEnd, self.responseStart)), "
                + "response \(span(self.responseStart, self.responseEnd)), total \(span(self.fetchStart, self.responseEnd))")
        lines.append(
            "sent \(self.countOfRequestHeaderBytesSent) + \(self.countOfRequestBodyBytesSent) bytes, "
                + "received \(self.countOfResponseHeaderBytesReceived) + \(self.countOfResponseBodyBytesReceived) bytes"
                + (self.countOfResponseBodyBytesAfterDecoding != self.countOfResponseBodyBytesReceived
                    ? " (\(self.countOfResponseBodyBytesAfterDecoding) decoded)" : ""))
        return lines.joined(separator: "\n")
    }

    static func milliseconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let ms = Double(seconds) * 1000 + Double(attoseconds) / 1e15
        return String(format: "%.3f ms", ms)
    }
}
