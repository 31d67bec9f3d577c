import Courier
import CourierTesting
import Foundation
import Testing

/// `--proxy PROTOCOL:URL` and the proxy environment variables. The proxies send every request to
/// the test server whatever host it names, so a made-up host that answers proves the proxy
/// carried the request.
@Suite("CLI: --proxy and the environment")
struct CLIProxyTests {
    static let target = "http://courier-target.invalid/get?via=proxy"
    /// No proxy variable from the machine running the tests.
    static let clean: [String: String?] = [
        "http_proxy": nil, "https_proxy": nil, "HTTPS_PROXY": nil, "all_proxy": nil, "ALL_PROXY": nil, "no_proxy": nil, "NO_PROXY": nil,
    ]

    /// Whether `proxy` carried one request for the made-up host (tunnelled or forwarded).
    static func carriedOne(_ proxy: TestProxy) -> Bool {
        let seen = proxy.connectTargets + proxy.forwardedTargets
        return seen.count == 1 && seen[0].contains("courier-target.invalid")
    }

    @Test func anHTTPProxyWithCredentialsFromTheFlag() async throws {
        try await TestServer.withServer { server in
            let proxy = try await TestProxy.start(upstreamPort: server.port, credentials: ("ann", "s3cret"))
            let result = try await CLIRunner.run(
                ["--proxy", "http:http://ann:s3cret@127.0.0.1:\(proxy.port)", Self.target], environment: Self.clean)
            try await proxy.shutdown()
            #expect(result.status == 0, "\(result.standardError)")
            #expect(try jsonObject(result)["args"] as? [String: String] == ["via": "proxy"])
            #expect(Self.carriedOne(proxy))
            #expect(proxy.proxyAuthorizations == ["Basic " + Data("ann:s3cret".utf8).base64EncodedString()])
        }
    }

    /// An `https://` proxy, as curl takes one: TLS to the proxy, trusted through `--cacert`, the
    /// request forwarded inside it; without the root, a TLS error that names the proxy.
    @Test func anHTTPSProxyFromTheFlag() async throws {
        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let root = try writeTestRoot(in: folder)
        try await TestServer.withServer { server in
            let proxy = try await TestProxy.start(upstreamPort: server.port, credentials: ("ann", "s3cret"), tls: .localhost)
            let flag = ["--proxy", "http:https://ann:s3cret@localhost:\(proxy.port)", Self.target]
            let trusted = try await CLIRunner.run(["--cacert", root.path] + flag, environment: Self.clean)
            let untrusted = try await CLIRunner.run(flag, environment: Self.clean)
            try await proxy.shutdown()
            #expect(trusted.status == 0, "\(trusted.standardError)")
            #expect(try jsonObject(trusted)["args"] as? [String: String] == ["via": "proxy"])
            #expect(Self.carriedOne(proxy))
            #expect(untrusted.status != 0)
            #expect(untrusted.standardError.contains("HTTPS proxy localhost:\(proxy.port)"), "\(untrusted.standardError)")
        }
    }

    /// `--verbose` shows a forwarded request as the proxy reads it, as curl does: its target in
    /// absolute form, with the proxy's `Proxy-Authorization`; through a SOCKS tunnel, as it was.
    @Test func verboseShowsAForwardedRequestAsTheProxyReadsIt() async throws {
        try await TestServer.withServer { server in
            let proxy = try await TestProxy.start(upstreamPort: server.port, credentials: ("ann", "s3cret"))
            let forwarded = try await CLIRunner.run(
                ["--verbose", "--proxy", "http:http://ann:s3cret@127.0.0.1:\(proxy.port)", Self.target], environment: Self.clean)
            try await proxy.shutdown()
            let socks = try await TestSOCKSServer.start(upstreamPort: server.port)
            let tunnelled = try await CLIRunner.run(
                ["--verbose", "--proxy", "all:socks5h://127.0.0.1:\(socks.port)", Self.target], environment: Self.clean)
            try await socks.shutdown()
            let offline = try await CLIRunner.run(
                ["--offline", "--proxy", "http:http://127.0.0.1:9", Self.target], environment: Self.clean)
            #expect(forwarded.status == 0, "\(forwarded.standardError)")
            #expect(forwarded.output.contains("GET http://courier-target.invalid/get?via=proxy HTTP/1.1\n"), "\(forwarded.output)")
            #expect(forwarded.output.contains("Proxy-Authorization: Basic " + Data("ann:s3cret".utf8).base64EncodedString() + "\n"))
            #expect(tunnelled.status == 0, "\(tunnelled.standardError)")
            #expect(tunnelled.output.contains("GET /get?via=proxy HTTP/1.1\n"), "\(tunnelled.output)")
            #expect(!tunnelled.output.contains("Proxy-Authorization"))
            #expect(offline.output.contains("GET http://courier-target.invalid/get?via=proxy HTTP/1.1\n"), "\(offline.output)")
            #expect(!offline.output.contains("Proxy-Authorization"), "a proxy without credentials")
        }
    }

