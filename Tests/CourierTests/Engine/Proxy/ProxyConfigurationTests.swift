@testable import Courier
import Foundation
import NIOHTTP1
import Testing

/// Proxy URLs, the environment as curl reads it, `no_proxy` matching and the route per URL: pure
/// logic, no I/O.
@Suite("Proxy configuration")
struct ProxyConfigurationTests {
    typealias Proxy = SessionConfiguration.Proxy

    // MARK: Proxy URLs

    @Test(arguments: [
        ("http://proxy.example.com:3128", Proxy.http(host: "proxy.example.com", port: 3128)),
        ("HTTP://proxy.example.com:3128/", Proxy.http(host: "proxy.example.com", port: 3128)),
        ("proxy.example.com:8080", Proxy.http(host: "proxy.example.com", port: 8080)),
        ("proxy.example.com", Proxy.http(host: "proxy.example.com", port: 1080)),
        ("http://[::1]:3128", Proxy.http(host: "::1", port: 3128)),
        ("http://ann:s%3Acret@10.0.0.1:3128", Proxy.http(host: "10.0.0.1", port: 3128, username: "ann", password: "s:cret")),
        ("http://us%40er@proxy:1", Proxy.http(host: "proxy", port: 1, username: "us@er")),
        ("socks5://127.0.0.1:1080", Proxy.socks(host: "127.0.0.1", port: 1080, resolvesHostNamesLocally: true)),
        ("socks5h://socks.example.com", Proxy.socks(host: "socks.example.com", port: 1080)),
        ("  socks5h://socks:9050  ", Proxy.socks(host: "socks", port: 9050)),
        ("socks5h://ann:s%3Acret@socks:1080", Proxy.socks(host: "socks", port: 1080, username: "ann", password: "s:cret")),
        ("SOCKS5://us%40er@10.0.0.1", Proxy.socks(host: "10.0.0.1", port: 1080, username: "us@er", resolvesHostNamesLocally: true)),
        ("https://proxy.example.com:8443", Proxy.https(host: "proxy.example.com", port: 8443)),
        ("HTTPS://ann:s%3Acret@proxy.example.com/", Proxy.https(host: "proxy.example.com", port: 443, username: "ann", password: "s:cret")),
    ])
    func proxyURLsParse(_ text: String, _ expected: Proxy) throws {
        #expect(try Proxy(url: text) == expected)
    }

