import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL

extension NIOEngine {
    /// Turns an error from NIO, swift-nio-http2 or BoringSSL into a ``CourierError`` that says what
    /// happened to which request.
    static func courierError(from error: any Error, request: Request) -> CourierError {
        if let fallback = error as? HTTP1FallbackFailure {
            // What HTTP/1.1 met, after why the request went there.
            let (code, met): (CourierError.Code, String)
            if let failure = fallback.underlying as? CourierError {
                guard failure.code != .cancelled else { return failure.adding(request: request) }
                // Courier's own errors (a deadline, say) may name the request already.
                let named = "\(request.summary): "
                (code, met) = (failure.code, failure.message.hasPrefix(named) ? String(failure.message.dropFirst(named.count)) : failure.message)
            } else {
                (code, met) = Self.classify(fallback.underlying, request: request)
            }
            return CourierError(
                code,
                "\(request.summary): its header block does not fit in one of the server's HTTP/2 frames (Courier sends no CONTINUATION frames), so it went over HTTP/1.1, where \(met); a server that speaks only HTTP/2 cannot take this request from Courier",
                request: request, underlyingError: fallback.underlying)
        }
        if let error = error as? CourierError {
            return error.adding(request: request)
        }
        if var failure = error as? ServerTrustFailure {
            failure.host = failure.host ?? request.url.host
            return failure.courierError(request: request)
        }
        let (code, reason) = Self.classify(error, request: request)
        return CourierError(code, "\(request.summary): \(reason)", request: request, underlyingError: error)
    }

    /// An HTTP/2 error code as RFC 9113 7 names it (`INTERNAL_ERROR`), with its value for one it
    /// does not name.
    static func name(of code: NIOHTTP2.HTTP2ErrorCode) -> String {
        let names = [
            "NO_ERROR", "PROTOCOL_ERROR", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR", "SETTINGS_TIMEOUT", "STREAM_CLOSED",
            "FRAME_SIZE_ERROR", "REFUSED_STREAM", "CANCEL", "COMPRESSION_ERROR", "CONNECT_ERROR", "ENHANCE_YOUR_CALM",
            "INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED",
        ]
        let value = code.networkCode
        return value >= 0 && value < names.count ? names[value] : "error code 0x\(String(value, radix: 16))"
    }

    /// What llhttp refused, in words, for the cases real servers send (NIO's own texts say
    /// "unknown (http_parser error)" and "strict mode assertion" of them). NIO builds llhttp
    /// without its lenient flags. Bare LFs (in a head or a chunked body's framing), a
    /// `Content-Length` repeated or listed with one number, and one beside `Transfer-Encoding:
    /// chunked` never reach it (``ResponseHeadMender`` mends them, as curl and browsers read them);
    /// the RFCs let a client refuse what remains, but for whitespace around a chunk extension.
    static func explain(_ error: HTTPParserError) -> String {
        switch error {
        case .unknown:
            "framing llhttp refuses, such as Content-Length with a Transfer-Encoding other than chunked (RFC 9112 6.3)"
        case .unexpectedContentLength: "a second Content-Length field with another number, or one where none may be (RFC 9110 8.6)"
        case .invalidContentLength: "a Content-Length that is not one number (a list of different numbers such as \"3, 4\" included)"
        case .invalidChunkSize: "a chunk-size line that cannot be read (whitespace before a chunk extension included)"
        case .strictModeAssertion:
            "a construct llhttp reads only when lenient, such as whitespace around a chunk extension's ';' or '=' (RFC 9112 7.1.1 allows it)"
        case .lfExpected: "a line not ended by CRLF"
        case .invalidHeaderToken: "a header field name or line that is not a token and a value"
        case .invalidStatus: "a status line without a three-digit status"
        case .invalidVersion: "a status line without an HTTP version"
        case .headerOverflow:
            "a response head larger than Courier reads (\(ConnectionPool.http2MaximumHeaderListSize / 1024) KiB, over HTTP/1.1 as over HTTP/2)"
        default: "a response that is not HTTP/1.1"
        }
    }