    @Test func aSOCKS5ProxyForAllProtocols() async throws {
        try await TestServer.withServer { server in
            let socks = try await TestSOCKSServer.start(upstreamPort: server.port)
            let result = try await CLIRunner.run(["--proxy", "all:socks5h://127.0.0.1:\(socks.port)", Self.target], environment: Self.clean)
            try await socks.shutdown()
            #expect(result.status == 0, "\(result.standardError)")
            #expect(socks.connectTargets == ["courier-target.invalid:80"])
        }
    }

    /// As curl: a SOCKS5 proxy URL's user name and password go by RFC 1929's method when the
    /// proxy asks, from the flag or from `all_proxy`; `--curl` gives them back.
    @Test func aSOCKS5ProxyWithAUserNameAndPassword() async throws {
        try await TestServer.withServer { server in
            let socks = try await TestSOCKSServer.start(upstreamPort: server.port, behaviour: .requireCredentials(username: "ann", password: "s@cret"))
            let url = "socks5h://ann:s%40cret@127.0.0.1:\(socks.port)"
            let flag = try await CLIRunner.run(["--proxy", "all:" + url, Self.target], environment: Self.clean)
            var environment = Self.clean
            environment["all_proxy"] = url
            let variable = try await CLIRunner.run([Self.target], environment: environment)
            let wrong = try await CLIRunner.run(["--proxy", "all:socks5h://ann:guess@127.0.0.1:\(socks.port)", Self.target], environment: Self.clean)
            try await socks.shutdown()
            #expect(flag.status == 0, "\(flag.standardError)")
            #expect(variable.status == 0, "\(variable.standardError)")
            #expect(socks.connectTargets == ["courier-target.invalid:80", "courier-target.invalid:80"])
            #expect(socks.usernames == ["ann", "ann", "ann"])
            #expect(wrong.status != 0)
            #expect(wrong.standardError.contains("refused the credentials for user 'ann'"), "\(wrong.standardError)")
            #expect(!wrong.standardError.contains("guess"))
        }
        let curl = try await CLIRunner.run(["--curl", "--proxy", "all:socks5h://ann:s%40cret@p:1080", "example.com/x"], environment: Self.clean)
        #expect(curl.output.hasPrefix("curl --proxy socks5h://ann:s%40cret@p:1080 http://example.com/x "), "\(curl.output)")
    }

