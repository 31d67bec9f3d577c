import Courier
import CourierTesting
import Foundation
import Testing

@Suite("HTTPS")
struct HTTPSTests {
    func trustingTestRoot() throws -> SecurityPolicy {
        var policy = SecurityPolicy.default
        policy.additionalTrustedCertificates = try Certificate.certificates(pemEncoded: TestCertificates.rootCA)
        return policy
    }

    @Test(arguments: [SessionConfiguration.HTTPVersionPolicy.automatic, .http1Only])
    func getOverTLS(_ version: SessionConfiguration.HTTPVersionPolicy) async throws {
        try await withTestServer(.https()) { server in
            var configuration = SessionConfiguration.default
            configuration.httpVersion = version
            try await withManager(baseURL: server.baseURL, configuration: configuration, securityPolicy: try self.trustingTestRoot()) { manager in
                let response = try await manager.get("get", parameters: ["tls": "yes"])
                #expect(response.response.status == .ok)
                #expect((response.value.json?["args"] as? [String: any Sendable])?["tls"] as? String == "yes")
            }
        }
    }

    @Test func wrongHostNameFailsUnlessDomainValidationIsOff() async throws {
        try await withTestServer(.https(.wrongHost)) { server in
            try await withManager(baseURL: server.baseURL, securityPolicy: try self.trustingTestRoot()) { manager in
                await #expect {
                    try await manager.get("get")
                } throws: { error in
                    (error as? CourierError)?.code == .serverTrustEvaluationFailed
                        && ((error as? CourierError)?.underlyingError as? ServerTrustFailure)?.reason == .nameMismatch
                }
            }
            var relaxed = try self.trustingTestRoot()
            relaxed.validatesDomainName = false
            try await withManager(baseURL: server.baseURL, securityPolicy: relaxed) { manager in
                let response = try await manager.get("get")
                #expect(response.response.status == .ok)
            }
        }
    }
}
