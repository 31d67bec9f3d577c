import Courier
import CourierTesting
import Foundation
import Testing

@Suite("Proxy")
struct ProxyTests {
    @Test func requestsGoThroughAnHTTPProxyWithCredentials() async throws {
        try await withTestServer { server in
            try await withShutdown(of: try await TestProxy.start(upstreamPort: server.port, credentials: ("courier", "secret"))) { proxy in
                var configuration = SessionConfiguration.default
                configuration.proxy = .http(host: "127.0.0.1", port: proxy.port, username: "courier", password: "secret")
                // The host does not exist: only the proxy can have answered.
                try await withManager(baseURL: URL(string: "http://courier-target.invalid/"), configuration: configuration) { manager in
                    let response = try await manager.get("get", parameters: ["via": "proxy"])
                    #expect((response.value.json?["args"] as? [String: any Sendable])?["via"] as? String == "proxy")
                }
                // Plain http is forwarded in absolute form, not tunnelled.
                #expect(proxy.forwardedTargets.first?.hasPrefix("http://courier-target.invalid/get") == true, "\(proxy.forwardedTargets)")
                #expect(proxy.connectTargets.isEmpty)
                #expect(proxy.proxyAuthorizations.first == "Basic " + Data("courier:secret".utf8).base64EncodedString())
            }
        }
    }

    @Test func wrongProxyCredentialsFail() async throws {
        try await withTestServer { server in
            try await withShutdown(of: try await TestProxy.start(upstreamPort: server.port, credentials: ("courier", "secret"))) { proxy in
                var configuration = SessionConfiguration.default
                configuration.proxy = .http(host: "127.0.0.1", port: proxy.port, username: "courier", password: "wrong")
                try await withManager(baseURL: URL(string: "http://courier-target.invalid/"), configuration: configuration) { manager in
                    await #expect {
                        try await manager.get("get")
                    } throws: { error in
                        guard let error = error as? CourierError else { return false }
                        return error.code == .proxyAuthenticationRequired && error.message.contains("127.0.0.1:\(proxy.port)")
                            && error.response?.status.code == 407
                    }
                }
            }
        }
    }
}
