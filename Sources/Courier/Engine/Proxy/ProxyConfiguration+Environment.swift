import Foundation

extension ProxyConfiguration {
    /// The proxy settings in `environment`, read as curl reads them.
    ///
    /// - `http` URLs: `http_proxy`, else `all_proxy`, else `ALL_PROXY`. Only the lowercase
    ///   `http_proxy` is read, never `HTTP_PROXY`: a CGI program finds a request's `Proxy:` header
    ///   in `HTTP_PROXY` ("httpoxy"), so curl ignores it, and so does Courier.
    /// - `https` URLs: `https_proxy`, else `HTTPS_PROXY`, else `all_proxy`, else `ALL_PROXY`.
    /// - Hosts reached directly: `no_proxy`, else `NO_PROXY` (see ``BypassList``). An entry that
    ///   cannot be read (a path, a port that is no number) matches nothing and the others stand,
    ///   as with curl and Go: a process's environment is not the caller's to correct. (A list
    ///   given to ``BypassList/init(_:)`` is refused instead.)
    ///
    /// A variable set to the empty string counts as unset. Values are proxy URLs as
    /// ``NIOEngine/Proxy/init(url:)`` reads them (`http://`, `socks5://`, `socks5h://`,
    /// `user:password@`, no scheme meaning `http://`, port 1080 by default). Nothing else is
    /// consulted: no system settings, no proxy auto-configuration, and no implicit bypass for
    /// `localhost` (list it in `no_proxy`, as with curl).
    ///
    /// - Parameter environment: The variables; the process's environment by default.
    /// - Returns: The configuration; ``isEmpty`` when no variable names a proxy.
    /// - Throws: ``CourierError/Code/invalidProxyConfiguration`` naming the proxy variable whose
    ///   value cannot be used (a variable that a higher-priority one shadows is not read).
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) throws(CourierError) -> ProxyConfiguration {
        func proxy(_ names: [String]) throws(CourierError) -> NIOEngine.Proxy? {
            guard let (name, value) = Self.firstSet(names, in: environment) else { return nil }
            do {
                return try NIOEngine.Proxy(url: value)
            } catch {
                throw CourierError(.invalidProxyConfiguration, "\(name): \(error.message)")
            }
        }
        let http = try proxy(Self.httpVariables)
        let https = try proxy(Self.httpsVariables)
        var bypass = BypassList.none
        if let (_, value) = Self.firstSet(Self.bypassVariables, in: environment) {
            bypass = BypassList(readingWhatCanBeRead: value)
        }
        return ProxyConfiguration(http: http, https: https, bypass: bypass)
    }

    /// The variables read for `http` URLs, in order.
    static let httpVariables = ["http_proxy", "all_proxy", "ALL_PROXY"]
    /// The variables read for `https` URLs, in order.
    static let httpsVariables = ["https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"]
    /// The variables read for the bypass list, in order.
    static let bypassVariables = ["no_proxy", "NO_PROXY"]

    /// The first of `names` set to a non-empty value, with its value.
    static func firstSet(_ names: [String], in environment: [String: String]) -> (String, String)? {
        for name in names {
            if let value = environment[name], !value.trimmingCharacters(in: .whitespaces).isEmpty {
                return (name, value)
            }
        }
        return nil
    }
}