    /// The words for swift-nio-http2's errors that carry nothing worth saying, by type.
    private static let http2ErrorWords: [ObjectIdentifier: String] = [
        ObjectIdentifier(NIOHTTP2Errors.InvalidPseudoHeaders.self): "a header block with pseudo-fields a response may not have",
        ObjectIdentifier(NIOHTTP2Errors.InvalidHTTP2HeaderFieldName.self): "a header field name that is not lower-case token characters (RFC 9113 8.2.1)",
        ObjectIdentifier(NIOHTTP2Errors.ContentLengthViolated.self): "a body longer or shorter than its content-length",
        ObjectIdentifier(NIOHTTP2Errors.ContentLengthHeadersMismatch.self): "a content-length that is not one number",
        ObjectIdentifier(NIOHTTP2Errors.ContentLengthHeaderNegative.self): "a content-length that is not one number",
        ObjectIdentifier(NIOHTTP2Errors.ContentLengthHeaderMalformedValue.self): "a content-length that is not one number",
        ObjectIdentifier(NIOHTTP2Errors.FlowControlViolation.self): "it sent more than the flow-control window allowed, or moved a window past 2^31-1 (FLOW_CONTROL_ERROR)",
        ObjectIdentifier(NIOHTTP2Errors.InvalidFlowControlWindowSize.self): "it sent more than the flow-control window allowed, or moved a window past 2^31-1 (FLOW_CONTROL_ERROR)",
        ObjectIdentifier(NIOHTTP2Errors.InvalidWindowIncrementSize.self): "a WINDOW_UPDATE of 0 or more than 2^31-1",
        ObjectIdentifier(NIOHTTP2Errors.ExcessiveEmptyDataFrames.self): "a flood of empty DATA frames (ENHANCE_YOUR_CALM)",
        ObjectIdentifier(NIOHTTP2Errors.ExcessiveRSTFrames.self): "a flood of RST_STREAM frames (ENHANCE_YOUR_CALM)",
        ObjectIdentifier(NIOHTTP2Errors.ExcessiveControlFrames.self): "a flood of SETTINGS, PING or PRIORITY frames (ENHANCE_YOUR_CALM)",
        ObjectIdentifier(NIOHTTP2Errors.ExcessiveContinuationFrames.self): "a header block in more CONTINUATION frames than Courier takes (ENHANCE_YOUR_CALM)",
        ObjectIdentifier(NIOHTTP2Errors.ExcessiveStreamErrors.self): "a flood of malformed streams (ENHANCE_YOUR_CALM)",
        ObjectIdentifier(NIOHTTP2Errors.ExcessiveNumberOfGlitches.self): "a flood of malformed streams (ENHANCE_YOUR_CALM)",
        ObjectIdentifier(NIOHTTP2Errors.PushInViolationOfSetting.self): "a PUSH_PROMISE, though Courier disables server push",
        ObjectIdentifier(NIOHTTP2Errors.InvalidStreamIDForPeer.self): "a frame on a stream the server may not open",
        ObjectIdentifier(NIOHTTP2Errors.StreamIDTooSmall.self): "a frame on a stream the server may not open",
        ObjectIdentifier(NIOHTTP2Errors.RaisedGoawayLastStreamID.self): "a GOAWAY that raised the last stream it had said it would process",
        ObjectIdentifier(NIOHTTP2Errors.TrailersWithoutEndStream.self): "trailers that do not end the stream",
        ObjectIdentifier(NIOHTTP2Errors.BadStreamStateTransition.self): "a frame its stream's state does not allow (RFC 9113 5.1)",
        ObjectIdentifier(NIOHTTP2Errors.UnableToParseFrame.self): "a frame that could not be parsed",
        ObjectIdentifier(NIOHTTP2Errors.MaxStreamsViolation.self): "more streams than Courier allows",
        ObjectIdentifier(NIOHTTP2Errors.ReceivedBadSettings.self): "a SETTINGS frame that could not be read",
    ]

