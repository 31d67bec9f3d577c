import Courier
import CourierTesting
import Foundation
import Testing

/// ``PinningMatrix`` over a real socket, through NIOEngine's https path (Courier's pool, the
/// chain evaluated in the TLS handshake): each row must give AFNetworking's answer.
///
/// Every policy trusts ``TestCertificates/rootCA`` beside the system's roots (a private authority).
@Suite("Pinning matrix over HTTPS", .serialized)
struct PinningMatrixTests {
    @Test(arguments: PinningMatrix.table)
    func row(_ row: PinningMatrix.Row) async throws {
        try await GeneratedCertificates.prepared()
        let passes = row.passes
        var policy = try PinningMatrix.policy(for: row)
        policy.additionalTrustedCertificates = try Certificate.certificates(pemEncoded: TestCertificates.rootCA)
        let server = TestServer.Configuration.https(try PinningMatrix.identity(row.identity))
        // Retries would run into the connect timeout and end `timedOut`; the refusal's own code says
        // it came first (no bound on the elapsed time: the machine has stalled for 30 s in CI).
        var configuration = SessionConfiguration.default
        configuration.timeoutIntervalForConnect = 120
        try await withTestServer(server) { server in
            try await withManager(baseURL: server.baseURL, configuration: configuration, securityPolicy: policy) { manager in
                do {
                    let response = try await manager.get("get")
                    #expect(passes, "\(row) passed")
                    #expect(response.response.status == .ok)
                } catch let error as CourierError {
                    #expect(!passes, "\(row) failed: \(error)")
                    #expect(error.code == .serverTrustEvaluationFailed || error.code == .tlsFailure, "\(row): \(error)")
                    #expect(server.requestCount == 0, "no request reaches an untrusted server")
                }
            }
        }
    }
}