    /// As in curl: `socks5://` sends the proxy the address of the name, `socks5h://` the name, from
    /// the flag or from the environment.
    @Test func socks5ResolvesHereAndSocks5hAtTheProxy() async throws {
        try await TestServer.withServer { server in
            let socks = try await TestSOCKSServer.start(upstreamPort: server.port)
            let url = "http://localhost:\(server.port)/get"
            let flag = try await CLIRunner.run(["--proxy", "all:socks5://127.0.0.1:\(socks.port)", url], environment: Self.clean)
            var environment = Self.clean
            environment["all_proxy"] = "socks5://127.0.0.1:\(socks.port)"
            let variable = try await CLIRunner.run([url], environment: environment)
            let remote = try await CLIRunner.run(["--proxy", "all:socks5h://127.0.0.1:\(socks.port)", url], environment: Self.clean)
            try await socks.shutdown()
            #expect(flag.status == 0, "\(flag.standardError)")
            #expect(variable.status == 0, "\(variable.standardError)")
            #expect(remote.status == 0, "\(remote.standardError)")
            let targets = socks.connectTargets
            #expect(targets.count == 3)
            for target in targets.prefix(2) {
                #expect(target == "127.0.0.1:\(server.port)" || target == "::1:\(server.port)", "\(targets)")
            }
            #expect(targets.last == "localhost:\(server.port)")
        }
    }

    @Test func theEnvironmentAsCurlReadsIt() async throws {
        try await TestServer.withServer { server in
            let proxy = try await TestProxy.start(upstreamPort: server.port)
            var environment = Self.clean
            environment["http_proxy"] = "127.0.0.1:\(proxy.port)"
            let viaLowercase = try await CLIRunner.run([Self.target], environment: environment)
            #expect(viaLowercase.status == 0, "\(viaLowercase.standardError)")
            #expect(Self.carriedOne(proxy))
            try await proxy.shutdown()

            // HTTP_PROXY is never read (httpoxy): a request to the server itself goes directly.
            environment = Self.clean
            environment["HTTP_PROXY"] = "http://127.0.0.1:9"
            let direct = try await CLIRunner.run([server.url("/get").absoluteString], environment: environment)
            #expect(direct.status == 0, "\(direct.standardError)")
        }
    }

    @Test(arguments: [
        (["--proxy", "nocolon"], "--proxy 'nocolon': expected PROTOCOL:URL"),
        (["--proxy", "ftp:http://p:1"], "the protocol is http, https or all"),
        (["--proxy", "https:socks4://p:1"], "Courier does not speak to 'socks4' proxies"),
        (["--proxy", "http:http://ann:secret@p:0"], "proxy URL 'http://ann:***@p:0'"),
    ])
    func badFlagsAreUsageErrors(_ flags: [String], _ message: String) async throws {
        let result = try await CLIRunner.run(["--offline"] + flags + ["example.com"], environment: Self.clean)
        #expect(result.status == 64)
        #expect(result.standardOutput.isEmpty)
        #expect(result.standardError.contains(message), "\(result.standardError)")
        #expect(!result.standardError.contains("secret"))
    }

    @Test func curlGetsTheFlagsProxyForTheURLsScheme() async throws {
        let flags = ["--proxy", "http:http://ann:s%40c@proxy:3128", "--proxy", "https:socks5://[::1]:1080"]
        let plain = try await CLIRunner.run(["--curl"] + flags + ["example.com/x"], environment: Self.clean)
        #expect(plain.output.hasPrefix("curl --proxy http://ann:s%40c@proxy:3128 http://example.com/x "), "\(plain.output)")
        let tls = try await CLIRunner.run(["--curl"] + flags + ["https://example.com/x"], environment: Self.clean)
        #expect(tls.output.hasPrefix("curl --proxy 'socks5://[::1]:1080' https://example.com/x "), "\(tls.output)")
        let none = try await CLIRunner.run(["--curl", "example.com/x"], environment: ["http_proxy": "http://p:1"])
        #expect(!none.output.contains("--proxy"), "curl reads the environment itself")
    }

    @Test func aBadVariableIsAUsageErrorNamingIt() async throws {
        var environment = Self.clean
        environment["https_proxy"] = "socks4://p:1"
        let result = try await CLIRunner.run(["--offline", "https://example.com"], environment: environment)
        #expect(result.status == 64)
        #expect(result.standardError.contains("https_proxy: "), "\(result.standardError)")
        // A protocol given by a flag is not read from the environment.
        let overridden = try await CLIRunner.run(["--offline", "--proxy", "https:p:1", "https://example.com"], environment: environment)
        #expect(overridden.status == 0, "\(overridden.standardError)")
    }
}