    /// What swift-nio-http2 (or a stream's check of a header block) found wrong, in words, ended by
    /// the error's type name in parentheses; never its source file and line, nor a dump of its
    /// values (`InvalidSetting(setting: NIOHTTP2.HTTP2Setting(parameter: …), location: …)`).
    static func explain(_ error: any NIOHTTP2Error) -> String {
        let words: String
        switch error {
        case let error as NIOHTTP2Errors.InvalidSetting:
            words = "it sent \(Self.name(of: error.setting.parameter)) = \(error.setting.value), a value RFC 9113 6.5.2 does not allow"
        case let error as NIOHTTP2Errors.MissingPseudoHeader:
            words = "a response header block without \(error.name)"
        case let error as NIOHTTP2Errors.DuplicatePseudoHeader:
            words = "a response header block with \(error.name) twice"
        case let error as NIOHTTP2Errors.PseudoHeaderAfterRegularHeader:
            words = "a response header block with \(error.name) after a regular field"
        case let error as NIOHTTP2Errors.UnknownPseudoHeader:
            words = "a response header block with the unknown pseudo-field \(error.name)"
        case let error as NIOHTTP2Errors.InvalidPseudoHeaderValue:
            words = "a response whose \(error.name) is not valid"
        case let error as NIOHTTP2Errors.InvalidStatusValue:
            words = "a response whose :status is not three digits"
                + (error.value.utf8.count <= 16 ? " (\"\(error.value)\")" : "")
        case let error as NIOHTTP2Errors.ForbiddenHeaderField:
            words = "a response with the connection-specific field \(error.name), which HTTP/2 forbids (RFC 9113 8.2.2)"
        case let error as NIOHTTP2Errors.InvalidHTTP2HeaderFieldValue:
            words = "a value of \(error.name) with characters a field value may not have (RFC 9113 8.2.1)"
        default:
            words = Self.http2ErrorWords[ObjectIdentifier(type(of: error))] ?? "a frame HTTP/2 does not allow there"
        }
        return "\(words) (\(type(of: error)))"
    }

    /// A wait as an error message says it: "10 s", "0.2 s".
    static func seconds(_ seconds: Double) -> String {
        seconds == seconds.rounded() && abs(seconds) < 1e15 ? "\(Int(seconds)) s" : "\(seconds) s"
    }

    /// The same, of a NIO time amount.
    static func seconds(_ amount: TimeAmount) -> String {
        Self.seconds(Double(amount.nanoseconds) / 1e9)
    }

    /// What a user can do about an HTTP/2 error code the server sent, if anything: for
    /// HTTP_1_1_REQUIRED (IIS for Windows authentication, Apache for a directory's client
    /// certificate), which reaches the caller only for a request Courier could not send again
    /// over HTTP/1.1 itself (most often a body read once: ``ResendRule``), how to send it so.
    static func hint(for code: NIOHTTP2.HTTP2ErrorCode) -> String {
        code == .http11Required
            ? ": the server wants this request over HTTP/1.1, and Courier sends it again so only when its body can be sent again (not a stream read once); the server's later requests go over HTTP/1.1, and a session with httpVersion = .http1Only sends every request so"
            : ""
    }

