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
/// no response after a failure.
public struct TransactionMetrics: Sendable {
    /// The request as the engine sent it (after the task's adapters, cookies and redirects).
    public var request: Request
    /// The response head, when one arrived.
    public var response: HTTPResponse?

    /// When the engine took the request and began looking for a connection.
    public var fetchStart: ContinuousClock.Instant
    /// When the lookup of the name the connection went to began (the proxy's, through a proxy).
    public var domainLookupStart: ContinuousClock.Instant?
    /// When that lookup ended.
    public var domainLookupEnd: ContinuousClock.Instant?
    /// When the TCP connect began.
    public var connectStart: ContinuousClock.Instant?
    /// When the connection was ready for the request: TCP, a proxy's tunnel and TLS done.
    public var connectEnd: ContinuousClock.Instant?
    /// When the TLS handshake began.
    public var secureConnectionStart: ContinuousClock.Instant?
    /// When the TLS handshake ended (the server trusted, the protocol agreed).
    public var secureConnectionEnd: ContinuousClock.Instant?
    /// When the request head was handed to the connection.
    public var requestStart: ContinuousClock.Instant?
    /// When the last byte of the request was handed to the connection.
    public var requestEnd: ContinuousClock.Instant?
    /// When the response head arrived.
    public var responseStart: ContinuousClock.Instant?
    /// When the last byte of the response arrived.
    public var responseEnd: ContinuousClock.Instant?

    /// The protocol the response came over, as ALPN names it: `"h2"`, `"http/1.1"` or
    /// `"http/1.0"` (the version an HTTP/1 server answered with); nil when no response arrived.
    public var networkProtocolName: String?
    /// Whether the transaction went on a connection that had carried an earlier one.
    public var isReusedConnection: Bool
    /// Whether the connection goes through a proxy (forwarding, CONNECT or SOCKS); for a
    /// transaction that never got a connection (a tunnel the proxy refused), whether its route
    /// went through one.
    public var isProxyConnection: Bool

    /// The connection's local end, when it had one.
    public var localSocketAddress: SocketAddress?
    /// The connection's remote end (the proxy, through a proxy), when it had one.
    public var remoteSocketAddress: SocketAddress?

    /// The TLS version agreed, for `https`.
    public var tlsProtocolVersion: SecurityPolicy.TLSVersion?

    /// The cipher suite the server chose, for `https` (read from its `ServerHello`).
    public var tlsCipherSuite: TLSCipherSuite?

    /// The size of the request head, counted as HTTP/1.1 text (request line, fields, blank line).
    /// Over HTTP/2 the wire carries it HPACK-compressed, so fewer bytes went out.
    public var countOfRequestHeaderBytesSent: Int64
    /// Request body bytes handed to the connection.
    public var countOfRequestBodyBytesSent: Int64
    /// The size of the response head, counted as HTTP/1.1 text (status line, fields, blank line).
    public var countOfResponseHeaderBytesReceived: Int64
    /// Response body bytes as they came off the connection, before decompression (without
    /// HTTP/1.1's chunk framing).
    public var countOfResponseBodyBytesReceived: Int64
    /// Response body bytes after decompression (equal to the received count when the body was
    /// not compressed).
    public var countOfResponseBodyBytesAfterDecoding: Int64

    /// A transaction that began (``fetchStart``) at `fetchStart`; every other field empty.
    public init(request: Request, fetchStart: ContinuousClock.Instant) {
        self.request = request
        self.fetchStart = fetchStart
        self.isReusedConnection = false
        self.isProxyConnection = false
        self.countOfRequestHeaderBytesSent = 0
        self.countOfRequestBodyBytesSent = 0
        self.countOfResponseHeaderBytesReceived = 0
        self.countOfResponseBodyBytesReceived = 0
        self.countOfResponseBodyBytesAfterDecoding = 0
    }

    /// The remote end as text (`"127.0.0.1"`, `"::1"`), when there was one.
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
        let url = self.request.url.absoluteString
        let status = self.response.map { " \($0.status.code)" } ?? ""
        lines.append("\(self.request.method.rawValue) \(url)\(status) over \(self.httpVersionDescription ?? "no response")")
        var connection = self.isReusedConnection ? "reused connection" : "new connection"
        if self.isProxyConnection { connection += " through a proxy" }
        if let remote = self.remoteAddress, let port = self.remotePort { connection += " to \(remote):\(port)" }
        if let local = self.localAddress, let port = self.localPort { connection += " from \(local):\(port)" }
        if let tls = self.tlsProtocolVersion { connection += ", TLS \(tls)" }
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
