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

    /// A refused certificate is said in a line a person reads: the subject, the date it ran out,
    /// the names it does carry; never swift-certificates' dump of the whole certificate (631
    /// characters for an expired one, before).
    @Test func aRefusedCertificateIsSaidInWords() async throws {
        try await withTestServer(.https(.expired)) { server in
            try await withManager(baseURL: server.baseURL, securityPolicy: try self.trustingTestRoot()) { manager in
                let error = await #expect(throws: CourierError.self) { try await manager.get("get") }
                let message = error?.message ?? ""
                #expect(message.contains("the certificate has expired (CN=localhost,O=Courier Tests: not valid after 2000-"), "\(message)")
                #expect(!message.contains("Certificate("), "\(message)")
                #expect(message.count < 300, "\(message)")
            }
        }
        try await withTestServer(.https(.wrongHost)) { server in
            try await withManager(baseURL: server.baseURL, securityPolicy: try self.trustingTestRoot()) { manager in
                let error = await #expect(throws: CourierError.self) { try await manager.get("get") }
                let message = error?.message ?? ""
                #expect(message.contains("does not name 127.0.0.1: its names are "), "\(message)")
            }
        }
    }
}