    @Test(arguments: [
        ("", "empty"),
        ("ftp://proxy:3128", "'ftp' proxies (http, https, socks5 and socks5h are supported)"),
        ("socks4://proxy:1080", "'socks4' proxies"),
        ("socks4a://proxy:1080", "'socks4a' proxies"),
        ("socks5://:pass@proxy:1080", "a user name of 1 to 255 bytes"),
        ("socks5h://\(String(repeating: "u", count: 256)):pass@proxy", "a user name of 1 to 255 bytes"),
        ("socks5h://ann:\(String(repeating: "p", count: 256))@proxy", "a password of at most 255"),
        ("http://:3128", "no host"),
        ("http://proxy:0", "port 0"),
        ("http://proxy:70000", "port 70000"),
        ("http://proxy:3128/path", "no path"),
        ("http://proxy:3128/?q=1", "no path, query"),
        ("http://pro xy:3128", "not a URL"),
        // Credentials that are not UTF-8 once decoded: Foundation gives no password (or user),
        // and the proxy got `ann:` (or no credential) with nothing said.
        ("http://ann:caf%E9@proxy:3128", "not UTF-8 once percent-decoded"),
        ("http://%E9ric:secret@proxy:3128", "not UTF-8 once percent-decoded"),
        ("socks5h://ann:caf%E9@proxy", "not UTF-8 once percent-decoded"),
    ])
    func malformedProxyURLsAreTypedErrors(_ text: String, _ reason: String) {
        #expect {
            try Proxy(url: text)
        } throws: { error in
            guard let error = error as? CourierError else { return false }
            return error.code == .invalidProxyConfiguration && error.message.contains(reason)
        }
    }

    @Test func messagesNeverShowThePassword() {
        #expect(Proxy.http(host: "p", port: 1, username: "ann", password: "secret").description == "http://ann:***@p:1")
        #expect(Proxy.socks(host: "::1", port: 1080).description == "socks5h://[::1]:1080")
        #expect(URLText.redacted("http://ann:secret@p:1") == "http://ann:***@p:1")
        #expect(URLText.redacted("ann:secret@p:1") == "ann:***@p:1")
        #expect(Proxy.socks(host: "p", port: 1, username: "ann", password: "secret").description == "socks5h://ann:***@p:1")
        #expect(Proxy.https(host: "p", port: 443, username: "ann", password: "secret").description == "https://ann:***@p:443")
        #expect(Proxy.https(host: "p", port: 443).displayName == "HTTPS proxy p:443")
        #expect(Proxy.https(host: "p", port: 443).usesTLS && !Proxy.http(host: "p", port: 1).usesTLS)
        let error = #expect(throws: CourierError.self) { try Proxy(url: "socks5://:secret@p:1") }
        #expect(error?.message.contains("secret") == false)
    }

    @Test func basicCredentials() {
        #expect(Proxy.http(host: "p", port: 1, username: "Aladdin", password: "open sesame").basicAuthorization
            == "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==")
        #expect(Proxy.http(host: "p", port: 1, username: "ann").basicAuthorization == "Basic " + Data("ann:".utf8).base64EncodedString())
        #expect(Proxy.http(host: "p", port: 1).basicAuthorization == nil)
    }

    // MARK: The environment

    @Test func httpProxyIsReadInLowercaseOnly() throws {
        let upper = try ProxyConfiguration.fromEnvironment(["HTTP_PROXY": "http://evil:1"])
        #expect(upper.http == nil)
        #expect(upper.isEmpty)
        let lower = try ProxyConfiguration.fromEnvironment(["http_proxy": "http://good:1", "HTTP_PROXY": "http://evil:1"])
        #expect(lower.http == .http(host: "good", port: 1))
        #expect(lower.https == nil)
    }

    @Test func httpsProxyLowercaseFirstThenUppercase() throws {
        #expect(try ProxyConfiguration.fromEnvironment(["HTTPS_PROXY": "http://upper:1"]).https == .http(host: "upper", port: 1))
        #expect(try ProxyConfiguration.fromEnvironment(["https_proxy": "http://lower:1", "HTTPS_PROXY": "http://upper:1"]).https
            == .http(host: "lower", port: 1))
    }

    @Test func allProxyIsTheFallbackForBothSchemes() throws {
        let all = try ProxyConfiguration.fromEnvironment(["ALL_PROXY": "socks5h://socks:1080"])
        #expect(all.http == .socks(host: "socks", port: 1080))
        #expect(all.https == .socks(host: "socks", port: 1080))
        let mixed = try ProxyConfiguration.fromEnvironment(["all_proxy": "http://lower:1", "ALL_PROXY": "http://upper:1", "https_proxy": "http://tls:2"])
        #expect(mixed.http == .http(host: "lower", port: 1))
        #expect(mixed.https == .http(host: "tls", port: 2))
    }

    @Test func emptyVariablesCountAsUnset() throws {
        let configuration = try ProxyConfiguration.fromEnvironment(["http_proxy": "", "https_proxy": " ", "all_proxy": "http://all:1", "no_proxy": ""])
        #expect(configuration.http == .http(host: "all", port: 1))
        #expect(configuration.https == .http(host: "all", port: 1))
        #expect(configuration.bypass.isEmpty)
    }

    @Test func noProxyLowercaseFirst() throws {
        let configuration = try ProxyConfiguration.fromEnvironment(["http_proxy": "p:1", "no_proxy": "a.example", "NO_PROXY": "b.example"])
        #expect(configuration.proxy(for: URL(string: "http://a.example/")!) == nil)
        #expect(configuration.proxy(for: URL(string: "http://b.example/")!) != nil)
        let upper = try ProxyConfiguration.fromEnvironment(["http_proxy": "p:1", "NO_PROXY": "b.example"])
        #expect(upper.proxy(for: URL(string: "http://b.example/")!) == nil)
    }

    @Test func aMalformedVariableIsATypedErrorNamingIt() {
        let error = #expect(throws: CourierError.self) {
            try ProxyConfiguration.fromEnvironment(["https_proxy": "socks4://p:1"])
        }
        #expect(error?.code == .invalidProxyConfiguration)
        #expect(error?.message.hasPrefix("https_proxy: ") == true)
    }

    /// An environment's `no_proxy` entry that cannot be read matches nothing, and the others
    /// stand, as with curl and Go (AWS documents a path in ECS's `NO_PROXY`). Before, one such
    /// entry failed the whole configuration, even with no proxy set: every `courier` command
    /// stopped with a usage error.
    @Test func anUnreadableBypassEntryInTheEnvironmentMatchesNothing() throws {
        let aws = try ProxyConfiguration.fromEnvironment(
            ["https_proxy": "p:1", "NO_PROXY": "169.254.169.254,169.254.170.2,/var/run/docker.sock"])
        #expect(aws.proxy(for: URL(string: "http://169.254.169.254/latest")!) == nil)
        #expect(aws.proxy(for: URL(string: "https://example.com/")!) == .http(host: "p", port: 1))
        let alone = try ProxyConfiguration.fromEnvironment(["NO_PROXY": "/x,example.com:http,[nope"])
        #expect(alone.isEmpty)
        // A list given by hand is still refused.
        let bypass = #expect(throws: CourierError.self) { try ProxyConfiguration.BypassList("example.com:http") }
        #expect(bypass?.code == .invalidProxyConfiguration)
    }

    @Test func aShadowedVariableIsNotRead() throws {
        // curl never looks at ALL_PROXY when both scheme variables are set.
        let configuration = try ProxyConfiguration.fromEnvironment(["http_proxy": "h:1", "https_proxy": "s:2", "ALL_PROXY": "socks4://broken"])
        #expect(configuration.http == .http(host: "h", port: 1))
        #expect(configuration.https == .http(host: "s", port: 2))
    }

    @Test func nothingSetMeansNoProxy() throws {
        let configuration = try ProxyConfiguration.fromEnvironment(["PATH": "/usr/bin"])
        #expect(configuration == .direct)
        #expect(configuration.proxy(for: URL(string: "https://example.com/")!) == nil)
    }

    // MARK: no_proxy

    static let bypass = try! ProxyConfiguration.BypassList(
        " example.com, .internal.test ,*.wild.test,10.0.0.0/8 192.168.1.7, ::1, [fd00::]:8443, fe80::/10,api.test:8080,127.0.0.1:9000,localhost")

    @Test(arguments: [
        ("example.com", 80, true),
        ("EXAMPLE.com.", 80, true),
        ("www.example.com", 443, true),
        ("myexample.com", 80, false),
        ("example.com.evil.test", 80, false),
        ("internal.test", 80, true),
        ("a.b.internal.test", 80, true),
        ("wild.test", 80, true),
        ("x.wild.test", 80, true),
        ("10.1.2.3", 80, true),
        ("11.1.2.3", 80, false),
        ("192.168.1.7", 80, true),
        ("192.168.1.8", 80, false),
        ("::1", 80, true),
        ("[::1]", 80, true),
        ("fd00::", 8443, true),
        ("fd00::", 443, false),
        ("fe80::1234", 80, true),
        ("fec0::1", 80, false),
        ("api.test", 8080, true),
        ("api.test", 80, false),
        ("v1.api.test", 8080, true),
        ("127.0.0.1", 9000, true),
        ("127.0.0.1", 80, false),
        ("localhost", 80, true),
        // Names never match address entries, nor addresses name entries (curl's rule).
        ("127.0.0.2", 80, false),
        ("10.example.com", 80, true),
    ])
    func bypassMatching(_ host: String, _ port: Int, _ bypassed: Bool) {
        #expect(Self.bypass.contains(host: host, port: port) == bypassed)
    }

    @Test func anAsteriskBypassesEverything() throws {
        let all = try ProxyConfiguration.BypassList("*")
        #expect(all.contains(host: "anything.example", port: 1))
        #expect(all.contains(host: "10.0.0.1", port: 80))
        let inList = try ProxyConfiguration.BypassList("a.test, *")
        #expect(inList.contains(host: "b.test", port: 80))
    }

    @Test func prefixLengthZeroCoversAFamily() throws {
        let v4 = try ProxyConfiguration.BypassList("0.0.0.0/0")
        #expect(v4.contains(host: "203.0.113.9", port: 80))
        #expect(!v4.contains(host: "2001:db8::1", port: 80))
    }

    /// Names compare in their ASCII (IDNA) form, whichever form the list or the URL uses, as Go's
    /// and curl's lists do. Before, the URL's Unicode host was compared, and an entry in the form
    /// DNS and `Host` use never matched it.
    @Test func anInternationalNameMatchesInEitherForm() throws {
        let proxy = NIOEngine.Proxy.http(host: "p", port: 1)
        for entry in ["xn--bcher-kva.example", "bücher.example", ".BÜCHER.example"] {
            let configuration = ProxyConfiguration(proxy: proxy).with(bypass: entry)
            #expect(configuration.proxy(for: URL(string: "http://bücher.example/")!) == nil, "\(entry)")
            #expect(configuration.proxy(for: URL(string: "http://www.xn--bcher-kva.example/")!) == nil, "\(entry)")
            #expect(configuration.proxy(for: URL(string: "http://other.example/")!) != nil, "\(entry)")
        }
    }

    /// A proxy's Unicode host is connected to, hence looked up, in its IDNA form, as a request's
    /// host is; an ASCII name or an address as it is. It went to the lookup as written. The
    /// environment's proxy and bypass list, in either form, agree with the URL's host in the other.
    @Test func aProxyNamedInUnicodeIsReachedByItsIDNAName() throws {
        let parsed = try Proxy(url: "http://pr%C3%B8xy.example:3128")
        let proxies = [Proxy.http(host: "Prøxy.example", port: 3128), .https(host: "prøxy.example", port: 3128), .socks(host: "prøxy.example", port: 3128), parsed]
        for proxy in proxies {
            let address = ProxyRoute.forward(proxy).connectionAddress(host: "xn--bcher-kva.example", port: 80)
            #expect(address.host == "xn--prxy-hra.example", "\(proxy)")
            #expect(address.port == 3128)
        }
        #expect(Proxy.http(host: "Proxy.example", port: 1).connectionHost == "Proxy.example")
        #expect(Proxy.http(host: "::1", port: 1).connectionHost == "::1")
        #expect(ProxyRoute.direct.connectionAddress(host: "xn--bcher-kva.example", port: 443).host == "xn--bcher-kva.example")

        let environment = ["https_proxy": "http://pr%C3%B8xy.example:3128", "no_proxy": "xn--bcher-kva.example"]
        let configuration = try ProxyConfiguration.fromEnvironment(environment)
        #expect(configuration.route(for: URL(string: "https://b%C3%BCcher.example/")!) == .direct)
        #expect(configuration.route(for: URL(string: "https://www.bücher.example/")!) == .direct)
        let route = configuration.route(for: URL(string: "https://other.example/")!)
        #expect(route.connectionAddress(host: "other.example", port: 443).host == "xn--prxy-hra.example")
    }

    @Test func loneDotsAndEmptyEntriesNameNothing() throws {
        let list = try ProxyConfiguration.BypassList(" , . ,, ")
        #expect(list.isEmpty)
        #expect(!list.contains(host: "example.com", port: 80))
    }

    @Test(arguments: ["example.com:0", "example.com:99999", "example.com:http", "10.0.0.0/33", "fd00::/129", "10.0.0.0/x",
                      "nothost/8", "[::1", "[::1]x", "[example.com]", "fe80::zz"])
    func malformedBypassEntriesAreTypedErrors(_ entry: String) {
        let error = #expect(throws: CourierError.self) { try ProxyConfiguration.BypassList("ok.test, \(entry)") }
        #expect(error?.code == .invalidProxyConfiguration)
        #expect(error?.message.contains("'\(entry)'") == true)
    }

    // MARK: Which proxy for which URL

    @Test func theSchemeChoosesTheProxy() throws {
        let configuration = ProxyConfiguration(
            http: .http(host: "plain", port: 1), https: .socks(host: "tunnel", port: 2),
            bypass: try .init("direct.test"))
        #expect(configuration.proxy(for: URL(string: "http://a.test/x")!) == .http(host: "plain", port: 1))
        #expect(configuration.proxy(for: URL(string: "HTTPS://a.test/x")!) == .socks(host: "tunnel", port: 2))
        #expect(configuration.proxy(for: URL(string: "ftp://a.test/x")!) == nil)
        #expect(configuration.proxy(for: URL(string: "http://direct.test/")!) == nil)
        #expect(configuration.proxy(for: URL(string: "https://www.direct.test:8443/")!) == nil)
        #expect(configuration.proxy(for: URL(string: "file:///etc/hosts")!) == nil)
    }

    @Test func theDefaultPortIsTheSchemes() throws {
        let configuration = ProxyConfiguration(proxy: .http(host: "p", port: 1)).with(bypass: "a.test:443, b.test:80")
        #expect(configuration.proxy(for: URL(string: "https://a.test/")!) == nil)
        #expect(configuration.proxy(for: URL(string: "http://a.test/")!) != nil)
        #expect(configuration.proxy(for: URL(string: "http://b.test/")!) == nil)
        #expect(configuration.proxy(for: URL(string: "http://b.test:8080/")!) != nil)
    }

    @Test func oneProxyForEverything() {
        let proxy = Proxy.http(host: "p", port: 3128)
        let configuration = ProxyConfiguration(proxy: proxy)
        #expect(configuration.http == proxy && configuration.https == proxy && configuration.bypass.isEmpty)
        #expect(ProxyConfiguration(proxy: nil) == .direct)
    }

    @Test func oneProxyShorthands() throws {
        let http = Proxy.http(host: "p", port: 3128, username: "ann", password: "pw")
        #expect(ProxyConfiguration.http(host: "p", port: 3128, username: "ann", password: "pw") == ProxyConfiguration(http: http, https: http))
        let socks = Proxy.socks(host: "s", port: 1080)
        #expect(ProxyConfiguration.socks(host: "s", port: 1080) == ProxyConfiguration(http: socks, https: socks))
        #expect(try ProxyConfiguration(url: "socks5h://s") == ProxyConfiguration(proxy: socks))
        #expect(throws: CourierError.self) { try ProxyConfiguration(url: "socks4://s") }
    }

    @Test func theSessionsSettingReachesTheEngineAndAnEmptyOneIsNone() throws {
        // The Proxies article's lines (Courier.docc/Proxies.md).
        var configuration = SessionConfiguration.default
        #expect(configuration.proxy == nil)
        configuration.proxy = .http(host: "proxy.example.com", port: 3128, username: "ann", password: "secret")
        #expect(NIOEngine.Configuration(configuration).proxy?.https == .http(host: "proxy.example.com", port: 3128, username: "ann", password: "secret"))
        configuration.proxy = .socks(host: "127.0.0.1", port: 1080)
        #expect(NIOEngine.Configuration(configuration).proxy?.http == .socks(host: "127.0.0.1", port: 1080))
        configuration.proxy = .socks(host: "socks.example.com", port: 1080, username: "ann", password: "secret")
        #expect(NIOEngine.Configuration(configuration).proxy?.https?.username == "ann")
        configuration.proxy = try ProxyConfiguration(url: "socks5h://127.0.0.1:1080")
        #expect(NIOEngine.Configuration(configuration).proxy == .socks(host: "127.0.0.1", port: 1080))
        configuration.proxy = try ProxyConfiguration(url: "socks5h://ann:secret@socks.example.com:1080")
        #expect(configuration.proxy == .socks(host: "socks.example.com", port: 1080, username: "ann", password: "secret"))
        configuration.proxy = try ProxyConfiguration.fromEnvironment(["PATH": "/bin"])
        #expect(configuration.proxy == .direct)
        #expect(NIOEngine.Configuration(configuration).proxy == nil)
        configuration.proxy = ProxyConfiguration(http: nil, https: nil, bypass: try .init("*"))
        #expect(NIOEngine.Configuration(configuration).proxy == nil)
    }

    @Test func descriptionsNeverShowThePassword() throws {
        let configuration = ProxyConfiguration(
            http: .http(host: "p", port: 3128, username: "ann", password: "secret"), https: .socks(host: "127.0.0.1", port: 1080),
            bypass: try .init("localhost,.internal"))
        #expect(configuration.description == "http: http://ann:***@p:3128, https: socks5h://127.0.0.1:1080, no_proxy: localhost,.internal")
        #expect(ProxyConfiguration.direct.description == "direct")
        #expect(ProxyConfiguration(http: nil, https: .http(host: "p", port: 1)).description == "http: direct, https: http://p:1")
        #expect(configuration.route(for: URL(string: "http://a.test/")!).description == "forwarded by http://ann:***@p:3128")
        #expect(configuration.route(for: URL(string: "https://a.test/")!).description == "SOCKS5 through socks5h://127.0.0.1:1080")
        #expect(ProxyRoute.connectTunnel(.http(host: "p", port: 1)).description == "CONNECT through http://p:1")
        #expect(configuration.route(for: URL(string: "http://x.internal/")!).description == "direct")
    }

    @Test func routes() {
        let http = Proxy.http(host: "p", port: 3128)
        let socks = Proxy.socks(host: "s", port: 1080)
        #expect(ProxyConfiguration(proxy: http).route(for: URL(string: "http://a.test/")!) == .forward(http))
        #expect(ProxyConfiguration(proxy: http).route(for: URL(string: "https://a.test/")!) == .connectTunnel(http))
        let overTLS = Proxy.https(host: "p", port: 443)
        #expect(ProxyConfiguration(proxy: overTLS).route(for: URL(string: "https://a.test/")!) == .connectTunnel(overTLS))
        #expect(ProxyConfiguration(proxy: overTLS).route(for: URL(string: "http://a.test/")!) == .forward(overTLS))
        #expect(ProxyConfiguration(proxy: socks).route(for: URL(string: "http://a.test/")!) == .socksTunnel(socks))
        #expect(ProxyConfiguration(proxy: socks).route(for: URL(string: "https://a.test/")!) == .socksTunnel(socks))
        #expect(ProxyConfiguration.direct.route(for: URL(string: "https://a.test/")!) == .direct)
        let viaProxy = ProxyRoute.connectTunnel(http).connectionAddress(host: "a.test", port: 443)
        #expect(viaProxy.host == "p" && viaProxy.port == 3128)
        let direct = ProxyRoute.direct.connectionAddress(host: "a.test", port: 443)
        #expect(direct.host == "a.test" && direct.port == 443)
        #expect(!ProxyRoute.direct.tunnels && !ProxyRoute.direct.usesAbsoluteForm)
        #expect(!ProxyRoute.forward(http).tunnels && ProxyRoute.forward(http).usesAbsoluteForm)
        #expect(ProxyRoute.connectTunnel(http).tunnels && !ProxyRoute.connectTunnel(http).usesAbsoluteForm)
        #expect(ProxyRoute.socksTunnel(socks).tunnels && !ProxyRoute.socksTunnel(socks).usesAbsoluteForm)
    }

    // MARK: Absolute form

    @Test(arguments: [
        ("http://Example.COM/a/b?q=1&r=%20", "http://example.com/a/b?q=1&r=%20"),
        ("http://example.com", "http://example.com/"),
        ("http://example.com:80/x", "http://example.com/x"),
        ("http://example.com:8080/x", "http://example.com:8080/x"),
        ("http://user:pw@example.com/x#fragment", "http://example.com/x"),
        ("http://[::1]:8080/x", "http://[::1]:8080/x"),
        ("http://127.0.0.1:9/%E2%82%AC", "http://127.0.0.1:9/%E2%82%AC"),
        // A Unicode host goes as IDNA, as `Host` and DNS name it (tinyproxy could not resolve
        // `b%c3%bccher.example`), also when the URL percent-encoded it.
        ("http://bücher.example/echo", "http://xn--bcher-kva.example/echo"),
        ("http://b%C3%BCcher.example/", "http://xn--bcher-kva.example/"),
    ])
    func absoluteForm(_ url: String, _ expected: String) {
        #expect(ProxyRoute.absoluteForm(of: URL(string: url)!) == expected)
    }

    /// The pool's key, hence `Host`, DNS, SNI and the proxy's `CONNECT`, names a Unicode host in
    /// IDNA whichever way the URL wrote it (a percent-encoded host gave raw UTF-8 in `Host`, which
    /// Go's server refused with 400).
    @Test func aUnicodeHostIsKeyedInIDNA() {
        for url in ["http://bücher.example/", "http://b%C3%BCcher.example/", "https://BÜCHER.example/"] {
            #expect(ConnectionPool.key(for: URL(string: url)!)?.host.lowercased() == "xn--bcher-kva.example", "\(url)")
        }
        #expect(ConnectionPool.key(for: URL(string: "http://[::1]:8080/")!)?.host == "::1")
    }

    @Test func forwardingAddsProxyAuthorizationUnlessTheRequestHasIt() {
        let url = URL(string: "http://a.test/x?y=1")!
        let proxy = Proxy.http(host: "p", port: 1, username: "ann", password: "pw")
        var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/x?y=1", headers: ["Host": "a.test"])
        ProxyRoute.forward(proxy).adjust(&head, for: url)
        #expect(head.uri == "http://a.test/x?y=1")
        #expect(head.headers["Proxy-Authorization"] == [proxy.basicAuthorization!])
        #expect(head.headers["Host"] == ["a.test"])

        var own = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/x", headers: ["Proxy-Authorization": "Bearer t"])
        ProxyRoute.forward(proxy).adjust(&own, for: url)
        #expect(own.headers["Proxy-Authorization"] == ["Bearer t"])

        for route in [ProxyRoute.direct, .connectTunnel(proxy), .socksTunnel(.socks(host: "s", port: 1))] {
            var tunnelled = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/x?y=1")
            route.adjust(&tunnelled, for: url)
            #expect(tunnelled.uri == "/x?y=1")
            #expect(!tunnelled.headers.contains(name: "Proxy-Authorization"))
        }
    }
}

extension ProxyConfiguration {
    fileprivate func with(bypass list: String) -> ProxyConfiguration {
        var copy = self
        copy.bypass = try! BypassList(list)
        return copy
    }
}
