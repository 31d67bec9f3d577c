import Foundation
import Testing

@testable import Courier

/// Go's `proxyFromEnvTests` (go1.19, `net/http/transport_test.go`, BSD-style licence; the
/// lower-case run, `TestProxyFromEnvironmentLowerCase`), through
/// ``ProxyConfiguration/fromEnvironment(_:)`` and ``ProxyConfiguration/proxy(for:)``.
///
/// Courier reads the variables as curl does. Where Go's answer differs, the row says Courier's
/// and the comment Go's: an `http://` proxy URL without a port gets curl's 1080 (Go: 80), and
/// `.example.com` in `no_proxy` covers `example.com` itself (curl; Go only covers names under it).
@Suite("Go's proxy environment tests")
struct GoProxyEnvironmentTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var environment: [String: String]
        var request = "http://example.com/"
        var want: String?
        var testDescription: String { "\(self.environment.sorted { $0.key < $1.key }) \(self.request)" }
    }

    static let cases: [Case] = [
        Case(environment: ["http_proxy": "127.0.0.1:8080"], want: "http://127.0.0.1:8080"),
        Case(environment: ["http_proxy": "cache.corp.example.com:1234"], want: "http://cache.corp.example.com:1234"),
        // Go: http://cache.corp.example.com (port 80).
        Case(environment: ["http_proxy": "cache.corp.example.com"], want: "http://cache.corp.example.com:1080"),
        Case(environment: ["http_proxy": "https://cache.corp.example.com"], want: "https://cache.corp.example.com:443"),
        Case(environment: ["http_proxy": "http://127.0.0.1:8080"], want: "http://127.0.0.1:8080"),
        Case(environment: ["http_proxy": "https://127.0.0.1:8080"], want: "https://127.0.0.1:8080"),
        // Go: socks5://127.0.0.1 (its default port, 1080, not written).
        Case(environment: ["http_proxy": "socks5://127.0.0.1"], want: "socks5://127.0.0.1:1080"),
        // Not the https one for http; the https one for https.
        Case(environment: ["http_proxy": "http.proxy.tld:80", "https_proxy": "secure.proxy.tld:80"], request: "http://insecure.tld/",
             want: "http://http.proxy.tld:80"),
        Case(environment: ["http_proxy": "http.proxy.tld:80", "https_proxy": "secure.proxy.tld:80"], request: "https://secure.tld/",
             want: "http://secure.proxy.tld:80"),
        Case(environment: ["http_proxy": "http.proxy.tld:80", "https_proxy": "https://secure.proxy.tld:443"], request: "https://secure.tld/",
             want: "https://secure.proxy.tld:443"),
        // httpoxy: Go refuses HTTP_PROXY under CGI; Courier never reads the upper-case name.
        Case(environment: ["HTTP_PROXY": "http://10.1.2.3:8080", "REQUEST_METHOD": "POST"], want: nil),
        Case(environment: [:], want: nil),
        Case(environment: ["no_proxy": "example.com", "http_proxy": "proxy:80"], want: nil),
        // Go: http://proxy (a leading dot covers only names under the domain).
        Case(environment: ["no_proxy": ".example.com", "http_proxy": "proxy:80"], want: nil),
        Case(environment: ["no_proxy": "ample.com", "http_proxy": "proxy:80"], want: "http://proxy:80"),
        Case(environment: ["no_proxy": "example.com", "http_proxy": "proxy:80"], request: "http://foo.example.com/", want: nil),
        Case(environment: ["no_proxy": ".foo.com", "http_proxy": "proxy:80"], want: "http://proxy:80"),
    ]

    @Test(arguments: Self.cases)
    func theProxyForARequest(_ test: Case) throws {
        let configuration = try ProxyConfiguration.fromEnvironment(test.environment)
        #expect(configuration.proxy(for: URL(string: test.request)!)?.description == test.want)
    }
}
