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
    ///
    /// `unsupportedTransferCoding` is set to a transfer coding other than `chunked` the head's
    /// `Transfer-Encoding` names, which Courier neither asks for (it sends no `TE`) nor removes:
    /// the hop fails with ``UnsupportedTransferCoding`` rather than hand the coded bytes on as the
    /// content (when the head has a body: `HTTPResponse.hasBody(status:answeringHEAD:)`). (A parameter, not a field: a field made every copy of the head dearer.) Inlined
    /// into its one caller on the request path, so that `answersHEAD`'s closure is never made.
    ///
    /// `reasonPhrase` is the server's own, when it is not the standard one NIO's decoder put in
    /// the head (``HTTP1ReadWatcher/reasonPhrase(for:)``).
    @inline(__always)
    init(
        nioHead head: HTTPResponseHead, answersHEAD: @autoclosure () -> Bool = false, unsupportedTransferCoding: inout UnsupportedTransferCoding?,
        reasonPhrase: String? = nil
    ) {
        self.response = HTTPResponse(nioHead: head)
        if let reasonPhrase {
            self.response.status = HTTPResponse.Status(code: Int(head.status.code), reasonPhrase: reasonPhrase)
        }
        self.status = Int(head.status.code)
        self.version = head.version
        let isHTTP11 = head.version.major == 1 && head.version.minor >= 1
        if head.isKeepAlive && isHTTP11 {
            self.isKeepAlive = true
        } else if head.isKeepAlive || answersHEAD() {
            // The `Connection` field decides where llhttp's verdict does not: an HTTP/1.0 answer
            // it keeps for its `keep-alive` may say `close` too (`keep-alive, close`, or two
            // fields), and `close` wins, as in Go and curl; and an answer to HEAD it read as
            // "close" (its fields carry the verdict with them, so they are read here).
            let tokens = head.headers[canonicalForm: "connection"].map(\.lowercasedASCII)
            self.isKeepAlive = !tokens.contains("close") && (isHTTP11 || tokens.contains("keep-alive"))
        } else {
            self.isKeepAlive = false
        }
        // One pass over the fields: the head's size as HTTP/1.1 text ("HTTP/1.1 SP 200 SP reason
        // CRLF" ... "CRLF"), the first `Keep-Alive` (10 bytes long) and `Transfer-Encoding` (17).
        // The server's phrase is ISO Latin 1 on the wire: a byte a scalar.
        var size = 8 + 1 + 3 + 1 + (reasonPhrase?.unicodeScalars.count ?? head.status.reasonPhrase.utf8.count) + 2 + 2
        var keepAlive = KeepAlive.absent
        // Whether a `Transfer-Encoding` field named `chunked`: it must be the last coding of all.
        var chunked = false
        for (name, value) in head.headers {
            size += name.utf8.count + 2 + value.utf8.count + 2
            switch name.utf8.count {
            case 10 where keepAlive == .absent && name.equalsLowercased("keep-alive"):
                keepAlive = .idleTimeout(HopStateMachine.idleTimeout(fromKeepAlive: value))
            case 17 where unsupportedTransferCoding == nil && name.equalsLowercased("transfer-encoding"):
                // An HTTP/1.0 message with a `Transfer-Encoding` has faulty framing: read as it
                // says, then the connection is closed (RFC 9112 6.1; Go ignores the field in a
                // 1.0 answer, so the two may have framed it differently).
                if !isHTTP11 { self.isKeepAlive = false }
                if value == "chunked", !chunked {
                    chunked = true
                } else {
                    unsupportedTransferCoding = Self.unsupportedTransferCoding(in: value, afterChunked: &chunked)
                }
            default:
                break
            }
        }
        self.size = Int64(size)
        self.keepAlive = keepAlive
    }

    /// The first coding of a `Transfer-Encoding` value other than `chunked`, or nil (RFC 9112
    /// 6.1: a comma-separated list, in any case, blanks around the commas). `chunked` tells
    /// whether an earlier value named `chunked`, and is set when this one does: any coding after
    /// it, `identity` or `chunked` again, is refused too (RFC 9112 6.1 and 7: chunked is applied
    /// once, last). For llhttp only the last coding says whether the body is chunked, so with
    /// `chunked, identity` it read the chunks' framing as the content, up to the close, as Go and
    /// curl refuse to.
    static func unsupportedTransferCoding(in value: String, afterChunked chunked: inout Bool) -> UnsupportedTransferCoding? {
        for element in value.split(separator: ",") {
            let coding = element.trimmingSpaces().lowercasedASCII
            if coding.isEmpty { continue }
            if chunked { return UnsupportedTransferCoding(coding: coding, afterChunked: true) }
            if coding == "chunked" {
                chunked = true
            } else if coding != "identity" {
                // `identity` was removed from the registry (RFC 7230); old servers still name it.
                return UnsupportedTransferCoding(coding: coding)
            }
        }
        return nil
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

/// A response whose status code is below 100 (`HTTP/1.1 000 OK`): three digits, but no class
/// (RFC 9110 15). Told as ``CourierError/Code/invalidResponse``.
struct MalformedStatusCode: Error, Equatable, CustomStringConvertible {
    let code: Int
    var description: String { "the server answered with the status code \(self.code < 10 ? "00" : "0")\(self.code), whose first digit names no class of response (RFC 9110 15)" }
}

/// A response whose `Transfer-Encoding` names a coding other than `chunked` (`gzip, chunked`,
/// or one Courier does not know): Courier sends no `TE` field, so the server may apply no other
/// (RFC 9112 7.4), and its body is not the content. Told as ``CourierError/Code/invalidResponse``.
struct UnsupportedTransferCoding: Error, Equatable, CustomStringConvertible {
    let coding: String
    /// The coding came after `chunked`, which must be the last (RFC 9112 6.1).
    var afterChunked = false
    var description: String {
        self.afterChunked
            ? "the server named the transfer coding '\(self.coding)' after 'chunked', which must be the last (RFC 9112 6.1): where the body ends cannot be told"
            : "the server applied the transfer coding '\(self.coding)'"
    }
}

/// A response part as a hop reads it: the head as a ``HopResponseHead``, the body and the end
/// (with trailer fields) as NIO's HTTP/1 decoder gives them.
typealias HopResponsePart = HTTPPart<HopResponseHead, ByteBuffer>
