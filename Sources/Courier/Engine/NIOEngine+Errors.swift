import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOHTTPCompression
import NIOPosix
import NIOSSL

extension NIOEngine {
    /// Turns an error from AsyncHTTPClient, NIO or BoringSSL into a ``CourierError`` that says what
    /// happened to which request.
    static func courierError(from error: any Error, request: Request, policy: SecurityPolicy = .default) -> CourierError {
        if let error = error as? CourierError {
            return error.adding(request: request)
        }
        if var failure = error as? ServerTrustFailure ?? Self.serverTrustFailure(from: error, policy: policy) {
            failure.host = failure.host ?? request.url.host
            return failure.courierError(request: request)
        }
        let (code, reason) = Self.classify(error)
        return CourierError(code, "\(request.summary): \(reason)", request: request, underlyingError: error)
    }

    /// A TLS error from BoringSSL as a ``ServerTrustFailure`` with its reason, or nil when the
    /// error is not a TLS one.
    static func serverTrustFailure(from error: any Error, policy: SecurityPolicy) -> ServerTrustFailure? {
        guard error is NIOSSLError || error is BoringSSLError || error is NIOSSLExtraError else { return nil }
        if let error = error as? NIOSSLExtraError, error == .failedToValidateHostname {
            return ServerTrustFailure(.nameMismatch, policy: policy, detail: "\(error)")
        }
        let text = "\(error)"
        // BoringSSL reports every chain failure (unknown authority, expired, not yet valid) as
        // CERTIFICATE_VERIFY_FAILED: swift-nio-ssl installs no verify callback that would say which.
        let reasons: [(String, ServerTrustFailure.Reason)] = [
            ("CERTIFICATE_HAS_EXPIRED", .expired), ("certificate has expired", .expired),
            ("CERTIFICATE_IS_NOT_YET_VALID", .notYetValid), ("not yet valid", .notYetValid),
            ("HOSTNAME_MISMATCH", .nameMismatch), ("Hostname mismatch", .nameMismatch),
            ("CERTIFICATE_VERIFY_FAILED", .untrustedRoot),
        ]
        let reason = reasons.first { text.contains($0.0) }?.1 ?? .handshakeFailure
        return ServerTrustFailure(reason, policy: policy, detail: text)
    }

    private static func classify(_ error: any Error) -> (CourierError.Code, String) {
        if let error = error as? HTTPClientError {
            return Self.classify(error)
        }
        if let error = error as? HTTP1PoolError {
            switch error {
            case .shutDown: return (.sessionInvalidated, "\(error)")
            case .closedBeforeResponseComplete: return (.connectionClosed, "\(error)")
            case .closedBeforeAnswering: return (.connectionClosed, "\(error)")
            case .bodyLengthMismatch: return (.bodyReadFailed, "\(error)")
            }
        }
        if let error = error as? NIOHTTP2Errors.StreamClosed {
            return (.connectionClosed, "the server reset the HTTP/2 stream (\(error.errorCode))")
        }
        if error is any NIOHTTP2Error {
            return (.invalidResponse, "the server broke the HTTP/2 protocol (\(error))")
        }
        if let error = error as? NIOConnectionError {
            return (.connectionFailed, "could not connect to \(error.host):\(error.port)")
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
            return (.tlsFailure, "the TLS handshake failed (\(error))")
        }
        if let error = error as? HTTPParserError {
            if case .invalidEOFState = error {
                return (.connectionClosed, "the server closed the connection before the response was complete")
            }
            return (.invalidResponse, "the response could not be parsed (\(error))")
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
        if error is NIOHTTPDecompression.DecompressionError {
            return (.invalidResponse, "the compressed body is invalid (\(error))")
        }
        return (.connectionFailed, "\(error)")
    }

    private static let httpClientErrors: [(HTTPClientError, CourierError.Code, String)] = [
        (.connectTimeout, .timedOut, "no connection within the connect timeout"),
        (.tlsHandshakeTimeout, .timedOut, "the TLS handshake timed out"),
        (.socksHandshakeTimeout, .timedOut, "the proxy handshake timed out"),
        (.httpProxyHandshakeTimeout, .timedOut, "the proxy handshake timed out"),
        (.readTimeout, .timedOut, "no data within the request timeout"),
        (.writeTimeout, .timedOut, "could not send within the request timeout"),
        (.deadlineExceeded, .timedOut, "the whole-transfer deadline passed"),
        (.getConnectionFromPoolTimeout, .timedOut, "no pooled connection became free in time"),
        (.remoteConnectionClosed, .connectionClosed, "the server closed the connection before the response was complete"),
        (.uncleanShutdown, .connectionClosed, "the TLS connection was closed uncleanly"),
        (.cancelled, .cancelled, "cancelled"),
        (.requestStreamCancelled, .cancelled, "cancelled"),
        (.alreadyShutdown, .sessionInvalidated, "the engine was shut down"),
        (.invalidURL, .invalidURL, "the URL cannot be requested"),
        (.emptyHost, .invalidURL, "the URL has no host"),
        (.emptyScheme, .invalidURL, "the URL has no scheme"),
        (.bodyLengthMismatch, .bodyReadFailed, "the body's length differs from its declared length"),
        (.invalidProxyResponse, .connectionFailed, "the proxy refused the connection"),
        (.proxyAuthenticationRequired, .connectionFailed, "the proxy wants authentication"),
        (.redirectLimitReached, .tooManyRedirects, "too many redirects"),
        (.redirectCycleDetected, .tooManyRedirects, "a redirect cycle"),
        (.traceRequestWithBody, .invalidRequest, "a TRACE request cannot have a body"),
        (.contentLengthMissing, .invalidRequest, "the body's length is missing"),
    ]

    private static func classify(_ error: HTTPClientError) -> (CourierError.Code, String) {
        if let match = Self.httpClientErrors.first(where: { $0.0 == error }) {
            return (match.1, match.2)
        }
        let text = "\(error)"
        if text.contains("unsupportedScheme") { return (.unsupportedScheme, "the scheme is not supported") }
        if text.contains("invalidHeaderField") { return (.invalidRequest, "a header field is invalid (\(text))") }
        return (.invalidResponse, text)
    }
}
