import HTTPTypes
import NIOCore
import NIOSOCKS

/// Why a proxy tunnel did not open, before it is told as a ``CourierError`` naming the proxy and
/// the target (``courierError(proxy:target:)``).
enum ProxyTunnelFailure: Sendable, Equatable {
    /// The HTTP proxy answered `CONNECT` with 407 (or 401, as tinyproxy does).
    case authenticationRequired(HTTPResponse)
    /// The HTTP proxy answered `CONNECT` with a Digest challenge and closes the connection (or
    /// its 407 has a body whose end is the close): the next connection's `CONNECT` carries
    /// `authorization`, the challenge's answer, the `answers`-th the tunnel gives
    /// (``HTTPConnectStateMachine/maximumDigestAnswers`` at most), answering the challenge of the
    /// 407 `after` with nonce count 1. The pool connects again; told to a caller, it is the 407.
    case answerOnNewConnection(authorization: String, answers: Int, after: HTTPResponse)
    /// The HTTP proxy answered `CONNECT` with a status other than 2xx, 401 and 407.
    case refused(HTTPResponse)
    /// The SOCKS5 proxy replied with an error.
    case socksReply(SOCKSServerReply)
    /// The SOCKS5 proxy chose an authentication method that was not offered (or none of them).
    case socksAuthentication(NIOSOCKS.AuthenticationMethod)
    /// The SOCKS5 proxy refused the user name and password (RFC 1929's non-zero status).
    case socksCredentialsRefused(status: UInt8)
    /// The proxy's answer is not the protocol's: what was wrong.
    case invalidResponse(String)
    /// The proxy sent bytes after its answer, before the client spoke through the tunnel.
    case unsolicitedBytes(Int)
    /// The connection closed before the proxy had answered (`received` bytes of an answer).
    case closed(received: Int)
    /// The connection failed under the handshake (reset, an I/O error): the error's text.
    case connectionError(String)
    /// The `https://` proxy's TLS failed under the handshake (an alert: a TLS 1.3 proxy refusing
    /// the client certificate): BoringSSL's reason in words (`ServerTrustFailure.handshakeReason`).
    case tls(String)
    /// The proxy did not answer within the timeout.
    case timedOut(TimeAmount)
    /// The tunnel cannot be asked for (credentials or a target SOCKS5 cannot carry).
    case unusable(String)
    /// The target's host name, to be sent to a `socks5://` proxy as an address, has none: why.
    case nameLookup(String)
    /// The tunnel's handler left the pipeline before the tunnel was up.
    case abandoned

    /// What a 407 says of the proxy's credentials: none were configured; or the proxy asks only
    /// for schemes Courier does not answer (NTLM, Negotiate…: "refused" would name credentials
    /// it never saw checked); or they were refused.
    static func credentialsVerdict(proxy: NIOEngine.Proxy, response: HTTPResponse) -> String {
        guard let user = proxy.username else { return "none were configured" }
        let offered = HTTPChallenge.parse(response.headerFields[values: .proxyAuthenticate])
        if !offered.isEmpty, HTTPAuthenticationResponder.answerable(offered).isEmpty {
            let schemes = offered.map(\.scheme).joined(separator: ", ")
            return "it asks for \(schemes), and Courier answers a proxy's Basic and Digest only (user '\(user)')"
        }
        return "the credentials for user '\(user)' were refused"
    }

