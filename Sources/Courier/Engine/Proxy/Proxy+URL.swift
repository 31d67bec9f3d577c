import Foundation

extension NIOEngine.Proxy: CustomStringConvertible {
    /// The port a proxy URL without one gets: 1080, curl's default for every kind of proxy but
    /// `https://` (``defaultTLSPort``).
    public static let defaultPort = 1080
    /// The port an `https://` proxy URL without one gets: 443, as in curl.
    public static let defaultTLSPort = 443

    /// Reads a proxy URL the way curl reads `--proxy` and the proxy environment variables.
    ///
    /// - `http://[user[:password]@]host[:port][/]`: an HTTP proxy (absolute-form requests for
    ///   `http` URLs, a `CONNECT` tunnel for `https` URLs), with credentials when the URL has a
    ///   user (percent-encoded: `us%40er` is `us@er`): Basic up front, Digest when the proxy asks.
    /// - `https://[user[:password]@]host[:port][/]`: the same, reached over TLS
    ///   (``https(host:port:username:password:)``); port 443 when none is given.
    /// - `socks5://[user[:password]@]host[:port]` and `socks5h://…`: a SOCKS5 proxy, with a
    ///   user name and password (RFC 1929) when the URL has a user (percent-encoded, as for
    ///   `http://`). As in curl, `socks5://` has Courier resolve the target's host name itself
    ///   (the system's resolver: `/etc/hosts`, DNS) and send the proxy an IP address
    ///   (``resolvesHostNamesLocally``); `socks5h://` sends the proxy the name to resolve.
    /// - No scheme (`proxy.example.com:3128`) means `http://`. Without a port, 1080.
    ///
    /// Schemes are matched without regard to case. A trailing `/` is accepted.
    ///
    /// - Parameter url: The proxy URL.
    /// - Throws: ``CourierError/Code/invalidProxyConfiguration`` for a URL that does not parse,
    ///   has no host, a port outside 1–65535, a path, query or fragment, a user name or
    ///   password that is not UTF-8 once percent-decoded, or longer than SOCKS5 carries (255
    ///   bytes) on a `socks5://` URL, or another scheme (`socks4://`, `socks4a://`).
    public init(url: String) throws(CourierError) {
        let trimmed = url.trimmingCharacters(in: .whitespaces)
        func invalid(_ why: String) -> CourierError {
            CourierError(.invalidProxyConfiguration, "proxy URL '\(URLText.redacted(trimmed))': \(why)")
        }
        guard !trimmed.isEmpty else { throw invalid("it is empty") }
        let text = trimmed.contains("://") ? trimmed : "http://" + trimmed
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased() else {
            throw invalid("it is not a URL")
        }
        let kind: Kind
        switch scheme {
        case "http": kind = .http
        case "https": kind = .https
        case "socks5", "socks5h": kind = .socks
        default:
            throw invalid("Courier does not speak to '\(scheme)' proxies (http, https, socks5 and socks5h are supported)")
        }
        var host = components.host ?? ""
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { throw invalid("it has no host") }
        let port = components.port ?? (kind == .https ? Self.defaultTLSPort : Self.defaultPort)
        guard (1...65535).contains(port) else { throw invalid("the port \(port) is not between 1 and 65535") }
        guard components.path.isEmpty || components.path == "/", components.query == nil, components.fragment == nil else {
            throw invalid("a proxy URL has no path, query or fragment")
        }
        // Foundation decodes the user and password as UTF-8, and gives nil for bytes that are not
        // (`caf%E9`, Latin-1): the credential was then sent without its password, or not at all,
        // with nothing said.
        if components.percentEncodedUser != nil && components.user == nil
            || components.percentEncodedPassword != nil && components.password == nil
        {
            throw invalid("its user name or password is not UTF-8 once percent-decoded")
        }
        if kind == .socks, components.user != nil || components.password != nil,
            let why = SOCKS5StateMachine.refusal(username: components.user ?? "", password: components.password)
        {
            throw invalid(why)
        }
        self.init(
            kind: kind, host: host, port: port, username: components.user, password: components.password,
            resolvesHostNamesLocally: scheme == "socks5")
    }

    /// Whether this is a SOCKS5 proxy (else an HTTP proxy).
    public var isSOCKS: Bool { self.kind == .socks }

    /// Whether the connection to the proxy is TLS (an `https://` proxy).
    public var usesTLS: Bool { self.kind == .https }

    /// The proxy as a URL, the password replaced by `***`: `http://ann:***@proxy:3128`,
    /// `socks5h://127.0.0.1:1080`, `socks5://127.0.0.1:1080` (names resolved locally).
    public var description: String {
        var text = self.scheme + "://"
        if let username = self.username {
            text += username + (self.password == nil ? "" : ":***") + "@"
        }
        return text + self.authority
    }

    /// The proxy URL's scheme: `http`, `https`, `socks5` (names resolved locally) or `socks5h`.
    public var scheme: String {
        switch self.kind {
        case .http: "http"
        case .https: "https"
        case .socks: self.resolvesTargetLocally ? "socks5" : "socks5h"
        }
    }

    /// Whether the tunnel's target name is looked up here and sent as an address: a SOCKS5 proxy
    /// that ``resolvesHostNamesLocally``.
    var resolvesTargetLocally: Bool { self.kind == .socks && self.resolvesHostNamesLocally }

    /// `host:port`, an IPv6 host in brackets: what messages name the proxy by.
    var authority: String { Self.authority(host: self.host, port: self.port) }

    /// The proxy's host as the connection to it names it: the lookup (the system's resolver,
    /// ``SessionConfiguration/hostAddresses``, a ``HostNameResolver``) is asked for this name. A
    /// Unicode host name has its labels in their ASCII (IDNA) form, lower-cased (`bücher.example`
    /// is `xn--bcher-kva.example`), as a request's host has (`URL.requestHost`); an ASCII host or
    /// an IP address is as it is. The Unicode name went to `getaddrinfo` as UTF-8, which DNS
    /// does not resolve, and to a resolver or the table in a form no request's host has.
    var connectionHost: String {
        if self.host.utf8.allSatisfy({ $0 < 0x80 }) { return self.host }
        return Punycode.asciiHost(self.host) ?? self.host
    }

    /// "HTTP proxy 127.0.0.1:3128", "HTTPS proxy proxy.example:443" or "SOCKS5 proxy
    /// 127.0.0.1:1080", for messages.
    var displayName: String {
        switch self.kind {
        case .http: "HTTP proxy " + self.authority
        case .https: "HTTPS proxy " + self.authority
        case .socks: "SOCKS5 proxy " + self.authority
        }
    }

    /// The user name and password as one credential, when the proxy has a user name (an absent
    /// password is empty).
    var credential: HTTPCredential? {
        self.username.map { HTTPCredential(user: $0, password: self.password ?? "") }
    }

    /// The `Proxy-Authorization` value Courier sends a forwarding proxy for its credentials
    /// (`Basic`, RFC 7617, UTF-8), or nil without a user name.
    public var basicAuthorization: String? {
        guard let username = self.username else { return nil }
        return "Basic " + Data("\(username):\(self.password ?? "")".utf8).base64EncodedString()
    }

    /// `host:port`, an IPv6 host in brackets.
    static func authority(host: String, port: Int) -> String {
        host.contains(":") && !host.hasPrefix("[") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

}
