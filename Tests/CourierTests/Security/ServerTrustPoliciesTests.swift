import Courier
import CourierTesting
import Foundation
import Testing

@Suite("Security policies per host")
struct ServerTrustPoliciesTests {
    @Test func exactBeatsWildcardBeatsDefault() throws {
        let pinned = SecurityPolicy(pinningMode: .certificate, pinnedCertificates: Set(try Certificate.certificates(pemEncoded: TestCertificates.rootCA)))
        var relaxed = SecurityPolicy.default
        relaxed.validatesDomainName = false
        var policies = ServerTrustPolicies(default: .default)
        policies["*.example.com"] = relaxed
        policies["API.example.com"] = pinned
        #expect(policies.policy(forHost: "api.example.com") == pinned)
        #expect(policies.policy(forHost: "Api.Example.com") == pinned)
        #expect(policies.policy(forHost: "www.example.com") == relaxed)
        #expect(policies.policy(forHost: "example.com") == .default)
        #expect(policies.policy(forHost: "a.b.example.com") == .default)
        #expect(policies.policy(forHost: "other.org") == .default)
        #expect(policies.policy(forHost: nil) == .default)
    }

    /// Hosts compare as DNS names: a trailing dot, IPv6 brackets and the Unicode or ASCII form
    /// of a name do not make another host. Before, `api.example.com.` (a redirect's target, say)
    /// missed the pinned entry and got the default policy, and a Unicode key matched no host (the
    /// engine asks with the ASCII form).
    @Test func aHostIsMatchedAsADNSName() throws {
        let pinned = SecurityPolicy(pinningMode: .certificate, pinnedCertificates: Set(try Certificate.certificates(pemEncoded: TestCertificates.rootCA)))
        var policies = ServerTrustPolicies(default: .default)
        policies["api.example.com"] = pinned
        policies["*.bücher.example"] = pinned
        policies["::1"] = pinned
        #expect(policies.policy(forHost: "api.example.com.") == pinned)
        #expect(policies.policy(forHost: "API.EXAMPLE.COM.") == pinned)
        #expect(policies.policy(forHost: "www.xn--bcher-kva.example") == pinned)
        #expect(policies.policy(forHost: "www.xn--bcher-kva.example.") == pinned)
        #expect(policies.policy(forHost: "[::1]") == pinned)
        // Every spelling of the pinned address is it (the certificate check compares addresses
        // by bytes): before, these got the default policy, and the pins were skipped.
        #expect(policies.policy(forHost: "0:0:0:0:0:0:0:1") == pinned)
        #expect(policies.policy(forHost: "[0::1]") == pinned)
        #expect(policies.policy(forHost: "[::1%25lo]") == pinned || policies.policy(forHost: "::1%lo") == pinned)
        #expect(policies.policy(forHost: "::1%lo") == pinned)
        policies["2001:DB8:0::1"] = pinned
        #expect(policies.policy(forHost: "2001:db8::1") == pinned)
        #expect(policies.policy(forHost: "2001:db8::2") == .default)
        #expect(policies["API.example.com."] == pinned)
        #expect(policies.policy(forHost: "api.example.com..") == .default, "one root label, not two")
        #expect(policies.policy(forHost: ".") == .default)
    }

    @Test func eachHostGetsItsPolicyOverASocket() async throws {
        var trusting = SecurityPolicy(pinningMode: .publicKey, pinnedCertificates: Set(try Certificate.certificates(pemEncoded: TestCertificates.localhostLeaf)))
        trusting.additionalTrustedCertificates = try Certificate.certificates(pemEncoded: TestCertificates.rootCA)
        var policies = ServerTrustPolicies(default: .default)
        policies["127.0.0.1"] = trusting
        try await withTestServer(.https()) { server in
            let engine = NIOEngine(serverTrust: policies)
            let manager = HTTPSessionManager(baseURL: nil, engine: engine)
            defer { manager.invalidate(cancelingTasks: true) }
            let response = try await manager.get(server.url("get").absoluteString)
            #expect(response.response.status == .ok)
            // The same server under another name: the default policy does not trust its root.
            let other = "https://localhost:\(server.port)/get"
            let error = await #expect(throws: CourierError.self) { try await manager.get(other) }
            #expect(error?.code == .serverTrustEvaluationFailed)
            #expect(error?.message.contains("pinning none") == true)
        }
    }
}