    /// A SETTINGS parameter as RFC 9113 6.5.2 names it.
    static func name(of parameter: HTTP2SettingsParameter) -> String {
        switch parameter {
        case .headerTableSize: "SETTINGS_HEADER_TABLE_SIZE"
        case .enablePush: "SETTINGS_ENABLE_PUSH"
        case .maxConcurrentStreams: "SETTINGS_MAX_CONCURRENT_STREAMS"
        case .initialWindowSize: "SETTINGS_INITIAL_WINDOW_SIZE"
        case .maxFrameSize: "SETTINGS_MAX_FRAME_SIZE"
        case .maxHeaderListSize: "SETTINGS_MAX_HEADER_LIST_SIZE"
        case .enableConnectProtocol: "SETTINGS_ENABLE_CONNECT_PROTOCOL"
        default: "a setting RFC 9113 does not define"
        }
    }

    private static func classify(_ error: any Error, request: Request) -> (CourierError.Code, String) {
        if let error = error as? ConnectionPoolError {
            switch error {
            case .shutDown: return (.sessionInvalidated, "\(error)")
            case .closedBeforeResponseComplete: return (.connectionClosed, "\(error)")
            case .closedBeforeAnswering: return (.connectionClosed, "\(error)")
            case .notProcessed: return (.connectionClosed, "\(error)")
            case .bodyLengthMismatch: return (.bodyReadFailed, "\(error)")
            case .noStreamsAllowed: return (.connectionFailed, "\(error)")
            case .closedOnReuseNotResent: return (.connectionClosed, "\(error)")
            }
        }
        if let error = error as? NIOHTTP2Errors.StreamClosed {
            return (.connectionClosed, "the server reset the HTTP/2 stream (\(Self.name(of: error.errorCode)))" + Self.hint(for: error.errorCode))
        }
        if let error = error as? HTTP2StreamResetByCourier {
            if error.errorCode == .cancel { return (.connectionClosed, "\(error)") }
            return (.invalidResponse, "the response broke HTTP/2's rules for its stream: \(error)")
        }
        if let error = error as? HTTP2GoAwayRefusal {
            return (.connectionClosed, "\(error)")
        }
        if let error = error as? HTTP2HeaderBlockUndecodable {
            return (.invalidResponse, "\(error); the connection closed with its streams")
        }
        if error is NIOHTTP2Errors.ExcessivelyLargeHeaderBlock || error is NIOHPACKErrors.MaxHeaderListSizeViolation {
            let kibibytes = ConnectionPool.http2MaximumHeaderListSize / 1024
            return (
                .invalidResponse,
                "the server sent header fields larger than Courier takes over HTTP/2 (\(kibibytes) KiB, advertised as SETTINGS_MAX_HEADER_LIST_SIZE); the connection closed with its streams"
            )
        }
        if let error = error as? HTTP2ServerEnabledPush {
            return (.invalidResponse, "\(error)")
        }
        if let error = error as? HTTP2StreamBeyondGoAway {
            return (.connectionClosed, "\(error)")
        }
        if let error = error as? any HTTP2MalformedStream {
            return (.invalidResponse, "the response broke HTTP/2's rules for its stream: \(error)")
        }
        if let error = error as? any NIOHTTP2Error {
            return (.invalidResponse, "the server broke the HTTP/2 protocol: \(Self.explain(error))")
        }
        if let error = error as? UnixSocketConnectFailure {
            return (.connectionFailed, "\(error)")
        }
        if let error = error as? NIOConnectionError {
            if error.connectionErrors.isEmpty, let lookup = (error.dnsAAAAError ?? error.dnsAError) as? NameLookupFailure {
                return (.connectionFailed, "\(lookup)")
            }
            // Another host than the request's: the proxy that was to carry it. The request's
            // host as the connection names it: decoded and in IDNA's ASCII form (`xn--…`).
            let url = request.url
            let proxy = error.host.lowercased() != url.requestHost?.lowercased() || error.port != url.effectivePort ? "the proxy " : ""
            let host = error.host.contains(":") ? "[\(error.host)]" : error.host
            return (.connectionFailed, "could not connect to \(proxy)\(host):\(error.port)")
        }
        if let error = error as? IOError {
            switch error.errnoCode {
            case ECONNREFUSED: return (.connectionFailed, "connection refused")
            case ECONNRESET, EPIPE: return (.connectionClosed, "the connection was reset")
            case ETIMEDOUT: return (.timedOut, "the connection timed out")
            case ENETUNREACH, EHOSTUNREACH: return (.connectionFailed, "the network or host is unreachable")
            default: return (.connectionFailed, "\(error)")
            }
        }
        if error is NIOSSLError || error is BoringSSLError || error is NIOSSLExtraError {
            // In words, without BoringSSL's source paths. A TLS 1.3 server's refusal of the
            // client's certificate comes after the client's side of the handshake, as an alert.
            return (.tlsFailure, "the TLS handshake failed: \(ServerTrustFailure.handshakeReason("\(error)"))")
        }
        if let error = error as? HTTPParserError {
            if case .invalidEOFState = error {
                return (.connectionClosed, "the server closed the connection before the response was complete")
            }
            return (.invalidResponse, "the response could not be parsed: \(Self.explain(error)) (\(error))")
        }
        if let error = error as? ChannelError {
            switch error {
            case .connectTimeout: return (.timedOut, "no connection within the connect timeout")
            case .eof, .ioOnClosedChannel, .alreadyClosed, .outputClosed, .inputClosed:
                return (.connectionClosed, "the connection closed")
            default: return (.connectionFailed, "\(error)")
            }
        }
        if let error = error as? SocketAddressError {
            return (.connectionFailed, "the host name could not be resolved (\(error))")
        }
        if let error = error as? MalformedStatusCode {
            return (.invalidResponse, "\(error)")
        }
        if let error = error as? UnsupportedTransferCoding {
            if error.afterChunked { return (.invalidResponse, "\(error)") }
            return (
                .invalidResponse,
                "\(error), which Courier did not ask for (it sends no TE field) and does not remove (RFC 9112 7.4)"
            )
        }
        if let error = error as? ResponseDecompressionError {
            if case .limit(let ratio) = error.reason {
                // A body refused by the guard against decompression bombs, valid or not: too large
                // for a setting of the caller's (as a WebSocket message that inflates past its
                // limit, or a body past `maximumResponseBodySize`), not invalid. Say which setting.
                return (
                    .responseTooLarge,
                    "the body inflates past \(NIOEngine.Decompression.ratioFreeSize >> 20) MiB to more than \(ratio) times its compressed size, the limit set by the configuration's decompression (.enabled(ratio: \(ratio)))"
                )
            }
            return (.invalidResponse, "the compressed body is invalid (\(error))")
        }
        return (.connectionFailed, "\(error)")
    }
}

