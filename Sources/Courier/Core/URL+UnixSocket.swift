import Foundation

/// AsyncHTTPClient's URL forms for a server behind a Unix-domain socket: `http+unix://` and
/// `https+unix://`, whose host is the socket's path, percent-encoded
/// (`http+unix://%2Fvar%2Frun%2Fdocker.sock/v1.43/info`). The rest of the URL is the request's
/// path and query, as in any `http` URL.
extension URL {
    /// The Unix-domain socket this URL names and whether it speaks TLS, for an `http+unix` or
    /// `https+unix` URL (any case) with a socket path; nil for any other URL.
    var unixSocketTarget: (path: String, tls: Bool)? {
        guard let tls = self.scheme.flatMap({ Self.unixSocketSchemeUsesTLS($0) }),
            // `host` is the decoded form: `%2Fvar%2Frun%2Fdocker.sock` is `/var/run/docker.sock`.
            let path = self.host(percentEncoded: false), !path.isEmpty
        else { return nil }
        return (path, tls)
    }

    /// Whether this URL has an `http+unix` or `https+unix` scheme but no socket path for a host.
    var isUnixSocketURLWithoutSocket: Bool {
        self.scheme.flatMap { Self.unixSocketSchemeUsesTLS($0) } != nil && self.unixSocketTarget == nil
    }

    /// For `http+unix` false, for `https+unix` true (any case); nil for any other scheme.
    static func unixSocketSchemeUsesTLS(_ scheme: String) -> Bool? {
        switch scheme.lowercased() {
        case "http+unix": false
        case "https+unix": true
        default: nil
        }
    }

    /// The schemes Courier requests: `http`, `https`, and the Unix-socket forms.
    static func isRequestableScheme(_ scheme: String) -> Bool {
        switch scheme.lowercased() {
        case "http", "https", "http+unix", "https+unix": true
        default: false
        }
    }

    /// An `http+unix` URL (or `https+unix` when `tls`) that reaches the server listening on the
    /// Unix-domain socket at `socketPath` with the request target `target` (a path and
    /// optionally a query, `/` when empty): AsyncHTTPClient's `URL(httpURLWithSocketPath:uri:)`.
    /// With `webSocket`, the same as a `ws+unix` (or `wss+unix`) URL, for
    /// `SessionManager.webSocketTask(with:configuration:)`.
    ///
    /// ```swift
    /// let url = URL(unixSocketPath: "/var/run/docker.sock", target: "/v1.43/info")!
    /// // http+unix://%2Fvar%2Frun%2Fdocker.sock/v1.43/info
    /// let info = try await manager.data(for: Request(url: url))
    /// ```
    ///
    /// Such a request sends `Host: localhost`, and over TLS checks the server's certificate for
    /// the name `localhost`. Nil when `socketPath` is empty or `target` does not make a URL.
    public init?(unixSocketPath socketPath: String, target: String = "/", tls: Bool = false, webSocket: Bool = false) {
        guard !socketPath.isEmpty,
            // Everything but unreserved characters is encoded, `/` included: the path is one host.
            let host = socketPath.addingPercentEncoding(withAllowedCharacters: Self.socketPathAllowed)
        else { return nil }
        let path = target.hasPrefix("/") ? target : "/" + target
        let scheme = (webSocket ? "ws" : "http") + (tls ? "s" : "") + "+unix://"
        self.init(string: scheme + host + path)
    }

    /// RFC 3986's unreserved characters: what a socket path keeps unencoded in a URL's host.
    private static let socketPathAllowed = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
}