    /// The error for a caller: its code, and a message naming the proxy, the target and what
    /// happened.
    /// - Parameters:
    ///   - proxy: The proxy.
    ///   - target: `host:port` of the server the tunnel leads to.
    ///   - underlyingError: The error that caused it, if any.
    func courierError(proxy: NIOEngine.Proxy, target: String, underlyingError: (any Error)? = nil) -> CourierError {
        let opening = proxy.isSOCKS ? "a SOCKS5 tunnel to \(target)" : "CONNECT \(target)"
        let who = proxy.displayName
        switch self {
        case .authenticationRequired(let response):
            let credentials = Self.credentialsVerdict(proxy: proxy, response: response)
            return CourierError(
                .proxyAuthenticationRequired,
                "\(who) wants authentication for \(opening) (\(Self.statusLine(response))): \(credentials)",
                response: response, underlyingError: underlyingError)
        case .answerOnNewConnection(let authorization, let answers, let response):
            // What the pool reads to connect again (``ProxyTunnel/DigestAnswer``), with the
            // challenge answered, which the next tunnel remembers once it opens.
            let answer = ProxyTunnel.DigestAnswer(
                authorization: authorization, answers: answers, challenge: ProxyDigestChallenges.answerable(in: response))
            return CourierError(
                .proxyAuthenticationRequired,
                "\(who) wants authentication for \(opening) (\(Self.statusLine(response))) and closed the connection its Digest challenge came on",
                response: response, underlyingError: answer)
        case .refused(let response):
            return CourierError(
                .proxyRefused, "\(who) refused \(opening): \(Self.statusLine(response))",
                response: response, underlyingError: underlyingError)
        case .socksReply(let reply):
            return CourierError(
                .proxyRefused, "\(who) could not open \(opening): \(Self.describe(reply)) (reply \(reply.value))",
                underlyingError: underlyingError)
        case .socksAuthentication(let method):
            let offered = proxy.username == nil
                ? "Courier offers only 'no authentication' when no credentials are configured"
                : "'no authentication' and 'username/password'"
            let what = switch method {
            case .noneAcceptable: "accepts none of the authentication methods offered (\(offered))"
            case .usernamePassword: "asks for a user name and password, and none were configured"
            default: "chose authentication method \(method.value), which Courier did not offer (\(offered))"
            }
            return CourierError(.proxyAuthenticationRequired, "\(who) \(what), for \(opening)", underlyingError: underlyingError)
        case .socksCredentialsRefused(let status):
            return CourierError(
                .proxyAuthenticationRequired,
                "\(who) refused the credentials for user '\(proxy.username ?? "")' (status \(status)), for \(opening)",
                underlyingError: underlyingError)
        case .invalidResponse(let what):
            return CourierError(.invalidResponse, "\(who) answered \(opening) with \(what)", underlyingError: underlyingError)
        case .unsolicitedBytes(let count):
            return CourierError(
                .invalidResponse, "\(who) sent \(count) unexpected bytes after opening \(opening), before any request",
                underlyingError: underlyingError)
        case .closed(let received):
            let when = received == 0 ? "before answering" : "after \(received) bytes of an incomplete answer"
            return CourierError(.connectionClosed, "\(who) closed the connection \(when) \(opening)", underlyingError: underlyingError)
        case .connectionError(let text):
            return CourierError(.connectionClosed, "the connection to \(who) failed during \(opening): \(text)", underlyingError: underlyingError)
        case .tls(let reason):
            return CourierError(.tlsFailure, "\(who): the TLS handshake failed: \(reason), during \(opening)", underlyingError: underlyingError)
        case .timedOut(let timeout):
            return CourierError(
                .timedOut, "\(who) did not open \(opening) within \(Self.seconds(timeout))", underlyingError: underlyingError)
        case .unusable(let why):
            return CourierError(.invalidProxyConfiguration, "\(who) cannot open \(opening): \(why)", underlyingError: underlyingError)
        case .nameLookup(let why):
            return CourierError(
                .connectionFailed, "\(why), for \(opening) through \(who) (a socks5:// proxy is sent an address; socks5h:// sends it the name)",
                underlyingError: underlyingError)
        case .abandoned:
            return CourierError(
                .internalInconsistency, "the handler opening \(opening) through \(who) left the pipeline before the tunnel was up",
                underlyingError: underlyingError)
        }
    }

    /// "407 Proxy Authentication Required".
    private static func statusLine(_ response: HTTPResponse) -> String {
        let reason = response.status.reasonPhrase
        return reason.isEmpty ? "\(response.status.code)" : "\(response.status.code) \(reason)"
    }

    /// RFC 1928's words for a SOCKS5 reply.
    private static func describe(_ reply: SOCKSServerReply) -> String {
        switch reply {
        case .serverFailure: "general SOCKS server failure"
        case .notAllowed: "connection not allowed by ruleset"
        case .networkUnreachable: "network unreachable"
        case .hostUnreachable: "host unreachable"
        case .refused: "connection refused"
        case .ttlExpired: "TTL expired"
        case .commandUnsupported: "command not supported"
        case .addressUnsupported: "address type not supported"
        default: "an unassigned error"
        }
    }

    /// "10 s", "250 ms".
    private static func seconds(_ amount: TimeAmount) -> String {
        let milliseconds = amount.nanoseconds / 1_000_000
        return milliseconds % 1000 == 0 ? "\(milliseconds / 1000) s" : "\(milliseconds) ms"
    }
}