/// A connection to a host's Unix-domain socket (``NIOEngine/Configuration/unixSocketPaths``)
/// could not be made: the message names the socket and says why in words.
struct UnixSocketConnectFailure: Error, CustomStringConvertible {
    let path: String
    let underlying: any Error

    var description: String {
        "could not connect to the Unix socket \(self.path): \(self.reason)"
    }

    private var reason: String {
        if let error = self.underlying as? IOError {
            switch error.errnoCode {
            case ENOENT: return "there is no socket at that path"
            case ECONNREFUSED: return "nothing listens on it"
            case EACCES, EPERM: return "permission denied"
            case ENOTDIR: return "a part of the path is not a directory"
            default: return "\(error)"
            }
        }
        if let error = self.underlying as? SocketAddressError, case .unixDomainSocketPathTooLong = error {
            return "the path is longer than a Unix socket's can be"
        }
        return "\(self.underlying)"
    }
}

/// A header block from the server that swift-nio-http2 could not decode (it sent GOAWAY with
/// COMPRESSION_ERROR): most often a list past Courier's `SETTINGS_MAX_HEADER_LIST_SIZE`, which is
/// advisory (RFC 9113 6.5.2), so a server may send one; else broken header compression.
/// swift-nio-http2 reports both as a frame it could not parse, which blamed the server's framing.
struct HTTP2HeaderBlockUndecodable: Error, CustomStringConvertible {
    var description: String {
        let kibibytes = ConnectionPool.http2MaximumHeaderListSize / 1024
        return "Courier could not decode a header block the server sent (COMPRESSION_ERROR): header fields larger than Courier takes over HTTP/2 (\(kibibytes) KiB, advertised as SETTINGS_MAX_HEADER_LIST_SIZE), or broken header compression"
    }
}

