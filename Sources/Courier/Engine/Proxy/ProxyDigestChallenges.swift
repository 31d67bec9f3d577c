import HTTPTypes
import NIOConcurrencyHelpers

/// The Digest challenges forwarding proxies sent (RFC 7616), by proxy: a request for an `http`
/// URL through a proxy that challenged before carries the answer to its nonce at once, with a
/// growing nonce count, as URLSession does for a server's. The pool keeps one; the exchange
/// records a 407's challenge and sends the request again (``NIOExchange``).
final class ProxyDigestChallenges: Sendable {
    private struct Entry {
        var challenge: HTTPAuthorization.DigestChallenge
        /// How many requests used the nonce.
        var nonceCount: Int
    }

    private let entries = NIOLockedValueBox<[NIOEngine.Proxy: Entry]>([:])
    private let makeClientNonce: @Sendable () -> String

    init(makeClientNonce: @escaping @Sendable () -> String = HTTPAuthorization.makeClientNonce) {
        self.makeClientNonce = makeClientNonce
    }

    /// The strongest Digest challenge Courier can answer of a proxy's 407 (its
    /// `Proxy-Authenticate` fields; a 401's `WWW-Authenticate`, which tinyproxy answers a
    /// `CONNECT` with), or nil.
    static func answerable(in response: HTTPResponse) -> HTTPAuthorization.DigestChallenge? {
        let field: HTTPField.Name = response.status.code == 401 ? .wwwAuthenticate : .proxyAuthenticate
        let offered = HTTPChallenge.parse(response.headerFields[values: field])
        return HTTPAuthenticationResponder.answerable(offered).lazy.compactMap(\.1).first
    }

    /// Later requests through `proxy` answer `challenge` (its nonce counted from 1).
    func record(_ challenge: HTTPAuthorization.DigestChallenge, for proxy: NIOEngine.Proxy) {
        self.entries.withLockedValue { $0[proxy] = Entry(challenge: challenge, nonceCount: 0) }
    }

    /// The `Proxy-Authorization` for a request `method uri` (the absolute form) through `proxy`,
    /// when it challenged before and has credentials; nil otherwise.
    func authorization(for proxy: NIOEngine.Proxy, method: String, uri: String) -> String? {
        guard let credential = proxy.credential else { return nil }
        let answering = self.entries.withLockedValue { entries -> Entry? in
            guard var entry = entries[proxy] else { return nil }
            entry.nonceCount += 1
            entries[proxy] = entry
            return entry
        }
        guard let answering else { return nil }
        return HTTPAuthorization.digest(
            answering.challenge, credential: credential, method: method, uri: uri, nonceCount: answering.nonceCount,
            cnonce: self.makeClientNonce())
    }
}
