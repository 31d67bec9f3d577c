import ArgumentParser
import Courier
import Foundation

/// `--proxy PROTOCOL:URL` (HTTPie's flag, repeatable) over the proxy environment variables: the
/// request command's and `courier ws`'s.
enum ProxyFlags {
    /// The `--proxy` option's help; `schemes` names the per-protocol forms for the command.
    static func help(schemes: String) -> ArgumentHelp {
        ArgumentHelp(
            "A proxy for one protocol: \(schemes) or all:URL (URL: http://[user:password@]host:port, socks5://[user:password@]host:port, socks5h://[user:password@]host:port); repeatable. http_proxy, https_proxy, all_proxy and no_proxy are read as curl reads them.",
            valueName: "protocol:url")
    }

    /// The proxies the command uses: `http_proxy`, `https_proxy`, `all_proxy` and `no_proxy` (and
    /// their upper-case forms) read as curl reads them, then each `--proxy` in its place.
    ///
    /// A flag is `http:URL`, `https:URL` or `all:URL` (both protocols); the URL is a proxy URL as
    /// ``NIOEngine/Proxy/init(url:)`` reads it (`http://user:password@host:port`,
    /// `socks5://host:port`…). A protocol's own flag wins over `all:`, and the last flag for a
    /// protocol wins over earlier ones. A protocol given by a flag is not read from the
    /// environment; `no_proxy` applies to the flags' proxies too.
    /// - Parameters:
    ///   - flags: The `--proxy` values, in order.
    ///   - environment: The process's environment.
    /// - Returns: The configuration, or nil when nothing names a proxy.
    /// - Throws: A usage failure naming the flag or the variable that cannot be used.
    static func configuration(flags: [String], environment: [String: String]) throws(CLIFailure) -> ProxyConfiguration? {
        var own: [String: NIOEngine.Proxy] = [:]
        var all: NIOEngine.Proxy?
        for flag in flags {
            guard let colon = flag.firstIndex(of: ":") else {
                throw CLIFailure.usage("--proxy '\(flag)': expected PROTOCOL:URL, as in http:http://proxy.example.com:3128")
            }
            let scheme = flag[..<colon].lowercased()
            let proxy: NIOEngine.Proxy
            do {
                proxy = try NIOEngine.Proxy(url: String(flag[flag.index(after: colon)...]))
            } catch {
                throw CLIFailure.usage("--proxy \(scheme): \(error.message)")
            }
            switch scheme {
            case "http", "https": own[scheme] = proxy
            case "all": all = proxy
            default: throw CLIFailure.usage("--proxy '\(scheme):…': the protocol is http, https or all")
            }
        }
        let http = own["http"] ?? all
        let https = own["https"] ?? all
        var environment = environment
        if http != nil { environment["http_proxy"] = nil }
        if https != nil {
            environment["https_proxy"] = nil
            environment["HTTPS_PROXY"] = nil
        }
        if http != nil && https != nil {
            environment["all_proxy"] = nil
            environment["ALL_PROXY"] = nil
        }
        var configuration: ProxyConfiguration
        do {
            configuration = try ProxyConfiguration.fromEnvironment(environment)
        } catch {
            throw CLIFailure.usage("the environment's proxy settings: \(error.message)")
        }
        configuration.http = http ?? configuration.http
        configuration.https = https ?? configuration.https
        return configuration.isEmpty ? nil : configuration
    }

    /// The proxy as curl's `--proxy` takes it, credentials included (percent-encoded):
    /// `http://ann:secret@proxy:3128`, `socks5h://127.0.0.1:1080`, `socks5://127.0.0.1:1080`
    /// (curl reads both SOCKS5 schemes as Courier does).
    static func curlURL(_ proxy: NIOEngine.Proxy) -> String {
        var text = proxy.scheme + "://"
        if let username = proxy.username {
            let allowed = CharacterSet.urlUserAllowed.subtracting(CharacterSet(charactersIn: ":@"))
            text += username.addingPercentEncoding(withAllowedCharacters: allowed) ?? username
            if let password = proxy.password {
                text += ":" + (password.addingPercentEncoding(withAllowedCharacters: allowed) ?? password)
            }
            text += "@"
        }
        let host = proxy.host.contains(":") ? "[\(proxy.host)]" : proxy.host
        return text + "\(host):\(proxy.port)"
    }
}