/// The server sent `SETTINGS_ENABLE_PUSH` other than 0, which RFC 9113 6.5.2 forbids a server
/// to send and makes a connection error: Courier sent GOAWAY with PROTOCOL_ERROR and closed the
/// connection.
struct HTTP2ServerEnabledPush: Error, CustomStringConvertible {
    var description: String {
        "the server sent SETTINGS_ENABLE_PUSH = 1, which a server may not send (RFC 9113 6.5.2); Courier closed the connection (PROTOCOL_ERROR)"
    }
}

/// A response that broke RFC 9113 8.1's rules for its stream, found by Courier's stream state
/// machine: the stream is reset with PROTOCOL_ERROR, its request fails saying what the server
/// sent, and the connection goes on.
protocol HTTP2MalformedStream: Error, CustomStringConvertible {}

/// A response whose status says it has no content (204, 304) came with DATA: malformed (RFC 9113
/// 8.1.1, RFC 9110 6.4.1). Courier resets the stream with PROTOCOL_ERROR, as curl does.
struct HTTP2ContentWhereNoneMayBe: HTTP2MalformedStream {
    let status: Int

    var description: String { "a \(self.status) response, which has no content, came with DATA" }
}

/// An informational (1xx) response head that ended its stream: no final response can follow, and
/// the response is malformed (RFC 9113 8.1). The stream is reset with PROTOCOL_ERROR.
struct HTTP2InterimResponseEndedStream: HTTP2MalformedStream {
    let status: Int

    var description: String { "the stream ended with an interim \(self.status) response and no final one" }
}

/// A `101 Switching Protocols` head on a stream: HTTP/2 has no such status (RFC 9113 8.6), and
/// the response is malformed, as nghttp2 and Go's transport take it. The stream is reset with
/// PROTOCOL_ERROR.
struct HTTP2SwitchingProtocols: HTTP2MalformedStream {
    var description: String { "the server answered 101 Switching Protocols, which HTTP/2 does not have (RFC 9113 8.6)" }
}

/// A stream above the last one the server's GOAWAY said it processes, closed while its response
/// was under way (swift-nio-http2 closes such a stream as if reset with CANCEL, though the server
/// sent no RST_STREAM).
struct HTTP2StreamBeyondGoAway: Error, CustomStringConvertible {
    let streamID: Int
    let lastStreamID: Int

    var description: String {
        "the server's GOAWAY (last stream \(self.lastStreamID)) dropped stream \(self.streamID), whose response had begun"
    }
}

/// Courier's side reset an HTTP/2 stream (RST_STREAM with `errorCode`): swift-nio-http2 found a
/// stream error in what the server sent (a body longer than its `content-length`, a malformed
/// field: PROTOCOL_ERROR), or Courier closed the stream while it was under way (CANCEL). The
/// server did not reset it.
struct HTTP2StreamResetByCourier: Error, CustomStringConvertible {
    let errorCode: NIOHTTP2.HTTP2ErrorCode

    var description: String { "Courier reset the HTTP/2 stream (\(NIOEngine.name(of: self.errorCode)))" }
}

/// A request whose header block does not fit in an HTTP/2 frame went over HTTP/1.1 and failed
/// there (``EngineHop/State/headTooLargeForHTTP2``): what it met, said after why it went there
/// (``NIOEngine/courierError(from:request:)``).
struct HTTP1FallbackFailure: Error {
    let underlying: any Error
}
