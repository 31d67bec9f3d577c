import HTTPTypes
import NIOCore
import NIOHTTP1

/// A response head as a hop reads it, whichever protocol brought it: the response its exchange
/// gets (swift-http-types' `HTTPResponse`), made once where the head arrives, with what
/// ``HopStateMachine`` and the transaction's metrics need of the head as it came.
///
/// An HTTP/1.1 connection makes it from the `HTTPResponseHead` NIO's decoder gives
/// (``init(nioHead:)``); an HTTP/2 stream makes it straight from the HPACK header block
/// (``HTTP2StreamStateMachine``), with no `HTTPResponseHead` between the two.
struct HopResponseHead: Equatable, Sendable {
    /// The response as the exchange gets it.
    var response: HTTPResponse
    /// The version the head came with (`2.0` for a stream).
    var version: HTTPVersion
    /// Whether the connection may carry another hop after the response (HTTP/1.1: `Connection`,
    /// HTTP/1.0 only with `keep-alive`; a stream is never reused, and says false).
    var isKeepAlive: Bool
    /// The head's size as HTTP/1.1 text (status line, fields, blank line), for the metrics.
    var size: Int64
    /// What its `Keep-Alive` field says, read from NIO's head as it comes (a stream's head, never
    /// given back, has none). A value without references: the head is copied as it goes through
    /// the hop's machine, and a `String` here made every copy retain each of its fields.
    var keepAlive: KeepAlive

    /// What a `Keep-Alive` field says of the server's idle timeout.
    enum KeepAlive: Equatable, Sendable {
        /// No `Keep-Alive` field.
        case absent
        /// The first `Keep-Alive` field, with the idle time it promises (less a second), if it
        /// names one (``HopStateMachine/idleTimeout(fromKeepAlive:)``).
        case idleTimeout(TimeAmount?)
    }

    /// The status code, kept as it came: `response.status` copies the status field and the
    /// reason phrase each time it is read.
    var status: Int

    /// A head NIO's HTTP/1 decoder made. `answersHEAD` is asked only of a head that says the
    /// connection closes: llhttp decides keep-alive before it learns the response answers a HEAD,
    /// so one without `Content-Length` or `Transfer-Encoding` (Tomcat's for a page, Traffic
    /// Server's) reads as "close" (it would be read to the connection's close). A response to HEAD
    /// ends at its head (RFC 9112 6.3): its version and `Connection` field decide.
    init(nioHead head: HTTPResponseHead, answersHEAD: @autoclosure () -> Bool = false) {
        self.response = HTTPResponse(nioHead: head)
        self.status = Int(head.status.code)
        self.version = head.version
        if head.isKeepAlive {
            self.isKeepAlive = true
        } else if answersHEAD() {
            // NIO's fields carry the parser's verdict with them, so they are read here.
            let tokens = head.headers[canonicalForm: "connection"].map { $0.lowercased() }
            self.isKeepAlive = head.version.major == 1 && head.version.minor >= 1
                ? !tokens.contains("close") : tokens.contains("keep-alive")
        } else {
            self.isKeepAlive = false
        }
        self.size = HopHandler.size(of: head)
        self.keepAlive = head.headers.first(name: "keep-alive").map { .idleTimeout(HopStateMachine.idleTimeout(fromKeepAlive: $0)) } ?? .absent
    }

    init(response: HTTPResponse, status: Int, version: HTTPVersion, isKeepAlive: Bool, size: Int64) {
        self.response = response
        self.status = status
        self.version = version
        self.isKeepAlive = isKeepAlive
        self.size = size
        self.keepAlive = .absent
    }
}

/// A response part as a hop reads it: the head as a ``HopResponseHead``, the body and the end
/// (with trailer fields) as NIO's HTTP/1 decoder gives them.
typealias HopResponsePart = HTTPPart<HopResponseHead, ByteBuffer>
