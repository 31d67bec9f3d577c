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
    /// without its lenient flags: curl and HTTPie read the first, third and last of these, and the
    /// RFCs let a client refuse all but the last.
    static func explain(_ error: HTTPParserError) -> String {
        switch error {
        case .unknown:
            "framing llhttp refuses, such as a line ended by LF alone or Content-Length with Transfer-Encoding: chunked (RFC 9112 2.2, 6.3)"
        case .unexpectedContentLength: "a second Content-Length field, or one where none may be (RFC 9110 8.6)"
        case .invalidContentLength: "a Content-Length that is not one number (a list such as \"3, 3\" included)"
        case .invalidChunkSize: "a chunk-size line that cannot be read (whitespace before a chunk extension included)"
        case .strictModeAssertion:
            "a construct llhttp reads only when lenient, such as whitespace around a chunk extension's ';' or '=' (RFC 9112 7.1.1 allows it)"
        case .lfExpected: "a line not ended by CRLF"
        case .invalidHeaderToken: "a header field name or line that is not a token and a value"
        case .invalidStatus: "a status line without a three-digit status"
        case .invalidVersion: "a status line without an HTTP version"
        default: "a response that is not HTTP/1.1"
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
            }
        }
        if let error = error as? NIOHTTP2Errors.StreamClosed {
            return (.connectionClosed, "the server reset the HTTP/2 stream (\(Self.name(of: error.errorCode)))")
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
        if error is any NIOHTTP2Error {
            return (.invalidResponse, "the server broke the HTTP/2 protocol (\(error))")
        }
        if let error = error as? NIOConnectionError {
            if error.connectionErrors.isEmpty, let lookup = (error.dnsAAAAError ?? error.dnsAError) as? NameLookupFailure {
                return (.connectionFailed, "\(lookup)")
            }
            // Another host than the request's: the proxy that was to carry it.
            let url = request.url
            let proxy = error.host.lowercased() != url.host?.lowercased() || error.port != url.effectivePort ? "the proxy " : ""
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
        if let error = error as? ResponseDecompressionError {
            if case .limit(let ratio) = error.reason {
                // A valid body, refused by the guard against decompression bombs: say which setting.
                return (
                    .invalidResponse,
                    "the body inflates to more than \(ratio) times its compressed size, the limit set by the configuration's decompression (.enabled(ratio: \(ratio)))"
                )
            }
            return (.invalidResponse, "the compressed body is invalid (\(error))")
        }
        return (.connectionFailed, "\(error)")
    }
}

/// Courier's side reset an HTTP/2 stream (RST_STREAM with `errorCode`): swift-nio-http2 found a
/// stream error in what the server sent (a body longer than its `content-length`, a malformed
/// field: PROTOCOL_ERROR), or Courier closed the stream while it was under way (CANCEL). The
/// server did not reset it.
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

struct HTTP2StreamResetByCourier: Error, CustomStringConvertible {
    let errorCode: NIOHTTP2.HTTP2ErrorCode

    var description: String { "Courier reset the HTTP/2 stream (\(NIOEngine.name(of: self.errorCode)))" }
}
