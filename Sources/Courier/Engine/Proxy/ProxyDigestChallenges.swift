import HTTPTypes
import NIOConcurrencyHelpers

/// The Digest challenges HTTP proxies sent (RFC 7616), by proxy: a request for an `http` URL
/// through a proxy that challenged before, and a `CONNECT` for a new tunnel, carry the answer to
/// its nonce at once, with a growing nonce count, as URLSession does for a server's. The pool
/// keeps one; the exchange records a forwarding proxy's 407's challenge and sends the request
/// again (``NIOExchange``); a tunnel records the challenge it answered once it opens
/// (``ProxyTunnel``).
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

    /// Later requests through `proxy` answer `challenge`, its nonce counted on from
    /// `nonceCount` (the uses it had already), or from the count it had here when it is the nonce
    /// already kept and that count is higher (a proxy that checks nonce counts refuses one that
    /// goes back).
    func record(_ challenge: HTTPAuthorization.DigestChallenge, for proxy: NIOEngine.Proxy, nonceCount: Int = 0) {
        self.entries.withLockedValue { entries in
            var count = nonceCount
            if let kept = entries[proxy], kept.challenge.nonce == challenge.nonce { count = max(count, kept.nonceCount) }
            entries[proxy] = Entry(challenge: challenge, nonceCount: count)
        }
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
